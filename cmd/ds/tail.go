package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/fleet"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/sources"
	"github.com/ds-telemetry/ds/pkg/views"
)

func tailCommand() *cli.Command {
	return &cli.Command{
		Name:      "tail",
		Usage:     "print the last lines of captures",
		UsageText: "ds tail [-n N] [-f] [--cursor-file F] [--cat|--json[=frames]] [FILTERS] [INPUT…]\n   ds tail --consumer NAME [-n N | -f] [--cat|--json[=frames]] [FILTERS] STORE…",
		Description: `Prints the last N lines (10 by default) that ds log would print for each
input, in the same formats, with the same channel selection.

A capture file is read from its end: ds tail finds the last segments from
the summaries that end them (ds-format(5), "Reading from the end") and
reads only those, more of them only while they hold too few lines, so
that the tail of a 10 GiB capture costs what the tail of a small one
does. Segments without a summary (a writer that was killed, an older
writer, a damaged summary) are found by their header and read. Stdin and
pipes are read to their end, keeping only the last N lines.

With several inputs, each one's lines follow a "==> NAME <==" line, as
tail(1) prints them. Without an input, ds tail reads stdin. -n 0 prints
nothing. A last line without a newline counts as a line.

--cursor-file F makes ds tail a consumer that resumes where it stopped:
when F exists, ds tail prints everything after the cursor saved in it
(the per-stream positions of the last run; -n does not apply), merged as
ds log merges; when F does not exist yet, the last N lines. Either way it
then saves the cursor of what it printed in F, atomically, after the
output is written (at-least-once: a run killed in between prints some
lines again next time, and none is ever missed). Frames between a saved
cursor and the oldest frame an input still holds are reported as
"trimmed", never skipped silently. --json, --time and the filters are
those of ds log (see ds log --help).

-f (--follow) then prints what is written to the capture files from then on,
as tail -f does, and what new capture files of the directories named hold,
until interrupted (SIGINT or SIGTERM: exit 0, or 3 if what was read was
damaged); with several inputs, a "==> NAME <==" line leads the lines of an
input whenever another input printed last. A file truncated or replaced is
read again from its start, with a note on stderr; a file is followed after
its streams have ended (ds wrap --append may add one), as tail -f follows.
Stdin and pipes are read to their end.
With --cursor-file, -f prints everything after the cursor, then follows.
A store is followed as it grows: new chunks of its streams, and new
streams, printed from their start (it is polled every 0.25 s).

--consumer NAME reads stores (ds ingest) as the named consumer NAME: for
each stream, ds tail prints everything after NAME's cursor saved in the
store, merged as ds log merges (no -n 10 default: -n N prints at most N
frames of each stream, counted in positions, so frames that -c or the
writer's hidden channels leave out count too; -n 0 prints nothing), then
saves in each store the cursor of what it printed, once the output is
written: the next run goes on from there. A save never moves a cursor
back (a cursor saved below the one in the store leaves it as it is), and
consumers of other names are independent. A consumer that has not read a
stream yet (a new NAME, a new stream) starts at the stream's oldest
frame kept. When a stream was trimmed (ds trim) past the cursor, the
frames trimmed are shown as trimmed, a note says so on stderr
("ds: consumer NAME: NODE#LIFE: positions below H were trimmed; resuming
at H"), and the read goes on at the first frame kept. With -f, ds tail
--consumer prints everything after the cursor, then follows the stores
(new chunks and new streams), and saves the cursor whenever its output
pauses (0.3 s without anything new) and when it is interrupted: killed
without warning (kill -9), a restart prints again what was printed
after the last save (at-least-once), and never skips a frame. --consumer
takes stores only (exit 2 otherwise), and not --cursor-file; -n does not
go with -f there.

` + inputsHelp + `

` + selectionHelp + `

Exit status 3 when what was read of an input is damaged.`,
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "lines", Aliases: []string{"n"}, Value: views.DefaultTailLines, Usage: "print the last `N` lines (with --consumer: at most N frames of each stream)"},
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "then print what is written to the inputs, until interrupted"},
			&cli.BoolFlag{Name: "cat", Usage: "print payload bytes only, byte-exact (as ds log --cat)"},
			&cli.GenericFlag{Name: "json", Value: &optionalValue{}, Usage: "print one JSON object per line, record, gap, drop and damaged range (=frames: per frame)"},
			&cli.GenericFlag{Name: "time", Value: &optionalValue{}, Usage: "add a time column: wall, utc, since-start, delta or unix"},
			&cli.BoolFlag{Name: "utc", Usage: "show and read times in UTC"},
			&cli.StringFlag{Name: "cursor-file", Usage: "resume after the cursor saved in `FILE`, and save the new one there"},
			&cli.StringFlag{Name: "consumer", Usage: "read the STORE inputs as consumer `NAME`: resume after its saved cursor, print all that follows (-n N: N frames a stream), save the new cursor"},
			&cli.StringSliceFlag{Name: "channel", Aliases: []string{"c"}, Usage: "show only `CHANNEL` (exact name, or a prefix ending in .*); repeatable"},
			&cli.BoolFlag{Name: "all", Usage: "also show the writer's own datastream.* channels"},
			colorFlag(),
		}, append(selectionFlags(), natsFlags()...)...),
		Action: tailAction,
	}
}

func tailAction(ctx context.Context, c *cli.Command) error {
	limitReadMemory()
	set, err := newSources(c)
	if err != nil {
		return err
	}
	n := c.Int("lines")
	if n < 0 {
		return usagef("tail: -n %d: want a number of lines, 0 or more", n)
	}
	opts := views.TailOptions{Lines: int(n), Log: views.LogOptions{
		All: c.Bool("all"),
	}}
	if err := readLogFormat(c, &opts.Log); err != nil {
		return err
	}
	var colorErr error
	if opts.Log.Color, colorErr = useColor(c, c.Root().Writer); colorErr != nil {
		return colorErr
	}
	names := c.Args().Slice()
	if len(names) == 0 {
		names = []string{"-"} // as tail(1): stdin
	}
	root := c.Root()
	cursorFile := c.String("cursor-file")
	if c.IsSet("consumer") {
		return consumerAction(ctx, set, c, opts.Log, c.Args().Slice())
	}
	if c.Bool("follow") && cursorFile == "" {
		return tailFollow(ctx, set, names, root.Reader, root.Writer, root.ErrWriter, opts)
	}
	var o outcome
	names = expandNames(set, names, root.ErrWriter, &o) // a directory: its captures
	// resume prints everything after the cursor saved, following the
	// inputs with -f, and saves the new cursor after the output.
	resume := func(saved segments.Cursor) error {
		o := opts.Log
		o.Select.After = segments.Cursor{}
		for id, pos := range saved {
			o.Select.After[id] = pos
		}
		for id, pos := range opts.Log.Select.After { // --after wins
			o.Select.After[id] = pos
		}
		p, err := printLog(ctx, set, c, o, names, c.Bool("follow"))
		if p == nil {
			return err // the output failed: the cursor stays
		}
		if werr := sources.WriteCursorFile(cursorFile, p.Cursor()); werr != nil {
			return werr
		}
		return err
	}
	if cursorFile != "" {
		saved, ok, err := sources.ReadCursorFile(cursorFile)
		if err != nil {
			return err
		}
		if ok {
			return resume(saved)
		}
	}
	cursor := segments.Cursor{}
	headers := 0
	for _, name := range names {
		// A nats:// input is connected to before its header, as a file
		// is looked for (src is nil for any other input).
		var src *sources.NATS
		if fleet.IsURL(name) {
			var err error
			if src, err = set.OpenNATS(name); err != nil {
				o.fail(root.ErrWriter, err) // no header for it
				continue
			}
		} else if name != "-" && !set.IsStream(name) {
			if _, err := os.Stat(name); err != nil {
				o.fail(root.ErrWriter, err) // as tail(1): no header for it
				continue
			}
		}
		if len(names) > 1 {
			sep := "\n"
			if headers == 0 {
				sep = ""
			}
			headers++
			if _, err := fmt.Fprintf(root.Writer, "%s==> %s <==\n", sep, sources.InputName(name)); err != nil {
				return writeErr(err)
			}
		}
		var d bool
		var err error
		if n == 0 && cursorFile == "" {
			if src == nil {
				err = probeInput(set, name, root.Reader) // as tail(1): nothing to print
			}
		} else if n == 0 {
			// Nothing to print, but the cursor of the end to save: the
			// next run starts from here.
			var cur segments.Cursor
			one := opts
			one.Lines = 1
			d, cur, err = tailOne(ctx, set, name, src, root.Reader, io.Discard, root.ErrWriter, one)
			cursor.Merge(endCursor(ctx, name, src, opts.Log))
			cursor.Merge(cur)
		} else {
			var cur segments.Cursor
			d, cur, err = tailOne(ctx, set, name, src, root.Reader, root.Writer, root.ErrWriter, opts)
			if cursorFile != "" && err == nil {
				// Streams that ended before the last lines are read too.
				cursor.Merge(endCursor(ctx, name, src, opts.Log))
			}
			cursor.Merge(cur)
		}
		if src != nil {
			src.Close()
		}
		if d {
			o.damage()
		}
		if err != nil {
			if isEPIPE(err) {
				return nil
			}
			o.fail(root.ErrWriter, err)
		}
	}
	if o.failedInput() {
		return o.status()
	}
	if cursorFile != "" {
		if err := sources.WriteCursorFile(cursorFile, cursor); err != nil {
			return err
		}
		if c.Bool("follow") {
			// The last lines are out and their cursor saved: follow on
			// from there (damage was reported, and still sets the exit
			// status).
			if err := resume(cursor); err != nil {
				return err
			}
		}
	}
	return o.status() // 3 when what was read was damaged
}

// consumerAction is ds tail --consumer NAME STORE…: the checks of its
// command line, then tailConsumer.
func consumerAction(ctx context.Context, set *sources.Set, c *cli.Command, opts views.LogOptions, names []string) error {
	name := c.String("consumer")
	switch {
	case name == "":
		return usagef("tail: --consumer: empty consumer name")
	case c.IsSet("cursor-file"):
		return usagef("tail: --consumer and --cursor-file cannot be combined (a consumer's cursor is kept in its store)")
	case len(names) == 0:
		return usagef("tail: --consumer reads stores: name one (a directory ds ingest made)")
	case c.Bool("follow") && c.IsSet("lines"):
		return usagef("tail: --consumer -f prints everything after the cursor, then follows: -n does not apply")
	}
	for _, n := range names {
		if !sources.IsStore(n) {
			return usagef("tail: --consumer reads stores: %s is not a store (a directory ds ingest made)", n)
		}
	}
	limit := -1
	if c.IsSet("lines") {
		limit = int(c.Int("lines"))
	}
	root := c.Root()
	return tailConsumer(ctx, set, name, opts, names, limit, c.Bool("follow"), root.Reader, root.Writer, root.ErrWriter)
}

// probeInput reports an input that cannot be opened.
func probeInput(set *sources.Set, name string, stdin io.Reader) error {
	in, err := set.Open(context.Background(), name, stdin, false)
	if err == nil {
		in.Close()
	}
	return err
}

// tailOne prints the tail of one input (src, when it is a nats:// input)
// and says whether what it read was damaged, and the cursor of what it
// read.
func tailOne(ctx context.Context, set *sources.Set, name string, src *sources.NATS, stdin io.Reader, stdout, stderr io.Writer, opts views.TailOptions) (bool, segments.Cursor, error) {
	if src != nil {
		d, cur, _, err := tailNATS(ctx, src, stdout, stderr, opts)
		return d, cur, err
	}
	in, err := set.Open(context.Background(), name, stdin, false)
	if err != nil {
		return false, nil, err
	}
	defer in.Close()
	if !readsFromEnd(in) {
		// A pipe, a DSQ1 stream, legacy envelopes: read it all, keeping
		// the last lines.
		return tailStream(ctx, in, stdout, stderr, opts)
	}
	stats, damaged, err := tailFile(ctx, in, opts, stdout, stderr)
	return damaged, stats.Cursor, err
}

// readsFromEnd reports whether ds tail can read in from its end: a DSS
// capture file (or an empty one), not a pipe or an import.
func readsFromEnd(in *sources.Input) bool {
	return in.File != nil && in.Size >= 0 && (in.Format == segments.InputDSS || in.Format == segments.InputEmpty) && !outOfOrder(in.Name)
}

// tailFile prints the tail of a capture file read from its end
// (views.Tail), reports its damage on stderr, and says whether there was
// any.
func tailFile(ctx context.Context, in *sources.Input, opts views.TailOptions, w, stderr io.Writer) (views.TailStats, bool, error) {
	opts.File, opts.Live = in.Name, in.Live
	stats, err := views.Tail(ctx, in.File, in.Size, opts, w)
	if os.Getenv("DS_READ_STATS") != "" {
		// A test hook: what reading from the end cost, in bytes.
		fmt.Fprintf(stderr, "ds: %s: read %d of %d bytes\n", in.Name, stats.BytesRead, in.Size)
	}
	rep := in.Reporter(nil, stderr)
	for _, d := range stats.Damage {
		rep.Report(d.Offset, d.End, d.Torn, d.Err)
	}
	if err != nil {
		return stats, rep.Damaged, sources.InputError(in.Name, err)
	}
	return stats, rep.Damaged, nil
}

// tailStream is tail of an input that cannot be read from its end.
func tailStream(ctx context.Context, in *sources.Input, stdout, stderr io.Writer, opts views.TailOptions) (bool, segments.Cursor, error) {
	ring, cur, damaged, err := tailRing(ctx, in, stderr, opts, false)
	if err != nil {
		return damaged, nil, err
	}
	return damaged, cur, ring.WriteLines(stdout)
}

// tailRing reads in to its end and returns its last opts.Lines lines as
// ds log prints them, the cursor of what it read, and whether it was
// damaged (reported on stderr). partial says that in is read from
// part-way (partialLogSink).
func tailRing(ctx context.Context, in *sources.Input, stderr io.Writer, opts views.TailOptions, partial bool) (*views.LineRing, segments.Cursor, bool, error) {
	ring := views.NewLineRing(opts.Lines)
	p := views.NewPrinter(ring, opts.Log)
	sink := views.NewLogSink(p, opts.Log.Window)
	if partial {
		sink = partialLogSink(p, opts.Log.Window)
	}
	sink.File = in.Name
	rep := in.Reporter(sink, stderr)
	err := segments.ScanAny(ctx, in.R, in.TrimTrust(segments.ScanOptions{}, stderr), rep)
	sink.A.Flush()
	if cerr := p.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return ring, nil, rep.Damaged, sources.InputError(in.Name, err)
	}
	return ring, p.Cursor(), rep.Damaged, nil
}

// natsTailWindow is how many messages ds tail reads first from the end of
// a nats:// input's JetStream stream; each further try reads 4 times as
// many.
const natsTailWindow = 64

// tailNATS prints the last opts.Lines lines of a nats:// input, reading
// its JetStream stream from the end: the last natsTailWindow messages
// (of every subject it holds: a message is a drain tick or a few of one
// producer, ds-format(5) segments that each name their frames), and, while
// those give no more than opts.Lines lines, 4 times as many, up to the
// whole stream. So the tail of a stream that holds GiB costs what its
// last messages do, and the first line printed is never one cut by the
// window's start. It returns whether what it read (the last try) was
// damaged, the cursor of what it read, and the last sequence number of
// the stream when it looked (0: it was empty), after which ds tail -f
// follows.
func tailNATS(ctx context.Context, src *sources.NATS, stdout, stderr io.Writer, opts views.TailOptions) (bool, segments.Cursor, uint64, error) {
	first, last, err := src.Seqs(ctx)
	if err != nil || last == 0 {
		return false, segments.Cursor{}, last, err
	}
	for k := uint64(natsTailWindow); ; k = min(4*k, last-first+1) {
		start := first
		if last-first >= k {
			start = last - k + 1
		}
		r, err := src.Reader(ctx, fleet.ReaderOptions{StartSeq: start})
		if err != nil {
			return false, nil, last, err
		}
		// The damage of a try that is not the last is not reported: the
		// next one reads it again.
		var warn bytes.Buffer
		ring, cur, damaged, err := tailRing(ctx, &sources.Input{Name: src.Name(), R: r, Size: -1}, &warn, opts, start > first)
		if start == first || err != nil || ring.Lines() > int64(opts.Lines) {
			if os.Getenv("DS_READ_STATS") != "" {
				// A test hook: what reading from the end cost.
				fmt.Fprintf(&warn, "ds: %s: read %d of %d messages\n", src.Name(), last-start+1, last-first+1)
			}
			stderr.Write(warn.Bytes())
			if err != nil {
				return damaged, nil, last, err
			}
			return damaged, cur, last, ring.WriteLines(stdout)
		}
	}
}

// endCursor returns the cursor of having read input name to its end, as
// far as it can be known without reading it all: for a capture file, from
// its segments' summaries (fileCursor); for a nats:// input (src), from
// the last message of each of its streams.
func endCursor(ctx context.Context, name string, src *sources.NATS, opts views.LogOptions) segments.Cursor {
	if src == nil {
		return fileCursor(name)
	}
	r, err := src.Reader(ctx, fleet.ReaderOptions{LastPerStream: true})
	if err != nil {
		return nil
	}
	_, cur, _, _ := tailRing(ctx, &sources.Input{Name: src.Name(), R: r, Size: -1}, io.Discard, views.TailOptions{Lines: 1, Log: opts}, true)
	return cur
}

// partialLogSink is a log sink for an input read from part-way (the last
// messages of a nats:// input), as views.Tail reads a file from part-way:
// every stream starts at the first position read, where it starts is not
// shown, and neither are frames below it.
func partialLogSink(p *views.Printer, window int) *views.LogSink {
	s := &views.LogSink{P: p, Partial: true}
	s.A = segments.NewAssemblerWith(segments.AssemblerOptions{Memory: window, Eager: true}, func(it segments.Item) {
		if it.Kind != segments.ItemStart && it.Kind != segments.ItemLate {
			p.Item(it)
		}
	})
	return s
}

// writeErr turns a write error into the command's error: a closed pipe is
// not one.
func writeErr(err error) error {
	if isEPIPE(err) {
		return nil
	}
	return err
}

package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/sources"
	"github.com/ds-telemetry/ds/pkg/viewer"
	"github.com/ds-telemetry/ds/pkg/views"
)

func tailCommand() *cli.Command {
	return &cli.Command{
		Name:      "tail",
		Usage:     "print the last lines of captures",
		UsageText: "ds tail [-n N|+N] [-f] [--cursor-file F] [--cat|--json[=frames|pretty]] [FILTERS] [INPUT…]\n   ds tail --consumer NAME [-n N | -f] [--cat|--json[=frames|pretty]] [FILTERS] STORE…",
		Description: `Prints the last N lines (10 by default) that ds log would print for each
input, in the same formats, with the same channel selection.

A capture file is read from its end: ds tail finds the last segments from
the summaries that end them (ds-format(5), "Reading from the end") and
reads only those, more of them only while they hold too few lines, so
that the tail of a 10 GiB capture costs what the tail of a small one
does. Segments without a summary (a writer that was killed, an older
writer, a damaged summary) are found by their header and read. Stdin and
pipes are read to their end, keeping only the last N lines. A capture file
of several streams (ds merge's output) gives the last N lines of its log
as ds log merges its streams by time: each stream is read from its end
until it holds more than N lines (then read again, merged), so that costs
what the tail of each stream does; with -f it is read in its own order.

With several inputs, each one's lines follow a "==> NAME <==" line, as
tail(1) prints them. Without an input, ds tail reads stdin. -n 0 prints
nothing. A last line without a newline counts as a line. -n1, -n 1,
-n=1 and --lines=1 are the same.

-n +N prints from the N-th line on (1-based), as tail(1) does: what ds
log prints of each input, less its first N-1 lines (-n +1: all of it).
The input is read from its start. With -f, it then follows (one input
only); it goes with neither --cursor-file nor --consumer.

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
			&cli.GenericFlag{Name: "lines", Aliases: []string{"n"}, Value: &linesValue{n: views.DefaultTailLines}, Usage: "print the last `N` lines (+N: from line N on; with --consumer: at most N frames of each stream)"},
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "then print what is written to the inputs, until interrupted"},
			&cli.BoolFlag{Name: "cat", Usage: "print payload bytes only, byte-exact (as ds log --cat)"},
			&cli.GenericFlag{Name: "json", Value: &optionalValue{}, Usage: "print one JSON object per line, record, gap, drop and damaged range (=frames: per frame; =pretty: indented)"},
			&cli.GenericFlag{Name: "time", Value: &optionalValue{}, Usage: "add a time column: wall, utc, since-start, delta or unix"},
			&cli.BoolFlag{Name: "utc", Usage: "show and read times in UTC"},
			&cli.StringFlag{Name: "cursor-file", Usage: "resume after the cursor saved in `FILE`, and save the new one there"},
			&cli.StringFlag{Name: "consumer", Usage: "read the STORE inputs as consumer `NAME`: resume after its saved cursor, print all that follows (-n N: N frames a stream), save the new cursor"},
			&cli.StringSliceFlag{Name: "channel", Aliases: []string{"c"}, Usage: "show only `CHANNEL` (exact name, or a pattern whose * matches anything: proc.*, proc.*.stdout); repeatable"},
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
	lines := tailLines(c)
	opts := views.TailOptions{Lines: int(lines.n), Log: views.LogOptions{
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
	out := newLogOutput(root.Writer, pretty(c), false)
	in := newInputs(set, root.Reader, out.w, root.ErrWriter)
	switch {
	case lines.from && (cursorFile != "" || c.IsSet("consumer")):
		return usagef("tail: -n +%d prints from line %d on: it goes with neither --cursor-file nor --consumer", lines.n, lines.n)
	case lines.from && c.Bool("follow") && len(names) > 1:
		return usagef("tail: -n +%d -f follows one input only", lines.n)
	case lines.from:
		err = in.LogFrom(ctx, names, opts.Log, lines.n, c.Bool("follow"))
	case c.IsSet("consumer"):
		err = consumerAction(ctx, in, c, opts.Log, c.Args().Slice())
	case c.Bool("follow") && cursorFile == "":
		err = in.Follow(ctx, names, opts)
	default:
		err = in.Tail(ctx, names, opts, cursorFile, c.Bool("follow"))
	}
	if werr := out.close(); werr != nil && err == nil {
		return writeErr(werr)
	}
	return err
}

// linesValue is the value of ds tail's and ds log's -n: N or -N (the last
// N lines, as tail(1) takes both), or +N (tail(1): from the N-th line on).
type linesValue struct {
	n    int64
	from bool // +N
}

// Set implements flag.Value.
func (v *linesValue) Set(s string) error {
	t, from := strings.CutPrefix(s, "+")
	if !from {
		t = strings.TrimPrefix(t, "-")
	}
	n, err := strconv.ParseInt(t, 10, 64)
	switch {
	case t == "" || t[0] == '+' || t[0] == '-' || strings.Trim(t, "0123456789") != "":
		return fmt.Errorf("not a number")
	case err != nil:
		return fmt.Errorf("too many lines")
	}
	v.n, v.from = n, from
	return nil
}

// String implements flag.Value.
func (v *linesValue) String() string {
	if v.from {
		return "+" + strconv.FormatInt(v.n, 10)
	}
	return strconv.FormatInt(v.n, 10)
}

// Get returns the value itself.
func (v *linesValue) Get() any { return *v }

// tailLines returns ds tail's -n.
func tailLines(c *cli.Command) linesValue {
	if v, ok := c.Value("lines").(linesValue); ok {
		return v
	}
	return linesValue{n: views.DefaultTailLines}
}

// consumerAction is ds tail --consumer NAME STORE…: the checks of its
// command line, then viewer.Inputs.Consumer.
func consumerAction(ctx context.Context, in *viewer.Inputs, c *cli.Command, opts views.LogOptions, names []string) error {
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
		limit = int(tailLines(c).n)
	}
	return in.Consumer(ctx, name, opts, names, limit, c.Bool("follow"))
}

// writeErr turns a write error into the command's error: a closed pipe is
// not one.
func writeErr(err error) error {
	if isEPIPE(err) {
		return nil
	}
	return err
}

package viewer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/ds-telemetry/ds/pkg/fleet"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/sources"
	"github.com/ds-telemetry/ds/pkg/textfmt"
	"github.com/ds-telemetry/ds/pkg/views"
)

// Tail is ds tail without -f (see ds(1)): the last opts.Lines lines of
// each named input, as ds log prints them, to r.Stdout, each input's
// after a "==> NAME <==" line when there are several. A capture file is
// read from its end (views.Tail); stdin, pipes and imports are read
// whole, keeping the last lines; a nats:// input's JetStream stream is
// read from its last messages.
//
// With cursorFile, when the file exists, everything after the cursor
// saved in it is printed instead (merged as Log merges; -n does not
// apply); either way the cursor of what was printed is saved in it,
// atomically, once the output is written (at-least-once). With follow
// too, Tail then prints what comes, as Log does with follow (without
// cursorFile, ds tail -f is Follow).
//
// It keeps going past a bad input; the error is the first write or
// cursor-file error, or the inputs' worst outcome (*sources.StatusError). A
// closed stdout ends it without error.
func (r *Inputs) Tail(ctx context.Context, names []string, opts views.TailOptions, cursorFile string, follow bool) error {
	var o sources.Outcome
	names = r.Expand(names, &o) // a directory: its captures
	// resume prints everything after the cursor saved, following the
	// inputs with -f, and saves the new cursor after the output.
	resume := func(saved segments.Cursor) error {
		lo := opts.Log
		lo.Select.After = segments.Cursor{}
		for id, pos := range saved {
			lo.Select.After[id] = pos
		}
		for id, pos := range opts.Log.Select.After { // --after wins
			lo.Select.After[id] = pos
		}
		p, err := r.Log(ctx, names, lo, follow)
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
			if src, err = r.Set.OpenNATS(name); err != nil {
				o.Fail(r.Stderr, err) // no header for it
				continue
			}
		} else if name != "-" && !r.Set.IsStream(name) {
			if _, err := os.Stat(name); err != nil {
				o.Fail(r.Stderr, err) // as tail(1): no header for it
				continue
			}
		}
		if len(names) > 1 {
			sep := "\n"
			if headers == 0 {
				sep = ""
			}
			headers++
			if _, err := fmt.Fprintf(r.Stdout, "%s==> %s <==\n", sep, textfmt.Quote(sources.InputName(name))); err != nil {
				return quietEPIPE(err)
			}
		}
		d, cur, err := r.tailInput(ctx, name, src, opts, cursorFile != "")
		cursor.Merge(cur)
		if src != nil {
			src.Close()
		}
		if d {
			o.Damage()
		}
		if err != nil {
			if isEPIPE(err) {
				return nil
			}
			o.Fail(r.Stderr, err)
		}
	}
	if o.FailedInput() {
		return o.Err()
	}
	if cursorFile != "" {
		if err := sources.WriteCursorFile(cursorFile, cursor); err != nil {
			return err
		}
		if follow {
			// The last lines are out and their cursor saved: follow on
			// from there (damage was reported, and still sets the exit
			// status).
			if err := resume(cursor); err != nil {
				return err
			}
		}
	}
	return o.Err() // Damaged when what was read was damaged
}

// tailInput prints the last lines of input name (src, when it is a
// nats:// input) for Tail, and returns whether what it read was damaged
// and the cursor to save (with saving: what was printed, and the streams
// that ended before the last lines).
func (r *Inputs) tailInput(ctx context.Context, name string, src *sources.NATS, opts views.TailOptions, saving bool) (bool, segments.Cursor, error) {
	switch {
	case opts.Lines == 0 && !saving:
		if src == nil {
			return false, nil, r.probeInput(name) // as tail(1): nothing to print
		}
		return false, nil, nil
	case opts.Lines == 0:
		// Nothing to print, but the cursor of the end to save: the
		// next run starts from here.
		one := opts
		one.Lines = 1
		d, cur, err := r.tailOne(ctx, name, src, io.Discard, one)
		end := segments.Cursor{}
		end.Merge(r.endCursor(ctx, name, src, opts.Log))
		end.Merge(cur)
		return d, end, err
	}
	d, cur, err := r.tailOne(ctx, name, src, r.Stdout, opts)
	if saving && err == nil {
		// Streams that ended before the last lines are read too.
		end := segments.Cursor{}
		end.Merge(r.endCursor(ctx, name, src, opts.Log))
		end.Merge(cur)
		cur = end
	}
	return d, cur, err
}

// quietEPIPE returns err, or nil for a write to a closed pipe.
func quietEPIPE(err error) error {
	if isEPIPE(err) {
		return nil
	}
	return err
}

// probeInput reports an input that cannot be opened.
func (r *Inputs) probeInput(name string) error {
	in, err := r.Set.Open(context.Background(), name, r.Stdin, false)
	if err == nil {
		in.Close()
	}
	return err
}

// tailOne prints the tail of one input (src, when it is a nats:// input)
// and says whether what it read was damaged, and the cursor of what it
// read.
func (r *Inputs) tailOne(ctx context.Context, name string, src *sources.NATS, stdout io.Writer, opts views.TailOptions) (bool, segments.Cursor, error) {
	stderr := r.Stderr
	if src != nil {
		d, cur, _, err := r.tailNATS(ctx, src, stdout, stderr, opts)
		return d, cur, err
	}
	in, err := r.Set.Open(context.Background(), name, r.Stdin, false)
	if err != nil {
		return false, nil, err
	}
	defer in.Close()
	if streams := in.Streams(); streams != nil {
		// Several streams: the last lines of their merged log, as ds log
		// reads the file (one input per stream, merged by time).
		stats, damaged, err := r.tailStreams(ctx, in, streams, opts, stdout, stderr)
		return damaged, stats.Cursor, err
	}
	if !readsFromEnd(in) {
		// A pipe, a DSQ1 stream, legacy envelopes: read it all, keeping
		// the last lines.
		return tailStream(ctx, in, stdout, stderr, opts)
	}
	stats, damaged, err := r.tailFile(ctx, in, opts, stdout, stderr)
	return damaged, stats.Cursor, err
}

// readsFromEnd reports whether ds tail can read in from its end: a DSS
// capture file (or an empty one), not a pipe or an import.
func readsFromEnd(in *sources.Input) bool {
	return in.File != nil && in.Size >= 0 && (in.Format == segments.InputDSS || in.Format == segments.InputEmpty) && !OutOfOrder(in.Name)
}

// tailFile prints the tail of a capture file read from its end
// (views.Tail), reports its damage on stderr, and says whether there was
// any.
func (r *Inputs) tailFile(ctx context.Context, in *sources.Input, opts views.TailOptions, w, stderr io.Writer) (views.TailStats, bool, error) {
	opts.File, opts.Live = in.Name, in.Live
	stats, err := views.Tail(ctx, in.File, in.Size, opts, w)
	if r.ReadStats {
		// A test hook: what reading from the end cost, in bytes.
		fmt.Fprintf(stderr, "ds: %s: read %d of %d bytes\n", in.Name, stats.BytesRead, in.Size)
	}
	rep := in.Reporter(nil, stderr)
	for _, d := range stats.Damage {
		rep.Report(d.Offset, d.End, d.Torn, d.Err)
	}
	views.WarnCopies(stderr, stats.Copies, "shown")
	if err != nil {
		return stats, rep.Damaged, sources.InputError(in.Name, err)
	}
	return stats, rep.Damaged, nil
}

// tailStreams is tailFile of a capture file of several streams
// (views.TailStreams): each stream read from its end, unless the file
// holds a stream whose segments are out of order (OutOfOrder), which is
// then read whole.
func (r *Inputs) tailStreams(ctx context.Context, in *sources.Input, streams []segments.StreamSections, opts views.TailOptions, w, stderr io.Writer) (views.TailStats, bool, error) {
	opts.File, opts.Live, opts.Whole = in.Name, in.Live, OutOfOrder(in.Name)
	stats, err := views.TailStreams(ctx, in.File, in.Size, streams, opts, MaxOpenStreams, w)
	if r.ReadStats {
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
	views.WarnCopies(stderr, views.CopyCounts(sink.A), "shown")
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
func (r *Inputs) tailNATS(ctx context.Context, src *sources.NATS, stdout, stderr io.Writer, opts views.TailOptions) (bool, segments.Cursor, uint64, error) {
	first, last, err := src.Seqs(ctx)
	if err != nil || last == 0 {
		return false, segments.Cursor{}, last, err
	}
	for k := uint64(natsTailWindow); ; k = min(4*k, last-first+1) {
		start := first
		if last-first >= k {
			start = last - k + 1
		}
		mr, err := src.Reader(ctx, fleet.ReaderOptions{StartSeq: start})
		if err != nil {
			return false, nil, last, err
		}
		// The damage of a try that is not the last is not reported: the
		// next one reads it again.
		var warn bytes.Buffer
		ring, cur, damaged, err := tailRing(ctx, &sources.Input{Name: src.Name(), R: mr, Size: -1}, &warn, opts, start > first)
		if start == first || err != nil || ring.Lines() > int64(opts.Lines) {
			if r.ReadStats {
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
// its segments' summaries (FileCursor); for a nats:// input (src), from
// the last message of each of its streams.
func (r *Inputs) endCursor(ctx context.Context, name string, src *sources.NATS, opts views.LogOptions) segments.Cursor {
	if src == nil {
		return FileCursor(name)
	}
	mr, err := src.Reader(ctx, fleet.ReaderOptions{LastPerStream: true})
	if err != nil {
		return nil
	}
	_, cur, _, _ := tailRing(ctx, &sources.Input{Name: src.Name(), R: mr, Size: -1}, io.Discard, views.TailOptions{Lines: 1, Log: opts}, true)
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

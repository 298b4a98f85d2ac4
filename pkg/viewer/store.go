package viewer

import (
	"context"
	"errors"
	"io"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/sources"
	"github.com/ds-telemetry/ds/pkg/views"
)

// switchWriter writes to w, which may be changed between writes.
type switchWriter struct{ w io.Writer }

func (s *switchWriter) Write(b []byte) (int, error) { return s.w.Write(b) }

// tailStore is ds tail -f of a store input: the last lines of the
// stream as it is in the store (written to w), then, from a goroutine, what
// comes to it, written by the same printer (so a line is never cut or
// shown twice where the two meet) until ctx ends. It returns whether what
// was read was damaged, and the goroutine's end: done is called with its
// damage and error.
func tailStore(ctx context.Context, in *sources.Input, w *tailOutWriter, stderr io.Writer, opts views.TailOptions, done func(damaged bool, err error)) (bool, error) {
	ring := views.NewLineRing(opts.Lines)
	out := &switchWriter{w: ring}
	p := views.NewPrinter(out, opts.Log)
	sink := views.NewLogSink(p, opts.Log.Window)
	sink.File = in.Name
	rep := in.Reporter(sink, stderr)
	err := segments.ScanAny(ctx, in.R, segments.ScanOptions{Store: true}, rep)
	if err != nil {
		in.Close()
		return rep.Damaged, sources.InputError(in.Name, err)
	}
	// The end of what the store holds: what is held back is shown, as a
	// live input's is when it goes quiet, and the last lines written.
	sink.A.Flush()
	p.FlushPartials()
	if err := p.Flush(); err != nil {
		in.Close()
		return rep.Damaged, err
	}
	if err := ring.WriteLines(w); err != nil {
		in.Close()
		return rep.Damaged, err
	}
	w.mute = false
	out.w = w
	go followStore(ctx, in, rep, done)
	return rep.Damaged, nil
}

// followStore reads a store input on into sink (a sources.DamageReporter whose
// sink is a *views.LogSink) until ctx ends, then closes its printer, and
// calls done.
func followStore(ctx context.Context, in *sources.Input, rep *sources.DamageReporter, done func(damaged bool, err error)) {
	defer in.Close()
	in.Store.Follow(ctx)
	sink := rep.Sink.(*views.LogSink)
	err := segments.ScanAny(ctx, in.R, segments.ScanOptions{IdleAfter: sources.LiveIdle, Store: true}, rep)
	sink.A.Flush()
	sink.P.Close()
	if err != nil && !errors.Is(err, context.Canceled) {
		err = sources.InputError(in.Name, err)
	} else {
		err = nil
	}
	done(rep.Damaged, err)
}

// Consumer is ds tail --consumer NAME STORE… (dirs): everything after the
// consumer's saved cursor (at most limit frames of each stream, unless
// limit < 0), merged as ds log merges, then, once the output is written,
// the cursor of what was printed saved in each store. With follow, it
// then follows the stores, saving whenever the output goes quiet (and at
// the end): at-least-once, as ds tail --cursor-file.
func (r *Inputs) Consumer(ctx context.Context, name string, opts views.LogOptions, dirs []string, limit int, follow bool) error {
	stdout, stderr := r.Stdout, r.Stderr
	cons, start, err := r.Set.OpenConsumer(name, dirs, stderr)
	if err != nil {
		return err
	}
	if limit == 0 {
		return nil // as a cursor read with limit 0: nothing, and nothing moves
	}
	after := segments.Cursor{}
	after.Merge(start)
	for id, pos := range opts.Select.After { // --after wins
		after[id] = pos
	}
	opts.Select.After = after
	p := views.NewPrinter(stdout, opts)
	r.ExpectStreams(p, dirs)
	sink := views.NewLogSink(p, 0)
	if limit > 0 {
		old := sink.A
		lim := &frameLimit{item: p.Item, after: after, max: limit, taken: map[frames.StreamID]int{}}
		sink.A = segments.NewAssembler(0, lim.emit)
		old.Close()
	}
	var saveErr error
	save := func() {
		// The output went quiet: what the printer took in is written
		// out (Idle(true) flushed the lines held), so its cursor may be
		// saved.
		if p.Flush() == nil && saveErr == nil {
			saveErr = cons.SaveBefore(p.Cursor(), p.Holes())
		}
	}
	err = r.Scan(ctx, dirs, follow, func(in *sources.Input) segments.Sink {
		s := segments.Sink(inputLogSink{sink, in.Name})
		if follow {
			s = quietSaver{s, save}
		}
		return s
	}, nil)
	sink.A.Flush()
	if cerr := p.Close(); cerr != nil {
		if isEPIPE(cerr) {
			return err // the output failed: the cursor stays
		}
		return cerr
	}
	if l := p.Losses(); opts.Format == views.FormatCat && l.Gaps+l.Drops+l.Transport > 0 {
		WarnCatLosses(stderr, l)
	}
	views.WarnCopies(stderr, views.CopyCounts(sink.A), "shown")
	WarnSelection(stderr, p)
	if saveErr != nil {
		return saveErr
	}
	if serr := cons.SaveBefore(p.Cursor(), p.Holes()); serr != nil {
		return serr
	}
	return err
}

// quietSaver is a sink that calls save after its sink, an Idler, was told
// that the inputs went quiet.
type quietSaver struct {
	segments.Sink
	save func()
}

// Idle implements segments.Idler.
func (q quietSaver) Idle(quiet bool) {
	if i, ok := q.Sink.(segments.Idler); ok {
		i.Idle(quiet)
	}
	if quiet {
		q.save()
	}
}

// frameLimit passes the assembled items of each stream to item (a
// printer's) up to
// and including the max-th frame after the stream's cursor (ds tail
// --consumer -n N: a cursor read with a limit, counted in positions, so
// frames the channel filters hide count too, as the cursor passes them),
// and nothing of the stream after it.
type frameLimit struct {
	item  func(segments.Item)
	after segments.Cursor
	max   int
	taken map[frames.StreamID]int // frames passed after the cursor; max+1: the stream is done
}

func (l *frameLimit) emit(it segments.Item) {
	n := l.taken[it.Stream]
	if n >= l.max {
		return
	}
	if it.Kind == segments.ItemFrame {
		if pos, ok := l.after[it.Stream]; !ok || it.Frame.Position > pos {
			l.taken[it.Stream] = n + 1
		}
	}
	l.item(it)
}

package viewer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"

	"github.com/ds-telemetry/ds/pkg/fleet"
	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/sources"
	"github.com/ds-telemetry/ds/pkg/textfmt"
	"github.com/ds-telemetry/ds/pkg/views"
)

// Follow is ds tail -f: the last lines of each input, as ds tail
// prints them ("==> NAME <==" before each when there are several, or a
// directory), then what is written to them from then on, from each
// input's own printer (a header whenever the input printing changes),
// until ctx (made by r.Interruptible) ends. The error is the first write
// error, or the inputs' worst outcome (*sources.StatusError).
// Directories are watched for new capture files, printed from their
// start; a store's streams are followed as they grow, and the store is
// watched for new streams, printed from their start (sources.StreamReader).
func (r *Inputs) Follow(ctx context.Context, names []string, opts views.TailOptions) error {
	ctx, stop := r.interruptible(ctx)
	defer stop()
	set := r.Set
	stderr := io.Writer(&lockedWriter{w: r.Stderr})
	var o sources.Outcome
	paths, dirs := set.Expand(names, true, stderr, o.Failer(stderr))
	out := &tailOut{w: r.Stdout, multi: len(paths) > 1 || len(dirs) > 0}
	lines := max(opts.Lines, 1) // -n 0: nothing, but the point to follow from
	var wg sync.WaitGroup
	follow := func(in *sources.Input, sink *views.LogSink, from int64) {
		defer wg.Done()
		defer in.Close()
		rep := in.Reporter(sink, stderr)
		var err error
		if _, err = in.File.Seek(from, io.SeekStart); err == nil {
			in.R = in.File
			err = in.Scan(ctx, segments.ScanOptions{Follow: true, Offset: from, IdleAfter: sources.LiveIdle}, rep, stderr)
		}
		sink.A.Flush()
		sink.P.Close()
		if rep.Damaged {
			o.Damage()
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			o.Fail(stderr, sources.InputError(in.Name, err))
		}
	}
	storeDone := func(damaged bool, err error) {
		defer wg.Done()
		if damaged {
			o.Damage()
		}
		if err != nil {
			o.Fail(stderr, err)
		}
	}
	for _, p := range paths {
		w := &tailOutWriter{o: out, name: sources.InputName(p), mute: opts.Lines == 0}
		one := opts
		one.Lines = lines
		if fleet.IsURL(p) {
			// A JetStream stream: its last lines, then its new messages.
			src, err := set.OpenNATS(p)
			if err != nil {
				o.Fail(stderr, err) // no header for it
				continue
			}
			if err := out.header(w.name); err != nil {
				src.Close()
				return quietEPIPE(err)
			}
			d, cur, last, err := r.tailNATS(ctx, src, w, stderr, one)
			if d {
				o.Damage()
			}
			if err != nil {
				src.Close()
				if !errors.Is(err, context.Canceled) && !isEPIPE(err) {
					o.Fail(stderr, err)
				}
				continue
			}
			w.mute = false
			wg.Add(1)
			go func() {
				defer wg.Done()
				d, err := followNATS(ctx, src, w, stderr, opts.Log, cur, last)
				if d {
					o.Damage()
				}
				if err != nil && !errors.Is(err, context.Canceled) {
					o.Fail(stderr, err)
				}
			}()
			continue
		}
		if err := out.header(p); err != nil {
			return quietEPIPE(err)
		}
		in, err := set.Open(context.Background(), p, r.Stdin, false)
		if err != nil {
			o.Fail(stderr, err)
			continue
		}
		if in.Store != nil {
			// A stream of a store: its last lines, then what comes.
			wg.Add(1)
			d, err := tailStore(ctx, in, w, stderr, one, storeDone)
			if d {
				o.Damage()
			}
			if err != nil {
				wg.Done()
				if !errors.Is(err, context.Canceled) && !isEPIPE(err) {
					o.Fail(stderr, err)
				}
			}
			continue
		}
		if !readsFromEnd(in) {
			// Stdin, a pipe, an import: read to the end, as tail -f does
			// a pipe.
			d, _, err := tailStream(ctx, in, w, stderr, one)
			in.Close()
			if d {
				o.Damage()
			}
			if err != nil && !errors.Is(err, context.Canceled) {
				o.Fail(stderr, err)
			}
			continue
		}
		one.Follow = true
		stats, damaged, err := r.tailFile(ctx, in, one, w, stderr)
		if damaged {
			o.Damage()
		}
		w.mute = false
		if err != nil || stats.Sink == nil {
			in.Close()
			if err != nil && !errors.Is(err, context.Canceled) {
				o.Fail(stderr, err)
			}
			continue
		}
		wg.Add(1)
		go follow(in, stats.Sink, stats.Resume)
	}
	if len(dirs) > 0 {
		sources.PollWatches(ctx, dirs, func(path string) {
			in, err := set.Open(context.Background(), path, nil, false)
			if err != nil {
				o.Fail(stderr, err)
				return
			}
			if in.Format != segments.InputDSS && in.Format != segments.InputEmpty {
				in.Close()
				return
			}
			sink := views.NewLogSink(views.NewPrinter(&tailOutWriter{o: out, name: path}, opts.Log), opts.Log.Window)
			sink.File = path
			wg.Add(1)
			if in.Store != nil {
				go followStore(ctx, in, in.Reporter(sink, stderr), storeDone)
				return
			}
			go follow(in, sink, 0)
		})
	}
	wg.Wait()
	if out.err != nil && !isEPIPE(out.err) {
		return out.err
	}
	return o.Err()
}

// followNATS is ds tail -f of a nats:// input once its last lines are
// printed: it prints what the messages after sequence number last hold
// (every message, when last is 0: the stream was empty), after cursor
// (what was printed already), as they arrive, until ctx ends. It closes
// src, and says whether what it read was damaged.
func followNATS(ctx context.Context, src *sources.NATS, w io.Writer, stderr io.Writer, opts views.LogOptions, cursor segments.Cursor, last uint64) (bool, error) {
	defer src.Close()
	start := uint64(0)
	if last > 0 {
		start = last + 1
	}
	r, err := src.Reader(ctx, fleet.ReaderOptions{Follow: true, StartSeq: start})
	if err != nil {
		return false, err
	}
	opts.Select.After = cursor
	p := views.NewPrinter(w, opts)
	// The streams read for the last lines count as seen: a new one gets
	// the stream column, as a second stream of a pipe does in ds log.
	for _, id := range slices.SortedFunc(maps.Keys(cursor), frames.StreamID.Compare) {
		p.Stream(frames.StreamDescriptor{Stream: id})
	}
	// Read from part-way: a stream whose earlier messages were not read
	// starts where reading does.
	sink := partialLogSink(p, opts.Window)
	sink.File = src.Name()
	rep := &sources.DamageReporter{Sink: sink, Name: src.Name(), Warn: stderr}
	err = segments.ScanAny(ctx, r, segments.ScanOptions{IdleAfter: sources.LiveIdle}, rep)
	sink.A.Flush()
	if cerr := p.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil && !errors.Is(err, context.Canceled) && !isEPIPE(err) {
		return rep.Damaged, sources.InputError(src.Name(), err)
	}
	return rep.Damaged, nil
}

// tailOut is the output of ds tail -f: the printers of several inputs
// write to it at once, each a line or more at a time, and it leads the
// lines of an input with "==> NAME <==" whenever they follow another
// input's (when multi).
type tailOut struct {
	mu    sync.Mutex
	w     io.Writer
	multi bool
	last  string
	any   bool  // a header was written
	err   error // the first write error
}

// header writes the header of input name unless its lines are the last
// written.
func (o *tailOut) header(name string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.headerLocked(name)
}

func (o *tailOut) headerLocked(name string) error {
	if !o.multi || o.any && o.last == name {
		return nil
	}
	sep := "\n"
	if !o.any {
		sep = ""
	}
	o.any, o.last = true, name
	_, err := fmt.Fprintf(o.w, "%s==> %s <==\n", sep, textfmt.Quote(name))
	return err
}

// tailOutWriter is what the printer of one input writes to; nothing while
// mute.
type tailOutWriter struct {
	o    *tailOut
	name string
	mute bool
}

func (w *tailOutWriter) Write(b []byte) (int, error) {
	if w.mute || len(b) == 0 {
		return len(b), nil
	}
	o := w.o
	o.mu.Lock()
	defer o.mu.Unlock()
	err := o.headerLocked(w.name)
	if err == nil {
		_, err = o.w.Write(b)
	}
	if err != nil && o.err == nil {
		o.err = err
	}
	return len(b), err
}

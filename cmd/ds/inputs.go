package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"sync"
	"syscall"

	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/fleet"
	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/sources"
	"github.com/ds-telemetry/ds/pkg/views"
)

// limitReadMemory gives the views a soft memory limit (unless GOMEMLIMIT
// is set): the garbage collector then keeps the heap near what the views
// hold, which their bounds keep under readMemoryLimit, instead of letting
// it double between collections.
func limitReadMemory() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(readMemoryLimit)
	}
}

// readMemoryLimit is the soft memory limit of the views, in bytes.
const readMemoryLimit = 48 << 20

// inputsHelp is the part of a view's description that says what its
// inputs may be (see scanInputs).
const inputsHelp = `Inputs are capture files, directories (every capture file in them, in
name order; hidden files and other files are skipped), stores and - for
stdin. A store (the directory ds ingest grows) is read as a capture of
its streams: each stream is an input of its own, named "STORE
(NODE#LIFE)", read whole, and what ds trim deleted of it is shown as
trimmed, not as a gap; a store that holds nothing is an empty capture.
Besides DSS captures, ds reads the seed system's DSQ1 streams and legacy
delivery envelopes (frames without channel names, shown raw); a file of
none of these is refused (exit 2), an empty file is an empty capture.
Several inputs are merged by time, never grouped by file: a frame's time is
its stream's latest datastream.clock reading in its input (inputs without
clock records come first), ties go in argument order, and each input keeps
its own order; a stream split across files comes out whole, in position
order, in any argument order. A pipe is shown as it arrives: a line without
its newline yet shows after 0.3 s of quiet.

A nats://HOST[:PORT][/PREFIX] input (tls:// for TLS; PREFIX "ds" by
default) is the JetStream stream that producers publish to with
-o nats://… (ds nats init makes it): the messages it holds, read as a
pipe is (-f: then the new ones, as they arrive), only the subjects of
the nodes --node and --stream name. ds tail reads its last messages
only. Credentials come from --nats-creds, --nats-token ($DS_NATS_TOKEN)
or user:password@ in the URL; the input is named without them. A server
that does not answer within 3 s, or has no stream for PREFIX, is an
error (exit 1).`

// scanInputs reads the named inputs into the sinks made for them (sinkFor
// is called once per input; done, if not nil, after each input is read,
// with its BytesRead set).
//
// The names are expanded and opened by set (sources.Set.Expand,
// sources.Set.Open): capture files, - for stdin, nats:// URLs (a
// JetStream stream, read as a pipe is), stores (one input per stream) and
// directories (every capture file in them, in name order; a directory
// without any is named on stderr). Every input is read whatever its
// format (segments.ScanAny: DSS, DSQ1, legacy envelopes); a named file of
// none is refused (exit 2).
//
// One input is scanned directly. Several are merged by time (views.Merge):
// entries of different inputs interleave, each input's own in order, so a
// sink shared by the inputs must not expect them grouped by input; each
// input's damage is reported with its name (a shared *views.LogSink gets
// the name of the input whose damage it prints).
//
// With follow (-f), regular DSS files are followed as they grow
// (sources.Input.Scan: a file truncated or replaced is read again from
// its start, with a note on stderr) and directories are watched for new
// capture files, until SIGINT or SIGTERM, which end it cleanly, as tail
// -f follows (a stream that ended may be followed by another, ds wrap
// --append); stores are polled for new chunks of their streams and for
// new streams (every sources.PollInterval); a nats:// input is read as
// its messages arrive; stdin, pipes, DSQ1 and legacy files are read to
// their end, and with nothing left to follow it returns. Pipes and
// followed inputs are live: a partial last line shows after
// sources.LiveIdle of quiet, and a quiet input does not hold the merge
// back.
//
// It keeps going past a bad input and returns the worst outcome: an I/O
// error (exit 1) over an input that is not a capture (exit 2) over
// damage (exit 3).
func scanInputs(ctx context.Context, set *sources.Set, names []string, stdin io.Reader, stderr io.Writer, follow bool, sinkFor func(*sources.Input) segments.Sink, done func(*sources.Input)) error {
	if len(names) == 0 {
		return usagef("no input given (name capture files, or - for stdin)")
	}
	stderr = &lockedWriter{w: stderr}
	if follow {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
	}
	var o outcome
	paths, dirs := set.Expand(names, follow, stderr, o.failer(stderr))
	var ins []*sources.Input
	live := follow
	for _, p := range paths {
		in, err := set.Open(ctx, p, stdin, follow)
		if err != nil {
			o.fail(stderr, err)
			continue
		}
		if in.Store != nil && follow {
			in.Store.Follow(ctx)
		}
		live = live || in.Size < 0 && in.Store == nil
		ins = append(ins, in)
	}
	opts := segments.ScanOptions{Follow: follow}
	if live {
		opts.IdleAfter = sources.LiveIdle
	}
	finish := func(in *sources.Input, rep *sources.DamageReporter, err error) {
		if done != nil {
			done(in)
		}
		in.Close()
		if rep.Damaged {
			o.damage()
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			o.fail(stderr, sources.InputError(in.Name, err))
		}
	}
	if len(ins) == 1 && len(dirs) == 0 {
		in := ins[0]
		rep := in.Reporter(sinkFor(in), stderr)
		finish(in, rep, in.Scan(ctx, opts, rep, stderr))
		return o.status()
	}
	if len(ins) == 0 && len(dirs) == 0 {
		return o.status()
	}
	merged := func(in *sources.Input) views.MergeInput {
		rep := in.Reporter(sinkFor(in), stderr)
		return views.MergeInput{
			Scan: func(ctx context.Context, sink segments.Sink) error { return in.Scan(ctx, opts, sink, stderr) },
			Sink: rep,
			Done: func(err error) { finish(in, rep, err) },
		}
	}
	var first []views.MergeInput
	for _, in := range ins {
		first = append(first, merged(in))
	}
	var more chan views.MergeInput
	if len(dirs) > 0 {
		more = make(chan views.MergeInput)
		go func() {
			defer close(more)
			sources.PollWatches(ctx, dirs, func(path string) {
				in, err := set.Open(context.Background(), path, nil, false)
				if err != nil {
					o.fail(stderr, err)
					return
				}
				if in.Store != nil {
					in.Store.Follow(ctx)
				}
				select {
				case more <- merged(in):
				case <-ctx.Done():
					in.Close()
				}
			})
		}()
	}
	views.Merge(ctx, first, more, views.MergeOptions{IdleAfter: opts.IdleAfter}) // ends with ctx, or returns nil
	return o.status()
}

// expandNames is sources.Set.Expand without following, for commands that
// read their inputs one by one (ds tail, ds info): a directory or store
// that cannot be listed is reported on stderr, and counts in o.
func expandNames(set *sources.Set, names []string, stderr io.Writer, o *outcome) []string {
	paths, _ := set.Expand(names, false, stderr, o.failer(stderr))
	return paths
}

// outcome is the worst outcome of a view's inputs so far; it is safe for
// concurrent use.
type outcome struct {
	mu                          sync.Mutex
	failed, notCapture, damaged bool
}

// fail reports err on stderr.
func (o *outcome) fail(stderr io.Writer, err error) {
	fmt.Fprintf(stderr, "ds: %v\n", err)
	o.mu.Lock()
	defer o.mu.Unlock()
	var ue *usageError
	var bad *sources.URLError
	if errors.Is(err, segments.ErrNotCapture) || errors.As(err, &ue) || errors.As(err, &bad) { // a bad nats:// URL
		o.notCapture = true
	} else {
		o.failed = true
	}
}

// failer returns fail reporting on stderr, for sources.Set.Expand.
func (o *outcome) failer(stderr io.Writer) func(error) {
	return func(err error) { o.fail(stderr, err) }
}

func (o *outcome) damage() {
	o.mu.Lock()
	o.damaged = true
	o.mu.Unlock()
}

// failedInput reports whether an input could not be read or was no
// capture (exit 1 or 2): both rank above damage (3) in status's order,
// 1 over 2 over 3.
func (o *outcome) failedInput() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.failed || o.notCapture
}

// status returns the command's error: exit 1, 2 or 3, or nil.
func (o *outcome) status() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case o.failed:
		return &statusError{code: exitFailure}
	case o.notCapture:
		return &statusError{code: exitUsage}
	case o.damaged:
		return &statusError{code: exitCorrupt}
	}
	return nil
}

// lockedWriter serialises writes to w (stderr, written by the goroutines
// of several inputs).
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// tailFollow is ds tail -f: the last lines of each input, as ds tail
// prints them ("==> NAME <==" before each when there are several, or a
// directory), then what is written to them from then on, from each
// input's own printer (a header whenever the input printing changes),
// until SIGINT or SIGTERM (see scanInputs).
// Directories are watched for new capture files, printed from their
// start; a store's streams are followed as they grow, and the store is
// watched for new streams, printed from their start (sources.StreamReader).
func tailFollow(ctx context.Context, set *sources.Set, names []string, stdin io.Reader, stdout, stderr io.Writer, opts views.TailOptions) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	stderr = &lockedWriter{w: stderr}
	var o outcome
	paths, dirs := set.Expand(names, true, stderr, o.failer(stderr))
	out := &tailOut{w: stdout, multi: len(paths) > 1 || len(dirs) > 0}
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
			o.damage()
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			o.fail(stderr, sources.InputError(in.Name, err))
		}
	}
	storeDone := func(damaged bool, err error) {
		defer wg.Done()
		if damaged {
			o.damage()
		}
		if err != nil {
			o.fail(stderr, err)
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
				o.fail(stderr, err) // no header for it
				continue
			}
			if err := out.header(w.name); err != nil {
				src.Close()
				return writeErr(err)
			}
			d, cur, last, err := tailNATS(ctx, src, w, stderr, one)
			if d {
				o.damage()
			}
			if err != nil {
				src.Close()
				if !errors.Is(err, context.Canceled) && !isEPIPE(err) {
					o.fail(stderr, err)
				}
				continue
			}
			w.mute = false
			wg.Add(1)
			go func() {
				defer wg.Done()
				d, err := followNATS(ctx, src, w, stderr, opts.Log, cur, last)
				if d {
					o.damage()
				}
				if err != nil && !errors.Is(err, context.Canceled) {
					o.fail(stderr, err)
				}
			}()
			continue
		}
		if err := out.header(p); err != nil {
			return writeErr(err)
		}
		in, err := set.Open(context.Background(), p, stdin, false)
		if err != nil {
			o.fail(stderr, err)
			continue
		}
		if in.Store != nil {
			// A stream of a store: its last lines, then what comes.
			wg.Add(1)
			d, err := tailStore(ctx, in, w, stderr, one, storeDone)
			if d {
				o.damage()
			}
			if err != nil {
				wg.Done()
				if !errors.Is(err, context.Canceled) && !isEPIPE(err) {
					o.fail(stderr, err)
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
				o.damage()
			}
			if err != nil && !errors.Is(err, context.Canceled) {
				o.fail(stderr, err)
			}
			continue
		}
		one.Follow = true
		stats, damaged, err := tailFile(ctx, in, one, w, stderr)
		if damaged {
			o.damage()
		}
		w.mute = false
		if err != nil || stats.Sink == nil {
			in.Close()
			if err != nil && !errors.Is(err, context.Canceled) {
				o.fail(stderr, err)
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
				o.fail(stderr, err)
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
	return o.status()
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
	_, err := fmt.Fprintf(o.w, "%s==> %s <==\n", sep, name)
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

// channelFilters turns -c patterns into filters.
func channelFilters(patterns []string) []frames.ChannelFilter {
	var fs []frames.ChannelFilter
	for _, p := range patterns {
		fs = append(fs, frames.ParseChannelPattern(p))
	}
	return fs
}

// newSources returns the inputs of command c: nats:// inputs are opened
// with the credentials of its --nats-* flags (natsFlags), and only the
// subjects of the nodes its --node and --stream flags select are read (the
// views still apply every filter). A bad flag is a *usageError.
func newSources(c *cli.Command) (*sources.Set, error) {
	auth, err := natsAuthFrom(c)
	if err != nil {
		return nil, err
	}
	o := sources.NATSOptions{Auth: auth}
	for _, n := range c.StringSlice("node") {
		o.Nodes = append(o.Nodes, frames.NodeID(n))
	}
	for _, s := range c.StringSlice("stream") {
		if id, err := frames.ParseStreamID(s); err == nil && !slices.Contains(o.Nodes, id.Node) {
			o.Nodes = append(o.Nodes, id.Node) // a bad one is readSelection's to report
		}
	}
	return sources.NewSet(sources.Options{NATS: o}), nil
}

// envSources returns the inputs of a command without --nats-* flags: its
// nats:// inputs are read with $DS_NATS_CREDS and $DS_NATS_TOKEN only,
// every node.
func envSources() *sources.Set {
	auth := fleet.Auth{CredsFile: os.Getenv("DS_NATS_CREDS"), Token: os.Getenv("DS_NATS_TOKEN")}
	return sources.NewSet(sources.Options{NATS: sources.NATSOptions{Auth: auth}})
}

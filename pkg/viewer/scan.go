package viewer

import (
	"context"
	"errors"
	"io"

	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/sources"
	"github.com/ds-telemetry/ds/pkg/views"
)

// Inputs is what one command reads its inputs with. Set opens them
// (nats:// inputs with its credentials); Stdin is the input "-"; Stdout
// gets what the views print, Stderr every warning, note and error.
type Inputs struct {
	Set            *sources.Set
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Interruptible, if not nil, returns the context of a followed read
	// (-f), which runs until it is interrupted: cmd/ds cancels it on
	// SIGINT or SIGTERM. It is called when following starts, and its
	// cancel when following ends.
	Interruptible func(context.Context) (context.Context, context.CancelFunc)
	// ReadStats makes ds tail say on Stderr what reading from the end
	// cost ("ds: NAME: read N of M bytes"; a test hook, $DS_READ_STATS).
	ReadStats bool
}

// Expand is sources.Set.Expand without following, for commands that
// read their inputs one by one (ds tail, ds info, ds check, ds merge): a
// directory or store that cannot be listed is reported on Stderr, and
// counts in o.
func (r *Inputs) Expand(names []string, o *sources.Outcome) []string {
	paths, _ := r.Set.Expand(names, false, r.Stderr, o.Failer(r.Stderr))
	return paths
}

// Scan reads the named inputs into the sinks made for them (sinkFor is
// called once per input, maybe from another goroutine; done, if not nil,
// after each input is read, with its BytesRead set). It returns their
// worst outcome: nil, or a *sources.StatusError.
//
// The names are expanded and opened by r.Set (sources.Set.Expand,
// sources.Set.Open): capture files, - for stdin, nats:// URLs (read as a
// pipe is), stores (one input per stream) and directories (every capture
// file in them, in name order). Every input is read whatever its format
// (segments.ScanAny); a file of none is NotCapture.
//
// One input is scanned directly. Several are merged by time
// (views.Merge): entries of different inputs interleave, each input's
// own in order, so a sink shared by the inputs must not expect them
// grouped by input. A capture file of several streams (without follow)
// is several inputs, one per stream (sources.Input.Streams), sharing its
// sink: so ds merge's output reads as its inputs do; at most
// MaxOpenStreams inputs are then read at once.
//
// With follow (-f), regular DSS files are followed as they grow,
// directories are watched for new capture files and stores polled for
// new chunks and streams (every sources.PollInterval), until ctx ends
// (Interruptible: SIGINT or SIGTERM); stdin, pipes, DSQ1 and
// legacy files are read to their end, and with nothing left to follow it
// returns. Pipes and followed inputs are live: a partial last line shows
// after sources.LiveIdle of quiet, and a quiet input does not hold the
// merge back.
func (r *Inputs) Scan(ctx context.Context, names []string, follow bool, sinkFor func(*sources.Input) segments.Sink, done func(*sources.Input)) error {
	stderr := io.Writer(&lockedWriter{w: r.Stderr})
	if follow {
		var stop context.CancelFunc
		ctx, stop = r.interruptible(ctx)
		defer stop()
	}
	var o sources.Outcome
	paths, dirs := r.Set.Expand(names, follow, stderr, o.Failer(stderr))
	var ins []*sources.Input
	live := follow
	for _, p := range paths {
		in, err := r.Set.Open(ctx, p, r.Stdin, follow)
		if err != nil {
			o.Fail(stderr, err)
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
			o.Damage()
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			o.Fail(stderr, sources.InputError(in.Name, err))
		}
	}
	// A capture file of several streams is read as one input per stream
	// (sources.Input.Streams), merged as files are, so that its order is
	// that of the files it was merged from. A followed file is read as
	// it is written: one input, in its own order.
	parts := make([][]segments.StreamSections, len(ins))
	split := false
	if !follow {
		for i, in := range ins {
			parts[i] = in.Streams()
			split = split || parts[i] != nil
		}
	}
	if len(ins) == 1 && len(dirs) == 0 && !split {
		in := ins[0]
		rep := in.Reporter(sinkFor(in), stderr)
		finish(in, rep, in.Scan(ctx, opts, rep, stderr))
		return o.Err()
	}
	if len(ins) == 0 && len(dirs) == 0 {
		return o.Err()
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
	for i, in := range ins {
		if parts[i] == nil {
			first = append(first, merged(in))
			continue
		}
		first = append(first, splitInputs(in, parts[i], opts, sinkFor(in), stderr, finish)...)
	}
	mopts := views.MergeOptions{IdleAfter: opts.IdleAfter}
	if split {
		// Bounded memory: a capture of many streams is read
		// MaxOpenStreams streams at a time (named inputs are all read
		// at once, as ever).
		mopts.MaxOpen = max(MaxOpenStreams, len(ins))
	}
	var more chan views.MergeInput
	if len(dirs) > 0 {
		more = make(chan views.MergeInput)
		go func() {
			defer close(more)
			sources.PollWatches(ctx, dirs, func(path string) {
				in, err := r.Set.Open(context.Background(), path, nil, false)
				if err != nil {
					o.Fail(stderr, err)
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
	views.Merge(ctx, first, more, mopts) // ends with ctx, or returns nil
	return o.Err()
}

// MaxOpenStreams is how many inputs the merge of Scan reads at once when
// a capture file of several streams is read as one input per stream (at
// least the inputs named): a stream beyond it starts when one read
// before it ends, so a capture of more streams that overlap in time is
// in time order only within each group read at once. Each input read
// costs up to a few MiB of batches read ahead.
const MaxOpenStreams = 64

// splitInputs returns the merge inputs of in, a capture file of several
// streams: one per stream, reading its sections (sources.Input.ScanSections)
// into sink, which they share (with one damage reporter); finish is
// called once the last of them is done, with the first error.
func splitInputs(in *sources.Input, streams []segments.StreamSections, opts segments.ScanOptions, sink segments.Sink, stderr io.Writer, finish func(*sources.Input, *sources.DamageReporter, error)) []views.MergeInput {
	rep := in.Reporter(sink, stderr)
	read := make([]int64, len(streams)) // each set by its Scan, before its Done
	left := len(streams)
	var first error
	ins := make([]views.MergeInput, len(streams))
	for k, st := range streams {
		ins[k] = views.MergeInput{
			Scan: func(ctx context.Context, sink segments.Sink) error {
				n, err := in.ScanSections(ctx, opts, st.Sections, sink, stderr)
				read[k] = n
				return err
			},
			Sink: rep,
			Done: func(err error) {
				if first == nil {
					first = err
				}
				if left--; left > 0 {
					return
				}
				in.BytesRead = 0
				for _, n := range read {
					in.BytesRead += n
				}
				finish(in, rep, first)
			},
		}
	}
	return ins
}

// interruptible returns ctx as r.Interruptible makes it.
func (r *Inputs) interruptible(ctx context.Context) (context.Context, context.CancelFunc) {
	if r.Interruptible == nil {
		return ctx, func() {}
	}
	return r.Interruptible(ctx)
}

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
// grouped by input.
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
	if len(ins) == 1 && len(dirs) == 0 {
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
	for _, in := range ins {
		first = append(first, merged(in))
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
	views.Merge(ctx, first, more, views.MergeOptions{IdleAfter: opts.IdleAfter}) // ends with ctx, or returns nil
	return o.Err()
}

// interruptible returns ctx as r.Interruptible makes it.
func (r *Inputs) interruptible(ctx context.Context) (context.Context, context.CancelFunc) {
	if r.Interruptible == nil {
		return ctx, func() {}
	}
	return r.Interruptible(ctx)
}

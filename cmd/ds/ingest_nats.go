package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/fleet"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/textfmt"
)

// ds ingest STORE nats://HOST:PORT/PREFIX: the store fed by a durable
// JetStream consumer (fleet.Ingest) instead of files or stdin. ds collect
// runs the same consumer next to the server it embeds (fleet.Collect), and
// prints what it does with the same natsReport.

// defaultDurable is the durable consumer name of ds ingest's nats://
// input: ingesters of one name share the work and resume where its
// acknowledgements stopped.
const defaultDurable = "ds-ingest"

// ingestNATSFlags are the flags of ds ingest that only a nats:// input
// takes, and the NATS connection flags.
func ingestNATSFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "durable", Value: defaultDurable, Usage: "with a nats:// input: the durable consumer `NAME` (ingesters of one name share the work and resume where it stopped)"},
		&cli.DurationFlag{Name: "idle", Usage: "with a nats:// input: stop after `D` without a message (default: run until interrupted)"},
	}, natsFlags()...)
}

// ingestNATSAction is ds ingest STORE URL: it connects (an unreachable
// server, no stream for the prefix, JetStream off: exit 1, before the
// store is created), then runs fleet.Ingest until SIGINT or SIGTERM, or
// --idle without a message. commitBytes (--commit-bytes) bounds a batch.
func ingestNATSAction(ctx context.Context, c *cli.Command, dir, url string, commitBytes int64) error {
	if c.IsSet("commit-interval") {
		return usagef("--commit-interval applies to files and -; a nats:// input commits each batch it fetches (--commit-bytes bounds one)")
	}
	durable := c.String("durable")
	if durable == "" || strings.ContainsAny(durable, ".*> \t") {
		return usagef("--durable %q: want a consumer name without dots, wildcards or spaces", durable)
	}
	idle := c.Duration("idle")
	if idle < 0 {
		return usagef("--idle %s: want a positive duration, such as 5s", idle)
	}
	auth, err := natsAuthFrom(c)
	if err != nil {
		return err
	}
	root := c.Root()
	nc, t, err := dialNATS(url, auth, "ds ingest", false, root.ErrWriter)
	if err != nil {
		return err
	}
	defer nc.Close()
	if err := fleet.CheckStreamIfConnected(nc, t); err != nil {
		return err
	}
	ctx, stop := signalContext(ctx)
	defer stop()
	_, statErr := os.Stat(dir)
	created := errors.Is(statErr, os.ErrNotExist)
	st, err := segments.CreateStore(dir)
	if err != nil {
		return err
	}
	defer st.Close()
	rep := &natsReport{display: t.Display, stdout: root.Writer, stderr: root.ErrWriter}
	o := fleet.IngestOptions{Durable: durable, Idle: idle, BatchBytes: int(min(commitBytes, 1<<30))}
	stats, err := fleet.Ingest(ctx, nc, t, st, rep.options(o))
	err = rep.finish(ctx, stats, err)
	if created && err != nil {
		if streams, serr := st.Streams(); serr == nil && len(streams) == 0 {
			st.Close()
			os.RemoveAll(dir)
		}
	}
	return err
}

// natsReport prints what fleet.Ingest does for ds ingest nats://… and
// ds collect, naming the input display (a target's Display form).
//
// stdout gets a line for each batch stored and acknowledged, as ds
// ingest - prints one per commit:
//
//	nats://127.0.0.1:4222/ds: 1500 frames stored, 0 duplicates, 0 conflicts (12 messages acknowledged)
//
// and, when ctx ends the run, the totals "in all … (interrupted)"; a run
// that stored nothing prints its zero line. Damage, conflicts, messages
// the server removed before they were read, and outages go to stderr as
// "ds: …" lines, escaped as ds ingest escapes names.
type natsReport struct {
	display        string
	stdout, stderr io.Writer
	last           fleet.IngestStats
}

// options returns o with its Warn and Stored set to print, and the
// default durable name when it has none.
func (r *natsReport) options(o fleet.IngestOptions) fleet.IngestOptions {
	if o.Durable == "" {
		o.Durable = defaultDurable
	}
	o.Warn = func(err error) {
		fmt.Fprintf(r.stderr, "ds: %s\n", textfmt.Escape(err.Error()))
	}
	o.Stored = func(s fleet.IngestStats) {
		last := r.last
		line := segments.IngestLine(r.display, s.Frames-last.Frames, s.Duplicates-last.Duplicates, s.Conflicts-last.Conflicts, 0)
		fmt.Fprintf(r.stdout, "%s (%s acknowledged)\n", line, textfmt.Nouns(s.Messages-last.Messages, "message"))
		r.last = s
	}
	return o
}

// finish prints the last line of a run that ended with stats and err and
// returns the command's error: nil when ctx ended it or it was idle (a
// *statusError with exit 3 when a message was damaged), and the error of
// a consumer that could not be made or a batch that could not be stored
// (exit 1): what was not acknowledged is delivered again to the next run.
func (r *natsReport) finish(ctx context.Context, stats fleet.IngestStats, err error) error {
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return nil // interrupted while starting: nothing was fetched
		}
		return &safeError{text: textfmt.Escape(err.Error()), err: err}
	}
	if ctx.Err() != nil || stats.Batches == 0 {
		line := segments.IngestLine(r.display, stats.Frames, stats.Duplicates, stats.Conflicts, 0)
		if stats.Batches > 0 {
			line += " in all"
		}
		line += fmt.Sprintf(" (%s acknowledged)", textfmt.Nouns(stats.Messages, "message"))
		if ctx.Err() != nil {
			line += " (interrupted)"
		}
		fmt.Fprintln(r.stdout, line)
	}
	if stats.Damaged > 0 || stats.Forged > 0 {
		// A segment skipped for holding another stream than its
		// subject's is damage to the readers of nats:// too.
		return &statusError{code: exitCorrupt}
	}
	return nil
}

// signalContext is ctx, done at SIGINT or SIGTERM as well.
func signalContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

// safeError is an error whose text is cleaned for the terminal (names
// from the server or the input) and whose cause stays reachable for
// errors.Is and errors.As (the exit status).
type safeError struct {
	text string
	err  error
}

func (e *safeError) Error() string { return e.text }
func (e *safeError) Unwrap() error { return e.err }

package main

import (
	"context"
	"io"
	"os"
	"runtime/debug"
	"slices"

	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/fleet"
	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/sources"
	"github.com/ds-telemetry/ds/pkg/viewer"
)

// limitReadMemory gives the views a soft memory limit (unless GOMEMLIMIT
// is set): the garbage collector then keeps the heap near what the views
// hold, which their bounds keep under readMemoryLimit, instead of letting
// it double between collections.
func limitReadMemory() { limitMemory(readMemoryLimit) }

// limitMemory sets a soft memory limit of n bytes unless GOMEMLIMIT is set.
func limitMemory(n int64) {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(n)
	}
}

// collectOften has the garbage collector run at half again the live heap
// instead of twice it (GOGC=50), unless GOGC is set: for ds merge and
// ds ingest (and ds trim), whose heap is mostly buffers they reuse or batches they
// commit and drop, it keeps the peak RSS under 64 MiB (ARCHITECTURE.md
// §7) at little cost.
func collectOften() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
}

// readMemoryLimit is the soft memory limit of the views, in bytes. A view
// keeps to 64 MiB of RSS whatever its input (ARCHITECTURE.md §7), the
// binary's own pages (about 15 MiB) included: at 48 MiB, the views of a
// capture whose header is as large as the format allows (16 MiB, a
// catalog of 140 000 channels) reached 68 to 75 MiB, at 40 MiB 55 to 65.
// An ordinary capture's view holds about 5 MiB and never reaches it.
const readMemoryLimit = 40 << 20

// inputsHelp is the part of a view's description that says what its
// inputs may be (see scanInputs).
const inputsHelp = `Inputs are capture files, directories (every capture file in them, in
name order; hidden files and other files are skipped, but a *.dss file
that is no capture is refused as if named: exit 2), stores and - for
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
order, in any argument order. A capture file of several streams (the output
of ds merge, or cat a.dss b.dss) is read as one input per stream, found from
its segment headers, so it prints line for line as the files it was made of
do, in any order of its streams' segments; at most 64 inputs are read at once
(a file of more streams starts each further one when another ends, after
what was printed by then). With -f a file is read once, as it is written,
and so are stdin and pipes, which cannot be read twice: a capture of several
streams read that way prints in its own order, stream after stream as its
segments come. A pipe is shown as it arrives: a line without its newline
yet shows after 0.3 s of quiet.

A nats://HOST[:PORT][/PREFIX] input (tls:// for TLS; PREFIX "ds" by
default) is the JetStream stream that producers publish to with
-o nats://… (ds nats init makes it): the messages it holds, read as a
pipe is (-f: then the new ones, as they arrive), only the subjects of
the nodes --node and --stream name. ds tail reads its last messages
only. Credentials come from --nats-creds, --nats-token ($DS_NATS_TOKEN)
or user:password@ in the URL; the input is named without them. A server
that does not answer within 3 s, or has no stream for PREFIX, is an
error (exit 1).`

// scanInputs is viewer.Inputs.Scan for command c's inputs (names; see
// inputsHelp), following with -f until SIGINT or SIGTERM, which end it
// cleanly. No name is a usage error.
func scanInputs(ctx context.Context, set *sources.Set, names []string, stdin io.Reader, stderr io.Writer, follow bool, sinkFor func(*sources.Input) segments.Sink, done func(*sources.Input)) error {
	if len(names) == 0 {
		return usagef("no input given (name capture files, or - for stdin)")
	}
	r := newInputs(set, stdin, nil, stderr)
	return r.Scan(ctx, names, follow, sinkFor, done)
}

// newInputs returns the reader of a view's inputs: set, stdin, stdout,
// stderr; what it follows ends at SIGINT or SIGTERM; $DS_READ_STATS
// turns on its test hook.
func newInputs(set *sources.Set, stdin io.Reader, stdout, stderr io.Writer) *viewer.Inputs {
	return &viewer.Inputs{
		Set: set, Stdin: stdin, Stdout: stdout, Stderr: stderr,
		Interruptible: signalContext, ReadStats: os.Getenv("DS_READ_STATS") != "",
	}
}

// expandNames is viewer.Inputs.Expand: a directory's captures, a store's
// streams; what cannot be listed is reported on stderr, and counts in o.
func expandNames(set *sources.Set, names []string, stderr io.Writer, o *sources.Outcome) []string {
	return (&viewer.Inputs{Set: set, Stderr: stderr}).Expand(names, o)
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

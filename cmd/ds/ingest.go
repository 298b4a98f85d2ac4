package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/fleet"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/sources"
	"github.com/ds-telemetry/ds/pkg/textfmt"
)

func ingestCommand() *cli.Command {
	return &cli.Command{
		Name:      "ingest",
		Usage:     "store captures in a store directory, each frame once, crash-safe",
		UsageText: "ds ingest [--commit-bytes N] [--commit-interval D] STORE INPUT…|-\n   ds ingest [--durable NAME] [--idle D] [NATS FLAGS] STORE nats://HOST:PORT/PREFIX",
		Description: `Stores the frames of DSS captures (files, or - for stdin, read as it
comes: ssh host ds wrap -o - -- job | ds ingest store -) in the store
directory STORE, which it creates if needed (a directory that exists must
be a store or empty). Every view reads a store as it reads a capture
(ds log STORE, ds tail STORE, ds info STORE).

A store keeps each stream (node, life) rebuilt by position: every frame
once, whatever order, copies and cuts of the stream arrive in. A frame at
a position already stored is a duplicate, dropped when it is the same
(channel and payload), and refused, reported on stderr, when it differs
(a conflict: the stored frame stays, first copy wins). So ingesting is
idempotent (the same capture twice stores nothing new) and, but for
conflicts, order-independent (any arrival order stores the same frames;
of two different payloads at one position, the one that arrived first is
kept, and the conflict is said only when the second arrives). A channel
whose descriptor differs from the one the store (or the input) holds for
its id is a catalog conflict: that stream's frames in that input are not
stored (exit 1); the other streams' are. Frames below a stream's trim
horizon (ds trim) are dropped. Damaged input is reported on stderr with
its byte range, and the good frames around it are stored (exit 3).

Frames are buffered and committed when --commit-bytes are buffered (at
the end of the input's compressed block being read, so that the block is
stored as it is, not compressed again: at most twice --commit-bytes),
when --commit-interval has passed with something buffered, at each
stream's end, and at the end of an input. A commit holds the store's lock (a
second ds ingest waits its turn; readers never wait) and writes new frames
as a chunk file, synced and renamed into place: kill -9 at any instant
loses nothing committed, and running the same ds ingest again stores the
rest, without duplicates.

A line on stdout says that data is stored and durable: one per input
file when it is done, one per commit for - (live input):

   run.dss: 1500 frames stored, 0 duplicates, 0 conflicts
   -: 800 frames stored, 0 duplicates, 0 conflicts (input to byte 65536)

(", N below the trim horizon" follows when frames were dropped so). For
-, every frame of the records before that byte of the input is stored.
SIGINT or SIGTERM commits what is buffered and prints its line with
"(interrupted)" (for -, with the totals "in all"): that is how a live
input is stopped, exit 0. When a file, or an input not yet read, is not
stored whole, ds ingest names them on stderr and exits 130: ingest them
again later to store the rest.

A nats://HOST[:PORT][/PREFIX] input (tls:// for TLS; PREFIX "ds" by
default) is the JetStream stream that producers publish to with
-o nats://… (ds nats init creates it): ds ingest reads it with the
durable consumer --durable NAME ("ds-ingest" by default), stores each
batch of messages it fetches (at most --commit-bytes; synced and renamed
as any commit) and only then acknowledges them, so a killed ingester
loses nothing: what it had not acknowledged is delivered again and
collapses in the store. Another run with the same NAME goes on where the
last one stopped; several at once share the work; another NAME reads the
stream from its oldest message kept. It runs until SIGINT or SIGTERM
(the batch in hand is stored first), or --idle D without a message. It
prints a line for each batch stored, as for - but ending in "(N messages
acknowledged)", and at an interruption the totals, "in all …
(interrupted)", exit 0.
Outages of the server are waited out, with a note on stderr; messages the
stream's limits removed before they were read are counted on stderr (their
frames are trimmed, not stored). A server that cannot be reached at the
start, or without JetStream or a stream for PREFIX, is an error (exit 1).
A nats:// input is ingested alone (no files or - beside it). The --nats-*
flags give credentials; user:password@ in the URL works too, and is never
printed.

The store's layout (STORE/ds-store marks it; see also ds-format(5)):
   STORE/lock                  locked while a commit, trim or save runs
   STORE/tmp/                  temporary files, removed when opened
   STORE/consumers/NAME.json   cursors of named consumers (ds tail
                               --consumer)
   STORE/streams/DIR/          one stream: stream.json (descriptor, chunk
                               index), catalog.json (channel names),
                               horizon (ds trim), chunks/FIRST-LAST-R.dss
DIR is a cleaned, lowercased prefix of the node name, "~" and a hash of
the exact (node, life), so no node name can write outside the store.

Exit status: 0 when every input was stored (or - or a nats:// input was
interrupted, or idle), 130 when an interruption left inputs not stored
whole, 1 on an error (an input or the store could not be read or
written, a catalog conflict, a server not reached), 2 on a bad command
line or an input that is no DSS capture, 3 when an input was damaged (a
nats:// message too, or one holding a segment of another stream than its
subject names: that segment is skipped and named on stderr), 4
when everything was stored but conflicting copies were refused (a
different payload for a position already stored: the first is kept, and
named on stderr; the store keeps no trace of the refused copy).`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "commit-bytes", Value: "8MiB", Usage: "commit when `N` bytes are buffered (suffixes K, M, G: KiB, MiB, GiB)"},
			&cli.DurationFlag{Name: "commit-interval", Value: segments.DefaultCommitInterval, Usage: "commit what is buffered at least every `D`"},
		}, ingestNATSFlags()...),
		Action: ingestAction,
	}
}

func ingestAction(ctx context.Context, c *cli.Command) error {
	args := c.Args().Slice()
	if len(args) < 2 {
		return usagef("want a store directory and at least one input (- for stdin)")
	}
	commitBytes, err := segments.ParseSize(c.String("commit-bytes"))
	if err != nil || commitBytes <= 0 || commitBytes > 1<<40 {
		return usagef("--commit-bytes %q: want a size in bytes, such as 16MiB or 512K", c.String("commit-bytes"))
	}
	interval := c.Duration("commit-interval")
	if interval <= 0 {
		return usagef("--commit-interval %s: want a positive duration, such as 1s", interval)
	}
	limitMemory(ingestMemoryLimit(commitBytes))
	stdin, urls := 0, 0
	for _, a := range args[1:] {
		switch {
		case a == "-":
			stdin++
		case fleet.IsURL(a):
			urls++
		}
	}
	switch {
	case urls > 0 && len(args) > 2:
		return usagef("a nats:// input is ingested alone: name one, without files or - (run a ds ingest for each)")
	case urls > 0:
		return ingestNATSAction(ctx, c, args[0], args[1], commitBytes)
	case c.IsSet("durable") || c.IsSet("idle"):
		return usagef("--durable and --idle apply to a nats:// input")
	case stdin > 1:
		return usagef("- (stdin) named %d times", stdin)
	}
	root := c.Root()
	ctx, stop := signalContext(ctx)
	defer stop()
	_, statErr := os.Stat(args[0])
	created := errors.Is(statErr, fs.ErrNotExist)
	st, err := segments.CreateStore(args[0])
	if err != nil {
		return err
	}
	defer st.Close()

	opts := segments.IngestOptions{CommitBytes: int(commitBytes), CommitInterval: interval}
	err = runIngest(ctx, st, args[1:], root.Reader, root.Writer, root.ErrWriter, opts)
	if created && err != nil {
		// A store this run made and that failed before storing anything
		// (every input refused) is not left behind.
		if streams, serr := st.Streams(); serr == nil && len(streams) == 0 {
			st.Close()
			os.RemoveAll(args[0])
		}
	}
	return err
}

// runIngest stores each input in st, printing its lines (see ds ingest
// --help). It keeps going past a bad input and returns the worst outcome;
// an interruption (ctx) stops it after the input being read, with what
// was read of it committed.
func runIngest(ctx context.Context, st *segments.Store, names []string, stdin io.Reader, stdout, stderr io.Writer, opts segments.IngestOptions) error {
	var o sources.Outcome
	warn := func(err error) {
		var ce *segments.CorruptError
		if errors.As(err, &ce) {
			o.Damage()
		}
		fmt.Fprintf(stderr, "ds: %s\n", textfmt.Escape(err.Error()))
	}
	var conflicts uint64
	for i, name := range names {
		r, closer, err := segments.OpenDSSInput(name, stdin)
		if err != nil {
			o.Fail(stderr, err)
			continue
		}
		opts := opts
		opts.Warn = warn
		live := name == "-"
		if live {
			opts.Acked = func(c segments.Commit) {
				fmt.Fprintf(stdout, "%s (input to byte %d)\n", segments.IngestLine(c.Input, c.Frames, c.Duplicates, c.Conflicts, c.Trimmed), c.Offset)
			}
		}
		rep, err := st.Ingest(ctx, name, r, opts)
		conflicts += rep.Conflicts
		if closer != nil {
			closer.Close()
		}
		interrupted := errors.Is(err, context.Canceled)
		if !live || rep.Commits == 0 || interrupted {
			line := segments.IngestLine(name, rep.Frames, rep.Duplicates, rep.Conflicts, rep.Trimmed)
			if interrupted {
				if live && rep.Commits > 0 {
					line += " in all"
				}
				line += " (interrupted)"
			}
			fmt.Fprintln(stdout, line)
		}
		if rep.Damaged {
			o.Damage()
		}
		if err != nil && !interrupted {
			// Ingest joins the errors of several streams: a line each.
			for _, line := range strings.Split(err.Error(), "\n") {
				o.Fail(stderr, errors.New(textfmt.Escape(line)))
			}
		}
		if interrupted || ctx.Err() != nil {
			rest := notStoredWhole(names, i, live)
			if len(rest) == 0 {
				break
			}
			fmt.Fprintf(stderr, "ds: interrupted: not stored whole: %s (ds ingest them again to store the rest)\n", strings.Join(rest, " "))
			if err := o.Err(); err != nil {
				return err
			}
			return &statusError{code: 128 + int(syscall.SIGINT)}
		}
	}
	if err := o.Err(); err != nil {
		return err
	}
	if conflicts > 0 {
		// Stored, but a copy that differed was refused: the store keeps
		// the first, and nothing in it says so later. CI must see it.
		fmt.Fprintf(stderr, "ds: %s refused: the store keeps the first copy of each position (ds gaps of the inputs lists them)\n", textfmt.Nouns(conflicts, "conflicting copy"))
		return &statusError{code: exitLoss}
	}
	return nil
}

// notStoredWhole returns, after an interruption while names[i] was read,
// the inputs not stored whole (never exit 0 then): names[i] itself when
// it is a file, and the inputs not read yet. A live input (stdin, a named
// pipe, a device) is stopped this way: it counts as whole.
func notStoredWhole(names []string, i int, live bool) []string {
	stream := live
	if fi, err := os.Stat(names[i]); err == nil && !fi.Mode().IsRegular() {
		stream = true // a named pipe, a device
	}
	if !stream {
		return names[i:]
	}
	return names[i+1:]
}

// ingestMemoryLimit is ds ingest's soft memory limit, in bytes, for
// commits of commitBytes (see readMemoryLimit): 44 MiB for the default
// 8 MiB, room for two commits' frames (a commit waits for the end of the
// input's block) and a catalog of 120 000 channels. Under it the
// collector runs at the default pace (GOGC=50 made it collect every few
// MiB of payloads, a fifth of an ingest's CPU); near it, more often. A
// catalog of 120 000 channels peaked at 58 to 66 MiB of RSS at GOGC=50,
// at 53 to 54 under the limit.
func ingestMemoryLimit(commitBytes int64) int64 {
	return 28<<20 + 2*min(commitBytes, 1<<40)
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/textfmt"
	"github.com/ds-telemetry/ds/pkg/views"
)

func trimCommand() *cli.Command {
	return &cli.Command{
		Name:      "trim",
		Usage:     "delete a store's oldest frames, below a position, a time or a size",
		UsageText: "ds trim STORE (--before POS|TIME | --keep-bytes N) [--stream NODE#LIFE]… [--respect-consumers] [-n]",
		Description: `Trims the streams of a store (ds ingest): their frames below a horizon
become unreadable, and the store deletes the chunk files whose frames are
all below it. Positions are never renumbered: the frames kept keep their
positions, and every view reports the trimmed prefix as "trimmed", not as
a gap. Nothing is woken (a ds tail -f of the store goes on). It prints,
for each stream trimmed:

   node#life: N frames trimmed (below position P), F files deleted

where N counts the stored frames newly trimmed, P is the stream's
horizon after the trim and F the chunk files deleted. A chunk file that
holds frames on both sides of the horizon stays, its frames below hidden
from every reader, until a later trim passes its last frame.

--before POS trims the positions below POS (POS itself is kept):
--before 5 makes 0..4 unreadable and keeps 5 on (the seed's trim_to(4)).
A trim never lowers a horizon: --before at or below the stream's horizon,
or below its every frame, trims nothing and prints 0, again and again.

--before TIME (any form that ds log --since takes: -10m, 2026-12-01,
"2026-12-01 10:00", 10:00, @UNIXSECONDS, +1h after the stream's first
clock reading, RFC 3339; local time unless --utc; a plain number is a
position) trims the frames whose time is before TIME: a frame's time is
its stream's latest datastream.clock reading before it, so the horizon
is the position of the first clock record at or after TIME (every frame
when there is none). A stream without clock records has no time to trim
by: it is named on stderr and left alone.

--keep-bytes N (suffixes K, M, G: KiB, MiB, GiB) trims until the store's
chunk files take at most N bytes: whole chunk files go, each stream's
lowest positions first, across streams the chunk written longest ago
first (a stream's horizon rises past each chunk deleted). The newest
chunk of a stream that has not ended is never deleted, as journalctl
--vacuum-size removes only archived journal files: its writer may still
add to it. When such chunks alone take more than N, ds trim says so on
stderr and trims what it can.

--stream NODE#LIFE (repeatable) trims only those streams (with --before;
all streams by default). --respect-consumers refuses, before trimming
anything (exit 1), a trim past the saved cursor of any consumer of the
store (ds tail --consumer): the consumer still needs the frames after its
cursor, and a consumer that has not read a stream at all needs all of it.
-n (--dry-run) prints the same lines, saying "would be trimmed" and
"would be deleted", and changes nothing.

Exit status: 0 on success (also when nothing was trimmed), 1 when the
store cannot be read or written, names no such stream, or a consumer
would be passed, 2 on a bad command line or a STORE that is no store.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "before", Usage: "trim the frames below position `POS`, or before time TIME"},
			&cli.StringFlag{Name: "keep-bytes", Usage: "trim the oldest chunk files until the store takes at most `N` bytes"},
			&cli.StringSliceFlag{Name: "stream", Usage: "trim only stream `NODE#LIFE` (with --before); repeatable"},
			&cli.BoolFlag{Name: "respect-consumers", Usage: "refuse to trim past any consumer's saved cursor"},
			&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "print what would be trimmed; delete nothing"},
			&cli.BoolFlag{Name: "utc", Usage: "read --before times in UTC"},
		},
		Action: trimAction,
	}
}

// trimOptions is what ds trim was asked.
type trimOptions struct {
	before    segments.TrimBefore // --before, --stream (with --before)
	position  string              // --before POS, as given ("" for a time)
	keepBytes int64               // --keep-bytes; < 0 when not given
	respect   bool
	dryRun    bool
}

// oneStore returns the one STORE argument of ds trim and ds collect.
func oneStore(c *cli.Command) (string, error) {
	args := c.Args().Slice()
	switch {
	case len(args) == 0:
		return "", usagef("no store given")
	case len(args) > 1:
		return "", usagef("one store at a time (got %d arguments)", len(args))
	}
	return args[0], nil
}

func trimAction(ctx context.Context, c *cli.Command) error {
	store, err := oneStore(c)
	if err != nil {
		return err
	}
	opts := trimOptions{keepBytes: -1, respect: c.Bool("respect-consumers"), dryRun: c.Bool("dry-run")}
	loc := time.Local
	if c.Bool("utc") {
		loc = time.UTC
	}
	before := c.String("before")
	hasBefore, hasKeep := c.IsSet("before"), c.IsSet("keep-bytes")
	switch {
	case hasBefore == hasKeep:
		return usagef("give one of --before POS|TIME and --keep-bytes N")
	case hasBefore && before == "":
		return usagef("--before: want a position or a time")
	case hasKeep:
		n, err := segments.ParseSize(c.String("keep-bytes"))
		if err != nil {
			return usagef("--keep-bytes %q: want a size in bytes, such as 0, 4096 or 10GiB", c.String("keep-bytes"))
		}
		opts.keepBytes = n
		if c.IsSet("stream") {
			return usagef("--stream goes with --before; --keep-bytes trims the whole store")
		}
	}
	for _, s := range c.StringSlice("stream") {
		id, err := frames.ParseStreamID(s)
		if err != nil {
			return usagef("--stream %q: want NODE#LIFE (%v)", s, err)
		}
		opts.before.Streams = append(opts.before.Streams, id)
	}
	if hasBefore && isDecimal(before) {
		opts.position = before
	} else if hasBefore {
		b, err := views.ParseTimeBound(before, time.Now(), loc)
		if err != nil {
			return usagef("--before %q: want a position or a time (%v)", before, err)
		}
		opts.before.Time = &segments.TrimTime{UnixNS: b.UnixNS, FromStart: b.FromStart, Offset: b.Offset}
	}
	st, err := segments.OpenStore(store)
	if errors.Is(err, segments.ErrNotStore) {
		return usagef("%s is not a store (ds ingest makes one)", store)
	}
	if err != nil {
		return err
	}
	defer st.Close()
	root := c.Root()
	collectOften() // a store's catalog of 120 000 channels is read at each trimmed stream
	return runTrim(st, opts, root.Writer, root.ErrWriter)
}

// isDecimal reports whether s is a plain decimal number (a position).
func isDecimal(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// runTrim plans the trim of st, checks it against the consumers, and does
// it (unless a dry run), printing a line per stream.
func runTrim(st *segments.Store, opts trimOptions, stdout, stderr io.Writer) error {
	plan, err := planTrim(st, opts, stderr)
	if err != nil {
		return err
	}
	if opts.respect {
		passed, err := st.PassedConsumers(plan)
		if err != nil {
			return err
		}
		if len(passed) > 0 {
			lines := make([]string, len(passed))
			for i, p := range passed {
				lines[i] = textfmt.Escape(p.String())
			}
			return errors.New(strings.Join(lines, "\nds: ") + "\nds: --respect-consumers: nothing trimmed")
		}
	}
	for _, p := range plan {
		rep := p
		if !opts.dryRun {
			if rep, err = st.Trim(p.Stream, p.Before); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%s: %s trimmed (below position %d), %s deleted\n", textfmt.Escape(rep.Stream.String()), textfmt.Nouns(rep.Frames, "frame"), rep.Before, textfmt.Nouns(uint64(rep.Files), "file"))
		} else {
			fmt.Fprintf(stdout, "%s: %s would be trimmed (below position %d), %s would be deleted\n", textfmt.Escape(rep.Stream.String()), textfmt.Nouns(rep.Frames, "frame"), rep.Before, textfmt.Nouns(uint64(rep.Files), "file"))
		}
	}
	return nil
}

// planTrim returns what opts asks to trim of st (segments.Store.PlanTrimBytes
// or PlanTrimBefore), naming on stderr the streams without a time to trim
// by.
func planTrim(st *segments.Store, opts trimOptions, stderr io.Writer) ([]segments.TrimReport, error) {
	if opts.keepBytes >= 0 {
		plan, err := st.PlanTrimBytes(opts.keepBytes)
		if err == nil && plan.Bytes > opts.keepBytes {
			fmt.Fprintf(stderr, "ds: the store's chunk files take %s after the trim, over --keep-bytes %d: the newest chunk of a stream that has not ended (its writer may still add to it) and the record of a stream's end are never deleted\n", textfmt.Nouns(uint64(plan.Bytes), "byte"), opts.keepBytes)
		}
		return plan.Reports, err
	}
	b := opts.before
	var overflow bool
	if opts.position != "" {
		p, err := strconv.ParseUint(opts.position, 10, 64)
		b.Position, overflow = frames.Position(p), err != nil
	}
	plan, err := st.PlanTrimBefore(b)
	for _, id := range plan.Untimed {
		fmt.Fprintf(stderr, "ds: %s: no datastream.clock records: no time to trim by; left alone\n", textfmt.Escape(id.String()))
	}
	if err != nil {
		return nil, &safeError{text: textfmt.Escape(err.Error()), err: err}
	}
	if overflow && len(plan.Reports) > 0 {
		// Refused once a stream is to be trimmed, as ever.
		return nil, usagef("--before %q: a position must be below 2^64", opts.position)
	}
	return plan.Reports, nil
}

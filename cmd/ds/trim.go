package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
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
first (a stream's horizon rises past each chunk deleted).

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
	before    string // --before, as given
	keepBytes int64  // --keep-bytes; < 0 when not given
	streams   []frames.StreamID
	respect   bool
	dryRun    bool
	loc       *time.Location
	now       time.Time
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
	opts := trimOptions{before: c.String("before"), keepBytes: -1, respect: c.Bool("respect-consumers"), dryRun: c.Bool("dry-run"), loc: time.Local, now: time.Now()}
	if c.Bool("utc") {
		opts.loc = time.UTC
	}
	hasBefore, hasKeep := c.IsSet("before"), c.IsSet("keep-bytes")
	switch {
	case hasBefore == hasKeep:
		return usagef("give one of --before POS|TIME and --keep-bytes N")
	case hasBefore && opts.before == "":
		return usagef("--before: want a position or a time")
	case hasKeep:
		n, err := ingestParseBytes(c.String("keep-bytes"))
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
		opts.streams = append(opts.streams, id)
	}
	var bound *views.TimeBound
	if hasBefore && !isDecimal(opts.before) {
		b, err := views.ParseTimeBound(opts.before, opts.now, opts.loc)
		if err != nil {
			return usagef("--before %q: want a position or a time (%v)", opts.before, err)
		}
		bound = &b
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
	return runTrim(st, opts, bound, root.Writer, root.ErrWriter)
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
func runTrim(st *segments.Store, opts trimOptions, bound *views.TimeBound, stdout, stderr io.Writer) error {
	streams, err := st.Streams()
	if err != nil {
		return err
	}
	byID := make(map[frames.StreamID]segments.StoreStream, len(streams))
	for _, ss := range streams {
		byID[ss.Desc.Stream] = ss
	}
	var plan []segments.TrimReport
	if opts.keepBytes >= 0 {
		if plan, err = st.PlanTrimBytes(opts.keepBytes); err != nil {
			return err
		}
	} else {
		selected := streams
		if len(opts.streams) > 0 {
			selected = nil
			for _, id := range opts.streams {
				ss, ok := byID[id]
				if !ok {
					return fmt.Errorf("%s: no stream %s in this store", st.Dir(), ingestSafe(id.String()))
				}
				if !slices.ContainsFunc(selected, func(s segments.StoreStream) bool { return s.Desc.Stream == id }) {
					selected = append(selected, ss)
				}
			}
		}
		for _, ss := range selected {
			h, ok, err := trimHorizon(st, ss, opts.before, bound)
			if err != nil {
				return err
			}
			if !ok {
				fmt.Fprintf(stderr, "ds: %s: no datastream.clock records: no time to trim by; left alone\n", ingestSafe(ss.Desc.Stream.String()))
				continue
			}
			rep, err := st.PlanTrim(ss.Desc.Stream, h)
			if err != nil {
				return err
			}
			plan = append(plan, rep)
		}
	}
	if opts.respect {
		if err := checkConsumers(st, plan, byID); err != nil {
			return err
		}
	}
	for _, p := range plan {
		rep := p
		if !opts.dryRun {
			if rep, err = st.Trim(p.Stream, p.Before); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%s: %s trimmed (below position %d), %s deleted\n", ingestSafe(rep.Stream.String()), plural(rep.Frames, "frame"), rep.Before, plural(uint64(rep.Files), "file"))
		} else {
			fmt.Fprintf(stdout, "%s: %s would be trimmed (below position %d), %s would be deleted\n", ingestSafe(rep.Stream.String()), plural(rep.Frames, "frame"), rep.Before, plural(uint64(rep.Files), "file"))
		}
	}
	return nil
}

// checkConsumers refuses a plan that trims past a consumer's saved cursor:
// a consumer needs the positions after its cursor (all of a stream it has
// not read).
func checkConsumers(st *segments.Store, plan []segments.TrimReport, byID map[frames.StreamID]segments.StoreStream) error {
	names, err := st.Consumers()
	if err != nil {
		return err
	}
	var refusals []string
	for _, p := range plan {
		if p.Before <= byID[p.Stream].Before {
			continue // nothing new trimmed
		}
		for _, name := range names {
			cur, _, err := st.Consumer(name)
			if err != nil {
				return err
			}
			pos, read := cur[p.Stream]
			switch {
			case !read:
				refusals = append(refusals, fmt.Sprintf("%s: trimming below position %d would pass consumer %q, which has not read this stream", ingestSafe(p.Stream.String()), p.Before, name))
			case p.Before > pos+1:
				refusals = append(refusals, fmt.Sprintf("%s: trimming below position %d would pass consumer %q, whose saved cursor is %d (it still needs %d on)", ingestSafe(p.Stream.String()), p.Before, name, pos, pos+1))
			}
		}
	}
	if len(refusals) > 0 {
		return errors.New(strings.Join(refusals, "\nds: ") + "\nds: --respect-consumers: nothing trimmed")
	}
	return nil
}

// trimHorizon returns the horizon that --before asks of stream ss: the
// position given, or for a time the position of the first
// datastream.clock record at or after it (one past the last frame when
// every record is before it). ok is false for a time and a stream without
// clock records.
func trimHorizon(st *segments.Store, ss segments.StoreStream, before string, bound *views.TimeBound) (frames.Position, bool, error) {
	if bound == nil {
		p, err := strconv.ParseUint(before, 10, 64)
		if err != nil {
			return 0, false, usagef("--before %q: a position must be below 2^64", before)
		}
		return frames.Position(p), true, nil
	}
	var clock frames.ChannelID
	for _, ch := range ss.Channels {
		if ch.Name == frames.ClockChannel {
			clock = ch.ID
		}
	}
	if clock == 0 {
		return 0, false, nil
	}
	rc, err := st.OpenStream(ss.Desc.Stream)
	if err != nil {
		return 0, false, err
	}
	defer rc.Close()
	type reading struct {
		pos    frames.Position
		unixNS int64
	}
	var readings []reading
	var last frames.Position
	r := segments.NewReader(rc, segments.ReaderOptions{SkipSummaries: true})
	var e segments.Entry
	for {
		err := r.NextView(&e)
		if err == io.EOF {
			break
		}
		var ce *segments.CorruptError
		if errors.As(err, &ce) {
			continue // a damaged chunk: what reads is used
		}
		if err != nil {
			return 0, false, fmt.Errorf("%s: %s: %w", st.Dir(), ingestSafe(ss.Desc.Stream.String()), err)
		}
		if e.Kind != segments.EntryFrame {
			continue
		}
		last = max(last, e.Frame.Position)
		if e.Frame.Channel != clock {
			continue
		}
		var rec frames.ClockRecord
		if json.Unmarshal(e.Frame.Payload, &rec) == nil && rec.UnixNS != 0 {
			readings = append(readings, reading{e.Frame.Position, rec.UnixNS})
		}
	}
	if len(readings) == 0 {
		return 0, false, nil
	}
	slices.SortFunc(readings, func(a, b reading) int { return cmp.Compare(a.pos, b.pos) })
	t := bound.UnixNS
	if bound.FromStart {
		t = readings[0].unixNS + bound.Offset.Nanoseconds()
	}
	for _, rd := range readings {
		if rd.unixNS >= t {
			return rd.pos, true, nil
		}
	}
	if last == math.MaxUint64 {
		return last, true, nil // the horizon cannot pass position 2^64−1
	}
	return last + 1, true, nil
}

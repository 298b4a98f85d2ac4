package segments

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// TrimBefore says which streams a trim by horizon plans ([Store.PlanTrimBefore],
// ds trim --before) and where each one's horizon goes.
type TrimBefore struct {
	// Streams, if not empty, are the streams trimmed (each once, in the
	// order given); empty means every stream of the store.
	Streams []frames.StreamID
	// Position is the horizon when Time is nil: positions below it are
	// trimmed.
	Position frames.Position
	// Time, if not nil, trims each stream's frames whose time is before
	// it instead; see [TrimTime].
	Time *TrimTime
}

// TrimTime is a time to trim before, in a stream's own clock: a frame's
// time is its stream's latest datastream.clock reading before it, so the
// horizon is the position of the stream's first clock record at or after
// the time (one past its last frame when every record is before it).
type TrimTime struct {
	// UnixNS is the time, in nanoseconds since the Unix epoch, unless
	// FromStart.
	UnixNS int64
	// FromStart makes the time Offset after the stream's first clock
	// reading (ds trim --before +1h).
	FromStart bool
	Offset    time.Duration
}

// TrimPlan is what [Store.PlanTrimBefore] or [Store.PlanTrimBytes] would
// do: a report per stream it would trim (in the order of
// TrimBefore.Streams, or of [Store.Streams]), and, for a TrimTime, the
// streams left alone because they hold no datastream.clock record to trim
// by.
type TrimPlan struct {
	Reports []TrimReport
	Untimed []frames.StreamID
	// Bytes, of PlanTrimBytes, is what the store's chunk files take once
	// the plan is carried out: above the budget when the newest chunks of
	// live streams, which are never deleted, take more.
	Bytes int64
}

// noStreamError is a stream that a trim names and the store does not
// hold.
type noStreamError struct {
	dir string
	id  frames.StreamID
}

func (e *noStreamError) Error() string {
	return fmt.Sprintf("%s: no stream %s in this store", e.dir, e.id)
}

func (e *noStreamError) Unwrap() error { return ErrNoStream }

// PlanTrimBefore plans the trim of b's streams to b's horizon with
// [Store.PlanTrim], and does nothing. A stream in b.Streams that the store
// does not hold is an error wrapping [ErrNoStream] ("DIR: no stream
// NODE#LIFE in this store"). For a time, each stream's chunks are read
// for their clock records (a damaged chunk gives what reads of it). On an
// error the plan so far is returned with it. It does not take the lock.
func (s *Store) PlanTrimBefore(b TrimBefore) (TrimPlan, error) {
	var plan TrimPlan
	streams, err := s.Streams()
	if err != nil {
		return plan, err
	}
	selected := streams
	if len(b.Streams) > 0 {
		selected = nil
		for _, id := range b.Streams {
			k := slices.IndexFunc(streams, func(ss StoreStream) bool { return ss.Desc.Stream == id })
			if k < 0 {
				return plan, &noStreamError{dir: s.dir, id: id}
			}
			if !slices.ContainsFunc(selected, func(ss StoreStream) bool { return ss.Desc.Stream == id }) {
				selected = append(selected, streams[k])
			}
		}
	}
	for _, ss := range selected {
		h, ok := b.Position, true
		if b.Time != nil {
			if h, ok, err = s.timeHorizon(ss, *b.Time); err != nil {
				return plan, err
			}
		}
		if !ok {
			plan.Untimed = append(plan.Untimed, ss.Desc.Stream)
			continue
		}
		rep, err := s.PlanTrim(ss.Desc.Stream, h)
		if err != nil {
			return plan, err
		}
		plan.Reports = append(plan.Reports, rep)
	}
	return plan, nil
}

// timeHorizon returns the horizon of stream ss for time t (see
// [TrimTime]); ok is false for a stream without clock records.
func (s *Store) timeHorizon(ss StoreStream, t TrimTime) (frames.Position, bool, error) {
	channels, err := s.Channels(ss.Desc.Stream)
	if err != nil {
		return 0, false, err
	}
	var clock frames.ChannelID
	for _, ch := range channels {
		if ch.Name == frames.ClockChannel {
			clock = ch.ID
		}
	}
	if clock == 0 {
		return 0, false, nil
	}
	rc, err := s.OpenStream(ss.Desc.Stream)
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
	r := NewReader(rc, ReaderOptions{SkipSummaries: true})
	var e Entry
	for {
		err := r.NextView(&e)
		if err == io.EOF {
			break
		}
		var ce *CorruptError
		if errors.As(err, &ce) {
			continue // a damaged chunk: what reads is used
		}
		if err != nil {
			return 0, false, fmt.Errorf("%s: %s: %w", s.dir, ss.Desc.Stream, err)
		}
		if e.Kind != EntryFrame {
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
	at := t.UnixNS
	if t.FromStart {
		at = readings[0].unixNS + t.Offset.Nanoseconds()
	}
	for _, rd := range readings {
		if rd.unixNS >= at {
			return rd.pos, true, nil
		}
	}
	if last == math.MaxUint64 {
		return last, true, nil // the horizon cannot pass position 2^64−1
	}
	return last + 1, true, nil
}

// PassedConsumer is a named consumer of the store (a saved cursor,
// [Store.SaveConsumer]) that a planned trim would pass: the consumer
// still needs the positions after its cursor, all of a stream it has not
// read.
type PassedConsumer struct {
	Stream   frames.StreamID
	Before   frames.Position // the horizon planned
	Consumer string
	Read     bool            // the consumer has a cursor for the stream
	Cursor   frames.Position // its saved cursor, when Read
}

// String says what the trim would do: "n#1: trimming below position 5
// would pass consumer "c", whose saved cursor is 2 (it still needs 3 on)".
func (p PassedConsumer) String() string {
	if !p.Read {
		return fmt.Sprintf("%s: trimming below position %d would pass consumer %q, which has not read this stream", p.Stream, p.Before, p.Consumer)
	}
	return fmt.Sprintf("%s: trimming below position %d would pass consumer %q, whose saved cursor is %d (it still needs %d on)", p.Stream, p.Before, p.Consumer, p.Cursor, p.Cursor+1)
}

// PassedConsumers returns the consumers that plan (from [Store.PlanTrim],
// [Store.PlanTrimBefore] or [Store.PlanTrimBytes]) would pass, in plan
// order and, per stream, in [Store.Consumers] order. A report that raises
// no horizon passes none. It reads the consumers' cursors and changes
// nothing.
func (s *Store) PassedConsumers(plan []TrimReport) ([]PassedConsumer, error) {
	names, err := s.Consumers()
	if err != nil {
		return nil, err
	}
	streams, err := s.Streams()
	if err != nil {
		return nil, err
	}
	horizon := make(map[frames.StreamID]frames.Position, len(streams))
	for _, ss := range streams {
		horizon[ss.Desc.Stream] = ss.Before
	}
	var passed []PassedConsumer
	for _, p := range plan {
		if p.Before <= horizon[p.Stream] {
			continue // nothing new trimmed
		}
		for _, name := range names {
			cur, _, err := s.Consumer(name)
			if err != nil {
				return nil, err
			}
			pos, read := cur[p.Stream]
			if !read || p.Before > pos+1 {
				passed = append(passed, PassedConsumer{Stream: p.Stream, Before: p.Before, Consumer: name, Read: read, Cursor: pos})
			}
		}
	}
	return passed, nil
}

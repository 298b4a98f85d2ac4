package views

import (
	"bytes"
	"fmt"
	"strconv"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// This file holds how a [Printer] places frames in time: a frame's time
// is its stream's latest datastream.clock reading at or before it (see
// the package doc), shown in the text format's time column (--time) and
// as the "time" of --json objects.

// TimeMode selects the time column of the text format. A line's time is
// its stream's latest datastream.clock reading at or before the frame the
// line started in (see the package doc); a line before any reading shows
// "-".
type TimeMode uint8

const (
	// TimeNone shows no time column.
	TimeNone TimeMode = iota
	// TimeWall shows the wall clock, "2006-01-02 15:04:05.000000" in the
	// local time zone, or RFC 3339 with a Z in UTC (LogOptions.UTC).
	TimeWall
	// TimeSinceStart shows seconds since the start of the inputs (their
	// first clock reading the printer saw), "+12.345678", measured as
	// TimeDelta is across a step of the wall clock: by the monotonic
	// clock (the line's steady time).
	TimeSinceStart
	// TimeDelta shows seconds since the previous line printed, to find
	// stalls, "+0.000123", measured across a step of the wall clock by
	// the monotonic clock (see ClockStep).
	TimeDelta
	// TimeUnix shows Unix seconds with nanoseconds, "1764584035.123456789".
	TimeUnix
)

// ParseTimeMode parses a --time value: wall (or an empty value), utc,
// since-start, delta, unix.
func ParseTimeMode(s string) (mode TimeMode, utc bool, err error) {
	switch s {
	case "", "wall", "local":
		return TimeWall, false, nil
	case "utc":
		return TimeWall, true, nil
	case "since-start", "start":
		return TimeSinceStart, false, nil
	case "delta":
		return TimeDelta, false, nil
	case "unix":
		return TimeUnix, false, nil
	case "none":
		return TimeNone, false, nil
	}
	return 0, false, fmt.Errorf("--time=%s: want wall, utc, since-start, delta, unix or none", s)
}

// timebase is the printer's clock: the start of the inputs, the time of
// the line being rendered and of the previous one printed, and the time
// column those make.
//
// A line's steady time is its time less the steps its stream's wall clock
// made before it (see ClockStep): --time=delta and --time=since-start
// measure by it, so that a step of the wall clock, which ds log shows in
// place, does not make a stall, a negative delta or a jump of the time
// since the start.
type timebase struct {
	column     TimeMode // the text format's time column (TimeNone in the other formats)
	utc        bool
	startNS    int64 // the first clock reading seen: the start of the inputs
	lineNS     int64 // the time of the line being rendered (0: before any reading)
	lineSteady int64 // its steady time
	prevNS     int64 // the time of the previous line printed (TimeDelta)
	prevSteady int64 // its steady time
}

// streamTime is one stream's clock: its datastream.clock channel and
// latest reading, the steps of its wall clock, and that reading as --json
// shows it.
type streamTime struct {
	id       frames.ChannelID // datastream.clock, 0 if undeclared
	ns       int64            // latest clock reading, 0 if none yet
	steady   int64            // ns less corrNS
	corrNS   int64            // the sum of the steps of the wall clock so far
	steps    clockStepper
	step     ClockStep // the step the latest reading showed, if stepped
	stepped  bool
	timeNS   int64  // the reading timeJSON shows
	timeJSON []byte // `,"time":"…"` of timeNS
}

// read takes in the datastream.clock record at pos of clock c; it reports
// whether the record held a reading. A step of the wall clock since the
// previous reading is left in c.step, with c.stepped set.
func (tb *timebase) read(c *streamTime, pos frames.Position, payload []byte) bool {
	r, both := decodeClockReading(pos, payload)
	if r.unix <= 0 {
		return false // not a reading (or not decodable)
	}
	if both {
		if s, ok := c.steps.next(r); ok {
			c.step, c.stepped = s, true
			c.corrNS += s.StepNS
		}
	}
	c.ns, c.steady = r.unix, r.unix-c.corrNS
	if tb.startNS == 0 {
		tb.startNS = r.unix
	}
	return true
}

// at makes the time of the line being rendered clock c's latest reading.
func (tb *timebase) at(c *streamTime) { tb.lineNS, tb.lineSteady = c.ns, c.steady }

// printed notes that the line being rendered was printed.
func (tb *timebase) printed() { tb.prevNS, tb.prevSteady = tb.lineNS, tb.lineSteady }

// appendColumn appends the time column of the line being rendered (its
// time is tb.lineNS) and two spaces; nothing when there is no column.
func (tb *timebase) appendColumn(b []byte) []byte {
	if tb.column == TimeNone {
		return b
	}
	ns := tb.lineNS
	n := len(b)
	switch {
	case ns == 0:
		b = append(b, '-')
	case tb.column == TimeWall:
		t := time.Unix(0, ns)
		if tb.utc {
			b = t.UTC().AppendFormat(b, "2006-01-02T15:04:05.000000Z")
		} else {
			b = t.Local().AppendFormat(b, "2006-01-02 15:04:05.000000")
		}
	case tb.column == TimeUnix:
		b = strconv.AppendInt(b, ns/1e9, 10)
		b = append(b, '.')
		b = fmt.Appendf(b, "%09d", ns%1e9)
	case tb.column == TimeSinceStart:
		// By the steady time: a step of the wall clock since the start
		// is no jump of the column (the start is a stream's first
		// reading, whose steady time is its wall time).
		b = appendSeconds(b, tb.lineSteady-tb.startNS)
	case tb.column == TimeDelta:
		if tb.prevNS == 0 {
			b = appendSeconds(b, 0)
		} else {
			b = appendSeconds(b, tb.lineSteady-tb.prevSteady)
		}
	}
	w := timeWidth(tb.column)
	if pad := w - (len(b) - n); pad > 0 && tb.column == TimeWall {
		b = appendPad(b, pad)
	} else if pad > 0 {
		// right-align: move what was written
		b = append(b, make([]byte, pad)...)
		copy(b[n+pad:], b[n:len(b)-pad])
		for i := n; i < n+pad; i++ {
			b[i] = ' '
		}
	}
	return append(b, "  "...)
}

// timeWidth is the width of the time column of mode m.
func timeWidth(m TimeMode) int {
	switch m {
	case TimeWall:
		return 26
	case TimeUnix:
		return 20
	}
	return 11
}

// appendSeconds appends d nanoseconds as signed seconds with microseconds,
// "+12.345678".
func appendSeconds(b []byte, d int64) []byte {
	sign := byte('+')
	if d < 0 {
		sign, d = '-', -d
	}
	b = append(b, sign)
	b = strconv.AppendInt(b, d/1e9, 10)
	return fmt.Appendf(b, ".%06d", d%1e9/1e3)
}

// appendJSON appends `,"time":"…"` for the clock reading ns (nothing for
// 0), formatting it once per reading: the lines and frames of a drain
// tick share it.
func (c *streamTime) appendJSON(b []byte, ns int64) []byte {
	if ns == 0 {
		return b
	}
	if c.timeNS != ns || len(c.timeJSON) == 0 {
		t := append(c.timeJSON[:0], `,"time":"`...)
		t = time.Unix(0, ns).UTC().AppendFormat(t, time.RFC3339Nano)
		c.timeJSON, c.timeNS = append(t, '"'), ns
	}
	return append(b, c.timeJSON...)
}

// decodeClock returns the UnixNS of a datastream.clock record, and whether
// it decodes (see decodeClockPair).
func decodeClock(payload []byte) (int64, bool) {
	unix, _, ok := decodeClockPair(payload)
	return unix, ok
}

// decodeClockPair returns the UnixNS and MonoNS of a datastream.clock
// record (MonoNS -1 when the record has none), and whether it decodes.
// The form the writer writes, {"unix_ns":N,"mono_ns":M} with integers, is
// read here; any other goes through frames.DecodeRecord, so that the
// result is always DecodeRecord's.
func decodeClockPair(payload []byte) (unix, mono int64, ok bool) {
	const head, mid = `{"unix_ns":`, `,"mono_ns":`
	rest, ok := bytes.CutPrefix(payload, []byte(head))
	if ok {
		unix, rest, ok = cutJSONInt(rest)
	}
	if ok {
		rest, ok = bytes.CutPrefix(rest, []byte(mid))
	}
	if ok {
		mono, rest, ok = cutJSONInt(rest)
	}
	if ok && len(rest) == 1 && rest[0] == '}' {
		return unix, mono, true
	}
	c, err := frames.DecodeRecord(payload, frames.ClockRecord{MonoNS: -1})
	return c.UnixNS, c.MonoNS, err == nil
}

// cutJSONInt reads a JSON integer (no fraction or exponent) that fits an
// int64 from the start of b and returns it and the rest of b.
func cutJSONInt(b []byte) (int64, []byte, bool) {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	j := i
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	if j == i || b[i] == '0' && j > i+1 || j-i > 19 {
		return 0, nil, false
	}
	n, err := strconv.ParseInt(string(b[:j]), 10, 64)
	return n, b[j:], err == nil
}

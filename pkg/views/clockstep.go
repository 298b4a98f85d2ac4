package views

import (
	"fmt"
	"slices"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// This file holds how the views find steps of a stream's wall clock
// (issue 22 item 3) in its datastream.clock records, which pair a
// wall-clock reading (unix_ns) with a monotonic one (mono_ns) taken at
// the same moment. Between two readings both clocks move alike (NTP slews
// the two together), so the difference of the two moves is zero but for
// the jitter of reading them; a step of the wall clock (settimeofday, an
// NTP step, a leap second not smeared, a machine that slept: the
// monotonic clock stops while it sleeps) shows as a difference larger
// than ClockStepTolerance. ds log shows it in place, ds gaps lists it,
// ds info counts it, and ds log --time=delta measures across it by the
// monotonic clock.

// ClockStepTolerance is how far the wall clock may move beyond the
// monotonic clock between two datastream.clock readings of a stream
// before the views call it a step: above the jitter of reading two
// clocks, below the smallest step ntpd makes (128 ms).
const ClockStepTolerance = 100 * time.Millisecond

// ClockStep is a step of a stream's wall clock: between the
// datastream.clock readings at positions After and Position, the wall
// clock moved StepNS nanoseconds more than the monotonic clock did
// (negative: it went back), by more than [ClockStepTolerance].
// FromUnixNS and ToUnixNS are the two wall-clock readings (ns since the
// Unix epoch), ElapsedNS how far the monotonic clock moved between them.
type ClockStep struct {
	Position   frames.Position `json:"position"`
	After      frames.Position `json:"after"`
	StepNS     int64           `json:"step_ns"`
	ElapsedNS  int64           `json:"elapsed_ns"`
	FromUnixNS int64           `json:"from_unix_ns"`
	ToUnixNS   int64           `json:"to_unix_ns"`
}

// String says what the step was, as ds log, ds gaps and ds info show it:
// "wall clock stepped back 5s at position 12 (it moved -4.9s while the
// monotonic clock moved 100ms)".
func (c ClockStep) String() string {
	dir, d := "forward", time.Duration(c.StepNS)
	if d < 0 {
		dir, d = "back", -d
	}
	return fmt.Sprintf("wall clock stepped %s %v at position %d (it moved %v while the monotonic clock moved %v)",
		dir, d, c.Position, time.Duration(c.ToUnixNS-c.FromUnixNS), time.Duration(c.ElapsedNS))
}

// clockReading is one datastream.clock record: its position, its wall
// clock and its monotonic clock (ns).
type clockReading struct {
	pos        frames.Position
	unix, mono int64
}

// decodeClockReading returns the reading of a datastream.clock record at
// pos, and whether it has both clocks (a unix_ns above 0 and a mono_ns
// of 0 or more): records without mono_ns show no step.
func decodeClockReading(pos frames.Position, payload []byte) (clockReading, bool) {
	unix, mono, ok := decodeClockPair(payload)
	return clockReading{pos: pos, unix: unix, mono: mono}, ok && unix > 0 && mono >= 0
}

// clockStepBetween returns the step from reading a to reading b (a
// before b), and whether they are comparable: the monotonic clock moved
// forward between them (one that went back is another clock; one that
// stood still is none, a producer that writes a constant mono_ns). It
// does not check the tolerance.
func clockStepBetween(a, b clockReading) (ClockStep, bool) {
	elapsed := b.mono - a.mono
	if elapsed <= 0 {
		return ClockStep{}, false
	}
	return ClockStep{Position: b.pos, After: a.pos, StepNS: (b.unix - a.unix) - elapsed, ElapsedNS: elapsed, FromUnixNS: a.unix, ToUnixNS: b.unix}, true
}

// isStep reports whether s is beyond the tolerance.
func (c ClockStep) isStep() bool {
	return c.StepNS > int64(ClockStepTolerance) || c.StepNS < -int64(ClockStepTolerance)
}

// clockStepper finds the steps of one stream's clock from its readings
// fed in position order (ds log, ds gaps): each against the one before.
type clockStepper struct {
	prev clockReading
	have bool
}

// next takes the stream's next clock reading r and returns the step since
// the previous reading, if there was one.
func (c *clockStepper) next(r clockReading) (ClockStep, bool) {
	prev, had := c.prev, c.have
	c.prev, c.have = r, true
	if !had {
		return ClockStep{}, false
	}
	s, ok := clockStepBetween(prev, r)
	return s, ok && s.isStep()
}

// clockRun is a run of a stream's clock readings, by position, with no
// step between consecutive ones: its first and last.
type clockRun struct{ first, last clockReading }

// clockRuns finds the steps of one stream's clock from readings fed in
// any order (ds info reads a capture's segments from its end, and
// summaries give a segment's first and last reading only): it keeps the
// readings as runs without a step, sorted by position, and the steps are
// between consecutive runs. Memory: one run per step (and per stretch of readings not
// yet joined), at most budget runs over the Info.
type clockRuns struct {
	runs []clockRun
}

// add takes a reading; it reports false, having taken nothing, when it
// would need a new run and *budget is 0 (decremented otherwise).
func (c *clockRuns) add(r clockReading, budget *int) bool {
	i, _ := slices.BinarySearchFunc(c.runs, r.pos, func(run clockRun, p frames.Position) int {
		switch {
		case run.first.pos < p:
			return -1
		case run.first.pos > p:
			return 1
		}
		return 0
	})
	joins := func(a, b clockReading) bool {
		s, ok := clockStepBetween(a, b)
		return ok && !s.isStep()
	}
	if i < len(c.runs) && c.runs[i].first.pos == r.pos || i > 0 && r.pos == c.runs[i-1].last.pos {
		return true // a reading taken in already
	}
	if i > 0 && r.pos < c.runs[i-1].last.pos {
		// Inside a run: its readings are alike, so r is either like
		// them, or the run is split around it, its ends kept (the
		// readings next to r are not known: a step is then placed
		// between r and the run's ends).
		run := c.runs[i-1]
		if joins(run.first, r) {
			return true
		}
		if *budget < 2 {
			return false
		}
		*budget -= 2
		c.runs[i-1].last = run.first
		c.runs = slices.Insert(c.runs, i, clockRun{r, r}, clockRun{run.last, run.last})
		return true
	}
	prev := i > 0 && joins(c.runs[i-1].last, r)
	next := i < len(c.runs) && joins(r, c.runs[i].first)
	switch {
	case prev && next:
		c.runs[i-1].last = c.runs[i].last
		c.runs = slices.Delete(c.runs, i, i+1)
		*budget++
	case prev:
		c.runs[i-1].last = r
	case next:
		c.runs[i].first = r
	default:
		if *budget <= 0 {
			return false
		}
		*budget--
		c.runs = slices.Insert(c.runs, i, clockRun{r, r})
	}
	return true
}

// steps calls fn with each step between consecutive runs, in position
// order.
func (c *clockRuns) steps(fn func(ClockStep)) {
	for i := 1; i < len(c.runs); i++ {
		if s, ok := clockStepBetween(c.runs[i-1].last, c.runs[i].first); ok && s.isStep() {
			fn(s)
		}
	}
}

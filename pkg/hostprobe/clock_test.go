package hostprobe

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a simulated clock for a Sampler's schedule: its time moves
// only when Advance is called (an overrunning sample) or when Run waits
// with nothing to receive (Idle: the clock jumps to its next deadline).
// A test so sees the schedule it would on an idle machine, whatever the
// load. Its tickers and timers keep at most one tick waiting, and drop
// the others, as time.Ticker does for a slow receiver.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	// beforeAdvance, if set, is called by Idle before it moves the time
	// (with no lock held): a test waits there for what a real interval
	// would have left time for.
	beforeAdvance func()
}

type fakeTimer struct {
	c       chan time.Time
	when    time.Time
	period  time.Duration // 0: a timer, which fires once
	stopped bool
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) add(d, period time.Duration) (<-chan time.Time, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: make(chan time.Time, 1), when: c.now.Add(d), period: period}
	c.timers = append(c.timers, t)
	return t.c, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		t.stopped = true
	}
}

func (c *fakeClock) NewTicker(d time.Duration) (<-chan time.Time, func()) { return c.add(d, d) }
func (c *fakeClock) NewTimer(d time.Duration) (<-chan time.Time, func())  { return c.add(d, 0) }

// Advance moves the time d on, firing what falls due on the way.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.advanceTo(c.now.Add(d))
}

// advanceTo moves the time to target; c.mu is held.
func (c *fakeClock) advanceTo(target time.Time) {
	for {
		var next *fakeTimer
		for _, t := range c.timers {
			if !t.stopped && !t.when.After(target) && (next == nil || t.when.Before(next.when)) {
				next = t
			}
		}
		if next == nil {
			break
		}
		c.now = next.when
		select {
		case next.c <- c.now:
		default: // one is waiting already: this one is dropped
		}
		if next.period > 0 {
			next.when = next.when.Add(next.period)
		} else {
			next.stopped = true
		}
	}
	c.now = target
}

// Idle moves the time to the next deadline, unless a tick or a timer's
// fire is waiting to be received.
func (c *fakeClock) Idle() {
	if c.beforeAdvance != nil {
		c.beforeAdvance()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var next *fakeTimer
	for _, t := range c.timers {
		if len(t.c) > 0 {
			return
		}
		if !t.stopped && (next == nil || t.when.Before(next.when)) {
			next = t
		}
	}
	if next != nil {
		c.advanceTo(next.when)
	}
}

// waitGPUParked waits (up to 20 s) until the sampler's GPU goroutine
// waits for a tick (it is not running a sample, nor yet to start), or is
// gone: what an interval longer than the sample gives on a real clock.
func waitGPUParked(t *testing.T) {
	t.Helper()
	const fn = "github.com/ds-telemetry/ds/pkg/hostprobe.(*Sampler).runGPU("
	// The one goroutine Run starts; one not yet running shows a wrapper.
	const created = "created by github.com/ds-telemetry/ds/pkg/hostprobe.(*Sampler).Run in goroutine"
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
		n := runtime.Stack(buf, true)
		found, parked := false, false
		for _, g := range strings.Split(string(buf[:n]), "\n\n") {
			lines := strings.Split(g, "\n")
			if !strings.Contains(g, created) || len(lines) < 2 {
				continue
			}
			found = true
			// Parked on its receive: runGPU is the top frame.
			parked = strings.Contains(lines[0], "[chan receive") && strings.HasPrefix(lines[1], fn)
		}
		if !found || parked {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the GPU goroutine did not come to wait for a tick within 20 s:\n%s", buf[:n])
		}
	}
}

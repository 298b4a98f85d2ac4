package play

import (
	"bytes"
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const s = int64(time.Second)

func TestWait(t *testing.T) {
	for _, tc := range []struct {
		prev, at int64
		speed    float64
		idle     time.Duration
		want     time.Duration
	}{
		{0, 5 * s, 1, 0, 0},                   // the first frame
		{5 * s, 7 * s, 1, 0, 2 * time.Second}, // recorded pace
		{5 * s, 7 * s, 2, 0, time.Second},     // twice as fast
		{5 * s, 7 * s, 0.5, 0, 4 * time.Second},
		{5 * s, 65 * s, 1, 3 * time.Second, 3 * time.Second}, // idle cap
		{5 * s, 65 * s, 10, 3 * time.Second, 3 * time.Second},
		{5 * s, 6 * s, 1, 3 * time.Second, time.Second},
		{5 * s, 7 * s, 0, 0, 0}, // -s 0: no wait
		{5 * s, 7 * s, math.NaN(), 0, 0},
		{5 * s, 7 * s, 1e-300, 0, maxWait}, // no overflow
		{5 * s, 7 * s, 1e-300, 3 * time.Second, 3 * time.Second},
		{5 * s, 0, 1, 0, 0},     // a frame without a time
		{7 * s, 5 * s, 1, 0, 0}, // one before the previous
	} {
		if got := Wait(tc.prev, tc.at, tc.speed, tc.idle); got != tc.want {
			t.Errorf("Wait(%d, %d, %v, %v) = %v, want %v", tc.prev, tc.at, tc.speed, tc.idle, got, tc.want)
		}
	}
}

// fakeClock records the waits asked for; its timers fire at once.
type fakeClock struct {
	now   time.Time
	waits []time.Duration
}

func (c *fakeClock) Now() time.Time { return c.now }
func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}

// A player asks its clock for the waits between frames, divided by the
// speed and capped by the idle limit, and writes the bytes as given; a
// frame before the previous one (another stream's) waits nothing, and
// the next waits from the latest time seen.
func TestPlayerPace(t *testing.T) {
	times := []int64{0, 10 * s, 10 * s, 11 * s, 71 * s, 70 * s, 72 * s}
	for _, tc := range []struct {
		name  string
		opts  Options
		waits []time.Duration
	}{
		{"recorded", Options{Speed: 1}, []time.Duration{time.Second, 60 * time.Second, time.Second}},
		{"speed 2, idle 5s", Options{Speed: 2, IdleLimit: 5 * time.Second}, []time.Duration{time.Second / 2, 5 * time.Second, time.Second / 2}},
		{"no wait", Options{Speed: 0}, nil},
	} {
		var out bytes.Buffer
		clock := &fakeClock{now: time.Unix(1, 0)}
		tc.opts.Clock = clock
		p := New(&out, tc.opts)
		var want []byte
		for i, at := range times {
			b := []byte{'a' + byte(i), '\n'}
			want = append(want, b...)
			if err := p.Frame(at, b); err != nil {
				t.Fatal(err)
			}
		}
		if out.String() != string(want) {
			t.Errorf("%s: wrote %q, want %q", tc.name, out.String(), want)
		}
		if diff := cmp.Diff(tc.waits, clock.waits); diff != "" {
			t.Errorf("%s: waits (-want +got):\n%s", tc.name, diff)
		}
	}
}

// heldClock hands each timer to the test, which fires it when it
// chooses: the keys the test sends meanwhile are the only thing that can
// happen.
type heldClock struct {
	mu     sync.Mutex // now is moved by the test, read by the player
	now    time.Time
	timers chan heldTimer
}

type heldTimer struct {
	d  time.Duration
	ch chan time.Time
}

func (c *heldClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// advance moves the clock d on and returns the new time.
func (c *heldClock) advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}
func (c *heldClock) After(d time.Duration) <-chan time.Time {
	t := heldTimer{d, make(chan time.Time, 1)}
	c.timers <- t
	return t.ch
}

// syncWriter hands each write to the test.
type syncWriter chan string

func (w syncWriter) Write(b []byte) (int, error) { w <- string(b); return len(b), nil }

// Space pauses and resumes (the wait goes on with what was left of it),
// '.' writes the next frame while paused, q quits.
func TestPlayerKeys(t *testing.T) {
	clock := &heldClock{now: time.Unix(100, 0), timers: make(chan heldTimer)}
	keys := make(chan byte)
	out := make(syncWriter)
	done := make(chan error, 1)
	go func() {
		p := New(out, Options{Speed: 1, Clock: clock, Keys: keys})
		for i, at := range []int64{1 * s, 3 * s, 6 * s, 10 * s, 15 * s} {
			if err := p.Frame(at, []byte{'a' + byte(i)}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	expectWrite := func(want string) {
		t.Helper()
		if got := <-out; got != want {
			t.Fatalf("wrote %q, want %q", got, want)
		}
	}
	expectTimer := func(want time.Duration) heldTimer {
		t.Helper()
		tm := <-clock.timers
		if tm.d != want {
			t.Fatalf("timer of %v, want %v", tm.d, want)
		}
		return tm
	}
	expectWrite("a")             // the first frame: no wait
	expectTimer(2 * time.Second) // never fired: paused
	clock.advance(500 * time.Millisecond)
	keys <- ' ' // pause, 1.5 s left
	// An ignored key is taken only once the pause is done with, its
	// clock reading included: the hour must not pass before that (it
	// did, under the race detector: the player resumed with no wait
	// left, and the test hung waiting for its timer).
	keys <- 'x'
	clock.advance(time.Hour)
	keys <- ' ' // resume: the 1.5 s left (the schedule shifted by the hour)
	tm := expectTimer(1500 * time.Millisecond)
	clock.advance(1500 * time.Millisecond)
	tm.ch <- clock.Now()
	expectWrite("b")
	expectTimer(3 * time.Second) // never fired: paused, then stepped
	keys <- ' '
	keys <- '.' // step: c now
	expectWrite("c")
	keys <- '.' // still paused: d now
	expectWrite("d")
	keys <- 'x' // ignored
	clock.advance(time.Minute)
	keys <- ' ' // resume: e is due 5 s after d was stepped to, paused a minute
	expectTimer(5 * time.Second)
	keys <- 'q'
	if err := <-done; !errors.Is(err, ErrQuit) {
		t.Fatalf("Frame = %v, want ErrQuit", err)
	}
}

// Done ends a wait under way.
func TestPlayerDone(t *testing.T) {
	clock := &heldClock{now: time.Unix(100, 0), timers: make(chan heldTimer, 1)}
	done := make(chan struct{})
	var out bytes.Buffer
	p := New(&out, Options{Speed: 1, Clock: clock, Done: done})
	if err := p.Frame(1*s, []byte("a")); err != nil {
		t.Fatal(err)
	}
	go func() { <-clock.timers; close(done) }()
	if err := p.Frame(5*s, []byte("b")); !errors.Is(err, ErrQuit) {
		t.Fatalf("Frame = %v, want ErrQuit", err)
	}
	if err := p.Frame(6*s, []byte("c")); !errors.Is(err, ErrQuit) || out.String() != "a" {
		t.Fatalf("Frame = %v, wrote %q", err, out.String())
	}
}

// lateClock is a fakeClock whose time also moves between the frames, by
// what the test says: the time a live capture's frames take to arrive.
type lateClock struct{ fakeClock }

// Frames are scheduled against the replay's start: a frame that arrives
// late waits only what is left until it is due, or nothing when it is
// already due, and an early one waits the rest (issue 24 item 4: a 3 s
// gap read live replayed 6.4 s apart).
func TestPlayerSchedule(t *testing.T) {
	clock := &lateClock{fakeClock{now: time.Unix(1, 0)}}
	var out bytes.Buffer
	p := New(&out, Options{Speed: 1, IdleLimit: 10 * time.Second, Clock: clock})
	for _, f := range []struct {
		arrive time.Duration // how long the frame took to arrive, after the previous write
		at     int64
		want   []time.Duration // the waits asked for, in all, after it
	}{
		{0, 100 * s, nil},
		{3 * time.Second, 103 * s, nil},                                          // 3 s gap, arrived 3 s later: due now
		{time.Second, 105 * s, []time.Duration{time.Second}},                     // 2 s gap, 1 s to go
		{4 * time.Second, 106 * s, []time.Duration{time.Second}},                 // already 3 s late: at once
		{0, 206 * s, []time.Duration{time.Second, 7 * time.Second}},              // idle cap: 10 s after 106 s was due (3 s ago)
		{0, 0, []time.Duration{time.Second, 7 * time.Second}},                    // no time: at once
		{0, 207 * s, []time.Duration{time.Second, 7 * time.Second, time.Second}}, // back on schedule
		{0, 150 * s, []time.Duration{time.Second, 7 * time.Second, time.Second}}, // before the previous: at once
		{0, 208 * s, []time.Duration{time.Second, 7 * time.Second, time.Second, time.Second}},
	} {
		clock.now = clock.now.Add(f.arrive)
		if err := p.Frame(f.at, []byte("x")); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(f.want, clock.waits); diff != "" {
			t.Fatalf("frame at %d: waits (-want +got):\n%s", f.at/s, diff)
		}
	}
	if out.Len() != 9 {
		t.Errorf("wrote %q", out.String())
	}
}

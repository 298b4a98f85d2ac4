package play

import (
	"bytes"
	"errors"
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
	now    time.Time
	timers chan heldTimer
}

type heldTimer struct {
	d  time.Duration
	ch chan time.Time
}

func (c *heldClock) Now() time.Time { return c.now }
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
	clock.now = clock.now.Add(500 * time.Millisecond)
	keys <- ' ' // pause, 1.5 s left
	clock.now = clock.now.Add(time.Hour)
	keys <- ' ' // resume: the 1.5 s left
	expectTimer(1500 * time.Millisecond).ch <- clock.now
	expectWrite("b")
	expectTimer(3 * time.Second) // never fired: paused, then stepped
	keys <- ' '
	keys <- '.' // step: c now
	expectWrite("c")
	keys <- '.' // still paused: d now
	expectWrite("d")
	keys <- 'x' // ignored
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

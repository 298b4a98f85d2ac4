// Package play replays a capture's text channels at their recorded pace:
// the engine of ds play (see ds(1)). It knows nothing of captures: the
// caller hands it each frame's bytes with the frame's time
// ([Player.Frame]; ds play takes them from views.LogOptions.CatFrames, the
// bytes ds log --cat prints), and it writes each to its output when it is
// due: the replay's start plus the times between the frames so far, each
// divided by the speed and capped by the idle limit (asciinema's -s and
// -i). Keys, when
// it is given some, pause and resume (space), step to the next frame
// while paused (.), and quit (q, ctrl-c).
//
// Time is the caller's: a [Clock] gives the time and the timers, so tests
// inject a fake one and check the waits asked for, never the wall clock.
// Times are in ns since any fixed origin (ds play passes the steady time
// of views, which a step of the wall clock does not move); a frame whose
// time is 0 (before any clock reading) or before the previous frame's
// is written at once.
package play

import (
	"errors"
	"io"
	"time"
)

// Clock is what a [Player] waits by: the real one is [SystemClock].
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// After returns a channel that receives once d has passed.
	After(d time.Duration) <-chan time.Time
}

// SystemClock is the wall clock: time.Now and time.After.
type SystemClock struct{}

// Now implements Clock.
func (SystemClock) Now() time.Time { return time.Now() }

// After implements Clock.
func (SystemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Options configures a [Player].
type Options struct {
	// Speed divides every wait (2: twice as fast). 0 or less writes
	// everything at once (ds play -s 0, --no-wait).
	Speed float64
	// IdleLimit, if positive, caps every wait (after Speed), so that a
	// capture that sat idle for an hour replays in IdleLimit.
	IdleLimit time.Duration
	// Clock is what the player waits by; nil is SystemClock.
	Clock Clock
	// Keys, if not nil, delivers the keys typed (ds play reads them from
	// a terminal in raw mode): ' ' pauses and resumes, '.' writes the
	// next frame while paused, 'q' and ctrl-c (0x03) quit. It may be
	// closed (no more keys). Other keys are ignored.
	Keys <-chan byte
	// Done, if not nil, ends the replay once closed (an interrupt): the
	// wait under way ends, and Frame returns ErrQuit.
	Done <-chan struct{}
}

// ErrQuit is returned by [Player.Frame] once a quit key was typed: the
// caller stops handing frames.
var ErrQuit = errors.New("play: quit")

// Player writes frames to its output at their recorded pace. It is not
// safe for concurrent use.
//
// Each frame is scheduled against the replay's start, not against the
// previous write: its due time is the start plus the sum of the waits
// ([Wait]) between the frames so far, so that a frame that arrives late
// (a live capture read as it is written) is written at once when it is
// already due, and the waits do not add up with the time spent reading.
// A pause moves the whole schedule later by the time paused; a step while
// paused makes the frame written the new point the schedule runs from.
type Player struct {
	w        io.Writer
	opts     Options
	prevNS   int64         // the time of the latest frame (0: none yet)
	started  bool          // base is set: a frame was written
	base     time.Time     // when the schedule starts (shifted by pauses)
	offset   time.Duration // the due time of the latest frame, after base
	paused   bool
	pausedAt time.Time // when the pause began (or the last step in it)
	quit     bool
	err      error // sticky: a write error, or ErrQuit
}

// New returns a Player writing to w.
func New(w io.Writer, opts Options) *Player {
	if opts.Clock == nil {
		opts.Clock = SystemClock{}
	}
	return &Player{w: w, opts: opts}
}

// maxWait bounds one wait (and so the schedule's sum of them): 100 years,
// far below what a time.Duration holds, so that no speed or gap
// overflows it.
const maxWait = 100 * 365 * 24 * time.Hour

// Wait returns the wait before a frame at timeNS after one at prevNS:
// their difference divided by speed, capped by idle (if positive) and by
// 100 years; 0 for a speed of 0 or less (or NaN), a first frame (prevNS
// 0), a frame without a time (timeNS 0), or one before the previous.
func Wait(prevNS, timeNS int64, speed float64, idle time.Duration) time.Duration {
	if !(speed > 0) || prevNS == 0 || timeNS <= prevNS {
		return 0
	}
	f := float64(timeNS-prevNS) / speed
	d := maxWait
	if f < float64(maxWait) {
		d = time.Duration(f)
	}
	if idle > 0 && d > idle {
		d = idle
	}
	return d
}

// Frame waits until the frame at timeNS is due (see [Player] and
// [Wait]), handling the keys typed meanwhile, then writes b. It returns
// ErrQuit once a quit key was typed (b is then not written), or the
// output's error; either is returned again by every later call.
func (p *Player) Frame(timeNS int64, b []byte) error {
	if p.err != nil {
		return p.err
	}
	if d := Wait(p.prevNS, timeNS, p.opts.Speed, p.opts.IdleLimit); d > 0 {
		p.offset = min(p.offset+d, maxWait)
	}
	if timeNS > p.prevNS {
		p.prevNS = timeNS
	}
	if !p.started {
		p.started = true
		p.base = p.opts.Clock.Now().Add(-p.offset)
	}
	if err := p.wait(); err != nil {
		p.err = err
		return err
	}
	if _, err := p.w.Write(b); err != nil {
		p.err = err
		return err
	}
	return nil
}

// wait waits until the latest frame is due (base + offset), or longer
// while paused, handling keys; a step ('.') while paused ends it at once.
func (p *Player) wait() error {
	p.poll()
	if p.quit {
		return ErrQuit
	}
	clock := p.opts.Clock
	var timer <-chan time.Time
	if !p.paused {
		d := p.base.Add(p.offset).Sub(clock.Now())
		if d <= 0 {
			return nil
		}
		timer = clock.After(d)
	}
	keys := p.opts.Keys
	for {
		select {
		case <-p.opts.Done:
			p.quit = true
			return ErrQuit
		case <-timer:
			return nil
		case k, ok := <-keys:
			if !ok {
				keys, p.opts.Keys = nil, nil
				if p.paused {
					// No key can resume: go on from here.
					p.resume()
					return nil
				}
				continue
			}
			switch k {
			case 'q', 'Q', 0x03:
				p.quit = true
				return ErrQuit
			case ' ':
				if p.paused {
					p.resume()
					d := p.base.Add(p.offset).Sub(clock.Now())
					if d <= 0 {
						return nil
					}
					timer = clock.After(d)
				} else {
					p.pause()
					timer = nil
				}
			case '.':
				if p.paused {
					// The frame stepped to is written now: the
					// schedule runs from it, and the pause from now.
					p.pausedAt = clock.Now()
					p.base = p.pausedAt.Add(-p.offset)
					return nil
				}
			}
		}
	}
}

// pause starts a pause now.
func (p *Player) pause() {
	p.paused, p.pausedAt = true, p.opts.Clock.Now()
}

// resume ends the pause: the schedule moves later by the time paused.
func (p *Player) resume() {
	p.paused = false
	p.base = p.base.Add(p.opts.Clock.Now().Sub(p.pausedAt))
}

// poll takes in the keys already typed, without waiting: a quit, or a
// pause (the keys after it are the wait's).
func (p *Player) poll() {
	select {
	case <-p.opts.Done:
		p.quit = true
		return
	default:
	}
	for p.opts.Keys != nil && !p.paused && !p.quit {
		select {
		case k, ok := <-p.opts.Keys:
			switch {
			case !ok:
				p.opts.Keys = nil
			case k == 'q' || k == 'Q' || k == 0x03:
				p.quit = true
			case k == ' ':
				p.pause()
			}
		default:
			return
		}
	}
}

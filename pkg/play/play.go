// Package play replays a capture's text channels at their recorded pace:
// the engine of ds play (see ds(1)). It knows nothing of captures: the
// caller hands it each frame's bytes with the frame's time
// ([Player.Frame]; ds play takes them from views.LogOptions.CatFrames, the
// bytes ds log --cat prints), and it writes them to its output, waiting
// between two frames for the time between them divided by the speed,
// each wait capped by the idle limit (asciinema's -s and -i). Keys, when
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
type Player struct {
	w      io.Writer
	opts   Options
	prevNS int64 // the time of the previous frame (0: none yet)
	paused bool
	quit   bool
	err    error // sticky: a write error, or ErrQuit
}

// New returns a Player writing to w.
func New(w io.Writer, opts Options) *Player {
	if opts.Clock == nil {
		opts.Clock = SystemClock{}
	}
	return &Player{w: w, opts: opts}
}

// Wait returns the wait before a frame at timeNS after one at prevNS:
// their difference divided by speed, capped by idle (if positive); 0 for
// a speed of 0 or less, a first frame (prevNS 0), a frame without a time
// (timeNS 0), or one before the previous.
func Wait(prevNS, timeNS int64, speed float64, idle time.Duration) time.Duration {
	if speed <= 0 || prevNS == 0 || timeNS <= prevNS {
		return 0
	}
	d := time.Duration(float64(timeNS-prevNS) / speed)
	if idle > 0 && d > idle {
		d = idle
	}
	return d
}

// Frame waits until the frame at timeNS is due (see [Wait]), handling the
// keys typed meanwhile, then writes b. It returns ErrQuit once a quit key
// was typed (b is then not written), or the output's error; either is
// returned again by every later call.
func (p *Player) Frame(timeNS int64, b []byte) error {
	if p.err != nil {
		return p.err
	}
	d := Wait(p.prevNS, timeNS, p.opts.Speed, p.opts.IdleLimit)
	if timeNS > p.prevNS {
		p.prevNS = timeNS
	}
	if err := p.wait(d); err != nil {
		p.err = err
		return err
	}
	if _, err := p.w.Write(b); err != nil {
		p.err = err
		return err
	}
	return nil
}

// wait waits d, or longer while paused, handling keys; a step ('.')
// while paused ends it at once.
func (p *Player) wait(d time.Duration) error {
	p.poll()
	if p.quit {
		return ErrQuit
	}
	if d <= 0 && !p.paused {
		return nil
	}
	left := d // what is left of the wait, while paused
	var timer <-chan time.Time
	var deadline time.Time
	if !p.paused {
		deadline, timer = p.opts.Clock.Now().Add(d), p.opts.Clock.After(d)
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
					// No key can resume: go on.
					p.paused = false
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
					p.paused = false
					if left <= 0 {
						return nil
					}
					deadline, timer = p.opts.Clock.Now().Add(left), p.opts.Clock.After(left)
				} else {
					p.paused = true
					left, timer = max(0, deadline.Sub(p.opts.Clock.Now())), nil
				}
			case '.':
				if p.paused {
					return nil
				}
			}
		}
	}
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
				p.paused = true
			}
		default:
			return
		}
	}
}

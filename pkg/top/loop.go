package top

import (
	"context"
	"io"
	"strings"
	"time"
)

// Screen is where [Run] draws.
type Screen struct {
	// Out gets the frames.
	Out io.Writer
	// TTY draws in place: Run enters the alternate screen and hides the
	// cursor, redraws each frame from the top left (lines ended by
	// erase-to-end-of-line and CR LF, the rest of the screen erased),
	// and restores both when it returns. Without it each frame is a
	// plain snapshot (RenderOptions.Height 0), followed by an empty
	// line.
	TTY bool
	// Size returns the screen's size (columns, lines), asked before
	// every frame; nil, or a size of 0, means 80 columns (and, on a TTY,
	// 24 lines).
	Size func() (width, height int)
	// Render is the base of every frame's options (Color, Location,
	// Lines); Width, Height and Status are Run's.
	Render RenderOptions
}

// Events is what drives [Run]; every field may be nil.
type Events struct {
	// Ticks draws a frame at each tick (the refresh interval).
	Ticks <-chan time.Time
	// Redraw draws a frame at once (SIGWINCH: the size changed).
	Redraw <-chan struct{}
	// Keys is the keyboard, read a byte at a time in a goroutine of its
	// own (stopped by its next byte or error after Run returns): q, Q
	// and Ctrl-C (a raw terminal sends it as a byte) end Run.
	Keys io.Reader
	// Done is closed when the input has ended (nothing more will come):
	// without TTY Run draws the last frame and returns; on a TTY the
	// frame says so and stays until q.
	Done <-chan struct{}
}

// Enter and Leave are what a TTY [Screen] writes first and last: the
// alternate screen and a hidden cursor, then the normal screen and the
// cursor back.
const (
	Enter = "\x1b[?1049h\x1b[?25l"
	Leave = "\x1b[?25h\x1b[?1049l"
)

// Run draws m on s at once and then at every event of ev until ctx ends,
// a quit key is read or (without TTY) ev.Done is closed. It returns the
// first write error (a TTY screen is restored even then) or nil.
func Run(ctx context.Context, m *Model, s Screen, ev Events) (err error) {
	keys := make(chan struct{}, 1)
	if ev.Keys != nil {
		go readKeys(ev.Keys, keys)
	}
	if s.TTY {
		if _, err := io.WriteString(s.Out, Enter); err != nil {
			return err
		}
		defer func() {
			if _, lerr := io.WriteString(s.Out, Leave); err == nil {
				err = lerr
			}
		}()
	}
	done := ev.Done
	ended := false
	for {
		if err := s.draw(m, ended); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-keys:
			return nil
		case <-ev.Ticks:
		case <-ev.Redraw:
		case <-done:
			ended, done = true, nil
			if !s.TTY {
				return s.draw(m, ended)
			}
		}
	}
}

// draw writes one frame.
func (s *Screen) draw(m *Model, ended bool) error {
	w, h := 0, 0
	if s.Size != nil {
		w, h = s.Size()
	}
	if w <= 0 {
		w = 80
	}
	o := s.Render
	o.Width = w
	if ended {
		o.Status = "input ended"
	}
	if !s.TTY {
		o.Height = 0
		_, err := io.WriteString(s.Out, m.Render(o)+"\n")
		return err
	}
	if h <= 0 {
		h = 24
	}
	o.Height = h
	if !ended {
		o.Status = "q to quit"
	} else {
		o.Status += ", q to quit"
	}
	frame := strings.TrimSuffix(m.Render(o), "\n")
	var b strings.Builder
	b.WriteString("\x1b[H")
	for i, l := range strings.Split(frame, "\n") {
		if i > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString(l)
		b.WriteString("\x1b[K")
	}
	b.WriteString("\x1b[J")
	_, err := io.WriteString(s.Out, b.String())
	return err
}

// readKeys signals quit on q, Q or Ctrl-C, and stops at the first error.
func readKeys(r io.Reader, quit chan<- struct{}) {
	var b [1]byte
	for {
		n, err := r.Read(b[:])
		if n == 1 && (b[0] == 'q' || b[0] == 'Q' || b[0] == 3) {
			select {
			case quit <- struct{}{}:
			default:
			}
			return
		}
		if err != nil {
			return
		}
	}
}

package capture

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// Frame size limits of a [LineFramer], in bytes, and its idle flush.
const (
	// MaxFrame is the largest text or bytes frame, and the size of one
	// read of the input by [Emitter.Read]: 256 KiB, ds wrap's
	// (proc.DefaultMaxFrameSize).
	MaxFrame = 256 << 10
	// MaxRecord is the largest JSON line, without its newline: the
	// largest frame payload the format holds (wireformat.MaxPayloadSize,
	// 1 MiB). A record cannot be cut, so a longer line is refused.
	MaxRecord = wireformat.MaxPayloadSize
	// IdleFlush is how long a partial text line (bytes after the last
	// newline) waits for its newline before it is submitted as a frame of
	// its own: 50 ms, ds wrap's (proc.DefaultIdleFlush).
	IdleFlush = 50 * time.Millisecond
)

// Content is how a [LineFramer] cuts its input into frames (ds emit
// --content).
type Content int

const (
	ContentText  Content = iota // a frame per line, newline kept; a longer line is cut at MaxFrame
	ContentJSON                 // a record per line, checked to be one JSON value; blank lines skipped
	ContentBytes                // a frame per read, at most MaxFrame each
)

// A LineFramer cuts a byte stream into frames as ds emit does (see
// ds(1)): text lines (newline kept, bytes verbatim, lines longer than
// MaxFrame cut, a partial line flushed after IdleFlush), JSON records (one
// value per line, without its LF or CRLF; a line that is not one JSON
// value or is longer than MaxRecord is refused) or raw reads. It hands
// each frame to Submit in a buffer of its own (from AllocPayload; Submit
// takes ownership, and a capture hands it back to the pool once written)
// and each refused JSON line, numbered from 1, to Refuse. Set Mode,
// Submit (and Refuse for ContentJSON) before the first Write. It is not
// safe for concurrent use: [Emitter] guards one.
type LineFramer struct {
	Mode   Content
	Submit func(payload []byte)
	Refuse func(line uint64, err error)

	pending  []byte    // text: a partial line; json: the current line so far
	since    time.Time // text: when pending became non-empty
	line     uint64    // json: lines completed so far
	skipping bool      // json: the current line is too long; skip to its end
	refused  uint64    // json: lines refused
}

// Write frames p, read at now.
func (f *LineFramer) Write(p []byte, now time.Time) {
	switch f.Mode {
	case ContentBytes:
		for len(p) > 0 {
			n := min(len(p), MaxFrame)
			f.submitCopy(p[:n])
			p = p[n:]
		}
	case ContentText:
		f.writeText(p, now)
	case ContentJSON:
		f.writeJSON(p)
	}
}

func (f *LineFramer) writeText(p []byte, now time.Time) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		n := len(p)
		if i >= 0 {
			n = i + 1
		}
		if room := MaxFrame - len(f.pending); n > room {
			// A line longer than a frame: cut at MaxFrame.
			f.pending = append(f.pending, p[:room]...)
			p = p[room:]
			f.flushPending()
			continue
		}
		switch {
		case i < 0:
			if len(f.pending) == 0 {
				f.since = now
			}
			f.pending = append(f.pending, p...)
		case len(f.pending) == 0:
			f.submitCopy(p[:n])
		default:
			f.pending = append(f.pending, p[:n]...)
			f.flushPending()
		}
		p = p[n:]
	}
}

func (f *LineFramer) writeJSON(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		part := p
		if i >= 0 {
			part = p[:i]
		}
		switch {
		case f.skipping:
		case len(f.pending)+len(part) > MaxRecord:
			f.skipping = true
			f.pending = f.pending[:0]
		default:
			f.pending = append(f.pending, part...)
		}
		if i < 0 {
			return
		}
		f.endLine()
		p = p[i+1:]
	}
}

// endLine ends the current JSON line: it is submitted when it holds one
// JSON value, skipped when blank, refused otherwise.
func (f *LineFramer) endLine() {
	f.line++
	rec := bytes.TrimSuffix(f.pending, []byte("\r"))
	f.pending = f.pending[:0]
	switch {
	case f.skipping:
		f.skipping = false
		f.refused++
		f.Refuse(f.line, fmt.Errorf("record longer than %d bytes (1 MiB), not recorded", MaxRecord))
	case len(bytes.TrimSpace(rec)) == 0:
		// a blank line: skipped silently
	case json.Valid(rec):
		f.submitCopy(rec)
	default:
		f.refused++
		f.Refuse(f.line, fmt.Errorf("invalid JSON: %v", jsonError(rec)))
	}
}

// jsonError explains why b is not one JSON value.
func jsonError(b []byte) error {
	var v json.RawMessage
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	return errors.New("not one JSON value")
}

// Lines returns how many JSON lines were read (blank lines included).
func (f *LineFramer) Lines() uint64 { return f.line }

// Refused returns how many JSON lines were refused.
func (f *LineFramer) Refused() uint64 { return f.refused }

// Idle submits a partial text line that has waited IdleFlush at now.
func (f *LineFramer) Idle(now time.Time) {
	if f.Mode == ContentText && len(f.pending) > 0 && now.Sub(f.since) >= IdleFlush {
		f.flushPending()
	}
}

// End submits what is left at the end of the input: a partial text line,
// or a last JSON line without its newline.
func (f *LineFramer) End() {
	switch {
	case f.Mode == ContentText && len(f.pending) > 0:
		f.flushPending()
	case f.Mode == ContentJSON && (len(f.pending) > 0 || f.skipping):
		f.endLine()
	}
}

func (f *LineFramer) flushPending() {
	f.submitCopy(f.pending)
	f.pending = f.pending[:0]
}

// submitCopy submits a copy of b in a pooled buffer: the capture hands
// every payload back to the pool once written, so no payload may share
// memory with anything else.
func (f *LineFramer) submitCopy(b []byte) {
	f.Submit(append(AllocPayload(len(b)), b...))
}

// An Emitter guards a LineFramer shared by the goroutine that reads the
// input ([Emitter.Read]) and the one that flushes idle partial lines and
// ends the input ([Emitter.Idle], [Emitter.Stop]). Its methods are safe
// for concurrent use.
type Emitter struct {
	mu      sync.Mutex
	fr      *LineFramer
	stopped bool // after stop: a read still in progress is not recorded
}

// NewEmitter returns an Emitter of f, which it owns from then on.
func NewEmitter(f *LineFramer) *Emitter { return &Emitter{fr: f} }

// Read reads r into the framer, MaxFrame bytes at most at a time, until
// an error (io.EOF at the end, or os.ErrDeadlineExceeded when
// interrupted), which it sends on done. What a read returns after Stop is
// not framed.
func (e *Emitter) Read(r io.Reader, done chan<- error) {
	buf := make([]byte, MaxFrame)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			e.mu.Lock()
			if e.stopped {
				e.mu.Unlock()
				done <- err
				return
			}
			e.fr.Write(buf[:n], time.Now())
			e.mu.Unlock()
		}
		if err != nil {
			done <- err
			return
		}
	}
}

// Idle submits a partial text line that has waited IdleFlush. When the
// reader holds the framer (it may be waiting for room in the queue),
// Idle does nothing: the caller's loop must stay free to take signals and
// a failed capture, and the line's next tick comes soon.
func (e *Emitter) Idle(now time.Time) {
	if !e.mu.TryLock() {
		return
	}
	defer e.mu.Unlock()
	if !e.stopped {
		e.fr.Idle(now)
	}
}

// Stop ends the input: the partial line, if any, is submitted (text) or
// checked and submitted (json), and nothing read later is recorded.
func (e *Emitter) Stop() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.stopped {
		e.stopped = true
		e.fr.End()
	}
}

// Lines returns how many JSON lines were read (blank lines included).
func (e *Emitter) Lines() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.fr.Lines()
}

// Refused returns how many JSON lines were refused.
func (e *Emitter) Refused() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.fr.Refused()
}

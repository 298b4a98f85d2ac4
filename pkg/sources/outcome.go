package sources

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/textfmt"
)

// Status is the worst outcome of a command's inputs (ds(1): exit 1, 2
// or 3 for Failed, NotCapture, Damaged), in rank order: a
// greater Status is worse.
type Status int

const (
	// OK: every input was read whole, undamaged.
	OK Status = iota
	// Damaged: what was read of an input was damaged (ds(1): exit 3).
	Damaged
	// NotCapture: an input holds no capture, or is a bad nats:// URL
	// (exit 2).
	NotCapture
	// Failed: an input could not be read (exit 1).
	Failed
)

// String names s.
func (s Status) String() string {
	switch s {
	case OK:
		return "ok"
	case Damaged:
		return "damaged"
	case NotCapture:
		return "not a capture"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// StatusError is the error of a command whose inputs' worst outcome was
// Status (never OK): every failure was reported already, so it has
// nothing more to print.
type StatusError struct{ Status Status }

func (e *StatusError) Error() string { return "sources: inputs: " + e.Status.String() }

// Outcome is the worst outcome of a command's inputs so far. The zero
// value is ready (OK); it is safe for concurrent use.
type Outcome struct {
	mu                          sync.Mutex
	failed, notCapture, damaged bool
}

// Fail reports err on stderr ("ds: ERR") and counts it: an error that is
// (or wraps) segments.ErrNotCapture or a *URLError as NotCapture,
// any other as Failed.
func (o *Outcome) Fail(stderr io.Writer, err error) {
	// An error names what the input named (a directory's file names, a
	// capture's channels): escaped, line by line, never raw to a terminal.
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		lines[i] = textfmt.Escape(l)
	}
	fmt.Fprintf(stderr, "ds: %s\n", strings.Join(lines, "\n"))
	o.mu.Lock()
	defer o.mu.Unlock()
	var bad *URLError
	if errors.Is(err, segments.ErrNotCapture) || errors.As(err, &bad) {
		o.notCapture = true
	} else {
		o.failed = true
	}
}

// Failer returns Fail reporting on stderr, for sources.Set.Expand.
func (o *Outcome) Failer(stderr io.Writer) func(error) {
	return func(err error) { o.Fail(stderr, err) }
}

// Damage counts damage (already reported where it was met).
func (o *Outcome) Damage() {
	o.mu.Lock()
	o.damaged = true
	o.mu.Unlock()
}

// FailedInput reports whether an input could not be read or was no
// capture (Failed or NotCapture): both rank above Damaged.
func (o *Outcome) FailedInput() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.failed || o.notCapture
}

// Status returns the worst outcome so far.
func (o *Outcome) Status() Status {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case o.failed:
		return Failed
	case o.notCapture:
		return NotCapture
	case o.damaged:
		return Damaged
	}
	return OK
}

// Err returns the outcome as an error: nil when OK, else a *StatusError.
func (o *Outcome) Err() error {
	if s := o.Status(); s != OK {
		return &StatusError{Status: s}
	}
	return nil
}

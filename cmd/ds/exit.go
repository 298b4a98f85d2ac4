package main

import (
	"errors"
	"fmt"
	"io"
	"syscall"

	"github.com/ds-telemetry/ds/pkg/sources"
)

// Exit statuses, part of the interface (man/ds.1 EXIT STATUS; ARCHITECTURE.md §1).
// ds wrap returns its child's status instead; see wrap's own documentation.
const (
	exitOK      = 0 // success
	exitFailure = 1 // runtime or I/O failure
	exitUsage   = 2 // bad command line
	exitCorrupt = 3 // damaged or truncated input (data that was good is still printed)
	// exitLoss says that the inputs read fine but show a loss or a
	// conflict (ds gaps --check), which is no failure of ds: CI tells it
	// from exitFailure. Damage (exitCorrupt) wins over it.
	exitLoss = 4
)

// usageError is a bad command line: exit 2. cmd is the command whose help
// the report points to ("ds log"; empty means ds itself): exitCode adds
// "Run 'CMD --help' for usage." after the message, unless hinted says the
// message points to the help already (the flag errors of root.go do, on
// one line).
type usageError struct {
	err    error
	cmd    string
	hinted bool
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usagef returns a usage error (exit 2) with a formatted message. An
// action's usage error is pointed at that action's command by root.go.
func usagef(format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...)}
}

// corruptError reports that an input was damaged: exit 3. The message has
// been printed already (each damaged range is reported as it is met).
type corruptError struct{ err error }

func (e *corruptError) Error() string { return e.err.Error() }
func (e *corruptError) Unwrap() error { return e.err }

// statusError carries an exit status decided by a command (ds wrap's child
// status) with nothing to print.
type statusError struct{ code int }

func (e *statusError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// codedError is an error printed as any other, with an exit status of
// its command's own (ds diff's 2 for trouble, as diff(1)).
type codedError struct {
	err  error
	code int
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

// exitCode maps an action's error to the process exit status and prints it
// once, as "ds: <err>" on stderr. It is the only place that does either.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	var st *statusError
	if errors.As(err, &st) {
		return st.code
	}
	var se *sources.StatusError // the worst outcome of the inputs, reported
	if errors.As(err, &se) {
		return map[sources.Status]int{sources.Failed: exitFailure, sources.NotCapture: exitUsage, sources.Damaged: exitCorrupt}[se.Status]
	}
	var cd *codedError
	if errors.As(err, &cd) {
		fmt.Fprintf(stderr, "ds: %v\n", err)
		return cd.code
	}
	var we *wrapError
	if errors.As(err, &we) {
		fmt.Fprintf(stderr, "ds: %v\n", err)
		return exitWrapFailure
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "ds: %v\n", err)
		if !ue.hinted {
			cmd := ue.cmd
			if cmd == "" {
				cmd = "ds"
			}
			fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd)
		}
		return exitUsage
	}
	fmt.Fprintf(stderr, "ds: %v\n", err)
	var ce *corruptError
	if errors.As(err, &ce) {
		return exitCorrupt
	}
	return exitFailure
}

// isEPIPE reports a write to a closed pipe (ds log … | head): not an error
// worth reporting.
func isEPIPE(err error) bool { return errors.Is(err, syscall.EPIPE) }

package proc

import (
	"errors"
	"strconv"
)

// Exit codes ds wrap uses when the child never ran (ARCHITECTURE.md §5, as POSIX
// shells do).
const (
	// ExitNotFound: the command was not found (no such file, or not in PATH).
	ExitNotFound = 127
	// ExitCannotExecute: the command was found but could not be executed
	// (permission denied, not an executable format, a directory, a bad
	// interpreter line, or Options.Dir unusable).
	ExitCannotExecute = 126
	// ExitFailure: ds itself failed before the child could be started
	// (bad options, channel registration, pipe or pty creation).
	ExitFailure = 1
)

var (
	// ErrNoCommand is returned by [Run] when Options.Argv is empty.
	ErrNoCommand = errors.New("proc: no command to run")
	// ErrNoProducer is returned by [Run] when Options.Producer is nil.
	ErrNoProducer = errors.New("proc: no producer")
	// ErrNotFound is wrapped by a [StartError] when argv[0] has no '/' and is
	// not an executable file in any PATH directory.
	ErrNotFound = errors.New("executable file not found in $PATH")
)

// A StartError reports that the child process could not be started. Run
// returns it with Result.ExitCode equal to ExitCode, after recording a
// spawn_failed lifecycle record.
type StartError struct {
	Argv     []string // the command as given in Options.Argv
	ExitCode int      // ExitNotFound (127) or ExitCannotExecute (126)
	Err      error    // ErrNotFound, a syscall.Errno (EACCES, ENOEXEC, ...), or a *fs.PathError for Dir
}

// Error returns "proc: start \"ARGV0\": REASON".
func (e *StartError) Error() string {
	name := ""
	if len(e.Argv) > 0 {
		name = e.Argv[0]
	}
	return "proc: start " + strconv.Quote(name) + ": " + e.Err.Error()
}

// Unwrap returns Err, so that errors.Is(err, ErrNotFound) or
// errors.Is(err, fs.ErrPermission) work on a StartError.
func (e *StartError) Unwrap() error { return e.Err }

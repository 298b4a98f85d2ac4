package viewer

import (
	"errors"
	"io"
	"sync"
	"syscall"
)

// lockedWriter serialises writes to w (stderr, written by the goroutines
// of several inputs).
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// isEPIPE reports a write to a closed pipe (ds log … | head): the end of
// the output, not an error worth reporting.
func isEPIPE(err error) bool { return errors.Is(err, syscall.EPIPE) }

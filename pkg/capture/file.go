package capture

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// A StreamExistsError reports that Options.Append would add a stream to a
// capture file that holds a segment of that stream already (the same
// node and life given twice): its positions would start again at 0 beside
// the first copy's, and every view would take one for the other's
// duplicates, hiding a run.
type StreamExistsError struct {
	Stream frames.StreamID
	File   string // the capture file's name
}

func (e *StreamExistsError) Error() string {
	return fmt.Sprintf("stream %s is already in %s", e.Stream, e.File)
}

// newFile creates a capture named LABEL-YYYYMMDDTHHMMSS.dss in dir,
// never replacing a file: when the name is taken (another run in the same
// second), it tries LABEL-…-2.dss, -3, and so on. The file is created
// exclusively, so two runs can never pick the same name.
func newFile(dir, label string, now time.Time) (string, *os.File, error) {
	base := filepath.Join(dir, label+"-"+now.Format("20060102T150405"))
	for i := 1; ; i++ {
		name := base + ".dss"
		if i > 1 {
			name = fmt.Sprintf("%s-%d.dss", base, i)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) && i < 1000 {
			continue
		}
		if err != nil {
			return "", nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			return "", nil, fmt.Errorf("lock %s: %w", name, err)
		}
		return name, f, nil
	}
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// openFile opens name for writing and takes an exclusive lock on it, so
// that two writers cannot interleave. An existing regular file is never
// replaced unless overwrite is set (asciinema's rule): without it, a new
// file is created exclusively; with appendTo the file must already be a
// capture (its first bytes are checked), or empty. A device, FIFO or pipe is
// written as it is; a FIFO that no process reads is an error at once,
// never a wait. The file is emptied (overwrite) only once the lock is
// held.
func openFile(name string, appendTo, overwrite bool) (*os.File, error) {
	flags := os.O_WRONLY | os.O_APPEND
	fi, err := os.Stat(name)
	if err == nil && fi.Mode()&fs.ModeNamedPipe != 0 {
		// open(2) of a FIFO for writing waits for a reader: never wait on
		// the capture (the command has not started yet). O_NONBLOCK opens
		// at once or fails with ENXIO; Go's poller then makes each write
		// wait for room without holding a thread.
		f, err := os.OpenFile(name, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if errors.Is(err, syscall.ENXIO) {
			return nil, fmt.Errorf("%s is a FIFO that no process is reading: start its reader first (ds never waits for one)", name)
		}
		return f, err
	}
	if err == nil && fi.Mode().IsRegular() {
		switch {
		case appendTo:
			if err := checkHead(name); err != nil {
				return nil, err
			}
		case !overwrite:
			return nil, fmt.Errorf("%s exists: not replacing it (use --overwrite to replace it, --append to add a stream to a capture)", name)
		}
	} else if err != nil && errors.Is(err, fs.ErrNotExist) {
		flags |= os.O_CREATE | os.O_EXCL // lose no race with another writer
	}
	f, err := os.OpenFile(name, flags, 0o644)
	if err != nil {
		return nil, err
	}
	fi, err = f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return f, nil // a device, FIFO or pipe: nothing to lock or empty
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s is being written by another process (locked)", name)
		}
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	if overwrite {
		if err := f.Truncate(0); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

// checkHead refuses to append to a file that is not a DSS capture:
// its first bytes must be a segment header's magic (an empty file is fine).
func checkHead(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, len(segments.Magic))
	n, err := io.ReadFull(f, head)
	switch {
	case n == 0 && errors.Is(err, io.EOF):
		return nil
	case string(head[:n]) != segments.Magic:
		return fmt.Errorf("--append: %s is not a ds capture (its first bytes are not a DSS segment header); not appending to it", name)
	}
	return nil
}

// checkNewStream refuses to append stream to the capture w when a segment
// of f already belongs to it (a *StreamExistsError). It reads the segment
// headers only (segments.BackWalker), under the lock openFile took; a file
// that is not a regular file, or is empty, has none.
func checkNewStream(w *os.File, name string, stream frames.StreamID) error {
	fi, err := w.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() == 0 {
		return nil
	}
	f, err := os.Open(name) // w is write-only
	if err != nil {
		return fmt.Errorf("--append: %w", err)
	}
	defer f.Close()
	spans, err := segments.NewBackWalker(f, fi.Size()).All()
	if err != nil {
		return fmt.Errorf("--append: read %s: %w", name, err)
	}
	for _, sp := range spans {
		if sp.Header != nil && sp.Header.Stream.Stream == stream {
			return &StreamExistsError{Stream: stream, File: name}
		}
	}
	return nil
}

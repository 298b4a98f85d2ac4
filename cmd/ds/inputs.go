package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"syscall"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/views"
)

// input is one capture named on the command line ("-" is stdin).
type input struct {
	name string
	r    io.Reader
	size int64 // -1 when unknown
	live bool  // a writer holds the file's lock: its tail is still being written
	read int64 // bytes read, once scanned
	file *os.File
}

func openInput(name string, stdin io.Reader) (*input, error) {
	if name == "-" {
		return &input{name: "-", r: stdin, size: -1}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	in := &input{name: name, r: f, size: -1, file: f}
	if fi, err := f.Stat(); err == nil {
		if fi.IsDir() {
			f.Close()
			return nil, fmt.Errorf("%s: is a directory", name)
		}
		if fi.Mode().IsRegular() {
			in.size = fi.Size()
		}
	}
	// ds wrap holds an exclusive lock while it writes; a shared lock that
	// cannot be had means the capture is live.
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); errors.Is(err, syscall.EWOULDBLOCK) {
		in.live = true
	} else if err == nil {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	}
	return in, nil
}

func (in *input) close() {
	if in.file != nil {
		in.file.Close()
	}
}

// damageReporter sits between the reader and a sink: it reports each
// damaged range once on stderr ("ds: FILE: …"), hides a torn tail of a live
// capture (it is a record still being written, not damage) and remembers
// whether anything was damaged.
type damageReporter struct {
	views.Sink
	in      *input
	stderr  io.Writer
	damaged bool
}

func (d *damageReporter) Damage(offset, end int64, torn bool, err error) {
	if d.report(offset, end, torn, err) {
		d.Sink.Damage(offset, end, torn, err)
	}
}

// report says on stderr that bytes [offset, end) are damaged, unless they
// are the torn tail of a live capture; it reports whether they are damage.
func (d *damageReporter) report(offset, end int64, torn bool, err error) bool {
	if torn && d.in.live {
		return false
	}
	d.damaged = true
	if torn {
		fmt.Fprintf(d.stderr, "ds: %s: torn tail at byte %d (the writer stopped mid-record): %v\n", d.in.name, offset, err)
	} else {
		fmt.Fprintf(d.stderr, "ds: %s: bytes %d–%d unreadable, skipped: %v\n", d.in.name, offset, end-1, err)
	}
	return true
}

// limitReadMemory gives the views a soft memory limit (unless GOMEMLIMIT
// is set): the garbage collector then keeps the heap near what the views
// hold, which their bounds keep under readMemoryLimit, instead of letting
// it double between collections.
func limitReadMemory() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(readMemoryLimit)
	}
}

// readMemoryLimit is the soft memory limit of the views, in bytes.
const readMemoryLimit = 48 << 20

// scanInputs reads every named input in order into the sink made for it.
// It keeps going past a bad input and returns the worst outcome: an I/O
// error (exit 1) over damage (exit 3).
//
// done, if not nil, is called after each input is read.
func scanInputs(ctx context.Context, names []string, stdin io.Reader, stderr io.Writer, follow bool, sinkFor func(*input) views.Sink, done func(*input)) error {
	if len(names) == 0 {
		return usagef("no input given (name capture files, or - for stdin)")
	}
	var firstErr error
	damaged := 0
	for _, name := range names {
		in, err := openInput(name, stdin)
		if err != nil {
			fmt.Fprintf(stderr, "ds: %v\n", err)
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		cr := &countingReader{r: in.r}
		rep := &damageReporter{Sink: sinkFor(in), in: in, stderr: stderr}
		err = views.Scan(ctx, cr, views.ScanOptions{Follow: follow}, rep)
		in.read = cr.n
		if done != nil {
			done(in)
		}
		in.close()
		if rep.damaged {
			damaged++
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			err = fmt.Errorf("%s: %w", name, err)
			fmt.Fprintf(stderr, "ds: %v\n", err)
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	if firstErr != nil {
		return &statusError{code: exitFailure}
	}
	if damaged > 0 {
		return &statusError{code: exitCorrupt}
	}
	return nil
}

// channelFilters turns -c patterns into filters.
func channelFilters(patterns []string) []frames.ChannelFilter {
	var fs []frames.ChannelFilter
	for _, p := range patterns {
		fs = append(fs, frames.ParseChannelPattern(p))
	}
	return fs
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}

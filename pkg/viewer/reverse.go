package viewer

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
)

// reverseMemory is how much output a [Reverser] keeps in memory; beyond
// it, the output is spooled to a temporary file.
const reverseMemory = 8 << 20

// reverseChunk is the size of the pieces a [Reverser] reads back from its
// end: it marks a line start at least every reverseChunk bytes.
const reverseChunk = 1 << 20

// Reverser is an io.Writer that keeps the lines written to it and, on
// [Reverser.Close], writes them to its writer last first: ds log -r
// (newest first, as journalctl -r). Rendering the log forward and
// reversing its lines shows exactly the lines ds log shows, each one
// whole (a text line joined across frames, its gap and damage lines in
// place), which walking a capture's segments back could not promise for
// lines that span segments, and it works for every input (stdin, pipes,
// several merged inputs).
//
// Memory: up to 8 MiB of output is kept in memory; more is spooled to a
// temporary file (in $TMPDIR, removed at Close), so disk, not memory,
// grows with the output, and reading back takes about 1 MiB at a time
// (more for a longer line) and one offset per MiB of output. A last line
// without a newline is given one.
type Reverser struct {
	w     io.Writer
	mem   []byte   // the output, while it fits in memory
	f     *os.File // then the spool file
	size  int64    // bytes written
	marks []int64  // offsets of line starts, about reverseChunk apart
	err   error    // sticky
	// memory and chunk are reverseMemory and reverseChunk (smaller in
	// tests).
	memory, chunk int64
}

// NewReverser returns a Reverser writing to w.
func NewReverser(w io.Writer) *Reverser {
	return &Reverser{w: w, marks: []int64{0}, memory: reverseMemory, chunk: reverseChunk}
}

// Write implements io.Writer. Its errors are those of the spool file.
func (r *Reverser) Write(b []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	for off := 0; off < len(b); {
		i := bytes.IndexByte(b[off:], '\n')
		if i < 0 {
			break
		}
		off += i + 1
		start := r.size + int64(off) // the next line's
		if start-r.marks[len(r.marks)-1] >= r.chunk {
			r.marks = append(r.marks, start)
		}
	}
	if r.f == nil && int64(len(r.mem)+len(b)) > r.memory {
		f, err := os.CreateTemp("", "ds-reverse-*")
		if err != nil {
			r.err = fmt.Errorf("reverse: spool: %w", err)
			return 0, r.err
		}
		os.Remove(f.Name()) // gone once closed
		r.f = f
		if _, err := f.Write(r.mem); err != nil {
			r.err = fmt.Errorf("reverse: spool: %w", err)
			return 0, r.err
		}
		r.mem = nil
	}
	if r.f != nil {
		if _, err := r.f.Write(b); err != nil {
			r.err = fmt.Errorf("reverse: spool: %w", err)
			return 0, r.err
		}
	} else {
		r.mem = append(r.mem, b...)
	}
	r.size += int64(len(b))
	return len(b), nil
}

// Close writes the lines to w, the last first, and removes the spool
// file. It returns the first error of the spool or of w.
func (r *Reverser) Close() error {
	if r.f != nil {
		defer r.f.Close()
	}
	if r.err != nil {
		return r.err
	}
	end := r.size
	var chunk []byte
	for k := len(r.marks) - 1; k >= 0; k-- {
		from := r.marks[k]
		if from >= end {
			continue
		}
		if r.f != nil {
			chunk = slices.Grow(chunk[:0], int(end-from))[:end-from]
			if _, err := r.f.ReadAt(chunk, from); err != nil {
				return fmt.Errorf("reverse: spool: %w", err)
			}
		} else {
			chunk = r.mem[from:end]
		}
		if err := writeReversed(r.w, chunk, end == r.size); err != nil {
			return err
		}
		end = from
	}
	return nil
}

// writeReversed writes the lines of chunk to w, the last first; a last
// line without a newline (last says it ends the output) gets one.
func writeReversed(w io.Writer, chunk []byte, last bool) error {
	if last && len(chunk) > 0 && chunk[len(chunk)-1] != '\n' {
		if _, err := w.Write(chunk[bytes.LastIndexByte(chunk, '\n')+1:]); err != nil {
			return err
		}
		if _, err := w.Write([]byte{'\n'}); err != nil {
			return err
		}
		chunk = chunk[:bytes.LastIndexByte(chunk, '\n')+1]
	}
	for len(chunk) > 0 {
		i := bytes.LastIndexByte(chunk[:len(chunk)-1], '\n') + 1
		if _, err := w.Write(chunk[i:]); err != nil {
			return err
		}
		chunk = chunk[:i]
	}
	return nil
}

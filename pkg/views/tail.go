package views

import (
	"bytes"
	"context"
	"io"
	"slices"

	"github.com/ds-telemetry/ds/pkg/segments"
)

// DefaultTailLines is how many lines [Tail] prints unless told otherwise,
// as tail(1).
const DefaultTailLines = 10

// TailOptions configures [Tail].
type TailOptions struct {
	// Lines is how many lines to print: the last Lines lines of what
	// [Printer] would print for the whole input. ≤ 0 means
	// DefaultTailLines.
	Lines int
	// Log selects the format and the channels, as for ds log.
	Log LogOptions
	// File names the input in damage lines.
	File string
}

// DamageRange is a damaged byte range [Offset, End) of an input.
type DamageRange struct {
	Offset, End int64
	Torn        bool
	Err         error
}

// TailStats says what [Tail] read.
type TailStats struct {
	// BytesRead counts the bytes read from the input: segment headers and
	// summaries found from the end, and the segments read record by
	// record.
	BytesRead int64
	// Segments counts the spans read record by record.
	Segments int
	// Whole is set when the input was read from its start, because the
	// last segments did not hold enough lines.
	Whole bool
	// Damage lists the damaged ranges of what was read.
	Damage []DamageRange
}

// tailStart is how far from the end of its input [Tail] starts reading
// first, in bytes; it doubles until enough lines are read.
const tailStart = 256 << 10

// Tail writes to w the last lines that [Printer] would print for the
// capture in r, of size bytes, reading only the end of the capture: it
// walks the capture from its end ([segments.BackWalker], which reads only
// headers and summaries) to find the segments that hold the last 256 KiB,
// and renders those from their headers, skipping the records (and zstd
// blocks, undecompressed) that start before that point. While that gives
// no more than the lines asked for (the first line rendered may be the
// end of a line begun earlier), it starts twice as far from the end, up
// to the whole input. Memory is bounded by the lines kept and one
// segment's reading.
//
// It returns what it read, and the error of the input or of w.
func Tail(ctx context.Context, r io.ReaderAt, size int64, opts TailOptions, w io.Writer) (TailStats, error) {
	if opts.Lines <= 0 {
		opts.Lines = DefaultTailLines
	}
	cr := &countingReaderAt{r: r}
	walker := segments.NewBackWalker(cr, size)
	var spans []segments.Span // from the end: spans[0] is the last
	done := false
	for back := int64(tailStart); ; back *= 2 {
		start := max(0, size-back)
		// The spans that reach past start, and the one it falls in.
		for !done && (len(spans) == 0 || spans[len(spans)-1].Offset > start) {
			sp, err := walker.Prev()
			if err == io.EOF {
				done = true
				break
			}
			if err != nil {
				return TailStats{BytesRead: cr.n}, err
			}
			spans = append(spans, sp)
		}
		use := 0
		for use < len(spans) && spans[use].End > start {
			use++
		}
		ring := NewLineRing(opts.Lines)
		p := NewPrinter(ring, opts.Log)
		sink := NewLogSink(p, opts.Log.Window)
		sink.File, sink.Partial = opts.File, start > 0
		dc := &damageCollector{Sink: sink}
		for i := use - 1; i >= 0; i-- {
			sp := spans[i]
			sr := io.NewSectionReader(cr, sp.Offset, sp.End-sp.Offset)
			if err := Scan(ctx, sr, ScanOptions{Offset: sp.Offset, SkipBefore: start}, dc); err != nil {
				return TailStats{BytesRead: cr.n}, err
			}
		}
		sink.A.Flush()
		if err := p.Close(); err != nil {
			return TailStats{BytesRead: cr.n}, err
		}
		if ring.complete > opts.Lines || start == 0 {
			stats := TailStats{BytesRead: cr.n, Segments: use, Whole: start == 0, Damage: dc.damage}
			return stats, ring.WriteLines(w)
		}
	}
}

// damageCollector passes everything on to its sink and keeps the damaged
// ranges.
type damageCollector struct {
	Sink
	damage []DamageRange
}

func (d *damageCollector) Damage(offset, end int64, torn bool, err error) {
	if len(d.damage) < maxListedGaps {
		d.damage = append(d.damage, DamageRange{Offset: offset, End: end, Torn: torn, Err: err})
	}
	d.Sink.Damage(offset, end, torn, err)
}

// countingReaderAt counts the bytes read through it.
type countingReaderAt struct {
	r io.ReaderAt
	n int64
}

func (c *countingReaderAt) ReadAt(b []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(b, off)
	c.n += int64(n)
	return n, err
}

// LineRing is an io.Writer that keeps the last n lines written to it
// (and an unfinished last line), and counts the complete lines: what tail
// prints of a stream it cannot read from the end. Memory is what the n
// lines hold.
type LineRing struct {
	n        int      // lines to keep
	lines    [][]byte // circular, the oldest at next once full
	next     int
	complete int
	partial  []byte
}

// NewLineRing returns a ring of the last n lines (n ≥ 1).
func NewLineRing(n int) *LineRing { return &LineRing{n: n, lines: make([][]byte, 0, min(n, 1024))} }

// Write implements io.Writer; it never fails.
func (r *LineRing) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			r.partial = append(r.partial, b...)
			break
		}
		r.partial = append(r.partial, b[:i+1]...)
		r.push()
		b = b[i+1:]
	}
	return n, nil
}

// push moves the partial line, now complete, into the ring.
func (r *LineRing) push() {
	r.complete++
	if len(r.lines) < r.n {
		r.lines = append(r.lines, slices.Clone(r.partial))
	} else {
		r.lines[r.next] = append(r.lines[r.next][:0], r.partial...)
		r.next = (r.next + 1) % len(r.lines)
	}
	r.partial = r.partial[:0]
}

// WriteLines writes the kept lines, oldest first, and the unfinished one.
func (r *LineRing) WriteLines(w io.Writer) error {
	for i := range r.lines {
		if _, err := w.Write(r.lines[(r.next+i)%len(r.lines)]); err != nil {
			return err
		}
	}
	if len(r.partial) > 0 {
		_, err := w.Write(r.partial)
		return err
	}
	return nil
}

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
	// Live says that a writer is still appending to the input: a torn
	// tail is a record being written, neither shown nor returned.
	Live bool
	// Whole makes [TailStreams] read every stream from its start (a
	// capture whose segments are out of order, whose end is not its
	// streams' end).
	Whole bool
	// Follow leaves the printer of the last pass open for the caller to
	// go on with (ds tail -f): once the lines are written, it writes to w,
	// and TailStats.Sink and TailStats.Resume say where to go on from.
	Follow bool
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
	// Segments counts the segments walked back over from the end.
	Segments int
	// Whole is set when the input was read from its start, because the
	// last segments did not hold enough lines.
	Whole bool
	// Damage lists the damaged ranges of what was read.
	Damage []DamageRange
	// Cursor is the cursor of what was read to the end ([Printer.Cursor]):
	// the last position of each stream rendered.
	Cursor segments.Cursor
	// Sink is, with TailOptions.Follow, the sink of the last pass, its
	// printer writing to w: the caller reads the input on into it from
	// Resume, the offset of the header of the last segment (the frames
	// shown already are duplicates, which it drops), and closes its
	// printer when done.
	Sink   *LogSink
	Resume int64
	// Copies is what the assembler found of copies in what was read
	// ([CopyCounts]): conflicts, and copies not compared.
	Copies []CopyCount
}

// tailStart is how far from the end of its input [Tail] starts reading
// first, in bytes; it doubles until enough lines are read.
const tailStart = 256 << 10

// Tail writes to w the last lines that [Printer] would print for the
// capture in r, of size bytes, reading only the end of the capture: it
// walks the capture from its end ([segments.BackWalker], which reads only
// headers and summaries) to the segment that holds the point 256 KiB
// before the end, and renders from that segment's header on, skipping the
// records (and zstd blocks, undecompressed) that start before the point,
// and counts the lines. While they are no more than the lines asked for
// (the first may be the end of a line begun earlier), it starts twice as
// far from the end, up to the whole input; then it renders again, writing
// the lines after the ones to skip. A last line without a newline counts
// as a line, as for tail(1). Memory does not grow with the lines asked
// for: nothing is kept but counts.
//
// Rendering from part-way, it shows no "start" line for a stream, and no
// frame older than where it started reading ([LogSink].Partial).
//
// It returns what it read, and the error of the input or of w.
func Tail(ctx context.Context, r io.ReaderAt, size int64, opts TailOptions, w io.Writer) (TailStats, error) {
	if opts.Lines <= 0 {
		opts.Lines = DefaultTailLines
	}
	cr := &countingReaderAt{r: r}
	walker := segments.NewBackWalker(cr, size)
	walker.StreamOnly = true // only where the spans start is used
	from := size             // the walk has found where the segments from here on start
	segs := 0
	var cursor segments.Cursor
	var copies []CopyCount
	var last *LogSink         // Follow: the sink of the last pass
	var lastOut *switchWriter // and what its printer writes to
	resume := int64(0)
	follow := func(st TailStats) TailStats {
		if opts.Follow && last != nil {
			lastOut.w = w
			st.Sink, st.Resume = last, resume
		}
		return st
	}
	render := func(start int64, out io.Writer) ([]DamageRange, error) {
		// The last pass's sink is dropped first: with a catalog of
		// 140 000 channels, two printers would hold it twice.
		last, lastOut = nil, nil
		if opts.Follow {
			lastOut = &switchWriter{w: out}
			out = lastOut
		}
		p := NewPrinter(out, opts.Log)
		sink := NewLogSink(p, opts.Log.Window)
		sink.File, sink.Partial = opts.File, start > 0
		if sink.Partial {
			// Read from part-way: streams start where reading starts.
			sink.A = segments.NewAssemblerWith(segments.AssemblerOptions{Memory: opts.Log.Window, Eager: true}, sink.item)
		}
		dc := &damageCollector{Sink: sink, live: opts.Live}
		sr := io.NewSectionReader(cr, from, size-from)
		err := segments.Scan(ctx, sr, segments.ScanOptions{Offset: from, SkipBefore: start}, dc)
		sink.A.Flush()
		if cerr := p.Close(); err == nil {
			err = cerr
		}
		cursor = p.Cursor()
		copies = CopyCounts(sink.A)
		last = sink
		return dc.damage, err
	}
	lastFrom, lastStart := int64(-1), int64(-1)
	for back := int64(tailStart); ; back *= 2 {
		start := max(0, size-back)
		for from > start {
			sp, err := walker.Prev()
			if err == io.EOF {
				break
			}
			if err != nil {
				return TailStats{BytesRead: cr.n}, err
			}
			from = sp.Offset
			if segs == 0 {
				resume = from
			}
			segs++
		}
		if from == lastFrom {
			// The same bytes as the last pass (one long segment, or
			// damage): this time render all of them.
			start = from
			if start == lastStart {
				continue
			}
		}
		lastFrom, lastStart = from, start
		if opts.Lines <= ringLines {
			// Few lines: keep them as they are rendered, in one pass.
			ring := NewLineRing(opts.Lines)
			damage, err := render(start, ring)
			if err != nil {
				return TailStats{BytesRead: cr.n}, err
			}
			if ring.Lines() > int64(opts.Lines) || start == 0 {
				return follow(TailStats{BytesRead: cr.n, Segments: segs, Whole: start == 0, Damage: damage, Cursor: cursor, Copies: copies}), ring.WriteLines(w)
			}
			continue
		}
		var count lineCounter
		if _, err := render(start, &count); err != nil {
			return TailStats{BytesRead: cr.n}, err
		}
		if lines := count.lines(); lines > int64(opts.Lines) || start == 0 {
			out := &lineSkipper{w: w, skip: max(0, lines-int64(opts.Lines))}
			damage, err := render(start, out)
			return follow(TailStats{BytesRead: cr.n, Segments: segs, Whole: start == 0, Damage: damage, Cursor: cursor, Copies: copies}), err
		}
	}
}

// switchWriter writes to w, which may change.
type switchWriter struct{ w io.Writer }

func (s *switchWriter) Write(b []byte) (int, error) { return s.w.Write(b) }

// ringLines is the most lines [Tail] keeps in memory; for more, it
// renders twice, counting, then writing.
const ringLines = 4096

// lineCounter is an io.Writer that counts the lines written to it, a last
// one without a newline included.
type lineCounter struct {
	n       int64
	partial bool
}

func (c *lineCounter) Write(b []byte) (int, error) {
	if len(b) > 0 {
		c.n += int64(bytes.Count(b, []byte{'\n'}))
		c.partial = b[len(b)-1] != '\n'
	}
	return len(b), nil
}

func (c *lineCounter) lines() int64 {
	if c.partial {
		return c.n + 1
	}
	return c.n
}

// lineSkipper writes to w what is written to it after its first skip
// lines.
type lineSkipper struct {
	w    io.Writer
	skip int64
}

func (s *lineSkipper) Write(b []byte) (int, error) {
	n := len(b)
	for s.skip > 0 && len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return n, nil
		}
		b = b[i+1:]
		s.skip--
	}
	if len(b) > 0 {
		if _, err := s.w.Write(b); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// damageCollector passes everything on to its sink and keeps the damaged
// ranges.
type damageCollector struct {
	segments.Sink
	live   bool // TailOptions.Live
	damage []DamageRange
}

func (d *damageCollector) Damage(offset, end int64, torn bool, err error) {
	if torn && d.live {
		return
	}
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

// Lines returns the lines written so far, a last one without a newline
// included.
func (r *LineRing) Lines() int64 {
	if len(r.partial) > 0 {
		return int64(r.complete) + 1
	}
	return int64(r.complete)
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

// WriteLines writes the kept lines, oldest first, and the unfinished one,
// which counts as a line (tail(1) counts it): then one kept line fewer.
func (r *LineRing) WriteLines(w io.Writer) error {
	first := 0
	if len(r.partial) > 0 && len(r.lines) == r.n {
		first = 1
	}
	for i := first; i < len(r.lines); i++ {
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

package views

import (
	"context"
	"io"
	"sort"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// TailStreams is [Tail] of a capture file of several streams, which ds
// log reads as one input per stream merged by time ([segments.Layout],
// [Merge]): it writes to w the last opts.Lines lines of that merged log.
// Each stream's segments (its sections of r, which is size bytes) are
// read from their end as Tail reads a file, so that what is read of
// each stream holds more lines than asked for (or all of it); then what
// was found of every stream is rendered once more, merged by time, and
// its last lines written. The last lines of the merged log are among the
// last lines of each stream, so they are those of the whole log; a line
// whose stream was read from part-way takes the time of that stream's
// first clock reading read, where reading the stream whole gives it the
// reading before (at most one drain tick earlier).
//
// opts.Follow is not supported (ds tail -f reads such a file as one
// input). Damaged ranges and header offsets are offsets in r. Memory:
// what Tail keeps, and what [Merge] keeps per stream, for at most
// maxOpen streams at once (0: all).
func TailStreams(ctx context.Context, r io.ReaderAt, size int64, streams []segments.StreamSections, opts TailOptions, maxOpen int, w io.Writer) (TailStats, error) {
	if opts.Lines <= 0 {
		opts.Lines = DefaultTailLines
	}
	var stats TailStats
	type part struct {
		vr          *sectionsReaderAt
		from, start int64 // in vr
	}
	parts := make([]part, len(streams))
	ids := make([]frames.StreamID, len(streams))
	whole := true
	for k, st := range streams {
		vr := newSectionsReaderAt(r, st.Sections)
		cr := &countingReaderAt{r: vr}
		var from, start int64
		var segs int
		var err error
		if !opts.Whole {
			from, start, segs, err = tailFrom(ctx, cr, vr.size, opts)
		}
		stats.BytesRead += cr.n
		stats.Segments += segs
		if err != nil {
			return stats, err
		}
		parts[k] = part{vr, from, start}
		ids[k] = st.Stream
		whole = whole && start == 0
	}
	stats.Whole = whole
	render := func(out io.Writer) ([]DamageRange, segments.Cursor, error) {
		p := NewPrinter(out, opts.Log)
		p.Expect(ids)
		sink := NewLogSink(p, opts.Log.Window)
		sink.File, sink.Partial = opts.File, !whole
		if sink.Partial {
			sink.A = segments.NewAssemblerWith(segments.AssemblerOptions{Memory: opts.Log.Window, Eager: true}, sink.item)
		}
		dc := &damageCollector{Sink: sink, live: opts.Live}
		ins := make([]MergeInput, len(parts))
		var err error
		for k, pt := range parts {
			cr := &countingReaderAt{r: pt.vr}
			ins[k] = MergeInput{
				Scan: func(ctx context.Context, s segments.Sink) error {
					sr := io.NewSectionReader(cr, pt.from, pt.vr.size-pt.from)
					return segments.Scan(ctx, sr, segments.ScanOptions{Offset: pt.from, SkipBefore: pt.start}, &realOffsets{s, pt.vr, size})
				},
				Sink: dc,
				Done: func(e error) {
					stats.BytesRead += cr.n
					if err == nil {
						err = e
					}
				},
			}
		}
		if merr := Merge(ctx, ins, nil, MergeOptions{MaxOpen: maxOpen}); err == nil {
			err = merr
		}
		sink.A.Flush()
		if cerr := p.Close(); err == nil {
			err = cerr
		}
		return dc.damage, p.Cursor(), err
	}
	if opts.Lines <= ringLines {
		ring := NewLineRing(opts.Lines)
		damage, cur, err := render(ring)
		stats.Damage, stats.Cursor = damage, cur
		if err != nil {
			return stats, err
		}
		return stats, ring.WriteLines(w)
	}
	var count lineCounter
	if _, _, err := render(&count); err != nil {
		return stats, err
	}
	out := &lineSkipper{w: w, skip: max(0, count.lines()-int64(opts.Lines))}
	damage, cur, err := render(out)
	stats.Damage, stats.Cursor = damage, cur
	return stats, err
}

// tailFrom finds, as [Tail] does, where to read the capture in r (size
// bytes) from so that what ds log prints of it from there holds more
// than opts.Lines lines, or all of it: the offset of a segment header
// (from) and the offset before which records are skipped (start; 0: the
// whole capture). It renders what it reads to count the lines.
func tailFrom(ctx context.Context, r *countingReaderAt, size int64, opts TailOptions) (from, start int64, segs int, err error) {
	walker := segments.NewBackWalker(r, size)
	from = size
	lastFrom, lastStart := int64(-1), int64(-1)
	for back := int64(tailStart); ; back *= 2 {
		start = max(0, size-back)
		for from > start {
			sp, err := walker.Prev()
			if err == io.EOF {
				break
			}
			if err != nil {
				return 0, 0, segs, err
			}
			from = sp.Offset
			segs++
		}
		if from == lastFrom {
			start = from
			if start == lastStart {
				continue
			}
		}
		lastFrom, lastStart = from, start
		if start == 0 {
			return from, 0, segs, nil
		}
		var count lineCounter
		p := NewPrinter(&count, opts.Log)
		sink := &LogSink{P: p, Partial: true}
		sink.A = segments.NewAssemblerWith(segments.AssemblerOptions{Memory: opts.Log.Window, Eager: true}, sink.item)
		sr := io.NewSectionReader(r, from, size-from)
		err := segments.Scan(ctx, sr, segments.ScanOptions{Offset: from, SkipBefore: start}, sink)
		sink.A.Flush()
		if cerr := p.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return 0, 0, segs, err
		}
		if count.lines() > int64(opts.Lines) {
			return from, start, segs, nil
		}
	}
}

// sectionsReaderAt reads sections of a file as one input: the
// segments of one stream (segments.StreamSections).
type sectionsReaderAt struct {
	r    io.ReaderAt
	secs []segments.Section
	at   []int64 // where each section starts in the input
	size int64
}

func newSectionsReaderAt(r io.ReaderAt, secs []segments.Section) *sectionsReaderAt {
	s := &sectionsReaderAt{r: r, secs: secs, at: make([]int64, len(secs))}
	for i, sec := range secs {
		s.at[i] = s.size
		s.size += sec.End - sec.Offset
	}
	return s
}

// section returns the index of the section that holds input offset off.
func (s *sectionsReaderAt) section(off int64) int {
	return max(0, sort.Search(len(s.at), func(i int) bool { return s.at[i] > off })-1)
}

// ReadAt implements io.ReaderAt.
func (s *sectionsReaderAt) ReadAt(b []byte, off int64) (int, error) {
	n := 0
	for i := s.section(off); len(b) > 0 && i < len(s.secs); i++ {
		sec := s.secs[i]
		rel := off - s.at[i]
		if rel >= sec.End-sec.Offset {
			continue
		}
		k := int(min(int64(len(b)), sec.End-sec.Offset-rel))
		m, err := s.r.ReadAt(b[:k], sec.Offset+rel)
		n += m
		if m < k {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return n, err
		}
		b, off = b[k:], off+int64(k)
	}
	if len(b) > 0 {
		return n, io.EOF
	}
	return n, nil
}

// real returns the file offset of input offset off; an offset at the end
// of a section (end) is that section's end.
func (s *sectionsReaderAt) real(off int64, end bool) int64 {
	if len(s.secs) == 0 {
		return off
	}
	if end && off > 0 {
		i := s.section(off - 1)
		return s.secs[i].Offset + off - s.at[i]
	}
	i := s.section(off)
	return s.secs[i].Offset + off - s.at[i]
}

// realOffsets passes everything on to its Sink with the offsets of the
// file the sections are of (size bytes): a torn tail that does not end
// the file is damage.
type realOffsets struct {
	segments.Sink
	vr   *sectionsReaderAt
	size int64
}

func (o *realOffsets) Header(h segments.SegmentHeader) {
	h.Offset = o.vr.real(h.Offset, false)
	o.Sink.Header(h)
}

func (o *realOffsets) Damage(offset, end int64, torn bool, err error) {
	offset, end = o.vr.real(offset, false), o.vr.real(end, true)
	o.Sink.Damage(offset, end, torn && end == o.size, err)
}

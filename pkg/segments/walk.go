package segments

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// Span is one part of a capture found by a [BackWalker]: a segment, from
// its header to the end of its summary, or input a reader must read
// record by record.
type Span struct {
	// Offset and End delimit the span's bytes of input: [Offset, End).
	Offset, End int64
	// Header is the segment's header; nil when the span does not start
	// with a readable one (input before the first header, or a damaged
	// header).
	Header *wireformat.Header
	// HeaderSize is the size in bytes of Header as stored.
	HeaderSize int64
	// Summary is the segment's SegmentSummary, when it ends the span and
	// agrees with itself and with Header; nil otherwise, and then the span
	// must be read to know what it holds (a segment of a writer that was
	// killed, of an older writer, or whose summary is damaged).
	Summary *wireformat.Summary
}

// Sizes of what a BackWalker reads at a time, in bytes: the end of a span
// where a summary may be (most are a few hundred bytes, all at most
// wireformat.MaxSummarySize), and the largest chunk it reads backwards
// looking for a segment header's magic (it starts at 64 KiB and doubles).
const (
	summaryProbe = 4 << 10
	magicChunk   = 1 << 20
)

// A BackWalker walks a capture from its end to its start, one [Span] at
// a time, reading only segment headers and summaries where the writer
// left them (ds-format(5), READING, "Reading from the end"). Where a segment has no
// summary it finds the segment's start by the magic (which appears in a
// capture only where a header starts) and returns the span unsummarised.
//
// Nothing it returns is trusted over the frames: a summary counts only
// if its record checks, it agrees with itself ([wireformat.Summary.Check])
// and the header it points back to checks and carries the same segment id
// and sequence number. A summary that fails any of these is not returned,
// and the span is returned for reading instead.
//
// It reads with ReadAt, so it needs a file (or any io.ReaderAt), not a
// pipe. It holds at most one summary probe, one header and one magic
// chunk: about 1 MiB, or a header's size when larger.
type BackWalker struct {
	r   io.ReaderAt
	end int64 // the walk has returned everything from end on
	// buf holds input[bufOff:bufOff+len(buf)], the last bytes read before
	// a header: a walk over many small segments finds the next ones in it.
	buf    []byte
	bufOff int64
	hbuf   []byte // a header being read
	// unsummarised is set when the last span had no summary.
	unsummarised bool
	// BytesRead counts the bytes read so far, for tests and benchmarks.
	BytesRead int64
	// StreamOnly has the walk decode of each header only what says which
	// stream it is of (wireformat.ParseHeaderStream): Span.Header has no
	// Writer and no Channels then.
	StreamOnly bool
	// MaxRead, when positive, bounds the bytes the walk reads in all: a
	// read that would pass it returns an error wrapping [ErrReadBudget]
	// instead, before anything is allocated for it (a 16 MiB header is not
	// read by a walk that may read 4 MiB).
	MaxRead int64
}

// ErrReadBudget is the error of a [BackWalker] read that would pass its
// MaxRead.
var ErrReadBudget = errors.New("segments: walk read budget spent")

// NewBackWalker returns a walker of the size bytes of r.
func NewBackWalker(r io.ReaderAt, size int64) *BackWalker {
	return &BackWalker{r: r, end: size}
}

// Prev returns the span that ends where the previous call's span began
// (the first call: the end of the input). It returns io.EOF once the
// start of the input is reached, and any read error.
func (w *BackWalker) Prev() (Span, error) {
	if w.end <= 0 {
		return Span{}, io.EOF
	}
	end := w.end
	sp, ok, err := w.summarised(end)
	if err != nil {
		return Span{}, err
	}
	if !ok {
		if sp, err = w.unsummarisedSpan(end); err != nil {
			return Span{}, err
		}
	}
	w.unsummarised = !ok
	w.end = sp.Offset
	return sp, nil
}

// All returns every span of the input, in input order.
func (w *BackWalker) All() ([]Span, error) {
	var spans []Span
	for {
		sp, err := w.Prev()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		spans = append(spans, sp)
	}
	for i, j := 0, len(spans)-1; i < j; i, j = i+1, j-1 {
		spans[i], spans[j] = spans[j], spans[i]
	}
	return spans, nil
}

// readAt returns input[off:off+n], from the walker's buffer if it holds
// them, else read into it. The bytes are valid until the next call.
func (w *BackWalker) readAt(off int64, n int) ([]byte, error) {
	if off >= w.bufOff && off+int64(n) <= w.bufOff+int64(len(w.buf)) {
		return w.buf[off-w.bufOff:][:n], nil
	}
	b, err := w.read(w.buf, off, n)
	if err != nil {
		w.buf = b[:0]
		return nil, err
	}
	w.buf, w.bufOff = b, off
	return b, nil
}

// probe returns the n bytes before end. After a span without a summary
// (a region of small segments or of bytes that are not DSS, where the
// next span is likely near), it reads 64 KiB at a time, so that the
// buffer serves the next spans too.
func (w *BackWalker) probe(end int64, n int64) ([]byte, error) {
	if !w.unsummarised || end-n >= w.bufOff && end <= w.bufOff+int64(len(w.buf)) {
		return w.readAt(end-n, int(n))
	}
	m := min(end, max(n, 64<<10))
	b, err := w.readAt(end-m, int(m))
	if err != nil {
		return nil, err
	}
	return b[m-n:], nil
}

// read reads input[off:off+n] into buf, grown as needed.
func (w *BackWalker) read(buf []byte, off int64, n int) ([]byte, error) {
	if w.MaxRead > 0 && w.BytesRead+int64(n) > w.MaxRead {
		return buf[:0], fmt.Errorf("segments: read of %d bytes at %d: %w (%d of %d bytes read)", n, off, ErrReadBudget, w.BytesRead, w.MaxRead)
	}
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	b := buf[:n]
	m, err := w.r.ReadAt(b, off)
	w.BytesRead += int64(m)
	if m == n {
		return b, nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return b, fmt.Errorf("segments: read at %d: %w", off, err)
}

// summarised returns the segment whose checked summary ends at end, if
// there is one.
func (w *BackWalker) summarised(end int64) (Span, bool, error) {
	var sum wireformat.Summary
	var start int64
	found := false
	n := min(summaryProbe, end)
	b, err := w.probe(end, n)
	if err != nil {
		return Span{}, false, err
	}
	if size, ok := wireformat.SummaryRecordSize(b); ok && int64(size) > n && int64(size) <= end {
		// Larger than the probe: its size field says how much to read.
		n = int64(size)
		if b, err = w.readAt(end-n, int(n)); err != nil {
			return Span{}, false, err
		}
	}
	if s, i, ok := wireformat.FindSummary(b); ok {
		sum, start, found = s, end-n+int64(i), true
	}
	if !found || start-sum.Length < 0 {
		return Span{}, false, nil
	}
	hdrOff := start - sum.Length
	h, size, err := w.headerAt(hdrOff, start)
	if err != nil || h == nil {
		return Span{}, false, err
	}
	id, _ := sum.ID()
	if h.SegmentID != id || h.Seq != sum.Seq {
		return Span{}, false, nil
	}
	return Span{Offset: hdrOff, End: end, Header: h, HeaderSize: size, Summary: &sum}, true, nil
}

// headerAt reads the segment header at off, which must end by limit. It
// returns nil (and no error) when there is none that checks.
func (w *BackWalker) headerAt(off, limit int64) (*wireformat.Header, int64, error) {
	if limit-off < wireformat.HeaderOverhead {
		return nil, 0, nil
	}
	b, err := w.read(w.hbuf, off, wireformat.HeaderPrefixSize)
	w.hbuf = b[:0]
	if err != nil {
		return nil, 0, err
	}
	if string(b[:len(wireformat.Magic)]) != wireformat.Magic {
		return nil, 0, nil
	}
	size := int64(binary.LittleEndian.Uint32(b[10:])) + wireformat.HeaderOverhead
	if size > wireformat.MaxHeaderSize+wireformat.HeaderOverhead || off+size > limit {
		return nil, 0, nil
	}
	if size > largeHeader && !w.StreamOnly && (w.MaxRead <= 0 || w.BytesRead+2*size <= w.MaxRead) {
		// Decoded from the input a piece at a time, as a Reader of a
		// file does: never its 16 MiB beside its descriptors. It reads
		// the header twice; one it does not answer for is read whole.
		if h, ok := wireformat.ParseHeaderAt(w.r, off, int(size), nil); ok {
			w.BytesRead += 2 * size
			return &h, size, nil
		}
	}
	b, err = w.read(w.hbuf, off, int(size))
	w.hbuf = b[:0]
	if cap(b) > 1<<20 {
		// Kept for the next header, a 16 MiB one's buffer would be held
		// beside the reader that reads its segment (the decoded header
		// does not alias it).
		w.hbuf = nil
	}
	if err != nil {
		return nil, 0, err
	}
	parse := wireformat.ParseHeader
	if w.StreamOnly {
		parse = wireformat.ParseHeaderStream
	}
	h, n, err := parse(b)
	if err != nil || int64(n) != size {
		return nil, 0, nil
	}
	return &h, size, nil
}

// unsummarisedSpan returns the span that ends at end and starts at the last
// magic before it, or at the start of the input when there is none.
func (w *BackWalker) unsummarisedSpan(end int64) (Span, error) {
	magic := []byte(wireformat.Magic)
	hi := end
	if end > w.bufOff && end <= w.bufOff+int64(len(w.buf)) {
		// The buffer holds what is just before end (many small segments,
		// or bytes that are not DSS): look there first.
		if i := bytes.LastIndex(w.buf[:end-w.bufOff], magic); i >= 0 {
			return w.spanAt(w.bufOff+int64(i), end)
		}
		hi = w.bufOff
	}
	for chunk := int64(64 << 10); hi > 0; chunk = min(2*chunk, magicChunk) {
		lo := max(0, hi-chunk)
		// The chunk reaches len(magic)−1 bytes past hi, so that a magic
		// across two chunks is found, but never past end.
		top := min(end, hi+int64(len(magic)-1))
		b, err := w.readAt(lo, int(top-lo))
		if err != nil {
			return Span{}, err
		}
		if i := bytes.LastIndex(b, magic); i >= 0 {
			return w.spanAt(lo+int64(i), end)
		}
		hi = lo
	}
	return Span{Offset: 0, End: end}, nil
}

// spanAt returns the unsummarised span [off, end), whose header, if it
// checks, is at off.
func (w *BackWalker) spanAt(off, end int64) (Span, error) {
	sp := Span{Offset: off, End: end}
	h, size, err := w.headerAt(off, end)
	if err != nil {
		return Span{}, err
	}
	sp.Header, sp.HeaderSize = h, size
	return sp, nil
}

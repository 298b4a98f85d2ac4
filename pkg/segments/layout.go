package segments

import (
	"context"
	"io"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// Section is the bytes [Offset, End) of a capture file.
type Section struct {
	Offset, End int64
}

// StreamSections is where one stream's segments lie in a capture file:
// the sections that hold them, in file order, each starting at a segment
// header of the stream (the first also at the start of the file, when
// bytes that no header claims come first) and running to the next
// header of another stream. A section holds every span that follows its
// header without a readable header of its own (a damaged header, bytes
// that are not DSS), as a reader of the whole file reads them: after the
// segment before.
type StreamSections struct {
	Stream   frames.StreamID
	Sections []Section
}

// Layout finds where the streams of the DSS capture in r (size bytes)
// lie: one StreamSections per stream whose segment headers it holds, in
// the order of each stream's first header in the file. It walks the
// capture from its end with a [BackWalker], so it reads only headers and
// summaries where the writer left them (segments without a summary are
// searched backwards for their header's magic, so reading them is what
// it costs). It returns no streams for a capture without a readable
// header, and the walker's read error. bytesRead counts what it read.
//
// The views read a capture of several streams as one input per stream
// ([ScanSections] of each one's sections), merged by time as separate
// files are (ds(1) ds log, "order"). Memory: 24 bytes per span, and the
// sections of each stream.
func Layout(r io.ReaderAt, size int64) (streams []StreamSections, bytesRead int64, err error) {
	type span struct {
		off, end int64
		s        int32 // index in streams; -1: no header
	}
	w := NewBackWalker(r, size)
	w.StreamOnly = true // a span's stream is all Layout keeps of its header
	var spans []span    // from the end
	index := map[frames.StreamID]int32{}
	var ids []frames.StreamID // by index, in the walk's order
	for {
		sp, err := w.Prev()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, w.BytesRead, err
		}
		s := int32(-1)
		if sp.Header != nil {
			id := sp.Header.Stream.Stream
			i, ok := index[id]
			if !ok {
				i = int32(len(ids))
				index[id] = i
				ids = append(ids, id)
			}
			s = i
		}
		spans = append(spans, span{sp.Offset, sp.End, s})
	}
	if len(ids) == 0 {
		return nil, w.BytesRead, nil
	}
	// In file order: streams by their first header; each span joins the
	// section before it when it continues it (the same stream, or no
	// header).
	order := make([]int, len(ids)) // index → position in streams, +1
	cur := -1                      // streams index of the last header's stream
	lead := int64(-1)              // where bytes before the first header start
	for i := len(spans) - 1; i >= 0; i-- {
		sp := spans[i]
		if sp.s < 0 {
			if cur < 0 {
				if lead < 0 {
					lead = sp.off
				}
				continue
			}
			secs := streams[cur].Sections
			secs[len(secs)-1].End = sp.end
			continue
		}
		k := order[sp.s] - 1
		if k < 0 {
			streams = append(streams, StreamSections{Stream: ids[sp.s]})
			k = len(streams) - 1
			order[sp.s] = k + 1
		}
		secs := streams[k].Sections
		switch {
		case k == cur && len(secs) > 0 && secs[len(secs)-1].End == sp.off:
			secs[len(secs)-1].End = sp.end
		case cur < 0 && lead >= 0:
			streams[k].Sections = append(secs, Section{lead, sp.end})
		default:
			streams[k].Sections = append(secs, Section{sp.off, sp.end})
		}
		cur = k
	}
	return streams, w.BytesRead, nil
}

// ScanSections is [Scan] of the sections of r in turn, into one sink:
// each is read as the part of a capture it is (its header offsets and
// damaged ranges are offsets in r). A record cut short by the end of a
// section that does not end the input (size bytes) is damage there, not
// a torn tail: a reader of the whole input finds the next header after
// it. It returns the first error of a Scan, and the bytes read.
func ScanSections(ctx context.Context, r io.ReaderAt, size int64, secs []Section, opts ScanOptions, sink Sink) (int64, error) {
	var n int64
	for _, sec := range secs {
		cr := &CountingReader{R: io.NewSectionReader(r, sec.Offset, sec.End-sec.Offset)}
		o := opts
		o.Offset = sec.Offset
		var s Sink = sink
		if sec.End < size {
			s = cutSink{sink}
		}
		err := Scan(ctx, cr, o, s)
		n += cr.N()
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// cutSink passes everything on to its Sink, a torn tail as plain damage
// (the end of a section is no end of the input), and Idle to an Idler.
type cutSink struct{ Sink }

func (c cutSink) Damage(offset, end int64, torn bool, err error) {
	c.Sink.Damage(offset, end, false, err)
}

func (c cutSink) Idle(quiet bool) {
	if i, ok := c.Sink.(Idler); ok {
		i.Idle(quiet)
	}
}

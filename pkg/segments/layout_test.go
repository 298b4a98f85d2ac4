package segments

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// layoutSegments writes n segments of stream s (one frame each, from
// position first) to buf, and the last one that ends it.
func layoutSegments(t *testing.T, buf *bytes.Buffer, s frames.StreamID, first, n int) {
	t.Helper()
	cat := []frames.ChannelDescriptor{{Stream: s, ID: 1, Name: "proc.x.stdout", Content: frames.TextStream()}}
	w, err := NewWriter(buf, frames.StreamDescriptor{Stream: s}, cat, WriterOptions{FirstSeq: uint64(first)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := w.WriteFrame(frames.Frame{Channel: 1, Position: frames.Position(first + i), Payload: []byte("x\n")}); err != nil {
			t.Fatal(err)
		}
		if err := w.EndSegment(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestLayout: the streams of a capture, each with its sections in file
// order; consecutive segments of a stream are one section; bytes before
// the first header belong to the first stream's; a single stream is one
// section.
func TestLayout(t *testing.T) {
	a, b := frames.StreamID{Node: "a", Life: 1}, frames.StreamID{Node: "b", Life: 1}
	var buf bytes.Buffer
	buf.WriteString("junk before any header")
	layoutSegments(t, &buf, a, 0, 3)
	endA := int64(buf.Len())
	layoutSegments(t, &buf, b, 0, 2)
	endB := int64(buf.Len())
	layoutSegments(t, &buf, a, 3, 1)
	size := int64(buf.Len())
	streams, _, err := Layout(bytes.NewReader(buf.Bytes()), size)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprint([]StreamSections{
		{Stream: a, Sections: []Section{{0, endA}, {endB, size}}},
		{Stream: b, Sections: []Section{{endA, endB}}},
	})
	if got := fmt.Sprint(streams); got != want {
		t.Errorf("got %s, want %s", got, want)
	}

	one := buf.Bytes()[:endA]
	if streams, _, err := Layout(bytes.NewReader(one), endA); err != nil || fmt.Sprint(streams) != fmt.Sprint([]StreamSections{{Stream: a, Sections: []Section{{0, endA}}}}) {
		t.Errorf("one stream: %v %v", streams, err)
	}
	if streams, _, err := Layout(bytes.NewReader([]byte("not a capture")), 13); err != nil || streams != nil {
		t.Errorf("no header: %v %v", streams, err)
	}
}

// TestScanSections: sections read in turn report file offsets, and a
// record cut short by a section's end that does not end the input is
// damage, not a torn tail.
func TestScanSections(t *testing.T) {
	a, b := frames.StreamID{Node: "a", Life: 1}, frames.StreamID{Node: "b", Life: 1}
	var buf bytes.Buffer
	layoutSegments(t, &buf, a, 0, 2)
	endA := int64(buf.Len())
	layoutSegments(t, &buf, b, 0, 1)
	endB := int64(buf.Len())
	layoutSegments(t, &buf, a, 2, 1)
	file := buf.Bytes()
	// Cut a's first run 3 bytes short, as a killed writer leaves it,
	// and b's run follows.
	cut := append(append(append([]byte(nil), file[:endA-3]...), file[endA:endB]...), file[endB:]...)
	size := int64(len(cut))
	shift := int64(3)
	streams, _, err := Layout(bytes.NewReader(cut), size)
	if err != nil || len(streams) != 2 {
		t.Fatal(streams, err)
	}
	var sink recordingSink
	n, err := ScanSections(context.Background(), bytes.NewReader(cut), size, streams[0].Sections, ScanOptions{}, &sink)
	if err != nil {
		t.Fatal(err)
	}
	if want := size - (endB - shift - (endA - shift)); n != want {
		t.Errorf("read %d bytes, want %d", n, want)
	}
	if len(sink.damage) != 1 || sink.damage[0].torn || sink.damage[0].end != endA-shift {
		t.Errorf("damage %+v", sink.damage)
	}
	if !slices.Contains(sink.headers, endB-shift) || slices.ContainsFunc(sink.headers, func(off int64) bool { return off > endA-shift && off < endB-shift }) {
		t.Errorf("header offsets %v: want one at %d, none in b's run", sink.headers, endB-shift)
	}
	if sink.frames != 3 { // a's, not b's
		t.Errorf("%d frames", sink.frames)
	}
}

// recordingSink notes header offsets, frames and damage.
type recordingSink struct {
	headers []int64
	frames  int
	damage  []struct {
		off, end int64
		torn     bool
	}
}

func (r *recordingSink) Header(h SegmentHeader)                         { r.headers = append(r.headers, h.Offset) }
func (r *recordingSink) Channel(frames.ChannelDescriptor)               {}
func (r *recordingSink) Frame(frames.StreamID, frames.Frame)            { r.frames++ }
func (r *recordingSink) Ended(frames.StreamID)                          {}
func (r *recordingSink) Trimmed(frames.StreamID, frames.Position, bool) {}
func (r *recordingSink) Damage(off, end int64, torn bool, err error) {
	r.damage = append(r.damage, struct {
		off, end int64
		torn     bool
	}{off, end, torn})
}

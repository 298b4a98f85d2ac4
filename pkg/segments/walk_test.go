package segments

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// summarisedCapture writes n frames of stream desc on channels 1 and 2
// (every tenth on channel 1, kept in the summaries) in segments of about
// segSize bytes, and closes it unless open.
func summarisedCapture(t *testing.T, desc frames.StreamDescriptor, n, segSize int, comp Compression, open bool) []byte {
	t.Helper()
	return summarisedCaptureWith(t, desc, n, segSize, WriterOptions{Compression: comp}, open)
}

// summarisedCaptureWith is summarisedCapture with more writer options.
func summarisedCaptureWith(t *testing.T, desc frames.StreamDescriptor, n, segSize int, opts WriterOptions, open bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	s := desc.Stream
	opts.SegmentSize, opts.BlockSize, opts.Rand = int64(segSize), 2<<10, detRand(uint64(len(s.Node)))
	opts.Keep = func(ch frames.ChannelID, payload []byte) Keep {
		if ch == 1 {
			return KeepFrame
		}
		return KeepNone
	}
	w, err := NewWriter(&buf, desc, []frames.ChannelDescriptor{channel(s, 1), channel(s, 2)}, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		f := frames.Frame{Channel: 2, Position: frames.Position(i), Payload: fmt.Appendf(nil, "line %d of the capture\n", i)}
		if i%10 == 0 {
			f = frames.Frame{Channel: 1, Position: frames.Position(i), Payload: fmt.Appendf(nil, `{"i":%d}`, i)}
		}
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
		if i%16 == 15 {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if open {
		err = w.Flush()
	} else {
		err = w.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// walk returns the spans of data and the bytes the walker read.
func walk(t *testing.T, data []byte) ([]Span, int64) {
	t.Helper()
	w := NewBackWalker(bytes.NewReader(data), int64(len(data)))
	spans, err := w.All()
	if err != nil {
		t.Fatal(err)
	}
	return spans, w.BytesRead
}

// headerOffsets lists where the reader finds segment headers.
func headerOffsets(t *testing.T, data []byte) []int64 {
	var offs []int64
	for _, e := range readAll(t, data, ReaderOptions{}).entries {
		if e.Kind == EntrySegment {
			offs = append(offs, e.Offset)
		}
	}
	return offs
}

// checkSpans checks that spans tile data from 0 to its end, each starting
// at a header the reader finds, and that the summarised ones count what
// reading their bytes finds.
func checkSpans(t *testing.T, data []byte, spans []Span) {
	t.Helper()
	at := int64(0)
	for i, sp := range spans {
		if sp.Offset != at || sp.End <= sp.Offset {
			t.Fatalf("span %d is [%d, %d), want it to start at %d", i, sp.Offset, sp.End, at)
		}
		at = sp.End
		if sp.Summary == nil {
			continue
		}
		res := readAll(t, data[sp.Offset:sp.End], ReaderOptions{Offset: sp.Offset})
		var frames, bytes uint64
		for _, e := range res.entries {
			if e.Kind == EntryFrame {
				frames++
				bytes += uint64(len(e.Frame.Payload))
			}
		}
		if len(res.corrupt) > 0 || frames != sp.Summary.Frames || bytes != sp.Summary.Bytes {
			t.Errorf("span %d [%d, %d): summary says %d frames, %d bytes; reading finds %d, %d (damage %v)", i, sp.Offset, sp.End, sp.Summary.Frames, sp.Summary.Bytes, frames, bytes, res.corrupt)
		}
	}
	if at != int64(len(data)) {
		t.Fatalf("spans end at %d of %d bytes", at, len(data))
	}
}

func TestBackWalker(t *testing.T) {
	for _, comp := range []Compression{CompressNone, CompressZstd} {
		t.Run(comp.String(), func(t *testing.T) {
			data := summarisedCapture(t, descS, 3000, 4<<10, comp, false)
			spans, _ := walk(t, data)
			checkSpans(t, data, spans)
			offs := headerOffsets(t, data)
			if len(spans) != len(offs) || len(spans) < 5 {
				t.Fatalf("%d spans, %d headers", len(spans), len(offs))
			}
			var frames uint64
			for i, sp := range spans {
				if sp.Summary == nil || sp.Header == nil || sp.Offset != offs[i] {
					t.Fatalf("span %d: %+v", i, sp)
				}
				frames += sp.Summary.Frames
				if sp.Header.Seq != uint64(i) || len(sp.Header.Channels) != 2 {
					t.Errorf("span %d: header seq %d, %d channels", i, sp.Header.Seq, len(sp.Header.Channels))
				}
				if !sp.Summary.KeptAll || len(sp.Summary.Kept) == 0 && sp.Summary.Frames >= 10 {
					t.Errorf("span %d: kept %d frames, all %v", i, len(sp.Summary.Kept), sp.Summary.KeptAll)
				}
			}
			if frames != 3000 || !spans[len(spans)-1].Summary.Ended {
				t.Errorf("summaries count %d frames, last ended %v", frames, spans[len(spans)-1].Summary.Ended)
			}
			// Headers and summaries only: a small part of the input.
			big := summarisedCapture(t, descS, 40000, 256<<10, comp, false)
			if _, read := walk(t, big); read > int64(len(big))/5 {
				t.Errorf("read %d bytes of %d", read, len(big))
			}
		})
	}
}

// TestSummaryStoredBlocks: blocks stored plain (a writer that does not
// wait on compression) are counted in the segment they land in, whether
// or not the segment rotates inside them.
func TestSummaryStoredBlocks(t *testing.T) {
	for _, segSize := range []int{3 << 10, 64 << 10} {
		data := summarisedCaptureWith(t, descS, 5000, segSize, WriterOptions{Compression: CompressZstd, StoreWhenBusy: true, Busy: func() bool { return true }}, false)
		spans, _ := walk(t, data)
		checkSpans(t, data, spans)
		for i, sp := range spans {
			if sp.Summary == nil {
				t.Fatalf("segment size %d: span %d has no summary", segSize, i)
			}
		}
	}
}

// TestBackWalkerUntrusted: a capture cut inside a summary, a summary with
// a flipped byte, one that lies about its segment's start or its counts,
// and input without summaries are walked by the magic instead, span by
// span, and nothing else is lost.
func TestBackWalkerUntrusted(t *testing.T) {
	good := summarisedCapture(t, descS, 2000, 4<<10, CompressNone, false)
	spans, _ := walk(t, good)
	last := spans[len(spans)-1]
	mid := spans[len(spans)/2]
	sumAt := func(sp Span) int64 { return sp.End - int64(len(mustSummary(t, sp))) }

	rewrite := func(sp Span, edit func(*wireformat.Summary)) []byte {
		s := *sp.Summary
		edit(&s)
		rec, err := wireformat.AppendSummary(nil, &s)
		if err != nil {
			t.Fatal(err)
		}
		out := append([]byte(nil), good[:sumAt(sp)]...)
		out = append(out, rec...)
		return append(out, good[sp.End:]...)
	}
	tests := []struct {
		name string
		data []byte
		bad  []int // spans that must come back unsummarised
	}{
		{"cut inside the last summary", good[:last.End-7], []int{len(spans) - 1}},
		{"cut after the last frame", good[:sumAt(last)], []int{len(spans) - 1}},
		{"flipped byte in a summary", flip(good, sumAt(mid)+40), []int{len(spans) / 2}},
		{"summary names the wrong start", rewrite(mid, func(s *wireformat.Summary) { s.Length -= 10 }), []int{len(spans) / 2}},
		{"summary names another segment", rewrite(mid, func(s *wireformat.Summary) { s.Seq++ }), []int{len(spans) / 2}},
		{"summary counts a frame too many", rewrite(mid, func(s *wireformat.Summary) { s.Frames++ }), []int{len(spans) / 2}},
		{"summary counts more frames than positions", rewrite(mid, func(s *wireformat.Summary) {
			*s.Last = *s.First
		}), []int{len(spans) / 2}},
		{"garbage after the end", append(append([]byte(nil), good...), "not a capture"...), []int{len(spans) - 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := walk(t, tt.data)
			checkSpans(t, tt.data, got)
			if len(got) != len(spans) {
				t.Fatalf("%d spans, want %d", len(got), len(spans))
			}
			for i, sp := range got {
				bad := false
				for _, b := range tt.bad {
					bad = bad || b == i
				}
				if (sp.Summary == nil) != bad {
					t.Errorf("span %d [%d, %d): summary %v, want unsummarised %v", i, sp.Offset, sp.End, sp.Summary != nil, bad)
				}
			}
		})
	}
	t.Run("no summaries at all", func(t *testing.T) {
		// Today's captures of older writers: strip every summary record.
		var old []byte
		for _, sp := range spans {
			old = append(old, good[sp.Offset:sumAt(sp)]...)
		}
		got, _ := walk(t, old)
		checkSpans(t, old, got)
		if len(got) != len(spans) {
			t.Fatalf("%d spans, want %d", len(got), len(spans))
		}
		for i, sp := range got {
			if sp.Summary != nil || sp.Header == nil || sp.Header.Seq != uint64(i) {
				t.Errorf("span %d: %+v", i, sp)
			}
		}
	})
	t.Run("not a capture", func(t *testing.T) {
		got, _ := walk(t, bytes.Repeat([]byte("text\n"), 1<<18))
		if len(got) != 1 || got[0].Header != nil || got[0].Offset != 0 {
			t.Errorf("spans %+v", got)
		}
	})
	t.Run("concatenated captures", func(t *testing.T) {
		other := summarisedCapture(t, descT, 500, 2<<10, CompressZstd, true)
		cat := append(append(append([]byte(nil), good...), other...), good[:1000]...)
		got, _ := walk(t, cat)
		checkSpans(t, cat, got)
		offs := headerOffsets(t, cat)
		if len(got) != len(offs) {
			t.Fatalf("%d spans, %d headers", len(got), len(offs))
		}
	})
}

func mustSummary(t *testing.T, sp Span) []byte {
	t.Helper()
	rec, err := wireformat.AppendSummary(nil, sp.Summary)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func flip(data []byte, at int64) []byte {
	out := append([]byte(nil), data...)
	out[at] ^= 0x20
	return out
}

// TestSummaryKeeps checks what a summary keeps: ends of KeepEnds
// channels, every KeepFrame frame within its room, in position order.
func TestSummaryKeeps(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, descS, nil, WriterOptions{Compression: CompressZstd, Rand: detRand(3), Keep: func(ch frames.ChannelID, p []byte) Keep {
		switch {
		case ch == 1:
			return KeepEnds
		case ch == 3 && bytes.Contains(p, []byte("loss")):
			return KeepFrame
		}
		return KeepNone
	}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		ch, p := frames.ChannelID(2), fmt.Appendf(nil, "line %d\n", i)
		switch {
		case i%100 == 0:
			ch, p = 1, fmt.Appendf(nil, `{"clock":%d}`, i)
		case i == 555:
			ch, p = 3, []byte(`{"loss":1}`)
		case i%50 == 1:
			ch, p = 3, []byte(`{"ok":1}`)
		}
		if err := w.WriteFrame(frames.Frame{Channel: ch, Position: frames.Position(i), Payload: p}); err != nil {
			t.Fatal(err)
		}
		if i%300 == 0 {
			w.Flush()
		}
	}
	w.Close()
	spans, _ := walk(t, buf.Bytes())
	if len(spans) != 1 || spans[0].Summary == nil {
		t.Fatalf("spans %+v", spans)
	}
	var got []string
	for _, k := range spans[0].Summary.Kept {
		got = append(got, fmt.Sprintf("%d@%d:%s", k.Channel, k.Position, k.Payload))
	}
	want := `["1@0:{\"clock\":0}","3@555:{\"loss\":1}","1@900:{\"clock\":900}"]`
	if b, _ := json.Marshal(got); string(b) != want {
		t.Errorf("kept %s, want %s", b, want)
	}
}

// TestReaderSkipBefore: frames and blocks that start before SkipBefore are
// skipped, headers and later records are not.
func TestReaderSkipBefore(t *testing.T) {
	for _, comp := range []Compression{CompressNone, CompressZstd} {
		data := summarisedCapture(t, descS, 3000, 16<<10, comp, false)
		all := readAll(t, data, ReaderOptions{})
		cut := int64(len(data)) * 2 / 3
		res := readAll(t, data, ReaderOptions{SkipBefore: cut})
		var want, got []Entry
		for _, e := range all.entries {
			if e.Kind == EntrySegment || e.Offset >= cut || e.Kind != EntryFrame {
				want = append(want, e)
			}
		}
		got = res.entries
		if len(got) != len(want) || len(res.corrupt) > 0 {
			t.Fatalf("%v: %d entries, want %d (damage %v)", comp, len(got), len(want), res.corrupt)
		}
		for i := range got {
			if got[i].Kind != want[i].Kind || got[i].Offset != want[i].Offset {
				t.Fatalf("%v: entry %d is %v at %d, want %v at %d", comp, i, got[i].Kind, got[i].Offset, want[i].Kind, want[i].Offset)
			}
		}
	}
}

package viewer

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/sources"
)

// storeCapture returns a capture of stream id holding "line P\n" at each
// position of from..to, on channel 1 (proc.job.stdout, text).
func storeCapture(t *testing.T, id frames.StreamID, from, to frames.Position) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := segments.NewWriter(&b, frames.StreamDescriptor{Stream: id}, []frames.ChannelDescriptor{
		{Stream: id, ID: 1, Name: "proc.job.stdout", Content: frames.TextStream()},
	}, segments.WriterOptions{Compression: segments.CompressNone})
	if err != nil {
		t.Fatal(err)
	}
	for p := from; p <= to; p++ {
		if err := w.WriteFrame(frames.Frame{Channel: 1, Position: p, Payload: fmt.Appendf(nil, "line %d\n", p)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.EndSegment(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// ingest stores a capture of id's positions from..to in the store at dir
// (made if need be).
func ingest(t *testing.T, dir string, id frames.StreamID, from, to frames.Position) {
	t.Helper()
	st, err := segments.CreateStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Ingest(context.Background(), "test", bytes.NewReader(storeCapture(t, id, from, to)), segments.IngestOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestFileStreamsStore: the streams of a store and of its inputs come
// from the store's listing.
func TestFileStreamsStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "st")
	a1, b1 := frames.StreamID{Node: "a", Life: 1}, frames.StreamID{Node: "b", Life: 1}
	ingest(t, dir, b1, 0, 1)
	ingest(t, dir, a1, 0, 3)
	set := sources.NewSet(sources.Options{})
	paths, _, err := set.ExpandStore(dir)
	if err != nil || len(paths) != 2 {
		t.Fatalf("inputs %q, %v", paths, err)
	}
	for i, id := range []frames.StreamID{a1, b1} {
		if ids, ok := fileStreams(set, paths[i]); !ok || len(ids) != 1 || ids[0] != id {
			t.Errorf("fileStreams(%q) = %v, %v", paths[i], ids, ok)
		}
	}
	if ids, ok := fileStreams(set, dir); !ok || len(ids) != 2 {
		t.Errorf("fileStreams(store) = %v, %v", ids, ok)
	}
}

func TestFrameLimit(t *testing.T) {
	s, o := frames.StreamID{Node: "s", Life: 1}, frames.StreamID{Node: "o", Life: 1}
	frame := func(id frames.StreamID, pos frames.Position) segments.Item {
		return segments.Item{Kind: segments.ItemFrame, Stream: id, Frame: frames.Frame{Channel: 1, Position: pos, Payload: []byte("x\n")}}
	}
	gap := func(id frames.StreamID, from, to frames.Position) segments.Item {
		return segments.Item{Kind: segments.ItemGap, Stream: id, Gap: segments.Gap{From: from, To: to, Count: uint64(to - from + 1)}}
	}
	for _, tc := range []struct {
		name  string
		after segments.Cursor
		max   int
		items []segments.Item
		want  string
	}{
		{"no cursor", nil, 2, []segments.Item{frame(s, 0), frame(s, 1), frame(s, 2)}, "s#1 0,s#1 1"},
		{"after the cursor", segments.Cursor{s: 3}, 2, []segments.Item{frame(s, 2), frame(s, 3), frame(s, 4), frame(s, 5), frame(s, 6)}, "s#1 2,s#1 3,s#1 4,s#1 5"},
		{"per stream", segments.Cursor{s: 0}, 1, []segments.Item{frame(s, 0), frame(o, 0), frame(s, 1), frame(o, 1), frame(s, 2)}, "s#1 0,o#1 0,s#1 1"},
		{"a gap before the last", nil, 2, []segments.Item{frame(s, 0), gap(s, 1, 2), frame(s, 3), gap(s, 4, 4), frame(s, 5)}, "s#1 0,s#1 gap 1,s#1 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			l := &frameLimit{after: tc.after, max: tc.max, taken: map[frames.StreamID]int{}}
			l.item = func(it segments.Item) {
				if it.Kind == segments.ItemGap {
					got = append(got, fmt.Sprintf("%s gap %d", it.Stream, it.Gap.From))
				} else {
					got = append(got, fmt.Sprintf("%s %d", it.Stream, it.Frame.Position))
				}
			}
			for _, it := range tc.items {
				l.emit(it)
			}
			if s := strings.Join(got, ","); s != tc.want {
				t.Errorf("passed %s, want %s", s, tc.want)
			}
		})
	}
}

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/views"
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

// positionsOf returns the positions of the frames of a DSS byte stream,
// in the order read.
func positionsOf(t *testing.T, b []byte) []frames.Position {
	t.Helper()
	var got []frames.Position
	sink := &posSink{got: &got}
	if err := segments.Scan(context.Background(), bytes.NewReader(b), segments.ScanOptions{}, sink); err != nil {
		t.Fatal(err)
	}
	return got
}

type posSink struct{ got *[]frames.Position }

func (s *posSink) Header(segments.SegmentHeader)                  {}
func (s *posSink) Channel(frames.ChannelDescriptor)               {}
func (s *posSink) Frame(_ frames.StreamID, f frames.Frame)        { *s.got = append(*s.got, f.Position) }
func (s *posSink) Trimmed(frames.StreamID, frames.Position, bool) {}
func (s *posSink) Ended(frames.StreamID)                          {}
func (s *posSink) Damage(offset, end int64, torn bool, err error) {}

func TestExpandStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "st")
	a1, a2, b1 := frames.StreamID{Node: "a", Life: 1}, frames.StreamID{Node: "a", Life: 2}, frames.StreamID{Node: "b\n", Life: 1}
	ingest(t, dir, b1, 0, 1)
	ingest(t, dir, a2, 0, 2)
	ingest(t, dir, a1, 0, 3)
	var stderr bytes.Buffer
	var o outcome
	paths, watches := expandInputs([]string{dir + "/"}, true, &stderr, &o)
	want := []string{dir + " (a#1)", dir + " (a#2)", dir + ` ("b\n#1")`}
	if strings.Join(paths, "|") != strings.Join(want, "|") {
		t.Fatalf("inputs %q, want %q", paths, want)
	}
	if len(watches) != 1 || stderr.Len() > 0 || o.status() != nil {
		t.Fatalf("watches %d, stderr %q, status %v", len(watches), stderr.String(), o.status())
	}
	for i, id := range []frames.StreamID{a1, a2, b1} {
		in, err := openInput(paths[i], nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(in.r)
		in.close()
		if err != nil {
			t.Fatal(err)
		}
		if ids, ok := fileStreams(paths[i]); !ok || len(ids) != 1 || ids[0] != id {
			t.Errorf("fileStreams(%q) = %v, %v", paths[i], ids, ok)
		}
		if got := positionsOf(t, b); len(got) == 0 || got[0] != 0 {
			t.Errorf("%s: positions %v", paths[i], got)
		}
	}
	if ids, ok := fileStreams(dir); !ok || len(ids) != 3 {
		t.Errorf("fileStreams(store) = %v, %v", ids, ok)
	}
	// A new stream is found by the watch, once.
	c1 := frames.StreamID{Node: "c", Life: 1}
	ingest(t, dir, c1, 0, 0)
	time.Sleep(dirPoll)
	if got := watches[0].poll(); len(got) != 1 || got[0] != dir+" (c#1)" {
		t.Errorf("poll = %q", got)
	}
	if got := watches[0].poll(); len(got) != 0 {
		t.Errorf("second poll = %q", got)
	}
}

func TestExpandEmptyStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "st")
	st, err := segments.CreateStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	var stderr bytes.Buffer
	var o outcome
	paths, _ := expandInputs([]string{dir}, false, &stderr, &o)
	if len(paths) != 0 || stderr.Len() > 0 || o.status() != nil {
		t.Fatalf("empty store: inputs %q, stderr %q, status %v", paths, stderr.String(), o.status())
	}
}

// readFor reads r in a goroutine until it has read n bytes or d passed.
func readFor(r io.Reader, n int, d time.Duration) []byte {
	got := make(chan []byte, 1)
	go func() {
		var b []byte
		buf := make([]byte, 4096)
		for len(b) < n {
			k, err := r.Read(buf)
			b = append(b, buf[:k]...)
			if err != nil {
				break
			}
		}
		got <- b
	}()
	select {
	case b := <-got:
		return b
	case <-time.After(d):
		return nil
	}
}

// TestStoreReaderFollow: a store input followed reads only the chunks
// that append to what it read, and everything again when a chunk of lower
// positions comes (the views drop the copies).
func TestStoreReaderFollow(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "st")
	id := frames.StreamID{Node: "s", Life: 1}
	ingest(t, dir, id, 0, 2)
	ingest(t, dir, id, 6, 8)
	src, err := openStoreSrc(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := newStoreReader(storeInputRef{src: src, id: id})
	defer r.Close()
	whole := func() []byte {
		rc, err := src.st.OpenStream(id)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	first := whole()
	b, err := io.ReadAll(r) // not followed: ends at the end
	if err != nil || !bytes.Equal(b, first) {
		t.Fatalf("read %d bytes (%v), want the %d of OpenStream", len(b), err, len(first))
	}
	r.follow(ctx)
	ingest(t, dir, id, 9, 10) // appends
	second := whole()
	if !bytes.HasPrefix(second, first) {
		t.Fatal("a chunk of higher positions did not append to the byte stream")
	}
	more := readFor(r, len(second)-len(first), 5*time.Second)
	if !bytes.Equal(more, second[len(first):]) {
		t.Fatalf("followed: got %d bytes, want the %d appended", len(more), len(second)-len(first))
	}
	ingest(t, dir, id, 3, 5) // lower positions: the byte stream changes inside
	third := whole()
	again := readFor(r, len(third), 5*time.Second)
	if !bytes.Equal(again, third) {
		t.Fatalf("after a chunk inside: got %d bytes, want the whole %d again", len(again), len(third))
	}
	if got := positionsOf(t, again); fmt.Sprint(got) != "[0 1 2 3 4 5 6 7 8 9 10]" {
		t.Errorf("positions %v", got)
	}
	cancel()
	if _, err := r.Read(make([]byte, 10)); err != context.Canceled {
		t.Errorf("read after cancel: %v, want context.Canceled", err)
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
		after views.Cursor
		max   int
		items []segments.Item
		want  string
	}{
		{"no cursor", nil, 2, []segments.Item{frame(s, 0), frame(s, 1), frame(s, 2)}, "s#1 0,s#1 1"},
		{"after the cursor", views.Cursor{s: 3}, 2, []segments.Item{frame(s, 2), frame(s, 3), frame(s, 4), frame(s, 5), frame(s, 6)}, "s#1 2,s#1 3,s#1 4,s#1 5"},
		{"per stream", views.Cursor{s: 0}, 1, []segments.Item{frame(s, 0), frame(o, 0), frame(s, 1), frame(o, 1), frame(s, 2)}, "s#1 0,o#1 0,s#1 1"},
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

// TestConsumerSave: saves are monotone per stream, go to the stores that
// hold the stream, and a cursor below a trim horizon counts what was
// trimmed as consumed.
func TestConsumerSave(t *testing.T) {
	tmp := t.TempDir()
	d1, d2 := filepath.Join(tmp, "one"), filepath.Join(tmp, "two")
	s, o := frames.StreamID{Node: "s", Life: 1}, frames.StreamID{Node: "o", Life: 1}
	ingest(t, d1, s, 0, 4)
	ingest(t, d1, s, 5, 9)
	ingest(t, d2, o, 0, 9)
	var stderr bytes.Buffer
	c, start, err := openConsumer("c", []string{d1, d2}, &stderr)
	if err != nil || len(start) != 0 || stderr.Len() > 0 {
		t.Fatalf("new consumer: start %v, stderr %q, err %v", start, stderr.String(), err)
	}
	if err := c.save(views.Cursor{s: 5, o: 2}); err != nil {
		t.Fatal(err)
	}
	if err := c.save(views.Cursor{s: 3, o: 4}); err != nil {
		t.Fatal(err)
	}
	saved := func(dir string) views.Cursor {
		src, err := openStoreSrc(dir)
		if err != nil {
			t.Fatal(err)
		}
		cur, ok, err := src.st.Consumer("c")
		if err != nil || !ok {
			t.Fatalf("%s: consumer c: %v %v", dir, ok, err)
		}
		return views.Cursor(cur)
	}
	if got := saved(d1).String(); got != "s#1=5" {
		t.Errorf("store one holds %s, want s#1=5 (monotone; o#1 is not its)", got)
	}
	if got := saved(d2).String(); got != "o#1=4" {
		t.Errorf("store two holds %s, want o#1=4", got)
	}
	// Trimmed past the cursor: said once, resumed at the horizon.
	src, _ := openStoreSrc(d1)
	if _, err := src.st.Trim(s, 8); err != nil {
		t.Fatal(err)
	}
	c, start, err = openConsumer("c", []string{d1, d2}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if start.String() != "o#1=4,s#1=5" {
		t.Errorf("start %s", start)
	}
	if want := "ds: consumer c: s#1: positions below 8 were trimmed; resuming at 8\n"; stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
	if err := c.save(views.Cursor{}); err != nil {
		t.Fatal(err)
	}
	if got := saved(d1).String(); got != "s#1=7" {
		t.Errorf("after the trim store one holds %s, want s#1=7", got)
	}
}

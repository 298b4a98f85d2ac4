package views

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// mergeLinesOpts is mergeLines with opts, and the inputs' Done calls
// counted.
func mergeLinesOpts(t *testing.T, ctx context.Context, opts MergeOptions, inputs ...[]byte) ([]string, int, error) {
	t.Helper()
	var mu sync.Mutex
	var lines []string
	done := 0
	var ins []MergeInput
	for _, in := range inputs {
		ins = append(ins, MergeInput{
			Scan: func(ctx context.Context, sink segments.Sink) error {
				return segments.Scan(ctx, bytes.NewReader(in), segments.ScanOptions{}, sink)
			},
			Sink: lineSink{mu: &mu, lines: &lines},
			Done: func(error) { done++ },
		})
	}
	err := Merge(ctx, ins, nil, opts)
	return lines, done, err
}

// TestMergeMaxOpen: with MaxOpen, the inputs after the first MaxOpen start
// one by one as others end, in their order, so they come after what was
// handed over before; every input's Done is called, also when ctx ends
// first.
func TestMergeMaxOpen(t *testing.T) {
	a := mrgCapture(t, mrgA, 0, mrgClock(100), mrgLine("a1"), mrgClock(300), mrgLine("a2"))
	b := mrgCapture(t, mrgB, 0, mrgClock(200), mrgLine("b1"), mrgClock(400), mrgLine("b2"))
	c := mrgCapture(t, frames.StreamID{Node: "c", Life: 1}, 0, mrgClock(150), mrgLine("c1"), mrgClock(350), mrgLine("c2"))
	for _, tc := range []struct {
		max  int
		want string
	}{
		{0, "a1 c1 b1 a2 c2 b2"},
		{3, "a1 c1 b1 a2 c2 b2"},
		{2, "a1 b1 a2 c1 c2 b2"}, // c starts when a ends
		{1, "a1 a2 b1 b2 c1 c2"},
	} {
		lines, done, err := mergeLinesOpts(t, context.Background(), MergeOptions{MaxOpen: tc.max}, a, b, c)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(lines, " "); got != tc.want || done != 3 {
			t.Errorf("MaxOpen %d: got %s (%d done), want %s", tc.max, got, done, tc.want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, done, err := mergeLinesOpts(t, ctx, MergeOptions{MaxOpen: 1}, a, b, c); err == nil || done != 3 {
		t.Errorf("cancelled: %d done, error %v", done, err)
	}
}

// layoutCapture returns the capture of streams a and b ticking in turn,
// a at 100, 300, …, b at 200, 400, … (n ticks each, each tick a clock
// reading and a line, lines padded to pad bytes), merged as ds merge
// writes them: every segment of a, then every segment of b; and the two
// captures.
func layoutCapture(t *testing.T, n, pad int, segSize int64) (merged, a, b []byte) {
	t.Helper()
	mk := func(s frames.StreamID, t0 int64) []byte {
		var items []string
		for i := range n {
			items = append(items, mrgClock(t0+int64(i)*200), mrgLine(fmt.Sprintf("%s%d%s", s.Node, i, strings.Repeat(".", pad))))
		}
		return mrgCapture(t, s, segSize, items...)
	}
	a, b = mk(mrgA, 100), mk(mrgB, 200)
	return append(append([]byte(nil), a...), b...), a, b
}

// printLog prints the log of the inputs, each split per stream as ds log
// reads a capture file (segments.Layout), merged.
func printLog(t *testing.T, opts LogOptions, inputs ...[]byte) string {
	t.Helper()
	var out bytes.Buffer
	p := NewPrinter(&out, opts)
	sink := NewLogSink(p, 0)
	var ins []MergeInput
	var ids []frames.StreamID
	for _, in := range inputs {
		streams, _, err := segments.Layout(bytes.NewReader(in), int64(len(in)))
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range streams {
			ids = append(ids, st.Stream)
			ins = append(ins, MergeInput{
				Scan: func(ctx context.Context, s segments.Sink) error {
					_, err := segments.ScanSections(ctx, bytes.NewReader(in), int64(len(in)), st.Sections, segments.ScanOptions{}, s)
					return err
				},
				Sink: sink,
			})
		}
	}
	p.Expect(ids)
	if err := Merge(context.Background(), ins, nil, MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	sink.A.Flush()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// TestTailStreams: the tail of a capture of two streams one after the
// other is the tail of their log merged by time, read from each stream's
// end when they are long.
func TestTailStreams(t *testing.T) {
	for _, tc := range []struct {
		n, pad int
		seg    int64
		lines  int
		whole  bool
	}{
		{5, 0, 0, 3, true},
		{5, 0, 0, 20, true},
		{4000, 200, 64 << 10, 7, false},
		{4000, 200, 64 << 10, 5000, true}, // more than a ring holds: counted, then skipped
	} {
		merged, a, b := layoutCapture(t, tc.n, tc.pad, tc.seg)
		opts := LogOptions{Format: FormatText}
		log := printLog(t, opts, a, b)
		if got := printLog(t, opts, merged); got != log {
			t.Fatalf("n=%d: the merged capture's log differs from its inputs'", tc.n)
		}
		lines := strings.SplitAfter(log, "\n")
		lines = lines[:len(lines)-1]
		want := strings.Join(lines[max(0, len(lines)-tc.lines):], "")
		var out bytes.Buffer
		streams, _, err := segments.Layout(bytes.NewReader(merged), int64(len(merged)))
		if err != nil || len(streams) != 2 {
			t.Fatal(streams, err)
		}
		stats, err := TailStreams(context.Background(), bytes.NewReader(merged), int64(len(merged)), streams, TailOptions{Lines: tc.lines, Log: opts}, 0, &out)
		if err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Errorf("n=%d, -n %d: got\n%s\nwant\n%s", tc.n, tc.lines, out.String(), want)
		}
		if stats.Whole != tc.whole || !tc.whole && tc.lines < 10 && stats.BytesRead >= int64(len(merged)) {
			t.Errorf("n=%d, -n %d: whole %v, read %d of %d bytes", tc.n, tc.lines, stats.Whole, stats.BytesRead, len(merged))
		}
		if id := (frames.StreamID{Node: "b", Life: 1}); stats.Cursor[id] != frames.Position(2*tc.n-1) {
			t.Errorf("cursor %v", stats.Cursor)
		}
	}
}

var _ io.ReaderAt = (*sectionsReaderAt)(nil)

// TestSectionsReaderAt: sections read as one input, and offsets mapped
// back to the file's.
func TestSectionsReaderAt(t *testing.T) {
	file := []byte("0123456789abcdefghij")
	vr := newSectionsReaderAt(bytes.NewReader(file), []segments.Section{{Offset: 2, End: 5}, {Offset: 10, End: 14}, {Offset: 18, End: 20}})
	if vr.size != 9 {
		t.Fatal(vr.size)
	}
	b := make([]byte, 9)
	if n, err := vr.ReadAt(b, 0); n != 9 || err != nil || string(b) != "234abcdij" {
		t.Fatalf("%d %v %q", n, err, b)
	}
	if n, err := vr.ReadAt(b[:4], 6); n != 3 || err != io.EOF || string(b[:3]) != "dij" {
		t.Fatalf("%d %v %q", n, err, b[:3])
	}
	for _, c := range []struct {
		off  int64
		end  bool
		want int64
	}{{0, false, 2}, {3, false, 10}, {3, true, 5}, {7, false, 18}, {9, true, 20}, {0, true, 2}} {
		if got := vr.real(c.off, c.end); got != c.want {
			t.Errorf("real(%d, %v) = %d, want %d", c.off, c.end, got, c.want)
		}
	}
}

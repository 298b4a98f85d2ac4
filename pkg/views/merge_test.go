package views

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// mrgLine is a text frame of channel 1 ("proc.m.stdout"); mrgClock a
// datastream.clock reading (channel 2), ns since the epoch.
func mrgLine(s string) string  { return "1 " + s + "\n" }
func mrgClock(ns int64) string { return fmt.Sprintf(`2 {"unix_ns":%d,"mono_ns":%d}`, ns, ns) }
func mrgCatalog(s frames.StreamID) []frames.ChannelDescriptor {
	return []frames.ChannelDescriptor{
		{Stream: s, ID: 1, Name: "proc.m.stdout", Content: frames.TextStream()},
		{Stream: s, ID: 2, Name: frames.ClockChannel, Content: frames.JSONRecord(frames.ClockChannel)},
	}
}

// mrgCapture writes stream s as a capture: each item is "CH payload", at
// positions from 0; segSize > 0 rotates segments that often.
func mrgCapture(t testing.TB, s frames.StreamID, segSize int64, items ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := segments.NewWriter(&buf, frames.StreamDescriptor{Stream: s}, mrgCatalog(s), segments.WriterOptions{SegmentSize: segSize})
	if err != nil {
		t.Fatal(err)
	}
	for pos, it := range items {
		ch := frames.ChannelID(it[0] - '0')
		if err := w.WriteFrame(frames.Frame{Channel: ch, Position: frames.Position(pos), Payload: []byte(it[2:])}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// lineSink notes the channel-1 payloads it gets, in order, from any
// input: the merged order.
type lineSink struct {
	discard
	mu    *sync.Mutex
	lines *[]string
	tag   string
}

func (l lineSink) Frame(_ frames.StreamID, f frames.Frame) {
	if f.Channel == 1 {
		l.mu.Lock()
		*l.lines = append(*l.lines, l.tag+strings.TrimSuffix(string(f.Payload), "\n"))
		l.mu.Unlock()
	}
}

// mergeLines merges the inputs, each into a lineSink, and returns the
// lines in the order they arrived.
func mergeLines(t *testing.T, inputs ...[]byte) []string {
	t.Helper()
	var mu sync.Mutex
	var lines []string
	var ins []MergeInput
	for _, in := range inputs {
		in := in
		ins = append(ins, MergeInput{
			Scan: func(ctx context.Context, sink segments.Sink) error {
				return segments.ScanAny(ctx, bytes.NewReader(in), segments.ScanOptions{}, sink)
			},
			Sink: lineSink{mu: &mu, lines: &lines},
		})
	}
	if err := Merge(context.Background(), ins, nil, MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	return lines
}

var (
	mrgA = frames.StreamID{Node: "a", Life: 1}
	mrgB = frames.StreamID{Node: "b", Life: 1}
)

func TestMergeByClock(t *testing.T) {
	a := mrgCapture(t, mrgA, 0, mrgClock(100), mrgLine("a1"), mrgLine("a1+"), mrgClock(300), mrgLine("a2"), mrgClock(500), mrgLine("a3"))
	b := mrgCapture(t, mrgB, 0, mrgClock(200), mrgLine("b1"), mrgClock(400), mrgLine("b2"), mrgClock(600), mrgLine("b3"))
	want := "a1 a1+ b1 a2 b2 a3 b3"
	for _, order := range [][][]byte{{a, b}, {b, a}} {
		if got := strings.Join(mergeLines(t, order...), " "); got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
}

// TestMergeTies: equal keys go in input order; inputs without clock
// records come first, in input order; an input's own order is kept even
// where its keys go down.
func TestMergeTies(t *testing.T) {
	a := mrgCapture(t, mrgA, 0, mrgClock(100), mrgLine("a1"), mrgClock(200), mrgLine("a2"))
	b := mrgCapture(t, mrgB, 0, mrgClock(100), mrgLine("b1"), mrgClock(200), mrgLine("b2"))
	if got, want := strings.Join(mergeLines(t, a, b), " "), "a1 b1 a2 b2"; got != want {
		t.Errorf("ties: got %s, want %s", got, want)
	}
	if got, want := strings.Join(mergeLines(t, b, a), " "), "b1 a1 b2 a2"; got != want {
		t.Errorf("ties, other order: got %s, want %s", got, want)
	}
	dsq := dsq1Stream(t, dsq1Frame(1, 0, "d1\n"), dsq1Frame(1, 1, "d2\n"))
	legacy := envelopes(envelope("n9", 1, 0, 1, "e1\n"), envelope("n9", 1, 1, 1, "e2\n"))
	if got, want := strings.Join(mergeLines(t, a, dsq, legacy), " "), "d1 d2 e1 e2 a1 a2"; got != want {
		t.Errorf("without clocks: got %s, want %s", got, want)
	}
	down := mrgCapture(t, mrgB, 0, mrgClock(300), mrgLine("c1"), mrgClock(50), mrgLine("c2"))
	if got, want := strings.Join(mergeLines(t, down, a), " "), "a1 a2 c1 c2"; got != want {
		t.Errorf("keys going down: got %s, want %s", got, want)
	}
}

// TestMergeSplitStream: one stream split across two files, the second
// starting in the middle of a drain tick (frames before its first clock
// reading), comes out whole, as from one file, in either argument order.
func TestMergeSplitStream(t *testing.T) {
	var items []string
	for i := range 40 {
		items = append(items, mrgClock(int64(1000+i*10)), mrgLine(fmt.Sprintf("x%d", i)), mrgLine(fmt.Sprintf("y%d", i)))
	}
	whole := mrgCapture(t, mrgA, 300, items...)
	// Cut at a segment header that does not start with a clock reading.
	var cut int64 = -1
	r := segments.NewReader(bytes.NewReader(whole), segments.ReaderOptions{})
	for prevClock := false; ; {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if e.Kind == segments.EntrySegment && e.Offset > 0 && cut < 0 {
			cut = e.Offset
		}
		if e.Kind == segments.EntryFrame && cut > 0 && e.Offset > cut && !prevClock {
			if e.Frame.Channel == 2 {
				cut = -1 // the segment starts with a clock: try the next one
			} else {
				break
			}
		}
		prevClock = false
	}
	if cut <= 0 {
		t.Fatal("no segment to cut at")
	}
	first, second := whole[:cut], whole[cut:]
	render := func(inputs ...[]byte) string {
		var out bytes.Buffer
		p := NewPrinter(&out, LogOptions{})
		sink := NewLogSink(p, 0)
		var ins []MergeInput
		for _, in := range inputs {
			in := in
			ins = append(ins, MergeInput{Scan: func(ctx context.Context, s segments.Sink) error {
				return segments.ScanAny(ctx, bytes.NewReader(in), segments.ScanOptions{}, s)
			}, Sink: sink})
		}
		if err := Merge(context.Background(), ins, nil, MergeOptions{}); err != nil {
			t.Fatal(err)
		}
		sink.A.Flush()
		p.Close()
		return out.String()
	}
	want := render(whole)
	for _, order := range [][][]byte{{first, second}, {second, first}} {
		if got := render(order...); got != want {
			t.Errorf("got\n%s\nwant\n%s", got, want)
		}
	}
	if !strings.Contains(want, "x0") || !strings.Contains(want, "y39") || strings.Contains(want, "late") || strings.Contains(want, "start") {
		t.Errorf("whole capture:\n%s", want)
	}
}

// TestMergeEntries: every kind of entry reaches the sink of its input,
// damage with its range, and Done reports each input's outcome.
func TestMergeEntries(t *testing.T) {
	a := dsq1Stream(t, dsq1Frame(1, 0, "a"))
	a = append(a, 1, 0, 0, 0, 0x04) // damage
	var la, lb callLog
	var done []string
	ins := []MergeInput{
		{Scan: func(ctx context.Context, s segments.Sink) error {
			return segments.ScanAny(ctx, bytes.NewReader(a), segments.ScanOptions{}, s)
		}, Sink: &la, Done: func(err error) { done = append(done, fmt.Sprint("a ", err)) }},
		{Scan: func(ctx context.Context, s segments.Sink) error {
			return segments.ScanAny(ctx, strings.NewReader("not a capture"), segments.ScanOptions{}, s)
		}, Sink: &lb, Done: func(err error) { done = append(done, fmt.Sprint("b ", errors.Is(err, segments.ErrNotCapture))) }},
	}
	if err := Merge(context.Background(), ins, nil, MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	h := int64(len(dsq1Stream(t)))
	want := fmt.Sprintf("header n1#7 seq=0 channels=1 writer=\"DSQ1 stream\" @0\nframe n1#7 0 ch1 \"a\"\ndamage %d-%d torn=false", h+22, h+27)
	if got := la.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if lb.String() != "" || len(done) != 2 || !strings.Contains(strings.Join(done, ","), "b true") || !strings.Contains(strings.Join(done, ","), "a <nil>") {
		t.Errorf("b: %q; done: %q", lb.String(), done)
	}
}

// TestMergeMore: inputs that arrive while Merge runs join the merge;
// Merge returns once more is closed and every input has ended.
func TestMergeMore(t *testing.T) {
	a := mrgCapture(t, mrgA, 0, mrgClock(100), mrgLine("a1"))
	b := mrgCapture(t, mrgB, 0, mrgClock(200), mrgLine("b1"))
	var mu sync.Mutex
	var lines []string
	input := func(in []byte) MergeInput {
		return MergeInput{Scan: func(ctx context.Context, s segments.Sink) error {
			return segments.ScanAny(ctx, bytes.NewReader(in), segments.ScanOptions{}, s)
		}, Sink: lineSink{mu: &mu, lines: &lines}}
	}
	more := make(chan MergeInput)
	done := make(chan error, 1)
	go func() { done <- Merge(context.Background(), []MergeInput{input(a)}, more, MergeOptions{}) }()
	more <- input(b)
	close(more)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(lines, " "); got != "a1 b1" {
		t.Errorf("got %s", got)
	}
}

// TestMergeLive: with IdleAfter, an input that has been quiet (a pipe
// nobody writes to yet) does not hold the others back, and the sinks are
// told when everything was handed over; ctx ends Merge.
func TestMergeLive(t *testing.T) {
	a := mrgCapture(t, mrgA, 0, mrgClock(100), mrgLine("a1"))
	pr, pw := io.Pipe()
	defer pw.Close()
	var mu sync.Mutex
	var lines []string
	idle := make(chan bool, 16)
	sink := &idleLines{lineSink: lineSink{mu: &mu, lines: &lines}, idle: idle}
	ctx, cancel := context.WithCancel(context.Background())
	opts := segments.ScanOptions{IdleAfter: 50 * time.Millisecond}
	var doneErrs []error
	ins := []MergeInput{
		{Scan: func(ctx context.Context, s segments.Sink) error { return segments.ScanAny(ctx, pr, opts, s) }, Sink: sink, Done: func(err error) { doneErrs = append(doneErrs, err) }},
		{Scan: func(ctx context.Context, s segments.Sink) error {
			return segments.ScanAny(ctx, bytes.NewReader(a), opts, s)
		}, Sink: sink, Done: func(err error) { doneErrs = append(doneErrs, err) }},
	}
	done := make(chan error, 1)
	go func() { done <- Merge(ctx, ins, nil, MergeOptions{IdleAfter: opts.IdleAfter}) }()
	deadline := time.After(10 * time.Second)
	for quiet := false; !quiet; {
		select {
		case quiet = <-idle:
		case <-deadline:
			t.Fatal("the sinks were never told that the inputs are quiet")
		}
	}
	mu.Lock()
	got := strings.Join(lines, " ")
	mu.Unlock()
	if got != "a1" {
		t.Errorf("before the pipe has anything: %q, want a1", got)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Merge = %v, want context.Canceled", err)
	}
	if len(doneErrs) != 2 || doneErrs[0] != nil || !errors.Is(doneErrs[1], context.Canceled) {
		t.Errorf("Done: %v, want the file's nil, then the pipe's context.Canceled", doneErrs)
	}
}

type idleLines struct {
	lineSink
	idle chan bool
}

func (s *idleLines) Idle(quiet bool) {
	select {
	case s.idle <- quiet:
	default:
	}
}

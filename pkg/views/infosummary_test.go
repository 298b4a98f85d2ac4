package views

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// keepLikeWrap is ds wrap's rule for what summaries keep.
func keepLikeWrap(ch frames.ChannelID, payload []byte) segments.Keep {
	switch ch {
	case 1: // clock
		return segments.KeepEnds
	case 2: // health
		if bytes.Contains(payload, []byte(`"loss":`)) {
			return segments.KeepFrame
		}
		return segments.KeepEnds
	case 4: // lifecycle
		return segments.KeepFrame
	}
	return segments.KeepNone
}

// wrapLikeCapture writes a capture of n lines with clock and health
// records, a loss, and lifecycle records, as ds wrap writes them, in
// segments of segSize bytes; keep is the summaries' rule.
func wrapLikeCapture(t *testing.T, n int, segSize int64, keep func(frames.ChannelID, []byte) segments.Keep) []byte {
	t.Helper()
	s := frames.StreamID{Node: "info", Life: 9}
	label := "job"
	cat := []frames.ChannelDescriptor{
		{Stream: s, ID: 1, Name: frames.ClockChannel, Content: frames.JSONRecord(frames.ClockChannel)},
		{Stream: s, ID: 2, Name: frames.HealthChannel, Content: frames.JSONRecord(frames.HealthChannel)},
		{Stream: s, ID: 3, Name: "proc.job.stdout", Content: frames.TextStream()},
		{Stream: s, ID: 4, Name: "proc.job.lifecycle", Content: frames.JSONRecord("proc.lifecycle")},
	}
	var buf bytes.Buffer
	w, err := segments.NewWriter(&buf, frames.StreamDescriptor{Stream: s, Label: &label}, cat, segments.WriterOptions{SegmentSize: segSize, Compression: segments.CompressZstd, BlockSize: 8 << 10, Keep: keep})
	if err != nil {
		t.Fatal(err)
	}
	pos := frames.Position(0)
	write := func(ch frames.ChannelID, p string) {
		if err := w.WriteFrame(frames.Frame{Channel: ch, Position: pos, Payload: []byte(p)}); err != nil {
			t.Fatal(err)
		}
		pos++
	}
	write(1, `{"unix_ns":1700000000000000000,"mono_ns":1}`)
	write(4, `{"event":"started","pid":42}`)
	dropped := 0
	for i := range n {
		if i%1000 == 0 {
			write(1, fmt.Sprintf(`{"unix_ns":%d,"mono_ns":%d}`, 1700000000000000000+i*1000, i))
		}
		if i == n/2 {
			dropped = 5
			write(2, `{"assigned":1,"mux_dropped":5,"mux_dropped_bytes":500,"subscriber_dropped":0,"loss":{"frames":5,"bytes":500,"reason":"queue full"}}`)
		}
		if i%5000 == 0 {
			write(2, fmt.Sprintf(`{"assigned":1,"mux_dropped":%d,"mux_dropped_bytes":%d,"subscriber_dropped":0}`, dropped, dropped*100))
		}
		write(3, fmt.Sprintf("line %d %016x\n", i, uint64(i)*0x9e3779b97f4a7c15))
	}
	write(4, `{"event":"exited","status":{"kind":"code","value":3}}`)
	write(1, fmt.Sprintf(`{"unix_ns":%d,"mono_ns":9}`, 1700000000000000000+n*1000+5))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// infoBoth returns what Info says of data read record by record, and read
// from its end through its summaries, and how many spans were summarised.
func infoBoth(t *testing.T, data []byte) (scan, fromEnd []StreamSummary, summarised int) {
	t.Helper()
	a := NewInfo(0)
	if err := segments.Scan(context.Background(), bytes.NewReader(data), segments.ScanOptions{}, a); err != nil {
		t.Fatal(err)
	}
	_, scan = a.Summary()
	b := NewInfo(0)
	spans, err := segments.NewBackWalker(bytes.NewReader(data), int64(len(data))).All()
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range spans {
		if sp.Header != nil && sp.Summary != nil && b.AddSummary(segments.SegmentHeader{Stream: sp.Header.Stream, Channels: sp.Header.Channels, Seq: sp.Header.Seq, Offset: sp.Offset}, sp.Summary) {
			summarised++
			continue
		}
		if err := segments.Scan(context.Background(), io.NewSectionReader(bytes.NewReader(data), sp.Offset, sp.End-sp.Offset), segments.ScanOptions{Offset: sp.Offset}, b); err != nil {
			t.Fatal(err)
		}
	}
	_, fromEnd = b.Summary()
	return scan, fromEnd, summarised
}

// TestInfoFromSummaries: ds info from the summaries says what reading
// every record says, whatever part of the capture has no usable summary.
func TestInfoFromSummaries(t *testing.T) {
	good := wrapLikeCapture(t, 40000, 32<<10, keepLikeWrap)
	spans, _ := segments.NewBackWalker(bytes.NewReader(good), int64(len(good))).All()
	if len(spans) < 4 {
		t.Fatalf("%d segments, want several", len(spans))
	}
	mid := spans[len(spans)/2]
	// An older writer's capture: the same segments without summaries.
	var old []byte
	for _, sp := range spans {
		n, ok := wireformat.SummaryRecordSize(good[:sp.End])
		if !ok {
			t.Fatalf("span at %d has no summary", sp.Offset)
		}
		old = append(old, good[sp.Offset:sp.End-int64(n)]...)
	}
	flipped := bytes.Clone(good)
	flipped[mid.End-30] ^= 1 // inside the summary's JSON
	cases := map[string]struct {
		data []byte
		min  int // summarised spans at least
		max  int
	}{
		"every summary":               {good, len(spans), len(spans)},
		"no summaries (older writer)": {old, 0, 0},
		"a flipped summary":           {flipped, len(spans) - 1, len(spans) - 1},
		"torn in the last summary":    {good[:len(good)-3], len(spans) - 1, len(spans) - 1},
		"torn before the last one":    {good[:spans[len(spans)-1].Offset-2], 0, len(spans) - 2},
		"summaries that keep nothing": {wrapLikeCapture(t, 40000, 32<<10, nil), 0, 0},
		"no frames kept but counted":  {wrapLikeCapture(t, 40000, 32<<10, func(frames.ChannelID, []byte) segments.Keep { return segments.KeepNone }), 0, 0},
	}
	for name, c := range cases {
		scan, fromEnd, n := infoBoth(t, c.data)
		if diff := cmp.Diff(scan, fromEnd); diff != "" {
			t.Errorf("%s: (-scanned +from the end)\n%s", name, diff)
		}
		if n < c.min || n > c.max {
			t.Errorf("%s: %d segments summarised, want %d to %d", name, n, c.min, c.max)
		}
	}
	// What the summaries gave is what a reader of the frames finds.
	scan, _, _ := infoBoth(t, good)
	s := scan[0]
	if s.DroppedFrames != 5 || len(s.Exits) != 1 || s.Exits[0].ExitCode != 3 || s.TimeStart == nil || !strings.HasPrefix(*s.TimeStart, "2023-11-14") {
		t.Errorf("summary %+v", s)
	}
}

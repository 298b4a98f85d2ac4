package views

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// tailCapture writes n text lines, some split across frames, in segments
// of segSize bytes.
func tailCapture(t *testing.T, n int, segSize int64, comp segments.Compression, close bool) []byte {
	t.Helper()
	s := frames.StreamID{Node: "tail", Life: 1}
	var buf bytes.Buffer
	w, err := segments.NewWriter(&buf, frames.StreamDescriptor{Stream: s}, []frames.ChannelDescriptor{
		{Stream: s, ID: 1, Name: "app.stdout", Content: frames.TextStream()},
		{Stream: s, ID: 2, Name: "app.stderr", Content: frames.TextStream()},
	}, segments.WriterOptions{SegmentSize: segSize, Compression: comp})
	if err != nil {
		t.Fatal(err)
	}
	pos := frames.Position(0)
	for i := range n {
		// A number that zstd cannot predict keeps the capture large.
		line := fmt.Sprintf("line %d of the tail test %016x\n", i, uint64(i)*0x9e3779b97f4a7c15)
		ch := frames.ChannelID(1 + i%7/6)
		if i%5 == 0 { // a line split across two frames
			w.WriteFrame(frames.Frame{Channel: ch, Position: pos, Payload: []byte(line[:4])})
			pos++
			line = line[4:]
		}
		if err := w.WriteFrame(frames.Frame{Channel: ch, Position: pos, Payload: []byte(line)}); err != nil {
			t.Fatal(err)
		}
		pos++
		if i%100 == 99 {
			w.Flush()
		}
	}
	if close {
		err = w.Close()
	} else {
		err = w.Flush()
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// lastLines renders the whole capture as ds log does and returns its last
// n lines.
func lastLines(t *testing.T, data []byte, n int, opts LogOptions) string {
	t.Helper()
	var out bytes.Buffer
	p := NewPrinter(&out, opts)
	sink := NewLogSink(p, 0)
	if err := segments.Scan(context.Background(), bytes.NewReader(data), segments.ScanOptions{}, sink); err != nil {
		t.Fatal(err)
	}
	sink.A.Flush()
	p.Close()
	lines := strings.SplitAfter(out.String(), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines[max(0, len(lines)-n):], "")
}

func TestTail(t *testing.T) {
	for _, comp := range []segments.Compression{segments.CompressNone, segments.CompressZstd} {
		data := tailCapture(t, 100000, 256<<10, comp, true)
		for _, tt := range []struct {
			n    int
			opts LogOptions
		}{
			{10, LogOptions{}},
			{1, LogOptions{}},
			{3, LogOptions{Format: FormatCat}},
			{5, LogOptions{Format: FormatJSON}},
			{7, LogOptions{Channels: []frames.ChannelFilter{frames.ParseChannelPattern("app.stderr")}}},
			{5000, LogOptions{}},
			{1000000, LogOptions{Format: FormatCat}}, // more than there are: everything
		} {
			name := fmt.Sprintf("%v/%d/%d", comp, tt.n, tt.opts.Format)
			var out bytes.Buffer
			st, err := Tail(context.Background(), bytes.NewReader(data), int64(len(data)), TailOptions{Lines: tt.n, Log: tt.opts}, &out)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if want := lastLines(t, data, tt.n, tt.opts); out.String() != want {
				t.Errorf("%s: tail differs from the end of ds log:\n%s\nwant\n%s", name, head(out.String()), head(want))
			}
			// The segment that holds the last 256 KiB, the one after it,
			// and their headers and summaries.
			if tt.n <= 10 && st.BytesRead > 2*(256<<10)+tailStart+64<<10 {
				t.Errorf("%s: read %d bytes of %d", name, st.BytesRead, len(data))
			}
			if tt.n == 1000000 && !st.Whole {
				t.Errorf("%s: not read whole", name)
			}
		}
	}
}

// TestTailUnsummarised: a capture whose writer was killed (no last
// summary, a torn record) or that has no summaries at all is tailed
// from its end as well, and its damage is reported.
func TestTailUnsummarised(t *testing.T) {
	open := tailCapture(t, 100000, 256<<10, segments.CompressZstd, false)
	torn := open[:len(open)-3]
	closed := tailCapture(t, 300000, 256<<10, segments.CompressZstd, true)
	spans, err := segments.NewBackWalker(bytes.NewReader(closed), int64(len(closed))).All()
	if err != nil {
		t.Fatal(err)
	}
	var old []byte // an older writer's capture: no summaries
	for _, sp := range spans {
		n, _ := wireformat.SummaryRecordSize(closed[:sp.End])
		old = append(old, closed[sp.Offset:sp.End-int64(n)]...)
	}
	for name, data := range map[string][]byte{"open": open, "torn": torn, "no summaries": old} {
		var out bytes.Buffer
		st, err := Tail(context.Background(), bytes.NewReader(data), int64(len(data)), TailOptions{Lines: 4, Log: LogOptions{Format: FormatCat}}, &out)
		if err != nil {
			t.Fatal(err)
		}
		if want := lastLines(t, data, 4, LogOptions{Format: FormatCat}); out.String() != want {
			t.Errorf("%s: got\n%s\nwant\n%s", name, out.String(), want)
		}
		limit := int64(2*(256<<10) + tailStart + 64<<10 + 64<<10)
		if name == "no summaries" {
			// Each segment's start is found by looking back for its
			// magic, in chunks of 64 KiB, 128 KiB, …
			limit = 6 * 256 << 10
		}
		if st.BytesRead > limit {
			t.Errorf("%s: read %d bytes of %d", name, st.BytesRead, len(data))
		}
		if (name == "torn") != (len(st.Damage) == 1 && st.Damage[0].Torn) {
			t.Errorf("%s: damage %+v", name, st.Damage)
		}
	}
}

func head(s string) string {
	if len(s) > 2000 {
		return s[:1000] + "\n…\n" + s[len(s)-1000:]
	}
	return s
}

// TestTailOddInputs: a capture concatenated with itself (every frame
// twice: ds log shows each once), one whose last line has no newline,
// and bytes that are magics only.
func TestTailOddInputs(t *testing.T) {
	one := tailCapture(t, 40000, 256<<10, segments.CompressZstd, true)
	twice := append(append([]byte(nil), one...), one...)
	for _, n := range []int{1, 2, 5, 10, 5000} {
		for _, opts := range []LogOptions{{}, {Format: FormatCat}, {Format: FormatJSON}} {
			var out bytes.Buffer
			if _, err := Tail(context.Background(), bytes.NewReader(twice), int64(len(twice)), TailOptions{Lines: n, Log: opts}, &out); err != nil {
				t.Fatal(err)
			}
			if want := lastLines(t, twice, n, opts); out.String() != want {
				t.Errorf("twice, -n %d, format %d: got\n%s\nwant\n%s", n, opts.Format, head(out.String()), head(want))
			}
		}
	}
	// The last line has no newline: it counts as one, as for tail(1).
	s := frames.StreamID{Node: "nl", Life: 1}
	var buf bytes.Buffer
	w, _ := segments.NewWriter(&buf, frames.StreamDescriptor{Stream: s}, []frames.ChannelDescriptor{{Stream: s, ID: 1, Name: "out", Content: frames.TextStream()}}, segments.WriterOptions{})
	w.WriteFrame(frames.Frame{Channel: 1, Position: 0, Payload: []byte("a\nb\nc\nno newline")})
	w.Close()
	for _, n := range []int{1, 2, 5000} {
		var out bytes.Buffer
		if _, err := Tail(context.Background(), bytes.NewReader(buf.Bytes()), int64(buf.Len()), TailOptions{Lines: n, Log: LogOptions{Format: FormatCat}}, &out); err != nil {
			t.Fatal(err)
		}
		want := map[int]string{1: "no newline", 2: "c\nno newline", 5000: "a\nb\nc\nno newline"}[n]
		if out.String() != want {
			t.Errorf("-n %d --cat: %q, want %q", n, out.String(), want)
		}
	}
	// Magics only: one damaged range, read once.
	magics := bytes.Repeat([]byte(wireformat.Magic), 1<<17) // 1 MiB
	var out bytes.Buffer
	st, err := Tail(context.Background(), bytes.NewReader(magics), int64(len(magics)), TailOptions{Lines: 10}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Damage) != 1 || st.Damage[0].Offset != 0 || st.Damage[0].End != int64(len(magics)) || st.BytesRead > 4*int64(len(magics)) {
		t.Errorf("magics: damage %+v, read %d bytes of %d", st.Damage, st.BytesRead, len(magics))
	}
}

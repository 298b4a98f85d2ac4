package views

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// The views part of ARCHITECTURE.md cases 3 that the assembler and printer
// tests do not cover on their own: every view over the same captures.

// conformanceCapture writes one stream of frames (channel 1 text
// "proc.job.stdout", 2 JSON "host.resource", 3 "datastream.health") as a
// capture, ended when ended is set.
func conformanceCapture(t *testing.T, s frames.StreamID, ended bool, fs ...frames.Frame) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := segments.NewWriter(&buf, frames.StreamDescriptor{Stream: s}, []frames.ChannelDescriptor{
		{Stream: s, ID: 1, Name: "proc.job.stdout", Content: frames.TextStream()},
		{Stream: s, ID: 2, Name: "host.resource", Content: frames.JSONRecord("host.resource")},
		{Stream: s, ID: 3, Name: frames.HealthChannel, Content: frames.JSONRecord(frames.HealthChannel)},
	}, segments.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	if ended {
		err = w.Close()
	} else {
		err = w.Flush()
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// viewLog renders captures as ds log does, with opts.
func viewLog(t *testing.T, opts LogOptions, captures ...[]byte) string {
	t.Helper()
	return viewLogExpect(t, opts, nil, captures...)
}

// viewLogExpect is viewLog told the streams up front, as ds log tells its
// printer what the headers of its input files say.
func viewLogExpect(t *testing.T, opts LogOptions, expect []frames.StreamID, captures ...[]byte) string {
	t.Helper()
	var out bytes.Buffer
	p := NewPrinter(&out, opts)
	p.Expect(expect)
	sink := NewLogSink(p, 0)
	for _, c := range captures {
		if err := segments.Scan(context.Background(), bytes.NewReader(c), segments.ScanOptions{}, sink); err != nil {
			t.Fatal(err)
		}
	}
	sink.A.Flush()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// viewGaps returns the findings of ds gaps over captures.
func viewGaps(t *testing.T, captures ...[]byte) []Finding {
	t.Helper()
	g := NewGaps(0)
	for i, c := range captures {
		g.File(strings.Repeat("x", i+1), false)
		if err := segments.Scan(context.Background(), bytes.NewReader(c), segments.ScanOptions{}, g); err != nil {
			t.Fatal(err)
		}
	}
	var out []Finding
	if err := g.Each(func(f Finding) error { out = append(out, f); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// viewTail returns the last n lines of a capture as ds tail prints them.
func viewTail(t *testing.T, c []byte, n int) string {
	t.Helper()
	var out bytes.Buffer
	if _, err := Tail(context.Background(), bytes.NewReader(c), int64(len(c)), TailOptions{Lines: n}, &out); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// §3.10: an empty stream: merged log, tail, grep, filter, series and gaps
// are all empty; tail(n > len) is everything.
func TestConformanceEmptyStream(t *testing.T) {
	empty := conformanceCapture(t, S, true)
	re, _ := CompileGrep("x")
	for name, opts := range map[string]LogOptions{
		"log":    {},
		"json":   {Format: FormatJSON},
		"grep":   {Select: Selection{Grep: re}},
		"filter": {Channels: []frames.ChannelFilter{frames.NameChannel("proc.job.stdout")}},
	} {
		if got := viewLog(t, opts, empty); got != "" {
			t.Errorf("%s of an empty stream: %q", name, got)
		}
	}
	if got := viewTail(t, empty, 10); got != "" {
		t.Errorf("tail: %q", got)
	}
	var out bytes.Buffer
	sr, err := NewSeries(&out, SeriesOptions{Channels: []frames.ChannelFilter{frames.NameChannel("host.resource")}})
	if err != nil {
		t.Fatal(err)
	}
	segments.Scan(context.Background(), bytes.NewReader(empty), segments.ScanOptions{}, sr)
	if err := sr.Close(); err != nil || out.Len() != 0 {
		t.Errorf("series: %q, %v", out.String(), err)
	}
	if f := viewGaps(t, empty); len(f) != 0 {
		t.Errorf("gaps of an empty, ended stream: %+v", f)
	}
	// tail(n > len) is everything.
	three := conformanceCapture(t, S, true, on(1, 0, "a\n"), on(1, 1, "b\n"), on(1, 2, "c\n"))
	if got, all := viewTail(t, three, 100), viewLog(t, LogOptions{}, three); got != all || strings.Count(got, "\n") != 3 {
		t.Errorf("tail -n 100 = %q, log = %q", got, all)
	}
}

// §3.11: a three-node run. A drops positions 3, 4, 5 (assigned, lost in
// transport) and its last frame is its health record; B has an outage
// (one gap); C dies (no gap, its last position is what it wrote).
func TestConformanceThreeNodes(t *testing.T) {
	a := frames.StreamID{Node: "A", Life: 1}
	b := frames.StreamID{Node: "B", Life: 1}
	c := frames.StreamID{Node: "C", Life: 1}
	line := func(pos uint64) frames.Frame { return on(1, pos, "work\n") }
	capA := conformanceCapture(t, a, true, line(0), line(1), line(2), line(6),
		on(3, 7, `{"assigned":8,"drained":8,"mux_dropped":0}`))
	capB := conformanceCapture(t, b, true, line(0), line(1), line(5), line(6))
	capC := conformanceCapture(t, c, false, line(0), line(1), line(2))

	log := viewLogExpect(t, LogOptions{All: true}, []frames.StreamID{a, b, c}, capA, capB, capC)
	for _, want := range []string{
		"A       ~  gap                positions 3–5 missing (3 frames)\n",
		"A       7  datastream.health  ",
		"B       ~  gap                positions 2–4 missing (3 frames)\n",
		"C       2  proc.job.stdout    work\n",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if n := strings.Count(log, "gap"); n != 2 {
		t.Errorf("%d gaps, want 2:\n%s", n, log)
	}
	// A's last frame is its health record.
	var lastA string
	for _, l := range strings.Split(log, "\n") {
		if strings.HasPrefix(l, "A ") {
			lastA = l
		}
	}
	if !strings.HasPrefix(lastA, "A       7  datastream.health  ") {
		t.Errorf("A's last line %q is not its health record", lastA)
	}

	var gaps, unended []string
	for _, f := range viewGaps(t, capA, capB, capC) {
		switch f.Kind {
		case FindingGap:
			gaps = append(gaps, f.Stream.String())
		case FindingUnended:
			unended = append(unended, f.Stream.String())
		}
	}
	if strings.Join(gaps, " ") != "A#1 B#1" || strings.Join(unended, " ") != "C#1" {
		t.Errorf("gaps in %v, unended %v; want gaps in A#1 B#1, C#1 unended", gaps, unended)
	}
}

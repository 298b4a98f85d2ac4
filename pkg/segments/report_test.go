package segments

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// TestCheckPrinter: the text and JSON lines of a finding and an input,
// names made safe for a terminal, and -q leaving out what is no problem.
func TestCheckPrinter(t *testing.T) {
	rep := &CheckReport{Format: InputDSS, Bytes: 100, Segments: 1, Frames: 2}
	var b bytes.Buffer
	p := NewCheckPrinter(&b, false, false)
	p.Finding("a\x1b.dss", &TornTail{Offset: 90, End: 100, Err: &CorruptError{Offset: 90, Err: errors.New("segments: bad crc")}})
	p.Report("a.dss", rep, true)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], `"a\x1b.dss": torn tail at byte 90: `) || lines[1] != "a.dss: ok: 100 bytes, 1 segment, 0 streams, 2 frames" {
		t.Errorf("text:\n%s", b.String())
	}
	b.Reset()
	p = NewCheckPrinter(&b, true, true)
	p.Finding("a.dss", &LiveTail{Offset: 7})
	p.Report("a.dss", rep, false)
	if got := b.String(); got != `{"input":"a.dss","kind":"input","format":"DSS capture","bytes":100,"segments":1,"streams":0,"frames":2,"problems":0,"ok":false}`+"\n" {
		t.Errorf("json -q: %s", got)
	}
	if p.Err() != nil {
		t.Error(p.Err())
	}
}

func TestRunText(t *testing.T) {
	if got := RunText(5, 5); got != "position 5" {
		t.Error(got)
	}
	if got := RunText(frames.Position(5), 9); got != "positions 5–9" {
		t.Error(got)
	}
}

func TestMergeSummary(t *testing.T) {
	r := MergeReport{Frames: 3, Streams: 1, Inputs: 2, Gaps: 1, Missing: 2}
	if got, want := MergeSummary(r, "-", false), "ds: merged 3 frames of 1 stream from 2 inputs into stdout: 0 duplicates collapsed, 0 conflicts, 1 gap (2 frames missing)"; got != want {
		t.Errorf("merge: %q, want %q", got, want)
	}
	r.Gaps, r.Missing = 0, 0
	if got, want := MergeSummary(r, "out.dss", true), "ds: recovered 3 frames of 1 stream from 2 inputs into out.dss: 0 gaps, nothing lost"; got != want {
		t.Errorf("recover: %q, want %q", got, want)
	}
}

func TestIngestLine(t *testing.T) {
	if got, want := IngestLine("a\x1b.dss", 2, 1, 0, 0), `a\x1b.dss: 2 frames stored, 1 duplicate, 0 conflicts`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := IngestLine("-", 1, 0, 1, 3), "-: 1 frame stored, 0 duplicates, 1 conflict, 3 below the trim horizon"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

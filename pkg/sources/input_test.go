package sources

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// TestOpen: what Open makes of files, stdin, directories and files that
// are not captures.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	capture := filepath.Join(dir, "run.dss")
	data := storeCapture(t, frames.StreamID{Node: "n", Life: 1}, 0, 2)
	if err := os.WriteFile(capture, data, 0o644); err != nil {
		t.Fatal(err)
	}
	junk := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(junk, []byte("hello, this is not a capture\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	set := NewSet(Options{})
	ctx := context.Background()

	in, err := set.Open(ctx, capture, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if in.File == nil || in.Size != int64(len(data)) || in.Format != segments.InputDSS || in.Live {
		t.Errorf("capture opened as %+v", in)
	}
	var sink countSink
	if err := in.Scan(ctx, segments.ScanOptions{}, &sink, &bytes.Buffer{}); err != nil || sink.frames != 3 || in.BytesRead != int64(len(data)) {
		t.Errorf("scan: %v, %d frames, %d bytes read", err, sink.frames, in.BytesRead)
	}
	in.Close()

	in, err = set.Open(ctx, "-", bytes.NewReader(data), false)
	if err != nil || in.Name != "-" || in.Size != -1 || in.File != nil {
		t.Errorf("stdin opened as %+v, %v", in, err)
	}

	_, err = set.Open(ctx, junk, nil, false)
	var nc *NotCaptureError
	if !errors.As(err, &nc) || !errors.Is(err, segments.ErrNotCapture) || nc.Name != junk {
		t.Errorf("not a capture: %v", err)
	}
	if _, err := set.Open(ctx, dir, nil, false); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("directory: %v", err)
	}
	if _, err := set.Open(ctx, filepath.Join(dir, "missing"), nil, false); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}

// TestExpandDir: a directory stands for its capture files in name order,
// and its *.dss files whatever they hold (Open refuses one that is no
// capture, issue 22 item 6); one without any is said on warn.
func TestExpandDir(t *testing.T) {
	dir := t.TempDir()
	data := storeCapture(t, frames.StreamID{Node: "n", Life: 1}, 0, 0)
	for name, b := range map[string][]byte{"b.dss": data, "a.dss": data, ".hidden.dss": data, "notes.txt": []byte("not a capture at all\n"), "junk.dss": []byte("not a capture at all\n"), "empty": nil} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	empty := t.TempDir()
	var warn bytes.Buffer
	fail := func(err error) { t.Errorf("failed: %v", err) }
	paths, watches := NewSet(Options{}).Expand([]string{dir, "-", empty}, true, &warn, fail)
	want := []string{filepath.Join(dir, "a.dss"), filepath.Join(dir, "b.dss"), filepath.Join(dir, "empty"), filepath.Join(dir, "junk.dss"), "-"}
	if strings.Join(paths, "|") != strings.Join(want, "|") {
		t.Errorf("paths %q, want %q", paths, want)
	}
	if len(watches) != 2 {
		t.Errorf("%d watches, want 2", len(watches))
	}
	if w := "ds: " + empty + ": no capture in this directory\n"; warn.String() != w {
		t.Errorf("warn %q, want %q", warn.String(), w)
	}
	if err := os.WriteFile(filepath.Join(dir, "c.dss"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := watches[0].Poll(); len(got) != 1 || got[0] != filepath.Join(dir, "c.dss") {
		t.Errorf("poll = %q", got)
	}
}

func TestDamageReporter(t *testing.T) {
	var warn bytes.Buffer
	var sink countSink
	d := &DamageReporter{Sink: &sink, Name: "f", Live: true, Warn: &warn}
	d.Damage(10, 20, true, errors.New("cut"))
	if d.Damaged || sink.damage != 0 || warn.Len() > 0 {
		t.Fatalf("a live torn tail was reported: %q", warn.String())
	}
	d.Damage(10, 20, false, errors.New("bad crc"))
	if !d.Damaged || sink.damage != 1 || warn.String() != "ds: f: bytes 10–19 unreadable, skipped: bad crc\n" {
		t.Fatalf("damage: %v %d %q", d.Damaged, sink.damage, warn.String())
	}
}

// countSink counts frames and damage.
type countSink struct{ frames, damage int }

func (s *countSink) Header(segments.SegmentHeader)                  {}
func (s *countSink) Channel(frames.ChannelDescriptor)               {}
func (s *countSink) Frame(frames.StreamID, frames.Frame)            { s.frames++ }
func (s *countSink) Trimmed(frames.StreamID, frames.Position, bool) {}
func (s *countSink) Ended(frames.StreamID)                          {}
func (s *countSink) Damage(offset, end int64, torn bool, err error) { s.damage++ }

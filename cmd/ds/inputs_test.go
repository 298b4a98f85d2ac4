package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// The byte streams of the seed system under testdata/imports are made by
// importFixtures and never edited by hand: `DS_UPDATE=1 go test ./cmd/ds
// -run TestImportFixtures` rewrites them; without DS_UPDATE the test
// checks that the files are what it makes. inputs_formats.txtar reads
// them.
//
//	stream.dsq1      a DSQ1 stream (ARCHITECTURE.md cases 4) of seed-1#42: two
//	                 channels in its header, a third declared later, four
//	                 frames, StreamEnded
//	envelopes.legacy legacy delivery envelopes of two streams, back to back
func importFixtures(t *testing.T) map[string][]byte {
	t.Helper()
	s := frames.StreamID{Node: "seed-1", Life: 42}
	ch := func(id frames.ChannelID, name string, c frames.ChannelContent) frames.ChannelDescriptor {
		return frames.ChannelDescriptor{Stream: s, ID: id, Name: name, Content: c}
	}
	dsq, err := wireformat.AppendDSQ1Header(nil, [16]byte{0xd5, 0x01}, []byte("token"), frames.StreamDescriptor{Stream: s},
		[]frames.ChannelDescriptor{ch(1, "host.resource", frames.JSONRecord("host.resource")), ch(2, "proc.trainer.stdout", frames.TextStream())})
	if err != nil {
		t.Fatal(err)
	}
	frame := func(c frames.ChannelID, pos uint64, payload string) frames.Event {
		return frames.FrameEvent(frames.FrameDelivery{Channel: frames.ChannelRef{Stream: s, Channel: c}, Position: frames.Position(pos), Payload: []byte(payload)})
	}
	for _, ev := range []frames.Event{
		frame(1, 0, `{"cpu_pct":12.5,"mem_mb":1024}`),
		frame(2, 1, "hello\n"),
		frames.ChannelDeclaredEvent(ch(3, "membership", frames.TextStream())),
		frame(3, 2, "peer moved\n"),
		frame(2, 3, "bye\n"),
		frames.StreamEndedEvent(s),
	} {
		if dsq, err = wireformat.AppendDSQ1Record(dsq, ev); err != nil {
			t.Fatal(err)
		}
	}
	var legacy []byte
	for _, d := range []frames.Delivery{
		{Stream: frames.StreamID{Node: "n1", Life: 7}, Frame: frames.Frame{Channel: 3, Position: 0, Payload: []byte("hi\n")}},
		{Stream: frames.StreamID{Node: "n2", Life: 1}, Frame: frames.Frame{Channel: 1, Position: 0, Payload: []byte("other\n")}},
		{Stream: frames.StreamID{Node: "n1", Life: 7}, Frame: frames.Frame{Channel: 3, Position: 1, Payload: []byte("there\n")}},
	} {
		legacy = wireformat.AppendLegacyDelivery(legacy, d)
	}
	return map[string][]byte{"stream.dsq1": dsq, "envelopes.legacy": legacy}
}

func TestImportFixtures(t *testing.T) {
	dir := filepath.Join("testdata", "imports")
	for name, want := range importFixtures(t) {
		path := filepath.Join(dir, name)
		if os.Getenv("DS_UPDATE") != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is not what importFixtures makes (%v): run DS_UPDATE=1 go test ./cmd/ds -run TestImportFixtures", path, err)
		}
	}
}

// runDS runs ds in-process and returns its exit status, stdout and
// stderr.
func runInputs(t *testing.T, stdin io.Reader, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	code := run(append([]string{"ds"}, args...), stdin, &out, &errb)
	return code, out.String(), errb.String()
}

// splitCapture writes one stream with a clock reading before each pair of
// lines and a new segment every few hundred bytes, and returns it whole
// and cut at a segment header that does not start with a clock reading
// (so that the second file starts in the middle of a drain tick).
func splitCapture(t *testing.T) (whole, first, second []byte) {
	t.Helper()
	s := frames.StreamID{Node: "split", Life: 1}
	catalog := []frames.ChannelDescriptor{
		{Stream: s, ID: 1, Name: "proc.job.stdout", Content: frames.TextStream()},
		{Stream: s, ID: 2, Name: frames.ClockChannel, Content: frames.JSONRecord(frames.ClockChannel)},
	}
	var buf bytes.Buffer
	w, err := segments.NewWriter(&buf, frames.StreamDescriptor{Stream: s}, catalog, segments.WriterOptions{SegmentSize: 400})
	if err != nil {
		t.Fatal(err)
	}
	pos := frames.Position(0)
	write := func(ch frames.ChannelID, payload string) {
		if err := w.WriteFrame(frames.Frame{Channel: ch, Position: pos, Payload: []byte(payload)}); err != nil {
			t.Fatal(err)
		}
		pos++
	}
	for i := range 30 {
		ns := int64(1_800_000_000_000_000_000 + i*10_000_000)
		write(2, fmt.Sprintf(`{"unix_ns":%d,"mono_ns":%d}`, ns, i))
		write(1, fmt.Sprintf("line %d\n", 2*i))
		write(1, fmt.Sprintf("line %d\n", 2*i+1))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	whole = buf.Bytes()
	r := segments.NewReader(bytes.NewReader(whole), segments.ReaderOptions{})
	cut, afterHeader := int64(-1), false
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if e.Kind == segments.EntrySegment && e.Offset > 0 {
			cut, afterHeader = e.Offset, true
			continue
		}
		if e.Kind == segments.EntryFrame && afterHeader {
			if e.Frame.Channel != 2 {
				break
			}
			afterHeader = false
		}
	}
	if cut <= 0 || !afterHeader {
		t.Fatal("no segment that starts in the middle of a tick")
	}
	return whole, whole[:cut], whole[cut:]
}

// TestLogSplitStream: a stream split across two files, the second
// starting in the middle of a drain tick, comes out whole, as from one
// file, in either argument order.
func TestLogSplitStream(t *testing.T) {
	whole, first, second := splitCapture(t)
	dir := t.TempDir()
	paths := map[string][]byte{"whole.dss": whole, "a.dss": first, "b.dss": second}
	for name, b := range paths {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := func(name string) string { return filepath.Join(dir, name) }
	code, want, stderr := runInputs(t, nil, "log", p("whole.dss"))
	if code != 0 || stderr != "" || !strings.Contains(want, "line 0\n") || !strings.Contains(want, "line 59\n") {
		t.Fatalf("whole: exit %d\n%s\n%s", code, want, stderr)
	}
	for _, args := range [][]string{{p("a.dss"), p("b.dss")}, {p("b.dss"), p("a.dss")}} {
		code, got, stderr := runInputs(t, nil, append([]string{"log"}, args...)...)
		if code != 0 || stderr != "" || got != want {
			t.Errorf("ds log %s: exit %d, stderr %q\n%s\nwant\n%s", strings.Join(args, " "), code, stderr, got, want)
		}
	}
}

// TestLogMergeDamage: with several inputs, the damage of each is reported
// with its own name, on stderr and in the log, and the exit status is 3.
func TestLogMergeDamage(t *testing.T) {
	dir := t.TempDir()
	whole, _, _ := splitCapture(t)
	good, bad := filepath.Join(dir, "good.dss"), filepath.Join(dir, "bad.dss")
	if err := os.WriteFile(good, whole, 0o644); err != nil {
		t.Fatal(err)
	}
	torn := append(bytes.Clone(whole), wireformat.Magic[:5]...)
	if err := os.WriteFile(bad, torn, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{bad, good}, {good, bad}} {
		code, out, stderr := runInputs(t, nil, append([]string{"log"}, args...)...)
		if code != exitCorrupt {
			t.Errorf("exit %d, want %d", code, exitCorrupt)
		}
		if !strings.Contains(stderr, "ds: "+bad+": torn tail") || strings.Contains(stderr, good) {
			t.Errorf("stderr %q: want the torn tail of %s only", stderr, bad)
		}
		if !strings.Contains(out, bad+": torn tail") {
			t.Errorf("log: want a damage line naming %s\n%s", bad, out)
		}
	}
}

// TestInputErrors: exit statuses of bad inputs; the worst wins (an I/O
// error, then an input that is not a capture, then damage).
func TestInputErrors(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.dss")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.dss")
	for _, tc := range []struct {
		args   []string
		stdin  string
		code   int
		stderr string
	}{
		{[]string{"log", text}, "", exitUsage, "ds: " + text + ": not a capture (expected a DSS capture, a DSQ1 stream or legacy envelopes)\n"},
		{[]string{"log", "-"}, "plain text on stdin\n", exitUsage, "ds: -: not a capture (expected a DSS capture, a DSQ1 stream or legacy envelopes)\n"},
		{[]string{"log", empty}, "", exitOK, ""},
		{[]string{"log", "-"}, "", exitOK, ""},
		{[]string{"log", text, missing}, "", exitFailure, "no such file"},
		{[]string{"tail", text}, "", exitUsage, "not a capture"},
		{[]string{"log", "--follow", text}, "", exitUsage, "not a capture"},
	} {
		code, _, stderr := runInputs(t, strings.NewReader(tc.stdin), tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("ds %s: exit %d, stderr %q; want %d, %q", strings.Join(tc.args, " "), code, stderr, tc.code, tc.stderr)
		}
	}
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// checkCapture writes a capture of stream s: n text frames at positions
// 0..n-1 (skipping those in skip), in one segment, ended.
func checkCapture(t testing.TB, s frames.StreamID, n int, skip ...int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := segments.NewWriter(&buf, frames.StreamDescriptor{Stream: s}, []frames.ChannelDescriptor{
		{Stream: s, ID: 1, Name: "out", Content: frames.TextStream()},
	}, segments.WriterOptions{Compression: segments.CompressNone})
	if err != nil {
		t.Fatal(err)
	}
	for p := range n {
		if slices.Contains(skip, p) {
			continue
		}
		if err := w.WriteFrame(frames.Frame{Channel: 1, Position: frames.Position(p), Payload: []byte("line\n")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// lastSummary returns the offset and content of the last record of data,
// a SegmentSummary.
func lastSummary(t *testing.T, data []byte) (int, wireformat.Summary) {
	t.Helper()
	// A summary record ends the capture; its size field (the last bytes
	// of its JSON body) says where it starts.
	n, ok := wireformat.SummaryRecordSize(data)
	if !ok {
		t.Fatal("the capture does not end with a summary")
	}
	off := len(data) - n
	sum, _, ok := wireformat.FindSummary(data)
	if !ok {
		t.Fatal("the capture's summary does not check")
	}
	return off, sum
}

// runCheckOn writes files into a temporary directory and runs ds check
// on them; it returns stdout, stderr and the exit status.
func runCheckOn(t *testing.T, opts checkOptions, files map[string][]byte, names ...string) (string, string, int) {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	var stdout, stderr bytes.Buffer
	err := runCheck(context.Background(), opts, names, strings.NewReader(""), &stdout, &stderr)
	return stdout.String(), stderr.String(), exitCode(err, &stderr)
}

// A summary is never trusted over its segment's frames: one that counts
// other frames, other positions or another order than its segment holds
// is a problem (exit 3), named with both offsets; one that agrees is not.
func TestCheckSummaryDisagrees(t *testing.T) {
	s := frames.StreamID{Node: "n", Life: 1}
	good := checkCapture(t, s, 10)
	off, sum := lastSummary(t, good)
	if out, _, code := runCheckOn(t, checkOptions{}, map[string][]byte{"good.dss": good}, "good.dss"); code != 0 || !strings.Contains(out, "good.dss: ok:") {
		t.Fatalf("a clean capture: exit %d\n%s", code, out)
	}
	for _, tc := range []struct {
		name  string
		lie   func(*wireformat.Summary)
		wants []string
	}{
		{"frames", func(s *wireformat.Summary) {
			s.Frames++
			s.Bytes += 5
			s.Ordered = false
			s.Channels[0].Frames++
			s.Channels[0].Bytes += 5
		}, []string{"11 frames of 55 bytes, the segment holds 10 frames of 50 bytes", "ordered false, the segment's frames are in order"}},
		{"last", func(s *wireformat.Summary) {
			last := *s.Last + 5
			s.Last = &last
			s.Channels[0].Last = last
		}, []string{"positions 0–14, the segment's 0–9"}},
		{"ended", func(s *wireformat.Summary) { s.Ended = false }, []string{"ended false, the segment holds a StreamEnded record"}},
		{"channel", func(s *wireformat.Summary) {
			s.Channels[0].ID = 2
		}, []string{"channel 2: 10 frames of 50 bytes at 0–9, the segment's channel 1: 10 frames"}},
		{"seq", func(s *wireformat.Summary) { s.Seq = 4 }, []string{"sequence number 4, the header's 0"}},
		{"itself", func(s *wireformat.Summary) { s.Channels[0].Frames = 3 }, []string{"it contradicts itself (malformed record body: segment summary: channels count 3 frames"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lie := sum
			lie.Channels = slices.Clone(sum.Channels)
			tc.lie(&lie)
			rec, err := wireformat.AppendSummary(nil, &lie)
			if err != nil {
				t.Fatal(err)
			}
			bad := append(bytes.Clone(good[:off]), rec...)
			out, errOut, code := runCheckOn(t, checkOptions{}, map[string][]byte{"lie.dss": bad}, "lie.dss")
			if code != exitCorrupt || errOut != "" {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			line := ""
			for _, l := range strings.Split(out, "\n") {
				if strings.Contains(l, "disagrees") {
					line = l
				}
			}
			if !strings.HasPrefix(line, "lie.dss: byte ") || !strings.Contains(line, "summary of stream n#1's segment at byte 0 disagrees with its frames: ") {
				t.Fatalf("no disagreement line:\n%s", out)
			}
			for _, w := range tc.wants {
				if !strings.Contains(line, w) {
					t.Errorf("line %q lacks %q", line, w)
				}
			}
			if !strings.Contains(out, "lie.dss: 1 problem:") {
				t.Errorf("no problem counted:\n%s", out)
			}
		})
	}
}

// A segment damaged inside has its summary left uncompared: the damage is
// the finding, once.
func TestCheckDamagedSegmentSummary(t *testing.T) {
	s := frames.StreamID{Node: "n", Life: 1}
	data := checkCapture(t, s, 10)
	off, _ := lastSummary(t, data)
	data[off-30] ^= 0xFF // inside a frame record
	out, _, code := runCheckOn(t, checkOptions{Quiet: true}, map[string][]byte{"d.dss": data}, "d.dss")
	if code != exitCorrupt {
		t.Fatalf("exit %d", code)
	}
	if strings.Contains(out, "disagrees") || strings.Count(out, "damaged") != 1 {
		t.Fatalf("want one damaged range and no summary finding:\n%s", out)
	}
}

// --json gives one object per line, "input" and "kind" first, in the
// shapes the flag documents; -q leaves out what is no problem.
func TestCheckJSON(t *testing.T) {
	s := frames.StreamID{Node: "n", Life: 1}
	data := checkCapture(t, s, 10, 4, 5)
	torn := data[:len(data)-3]
	out, _, code := runCheckOn(t, checkOptions{JSON: true}, map[string][]byte{"a.dss": data, "t.dss": torn}, "a.dss", "t.dss")
	if code != exitCorrupt {
		t.Fatalf("exit %d", code)
	}
	var kinds []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, `{"input":"`) || !strings.Contains(line, `","kind":"`) {
			t.Fatalf("line %q does not start with input and kind", line)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		kinds = append(kinds, m["input"].(string)+":"+m["kind"].(string))
		if m["kind"] == "stream" && m["input"] == "a.dss" {
			gaps := m["gap_list"].([]any)
			if m["gaps"].(float64) != 1 || m["missing"].(float64) != 2 || len(gaps) != 1 || m["first"].(float64) != 0 || m["last"].(float64) != 9 || m["ended"] != true || m["trimmed_below"] != nil {
				t.Errorf("stream object %s", line)
			}
		}
		if m["kind"] == "torn" && (m["offset"].(float64) <= 0 || m["error"] != "unexpected EOF") {
			t.Errorf("torn object %s", line)
		}
	}
	want := []string{"a.dss:stream", "a.dss:input", "t.dss:torn", "t.dss:stream", "t.dss:input"}
	if !slices.Equal(kinds, want) {
		t.Fatalf("kinds %v, want %v", kinds, want)
	}
	out, _, _ = runCheckOn(t, checkOptions{JSON: true, Quiet: true}, map[string][]byte{"a.dss": data, "t.dss": torn}, "a.dss", "t.dss")
	if n := strings.Count(out, "\n"); n != 2 || !strings.Contains(out, `"kind":"torn"`) || !strings.Contains(out, `"input":"t.dss","kind":"input"`) {
		t.Fatalf("-q --json:\n%s", out)
	}
}

// A capture a writer still holds (ds wrap's lock) ends in a record being
// written: no torn tail, no problem.
func TestCheckLive(t *testing.T) {
	s := frames.StreamID{Node: "n", Life: 1}
	data := checkCapture(t, s, 10)
	dir := t.TempDir()
	path := filepath.Join(dir, "live.dss")
	if err := os.WriteFile(path, data[:len(data)-3], 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Skipf("flock: %v", err)
	}
	var stdout, stderr bytes.Buffer
	err = runCheck(context.Background(), checkOptions{}, []string{path}, nil, &stdout, &stderr)
	if err != nil || !strings.Contains(stdout.String(), "still being written") || strings.Contains(stdout.String(), "torn") {
		t.Fatalf("err %v\n%s", err, stdout.String())
	}
}

// A Trimmed record says where the stream starts: positions below are no
// gap. In a capture file (not a store's read-out) frames left below it are
// shown, not hidden, and a problem.
func TestCheckTrimmed(t *testing.T) {
	s := frames.StreamID{Node: "n", Life: 1}
	var buf bytes.Buffer
	w, err := segments.NewWriter(&buf, frames.StreamDescriptor{Stream: s}, nil, segments.WriterOptions{Compression: segments.CompressNone})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteTrimmed(5); err != nil {
		t.Fatal(err)
	}
	for _, p := range []frames.Position{3, 4, 8, 9, 11} {
		if err := w.WriteFrame(frames.Frame{Channel: 1, Position: p, Payload: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out, _, code := runCheckOn(t, checkOptions{}, map[string][]byte{"t.dss": buf.Bytes()}, "t.dss")
	want := "t.dss: stream n#1: 5 frames of 5 bytes in 1 segment, positions 8–11, 1 gap (1 position missing: 10), trimmed below 5 (2 positions below it, shown), ended\n"
	if code != 3 || !strings.Contains(out, want) || !strings.Contains(out, "t.dss: stream n#1: a Trimmed record (positions below 5) in a capture file, which holds 2 frames below it") {
		t.Fatalf("exit %d, want %q in\n%s", code, want, out)
	}
}

// The same channel id declared two ways, in one input or across two,
// is a problem naming both places, reported once.
func TestCheckCatalogConflict(t *testing.T) {
	s := frames.StreamID{Node: "n", Life: 1}
	write := func(content frames.ChannelContent, label *string) []byte {
		var buf bytes.Buffer
		w, err := segments.NewWriter(&buf, frames.StreamDescriptor{Stream: s}, []frames.ChannelDescriptor{{Stream: s, ID: 1, Name: "out", Label: label, Content: content}},
			segments.WriterOptions{Compression: segments.CompressNone, SegmentSize: 100})
		if err != nil {
			t.Fatal(err)
		}
		for p := range 5 {
			if err := w.WriteFrame(frames.Frame{Channel: 1, Position: frames.Position(p), Payload: []byte("line\n")}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	label := "x"
	a, b, c := write(frames.TextStream(), nil), write(frames.Bytes(), nil), write(frames.TextStream(), &label)
	ab := append(bytes.Clone(a), b...)
	out, _, code := runCheckOn(t, checkOptions{Quiet: true}, map[string][]byte{"ab.dss": ab, "a.dss": a, "c.dss": c}, "ab.dss", "a.dss", "c.dss")
	if code != exitCorrupt {
		t.Fatalf("exit %d", code)
	}
	wants := []string{
		`ab.dss: stream n#1: channel 1 declared as "out" (TextStream) at byte 0 and as "out" (Bytes) at byte ` + strconv.Itoa(len(a)) + "\n",
		`c.dss: stream n#1: channel 1 declared as "out" (TextStream) in ab.dss at byte 0 and as "out" (TextStream, label "x") at byte 0` + "\n",
	}
	for _, w := range wants {
		if strings.Count(out, w) != 1 {
			t.Errorf("want once %q in\n%s", w, out)
		}
	}
	if strings.Contains(out, "a.dss: 1 problem") {
		t.Errorf("a.dss agrees with the first declaration:\n%s", out)
	}
}

// Inputs that cannot be checked: the worst status wins, each said once
// on stderr.
func TestCheckStatus(t *testing.T) {
	s := frames.StreamID{Node: "n", Life: 1}
	good := checkCapture(t, s, 3)
	for _, tc := range []struct {
		names []string
		code  int
		err   string
	}{
		{[]string{"good.dss"}, 0, ""},
		{[]string{"good.dss", "text.txt"}, exitUsage, "ds: text.txt: not a capture"},
		{[]string{"torn.dss", "text.txt"}, exitUsage, "ds: text.txt: not a capture"},
		{[]string{"torn.dss", "missing.dss"}, exitFailure, "ds: open missing.dss: no such file or directory"},
		{[]string{"torn.dss", "good.dss"}, exitCorrupt, ""},
		{[]string{"empty.dss"}, 0, ""},
	} {
		_, errOut, code := runCheckOn(t, checkOptions{}, map[string][]byte{"good.dss": good, "torn.dss": good[:len(good)-1], "text.txt": []byte("hello\n"), "empty.dss": nil}, tc.names...)
		if code != tc.code || !strings.HasPrefix(errOut, tc.err) || (tc.err == "" && errOut != "") {
			t.Errorf("%v: exit %d, stderr %q; want %d, %q", tc.names, code, errOut, tc.code, tc.err)
		}
	}
	var stdout, stderr bytes.Buffer
	err := runCheck(context.Background(), checkOptions{}, []string{"-"}, bytes.NewReader(good), &stdout, &stderr)
	if err != nil || !strings.Contains(stdout.String(), "-: ok: ") {
		t.Fatalf("stdin: %v\n%s", err, stdout.String())
	}
}

// FuzzCheck: ds check reads any bytes on stdin without panicking, says
// what it found, and exits 0 (clean), 2 (no capture) or 3 (a problem).
func FuzzCheck(f *testing.F) {
	s := frames.StreamID{Node: "n", Life: 1}
	good := checkCapture(f, s, 5)
	f.Add(good)
	f.Add(good[:len(good)-3])
	f.Add(append(bytes.Clone(good), good...))
	for _, dir := range []string{"../../testdata/corrupt", "../../testdata/capture", "testdata/imports"} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if data, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil && !strings.HasSuffix(e.Name(), ".golden") {
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var stdout, stderr bytes.Buffer
		err := runCheck(context.Background(), checkOptions{}, []string{"-"}, bytes.NewReader(data), &stdout, &stderr)
		switch code := exitCode(err, &stderr); code {
		case exitOK, exitCorrupt:
			if !strings.Contains(stdout.String(), "\n-: ") && !strings.HasPrefix(stdout.String(), "-: ") {
				t.Fatalf("exit %d without a line for the input:\n%s", code, stdout.String())
			}
		case exitUsage:
			if !strings.Contains(stderr.String(), "not a capture") {
				t.Fatalf("exit 2: %s", stderr.String())
			}
		default:
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	})
}

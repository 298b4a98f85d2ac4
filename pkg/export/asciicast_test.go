package export

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/views"
)

// castHeader is an asciicast v2 header, as the spec lists its fields.
type castHeader struct {
	Version       int               `json:"version"`
	Width         int               `json:"width"`
	Height        int               `json:"height"`
	Timestamp     *int64            `json:"timestamp"`
	Duration      *float64          `json:"duration"`
	IdleTimeLimit *float64          `json:"idle_time_limit"`
	Command       string            `json:"command"`
	Title         string            `json:"title"`
	Env           map[string]string `json:"env"`
	Theme         json.RawMessage   `json:"theme"`
}

// castEvent is one event line: [time, code, data].
type castEvent struct {
	Time float64
	Code string
	Data string
}

// parseCast decodes an asciicast v2 file strictly: a header of known
// fields with version 2 and a positive size, then events of three
// elements each (a time that never decreases, a known code, data that is
// a string of UTF-8), and nothing else.
func parseCast(t testing.TB, cast string) (castHeader, []castEvent) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(cast))
	sc.Buffer(nil, 16<<20)
	if !sc.Scan() {
		t.Fatal("empty asciicast")
	}
	var h castHeader
	dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		t.Fatalf("header %s: %v", sc.Text(), err)
	}
	if h.Version != 2 || h.Width <= 0 || h.Height <= 0 {
		t.Fatalf("header %s: want version 2 and a positive width and height", sc.Text())
	}
	var evs []castEvent
	prev := 0.0
	for n := 2; sc.Scan(); n++ {
		var raw []json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil || len(raw) != 3 {
			t.Fatalf("line %d %s: want [time, code, data] (%v)", n, sc.Text(), err)
		}
		var ev castEvent
		if err := json.Unmarshal(raw[0], &ev.Time); err != nil || ev.Time < prev || math.IsNaN(ev.Time) {
			t.Fatalf("line %d %s: time not a number at or after %v (%v)", n, sc.Text(), prev, err)
		}
		prev = ev.Time
		if err := json.Unmarshal(raw[1], &ev.Code); err != nil || !strings.Contains("o i m r", ev.Code) || len(ev.Code) != 1 {
			t.Fatalf("line %d %s: unknown event code", n, sc.Text())
		}
		if err := json.Unmarshal(raw[2], &ev.Data); err != nil || !utf8.ValidString(ev.Data) {
			t.Fatalf("line %d %s: data not a UTF-8 string (%v)", n, sc.Text(), err)
		}
		evs = append(evs, ev)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return h, evs
}

// TestAsciicastParsesAndTimesMatchClock exports the standard run and
// checks the file as asciicast v2, and that each output event's time is
// its frame's time in ds log --json=frames, less the first one's.
func TestAsciicastParsesAndTimesMatchClock(t *testing.T) {
	path := writeCapture(t, t.TempDir(), standardRun()...)
	cast, stderr, res := export(t, Options{Format: Asciicast, Title: "a run"}, path)
	if stderr != "" {
		t.Errorf("stderr %q", stderr)
	}
	h, evs := parseCast(t, cast)
	if h.Width != 80 || h.Height != 24 || h.Timestamp == nil || *h.Timestamp != fixtureStart/1e9 ||
		h.Command != "make -j2 'test it'" || h.Title != "a run" {
		t.Errorf("header %+v", h)
	}
	if res.Records != uint64(len(evs)) || res.Streams != 1 {
		t.Errorf("result %+v, %d events", res, len(evs))
	}

	// The frames of the text channels, as ds log --json=frames has them.
	var times []float64
	start := time.Time{}
	for _, line := range strings.Split(strings.TrimSpace(logJSON(t, true, path)), "\n") {
		var o struct {
			Channel string
			Time    time.Time
			Gap     json.RawMessage
		}
		if err := json.Unmarshal([]byte(line), &o); err != nil {
			t.Fatal(err)
		}
		if start.IsZero() {
			start = o.Time
		}
		switch {
		case o.Gap != nil: // a note has no "time" (want below has it)
			times = append(times, math.NaN())
		case strings.HasSuffix(o.Channel, ".stdout") || strings.HasSuffix(o.Channel, ".stderr"):
			times = append(times, o.Time.Sub(start).Seconds())
		}
	}
	if len(times) != len(evs) {
		t.Fatalf("%d events, %d text frames and gaps in ds log --json=frames:\n%s", len(evs), len(times), cast)
	}
	for i, ev := range evs {
		if !math.IsNaN(times[i]) && math.Abs(ev.Time-times[i]) > 1e-6 {
			t.Errorf("event %d %+v: time %v, want %v (the clock record's)", i, ev, ev.Time, times[i])
		}
	}

	want := []castEvent{
		{0, "o", "building\r\n"},
		{0.01, "o", "warning: unused x\r\n"},
		{0.01, "o", "half a "},
		{0.26, "o", "line\r\nprice 10 "},
		{0.26, "o", "€\r\n"},
		{0.260005, "m", "position 10 missing (1 frame)"},
		{0.260005, "o", "bad \uFFFD byte\r\n"},
	}
	if diff := cmp.Diff(want, evs); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestAsciicastTerminalBytes checks how frames become output events: a
// capture made without a pty gets CR before each LF that has none (CR LF
// stays, also across frames), one made with a pty keeps its bytes, a
// character its stream never completed is U+FFFD at the end, and a
// clock set back does not make time run backwards (the wall clock less
// its steps: the monotonic clock's 2 s).
func TestAsciicastTerminalBytes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []step
		want  []castEvent
	}{{
		name: "no pty",
		steps: []step{tick(0),
			out("a\nb\r\nc\r"), out("\nd\n\n"), tick(1e9), stepBack(1e9), out("e\xe2\x82")},
		want: []castEvent{{0, "o", "a\r\nb\r\nc\r"}, {0, "o", "\nd\r\n\r\n"}, {2, "o", "e"}, {2, "o", "\uFFFD\uFFFD"}},
	}, {
		name: "pty",
		steps: []step{tick(0), life(`{"event":"started","argv":["vi"],"pty":true}`),
			out("a\nb\r\n\x1b[2J"), out("\xf0\x9f"), out("\x98\x80")},
		want: []castEvent{{0, "o", "a\nb\r\n\x1b[2J"}, {0, "o", "😀"}},
	}, {
		name:  "bytes that never make a character",
		steps: []step{tick(0), out("\xc0"), out("\xed\xa0"), out("\x80\n")},
		want:  []castEvent{{0, "o", "\uFFFD"}, {0, "o", "\uFFFD\uFFFD"}, {0, "o", "\uFFFD\r\n"}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeCapture(t, t.TempDir(), tc.steps...)
			cast, _, _ := export(t, Options{Format: Asciicast, Width: 132, Height: 43}, path)
			h, evs := parseCast(t, cast)
			if h.Width != 132 || h.Height != 43 {
				t.Errorf("header %+v, want 132×43", h)
			}
			if diff := cmp.Diff(tc.want, evs); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAsciicastEmpty checks that an export of nothing is a header alone.
func TestAsciicastEmpty(t *testing.T) {
	path := writeCapture(t, t.TempDir(), tick(0))
	cast, _, res := export(t, Options{Format: Asciicast}, path)
	if cast != "{\"version\": 2, \"width\": 80, \"height\": 24}\n" || res.Records != 0 {
		t.Errorf("got %q, %+v", cast, res)
	}
}

// TestAsciinemaCat plays the standard run's export with asciinema cat
// (asciinema's own reader), when asciinema is installed: its output is
// the events' data.
func TestAsciinemaCat(t *testing.T) {
	bin, err := exec.LookPath("asciinema")
	if err != nil {
		t.Skip("asciinema not installed")
	}
	dir := t.TempDir()
	path := writeCapture(t, dir, standardRun()...)
	cast, _, _ := export(t, Options{Format: Asciicast}, path)
	file := filepath.Join(dir, "run.cast")
	if err := os.WriteFile(file, []byte(cast), 0o644); err != nil {
		t.Fatal(err)
	}
	// asciinema cat opens /dev/tty (to put it in raw mode): give it a
	// pseudo-terminal as its controlling terminal, and stdout a pipe.
	tty := openTTY(t)
	cmd := exec.Command(bin, "cat", file)
	cmd.Env = append(os.Environ(), "HOME="+dir, "ASCIINEMA_CONFIG_HOME="+dir)
	cmd.Stdin = tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	got, err := cmd.Output()
	if err != nil {
		t.Fatalf("asciinema cat: %v (%s)", err, got)
	}
	_, evs := parseCast(t, cast)
	var want strings.Builder
	for _, ev := range evs {
		if ev.Code == "o" {
			want.WriteString(ev.Data)
		}
	}
	if string(got) != want.String() {
		t.Errorf("asciinema cat printed %q, want %q", got, want.String())
	}
}

// openTTY opens a pseudo-terminal and returns its slave side (both sides
// are closed at the end of the test).
func openTTY(t *testing.T) *os.File {
	t.Helper()
	mfd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	master := os.NewFile(uintptr(mfd), "/dev/ptmx")
	t.Cleanup(func() { master.Close() })
	n, err := unix.IoctlGetUint32(mfd, unix.TIOCGPTN)
	if err == nil {
		err = unix.IoctlSetPointerInt(mfd, unix.TIOCSPTLCK, 0)
	}
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	slave, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { slave.Close() })
	return slave
}

// TestAsciicastMergedStreams exports two streams, merged by time, one of
// whose clocks is set back: the events of both are in one terminal and
// their times never decrease.
func TestAsciicastMergedStreams(t *testing.T) {
	dir := t.TempDir()
	a := writeStream(t, filepath.Join(dir, "a.dss"), fixtureStream, 0,
		tick(0), out("a1\n"), tick(1e9), out("a2\n"), stepBack(1e9), out("a3\n"), tick(1e9), out("a4\n"))
	b := writeStream(t, filepath.Join(dir, "b.dss"), frames.StreamID{Node: "other", Life: 7}, 500e6,
		tick(0), out("b1\n"), tick(1e9), out("b2\n"), tick(1e9), out("b3\n"), tick(1e9), out("b4\n"))
	cast, _, res := export(t, Options{Format: Asciicast}, a, b)
	_, evs := parseCast(t, cast)
	if len(evs) != 8 || res.Streams != 2 {
		t.Errorf("%d events of %d streams, want 8 of 2:\n%s", len(evs), res.Streams, cast)
	}
	if evs[0].Data != "a1\r\n" || evs[0].Time != 0 {
		t.Errorf("first event %+v, want a1 at 0", evs[0])
	}
}

// TestAsciicastSinceKeepsStart checks that a selection that leaves out
// the "started" record (--since after it, -c of the output only) still
// gives the header its command and the output its pty treatment: the
// record is read as the input is scanned, before the selection.
func TestAsciicastSinceKeepsStart(t *testing.T) {
	path := writeCapture(t, t.TempDir(), tick(0),
		life(`{"event":"started","argv":["vi","a b"],"pty":true}`),
		out("early\n"), tick(2e9), out("late\x1b[2J\n"))
	for _, tc := range []struct {
		name string
		sel  views.Selection
	}{
		{"since", views.Selection{Since: &views.TimeBound{FromStart: true, Offset: time.Second}}},
		{"channel", views.Selection{Channels: []frames.ChannelFilter{frames.NameChannel("proc.make.stdout")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cast, _, _ := export(t, Options{Format: Asciicast, Select: tc.sel}, path)
			h, evs := parseCast(t, cast)
			if h.Command != "vi 'a b'" {
				t.Errorf("header command %q, want %q", h.Command, "vi 'a b'")
			}
			last := evs[len(evs)-1]
			if last.Data != "late\x1b[2J\n" { // a pty's output passes as it is
				t.Errorf("last event %q, want the pty's bytes as they are", last.Data)
			}
		})
	}
}

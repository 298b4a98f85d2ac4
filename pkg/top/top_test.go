package top

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

var n1 = frames.StreamID{Node: "n1", Life: 7}

func catalog(s frames.StreamID) []frames.ChannelDescriptor {
	return []frames.ChannelDescriptor{
		{Stream: s, ID: 1, Name: "host.cpu", Content: frames.JSONRecord("host.cpu")},
		{Stream: s, ID: 2, Name: "host.mem", Content: frames.JSONRecord("host.mem")},
		{Stream: s, ID: 3, Name: "host.net", Content: frames.JSONRecord("host.net")},
		{Stream: s, ID: 4, Name: "host.gpu", Content: frames.JSONRecord("host.gpu")},
		{Stream: s, ID: 5, Name: "proc.make.stdout", Content: frames.TextStream()},
		{Stream: s, ID: 6, Name: "proc.make.stderr", Content: frames.TextStream()},
		{Stream: s, ID: 7, Name: "proc.make.lifecycle", Content: frames.JSONRecord("proc.lifecycle")},
	}
}

// feed gives m the catalog of s, then a frame per payload (channel,
// payload pairs).
func feed(m *Model, s frames.StreamID, evs ...any) {
	m.Header(segments.SegmentHeader{Stream: frames.StreamDescriptor{Stream: s}, Channels: catalog(s)})
	for i := 0; i+1 < len(evs); i += 2 {
		m.Frame(s, frames.Frame{Channel: frames.ChannelID(evs[i].(int)), Position: frames.Position(i / 2), Payload: []byte(evs[i+1].(string))})
	}
}

func cpu(ms int, total float64) string {
	return `{"schema":"host.cpu.v1","sample_unix_ms":` + itoa(ms) + `,"host":{"logical_cpus":4,"total_percent":` + ftoa(total) +
		`,"user_percent":10,"system_percent":2.5,"iowait_percent":0,"load1":0.55,"load5":0.49,"load15":0.41},` +
		`"cores":[{"cpu":0,"online":true,"total_percent":50},{"cpu":1,"online":true,"total_percent":0},{"cpu":2,"online":false},{"cpu":3,"online":true,"total_percent":100}]}`
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

const t0ms = 1732953600000 // 2024-11-30T08:00:00Z

// state is a model fed one stream's host samples, a process and its
// output.
func state() *Model {
	m := New(Options{History: 30})
	var evs []any
	for i := 0; i < 12; i++ {
		evs = append(evs, 1, cpu(t0ms+i*1000, float64(i*8)))
		evs = append(evs, 2, `{"sample_unix_ms":`+itoa(t0ms+i*1000)+`,"total_bytes":8589934592,"available_bytes":2147483648,"used_percent":75,"swap_total_bytes":1073741824,"swap_used_percent":50}`)
		evs = append(evs, 3, `{"sample_unix_ms":`+itoa(t0ms+i*1000)+`,"interfaces":[{"name":"lo","rx_bytes_per_s":250,"tx_bytes_per_s":250},{"name":"eth0","rx_bytes_per_s":`+itoa(1000*i)+`,"tx_bytes_per_s":512},{"name":"wlan0","rx_bytes_per_s":null,"tx_bytes_per_s":null}]}`)
	}
	evs = append(evs, 4, `{"sample_unix_ms":1732953611000,"gpus":[{"index":0,"name":"NVIDIA RTX 4090","utilization_gpu_percent":73,"memory_used_mib":8120,"memory_total_mib":24564,"temperature_c":61,"power_w":212.4}]}`)
	evs = append(evs, 7, `{"event":"started","pid":4242}`)
	evs = append(evs, 5, "gcc -c foo.c\ngcc -c b")
	evs = append(evs, 5, "ar.c\n")
	evs = append(evs, 6, "bar.c:3: warning: \x1b[2J unused\tx\n")
	evs = append(evs, 5, "50%\r75%\r100%\n")
	evs = append(evs, 1, `{not json`)
	feed(m, n1, evs...)
	return m
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if os.Getenv("DS_UPDATE") != "" {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("%s (-want +got):\n%s", name, d)
	}
}

// checkFrame checks that a frame has at most h lines (h > 0) of at most
// w cells.
func checkFrame(t *testing.T, f string, w, h int) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(f, "\n"), "\n")
	if h > 0 && len(lines) > h {
		t.Errorf("%d lines, want at most %d", len(lines), h)
	}
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > w {
			t.Errorf("line of %d cells, want at most %d: %q", n, w, l)
		}
	}
}

func TestRender(t *testing.T) {
	m := state()
	for _, tt := range []struct {
		name string
		o    RenderOptions
	}{
		{"frame_80x24.golden", RenderOptions{Width: 80, Height: 24}},
		{"frame_100x12.golden", RenderOptions{Width: 100, Height: 12, Status: "q to quit"}},
		{"frame_40x0.golden", RenderOptions{Width: 40, Lines: 2}},
	} {
		f := m.Render(tt.o)
		golden(t, tt.name, f)
		checkFrame(t, f, tt.o.Width, tt.o.Height)
		if strings.Contains(f, "\x1b") {
			t.Errorf("%s: an escape sequence without Color", tt.name)
		}
	}
	if f := m.Render(RenderOptions{Width: 80, Height: 24, Color: true}); !strings.Contains(f, "\x1b[1m") || !strings.Contains(f, "\x1b[31m") {
		t.Error("no styles with Color")
	}
	// Nothing yet.
	if f := New(Options{}).Render(RenderOptions{Width: 80, Height: 24}); f != "ds top  0 streams, 0 frames\nwaiting for host samples or text lines…\n" {
		t.Errorf("empty frame %q", f)
	}
}

// Several streams: a section each, lines with their node; the process
// exits; a partial line shows once the input goes quiet.
func TestRenderStreams(t *testing.T) {
	m := New(Options{})
	n2 := frames.StreamID{Node: "n\x1b2", Life: 1}
	feed(m, n1, 1, cpu(t0ms, 10), 7, `{"event":"started","pid":1}`, 7, `{"event":"exited","status":{"kind":"code","value":2}}`)
	feed(m, n2, 2, `{"sample_unix_ms":1732953601000,"used_percent":20}`, 5, "no newline yet", 7, `{"event":"exited","status":{"kind":"signal","value":9,"name":"KILL"}}`)
	m.Idle(false)
	if strings.Contains(m.Render(RenderOptions{Width: 80}), "no newline yet") {
		t.Error("a partial line shown before the input went quiet")
	}
	m.Idle(true)
	m.Damage(10, 20, false, io.ErrUnexpectedEOF)
	m.Ended(n1)
	golden(t, "frame_streams.golden", m.Render(RenderOptions{Width: 80}))
}

// fakeOut records what Run writes.
type fakeOut struct{ strings.Builder }

func TestRunPlain(t *testing.T) {
	m := state()
	ticks := make(chan time.Time)
	done := make(chan struct{})
	var out fakeOut
	errc := make(chan error, 1)
	go func() {
		errc <- Run(context.Background(), m, Screen{Out: &out, Size: func() (int, int) { return 60, 0 }}, Events{Ticks: ticks, Done: done})
	}()
	ticks <- time.Time{}
	ticks <- time.Time{} // the first frame, then one per tick
	close(done)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	frames := strings.Split(out.String(), "\n\n")
	if len(frames) != 5 || frames[4] != "" { // 4 frames, each ended by an empty line
		t.Fatalf("%d frames, want 4:\n%s", len(frames)-1, out.String())
	}
	if !strings.Contains(frames[3], "(input ended)") || strings.Contains(frames[2], "(input ended)") {
		t.Errorf("the last frame does not say the input ended:\n%s", out.String())
	}
	if strings.Contains(out.String(), "\x1b") {
		t.Error("escape sequences in plain snapshots")
	}
}

func TestRunTTY(t *testing.T) {
	m := state()
	redraw := make(chan struct{})
	keys, kw := io.Pipe()
	var out fakeOut
	errc := make(chan error, 1)
	size := 0
	go func() {
		errc <- Run(context.Background(), m, Screen{Out: &out, TTY: true, Size: func() (int, int) { size++; return 70 + size, 20 }}, Events{Redraw: redraw, Keys: keys})
	}()
	redraw <- struct{}{} // a resize: drawn again at the new size
	kw.Write([]byte("xq"))
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if !strings.HasPrefix(s, Enter+"\x1b[H") || !strings.HasSuffix(s, "\x1b[J"+Leave) {
		t.Errorf("not entered and left: %q … %q", s[:min(len(s), 20)], s[max(len(s)-20, 0):])
	}
	if n := strings.Count(s, "\x1b[H"); n != 2 {
		t.Errorf("%d frames, want 2", n)
	}
	first := strings.Split(s, "\x1b[H")[1]
	want := strings.Count(m.Render(RenderOptions{Width: 71, Height: 20}), "\n")
	if n := strings.Count(first, "\r\n"); n+1 != want {
		t.Errorf("a frame of %d lines, want %d", n+1, want)
	}
	if !strings.Contains(first, "(q to quit)") {
		t.Errorf("the frame does not say q quits:\n%s", first)
	}

	// Ctrl-C quits too; so does ctx.
	keys, kw = io.Pipe()
	go func() { errc <- Run(context.Background(), m, Screen{Out: io.Discard, TTY: true}, Events{Keys: keys}) }()
	kw.Write([]byte{3})
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Run(ctx, m, Screen{Out: io.Discard, TTY: true}, Events{}); err != nil {
		t.Fatal(err)
	}
}

// A host is shown by node: a restarted ds host (another life) goes on
// in the same panel, its history kept.
func TestHostByNode(t *testing.T) {
	m := New(Options{})
	feed(m, frames.StreamID{Node: "n1", Life: 1}, 1, cpu(t0ms, 10), 1, cpu(t0ms+1000, 20))
	feed(m, frames.StreamID{Node: "n1", Life: 2}, 1, cpu(t0ms+5000, 90))
	f := m.Render(RenderOptions{Width: 120})
	if strings.Count(f, "CPU ") != 1 || !strings.Contains(f, " 90.0% ") || !strings.Contains(f, "2 streams, 3 frames") {
		t.Errorf("two lives of one node:\n%s", f)
	}
	if !strings.Contains(f, "▂▂▇") {
		t.Errorf("the history does not go on across lives:\n%s", f)
	}
}

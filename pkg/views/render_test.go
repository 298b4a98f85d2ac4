package views

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// printItems declares C1 host.resource (record) and C2 proc.trainer.stdout
// (text) on S, assembles fs in order and renders them.
func printItems(t *testing.T, opts LogOptions, fs ...frames.Frame) string {
	t.Helper()
	var out bytes.Buffer
	p := NewPrinter(&out, opts)
	p.Stream(frames.StreamDescriptor{Stream: S})
	p.Channel(frames.ChannelDescriptor{Stream: S, ID: 1, Name: "host.resource", Content: frames.JSONRecord("host.resource")})
	p.Channel(frames.ChannelDescriptor{Stream: S, ID: 2, Name: "proc.trainer.stdout", Content: frames.TextStream()})
	p.Channel(frames.ChannelDescriptor{Stream: S, ID: 3, Name: "datastream.clock", Content: frames.JSONRecord("datastream.clock")})
	a := NewAssembler(0, p.Item)
	for _, f := range fs {
		a.Add(S, f)
	}
	a.Flush()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func on(ch frames.ChannelID, pos uint64, payload string) frames.Frame {
	return frames.Frame{Channel: ch, Position: frames.Position(pos), Payload: []byte(payload)}
}

const res0 = `{"cpu_pct": 12.5, "mem_mb": 1024}`

// CONFORMANCE §3.7: names resolve; a record, a gap, then text.
func TestLogTextMergedWithNames(t *testing.T) {
	got := printItems(t, LogOptions{}, on(1, 0, res0), on(2, 2, "hello"))
	want := "" +
		"     0  host.resource        {\"cpu_pct\":12.5,\"mem_mb\":1024}\n" +
		"     ~  gap                  positions 1 missing (1 frame)\n" +
		"     2  proc.trainer.stdout  hello\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// CONFORMANCE §3.7, §3.6: what cannot be decoded is shown raw, escaped.
func TestLogTextRawFallbacks(t *testing.T) {
	cyclic := make([]byte, 16)
	for i := range cyclic {
		cyclic[i] = byte(i)
	}
	got := printItems(t, LogOptions{},
		on(1, 0, "not-json{oops"),
		on(2, 1, "\xFF\xFE\n"),
		frames.Frame{Channel: 99, Position: 2, Payload: cyclic},
	)
	want := "" +
		"     0  host.resource        not-json{oops\n" +
		"     1  proc.trainer.stdout  \\xff\\xfe\n" +
		"     2  #99                  \\x00\\x01\\x02\\x03\\x04\\x05\\x06\\x07\\x08\\x09\\x0a\\x0b\\x0c\\x0d\\x0e\\x0f\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// A text line split across frames is shown once, whole, at the position
// where it started; CRLF is a line end; a bare CR renders as a terminal
// would; the writer's own clock channel is hidden (and so does not cut the
// line it falls in: see TestLogPartialLineOrder).
func TestLogTextLineJoiningAndCR(t *testing.T) {
	fs := []frames.Frame{
		on(1, 0, `{"a":1}`),
		on(2, 1, "compil"),
		on(2, 2, "ing foo.c\r\nnext"),
		on(3, 3, `{"unix_ns":1,"mono_ns":0}`),
		on(2, 4, " line\n 10%\r 50%\r100%\n"),
		on(2, 5, "unterminated"),
	}
	got := printItems(t, LogOptions{}, fs...)
	want := "" +
		"     0  host.resource        {\"a\":1}\n" +
		"     1  proc.trainer.stdout  compiling foo.c\n" +
		"     2  proc.trainer.stdout  next line\n" +
		"     4  proc.trainer.stdout  100%\n" +
		"     5  proc.trainer.stdout  unterminated\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	all := printItems(t, LogOptions{CRSegments: true, All: true}, fs...)
	for _, want := range []string{"  10%\n", "  50%\n", "  100%\n", "datastream.clock"} {
		if !strings.Contains(all, want) {
			t.Errorf("--cr-segments --all output lacks %q:\n%s", want, all)
		}
	}
}

func TestLogChannelFilter(t *testing.T) {
	got := printItems(t, LogOptions{Channels: []frames.ChannelFilter{frames.ParseChannelPattern("proc.*")}}, on(1, 0, res0), on(2, 1, "hi\n"), frames.Frame{Channel: 9, Position: 2, Payload: []byte("x")})
	if want := "     1  proc.trainer.stdout  hi\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	clock := printItems(t, LogOptions{Channels: []frames.ChannelFilter{frames.NameChannel("datastream.clock")}}, on(3, 0, `{"unix_ns":5}`))
	if !strings.Contains(clock, "datastream.clock") {
		t.Fatalf("an explicit -c must show datastream.* channels: %q", clock)
	}
}

func TestLogCatIsByteExact(t *testing.T) {
	payload := "a\x00b\xff\r\n partial"
	got := printItems(t, LogOptions{Format: FormatCat}, on(1, 0, res0), on(2, 1, payload[:5]), on(2, 3, payload[5:]))
	if got != payload {
		t.Fatalf("cat = %q, want %q (text channels only, no gap line)", got, payload)
	}
	got = printItems(t, LogOptions{Format: FormatCat, Channels: []frames.ChannelFilter{frames.NameChannel("host.resource")}}, on(1, 0, res0), on(2, 1, "x"))
	if got != res0 {
		t.Fatalf("cat -c record = %q", got)
	}
}

func TestLogJSON(t *testing.T) {
	got := printItems(t, LogOptions{Format: FormatJSON},
		on(3, 0, `{"unix_ns":1732953600123456789,"mono_ns":0}`),
		on(2, 1, "gcc -c foo.c\n"),
		on(1, 2, res0),
		on(2, 4, "\xff"),
		on(1, 5, "not-json"),
	)
	want := "" +
		`{"stream":"node-alpha#1","node":"node-alpha","life":1,"position":1,"channel":"proc.trainer.stdout","channel_id":2,"content":"TextStream","text":"gcc -c foo.c\n","time":"2024-11-30T08:00:00.123456789Z"}` + "\n" +
		`{"stream":"node-alpha#1","node":"node-alpha","life":1,"position":2,"channel":"host.resource","channel_id":1,"content":"JsonRecord","record":{"cpu_pct":12.5,"mem_mb":1024},"time":"2024-11-30T08:00:00.123456789Z"}` + "\n" +
		`{"stream":"node-alpha#1","node":"node-alpha","life":1,"gap":{"from":3,"to":3,"count":1}}` + "\n" +
		`{"stream":"node-alpha#1","node":"node-alpha","life":1,"position":4,"channel":"proc.trainer.stdout","channel_id":2,"content":"TextStream","bytes_b64":"/w==","utf8":false,"time":"2024-11-30T08:00:00.123456789Z"}` + "\n" +
		`{"stream":"node-alpha#1","node":"node-alpha","life":1,"position":5,"channel":"host.resource","channel_id":1,"content":"JsonRecord","bytes_b64":"bm90LWpzb24=","invalid_json":true,"time":"2024-11-30T08:00:00.123456789Z"}` + "\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

func TestLogDamageAndStreams(t *testing.T) {
	var out bytes.Buffer
	p := NewPrinter(&out, LogOptions{})
	s2 := frames.StreamID{Node: "node-beta", Life: 2}
	p.Channel(frames.ChannelDescriptor{Stream: S, ID: 1, Name: "a", Content: frames.TextStream()})
	p.Channel(frames.ChannelDescriptor{Stream: s2, ID: 1, Name: "a", Content: frames.TextStream()})
	p.Item(Item{Kind: ItemFrame, Stream: S, Frame: on(1, 0, "one\n")})
	p.Damage("x.dss", 100, 150, false, nil)
	p.Item(Item{Kind: ItemFrame, Stream: s2, Frame: on(1, 0, "two\n")})
	p.Damage("x.dss", 900, 901, true, nil)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"node-alpha#1       0  a                 one\n" +
		"-                  !  damage            x.dss: bytes 100–149 unreadable (50 bytes)\n" +
		"node-beta#2        0  a                 two\n" +
		"-                  !  damage            x.dss: torn tail at byte 900\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

func TestEscape(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text", "plain text"},
		{"tab\there", "tab\there"},
		{"esc\x1b[31mred", `esc\x1b[31mred`},
		{"nul\x00", `nul\x00`},
		{"héllo ✓", "héllo ✓"},
		{"bad \xc3\x28", `bad \xc3(`},
		{"c1 \u0085", `c1 \xc2\x85`},
	}
	for _, tt := range tests {
		if got := string(appendEscaped(nil, []byte(tt.in), false)); got != tt.want {
			t.Errorf("escape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

package views

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
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
	a := segments.NewAssembler(0, p.Item)
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

// ARCHITECTURE.md case 3.7: names resolve; a record, a gap, then text.
func TestLogTextMergedWithNames(t *testing.T) {
	got := printItems(t, LogOptions{}, on(1, 0, res0), on(2, 2, "hello"))
	want := "" +
		"     0  host.resource        {\"cpu_pct\":12.5,\"mem_mb\":1024}\n" +
		"     ~  gap                  position 1 missing (1 frame)\n" +
		"     2  proc.trainer.stdout  hello…\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// ARCHITECTURE.md case 3.7, §3.6: what cannot be decoded is shown raw, escaped.
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
		"     5  proc.trainer.stdout  unterminated…\n"
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
	got := printItems(t, LogOptions{Format: FormatJSON, JSONFrames: true},
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
		`{"stream":"node-alpha#1","node":"node-alpha","life":1,"position":4,"channel":"proc.trainer.stdout","channel_id":2,"content":"TextStream","text":"\ufffd","bytes_b64":"/w==","utf8":false,"time":"2024-11-30T08:00:00.123456789Z"}` + "\n" +
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
	p.Item(segments.Item{Kind: segments.ItemFrame, Stream: S, Frame: on(1, 0, "one\n")})
	p.Damage("x.dss", 100, 150, false, nil)
	p.Item(segments.Item{Kind: segments.ItemFrame, Stream: s2, Frame: on(1, 0, "two\n")})
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

// escapeByByte is appendEscaped one byte at a time, the reference its
// eight-at-a-time scan is checked against.
func escapeByByte(b, payload []byte, all bool) []byte {
	for i := 0; i < len(payload); {
		c := payload[i]
		switch {
		case c >= 0x20 && c < 0x7f, c == '\t' && !all:
			b = append(b, c)
			i++
			continue
		case c >= 0x80:
			r, n := utf8.DecodeRune(payload[i:])
			if r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 { // bidi controls: \uNNNN (terminal.go)
				b = fmt.Appendf(b, `\u%04x`, r)
				i += n
				continue
			}
			if n > 1 && r >= 0xa0 {
				b = append(b, payload[i:i+n]...)
				i += n
				continue
			}
		}
		b = append(b, fmt.Sprintf(`\x%02x`, c)...)
		i++
	}
	return b
}

// specialAt returns texts of 24 bytes of filler with s at every offset
// from 0 to 16, so that it falls in every lane of an eight-byte scan.
func specialAt(filler byte, s string) []string {
	var out []string
	for off := 0; off <= 16; off++ {
		b := bytes.Repeat([]byte{filler}, 24)
		out = append(out, string(b[:off])+s+string(b[off+len(s):]))
	}
	return out
}

func TestEscapeEightAtATime(t *testing.T) {
	var ins []string
	for c := range 256 {
		ins = append(ins, specialAt('a', string(rune(0)+rune(c)))...) // one byte c
		ins = append(ins, specialAt('a', string([]byte{byte(c)}))...)
	}
	for _, s := range []string{"é", "✓", "\u0085", "\xc3\x28", "\x1b[1m", "\r\n", "\t"} {
		ins = append(ins, specialAt('z', s)...)
	}
	for _, in := range ins {
		for _, all := range []bool{false, true} {
			want := escapeByByte([]byte("pre:"), []byte(in), all)
			if got := appendEscaped([]byte("pre:"), []byte(in), all); !bytes.Equal(got, want) {
				t.Fatalf("appendEscaped(%q, %v) = %q, want %q", in, all, got, want)
			}
		}
		// A text line stops at its first CR.
		got, ok, _ := appendTerminal(nil, []byte(in), stopAtCR)
		cr := strings.IndexByte(in, '\r')
		if ok != (cr < 0) {
			t.Fatalf("appendTerminal(%q, stopAtCR) ok = %v", in, ok)
		}
		if cr < 0 {
			cr = len(in)
		}
		if want := escapeByByte(nil, []byte(in[:cr]), false); !bytes.Equal(got, want) {
			t.Fatalf("appendTerminal(%q, stopAtCR) = %q, want %q", in, got, want)
		}
	}
}

func FuzzAppendEscaped(f *testing.F) {
	for _, s := range []string{"plain text", "tab\there", "esc\x1b[31mred", "héllo ✓ \xc3\x28 \u0085", "a\r\nb\rc"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, all := range []bool{false, true} {
			if got, want := appendEscaped(nil, in, all), escapeByByte(nil, in, all); !bytes.Equal(got, want) {
				t.Fatalf("appendEscaped(%q, %v) = %q, want %q", in, all, got, want)
			}
		}
	})
}

// The eight-byte test is exact: a word is all printable just when each of
// its bytes is (textfmt tests its JSON counterpart).
func TestEightByteClasses(t *testing.T) {
	check := func(x uint64) {
		t.Helper()
		printable := true
		for k := range 8 {
			c := byte(x >> (8 * k))
			printable = printable && c >= 0x20 && c < 0x7f
		}
		if printable8(x) != printable {
			t.Fatalf("%#016x: printable8 %v, want %v", x, printable8(x), printable)
		}
	}
	for c := range uint64(256) {
		for k := range 8 {
			for _, filler := range []uint64{'a', 0x20, 0x7e, 0x7f, 0x1f, 0x00, 0xff, '"'} {
				x := filler * lanes01
				x = x&^(0xff<<(8*k)) | c<<(8*k)
				check(x)
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1 << 18 {
		x := r.Uint64()
		// Mostly printable lanes, so that the few others are tested alone.
		check(x &^ (lanes80 & r.Uint64() & r.Uint64()))
		check(x&^lanes80 | 0x20*lanes01)
	}
}

var compactJSONTests = []string{
	``, ` `, `{}`, `[]`, ` { } `, `[ ]`, `{"a":1}`, ` { "a" : [ 1 , 2.5e-3 , true , false , null , "s p" ] } `,
	"{\n\t\"a\":\r\n1}", `"str"`, `"a\"b\\c\/d\b\f\n\r\t\u00e9\u12aF"`, `"\u12G4"`, `"\u12"`, `"\x"`, `"\`,
	"\"tab\there\"", "\"nul\x00\"", "\"bad utf8 \xff\xfe\"", "\"\u2028<&>\"", `"unterminated`,
	`0`, `-0`, `01`, `-01`, `1.`, `1.5`, `.5`, `-`, `+1`, `1e`, `1e+`, `1e+5`, `1E-05`, `1.5e3`, `-1.0E+2`, `123abc`,
	`true`, `tru`, `truex`, `false`, `fals`, `null`, `nul`, `nULL`, `True`,
	`{"a":1}x`, `{"a":1}}`, `[1,]`, `[,1]`, `{"a":1,}`, `{,"a":1}`, `{"a"}`, `{"a":}`, `{1:2}`, `{"a" 1}`,
	`[1 2]`, `{"a":1 "b":2}`, `[}`, `{]`, `[[[]]]`, `[{"a":[{"b":{}}]}]`, `1 2`, `"a" "b"`, ` 1 `, `[1]]`,
	"\xef\xbb\xbf{}", `{"a":{"b":{"c":[1,{"d":null}]}}}`, "[1,\v2]", "[1,\f2]",
	strings.Repeat("[", 100) + strings.Repeat("]", 100),
	strings.Repeat(`{"a":[`, 70) + "0" + strings.Repeat("]}", 70),
	strings.Repeat(`{"a":[`, 70) + "0" + strings.Repeat("}]", 70),
	strings.Repeat(`[ `, 10000) + strings.Repeat(` ]`, 10000),
	strings.Repeat(`[`, 10001) + strings.Repeat(`]`, 10001),
	strings.Repeat(`{"k":`, 9999) + `[]` + strings.Repeat(`}`, 9999),
	strings.Repeat(`{"k":`, 10000) + `[]` + strings.Repeat(`}`, 10000),
}

// compactRef is what the printer used to do: json.Valid, then json.Compact.
func compactRef(src []byte) ([]byte, bool) {
	if !json.Valid(src) {
		return nil, false
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, src); err != nil {
		return nil, false
	}
	return buf.Bytes(), true
}

func checkCompactJSON(t *testing.T, src []byte) {
	t.Helper()
	want, wantOK := compactRef(src)
	got, ok := appendCompactJSON([]byte("pre:"), src)
	if ok != wantOK || !ok && string(got) != "pre:" || ok && string(got) != "pre:"+string(want) {
		in := string(src)
		if len(in) > 80 {
			in = in[:80] + "…"
		}
		t.Fatalf("appendCompactJSON(%q) = %q, %v; want %q, %v", in, got, ok, want, wantOK)
	}
}

func TestAppendCompactJSON(t *testing.T) {
	for _, s := range compactJSONTests {
		checkCompactJSON(t, []byte(s))
	}
}

// FuzzAppendCompactJSON checks appendCompactJSON against json.Valid and
// json.Compact.
func FuzzAppendCompactJSON(f *testing.F) {
	for _, s := range compactJSONTests {
		if len(s) < 1000 {
			f.Add([]byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) { checkCompactJSON(t, src) })
}

var clockTests = []string{
	`{"unix_ns":1732953600123456789,"mono_ns":0}`, `{"unix_ns":5,"mono_ns":-7}`, `{"unix_ns":-5,"mono_ns":0}`,
	`{"unix_ns":0,"mono_ns":0}`, `{"unix_ns":-0,"mono_ns":0}`, `{"unix_ns":01,"mono_ns":0}`,
	`{"unix_ns":9223372036854775807,"mono_ns":0}`, `{"unix_ns":9223372036854775808,"mono_ns":0}`,
	`{"unix_ns":1,"mono_ns":99999999999999999999}`, `{"unix_ns":12345678901234567890123,"mono_ns":1}`,
	`{"unix_ns":1e3,"mono_ns":0}`, `{"unix_ns":1.0,"mono_ns":0}`, `{"unix_ns":+1,"mono_ns":0}`,
	`{"unix_ns": 7,"mono_ns":0}`, `{"mono_ns":0,"unix_ns":7}`, `{"unix_ns":7}`, `{"UNIX_NS":7,"mono_ns":0}`,
	`{"unix_ns":7,"mono_ns":0,"x":1}`, `{"unix_ns":7,"mono_ns":0} `, `{"unix_ns":7,"mono_ns":0}}`,
	`{"unix_ns":7,"mono_ns":}`, `{"unix_ns":,"mono_ns":0}`, `{"unix_ns":"7","mono_ns":0}`, `null`, ``,
	`{"unix_ns":7,"unix_ns":8,"mono_ns":0}`,
}

func checkClock(t *testing.T, payload []byte) {
	t.Helper()
	c, err := frames.DecodeRecord(payload, frames.ClockRecord{})
	ns, ok := decodeClock(payload)
	if ok != (err == nil) || ok && ns != c.UnixNS {
		t.Fatalf("decodeClock(%q) = %d, %v; DecodeRecord gives %d, %v", payload, ns, ok, c.UnixNS, err)
	}
}

func TestDecodeClock(t *testing.T) {
	for _, s := range clockTests {
		checkClock(t, []byte(s))
	}
}

// FuzzDecodeClock checks decodeClock against frames.DecodeRecord.
func FuzzDecodeClock(f *testing.F) {
	for _, s := range clockTests {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) { checkClock(t, payload) })
}

// A frame's time is its own stream's latest clock reading, and it changes
// with each reading.
func TestLogJSONTimePerStream(t *testing.T) {
	var out bytes.Buffer
	p := NewPrinter(&out, LogOptions{Format: FormatJSON, JSONFrames: true})
	s2 := frames.StreamID{Node: "node-beta", Life: 2}
	for _, s := range []frames.StreamID{S, s2} {
		p.Channel(frames.ChannelDescriptor{Stream: s, ID: 1, Name: "datastream.clock", Content: frames.JSONRecord("datastream.clock")})
		p.Channel(frames.ChannelDescriptor{Stream: s, ID: 2, Name: "out", Content: frames.TextStream()})
	}
	item := func(s frames.StreamID, f frames.Frame) {
		p.Item(segments.Item{Kind: segments.ItemFrame, Stream: s, Frame: f})
	}
	item(S, on(2, 0, "a"))
	item(S, on(1, 1, `{"unix_ns":1000000000,"mono_ns":0}`))
	item(S, on(2, 2, "b"))
	item(s2, on(2, 0, "c"))
	item(s2, on(1, 1, `{"unix_ns":2000000000, "mono_ns":0}`))
	item(S, on(2, 3, "d"))
	item(s2, on(2, 2, "e"))
	item(S, on(1, 4, `{"unix_ns":3000000000,"mono_ns":2000000000}`)) // the clocks move alike: no step
	item(S, on(1, 5, `{"unix_ns":0,"mono_ns":2}`))                   // not a reading
	item(S, on(2, 6, "f"))
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for line := range strings.Lines(out.String()) {
		var v struct{ Stream, Text, Time string }
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatal(err)
		}
		got = append(got, v.Stream+" "+v.Text+" "+v.Time)
	}
	want := []string{
		"node-alpha#1 a ",
		"node-alpha#1 b 1970-01-01T00:00:01Z",
		"node-beta#2 c ",
		"node-alpha#1 d 1970-01-01T00:00:01Z",
		"node-beta#2 e 1970-01-01T00:00:02Z",
		"node-alpha#1 f 1970-01-01T00:00:03Z",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// Channel ids are any uint32: those without a descriptor show as #id (or
// null), and a descriptor that arrives later names them from then on.
func TestLogChannelIDs(t *testing.T) {
	big := frames.ChannelID(1<<32 - 1)
	run := func(format LogFormat) string {
		var out bytes.Buffer
		p := NewPrinter(&out, LogOptions{Format: format})
		item := func(f frames.Frame) { p.Item(segments.Item{Kind: segments.ItemFrame, Stream: S, Frame: f}) }
		item(on(big, 0, "x\n"))
		item(on(300, 1, "y\n"))
		p.Channel(frames.ChannelDescriptor{Stream: S, ID: big, Name: "big", Content: frames.TextStream()})
		p.Channel(frames.ChannelDescriptor{Stream: S, ID: 300, Name: "mid", Content: frames.TextStream()})
		p.Channel(frames.ChannelDescriptor{Stream: S, ID: 7, Name: "small", Content: frames.TextStream()})
		item(on(big, 1234567, "jo"))
		item(on(300, 1234568, "one\n"))
		item(on(big, 1234569, "ined\n"))
		item(on(7, 1234570, "seven\n"))
		p.Channel(frames.ChannelDescriptor{Stream: S, ID: big, Name: "ignored", Content: frames.JSONRecord("x")})
		item(on(big, 1234571, "again\n"))
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	want := "" +
		"     0  #4294967295       x\\x0a\n" + // shown whole, as bytes
		"     1  #300              y\\x0a\n" +
		"1234567  big               jo…\n" +
		"1234568  mid               one\n" +
		"1234569  big               …ined\n" +
		"1234570  small             seven\n" +
		"1234571  big               again\n"
	if diff := cmp.Diff(want, run(FormatText)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	js := run(FormatJSON)
	for _, want := range []string{
		`"position":0,"channel":null,"channel_id":4294967295,"content":null,"bytes_b64":"eAo=","text":"x\\x0a"}`,
		`"position":1234567,"last_position":1234567,"channel":"big","channel_id":4294967295,"content":"TextStream","text":"jo","partial":true}`,
		`"position":1234569,"last_position":1234569,"channel":"big","channel_id":4294967295,"content":"TextStream","text":"ined\n","continues":true}`,
		`"position":1234570,"last_position":1234570,"channel":"small","channel_id":7,"content":"TextStream","text":"seven\n"}`,
	} {
		if !strings.Contains(js, want) {
			t.Errorf("--json lacks %s:\n%s", want, js)
		}
	}
}

func TestDecimal(t *testing.T) {
	for _, v := range []uint64{0, 1, 9, 10, 99, 100, 101, 999, 1000, 9999, 10000, 99999, 100000, 123456789, 1<<63 - 1, 1 << 63, 1<<64 - 1} {
		for _, w := range []uint64{v, v - 1, v + 1} {
			want := strconv.FormatUint(w, 10)
			if n := decimalLen(w); n != len(want) {
				t.Errorf("decimalLen(%d) = %d", w, n)
			}
			if got := appendDecimal([]byte("x"), w, len(want)); string(got) != "x"+want {
				t.Errorf("appendDecimal(%d) = %s", w, got)
			}
		}
	}
}

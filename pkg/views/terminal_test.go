package views

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// terminalTests are the escaping rules of terminal.go, each in both modes:
// plain (colours off: a pipe, NO_COLOR) and colour (SGR passes).
var terminalTests = []struct {
	name         string
	in           string
	plain, color string // the escaped text; color "" means the same as plain
	dirty        bool   // in colour mode, the line ends with attributes changed
}{
	{name: "plain text", in: "plain text", plain: "plain text"},
	{name: "tab kept", in: "a\tb", plain: "a\tb"},
	{name: "nul and bell", in: "nul\x00bel\x07", plain: `nul\x00bel\x07`},
	{name: "DEL", in: "del\x7f", plain: `del\x7f`},
	{name: "backspace", in: "ok\x08\x08no", plain: `ok\x08\x08no`},
	{name: "clear screen and home", in: "\x1b[2J\x1b[H", plain: `\x1b[2J\x1b[H`},
	{name: "cursor movement", in: "a\x1b[10;5Hb\x1b[3Ac\x1b[K", plain: `a\x1b[10;5Hb\x1b[3Ac\x1b[K`},
	{name: "SGR", in: "\x1b[31mred\x1b[0m", plain: `\x1b[31mred\x1b[0m`, color: "\x1b[31mred\x1b[0m"},
	{name: "SGR left on", in: "\x1b[1;31mred", plain: `\x1b[1;31mred`, color: "\x1b[1;31mred", dirty: true},
	{name: "SGR reset forms", in: "\x1b[32mg\x1b[m", plain: `\x1b[32mg\x1b[m`, color: "\x1b[32mg\x1b[m"},
	{name: "SGR reset 0;0", in: "\x1b[4mu\x1b[0;0m", plain: `\x1b[4mu\x1b[0;0m`, color: "\x1b[4mu\x1b[0;0m"},
	{name: "SGR reset then colour", in: "\x1b[0m\x1b[0;31mx", plain: `\x1b[0m\x1b[0;31mx`, color: "\x1b[0m\x1b[0;31mx", dirty: true},
	{name: "SGR 256 colours", in: "\x1b[38;5;196mx", plain: `\x1b[38;5;196mx`, color: "\x1b[38;5;196mx", dirty: true},
	{name: "SGR colour index 0", in: "\x1b[38;5;0mx", plain: `\x1b[38;5;0mx`, color: "\x1b[38;5;0mx", dirty: true},
	{name: "SGR true colour subparams", in: "\x1b[38:2::255:0:0mx", plain: `\x1b[38:2::255:0:0mx`, color: "\x1b[38:2::255:0:0mx", dirty: true},
	{name: "SGR too long", in: "\x1b[" + strings.Repeat("1;", 33) + "mx", plain: `\x1b[` + strings.Repeat("1;", 33) + "mx"},
	{name: "SGR at the limit", in: "\x1b[" + strings.Repeat("1;", 32) + "mx", plain: `\x1b[` + strings.Repeat("1;", 32) + "mx", color: "\x1b[" + strings.Repeat("1;", 32) + "mx", dirty: true},
	{name: "CSI private mode", in: "\x1b[?25l\x1b[?1049h", plain: `\x1b[?25l\x1b[?1049h`},
	{name: "CSI with intermediate", in: "\x1b[1 m\x1b[0$m", plain: `\x1b[1 m\x1b[0$m`},
	{name: "CSI that is not m", in: "\x1b[31;1Hx", plain: `\x1b[31;1Hx`},
	{name: "OSC 0 title", in: "\x1b]0;pwned\x07after", plain: `\x1b]0;pwned\x07after`},
	{name: "OSC 8 hyperlink", in: "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\", plain: `\x1b]8;;https://evil.example/\x1b\click\x1b]8;;\x1b\`},
	{name: "OSC 52 clipboard", in: "\x1b]52;c;cm0gLXJmIH4=\x07", plain: `\x1b]52;c;cm0gLXJmIH4=\x07`},
	{name: "DCS", in: "\x1bP1$r0m\x1b\\", plain: `\x1bP1$r0m\x1b\`},
	{name: "full reset", in: "\x1bc", plain: `\x1bc`},
	{name: "ESC and any byte", in: "\x1b7\x1b8\x1b=\x1b(0", plain: `\x1b7\x1b8\x1b=\x1b(0`},
	{name: "SGR inside an OSC", in: "\x1b]0;\x1b[31m\x07", plain: `\x1b]0;\x1b[31m\x07`, color: `\x1b]0;` + "\x1b[31m" + `\x07`, dirty: true},
	{name: "line ends in ESC", in: "x\x1b", plain: `x\x1b`},
	{name: "line ends after CSI", in: "x\x1b[", plain: `x\x1b[`},
	{name: "line ends inside SGR", in: "red\x1b[31", plain: `red\x1b[31`},
	{name: "line ends inside OSC", in: "\x1b]0;tit", plain: `\x1b]0;tit`},
	{name: "8-bit CSI", in: "\x9b31m", plain: `\x9b31m`},
	{name: "C1 CSI as UTF-8", in: "\u009b31m", plain: `\xc2\x9b31m`},
	{name: "C1 NEL as UTF-8", in: "c1 \u0085", plain: `c1 \xc2\x85`},
	{name: "RLO", in: "abc\u202edef", plain: `abc\u202edef`},
	{name: "bidi embeddings and isolates", in: "\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069", plain: `\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069`},
	{name: "bidi marks kept", in: "a\u200eb\u200fc\u061cd", plain: "a\u200eb\u200fc\u061cd"},
	{name: "U+2029 and U+2065 kept", in: "\u2029\u2065\u206a\u2029", plain: "\u2029\u2065\u206a\u2029"},
	{name: "invalid UTF-8", in: "bad \xc3\x28 \xff", plain: `bad \xc3( \xff`},
	{name: "truncated rune", in: "cut \xe2\x80", plain: `cut \xe2\x80`},
	{name: "surrogate", in: "\xed\xa0\x80", plain: `\xed\xa0\x80`},
	{name: "replacement character kept", in: "\ufffd", plain: "\ufffd"},
	{name: "UTF-8 text", in: "héllo ✓ 日本 🙂", plain: "héllo ✓ 日本 🙂"},
}

func TestTerminalEscape(t *testing.T) {
	for _, tt := range terminalTests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, dirty := appendTerminal([]byte("pre:"), tt.in, 0)
			if string(got) != "pre:"+tt.plain || !ok || dirty {
				t.Errorf("plain: %q, %v, %v; want %q", got, ok, dirty, "pre:"+tt.plain)
			}
			want := tt.color
			if want == "" {
				want = tt.plain
			}
			got, ok, dirty = appendTerminal([]byte("pre:"), []byte(tt.in), passSGR)
			if string(got) != "pre:"+want || !ok || dirty != tt.dirty {
				t.Errorf("colour: %q, %v, dirty %v; want %q, dirty %v", got, ok, dirty, "pre:"+want, tt.dirty)
			}
			// What is kept is inert in both modes.
			if err := checkInert(got[4:], passSGR); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestTerminalFlags: TAB escaped with escapeTab, stopping at a CR with
// stopAtCR (what precedes it escaped, SGR state included).
func TestTerminalFlags(t *testing.T) {
	tests := []struct {
		in    string
		flags escapeFlags
		want  string
		ok    bool
		dirty bool
	}{
		{"a\tb", escapeTab, `a\x09b`, true, false},
		{"a\tb", escapeTab | passSGR, `a\x09b`, true, false},
		{"a\rb", 0, `a\x0db`, true, false},
		{"a\rb", stopAtCR, "a", false, false},
		{"\x1b[31ma\rb", stopAtCR | passSGR, "\x1b[31ma", false, true},
		{"\x1b[31ma\rb", stopAtCR, `\x1b[31ma`, false, false},
		{"a\nb", 0, `a\x0ab`, true, false},
	}
	for _, tt := range tests {
		got, ok, dirty := appendTerminal(nil, []byte(tt.in), tt.flags)
		if string(got) != tt.want || ok != tt.ok || dirty != tt.dirty {
			t.Errorf("appendTerminal(%q, %b) = %q, %v, %v; want %q, %v, %v", tt.in, tt.flags, got, ok, dirty, tt.want, tt.ok, tt.dirty)
		}
	}
}

// sgrRef matches an SGR sequence that passes (see terminal.go).
var sgrRef = regexp.MustCompile(`^\x1b\[([0-9;:]{0,64})m`)

// escapeTerminalRef is appendTerminal one rune at a time, written from
// the rules in terminal.go: the reference its fast scan is checked
// against.
func escapeTerminalRef(in []byte, flags escapeFlags) ([]byte, bool, bool) {
	var b []byte
	dirty := false
	for len(in) > 0 {
		if m := sgrRef.FindSubmatch(in); m != nil && flags&passSGR != 0 {
			b = append(b, m[0]...)
			dirty = strings.Trim(string(m[1]), "0;") != ""
			in = in[len(m[0]):]
			continue
		}
		r, n := utf8.DecodeRune(in)
		switch {
		case r == '\r' && flags&stopAtCR != 0:
			return b, false, dirty
		case r == '\t' && flags&escapeTab == 0,
			r >= 0x20 && r < 0x7f,
			r >= 0xa0 && n > 1 && !(r >= 0x202a && r <= 0x202e) && !(r >= 0x2066 && r <= 0x2069):
			b = append(b, in[:n]...)
		case r >= 0xa0 && n > 1:
			b = fmt.Appendf(b, `\u%04x`, r)
		default:
			b = fmt.Appendf(b, `\x%02x`, in[0])
			n = 1
		}
		in = in[n:]
	}
	return b, true, dirty
}

// checkInert reports what in out, rendered under flags, a terminal could
// act on: a control but TAB (and ESC starting an SGR with passSGR), DEL,
// a byte that is not UTF-8, a C1 or bidirectional control.
func checkInert(out []byte, flags escapeFlags) error {
	for i := 0; i < len(out); {
		c := out[i]
		if c == 0x1b && flags&passSGR != 0 {
			if m := sgrRef.Find(out[i:]); m != nil {
				i += len(m)
				continue
			}
		}
		if c < 0x20 && !(c == '\t' && flags&escapeTab == 0) || c == 0x7f {
			return fmt.Errorf("control %#02x at %d of %q", c, i, out)
		}
		r, n := utf8.DecodeRune(out[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			return fmt.Errorf("byte %#02x, not UTF-8, at %d of %q", c, i, out)
		case r >= 0x80 && r < 0xa0, isBidiControl(r):
			return fmt.Errorf("control %U at %d of %q", r, i, out)
		}
		i += n
	}
	return nil
}

var allEscapeFlags = []escapeFlags{0, escapeTab, stopAtCR, passSGR, escapeTab | passSGR, stopAtCR | passSGR, escapeTab | stopAtCR | passSGR}

// TestTerminalEightAtATime: every special byte and sequence in every lane
// of the eight-byte scan, against the reference.
func TestTerminalEightAtATime(t *testing.T) {
	var ins []string
	for c := range 256 {
		ins = append(ins, specialAt('a', string(rune(c)))...)
		ins = append(ins, specialAt('a', string([]byte{byte(c)}))...)
	}
	for _, s := range []string{"\u202e", "\u2069", "\ufffd", "\x1b[1m", "\x1b[2J", "\x1b]0;t\x07", "\r\n", "\t"} {
		ins = append(ins, specialAt('z', s)...)
	}
	for _, tt := range terminalTests {
		ins = append(ins, tt.in)
	}
	for _, in := range ins {
		for _, flags := range allEscapeFlags {
			got, ok, dirty := appendTerminal(nil, in, flags)
			want, wok, wdirty := escapeTerminalRef([]byte(in), flags)
			if !bytes.Equal(got, want) || ok != wok || dirty != wdirty {
				t.Fatalf("appendTerminal(%q, %b) = %q, %v, %v; want %q, %v, %v", in, flags, got, ok, dirty, want, wok, wdirty)
			}
		}
	}
}

// FuzzTerminalEscape: whatever the input, appendTerminal agrees with the
// reference, its output is inert, it never panics, and the string and
// []byte forms agree.
func FuzzTerminalEscape(f *testing.F) {
	for _, tt := range terminalTests {
		f.Add([]byte(tt.in))
	}
	f.Add([]byte("a\r\nb\rc\x1b[31md\re"))
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, flags := range allEscapeFlags {
			got, ok, dirty := appendTerminal(nil, in, flags)
			want, wok, wdirty := escapeTerminalRef(in, flags)
			if !bytes.Equal(got, want) || ok != wok || dirty != wdirty {
				t.Fatalf("appendTerminal(%q, %b) = %q, %v, %v; want %q, %v, %v", in, flags, got, ok, dirty, want, wok, wdirty)
			}
			if s, _, _ := appendTerminal(nil, string(in), flags); !bytes.Equal(s, got) {
				t.Fatalf("appendTerminal(string %q, %b) = %q, []byte form %q", in, flags, s, got)
			}
			if err := checkInert(got, flags); err != nil {
				t.Fatal(err)
			}
		}
		safe := appendTerminalSafe(append([]byte("pre"), in...), 3)
		if !bytes.HasPrefix(safe, []byte("pre")) || checkInert(safe, escapeTab) != nil {
			t.Fatalf("appendTerminalSafe(%q) = %q", in, safe)
		}
	})
}

// TestAppendTerminalSafe: a rendered record is escaped in place from the
// first byte a terminal would act on, and left alone otherwise.
func TestAppendTerminalSafe(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a":"plain"}`, `{"a":"plain"}`},
		{`{"a":"héllo ✓ 日本"}`, `{"a":"héllo ✓ 日本"}`},
		{"{\"a\":\"\u202eevil\"}", `{"a":"\u202eevil"}`},
		{"{\"a\":\"\xc2\x9b2J\"}", `{"a":"\xc2\x9b2J"}`},
		{"{\"a\":\"\x9b2J \xff del\x7f\"}", `{"a":"\x9b2J \xff del\x7f"}`},
		{strings.Repeat("x", 20) + "\u2066", strings.Repeat("x", 20) + `\u2066`},
	}
	for _, tt := range tests {
		got := appendTerminalSafe([]byte("0123"+tt.in), 4)
		if string(got) != "0123"+tt.want {
			t.Errorf("appendTerminalSafe(%q) = %q, want %q", tt.in, got, "0123"+tt.want)
		}
	}
}

// colorItems renders fs on S with channels 1 proc.job.stdout, 2
// proc.job.stderr, 3 proc.job.lifecycle (a record) and 4 host.cpu, after
// the items of a second stream when two is set.
func colorItems(t *testing.T, opts LogOptions, two bool, fs ...frames.Frame) string {
	t.Helper()
	var out bytes.Buffer
	p := NewPrinter(&out, opts)
	streams := []frames.StreamID{S}
	if two {
		streams = append(streams, frames.StreamID{Node: "node-beta", Life: 2})
	}
	for _, s := range streams {
		p.Stream(frames.StreamDescriptor{Stream: s})
		p.Channel(frames.ChannelDescriptor{Stream: s, ID: 1, Name: "proc.job.stdout", Content: frames.TextStream()})
		p.Channel(frames.ChannelDescriptor{Stream: s, ID: 2, Name: "proc.job.stderr", Content: frames.TextStream()})
		p.Channel(frames.ChannelDescriptor{Stream: s, ID: 3, Name: "proc.job.lifecycle", Content: frames.JSONRecord("proc.lifecycle")})
		p.Channel(frames.ChannelDescriptor{Stream: s, ID: 4, Name: "host.cpu", Content: frames.JSONRecord("host.cpu")})
	}
	for _, s := range streams[1:] {
		p.Item(segments.Item{Kind: segments.ItemFrame, Stream: s, Frame: on(1, 0, "beta\n")})
	}
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

// TestPrinterColor: with colours on, a line's own SGR passes and is reset
// at the line's end, every other sequence is escaped, and ds's columns and
// loss lines are styled; with colours off no ESC is written at all.
func TestPrinterColor(t *testing.T) {
	fs := []frames.Frame{
		on(1, 0, "\x1b[2J\x1b[31mred\x1b[0m\n"),
		on(1, 1, "\x1b[1;32mbold green, left on\n"),
		on(2, 2, "warning: \x1b]0;title\x07x\n"),
		on(3, 3, `{"event":"started","pid":7}`),
		on(4, 4, `{"cpu":1}`),
		// position 5 missing: a gap
		on(1, 6, "tab\there\n"),
	}
	got := colorItems(t, LogOptions{Color: true}, false, fs...)
	want := "" +
		"     \x1b[2m0\x1b[0m  proc.job.stdout     \\x1b[2J\x1b[31mred\x1b[0m\n" +
		"     \x1b[2m1\x1b[0m  proc.job.stdout     \x1b[1;32mbold green, left on\x1b[0m\n" +
		"     \x1b[2m2\x1b[0m  \x1b[31mproc.job.stderr\x1b[0m     warning: \\x1b]0;title\\x07x\n" +
		"     \x1b[2m3\x1b[0m  \x1b[36mproc.job.lifecycle\x1b[0m  {\"event\":\"started\",\"pid\":7}\n" +
		"     \x1b[2m4\x1b[0m  host.cpu            {\"cpu\":1}\n" +
		"     \x1b[1;33m~\x1b[0m  \x1b[1;33mgap\x1b[0m                 \x1b[1;33mposition 5 missing (1 frame)\x1b[0m\n" +
		"     \x1b[2m6\x1b[0m  proc.job.stdout     tab\there\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("colour (-want +got):\n%s", diff)
	}
	plain := colorItems(t, LogOptions{}, false, fs...)
	wantPlain := "" +
		"     0  proc.job.stdout     \\x1b[2J\\x1b[31mred\\x1b[0m\n" +
		"     1  proc.job.stdout     \\x1b[1;32mbold green, left on\n" +
		"     2  proc.job.stderr     warning: \\x1b]0;title\\x07x\n" +
		"     3  proc.job.lifecycle  {\"event\":\"started\",\"pid\":7}\n" +
		"     4  host.cpu            {\"cpu\":1}\n" +
		"     ~  gap                 position 5 missing (1 frame)\n" +
		"     6  proc.job.stdout     tab\there\n"
	if diff := cmp.Diff(wantPlain, plain); diff != "" {
		t.Errorf("plain (-want +got):\n%s", diff)
	}
	// Stripped of its styles, the colour output is the plain output but
	// for the SGRs it passed.
	sgr, escapedSGR := regexp.MustCompile("\x1b\\[[0-9;:]*m"), regexp.MustCompile(`\\x1b\[[0-9;:]*m`)
	if s, p := sgr.ReplaceAllString(got, ""), escapedSGR.ReplaceAllString(plain, ""); s != p {
		t.Errorf("colour output without its SGRs:\n%s\nwant:\n%s", s, p)
	}
	// --json and --cat are never coloured: JSON escapes ESC, --cat is the
	// payload, byte-exact.
	for _, format := range []LogFormat{FormatJSON, FormatCat} {
		a := colorItems(t, LogOptions{Format: format, Color: true}, false, fs...)
		b := colorItems(t, LogOptions{Format: format}, false, fs...)
		if a != b {
			t.Errorf("format %d: Color changes the output:\n%s\nwithout:\n%s", format, a, b)
		}
		if format == FormatJSON && strings.Contains(a, "\x1b") {
			t.Errorf("--json output holds an ESC:\n%s", a)
		}
	}
}

// TestPrinterColorCR: a line with CRs passes its SGRs, reset at its end,
// in each segment shown.
func TestPrinterColorCR(t *testing.T) {
	fs := []frames.Frame{on(1, 0, "\x1b[32m 10%\r\x1b[33m 50%\r\x1b[0m100%\x1b[31m\n")}
	got := colorItems(t, LogOptions{Color: true}, false, fs...)
	want := "     \x1b[2m0\x1b[0m  proc.job.stdout     \x1b[0m100%\x1b[31m\x1b[0m\n"
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	got = colorItems(t, LogOptions{Color: true, CRSegments: true}, false, fs...)
	for _, seg := range []string{"\x1b[32m 10%\x1b[0m\n", "\x1b[33m 50%\x1b[0m\n", "\x1b[0m100%\x1b[31m\x1b[0m\n"} {
		if !strings.Contains(got, seg) {
			t.Errorf("--cr-segments output lacks %q:\n%q", seg, got)
		}
	}
}

// TestPrinterColorColumns: the stream column has a colour of its own per
// stream, the same from run to run; damage lines are bold red; names from
// the input are escaped, coloured or not.
func TestPrinterColorColumns(t *testing.T) {
	got := colorItems(t, LogOptions{Color: true, StreamColumn: StreamColumnAlways}, true, on(1, 0, "alpha\n"))
	alpha, beta := streamStyle(S.String()), streamStyle("node-beta#2")
	if alpha == beta {
		t.Fatalf("both streams are %q", alpha)
	}
	for _, want := range []string{string(beta) + "node-beta#2\x1b[0m", string(alpha) + "node-alpha#1\x1b[0m"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks stream column %q:\n%q", want, got)
		}
	}
	if streamStyle(S.String()) != alpha {
		t.Error("a stream's colour changed")
	}

	var out bytes.Buffer
	p := NewPrinter(&out, LogOptions{Color: true})
	p.Damage("bad\x1b[2J.dss", 10, 20, false, errors.New("crc \x1b]0;x\x07"))
	p.Stream(frames.StreamDescriptor{Stream: S})
	p.Channel(frames.ChannelDescriptor{Stream: S, ID: 1, Name: "evil\x1b]0;t\x07\u202e.stderr", Content: frames.TextStream()})
	p.Item(segments.Item{Kind: segments.ItemFrame, Stream: S, Frame: on(1, 0, "x\n")})
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		"     \x1b[1;31m!\x1b[0m  \x1b[1;31mdamage\x1b[0m",
		"\x1b[1;31mbad\\x1b[2J.dss: bytes 10–19 unreadable (10 bytes): crc \\x1b]0;x\\x07\x1b[0m\n",
		"\x1b[31mevil\\x1b]0;t\\x07\\u202e.stderr\x1b[0m  x\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%q", want, s)
		}
	}
	if err := checkInert([]byte(strings.ReplaceAll(s, "\n", "")), passSGR); err != nil {
		t.Error(err)
	}
}

// TestPrinterNoColorIsInert: with colours off, whatever the payloads and
// names, the text format writes no ESC and nothing else a terminal acts
// on.
func TestPrinterNoColorIsInert(t *testing.T) {
	var fs []frames.Frame
	for i, tt := range terminalTests {
		fs = append(fs, on(frames.ChannelID(1+i%4), uint64(i), tt.in+"\n"))
	}
	for _, two := range []bool{false, true} {
		out := colorItems(t, LogOptions{}, two, fs...)
		if err := checkInert([]byte(strings.ReplaceAll(out, "\n", "")), 0); err != nil {
			t.Errorf("two streams %v: %v", two, err)
		}
		out = colorItems(t, LogOptions{Color: true}, two, fs...)
		if err := checkInert([]byte(strings.ReplaceAll(out, "\n", "")), passSGR); err != nil {
			t.Errorf("colour, two streams %v: %v", two, err)
		}
	}
}

// oldAppendEscapedStop is appendEscapedStop as it was before terminal.go,
// the baseline of BenchmarkEscapePlainASCII.
func oldAppendEscapedStop(b, payload []byte, all, stopCR bool) ([]byte, bool) {
	for i := 0; i < len(payload); {
		c := payload[i]
		if c >= 0x20 && c < 0x7f {
			j := i + 1
			for j+8 <= len(payload) && printable8(load64(payload, j)) {
				j += 8
			}
			for j < len(payload) && payload[j] >= 0x20 && payload[j] < 0x7f {
				j++
			}
			b = append(b, payload[i:j]...)
			i = j
			continue
		}
		if c == '\t' && !all {
			b = append(b, c)
			i++
			continue
		}
		if c == '\r' && stopCR {
			return b, false
		}
		if c >= 0x80 {
			r, n := utf8.DecodeRune(payload[i:])
			if r != utf8.RuneError && !(r >= 0x80 && r < 0xa0) {
				b = append(b, payload[i:i+n]...)
				i += n
				continue
			}
		}
		b = append(b, '\\', 'x', hexDigits[c>>4], hexDigits[c&15])
		i++
	}
	return b, true
}

// BenchmarkEscapePlainASCII escapes the plain ASCII lines of the printer
// benchmarks (without their newline): old is the escaper before
// terminal.go, text the text-line escaper now (colours off), color the
// same with SGR passing.
func BenchmarkEscapePlainASCII(b *testing.B) {
	lines := make([][]byte, len(benchLines))
	size := 0
	for i, l := range benchLines {
		lines[i] = []byte(strings.TrimSuffix(l, "\n"))
		size += len(lines[i])
	}
	run := func(b *testing.B, escape func(dst, line []byte) []byte) {
		dst := make([]byte, 0, 256)
		b.SetBytes(int64(size / len(lines)))
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			dst = escape(dst[:0], lines[i&(len(lines)-1)])
		}
	}
	b.Run("old", func(b *testing.B) {
		run(b, func(dst, line []byte) []byte { dst, _ = oldAppendEscapedStop(dst, line, false, true); return dst })
	})
	b.Run("text", func(b *testing.B) {
		run(b, func(dst, line []byte) []byte { dst, _, _ = appendTerminal(dst, line, stopAtCR); return dst })
	})
	b.Run("color", func(b *testing.B) {
		run(b, func(dst, line []byte) []byte { dst, _, _ = appendTerminal(dst, line, stopAtCR|passSGR); return dst })
	})
}

// What ds info and ds latest print of a capture's names passes the
// terminal rules, line by line.
func TestSafeWriter(t *testing.T) {
	var out bytes.Buffer
	w := newSafeWriter(&out)
	in := "stream n\x1b[2J1#1\n  label\tevil\u202ename\n"
	n, err := w.Write([]byte(in))
	if err != nil || n != len(in) {
		t.Fatalf("Write = %d, %v; want %d", n, err, len(in))
	}
	want := "stream n\\x1b[2J1#1\n  label\tevil\\u202ename\n"
	if got := out.String(); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

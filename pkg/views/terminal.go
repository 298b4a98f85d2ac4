package views

import (
	"bytes"
	"io"
	"strings"
	"unicode/utf8"
)

// What ds log shows of a payload can never drive the reader's terminal
// (issue item 10): whatever a capture holds, the text renderer writes only
// printable text, TABs in text lines, and, when colours are on, SGR
// sequences (colours and attributes). Everything else a terminal would act
// on is shown visibly instead, so that it reads as text and does nothing:
//
//   - C0 controls (0x00–0x1f) but TAB, and DEL (0x7f), as \xNN: ESC as
//     \x1b, BEL as \x07. (A text line's own end, LF or CRLF, and bare CRs
//     are the renderer's: see [Printer].) TAB is kept in a text line and
//     escaped as \x09 in records, bytes and messages.
//   - Bytes that are not UTF-8, each as \xNN, and C1 controls: raw bytes
//     0x80–0x9f are not UTF-8, and a C1 code point (U+0080–U+009F) encoded
//     as UTF-8 shows its two bytes, U+009B as \xc2\x9b.
//   - The bidirectional embedding, override and isolate controls
//     (U+202A–U+202E, U+2066–U+2069), which would reorder the rest of the
//     line as displayed (the "Trojan Source" attack, CVE-2021-42574), as
//     \u and four lower-case hex digits: U+202E as \u202e. The marks
//     U+200E, U+200F and U+061C (LRM, RLM, ALM) are kept: they are
//     ordinary, zero-width characters of right-to-left text, and they move
//     no more than the neutral characters beside them.
//   - Escape sequences. ESC is shown as \x1b, and the rest of the sequence,
//     which is then text, as it is: a clear-screen ESC [ 2 J shows as
//     \x1b[2J, an OSC title or hyperlink ESC ] … BEL as \x1b]…\x07, so
//     that nothing of it acts. The one exception is SGR when colours are
//     on ([LogOptions].Color): ESC [ PARAMS m, where PARAMS is digits, ';'
//     and ':' (256-colour and true-colour subparameters), at most
//     maxSGRParams bytes of them, passes as it is. A line ending inside a
//     sequence leaves it unfinished, and so escaped. A line that passed an
//     SGR that left attributes other than the default (anything but
//     ESC [ m, ESC [ 0 m, ESC [ 0 ; 0 m …) ends with ESC [ 0 m, so that its
//     colours never reach the next line or ds's own columns.
//
// The escaped forms are the same as a literal backslash text would show:
// the escaping makes what a capture holds visible, and --json or --cat
// say exactly which bytes they were.
//
// Names read from the input (channel and stream names, the reason of a
// drop) are escaped the same way, TAB included; SGR never passes in them.

// escapeFlags selects what [appendTerminal] does beyond the rules above.
type escapeFlags uint8

const (
	// escapeTab escapes TAB too (records, bytes, names, messages).
	escapeTab escapeFlags = 1 << iota
	// stopAtCR stops at the first CR (the renderer splits a line there).
	stopAtCR
	// passSGR lets SGR sequences pass (colours on).
	passSGR
)

// maxSGRParams bounds the parameter bytes of an SGR sequence that passes:
// 64 is room for a true-colour foreground and background and a few
// attributes at once; a longer one is shown escaped.
const maxSGRParams = 64

// sgrReset is the SGR sequence that restores the default attributes.
const sgrReset = "\x1b[0m"

// appendTerminal appends s to b escaped for a terminal or a pipe by the
// rules above, under flags. It returns b; whether it reached the end of s
// (false only with stopAtCR, at the first CR, with b extended by what
// precedes it); and, with passSGR, whether the SGR sequences it passed
// leave attributes other than the default (the caller then appends
// sgrReset at the line's end). Plain ASCII is copied eight bytes at a time.
func appendTerminal[S ~string | ~[]byte](b []byte, s S, flags escapeFlags) ([]byte, bool, bool) {
	dirty := false
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			j := i + 1
			for j+8 <= len(s) && printable8(load64(s, j)) {
				j += 8
			}
			for j < len(s) && s[j] >= 0x20 && s[j] < 0x7f {
				j++
			}
			b = append(b, s[i:j]...)
			i = j
			continue
		}
		switch {
		case c == '\t' && flags&escapeTab == 0:
			b = append(b, c)
			i++
			continue
		case c == '\r' && flags&stopAtCR != 0:
			return b, false, dirty
		case c == 0x1b && flags&passSGR != 0:
			if n, reset := sgrLen(s[i:]); n > 0 {
				b = append(b, s[i:i+n]...)
				dirty = !reset
				i += n
				continue
			}
		case c >= 0x80:
			var rb [utf8.UTFMax]byte
			r, n := utf8.DecodeRune(rb[:copy(rb[:], s[i:])])
			switch {
			case n == 1 || r < 0xa0:
				// Not UTF-8, or a C1 control: escaped byte by byte below.
			case isBidiControl(r):
				b = append(b, '\\', 'u', hexDigits[r>>12], hexDigits[r>>8&15], hexDigits[r>>4&15], hexDigits[r&15])
				i += n
				continue
			default:
				b = append(b, s[i:i+n]...)
				i += n
				continue
			}
		}
		b = append(b, '\\', 'x', hexDigits[c>>4], hexDigits[c&15])
		i++
	}
	return b, true, dirty
}

// isBidiControl reports the bidirectional controls escaped as \uNNNN: the
// embeddings and overrides U+202A–U+202E (LRE, RLE, PDF, LRO, RLO) and the
// isolates U+2066–U+2069 (LRI, RLI, FSI, PDI).
func isBidiControl(r rune) bool {
	return r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

// sgrLen returns the length of the SGR sequence ESC [ PARAMS m at the start
// of s (s[0] is ESC), 0 if there is none there (another sequence, one cut
// short, PARAMS longer than maxSGRParams), and whether it resets to the
// default attributes: PARAMS only '0's and ';'s (empty is 0).
func sgrLen[S ~string | ~[]byte](s S) (int, bool) {
	if len(s) < 3 || s[1] != '[' {
		return 0, false
	}
	reset := true
	for j := 2; j < len(s) && j-2 <= maxSGRParams; j++ {
		switch c := s[j]; {
		case c == 'm':
			return j + 1, reset
		case c == '0' || c == ';':
		case c >= '1' && c <= '9' || c == ':':
			reset = false
		default:
			return 0, false
		}
	}
	return 0, false
}

// printableASCII reports whether s is all printable ASCII (0x20–0x7e),
// eight bytes at a time.
func printableASCII(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if !printable8(load64(s, i)) {
			return false
		}
	}
	for ; i < len(s); i++ {
		if s[i] < 0x20 || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// appendName appends a name read from the input (a channel or stream
// name), escaped as a record is (TAB too, no SGR), and returns the columns
// it takes: width, the name's length in runes, unless something was
// escaped.
func appendName(b []byte, name string, width int) ([]byte, int) {
	if printableASCII(name) {
		return append(b, name...), width
	}
	n := len(b)
	b, _, _ = appendTerminal(b, name, escapeTab)
	return b, utf8.RuneCount(b[n:])
}

// nameWidth returns the columns name takes once escaped (appendName).
func nameWidth(name string) int {
	if printableASCII(name) {
		return len(name)
	}
	_, w := appendName(nil, name, 0)
	return w
}

// A style is the SGR sequence that starts it; sgrReset ends it.
type style string

// The styles of ds log's text format when colours are on. They colour
// ds's own columns and loss lines only; a text line's own colours are the
// child's.
const (
	styleNone      style = ""
	stylePosition  style = "\x1b[2m"    // the position column: dim
	styleStderr    style = "\x1b[31m"   // the channel column of a *.stderr channel: red
	styleLifecycle style = "\x1b[36m"   // the channel column of proc.*.lifecycle: cyan
	styleLoss      style = "\x1b[1;33m" // gap and drop lines: bold yellow
	styleDamage    style = "\x1b[1;31m" // damaged-range lines: bold red
	styleStart     style = "\x1b[2m"    // a stream's "starts at position" line: dim
)

// streamStyles colour the stream column, one per stream, chosen by a hash
// of its name so that a stream keeps its colour from run to run and input
// to input. Red is left to stderr and damage.
var streamStyles = [...]style{
	"\x1b[32m", "\x1b[33m", "\x1b[34m", "\x1b[35m", "\x1b[36m",
	"\x1b[92m", "\x1b[93m", "\x1b[94m", "\x1b[95m", "\x1b[96m",
}

// channelStyle returns the style of the channel column of channel name.
func channelStyle(name string) style {
	switch {
	case strings.HasSuffix(name, ".stderr"):
		return styleStderr
	case strings.HasPrefix(name, "proc.") && strings.HasSuffix(name, ".lifecycle"):
		return styleLifecycle
	}
	return styleNone
}

// streamStyle returns the style of the stream column of the stream named
// name (node#life).
func streamStyle(name string) style {
	h := uint32(2166136261) // FNV-1a
	for i := 0; i < len(name); i++ {
		h = (h ^ uint32(name[i])) * 16777619
	}
	return streamStyles[h%uint32(len(streamStyles))]
}

// lossStyle returns the style of a loss line's columns (see
// [Printer.lossPrefix]): what is "gap", "dropped", "lost" or "start".
func lossStyle(what string) style {
	if what == "start" {
		return styleStart
	}
	return styleLoss
}

// on returns s when colours are on, nothing otherwise.
func (p *Printer) on(s style) string {
	if p.opts.Color {
		return string(s)
	}
	return ""
}

// off returns what ends s: sgrReset when colours are on and s is a style.
func (p *Printer) off(s style) string {
	if p.opts.Color && s != styleNone {
		return sgrReset
	}
	return ""
}

// appendStyled appends text in style s (when colours are on).
func (p *Printer) appendStyled(b []byte, s style, text string) []byte {
	b = append(b, p.on(s)...)
	b = append(b, text...)
	return append(b, p.off(s)...)
}

// appendChannel appends the channel column of a line of ci: its name,
// escaped, in its style, padded to the column's width.
func (p *Printer) appendChannel(b []byte, ci *chanInfo) []byte {
	s := styleNone
	if p.opts.Color {
		s = channelStyle(ci.desc.Name)
	}
	b = append(b, s...)
	b, w := appendName(b, ci.desc.Name, ci.width)
	b = append(b, p.off(s)...)
	return appendPad(b, p.nameW-w)
}

// appendStreamColumn appends the stream column of a line of st (its
// column text, escaped) in the stream's colour, which its full name
// chooses, padded to the column's width.
func (p *Printer) appendStreamColumn(b []byte, st *streamInfo) []byte {
	s := styleNone
	if p.opts.Color {
		s = streamStyle(st.name)
	}
	b = append(b, s...)
	b, w := appendName(b, st.col, st.colW)
	b = append(b, p.off(s)...)
	return appendPad(b, p.streamW-w)
}

// appendText appends a text line escaped for the output: with stopCR, only
// what precedes its first CR, returning false there. When colours are on
// its SGR sequences pass, and a line they leave with attributes changed
// ends with sgrReset.
func (p *Printer) appendText(b, line []byte, stopCR bool) ([]byte, bool) {
	var flags escapeFlags
	if stopCR {
		flags |= stopAtCR
	}
	if p.opts.Color {
		flags |= passSGR
	}
	b, ok, dirty := appendTerminal(b, line, flags)
	if dirty && ok {
		b = append(b, sgrReset...)
	}
	return b, ok
}

// appendTerminalSafe escapes, in place, what of b[from:] a terminal would
// act on (see the rules above), for text already rendered from a payload
// (a compact JSON record, which holds no control below 0x20 but may hold
// DEL, C1 controls, bidirectional controls and bytes that are not UTF-8).
// It returns b unchanged when there is nothing to escape.
func appendTerminalSafe(b []byte, from int) []byte {
	tail := b[from:]
	i := 0
	for i < len(tail) {
		for i+8 <= len(tail) && printable8(load64(tail, i)) {
			i += 8
		}
		if i == len(tail) || tail[i] < 0x20 || tail[i] == 0x7f {
			break
		}
		if tail[i] < 0x80 {
			i++
			continue
		}
		r, n := utf8.DecodeRune(tail[i:])
		if n == 1 || r < 0xa0 || isBidiControl(r) {
			break
		}
		i += n
	}
	if i == len(tail) {
		return b
	}
	rest := append([]byte(nil), tail[i:]...)
	b, _, _ = appendTerminal(b[:from+i], rest, escapeTab)
	return b
}

// safeWriter passes what a view writes for people (ds info, ds latest)
// through the terminal rules line by line: names, labels, reasons and
// messages a capture carries can never act on the reader's terminal.
// Newlines and tabs pass; anything else the rules escape is escaped.
type safeWriter struct {
	w   io.Writer
	buf []byte
}

// newSafeWriter returns w behind the terminal rules.
func newSafeWriter(w io.Writer) *safeWriter { return &safeWriter{w: w} }

func (s *safeWriter) Write(p []byte) (int, error) {
	n := len(p)
	b := s.buf[:0]
	for len(p) > 0 {
		line := p
		nl := bytes.IndexByte(p, '\n')
		if nl >= 0 {
			line = p[:nl]
		}
		b, _, _ = appendTerminal(b, line, 0)
		if nl < 0 {
			break
		}
		b = append(b, '\n')
		p = p[nl+1:]
	}
	s.buf = b
	if _, err := s.w.Write(b); err != nil {
		return 0, err
	}
	return n, nil
}

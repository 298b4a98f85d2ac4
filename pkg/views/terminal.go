package views

import (
	"bytes"
	"io"
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

// appendEscaped appends s with everything a terminal would act on shown
// visibly (the rules above: controls and bytes that are not UTF-8 as
// \xNN, bidirectional controls as \uNNNN), so that raw bytes are visible
// and nothing reaches the terminal as a control sequence: a record or
// bytes payload, a name or a message from the input. Tabs are kept unless
// all is set (then everything but printable text is escaped). It is
// [appendTerminal] for the cases that need neither stopAtCR nor passSGR.
func appendEscaped[S ~string | ~[]byte](b []byte, s S, all bool) []byte {
	var flags escapeFlags
	if all {
		flags = escapeTab
	}
	b, _, _ = appendTerminal(b, s, flags)
	return b
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

// Bytes of eight lanes, for testing eight bytes at once.
const (
	lanes01 = 0x0101010101010101
	lanes80 = 0x8080808080808080
)

// printable8 reports whether the eight bytes of x (one per lane) are all
// printable ASCII, 0x20 to 0x7e. Each term is exact as to whether any lane
// has its property: bytes below 0x20 (x - 0x20 borrows into the top bit
// of a lane that had it clear), above 0x7e (x + 1 reaches the top bit, or
// it was set).
func printable8(x uint64) bool {
	return ((x-0x20*lanes01)&^x|(x+lanes01)|x)&lanes80 == 0
}

const hexDigits = "0123456789abcdef"

// load64 returns the eight bytes of s at i, the first in the low byte.
func load64[S ~string | ~[]byte](s S, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

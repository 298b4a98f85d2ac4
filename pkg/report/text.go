package report

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"unicode/utf8"
)

// This file turns payload bytes into text the page shows. The log's
// rows are JSON data the page's script renders with DOM text nodes
// (appendText): a text line's SGR colour sequences (ESC [ … m) become
// segments of our own classes; every other control byte, every other
// escape sequence, bidi controls and bytes that are not UTF-8 are shown
// escaped (\xNN, \u{NNNN}), as ds log shows them; '<' is written \u003c,
// so that nothing can end the script element the data is in. The page's
// own HTML (summary, charts) escapes what it shows with appendHTML.

// htmlSafe holds the ASCII bytes copied as they are: printable, and none
// of & < > " '.
var htmlSafe = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = true
	}
	for _, c := range `&<>"'` {
		t[c] = false
	}
	return t
}()

// jsonSafe holds the ASCII bytes a JSON string of the rows holds as they
// are: printable, and none of " \ <.
var jsonSafe = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = true
	}
	for _, c := range `"\<` {
		t[c] = false
	}
	return t
}()

// sgr is the style SGR sequences have set: a foreground and background
// colour (-1: default; 0–255: the xterm palette; colour24 set: the RGB
// value in rgb), and attributes. own, when not 0, is one of our own
// styles, which no sequence sets: ownClasses[own].
type sgr struct {
	fg, bg       int
	fgRGB, bgRGB int32 // 0xRRGGBB, or -1
	bold, dim    bool
	italic, ul   bool
	inverse      bool
	own          uint8
}

var (
	plain     = sgr{fg: -1, bg: -1, fgRGB: -1, bgRGB: -1}
	escStyle  = sgr{fg: -1, bg: -1, fgRGB: -1, bgRGB: -1, own: 1} // bytes shown escaped, our notes
	codeStyle = sgr{fg: -1, bg: -1, fgRGB: -1, bgRGB: -1, own: 2} // a command to type
)

var ownClasses = []string{"", "x", "cd"}

// appendHTML appends s as HTML text: escaped; control bytes, bidi
// controls and bytes that are not UTF-8 are shown escaped, in spans of
// class x. It writes the page's own text (summary, charts, titles).
func appendHTML(b, s []byte) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if htmlSafe[c] {
			i++
			for i+8 <= len(s) && htmlSafe8(binary.LittleEndian.Uint64(s[i:])) {
				i += 8
			}
			continue
		}
		b = append(b, s[start:i]...)
		switch {
		case c == '&':
			b = append(b, "&amp;"...)
			i++
		case c == '<':
			b = append(b, "&lt;"...)
			i++
		case c == '>':
			b = append(b, "&gt;"...)
			i++
		case c == '"':
			b = append(b, "&#34;"...)
			i++
		case c == '\'':
			b = append(b, "&#39;"...)
			i++
		case c == '\t':
			b = append(b, '\t')
			i++
		case c < 0x20 || c == 0x7f:
			b = appendEscape(b, c)
			i++
		default:
			r, n := utf8.DecodeRune(s[i:])
			switch {
			case r == utf8.RuneError && n <= 1:
				b = appendEscape(b, c)
			case hiddenRune(r):
				b = append(b, `<span class="x">\u{`...)
				b = strconv.AppendUint(b, uint64(r), 16)
				b = append(b, "}</span>"...)
			default:
				b = append(b, s[i:i+n]...)
			}
			i += n
		}
		start = i
	}
	return append(b, s[start:]...)
}

// hiddenRune reports whether r is shown escaped, never obeyed: a C1
// control or a bidi control.
func hiddenRune(r rune) bool {
	return r >= 0x80 && r < 0xa0 || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f || r == 0x061c
}

// appendText appends a row's text as the page's data holds it: a JSON
// string when it is plain text, or else an array of segments, each a
// string (plain text) or [CLASSES, TEXT] or [CLASSES, TEXT, FG, BG]
// (FG and BG: "#rrggbb" or ""; for the 256-colour palette and true
// colour). pre, when not "", is a note of ours before the text ("[late]"),
// and more > 0 says that many bytes of it are not shown. With colour
// (text lines) SGR sequences restyle; without, they are shown escaped.
// No '<' is written as it is: nothing can end the script element.
func appendText(b []byte, pre string, s []byte, colour bool, more int) []byte {
	if pre == "" && more == 0 {
		if out, ok := appendPlainString(b, s); ok {
			return out
		}
	}
	w := segWriter{b: append(b, '[')}
	if pre != "" {
		w.start(escStyle)
		w.b = append(w.b, pre...)
		w.start(plain)
		w.b = append(w.b, ' ')
	}
	w.text(s, colour)
	if more > 0 {
		w.start(escStyle)
		w.b = append(w.b, " … "...)
		w.b = strconv.AppendInt(w.b, int64(more), 10)
		w.b = append(w.b, " more bytes (ds log shows them)"...)
	}
	w.close()
	return append(w.b, ']')
}

// appendPlainString appends s as a JSON string when it needs no segment
// (no escape sequence, control byte but tab, bidi control or byte that is
// not UTF-8); ok false (and b unchanged in content) when it does.
func appendPlainString(b, s []byte) (out []byte, ok bool) {
	if allJSONSafe(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"'), true
	}
	n0 := len(b)
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if jsonSafe[c] {
			i++
			for i+8 <= len(s) && jsonSafe8(binary.LittleEndian.Uint64(s[i:])) {
				i += 8
			}
			continue
		}
		b = append(b, s[start:i]...)
		switch {
		case c == '"':
			b = append(b, '\\', '"')
			i++
		case c == '\\':
			b = append(b, '\\', '\\')
			i++
		case c == '<':
			b = append(b, `\u003c`...)
			i++
		case c == '\t':
			b = append(b, '\\', 't')
			i++
		case c < 0x80:
			return b[:n0], false
		default:
			r, n := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && n <= 1 || hiddenRune(r) {
				return b[:n0], false
			}
			b = append(b, s[i:i+n]...)
			i += n
		}
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"'), true
}

// allJSONSafe reports whether every byte of s is jsonSafe, eight at a
// time (the last eight overlapping; a line shorter than eight padded).
func allJSONSafe(s []byte) bool {
	n := len(s)
	if n < 8 {
		x := uint64(0x6161616161616161) // "aaaaaaaa"
		for j := range n {
			x = x&^(0xff<<(8*j)) | uint64(s[j])<<(8*j)
		}
		return jsonSafe8(x)
	}
	for i := 0; i+8 <= n; i += 8 {
		if !jsonSafe8(binary.LittleEndian.Uint64(s[i:])) {
			return false
		}
	}
	return n%8 == 0 || jsonSafe8(binary.LittleEndian.Uint64(s[n-8:]))
}

// segWriter writes the segments of a row's text (appendText).
type segWriter struct {
	b    []byte
	n    int  // segments started
	open bool // a segment is open, of style st
	st   sgr
}

// start makes sure a segment of style st is open, for text to follow.
func (w *segWriter) start(st sgr) {
	if w.open && w.st == st {
		return
	}
	w.close()
	if w.n > 0 {
		w.b = append(w.b, ',')
	}
	w.n++
	w.open, w.st = true, st
	if st == plain {
		w.b = append(w.b, '"')
		return
	}
	w.b = append(w.b, '[', '"')
	w.b = st.appendClasses(w.b)
	w.b = append(w.b, '"', ',', '"')
}

// close closes the open segment, if any.
func (w *segWriter) close() {
	if !w.open {
		return
	}
	w.open = false
	w.b = append(w.b, '"')
	if w.st == plain {
		return
	}
	fg, bg := colourOf(w.st.fg, w.st.fgRGB), colourOf(w.st.bg, w.st.bgRGB)
	if fg >= 0 || bg >= 0 {
		w.b = append(w.b, ',', '"')
		if fg >= 0 {
			w.b = appendColour(w.b, fg)
		}
		w.b = append(w.b, '"', ',', '"')
		if bg >= 0 {
			w.b = appendColour(w.b, bg)
		}
		w.b = append(w.b, '"')
	}
	w.b = append(w.b, ']')
}

// escaped appends byte c shown escaped, \xNN.
func (w *segWriter) escaped(c byte) {
	const hex = "0123456789abcdef"
	w.start(escStyle)
	w.b = append(w.b, '\\', '\\', 'x', hex[c>>4], hex[c&15])
}

// text appends s: its SGR sequences restyle when colour is set.
func (w *segWriter) text(s []byte, colour bool) {
	st := plain
	for i := 0; i < len(s); {
		c := s[i]
		if jsonSafe[c] {
			j := i + 1
			for j < len(s) && jsonSafe[s[j]] {
				j++
			}
			w.start(st)
			w.b = append(w.b, s[i:j]...)
			i = j
			continue
		}
		switch {
		case c == '"':
			w.start(st)
			w.b = append(w.b, '\\', '"')
			i++
		case c == '\\':
			w.start(st)
			w.b = append(w.b, '\\', '\\')
			i++
		case c == '<':
			w.start(st)
			w.b = append(w.b, `\u003c`...)
			i++
		case c == '\t':
			w.start(st)
			w.b = append(w.b, '\\', 't')
			i++
		case c == 0x1b && colour && i+1 < len(s) && s[i+1] == '[':
			// CSI: an SGR sequence (final byte m) restyles; any other is
			// shown escaped.
			j := i + 2
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == ';' || s[j] == ':') {
				j++
			}
			if j < len(s) && s[j] == 'm' {
				st = st.apply(s[i+2 : j])
				i = j + 1
			} else {
				w.escaped(c)
				i++
			}
		case c < 0x20 || c == 0x7f:
			w.escaped(c)
			i++
		default:
			r, n := utf8.DecodeRune(s[i:])
			switch {
			case r == utf8.RuneError && n <= 1:
				w.escaped(c)
			case hiddenRune(r):
				w.start(escStyle)
				w.b = append(w.b, `\\u{`...)
				w.b = strconv.AppendUint(w.b, uint64(r), 16)
				w.b = append(w.b, '}')
			default:
				w.start(st)
				w.b = append(w.b, s[i:i+n]...)
			}
			i += n
		}
	}
}

const (
	lanes01 = 0x0101010101010101
	lanes80 = 0x8080808080808080
)

// htmlSafe8 reports whether the eight bytes of x are all htmlSafe: from
// 0x20 to 0x7e, and none of & < > " '. (v-lanes01)&^v has the top bit of
// a lane set where v is zero; a lane of x+1 that reaches 0x80 was 0x7f or
// more.
func htmlSafe8(x uint64) bool {
	bad := (x - 0x20*lanes01) &^ x // a lane below 0x20
	bad |= x | (x + lanes01)       // a lane at 0x7f or above (no carry crosses lanes below 0x7f)
	bad |= zero8(x^'&'*lanes01) | zero8(x^'<'*lanes01) | zero8(x^'>'*lanes01) | zero8(x^'"'*lanes01) | zero8(x^'\''*lanes01)
	return bad&lanes80 == 0
}

// jsonSafe8 reports whether the eight bytes of x are all jsonSafe: from
// 0x20 to 0x7e, and none of " \ <.
func jsonSafe8(x uint64) bool {
	bad := (x - 0x20*lanes01) &^ x
	bad |= x | (x + lanes01)
	bad |= zero8(x^'"'*lanes01) | zero8(x^'\\'*lanes01) | zero8(x^'<'*lanes01)
	return bad&lanes80 == 0
}

// appendEscape appends byte c shown escaped, \xNN, styled as such.
func appendEscape(b []byte, c byte) []byte {
	const hex = "0123456789abcdef"
	return append(b, '<', 's', 'p', 'a', 'n', ' ', 'c', 'l', 'a', 's', 's', '=', '"', 'x', '"', '>', '\\', 'x', hex[c>>4], hex[c&15], '<', '/', 's', 'p', 'a', 'n', '>')
}

// lastSegment returns what a terminal shows of a line holding CRs: its
// last segment that is not empty (ds log's rule); a line without CR is
// returned as it is.
func lastSegment(line []byte) []byte {
	if bytes.IndexByte(line, '\r') < 0 {
		return line
	}
	for {
		i := lastIndexCR(line)
		if i < 0 {
			return line
		}
		if i+1 < len(line) {
			return line[i+1:]
		}
		line = line[:i]
	}
}

func lastIndexCR(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\r' {
			return i
		}
	}
	return -1
}

// apply returns st changed by the parameters of one SGR sequence
// ("1;31", "38;5;208", "" for a reset).
func (st sgr) apply(params []byte) sgr {
	var ps []int
	n, have := 0, false
	for _, c := range params {
		if c == ';' || c == ':' {
			ps = append(ps, n)
			n, have = 0, false
			continue
		}
		if n < 1<<16 {
			n = n*10 + int(c-'0')
		}
		have = true
	}
	if have || len(ps) == 0 {
		ps = append(ps, n)
	} else {
		ps = append(ps, 0)
	}
	for i := 0; i < len(ps); i++ {
		p := ps[i]
		switch {
		case p == 0:
			st = plain
		case p == 1:
			st.bold = true
		case p == 2:
			st.dim = true
		case p == 3:
			st.italic = true
		case p == 4:
			st.ul = true
		case p == 7:
			st.inverse = true
		case p == 22:
			st.bold, st.dim = false, false
		case p == 23:
			st.italic = false
		case p == 24:
			st.ul = false
		case p == 27:
			st.inverse = false
		case p >= 30 && p <= 37:
			st.fg, st.fgRGB = p-30, -1
		case p >= 90 && p <= 97:
			st.fg, st.fgRGB = p-90+8, -1
		case p == 39:
			st.fg, st.fgRGB = -1, -1
		case p >= 40 && p <= 47:
			st.bg, st.bgRGB = p-40, -1
		case p >= 100 && p <= 107:
			st.bg, st.bgRGB = p-100+8, -1
		case p == 49:
			st.bg, st.bgRGB = -1, -1
		case p == 38 || p == 48:
			// 38;5;N (palette) or 38;2;R;G;B (true colour).
			var idx int
			var rgb int32 = -1
			switch {
			case i+2 < len(ps) && ps[i+1] == 5:
				idx = ps[i+2] & 255
				i += 2
			case i+4 < len(ps) && ps[i+1] == 2:
				rgb = int32(ps[i+2]&255)<<16 | int32(ps[i+3]&255)<<8 | int32(ps[i+4]&255)
				i += 4
			default:
				return st // malformed: ignore the rest
			}
			if p == 38 {
				st.fg, st.fgRGB = idx, rgb
			} else {
				st.bg, st.bgRGB = idx, rgb
			}
		}
	}
	return st
}

// appendClasses appends the classes of style st, space-separated: ours
// (x for escapes, cd for commands), classes for the 16 basic colours and the attributes
// (colours from the 256-colour palette and true colour are the
// segment's FG and BG, see appendText).
func (st sgr) appendClasses(b []byte) []byte {
	if st.own != 0 {
		return append(b, ownClasses[st.own]...)
	}
	n := len(b)
	if st.fg >= 0 && st.fgRGB < 0 && st.fg < 16 {
		b = append(b, 'f')
		b = strconv.AppendInt(b, int64(st.fg), 10)
		b = append(b, ' ')
	}
	if st.bg >= 0 && st.bgRGB < 0 && st.bg < 16 {
		b = append(b, 'b')
		b = strconv.AppendInt(b, int64(st.bg), 10)
		b = append(b, ' ')
	}
	for _, a := range []struct {
		on   bool
		name string
	}{{st.bold, "sb "}, {st.dim, "sd "}, {st.italic, "si "}, {st.ul, "su "}, {st.inverse, "sr "}} {
		if a.on {
			b = append(b, a.name...)
		}
	}
	if len(b) > n && b[len(b)-1] == ' ' {
		b = b[:len(b)-1]
	}
	return b
}

// colourOf returns the RGB value of a palette index from 16 up or of a
// true colour; -1 for the default and for the 16 basic colours, which
// have classes.
func colourOf(idx int, rgb int32) int32 {
	switch {
	case rgb >= 0:
		return rgb
	case idx < 16:
		return -1
	case idx < 232:
		// The 6×6×6 cube.
		i := idx - 16
		lv := func(v int) int32 {
			if v == 0 {
				return 0
			}
			return int32(55 + 40*v)
		}
		return lv(i/36)<<16 | lv(i/6%6)<<8 | lv(i%6)
	default:
		g := int32(8 + 10*(idx-232))
		return g<<16 | g<<8 | g
	}
}

func appendColour(b []byte, rgb int32) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '#')
	for sh := 20; sh >= 0; sh -= 4 {
		b = append(b, hex[rgb>>sh&15])
	}
	return b
}

// isErrorLine reports whether a line reads like an error: it holds, at
// the start of a word and in any case, error, fatal, fail, panic,
// exception or traceback. ds report marks such lines and jumps to the
// first.
func isErrorLine(s []byte) bool {
	prevLetter := false
	scalar := 0 // below it, a byte at a time
	for i := 0; i < len(s); {
		if i >= scalar && i+8 <= len(s) {
			// Eight bytes at a time past those where no word that could
			// be one starts, and no escape sequence.
			x := binary.LittleEndian.Uint64(s[i:])
			l := letters8(x)
			carry := uint64(0)
			if prevLetter {
				carry = 0x80
			}
			if l&^(l<<8|carry)&startLetters8(x) == 0 && zero8(x^0x1b*lanes01) == 0 {
				prevLetter = l>>63 != 0
				i += 8
				continue
			}
			scalar = i + 8
		}
		c := s[i]
		switch wordClass[c] {
		case 2:
			if !prevLetter && errorWordAt(s[i:]) {
				return true
			}
		case 3:
			// ESC: a CSI sequence (colour) is no part of a word.
			i++
			if i < len(s) && s[i] == '[' {
				for i++; i < len(s) && (s[i] < 0x40 || s[i] > 0x7e); i++ {
				}
				i++
			}
			prevLetter = false
			continue
		}
		prevLetter = wordClass[c] == 1 || wordClass[c] == 2
		i++
	}
	return false
}

// zero8 has the top bit set in (at least) every lane of v that is zero,
// and is zero when none is.
func zero8(v uint64) uint64 { return (v - lanes01) &^ v & lanes80 }

// letters8 has the top bit set in exactly the lanes of x that are ASCII
// letters.
func letters8(x uint64) uint64 {
	y := (x | 0x20*lanes01) &^ lanes80 // lower case; no lane over 0x7f, so no carry between lanes below
	ge := y + (0x80-'a')*lanes01       // top bit: y >= 'a'
	gt := y + (0x80-'z'-1)*lanes01     // top bit: y > 'z'
	return ge &^ gt &^ x & lanes80
}

// startLetters8 has the top bit set in every lane of x that is e, f, p
// or t in any case (and maybe in others: a superset is enough).
func startLetters8(x uint64) uint64 {
	y := x | 0x20*lanes01
	return zero8(y^'e'*lanes01) | zero8(y^'f'*lanes01) | zero8(y^'p'*lanes01) | zero8(y^'t'*lanes01)
}

// errorWordAt reports whether s starts with one of the error words, in
// any case.
func errorWordAt(s []byte) bool {
	if len(s) < 4 {
		return false
	}
	switch s[0] | 0x20 {
	case 'e':
		return lowerEq(s, "error") || lowerEq(s, "exception")
	case 'f':
		return lowerEq(s, "fail") || lowerEq(s, "fatal")
	case 'p':
		return lowerEq(s, "panic")
	case 't':
		return lowerEq(s, "traceback")
	}
	return false
}

// wordClass classifies bytes for isErrorLine: 0 not a letter, 1 a letter
// no error word starts with, 2 one that one does, 3 ESC.
var wordClass = func() (t [256]uint8) {
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-32] = 1, 1
	}
	for _, c := range "efpt" {
		t[c], t[c-32] = 2, 2
	}
	t[0x1b] = 3
	return t
}()

// lowerEq reports whether b starts with w (lower case ASCII letters), in
// any case.
func lowerEq(b []byte, w string) bool {
	if len(b) < len(w) {
		return false
	}
	for i := range len(w) {
		if b[i]|0x20 != w[i] {
			return false
		}
	}
	return true
}

package export

import (
	"unicode/utf8"

	"github.com/ds-telemetry/ds/pkg/views"
)

// appendJSONString appends s as a JSON string. Each byte of s that is not
// UTF-8 becomes U+FFFD; quote, backslash and control characters are
// escaped (\n, \r, \t, \b, \f or \u00XX), nothing else is (no HTML
// escaping: the output is no web page).
func appendJSONString[T string | []byte](b []byte, s T) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
			if r == utf8.RuneError && n == 1 {
				b = append(b, "\uFFFD"...)
			} else {
				b = append(b, s[i:i+n]...)
			}
			i += n
			continue
		}
		i++
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c >= 0x20:
			b = append(b, c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\f':
			b = append(b, '\\', 'f')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
	}
	return append(b, '"')
}

// appendLossy appends p with each byte that is not UTF-8 replaced by
// U+FFFD (one for each, as ds log --json's lossy "text").
func appendLossy(b, p []byte) []byte {
	for len(p) > 0 {
		r, n := utf8.DecodeRune(p)
		if r == utf8.RuneError && n == 1 {
			b = append(b, "\uFFFD"...)
		} else {
			b = append(b, p[:n]...)
		}
		p = p[n:]
	}
	return b
}

// incompleteTail returns how many bytes at the end of p start a UTF-8
// character that p ends before completing (0 to 3): a frame boundary that
// splits a character. Bytes that can never become a character count 0.
func incompleteTail(p []byte) int {
	for k := 1; k <= min(utf8.UTFMax-1, len(p)); k++ {
		c := p[len(p)-k]
		if c&0xC0 == 0x80 {
			continue // a continuation byte: look further back
		}
		need := 0
		switch {
		case c&0xE0 == 0xC0:
			need = 2
		case c&0xF0 == 0xE0:
			need = 3
		case c&0xF8 == 0xF0:
			need = 4
		}
		if need > k && validPrefix(p[len(p)-k:]) {
			return k
		}
		return 0
	}
	return 0
}

// validPrefix reports whether p (a lead byte and fewer continuation
// bytes than it needs) can still become a valid character: padded with
// continuation bytes, it decodes.
func validPrefix(p []byte) bool {
	var buf [utf8.UTFMax]byte
	n := copy(buf[:], p)
	for n < utf8.UTFMax {
		buf[n] = 0x80
		n++
	}
	for _, lo := range []byte{0x80, 0xBF} {
		for i := len(p); i < utf8.UTFMax; i++ {
			buf[i] = lo
		}
		if r, size := utf8.DecodeRune(buf[:]); r != utf8.RuneError && size > len(p) {
			return true
		}
	}
	return false
}

// noteName is what a note entry is called in ds log's text (its channel
// column) and in the exports: gap, dropped, lost, start, trimmed,
// damaged; "" for an entry that is no note.
func noteName(k views.EntryKind) string {
	switch k {
	case views.EntryGap:
		return "gap"
	case views.EntryDrop:
		return "dropped"
	case views.EntryTransport:
		return "lost"
	case views.EntryStart:
		return "start"
	case views.EntryTrimmed:
		return "trimmed"
	case views.EntryDamage:
		return "damaged"
	}
	return ""
}

// lineText returns the text of line entry e as a terminal shows it: one
// CR before its newline left out (a --pty capture's CR LF), as are the
// newline itself (already not in the payload). A partial line keeps
// its bytes.
func lineText(e *views.Entry) []byte {
	p := e.Payload
	if !e.Partial && len(p) > 0 && p[len(p)-1] == '\r' {
		return p[:len(p)-1]
	}
	return p
}

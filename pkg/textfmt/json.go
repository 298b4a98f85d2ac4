package textfmt

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// This file holds the JSON spellings that ds's hand-written encoders share
// (the views' --json lines, ds host's records, ds report's data, the
// store's catalog.json): strings and numbers byte for byte as
// encoding/json writes them, without its reflection or allocations.

// jsonSafe[html] holds the ASCII bytes that encoding/json copies into a
// string as they are: not '"', '\\' or a control character below 0x20,
// and, with HTML escaping (html true, json.Marshal's default), not '<',
// '>' or '&' either (its htmlSafeSet and safeSet).
var jsonSafe = func() (t [2][256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[0][c], t[1][c] = true, true
	}
	for _, c := range `"\` {
		t[0][c], t[1][c] = false, false
	}
	for _, c := range `<>&` {
		t[1][c] = false
	}
	return t
}()

// Bytes of eight lanes, for testing eight bytes at once.
const (
	lanes01 = 0x0101010101010101
	lanes80 = 0x8080808080808080
)

// jsonSafe8 reports whether the eight bytes of x are all jsonSafe[html]:
// none is below 0x20 or from 0x80 up, nor '"' or '\\', nor (with html)
// '&' (x|4 is 0x26), '<' or '>' (x|2 is 0x3e). Each term is exact as to
// whether any lane has its property ((v-1)&^v has the top bit of a lane
// set where v is zero).
func jsonSafe8(x uint64, html bool) bool {
	s := x ^ 0x5c*lanes01
	d := x ^ 0x22*lanes01
	bad := (x-0x20*lanes01)&^x | x | (s-lanes01)&^s | (d-lanes01)&^d
	if html {
		q := (x | 0x04*lanes01) ^ 0x26*lanes01
		a := (x | 0x02*lanes01) ^ 0x3e*lanes01
		bad |= (q-lanes01)&^q | (a-lanes01)&^a
	}
	return bad&lanes80 == 0
}

// load64 returns the eight bytes of s at i, the first in the low byte.
func load64[S ~string | ~[]byte](s S, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as a JSON string exactly as encoding/json
// encodes it (with escapeHTML, as json.Marshal does; without, as an
// Encoder after SetEscapeHTML(false)): '"' and '\\' escaped, control
// characters as \n, \r, \t, \b, \f or \u00XX, U+2028 and U+2029 as
// \u2028 and \u2029, each byte that is not valid UTF-8 as \ufffd, and
// with escapeHTML '<', '>' and '&' as \u003c, \u003e and \u0026 (safe in
// an HTML script element).
func AppendJSONString[S ~string | ~[]byte](b []byte, s S, escapeHTML bool) []byte {
	b, _ = AppendJSONQuoted(b, s, escapeHTML)
	return b
}

// AppendJSONQuoted is [AppendJSONString] that also reports whether s is
// valid UTF-8 (utf8.Valid), so that a caller can check and encode in one
// pass.
func AppendJSONQuoted[S ~string | ~[]byte](b []byte, s S, escapeHTML bool) ([]byte, bool) {
	h := 0
	if escapeHTML {
		h = 1
	}
	safe := &jsonSafe[h]
	valid := true
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if safe[c] {
			i++
			for i+8 <= len(s) && jsonSafe8(load64(s, i), escapeHTML) {
				i += 8
			}
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
			}
			i++
			start = i
			continue
		}
		var rb [utf8.UTFMax]byte
		r, size := utf8.DecodeRune(rb[:copy(rb[:], s[i:])])
		switch {
		case r == utf8.RuneError && size == 1:
			valid = false
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&15])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"'), valid
}

// AppendJSONFloat appends f as encoding/json writes a float64 (ES6 number
// formatting: 'f', but 'e' for magnitudes below 1e-6 or from 1e21, with
// no leading 0 in the exponent: 1e-7, not 1e-07). f must be finite: encoding/json refuses NaN and the
// infinities, and so must the caller.
func AppendJSONFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

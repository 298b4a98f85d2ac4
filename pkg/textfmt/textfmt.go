// Package textfmt holds the small text helpers every part of ds shares
// when it writes for people: counted nouns ("3 frames"), names and
// errors taken from input made safe for a terminal, and byte sizes. It
// imports the standard library only, so any package may use it; none of
// it decodes a payload (that is the views' job, docs/ARCHITECTURE.md §1).
package textfmt

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// AppendNouns appends n and the noun what, in the plural unless n is 1:
// "1 frame", "2 frames", "3 copies", "4 losses", "2 transport losses".
// The plural adds "es" after s, x, ch and sh, and turns a y after a
// consonant into "ies"; what is one English noun (or ends with one).
func AppendNouns(b []byte, n uint64, what string) []byte {
	b = strconv.AppendUint(b, n, 10)
	b = append(b, ' ')
	if n == 1 {
		return append(b, what...)
	}
	switch {
	case strings.HasSuffix(what, "s"), strings.HasSuffix(what, "x"), strings.HasSuffix(what, "ch"), strings.HasSuffix(what, "sh"):
		return append(append(b, what...), "es"...)
	case len(what) >= 2 && what[len(what)-1] == 'y' && !strings.ContainsRune("aeiou", rune(what[len(what)-2])):
		return append(append(b, what[:len(what)-1]...), "ies"...)
	}
	return append(append(b, what...), 's')
}

// Nouns is [AppendNouns] as a string: Nouns(2, "frame") is "2 frames".
func Nouns(n uint64, what string) string { return string(AppendNouns(nil, n, what)) }

// safe reports whether s is valid UTF-8 without control or other
// unprintable characters (spaces are fine).
func safe(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) && r != ' ' {
			return false
		}
	}
	return true
}

// Quote returns s, or s quoted as Go quotes strings when it holds control
// characters, unprintable runes or bytes that are not UTF-8 (a node name,
// a file name or an error taken from input), so that nothing ds prints
// can drive the reader's terminal: Quote("a\x1b[2J") is `"a\x1b[2J"`.
func Quote(s string) string {
	if safe(s) {
		return s
	}
	return strconv.Quote(s)
}

// Escape returns s with its control characters, unprintable runes and
// bytes that are not UTF-8 escaped as Go escapes them, without quotes,
// for text that stands inside a line of its own (ds ingest's names):
// Escape("a\x1b") is `a\x1b`. A safe s is returned as it is.
func Escape(s string) string {
	if safe(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case !unicode.IsPrint(r) && r != ' ':
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Bytes says n bytes in the largest binary unit that keeps it readable:
// "1 byte", "512 bytes", "10 GiB", "3.1 MiB".
func Bytes(n uint64) string {
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	if n < 1024 {
		return Nouns(n, "byte")
	}
	u, v := -1, n
	for v >= 1024 && u+1 < len(units) {
		v /= 1024
		u++
	}
	div := uint64(1) << (10 * (u + 1))
	if n%div == 0 {
		return fmt.Sprintf("%d %s", n/div, units[u])
	}
	return fmt.Sprintf("%.1f %s", float64(n)/float64(div), units[u])
}

// ShellJoin joins argv with spaces as a user would type it at a POSIX
// shell: an argument of letters, digits and -_./=:,+@% only is written as
// it is, any other (the empty one included) in single quotes, a quote in
// it as '\”. ds report, ds diff and ds export asciicast show a command
// line so.
func ShellJoin(argv []string) string {
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
			b.WriteString(a)
			continue
		}
		b.WriteByte('\'')
		b.WriteString(strings.ReplaceAll(a, "'", `'\''`))
		b.WriteByte('\'')
	}
	return b.String()
}

// AppendTSVCell appends c as one cell of a TSV row (the IANA
// text/tab-separated-values form, with the escapes that Go's and
// PostgreSQL's readers take): tab, newline, carriage return and backslash
// as \t, \n, \r and \\, and every other C0 control byte and DEL as \xNN
// (ESC is \x1b), so that a row printed on a terminal cannot drive it. The
// rest, UTF-8 or not, is appended as it is. ds series --tsv and ds export
// tsv write their cells with it.
func AppendTSVCell(b []byte, c string) []byte {
	const hex = "0123456789abcdef"
	for i := 0; i < len(c); i++ {
		switch ch := c[i]; {
		case ch == '\t':
			b = append(b, '\\', 't')
		case ch == '\n':
			b = append(b, '\\', 'n')
		case ch == '\r':
			b = append(b, '\\', 'r')
		case ch == '\\':
			b = append(b, '\\', '\\')
		case ch < 0x20 || ch == 0x7f:
			b = append(b, '\\', 'x', hex[ch>>4], hex[ch&0xf])
		default:
			b = append(b, ch)
		}
	}
	return b
}

package diff

import (
	"bytes"
	"regexp"
	"unicode/utf8"
)

// This file holds the normalisation that decides which lines match: what
// changes from one run of a job to the next (numbers, ids, times,
// durations, temporary directories) is masked, so that "built 12 files in
// 3.2s" matches "built 14 files in 5.9s". It is for matching only: lines
// are shown as they are.

// The masks [Normalize] puts in place of what it hides.
const (
	MaskNumber   = "<N>"    // a number: 42, 3.14, 1.2.3
	MaskHex      = "<HEX>"  // a hex id: ≥ 6 hex digits with a digit and a letter, 0x…, a UUID
	MaskTime     = "<TIME>" // a date or time: 2026-01-02, 2026-01-02T10:00:00.5Z, 10:00:00
	MaskDuration = "<DUR>"  // a duration: 1.23s, 45ms, 1m30s, 900µs
	MaskTemp     = "<TMP>"  // the directory right below a temporary root: /tmp/go-build123
)

// tempRoots are the directories whose entries are temporary: the entry
// right below one is masked whole (/tmp/go-build123/b001 →
// /tmp/<TMP>/b<N>).
var tempRoots = []string{"/tmp/", "/var/tmp/", "/private/tmp/", "/var/folders/", "/private/var/folders/", "/dev/shm/"}

// durationUnits are the units a number takes to be a duration, longest
// first for each start.
var durationUnits = []string{"ns", "us", "µs", "μs", "ms", "msec", "min", "mins", "sec", "secs", "s", "m", "h", "d"}

// Normalize appends to dst the text a line is matched by: every number,
// hex id, date, time, duration and temporary directory of line replaced
// by its mask (MaskNumber, …). A number or hex id is one only where a
// word starts (v1.2, sha256 and x86_64 keep their digits), except inside
// an absolute path, where every digit run is masked
// (/home/ci/work/123/x → /home/ci/work/<N>/x). Normalize never fails: any
// bytes go in, as they are where nothing is masked.
func Normalize(dst, line []byte) []byte {
	for i := 0; i < len(line); {
		c := line[i]
		// A word starts after anything but a word byte, or a dot that
		// follows one (the 2 of v1.2 is no number of its own).
		start := i == 0 || !isWord(line[i-1]) && (line[i-1] != '.' || i < 2 || !isWord(line[i-2]))
		if c == '/' && (i == 0 || !isWord(line[i-1]) && !bytes.ContainsRune([]byte("./-~"), rune(line[i-1]))) && i+1 < len(line) && isPathByte(line[i+1]) {
			var n int
			dst, n = appendPath(dst, line[i:])
			i += n
			continue
		}
		if !start || !isHexDigit(c) {
			dst = append(dst, c)
			i++
			continue
		}
		if n := timeLen(line[i:]); n > 0 {
			dst = append(dst, MaskTime...)
			i += n
			continue
		}
		if n := hexLen(line[i:]); n > 0 {
			dst = append(dst, MaskHex...)
			i += n
			continue
		}
		if !isDigit(c) {
			// A word that starts with a-f: copied whole, so that its
			// digits (beef42) stay.
			j := i
			for j < len(line) && isWord(line[j]) {
				j++
			}
			dst = append(dst, line[i:j]...)
			i = j
			continue
		}
		if n := durationLen(line[i:]); n > 0 {
			dst = append(dst, MaskDuration...)
			i += n
			continue
		}
		n := numberLen(line[i:])
		dst = append(dst, MaskNumber...)
		i += n
	}
	return dst
}

func isDigit(c byte) bool    { return c >= '0' && c <= '9' }
func isLetter(c byte) bool   { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isWord(c byte) bool     { return isDigit(c) || isLetter(c) || c == '_' }
func isHexDigit(c byte) bool { return isDigit(c) || c|0x20 >= 'a' && c|0x20 <= 'f' }
func isPathByte(c byte) bool {
	return isWord(c) || c == '.' || c == '-' || c == '+' || c == '@' || c == '~' || c == '%' || c == '/'
}

// digits returns how many decimal digits s starts with.
func digits(s []byte) int {
	n := 0
	for n < len(s) && isDigit(s[n]) {
		n++
	}
	return n
}

// numberLen returns the length of the number s starts with: digits, then
// any ".digits" (3.14, 1.2.3). s starts with a digit.
func numberLen(s []byte) int {
	n := digits(s)
	for n+1 < len(s) && s[n] == '.' && isDigit(s[n+1]) {
		n++
		n += digits(s[n:])
	}
	return n
}

// hexLen returns the length of the hex id s starts with, 0 if none: a
// UUID (8-4-4-4-12), 0x and hex digits, or a word of at least 6 hex
// digits holding a digit and a letter.
func hexLen(s []byte) int {
	if len(s) >= 36 {
		ok := true
		for i := 0; i < 36 && ok; i++ {
			if i == 8 || i == 13 || i == 18 || i == 23 {
				ok = s[i] == '-'
			} else {
				ok = isHexDigit(s[i])
			}
		}
		if ok && (len(s) == 36 || !isWord(s[36])) {
			return 36
		}
	}
	if len(s) > 2 && s[0] == '0' && s[1]|0x20 == 'x' && isHexDigit(s[2]) {
		n := 2
		for n < len(s) && isHexDigit(s[n]) {
			n++
		}
		if n == len(s) || !isWord(s[n]) {
			return n
		}
		return 0
	}
	n, digit, letter := 0, false, false
	for n < len(s) && isHexDigit(s[n]) {
		digit = digit || isDigit(s[n])
		letter = letter || !isDigit(s[n])
		n++
	}
	if n >= 6 && digit && letter && (n == len(s) || !isWord(s[n])) {
		return n
	}
	return 0
}

// timeLen returns the length of the date or time s starts with, 0 if
// none: YYYY-MM-DD, optionally with [T ]HH:MM[:SS[.frac]] and a zone (Z,
// ±HH:MM, ±HHMM), or a clock time H:MM:SS[.frac].
func timeLen(s []byte) int {
	if len(s) >= 10 && digits(s) == 4 && s[4] == '-' && digits(s[5:]) == 2 && s[7] == '-' && digits(s[8:]) == 2 {
		n := 10
		if n+6 <= len(s) && (s[n] == 'T' || s[n] == ' ') && digits(s[n+1:]) == 2 && s[n+3] == ':' && digits(s[n+4:]) == 2 {
			n += 6
			n += clockTail(s[n:])
			n += zoneLen(s[n:])
		}
		if n < len(s) && isWord(s[n]) {
			return 0
		}
		return n
	}
	d := digits(s)
	if d < 1 || d > 2 || d+6 > len(s) || s[d] != ':' || digits(s[d+1:]) != 2 || s[d+3] != ':' || digits(s[d+4:]) != 2 {
		return 0
	}
	n := d + 6
	if n+1 < len(s) && (s[n] == '.' || s[n] == ',') && isDigit(s[n+1]) {
		n++
		n += digits(s[n:])
	}
	n += zoneLen(s[n:])
	if n < len(s) && isWord(s[n]) {
		return 0
	}
	return n
}

// clockTail returns the length of the :SS[.frac] s starts with, 0 if none.
func clockTail(s []byte) int {
	if len(s) < 3 || s[0] != ':' || digits(s[1:]) != 2 {
		return 0
	}
	n := 3
	if n+1 < len(s) && (s[n] == '.' || s[n] == ',') && isDigit(s[n+1]) {
		n++
		n += digits(s[n:])
	}
	return n
}

// zoneLen returns the length of the time zone s starts with: Z, ±HH:MM or
// ±HHMM; 0 if none.
func zoneLen(s []byte) int {
	if len(s) >= 1 && s[0] == 'Z' && (len(s) == 1 || !isWord(s[1])) {
		return 1
	}
	if len(s) >= 5 && (s[0] == '+' || s[0] == '-') && digits(s[1:]) >= 2 {
		if s[3] == ':' && digits(s[4:]) == 2 {
			return 6
		}
		if digits(s[1:]) == 4 {
			return 5
		}
	}
	return 0
}

// durationLen returns the length of the duration s starts with, 0 if
// none: one or more number-unit pairs (1.5s, 45ms, 1h2m3.5s), the last
// unit not followed by a letter, digit or underscore.
func durationLen(s []byte) int {
	n := 0
	for n < len(s) && isDigit(s[n]) {
		m := numberLen(s[n:])
		u := unitLen(s[n+m:])
		if u == 0 {
			break
		}
		n += m + u
	}
	if n < len(s) && isWord(s[n]) {
		return 0 // 0m0, 5s3: not a duration
	}
	return n
}

// unitLen returns the length of the duration unit s starts with, 0 if
// none (a unit followed by a letter is a word: 5sheep).
func unitLen(s []byte) int {
	best := 0
	for _, u := range durationUnits {
		if len(u) > best && bytes.HasPrefix(s, []byte(u)) && (len(u) == len(s) || !isLetter(s[len(u)]) && !startsNonASCIILetter(s[len(u):])) {
			best = len(u)
		}
	}
	return best
}

func startsNonASCIILetter(s []byte) bool {
	if len(s) == 0 || s[0] < utf8.RuneSelf {
		return false
	}
	r, _ := utf8.DecodeRune(s)
	return r == 'µ' || r == 'μ'
}

// appendPath appends the absolute path s starts with, masked: the entry
// right below a temporary root whole, digit runs and hex ids elsewhere.
// It returns how many bytes of s the path took.
func appendPath(dst, s []byte) ([]byte, int) {
	n := 0
	for n < len(s) && isPathByte(s[n]) {
		n++
	}
	p := s[:n]
	for _, root := range tempRoots {
		if bytes.HasPrefix(p, []byte(root)) && len(p) > len(root) {
			dst = append(dst, root...)
			dst = append(dst, MaskTemp...)
			rest := p[len(root):]
			if k := bytes.IndexByte(rest, '/'); k >= 0 {
				rest = rest[k:]
			} else {
				rest = nil
			}
			return appendPathDigits(dst, rest), n
		}
	}
	return appendPathDigits(dst, p), n
}

// appendPathDigits appends path p with its hex ids and digit runs masked.
func appendPathDigits(dst, p []byte) []byte {
	for i := 0; i < len(p); {
		if (i == 0 || !isWord(p[i-1])) && isHexDigit(p[i]) {
			if h := hexLen(p[i:]); h > 0 {
				dst = append(dst, MaskHex...)
				i += h
				continue
			}
		}
		if isDigit(p[i]) {
			dst = append(dst, MaskNumber...)
			i += digits(p[i:])
			continue
		}
		dst = append(dst, p[i])
		i++
	}
	return dst
}

// A Matcher turns lines into the keys the diff compares: a hash of the
// line's channel and its normalised text.
type Matcher struct {
	// Exact turns normalisation off: lines match only when their bytes
	// are equal (after the Ignore masks).
	Exact bool
	// Ignore masks what each regular expression matches, in order, as
	// if the text were not there; a line they mask whole (^DEBUG.*) is
	// left out of the comparison, as diff -I leaves it out.
	Ignore []*regexp.Regexp
	buf    []byte
}

// ignoreMark stands for what an Ignore expression matched.
const ignoreMark = "\x00"

// Key returns the key of line (its bytes without the newline) on a
// channel whose matching name is channel (see [channelKey]), and whether
// the Ignore masks cover it whole (then it is left out). Equal keys mean
// equal normalised text on the same channel, up to 64-bit hash
// collisions (FNV-1a). Key is not safe for concurrent use.
func (m *Matcher) Key(channel string, line []byte) (uint64, bool) {
	text := line
	if len(m.Ignore) > 0 {
		for _, re := range m.Ignore {
			text = re.ReplaceAllLiteral(text, []byte(ignoreMark))
		}
		if len(text) > 0 && len(bytes.Trim(text, ignoreMark)) == 0 {
			return 0, true
		}
	}
	if !m.Exact {
		m.buf = Normalize(m.buf[:0], text)
		text = m.buf
	}
	h := fnvAdd(fnvAdd(fnvOffset, []byte(channel)), []byte{'\n'})
	return fnvAdd(h, text), false
}

// FNV-1a, 64 bits.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvAdd(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return h
}

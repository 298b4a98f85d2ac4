package export

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// TestIncompleteTail checks which frame ends hold back the start of a
// character for the next frame: a lead byte with fewer continuation
// bytes than it needs, when it can still become a character.
func TestIncompleteTail(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"", 0}, {"abc", 0}, {"é", 0}, {"a\xc3", 1}, {"\xe2\x82", 2}, {"\xe2", 1},
		{"\xf0\x9f\x98", 3}, {"\xf0\x9f", 2}, {"€", 0}, {"😀", 0},
		{"\xc0", 0},         // never a character (overlong)
		{"\xe0\x80", 0},     // overlong
		{"\xed\xa0", 0},     // a surrogate
		{"\xf5", 0},         // beyond U+10FFFF
		{"\x80\x80\x80", 0}, // continuation bytes alone
		{"a\xff", 0},
	} {
		if got := incompleteTail([]byte(tc.in)); got != tc.want {
			t.Errorf("incompleteTail(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// FuzzAppendJSONString checks that appendJSONString always makes a JSON
// string of valid UTF-8 that decodes to the input with each byte that is
// not UTF-8 replaced by U+FFFD (appendLossy).
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", "q\"b\\", "\x00\x1f\x7f\n\r\t\b\f", "é€😀", "\xff\xc3", "\u2028<>&", "a\xe2\x82"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		b := appendJSONString(nil, in)
		if !utf8.Valid(b) || !json.Valid(b) {
			t.Fatalf("%q: not valid UTF-8 JSON: %q", in, b)
		}
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		if want := string(appendLossy(nil, in)); s != want {
			t.Fatalf("%q: decodes to %q, want %q", in, s, want)
		}
		if b2 := appendJSONString(nil, string(in)); string(b2) != string(b) {
			t.Fatalf("string and []byte differ: %q, %q", b2, b)
		}
	})
}

package textfmt

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// encodingJSON returns s as encoding/json encodes it, with or without
// HTML escaping.
func encodingJSON(t testing.TB, s string, escapeHTML bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// The eight-byte test is exact: a word is all safe just when each of its
// bytes is, with HTML escaping and without.
func TestJSONSafe8(t *testing.T) {
	check := func(x uint64) {
		t.Helper()
		for h, html := range []bool{false, true} {
			safe := true
			for k := range 8 {
				safe = safe && jsonSafe[h][byte(x>>(8*k))]
			}
			if jsonSafe8(x, html) != safe {
				t.Fatalf("%#016x: jsonSafe8(html %v) = %v, want %v", x, html, !safe, safe)
			}
		}
	}
	for c := range uint64(256) {
		for k := range 8 {
			for _, filler := range []uint64{'a', 0x20, 0x7e, 0x7f, 0x1f, 0x00, 0xff, '"', '<', '&'} {
				x := filler * lanes01
				check(x&^(0xff<<(8*k)) | c<<(8*k))
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1 << 18 {
		x := r.Uint64()
		// Mostly safe lanes, so that the few others are tested alone.
		check(x &^ (lanes80 & r.Uint64() & r.Uint64()))
		check(x&^lanes80 | 0x20*lanes01)
	}
}

var jsonStringTests = []string{
	"", "plain", `"quoted" \ back/slash`, "\b\f\n\r\t", "\x00\x01\x1f\x7f",
	"<a href=\"x\">&amp;</a>", "\u2028\u2029", "a\u2028b\u2029c", "é✓🙂",
	"\xff", "\xc3\x28", "a\xe2\x80", "\xe2\x80\xa8\xe2\x80", "\xed\xa0\x80", "\xef\xbf\xbd",
	"\xf4\x90\x80\x80", "\xc0\xaf", strings.Repeat("long ascii text ", 10),
}

// specialAt returns texts of 24 bytes of filler with s at every offset
// from 0 to 16, so that s falls in every lane of an eight-byte test.
func specialAt(filler byte, s string) []string {
	var out []string
	for off := 0; off <= 16; off++ {
		b := bytes.Repeat([]byte{filler}, 24)
		out = append(out, string(b[:off])+s+string(b[off+len(s):]))
	}
	return out
}

func TestAppendJSONString(t *testing.T) {
	ins := slices.Clone(jsonStringTests)
	for c := range 256 {
		ins = append(ins, specialAt('a', string([]byte{byte(c)}))...)
	}
	for _, s := range []string{"\u2028", "\u2029", "é", "\xe2\x80", "<", "&"} {
		ins = append(ins, specialAt('a', s)...)
	}
	for _, s := range ins {
		for _, html := range []bool{false, true} {
			want := encodingJSON(t, s, html)
			if got := AppendJSONString([]byte("x"), s, html); string(got) != "x"+string(want) {
				t.Errorf("AppendJSONString(%q, %v) = %s, want %s", s, html, got[1:], want)
			}
			got, valid := AppendJSONQuoted(nil, []byte(s), html)
			if string(got) != string(want) || valid != utf8.ValidString(s) {
				t.Errorf("AppendJSONQuoted(%q, %v) = %s, %v; want %s, %v", s, html, got, valid, want, utf8.ValidString(s))
			}
		}
	}
}

// FuzzAppendJSONString checks AppendJSONString against encoding/json,
// with HTML escaping and without.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range jsonStringTests {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, html := range []bool{false, true} {
			want := encodingJSON(t, s, html)
			if got := AppendJSONString(nil, s, html); !bytes.Equal(got, want) {
				t.Fatalf("AppendJSONString(%q, %v) = %s, want %s", s, html, got, want)
			}
			got, valid := AppendJSONQuoted([]byte("{"), []byte(s), html)
			if !bytes.Equal(got[1:], want) || got[0] != '{' || valid != utf8.ValidString(s) {
				t.Fatalf("AppendJSONQuoted(%q, %v) = %s, %v", s, html, got, valid)
			}
		}
	})
}

// TestAppendJSONFloat checks AppendJSONFloat against json.Marshal on
// the edges of its two formats and on random values of every magnitude.
func TestAppendJSONFloat(t *testing.T) {
	ins := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1e-6, 9.99e-7, 1e-7, -1e-7, 1e20, 1e21, -1e21, 123456789.125,
		math.MaxFloat64, math.SmallestNonzeroFloat64, 5e-324, 1.5e300, 2.5e-300}
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		ins = append(ins, math.Float64frombits(r.Uint64()))
	}
	for _, f := range ins {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendJSONFloat([]byte("x"), f); string(got) != "x"+string(want) {
			t.Errorf("AppendJSONFloat(%v) = %s, want %s", f, got[1:], want)
		}
	}
}

package textfmt

import "testing"

func TestNouns(t *testing.T) {
	for _, tt := range []struct {
		n    uint64
		what string
		want string
	}{
		{0, "frame", "0 frames"}, {1, "frame", "1 frame"}, {2, "frame", "2 frames"},
		{3, "copy", "3 copies"}, {1, "copy", "1 copy"}, {4, "loss", "4 losses"},
		{2, "transport loss", "2 transport losses"}, {2, "match", "2 matches"},
		{2, "key", "2 keys"}, {2, "box", "2 boxes"}, {18446744073709551615, "byte", "18446744073709551615 bytes"},
	} {
		if got := Nouns(tt.n, tt.what); got != tt.want {
			t.Errorf("Nouns(%d, %q) = %q, want %q", tt.n, tt.what, got, tt.want)
		}
	}
}

func TestQuoteEscape(t *testing.T) {
	for _, tt := range []struct{ in, quote, escape string }{
		{"plain name", "plain name", "plain name"},
		{"héllo", "héllo", "héllo"},
		{"a\x1b[2Jb", `"a\x1b[2Jb"`, `a\x1b[2Jb`},
		{"osc\x1b]52;c;AAAA\a", `"osc\x1b]52;c;AAAA\a"`, `osc\x1b]52;c;AAAA\a`},
		{"rtl\u202eevil", `"rtl\u202eevil"`, `rtl\u202eevil`},
		{"nul\x00", `"nul\x00"`, `nul\x00`},
		{"bad\xff", `"bad\xff"`, `bad\xff`},
		{"tab\there", `"tab\there"`, `tab\there`},
	} {
		if got := Quote(tt.in); got != tt.quote {
			t.Errorf("Quote(%q) = %s, want %s", tt.in, got, tt.quote)
		}
		if got := Escape(tt.in); got != tt.escape {
			t.Errorf("Escape(%q) = %s, want %s", tt.in, got, tt.escape)
		}
	}
}

func TestBytes(t *testing.T) {
	for _, tt := range []struct {
		n    uint64
		want string
	}{
		{0, "0 bytes"}, {1, "1 byte"}, {512, "512 bytes"}, {1024, "1 KiB"}, {1536, "1.5 KiB"},
		{10 << 30, "10 GiB"}, {3<<20 + 100<<10, "3.1 MiB"}, {1<<64 - 1, "16.0 EiB"},
	} {
		if got := Bytes(tt.n); got != tt.want {
			t.Errorf("Bytes(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func FuzzQuote(f *testing.F) {
	f.Add("a\x1b[2J")
	f.Fuzz(func(t *testing.T, s string) {
		for _, out := range []string{Quote(s), Escape(s)} {
			if !safe(out) {
				t.Fatalf("%q: output %q is not terminal-safe", s, out)
			}
		}
	})
}

// TestShellJoin checks how a command line is shown: arguments a shell
// reads back as they are stay bare, others are single-quoted.
func TestShellJoin(t *testing.T) {
	got := ShellJoin([]string{"make", "-j2", "a b", "", "it's", "x=1", "$HOME"})
	want := `make -j2 'a b' '' 'it'\''s' x=1 '$HOME'`
	if got != want {
		t.Errorf("ShellJoin = %s, want %s", got, want)
	}
}

func TestAppendTSVCell(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain text", "plain text"},
		{"a\tb\nc\rd\\e", `a\tb\nc\rd\\e`},
		{"\x1b[2J\x00\x7f", `\x1b[2J\x00\x7f`},
		{"é \u202e", "é \u202e"}, // UTF-8 is left alone; a terminal's escaper handles bidi
		{"\xff", "\xff"},
		{"", ""},
	} {
		if got := string(AppendTSVCell([]byte("x|"), tc.in)); got != "x|"+tc.want {
			t.Errorf("AppendTSVCell(%q) = %q, want %q", tc.in, got, "x|"+tc.want)
		}
	}
}

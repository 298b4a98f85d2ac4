package views

import "testing"

func TestAppendTerminalExported(t *testing.T) {
	for _, tc := range []struct {
		in    string
		color bool
		want  string
	}{
		{"plain\ttext", false, "plain\ttext"},
		{"a\x1b[2Jb", false, `a\x1b[2Jb`},
		{"a\x1b[31mred", false, `a\x1b[31mred`},
		{"a\x1b[31mred", true, "a\x1b[31mred\x1b[0m"},
		{"a\x1b[31mred\x1b[0m", true, "a\x1b[31mred\x1b[0m"},
		{"cr\rover", false, `cr\x0dover`},
		{"bad\xffbyte \u202e", false, `bad\xffbyte \u202e`},
	} {
		if got := string(AppendTerminal([]byte("> "), []byte(tc.in), tc.color)); got != "> "+tc.want {
			t.Errorf("AppendTerminal(%q, %v) = %q, want %q", tc.in, tc.color, got, "> "+tc.want)
		}
	}
}

// AppendTerminalLines keeps line ends (LF, CRLF) and SGR, escapes the
// rest, and resets colours before each line end a colour reached.
func TestAppendTerminalLines(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"one\ntwo\n", "one\ntwo\n"},
		{"crlf\r\nbare\rcr", `crlf` + "\r\n" + `bare\x0dcr`},
		{"\x1b[31mred\nplain\n", "\x1b[31mred\x1b[0m\nplain\n"},
		{"clip \x1b]52;c;aGk=\x07\n\x1b[2J", `clip \x1b]52;c;aGk=\x07` + "\n" + `\x1b[2J`},
		{"no end \x1b[1mbold", "no end \x1b[1mbold\x1b[0m"},
		{"\n\n", "\n\n"},
	} {
		if got := string(AppendTerminalLines([]byte("> "), []byte(tc.in))); got != "> "+tc.want {
			t.Errorf("AppendTerminalLines(%q) = %q, want %q", tc.in, got, "> "+tc.want)
		}
	}
}

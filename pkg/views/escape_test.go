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

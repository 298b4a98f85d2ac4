package views

import (
	"bytes"
	"strings"
	"testing"
)

func TestPrettyJSON(t *testing.T) {
	var b bytes.Buffer
	p := NewPrettyJSON(&b)
	in := `{"stream":"n#1","life":18446744073709551615,"record":{"a":[1,2]},"text":"x"}` + "\n" +
		"==> a.dss <==\n" + `{"cursor":"n#1:3"}`
	// Written in pieces that cut lines and JSON values.
	for _, piece := range []string{in[:10], in[10:40], in[40:]} {
		if _, err := p.Write([]byte(piece)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	want := `{
  "stream": "n#1",
  "life": 18446744073709551615,
  "record": {
    "a": [
      1,
      2
    ]
  },
  "text": "x"
}
==> a.dss <==
{
  "cursor": "n#1:3"
}
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestSkipLines(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{{0, "a\nb\nc"}, {1, "b\nc"}, {2, "c"}, {3, ""}, {9, ""}} {
		var b bytes.Buffer
		w := SkipLines(&b, tc.n)
		for _, s := range strings.SplitAfter("a\nb\nc", "\n") {
			w.Write([]byte(s))
		}
		if b.String() != tc.want {
			t.Errorf("SkipLines(%d) = %q, want %q", tc.n, b.String(), tc.want)
		}
	}
}

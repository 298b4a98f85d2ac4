package segments

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ds-telemetry/ds/pkg/frames"
)

func TestCursorText(t *testing.T) {
	c := Cursor{
		{Node: "n1", Life: 7}:                 42,
		{Node: "we ird,#=%né", Life: 1 << 62}: 0,
	}
	s := c.String()
	if s != "n1#7=42,we%20ird%2C%23%3D%25n%C3%A9#4611686018427387904=0" {
		t.Fatalf("String = %q", s)
	}
	back, err := ParseCursor(s)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c, back); diff != "" {
		t.Fatalf("round trip (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"n1", "n1#x=1", "n1#1=y", "n%zz#1=1", "n%2#1=1"} {
		if _, err := ParseCursor(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	if c, err := ParseCursor("  \n"); err != nil || len(c) != 0 {
		t.Fatalf("empty: %v %v", c, err)
	}
}

func TestCursorMerge(t *testing.T) {
	a, b, n := frames.StreamID{Node: "a", Life: 1}, frames.StreamID{Node: "b", Life: 1}, frames.StreamID{Node: "n", Life: 1}
	c := Cursor{a: 5, b: 9}
	c.Merge(Cursor{a: 7, b: 3, n: 0})
	if diff := cmp.Diff(Cursor{a: 7, b: 9, n: 0}, c); diff != "" {
		t.Fatalf("merged (-want +got):\n%s", diff)
	}
}

// FuzzParseCursor: a cursor's text form parses back to the same cursor,
// and no input makes ParseCursor panic.
func FuzzParseCursor(f *testing.F) {
	f.Add("n1#7=42,we%20ird#1=0")
	f.Add("%zz#1=1")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCursor(s)
		if err != nil {
			return
		}
		back, err := ParseCursor(c.String())
		if err != nil {
			t.Fatalf("%q → %q does not parse: %v", s, c.String(), err)
		}
		if diff := cmp.Diff(c, back); diff != "" {
			t.Fatalf("%q: round trip (-first +second):\n%s", s, diff)
		}
	})
}

package viewer

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// A Reverser writes the lines written to it last first, whether it keeps
// them in memory or spools them to a file and reads them back in chunks.
func TestReverser(t *testing.T) {
	var in strings.Builder
	for i := range 500 {
		fmt.Fprintf(&in, "line %d %s\n", i, strings.Repeat("x", i%37))
	}
	lines := strings.SplitAfter(in.String(), "\n")
	lines = lines[:len(lines)-1]
	var want strings.Builder
	for i := len(lines) - 1; i >= 0; i-- {
		want.WriteString(lines[i])
	}
	for _, tc := range []struct {
		name          string
		memory, chunk int64
	}{
		{"memory", reverseMemory, reverseChunk},
		{"memory chunks", reverseMemory, 100},
		{"spooled", 1000, 256},
		{"spooled, a chunk a line", 10, 1},
	} {
		var out bytes.Buffer
		r := NewReverser(&out)
		r.memory, r.chunk = tc.memory, tc.chunk
		// Written in pieces that cut lines.
		s := in.String()
		for len(s) > 0 {
			n := min(len(s), 77)
			if _, err := r.Write([]byte(s[:n])); err != nil {
				t.Fatal(err)
			}
			s = s[n:]
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if out.String() != want.String() {
			t.Errorf("%s: lines out of order or lost (%d bytes, want %d)", tc.name, out.Len(), want.Len())
		}
		if tc.memory < int64(in.Len()) && r.f == nil {
			t.Errorf("%s: not spooled", tc.name)
		}
	}
	// A last line without a newline gets one; nothing written, nothing out.
	var out bytes.Buffer
	r := NewReverser(&out)
	r.Write([]byte("a\nb\nno newline"))
	r.Close()
	if got := out.String(); got != "no newline\nb\na\n" {
		t.Errorf("got %q", got)
	}
	out.Reset()
	if err := NewReverser(&out).Close(); err != nil || out.Len() > 0 {
		t.Errorf("empty: %q, %v", out.String(), err)
	}
}

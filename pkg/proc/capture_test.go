package proc

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ds-telemetry/ds/pkg/frames"
)

func TestFramer(t *testing.T) {
	tests := []struct {
		name     string
		max      int
		chunks   []string
		want     []string // frames before the final flush
		wantTail string   // frame of the final flush, "" if none
	}{
		{name: "lines in one chunk become one frame", max: 64, chunks: []string{"a\nb\nc\n"}, want: []string{"a\nb\nc\n"}},
		{name: "partial last line waits", max: 64, chunks: []string{"a\nb\nc"}, want: []string{"a\nb\n"}, wantTail: "c"},
		{name: "line split across reads is joined", max: 64, chunks: []string{"ab", "cd\n"}, want: []string{"abcd\n"}},
		{name: "long line cut at max", max: 4, chunks: []string{"abcdefghij"}, want: []string{"abcd", "efgh"}, wantTail: "ij"},
		{name: "newline preferred within window", max: 4, chunks: []string{"ab\ncdefg\n"}, want: []string{"ab\n", "cdef", "g\n"}},
		{name: "pending completes with newline", max: 4, chunks: []string{"xy", "z\nw"}, want: []string{"xyz\n"}, wantTail: "w"},
		{name: "pending fills the window", max: 4, chunks: []string{"xyz", "abc\n"}, want: []string{"xyza", "bc\n"}},
		{name: "exactly max with newline", max: 4, chunks: []string{"abc\n"}, want: []string{"abc\n"}},
		{name: "exactly max without newline", max: 4, chunks: []string{"abcd"}, want: []string{"abcd"}},
		{name: "CR progress kept verbatim", max: 64, chunks: []string{"10%\r", "20%\r", "done\r\n"}, want: []string{"10%\r20%\rdone\r\n"}},
		{name: "many windows", max: 6, chunks: []string{"aa\nbb\ncc\ndd\nee\n"}, want: []string{"aa\nbb\n", "cc\ndd\n", "ee\n"}},
		{name: "empty chunk", max: 8, chunks: []string{""}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &fakeProducer{}
			id, _ := p.RegisterChannel("x", frames.TextStream())
			st := &ChannelStats{ID: id}
			f := newFramer(p, st, tt.max)
			for _, c := range tt.chunks {
				f.write([]byte(c))
				if len(f.pending) >= tt.max || strings.Contains(string(f.pending), "\n") {
					t.Fatalf("pending %q breaks the invariant", f.pending)
				}
			}
			got := strs(p.payloads("x"))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("frames (-want +got):\n%s", diff)
			}
			f.flush()
			all := strs(p.payloads("x"))
			tail := ""
			if len(all) > len(got) {
				tail = all[len(all)-1]
			}
			if tail != tt.wantTail {
				t.Errorf("flush = %q, want %q", tail, tt.wantTail)
			}
			if want := strings.Join(tt.chunks, ""); strings.Join(all, "") != want {
				t.Errorf("bytes = %q, want %q", strings.Join(all, ""), want)
			}
			if st.Frames != int64(len(all)) {
				t.Errorf("stats.Frames = %d, want %d", st.Frames, len(all))
			}
		})
	}
}

// TestFramerOwnership checks that submitted payloads do not alias the
// caller's buffer or the pending buffer.
func TestFramerOwnership(t *testing.T) {
	p := &fakeProducer{}
	id, _ := p.RegisterChannel("x", frames.TextStream())
	f := newFramer(p, &ChannelStats{ID: id}, 16)
	buf := []byte("ab")
	f.write(buf)
	buf = []byte("c\nde")
	f.write(buf)
	f.flush()
	copy(buf, "XXXX")
	f.write([]byte("zz\n"))
	if got := strs(p.payloads("x")); !cmp.Equal(got, []string{"abc\n", "de", "zz\n"}) {
		t.Errorf("frames = %q", got)
	}
}

func strs(bs [][]byte) []string {
	var out []string
	for _, b := range bs {
		out = append(out, string(b))
	}
	return out
}

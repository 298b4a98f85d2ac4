package proc

import (
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

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

// framesOf frames chunks with write, or, with viaPipe, by writing each
// chunk into a pipe and reading it back with readFrom (the reader's
// zero-copy path), and returns the frames, the final flush included.
func framesOf(t *testing.T, max int, chunks []string, viaPipe, hold bool) []string {
	t.Helper()
	p := &fakeProducer{}
	id, _ := p.RegisterChannel("x", frames.TextStream())
	f := newFramer(p, &ChannelStats{ID: id}, max)
	f.hold = hold
	if !viaPipe {
		for _, c := range chunks {
			f.write([]byte(c))
		}
		f.flush()
		return strs(p.payloads("x"))
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	fd := int(r.Fd())
	if err := unix.SetNonblock(fd, true); err != nil {
		t.Fatal(err)
	}
	var passed strings.Builder
	for _, c := range chunks {
		if _, err := w.Write([]byte(c)); err != nil {
			t.Fatal(err)
		}
		for {
			n, err := f.readFrom(fd, func(b []byte) { passed.Write(b) })
			if err == unix.EAGAIN || n == 0 {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	f.flush()
	if want := strings.Join(chunks, ""); passed.String() != want {
		t.Fatalf("passed through %q, want %q", passed.String(), want)
	}
	return strs(p.payloads("x"))
}

// TestFramerReadFrom: the reader's zero-copy read path frames a stream
// exactly as write does, whatever the chunks, and a payload handed over
// is never written to again (random chunks, lines and frame sizes).
func TestFramerReadFrom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		max := 1 + rng.IntN(64)
		var chunks []string
		for range 1 + rng.IntN(12) {
			b := make([]byte, rng.IntN(3*max))
			for i := range b {
				b[i] = 'a' + byte(rng.IntN(26))
				if rng.IntN(8) == 0 {
					b[i] = '\n'
				}
			}
			chunks = append(chunks, string(b))
		}
		want := framesOf(t, max, chunks, false, false)
		got := framesOf(t, max, chunks, true, false)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("trial %d, max %d, chunks %q (-write +readFrom):\n%s", trial, max, chunks, diff)
		}
		// Holding complete lines (Coalesce; never cut by time here) gives
		// the same bytes in no more frames, each ending at a newline
		// unless it is a full frame or the final flush.
		held := framesOf(t, max, chunks, true, true)
		if strings.Join(held, "") != strings.Join(want, "") || len(held) > len(want) {
			t.Fatalf("trial %d: holding gave %q, without %q", trial, held, want)
		}
		for i := 0; i+1 < len(held); i++ {
			fr := held[i]
			if !strings.HasSuffix(fr, "\n") && len(fr) != max {
				t.Fatalf("trial %d: held frame %d %q ends mid-line", trial, i, fr)
			}
		}
	}
}

package proc

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// captureOrder returns the payloads of the given channels joined in the
// order they were submitted (capture order), and the channel name of each
// frame.
func (p *fakeProducer) captureOrder(names ...string) (string, []string) {
	ids := map[int]string{}
	for _, n := range names {
		ids[int(p.id(n))] = n
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	var chans []string
	for _, s := range p.subs {
		if n, ok := ids[int(s.ch)]; ok {
			b.Write(s.payload)
			chans = append(chans, n)
		}
	}
	return b.String(), chans
}

// syncBuffer is a pass-through writer shared by stdout and stderr. It is
// not an *os.File, and it checks that it is never written concurrently.
type syncBuffer struct {
	buf    bytes.Buffer
	inside bool
	t      *testing.T
	// If ack is set, it gets a newline for every occurrence of ackOn in
	// what is written, or for every write if ackOn is "": the child reads
	// them to know that ds has passed its output through.
	ack   *os.File
	ackOn string
}

func (w *syncBuffer) Write(b []byte) (int, error) {
	if w.inside {
		w.t.Error("pass-through writer called concurrently")
	}
	w.inside = true
	defer func() { w.inside = false }()
	if w.ack != nil {
		n := 1
		if w.ackOn != "" {
			n = bytes.Count(b, []byte(w.ackOn))
		}
		for range n {
			_, _ = w.ack.Write([]byte("\n"))
		}
	}
	return w.buf.Write(b)
}

// TestOrderBetweenChannels: a child alternating stdout and stderr lines,
// pausing after each pair, comes back in exactly that order on a
// pass-through writer shared by both and in capture order. The pause lasts
// until ds has passed the pair through (the writer answers on the child's
// stdin), not a fixed time: with a fixed pause a loaded machine may delay
// ds past it, and two pipes cannot tell which of two ready writes came
// first (see the package doc).
func TestOrderBetweenChannels(t *testing.T) {
	const n = 100
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	shared := &syncBuffer{t: t, ack: w, ackOn: "err"}
	_, p := runSh(t, fmt.Sprintf(`i=0; while [ $i -lt %d ]; do echo out$i; echo err$i >&2; read x; i=$((i+1)); done`, n),
		Options{Stdout: shared, Stderr: shared, Stdin: r})
	var want strings.Builder
	for i := range n {
		fmt.Fprintf(&want, "out%d\nerr%d\n", i, i)
	}
	if got := shared.buf.String(); got != want.String() {
		t.Errorf("pass-through: %d of %d lines out of place", misplaced(got, want.String()), 2*n)
	}
	got, _ := p.captureOrder("proc.t.stdout", "proc.t.stderr")
	if got != want.String() {
		t.Errorf("capture order: %d of %d lines out of place", misplaced(got, want.String()), 2*n)
	}
}

// misplaced counts the lines of got that differ from want at the same
// position.
func misplaced(got, want string) int {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	bad := 0
	for i := range max(len(g), len(w)) {
		if i >= len(g) || i >= len(w) || g[i] != w[i] {
			bad++
		}
	}
	return bad
}

// TestOrderPartialLine: a partial line of one channel (a progress bar drawn
// with CR) is submitted before a later chunk of the other channel, so that
// in the capture the progress line comes before the failure, as on the
// terminal (scripts/demo.sh).
func TestOrderPartialLine(t *testing.T) {
	tests := []struct {
		name, script string
		want         string   // capture order, stdout and stderr joined
		wantChans    []string // channel of each frame
	}{
		{
			name:      "demo",
			script:    `printf '\rprogress 3/3'; echo; echo FAIL >&2`,
			want:      "\rprogress 3/3\nFAIL\n",
			wantChans: nil, // one or two stdout frames, then stderr
		},
		{
			name:      "partial line then other channel",
			script:    `printf '\rprogress 3/3'; read x; echo FAIL >&2; read x; echo`,
			want:      "\rprogress 3/3FAIL\n\n",
			wantChans: []string{"proc.t.stdout", "proc.t.stderr", "proc.t.stdout"},
		},
		{
			name:      "partial lines on both",
			script:    `printf 'a'; read x; printf 'b' >&2; read x; printf 'c\n'; read x; printf 'd\n' >&2`,
			want:      "abc\nd\n",
			wantChans: []string{"proc.t.stdout", "proc.t.stderr", "proc.t.stdout", "proc.t.stderr"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// The child waits after each write until ds has passed it
			// through (read x), so that each write is read on its own.
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			defer w.Close()
			shared := &syncBuffer{t: t, ack: w}
			// No idle flush: only the cross-channel rule may cut a line.
			_, p := runSh(t, tt.script, Options{Stdout: shared, Stderr: shared, Stdin: r, IdleFlush: -1})
			got, chans := p.captureOrder("proc.t.stdout", "proc.t.stderr")
			if got != tt.want {
				t.Errorf("capture order = %q, want %q", got, tt.want)
			}
			if shared.buf.String() != tt.want {
				t.Errorf("pass-through = %q, want %q", shared.buf.String(), tt.want)
			}
			if tt.wantChans != nil && strings.Join(chans, " ") != strings.Join(tt.wantChans, " ") {
				t.Errorf("frames on %q, want %q", chans, tt.wantChans)
			}
			if tt.wantChans == nil && chans[len(chans)-1] != "proc.t.stderr" {
				t.Errorf("frames on %q: stderr is not last", chans)
			}
		})
	}
}

// TestInterleave: when ds has fallen several writes behind a child that
// writes one line at a time to stdout and stderr in turn (a shell's echo
// builtins, microseconds apart), the inotify runs give the order the lines
// were written in, and reader.interleave hands them on in that order, on
// the shared pass-through and in capture order. The writes are made here,
// all before the reader looks, which is that case exactly.
func TestInterleave(t *testing.T) {
	if !watchesPipes() {
		t.Skip("inotify on pipes is not available here")
	}
	for _, tt := range []struct {
		name   string
		writes []string // "o:text" to stdout, "e:text" to stderr, in order
		want   string
	}{
		{"one line a write", []string{"o:a\n", "e:b\n", "o:c\n", "e:d\n"}, "a\nb\nc\nd\n"},
		{"stderr first", []string{"e:1\n", "o:2\n", "e:3\n"}, "1\n2\n3\n"},
		// A partial line, a line of the other output, then the newline.
		{"progress bar then FAIL", []string{"o:\rprogress 3/3", "e:FAIL\n", "o:\n"}, "\rprogress 3/3FAIL\n\n"},
		// Several lines in one write: runs and lines disagree, and the
		// outputs go whole, in the order of their last writes.
		{"a write of three lines", []string{"o:a\nb\nc\n", "e:x\n"}, "a\nb\nc\nx\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &fakeProducer{}
			outID, _ := p.RegisterChannel("proc.t.stdout", frames.TextStream())
			errID, _ := p.RegisterChannel("proc.t.stderr", frames.TextStream())
			shared := &syncBuffer{t: t}
			o := &Options{MaxFrameSize: DefaultMaxFrameSize, Coalesce: -1}
			var ws [2]*os.File
			var caps []*capture
			for i, id := range []frames.ChannelID{outID, errID} {
				r, w, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				defer w.Close()
				ws[i] = w
				caps = append(caps, newCapture([]string{"stdout", "stderr"}[i], r, shared, p, id, o))
			}
			rd := &reader{caps: caps, notifyFD: -1}
			for _, c := range caps {
				c.fd = int(c.f.Fd())
				if err := unix.SetNonblock(c.fd, true); err != nil {
					t.Fatal(err)
				}
			}
			rd.watchWrites()
			if rd.notifyFD < 0 {
				t.Skip("no inotify instance")
			}
			defer rd.close()
			for _, w := range tt.writes {
				f := ws[0]
				if w[0] == 'e' {
					f = ws[1]
				}
				if _, err := f.Write([]byte(w[2:])); err != nil {
					t.Fatal(err)
				}
			}
			rd.writeOrder()
			rd.interleave()
			for _, c := range caps {
				c.fr.flush()
			}
			if got := shared.buf.String(); got != tt.want {
				t.Errorf("pass-through %q, want %q", got, tt.want)
			}
			if got, _ := p.captureOrder("proc.t.stdout", "proc.t.stderr"); got != tt.want {
				t.Errorf("capture order %q, want %q", got, tt.want)
			}
		})
	}
}

// watchesPipes reports whether this kernel queues inotify events for
// writes to a pipe (reader.watchWrites).
func watchesPipes() bool {
	r, w, err := os.Pipe()
	if err != nil {
		return false
	}
	defer r.Close()
	defer w.Close()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	if _, err := unix.InotifyAddWatch(fd, fmt.Sprintf("/proc/self/fd/%d", r.Fd()), unix.IN_MODIFY); err != nil {
		return false
	}
	w.Write([]byte("x"))
	buf := make([]byte, 256)
	n, _ := unix.Read(fd, buf)
	return n > 0
}

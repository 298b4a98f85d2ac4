package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ds-telemetry/ds/pkg/frames"
)

const label = "t"

// runSh runs sh -c script with the test defaults and returns the result and
// the producer. It checks the invariants every run must keep.
func runSh(t *testing.T, script string, o Options) (Result, *fakeProducer) {
	t.Helper()
	o.Argv = []string{"/bin/sh", "-c", script}
	return runCheck(t, o)
}

func runCheck(t *testing.T, o Options) (Result, *fakeProducer) {
	t.Helper()
	p, _ := o.Producer.(*fakeProducer)
	if p == nil {
		p = &fakeProducer{}
		o.Producer = p
	}
	if o.Label == "" {
		o.Label = label
	}
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	checkExitedLast(t, p, res)
	return res, p
}

// checkExitedLast checks that the exited record is the last accepted
// submission and agrees with the result.
func checkExitedLast(t *testing.T, p *fakeProducer, res Result) {
	t.Helper()
	last := p.last()
	if last.ch != res.Lifecycle.ID || !bytes.HasPrefix(last.payload, []byte(`{"event":"exited"`)) {
		t.Fatalf("last submission is %q on channel %d, want the exited record", last.payload, last.ch)
	}
	if want := fmt.Sprintf(`"exit_code":%d,`, res.ExitCode); !bytes.Contains(last.payload, []byte(want)) {
		t.Errorf("exited record %s lacks %s", last.payload, want)
	}
}

// markWriter is a pass-through writer that keeps what it got and closes
// seen when marker first appears. waitFor waits for any other text.
type markWriter struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	marker  string
	seen    chan struct{}
	changed chan struct{} // closed and replaced at every write
}

func newMarkWriter(marker string) *markWriter {
	return &markWriter{marker: marker, seen: make(chan struct{})}
}

func (w *markWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	had := strings.Contains(w.buf.String(), w.marker)
	w.buf.Write(b)
	if !had && w.seen != nil && strings.Contains(w.buf.String(), w.marker) {
		close(w.seen)
	}
	if w.changed != nil {
		close(w.changed)
		w.changed = nil
	}
	return len(b), nil
}

// waitFor waits until the output contains s.
func (w *markWriter) waitFor(t *testing.T, s string) {
	timeout := time.After(20 * time.Second)
	for {
		w.mu.Lock()
		if strings.Contains(w.buf.String(), s) {
			w.mu.Unlock()
			return
		}
		if w.changed == nil {
			w.changed = make(chan struct{})
		}
		ch := w.changed
		w.mu.Unlock()
		select {
		case <-ch:
		case <-timeout:
			t.Errorf("%q not seen; output %q", s, w.String())
			return
		}
	}
}

func (w *markWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// waitMarker waits for w's marker; the test's own timeout is the bound.
func waitMarker(t *testing.T, w *markWriter) {
	t.Helper()
	select {
	case <-w.seen:
	case <-time.After(20 * time.Second):
		t.Fatalf("marker %q not seen; output %q", w.marker, w.String())
	}
}

func TestQuickExit(t *testing.T) {
	// Many at once, with every CPU kept busy: contention must not lose
	// output of a child that exits at once.
	var stop atomic.Bool
	var spin sync.WaitGroup
	for range 2 * runtime.NumCPU() {
		spin.Add(1)
		go func() {
			defer spin.Done()
			for !stop.Load() {
			}
		}()
	}
	defer func() { stop.Store(true); spin.Wait() }()
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out, errw bytes.Buffer
			want := fmt.Sprintf("hello %d\n", i)
			res, p := runSh(t, "echo hello "+fmt.Sprint(i), Options{Stdout: &out, Stderr: &errw})
			if res.ExitCode != 0 || res.Signal != 0 {
				t.Errorf("exit = %d, signal %v", res.ExitCode, res.Signal)
			}
			if got := p.text("proc.t.stdout"); got != want {
				t.Errorf("stdout channel = %q, want %q", got, want)
			}
			if out.String() != want || errw.Len() != 0 {
				t.Errorf("pass-through = %q, %q", out.String(), errw.String())
			}
			if got := p.events(t, label); !cmp.Equal(got, []string{"started", "exited"}) {
				t.Errorf("events = %q", got)
			}
		}()
	}
	wg.Wait()
}

func TestChannelsAndRecords(t *testing.T) {
	t.Parallel()
	p := &fakeProducer{}
	res, _ := runCheck(t, Options{Argv: []string{"sh", "-c", "echo out; echo err >&2; exit 4"}, Producer: p, Label: "  My Job.1 "})
	if res.Label != "my_job_1" {
		t.Errorf("label = %q", res.Label)
	}
	want := []string{"proc.my_job_1.stdout", "proc.my_job_1.stderr", "proc.my_job_1.lifecycle"}
	if !cmp.Equal(p.names, want) {
		t.Errorf("channels = %q, want %q", p.names, want)
	}
	if !p.contents[0].Equal(frames.TextStream()) || !p.contents[1].Equal(frames.TextStream()) || !p.contents[2].Equal(frames.JSONRecord("proc.lifecycle")) {
		t.Errorf("contents = %v", p.contents)
	}
	recs := p.lifecycle(t, "my_job_1")
	if len(recs) != 2 {
		t.Fatalf("records = %v", recs)
	}
	st := recs[0]
	cwd, _ := os.Getwd()
	if st["event"] != "started" || st["pid"] != float64(res.PID) || st["cwd"] != cwd || st["pty"] != false || st["merged_output"] != false ||
		!cmp.Equal(st["argv"], []any{"sh", "-c", "echo out; echo err >&2; exit 4"}) || !strings.HasSuffix(st["path"].(string), "/sh") {
		t.Errorf("started = %v", st)
	}
	ex := recs[1]
	if !cmp.Equal(ex["status"], map[string]any{"kind": "code", "value": float64(4)}) || ex["exit_code"] != float64(4) {
		t.Errorf("exited = %v", ex)
	}
	for _, k := range []string{"wall_ns", "user_ns", "sys_ns", "max_rss_bytes"} {
		if _, ok := ex[k].(float64); !ok {
			t.Errorf("exited lacks %s: %v", k, ex)
		}
	}
	if ex["wall_ns"].(float64) <= 0 || ex["max_rss_bytes"].(float64) < 1024 {
		t.Errorf("exited = %v", ex)
	}
	if res.Wall <= 0 || res.MaxRSSBytes < 1024 {
		t.Errorf("result times: %+v", res)
	}
	if p.text("proc.my_job_1.stdout") != "out\n" || p.text("proc.my_job_1.stderr") != "err\n" {
		t.Errorf("output = %q / %q", p.text("proc.my_job_1.stdout"), p.text("proc.my_job_1.stderr"))
	}
	if res.Stdout.Frames != 1 || res.Stdout.Bytes != 4 || res.Stderr.Frames != 1 || res.Lifecycle.Frames != 2 {
		t.Errorf("stats = %+v", res)
	}
}

func TestPartialLastLine(t *testing.T) {
	t.Parallel()
	res, p := runSh(t, `printf 'a\nb'; printf 'no newline' >&2`, Options{})
	if got := strs(p.payloads("proc.t.stdout")); !cmp.Equal(got, []string{"a\nb"}) && !cmp.Equal(got, []string{"a\n", "b"}) {
		t.Errorf("stdout frames = %q", got)
	}
	if got := p.text("proc.t.stderr"); got != "no newline" {
		t.Errorf("stderr = %q", got)
	}
	if res.ExitCode != 0 {
		t.Errorf("exit %d", res.ExitCode)
	}
}

func TestOrderWithinChannel(t *testing.T) {
	t.Parallel()
	var shared bytes.Buffer // one writer for both: must be serialised
	_, p := runSh(t, `i=0; while [ $i -lt 300 ]; do echo out$i; echo err$i >&2; i=$((i+1)); done`, Options{Stdout: &shared, Stderr: &shared})
	var wantOut, wantErr strings.Builder
	for i := range 300 {
		fmt.Fprintf(&wantOut, "out%d\n", i)
		fmt.Fprintf(&wantErr, "err%d\n", i)
	}
	if got := p.text("proc.t.stdout"); got != wantOut.String() {
		t.Errorf("stdout differs: %d bytes, want %d", len(got), wantOut.Len())
	}
	if got := p.text("proc.t.stderr"); got != wantErr.String() {
		t.Errorf("stderr differs: %d bytes, want %d", len(got), wantErr.Len())
	}
	if shared.Len() != wantOut.Len()+wantErr.Len() {
		t.Errorf("pass-through %d bytes, want %d", shared.Len(), wantOut.Len()+wantErr.Len())
	}
	for _, f := range p.payloads("proc.t.stdout") {
		if f[len(f)-1] != '\n' {
			t.Errorf("frame %q does not end at a newline", f)
		}
	}
}

func TestBytesVerbatim(t *testing.T) {
	t.Parallel()
	// Invalid UTF-8, NUL, CR progress bars and CRLF, on both channels.
	want := "a\xff\x00b\n\xc3(\r\n10%\r50%\r100%\r\n\x00tail\xfe"
	f := writeFile(t, []byte(want))
	var out, errw bytes.Buffer
	_, p := runCheck(t, Options{Argv: []string{"sh", "-c", `cat "$1"; cat "$1" >&2`, "sh", f}, Stdout: &out, Stderr: &errw})
	for _, ch := range []string{"proc.t.stdout", "proc.t.stderr"} {
		if got := p.text(ch); got != want {
			t.Errorf("%s = %q, want %q", ch, trunc(got), want)
		}
	}
	if out.String() != want || errw.String() != want {
		t.Errorf("pass-through = %q, %q", trunc(out.String()), trunc(errw.String()))
	}
}

// writeFile writes data to a file in a temporary directory.
func writeFile(t testing.TB, data []byte) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(f, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestLongLine1MB(t *testing.T) {
	t.Parallel()
	data := append(bytes.Repeat([]byte("0123456789abcdef"), 1<<16), '\n') // 1 MiB + newline
	data = append(data, "next\n"...)
	f := writeFile(t, data)
	var out bytes.Buffer
	res, p := runCheck(t, Options{Argv: []string{"cat", f}, Stdout: &out})
	got := p.payloads("proc.t.stdout")
	for _, fr := range got {
		if len(fr) > DefaultMaxFrameSize {
			t.Fatalf("frame of %d bytes", len(fr))
		}
	}
	if !bytes.Equal(bytes.Join(got, nil), data) || !bytes.Equal(out.Bytes(), data) {
		t.Errorf("bytes differ")
	}
	if len(got) < len(data)/DefaultMaxFrameSize || res.Stdout.Bytes != int64(len(data)) {
		t.Errorf("%d frames, stats %+v", len(got), res.Stdout)
	}
}

func TestLongLine20MB(t *testing.T) {
	t.Parallel()
	const n = 20 << 20
	f := writeFile(t, bytes.Repeat([]byte{'x'}, n)) // one line, no newline at all
	p := &fakeProducer{discard: true}
	res, _ := runCheck(t, Options{Argv: []string{"cat", f}, Producer: p, MaxFrameSize: 32 << 10})
	total := 0
	for _, sz := range p.sizes[res.Stdout.ID] {
		if sz > 32<<10 {
			t.Fatalf("frame of %d bytes", sz)
		}
		total += sz
	}
	if total != n || res.Stdout.Bytes != n || res.Stdout.DroppedFrames != 0 {
		t.Errorf("total %d, stats %+v", total, res.Stdout)
	}
}

func TestIdleFlush(t *testing.T) {
	t.Parallel()
	// The child writes a partial line and waits; it goes on only once the
	// partial line was submitted as a frame of its own.
	flushed := make(chan struct{})
	p := &fakeProducer{onSubmit: func(name string, payload []byte) {
		if name == "proc.t.stdout" && string(payload) == "partial" {
			close(flushed)
		}
	}}
	_, p = runSh(t, `printf 'partial'; read x; printf ' rest\n'`, Options{Producer: p, Stdin: &stdinAfter{ch: flushed}, IdleFlush: 20 * time.Millisecond})
	if got := strs(p.payloads("proc.t.stdout")); !cmp.Equal(got, []string{"partial", " rest\n"}) {
		t.Errorf("frames = %q", got)
	}
}

// TestIdleFlushGrowingLine checks that a partial line that keeps growing
// (a progress bar redrawn with CR) is flushed once it is IdleFlush old,
// although the writer never pauses.
func TestIdleFlushGrowingLine(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "flushed")
	var once sync.Once
	p := &fakeProducer{onSubmit: func(name string, payload []byte) {
		if name == "proc.t.stdout" {
			once.Do(func() { os.WriteFile(marker, nil, 0o644) })
		}
	}}
	// The child redraws until the first frame was submitted, then ends
	// the line.
	_, p = runCheck(t, Options{
		Argv:         []string{"sh", "-c", `i=0; while [ ! -e "$1" ]; do printf '\r%d%%' $i; i=$((i+1)); done; echo`, "sh", marker},
		Producer:     p,
		IdleFlush:    20 * time.Millisecond,
		MaxFrameSize: 4 << 20, // far more than the child writes before the idle flush
	})
	frs := strs(p.payloads("proc.t.stdout"))
	if len(frs) < 2 || strings.Contains(frs[0], "\n") || !strings.HasSuffix(frs[len(frs)-1], "\n") {
		t.Errorf("%d frames, first %q", len(frs), trunc(frs[0]))
	}
}

func TestStdin(t *testing.T) {
	t.Parallel()
	t.Run("reader", func(t *testing.T) {
		_, p := runCheck(t, Options{Argv: []string{"cat"}, Stdin: strings.NewReader("from a reader\n")})
		if got := p.text("proc.t.stdout"); got != "from a reader\n" {
			t.Errorf("stdout = %q", got)
		}
	})
	t.Run("file", func(t *testing.T) {
		fn := writeFile(t, []byte("from a file\n"))
		f, err := os.Open(fn)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		_, p := runCheck(t, Options{Argv: []string{"cat"}, Stdin: f})
		if got := p.text("proc.t.stdout"); got != "from a file\n" {
			t.Errorf("stdout = %q", got)
		}
	})
	t.Run("nil", func(t *testing.T) {
		_, p := runCheck(t, Options{Argv: []string{"cat"}})
		if got := p.text("proc.t.stdout"); got != "" {
			t.Errorf("stdout = %q", got)
		}
	})
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		script string
		code   int
		sig    syscall.Signal
		status map[string]any
	}{
		{"exit 0", 0, 0, map[string]any{"kind": "code", "value": 0.0}},
		{"exit 3", 3, 0, map[string]any{"kind": "code", "value": 3.0}},
		{"exit 255", 255, 0, map[string]any{"kind": "code", "value": 255.0}},
		{"kill -9 $$", 137, syscall.SIGKILL, map[string]any{"kind": "signal", "value": 9.0, "name": "KILL"}},
		{"ulimit -c 0; kill -SEGV $$", 139, syscall.SIGSEGV, map[string]any{"kind": "signal", "value": 11.0, "name": "SEGV"}},
		{"kill -TERM $$", 143, syscall.SIGTERM, map[string]any{"kind": "signal", "value": 15.0, "name": "TERM"}},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			t.Parallel()
			res, p := runSh(t, tt.script, Options{})
			if res.ExitCode != tt.code || res.Signal != tt.sig {
				t.Errorf("exit %d signal %v, want %d %v", res.ExitCode, res.Signal, tt.code, tt.sig)
			}
			recs := p.lifecycle(t, label)
			if got := recs[len(recs)-1]["status"]; !cmp.Equal(got, tt.status) {
				t.Errorf("status = %v, want %v", got, tt.status)
			}
		})
	}
}

func TestStartFailures(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	noexec := write("noexec", "#!/bin/sh\necho hi\n", 0o644)
	badInterp := write("badinterp", "#!/nonexistent/interpreter\n", 0o755)
	garbage := write("garbage", "\x00\x01\x02\x03 not a program", 0o755)
	tests := []struct {
		name    string
		o       Options
		code    int
		wantErr error
	}{
		{"not in PATH", Options{Argv: []string{"ds-no-such-command-xyz"}}, 127, ErrNotFound},
		{"no such path", Options{Argv: []string{"./no/such/file"}}, 127, fs.ErrNotExist},
		{"not executable", Options{Argv: []string{noexec}}, 126, fs.ErrPermission},
		{"not executable in PATH", Options{Argv: []string{"noexec"}, Env: []string{"PATH=" + dir}}, 126, fs.ErrPermission},
		{"directory", Options{Argv: []string{dir}}, 126, nil},
		{"bad interpreter", Options{Argv: []string{badInterp}}, 126, fs.ErrNotExist},
		{"exec format", Options{Argv: []string{garbage}}, 126, syscall.ENOEXEC},
		{"bad dir", Options{Argv: []string{"true"}, Dir: filepath.Join(dir, "missing")}, 126, fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := &fakeProducer{}
			tt.o.Producer = p
			tt.o.Label = label
			res, err := Run(context.Background(), tt.o)
			var se *StartError
			if !errors.As(err, &se) || se.ExitCode != tt.code || res.ExitCode != tt.code {
				t.Fatalf("Run = %+v, %v; want a StartError with code %d", res, err, tt.code)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error %v is not %v", err, tt.wantErr)
			}
			recs := p.lifecycle(t, label)
			if len(recs) != 1 || recs[0]["event"] != "spawn_failed" || recs[0]["exit_code"] != float64(tt.code) ||
				recs[0]["error"] == "" || !cmp.Equal(recs[0]["argv"], toAny(tt.o.Argv)) {
				t.Errorf("records = %v", recs)
			}
			if res.PID != 0 {
				t.Errorf("pid = %d", res.PID)
			}
			t.Logf("error: %v", err)
		})
	}
}

func trunc(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

func toAny(ss []string) []any {
	var out []any
	for _, s := range ss {
		out = append(out, s)
	}
	return out
}

func TestBadOptions(t *testing.T) {
	t.Parallel()
	if _, err := Run(context.Background(), Options{Producer: &fakeProducer{}}); !errors.Is(err, ErrNoCommand) {
		t.Errorf("no argv: %v", err)
	}
	if _, err := Run(context.Background(), Options{Argv: []string{"true"}}); !errors.Is(err, ErrNoProducer) {
		t.Errorf("no producer: %v", err)
	}
	if res, err := Run(context.Background(), Options{Argv: []string{"true"}, Producer: &fakeProducer{}, Label: "..."}); !errors.Is(err, ErrEmptyLabel) || res.ExitCode != ExitFailure {
		t.Errorf("bad label: %v", err)
	}
	p := &fakeProducer{}
	if _, err := p.RegisterChannel("proc.true.stderr", frames.Bytes()); err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Options{Argv: []string{"/bin/true"}, Producer: p})
	if err == nil || res.ExitCode != ExitFailure || res.PID != 0 {
		t.Errorf("conflict: %+v %v", res, err)
	}
}

// sigRecords returns the signal records as "SIG/source".
func sigRecords(t *testing.T, p *fakeProducer) []string {
	var out []string
	for _, m := range p.lifecycle(t, label) {
		if m["event"] == "signal" {
			out = append(out, fmt.Sprintf("%v/%v/%v", m["signal"], m["number"], m["source"]))
		}
	}
	return out
}

func TestTermForwarded(t *testing.T) {
	t.Parallel()
	w := newMarkWriter("ready")
	sigs := make(chan os.Signal, 1)
	go func() { waitMarker(t, w); sigs <- syscall.SIGTERM }()
	res, p := runSh(t, `trap 'kill $pid; exit 7' TERM; sleep 30 >/dev/null 2>&1 & pid=$!; echo ready; wait $pid`,
		Options{Stdout: w, Signals: sigs, Grace: 10 * time.Second})
	if res.ExitCode != 7 || res.Signal != 0 {
		t.Errorf("exit %d signal %v, want the child's own 7", res.ExitCode, res.Signal)
	}
	// The trap's kill reaches sleep before sh exits, but on a loaded
	// machine sleep can still be alive (dying) when ds looks at the tree:
	// it is then sent TERM as the tree's rest, which is right too.
	got := sigRecords(t, p)
	if !cmp.Equal(got, []string{"TERM/15/forwarded"}) && !cmp.Equal(got, []string{"TERM/15/forwarded", "TERM/15/tree"}) {
		t.Errorf("signal records = %q", got)
	}
}

func TestTermIgnoredEscalates(t *testing.T) {
	t.Parallel()
	w := newMarkWriter("ready")
	sigs := make(chan os.Signal, 1)
	go func() { waitMarker(t, w); sigs <- syscall.SIGTERM }()
	start := time.Now()
	res, p := runSh(t, `trap '' TERM; echo ready; exec sleep 30`, Options{Stdout: w, Signals: sigs, Grace: 200 * time.Millisecond})
	if res.ExitCode != 137 || res.Signal != syscall.SIGKILL {
		t.Errorf("exit %d signal %v, want 137 KILL", res.ExitCode, res.Signal)
	}
	if got := sigRecords(t, p); !cmp.Equal(got, []string{"TERM/15/forwarded", "KILL/9/escalation"}) {
		t.Errorf("signal records = %q", got)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
}

// TestHupQuitIgnoredEscalate: HUP and QUIT stop the job as TERM does: a
// CMD that ignores them is killed after Grace (issue 22 item 7).
func TestHupQuitIgnoredEscalate(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGQUIT} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			w := newMarkWriter("ready")
			sigs := make(chan os.Signal, 1)
			go func() { waitMarker(t, w); sigs <- sig }()
			res, p := runSh(t, `trap '' HUP QUIT; echo ready; exec sleep 30`, Options{Stdout: w, Signals: sigs, Grace: 200 * time.Millisecond})
			if res.ExitCode != 137 || res.Signal != syscall.SIGKILL {
				t.Errorf("exit %d signal %v, want 137 KILL", res.ExitCode, res.Signal)
			}
			name := map[syscall.Signal]string{syscall.SIGHUP: "HUP/1", syscall.SIGQUIT: "QUIT/3"}[sig]
			if got := sigRecords(t, p); !cmp.Equal(got, []string{name + "/forwarded", "KILL/9/escalation"}) {
				t.Errorf("signal records = %q", got)
			}
		})
	}
}

func TestSecondIntKills(t *testing.T) {
	t.Parallel()
	w := newMarkWriter("ready")
	sigs := make(chan os.Signal, 2)
	go func() { waitMarker(t, w); sigs <- syscall.SIGINT; sigs <- syscall.SIGINT }()
	res, p := runSh(t, `trap '' INT; echo ready; exec sleep 30`, Options{Stdout: w, Signals: sigs})
	if res.ExitCode != 137 {
		t.Errorf("exit %d, want 137", res.ExitCode)
	}
	if got := sigRecords(t, p); !cmp.Equal(got, []string{"INT/2/forwarded", "INT/2/forwarded", "KILL/9/escalation"}) {
		t.Errorf("signal records = %q", got)
	}
}

func TestTerminalSignalsNotForwarded(t *testing.T) {
	t.Parallel()
	w := newMarkWriter("ready")
	sigs := make(chan os.Signal, 3)
	go func() {
		waitMarker(t, w)
		sigs <- syscall.SIGINT
		sigs <- syscall.SIGWINCH
		sigs <- syscall.SIGUSR1
	}()
	res, p := runSh(t, `trap 'echo INT' INT; trap 'kill $pid; exit 5' USR1; sleep 30 >/dev/null 2>&1 & pid=$!; echo ready; wait $pid`,
		Options{Stdout: w, Signals: sigs, TTYSignals: TTYSignalsTerminal})
	if res.ExitCode != 5 {
		t.Errorf("exit %d, want 5", res.ExitCode)
	}
	if strings.Contains(p.text("proc.t.stdout"), "INT") {
		t.Errorf("INT reached the child: %q", p.text("proc.t.stdout"))
	}
	if got := sigRecords(t, p); !cmp.Equal(got, []string{"INT/2/terminal", "WINCH/28/terminal", "USR1/10/forwarded"}) {
		t.Errorf("signal records = %q", got)
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	w := newMarkWriter("ready")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { waitMarker(t, w); cancel() }()
	p := &fakeProducer{}
	res, err := Run(ctx, Options{Argv: []string{"sh", "-c", "echo ready; exec sleep 30"}, Stdout: w, Producer: p, Label: label})
	if err != nil {
		t.Fatal(err)
	}
	checkExitedLast(t, p, res)
	if res.ExitCode != 143 {
		t.Errorf("exit %d, want 143", res.ExitCode)
	}
	if got := sigRecords(t, p); !cmp.Equal(got, []string{"TERM/15/cancel"}) {
		t.Errorf("signal records = %q", got)
	}
}

func TestGrandchildHoldsPipe(t *testing.T) {
	t.Parallel()
	start := time.Now()
	// The grandchild holds the pipes for 30 s (its pid on stderr, so that
	// it is killed at the end); a loaded machine may make Run slow, not
	// that slow.
	res, p := runSh(t, `sleep 30 & echo $! >&2; echo hi`, Options{DrainTimeout: 300 * time.Millisecond})
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("Run took %v with DrainTimeout 300ms", d)
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(p.text("proc.t.stderr"))); err == nil {
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	} else {
		t.Errorf("stderr %q: no pid", p.text("proc.t.stderr"))
	}
	if got := p.text("proc.t.stdout"); got != "hi\n" {
		t.Errorf("stdout = %q", got)
	}
	if !res.DrainTimedOut || res.ExitCode != 0 {
		t.Errorf("result %+v", res)
	}
	recs := p.lifecycle(t, label)
	if got := p.events(t, label); !cmp.Equal(got, []string{"started", "drain_timeout", "exited"}) {
		t.Fatalf("events = %q", got)
	}
	if dt := recs[1]; dt["timeout_ns"] != float64(300*time.Millisecond) || !cmp.Equal(dt["open"], []any{"stdout", "stderr"}) {
		t.Errorf("drain_timeout = %v", dt)
	}
}

func TestDropsCounted(t *testing.T) {
	t.Parallel()
	p := &fakeProducer{capacity: 10}
	var out bytes.Buffer
	res, err := Run(context.Background(), Options{Argv: []string{"sh", "-c", "seq 1 100000"}, Producer: p, Label: label, Stdout: &out, MaxFrameSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 {
		t.Errorf("exit %d", res.ExitCode)
	}
	st := res.Stdout
	if st.DroppedFrames == 0 || st.Bytes+st.DroppedBytes != int64(out.Len()) || out.Len() != 588895 {
		t.Errorf("stdout stats %+v, pass-through %d bytes", st, out.Len())
	}
	// The capacity was used up by output, so the exited record was dropped
	// too, and counted.
	if res.Lifecycle.Frames != 1 || res.Lifecycle.DroppedFrames != 1 {
		t.Errorf("lifecycle stats %+v", res.Lifecycle)
	}
	if total := st.DroppedFrames + res.Stderr.DroppedFrames + res.Lifecycle.DroppedFrames; total != int64(p.dropped) {
		t.Errorf("dropped %d, producer saw %d", total, p.dropped)
	}
}

// errWriter fails every write.
type errWriter struct{}

func (errWriter) Write([]byte) (int, error) { return 0, errors.New("broken") }

// epipeWriter fails like a write to a pipe whose reader has gone.
type epipeWriter struct{}

func (epipeWriter) Write([]byte) (int, error) { return 0, syscall.EPIPE }

func TestPassThroughEPIPE(t *testing.T) {
	t.Parallel()
	// yes(1) writes forever: it must end as "yes | head" makes it end.
	res, p := runCheck(t, Options{Argv: []string{"yes"}, Stdout: epipeWriter{}})
	if res.ExitCode != 128+int(syscall.SIGPIPE) || !errors.Is(res.Stdout.PassThroughErr, syscall.EPIPE) {
		t.Errorf("exit %d, stats %+v", res.ExitCode, res.Stdout)
	}
	if got := p.text("proc.t.stdout"); !strings.HasPrefix(got, "y\ny\n") {
		t.Errorf("capture = %q", trunc(got))
	}
}

func TestPassThroughErrorKeepsCapture(t *testing.T) {
	t.Parallel()
	res, p := runSh(t, `echo a; echo b`, Options{Stdout: errWriter{}})
	if res.Stdout.PassThroughErr == nil || p.text("proc.t.stdout") != "a\nb\n" {
		t.Errorf("stats %+v, capture %q", res.Stdout, p.text("proc.t.stdout"))
	}
}

package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// lineWaiter reads a process's output line by line in the background.
type lineWaiter struct {
	lines chan string
}

func newLineWaiter(r io.Reader) *lineWaiter {
	w := &lineWaiter{lines: make(chan string, 1000)}
	go func() {
		defer close(w.lines)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			w.lines <- sc.Text()
		}
	}()
	return w
}

// waitFor waits until a line ending in want arrives, failing after 10 s;
// it returns the lines before it.
func (w *lineWaiter) waitFor(t *testing.T, want string) []string {
	t.Helper()
	var seen []string
	timeout := time.After(10 * time.Second)
	for {
		select {
		case l, ok := <-w.lines:
			if !ok {
				t.Fatalf("output ended without %q; got %q", want, seen)
			}
			if strings.HasSuffix(l, want) {
				return seen
			}
			seen = append(seen, l)
		case <-timeout:
			t.Fatalf("no %q within 10 s; got %q", want, seen)
		}
	}
}

// rest returns the lines still to come, until the output ends.
func (w *lineWaiter) rest() []string {
	var rest []string
	for l := range w.lines {
		rest = append(rest, l)
	}
	return rest
}

// startDS starts ds as a process of its own, its stdout read by a
// lineWaiter.
func startDS(t *testing.T, stdin io.Reader, args ...string) (*exec.Cmd, *lineWaiter, *bytes.Buffer) {
	t.Helper()
	cmd := dsCommand(args...)
	cmd.Stdin = stdin
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd, newLineWaiter(out), &stderr
}

// interrupt sends SIGINT to cmd and returns its exit status.
func interrupt(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0
}

var liveStream = frames.StreamID{Node: "live", Life: 1}

// liveWriter writes a capture of liveStream (channel 1, text) to w.
func liveWriter(t *testing.T, w io.Writer) *segments.Writer {
	t.Helper()
	return liveWriterOf(t, w, frames.ChannelDescriptor{Stream: liveStream, ID: 1, Name: "proc.live.stdout", Content: frames.TextStream()})
}

// liveWriterOf is liveWriter with channel 1 described by d.
func liveWriterOf(t *testing.T, w io.Writer, d frames.ChannelDescriptor) *segments.Writer {
	t.Helper()
	sw, err := segments.NewWriter(w, frames.StreamDescriptor{Stream: liveStream}, []frames.ChannelDescriptor{d}, segments.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return sw
}

// writeFlushed writes a frame of channel 1 at pos and flushes it out.
func writeFlushed(t *testing.T, w *segments.Writer, pos uint64, payload string) {
	t.Helper()
	if err := w.WriteFrame(frames.Frame{Channel: 1, Position: frames.Position(pos), Payload: []byte(payload)}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}

// TestLogLivePipe: ds log - prints each line of a live pipe as soon as its
// record arrives, not when the writer is done (ds wrap -o - -- CMD | ds
// log -).
func TestLogLivePipe(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	cmd, out, stderr := startDS(t, pr, "log", "-")
	pr.Close()
	w := liveWriter(t, pw)
	write := func(pos uint64, s string) { writeFlushed(t, w, pos, s) }
	write(0, "one\n")
	out.waitFor(t, "proc.live.stdout  one") // before anything more is written
	// A line without its newline shows after a short quiet time.
	write(1, "partial")
	out.waitFor(t, "proc.live.stdout  partial…")
	write(2, " rest\ntwo\n")
	w.Close()
	pw.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("ds log: %v; stderr %s", err, stderr)
	}
	rest := out.rest()
	if len(rest) != 2 || !strings.HasSuffix(rest[0], "rest") || !strings.HasSuffix(rest[1], "  two") {
		t.Errorf("then %q, want the rest of the line, then two", rest)
	}
}

// startWrap starts ds wrap writing capture, running sh -c script with its
// stdin fed by the returned pipe (a script waits with read), and returns
// once ds log finds want in the capture.
func startWrap(t *testing.T, capture, script, want string) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	wrap := dsCommand("wrap", "-q", "--flush", "20ms", "-o", capture, "--", "sh", "-c", script)
	feed, err := wrap.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := wrap.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		feed.Close()
		wrap.Wait()
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, out, _ := runInputs(t, nil, "log", "--cat", capture)
		if code == 0 && strings.Contains(out, want) {
			return wrap, feed
		}
		if time.Now().After(deadline) {
			t.Fatalf("ds wrap wrote no %q within 10 s", want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTailFollowWrap: ds tail -f prints the last lines of a capture that
// ds wrap is writing, then the new lines as they are written, until
// SIGINT, which ends it cleanly (exit 0).
func TestTailFollowWrap(t *testing.T) {
	dir := t.TempDir()
	capture := filepath.Join(dir, "run.dss")
	_, feed := startWrap(t, capture, "echo first; echo second; read a; echo third; read b; echo fourth", "second")
	tail, out, stderr := startDS(t, nil, "tail", "-f", "-n", "1", "--cat", capture)
	if before := out.waitFor(t, "second"); len(before) != 0 {
		t.Errorf("before the last line: %q", before)
	}
	io.WriteString(feed, "\n")
	out.waitFor(t, "third")
	if code := interrupt(t, tail); code != 0 {
		t.Errorf("ds tail -f: exit %d after SIGINT, want 0; stderr %s", code, stderr)
	}
	if stderr.Len() > 0 {
		t.Errorf("stderr: %s", stderr)
	}
	io.WriteString(feed, "\n")
}

// ds log -f follows a file after its stream has ended, as tail -f does,
// until it is interrupted: the lines written before and after the end are
// printed, and SIGINT ends it with exit 0.
func TestLogFollowEnded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "live.dss")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := liveWriter(t, f)
	w.WriteFrame(frames.Frame{Channel: 1, Position: 0, Payload: []byte("one\n")})
	w.Flush()
	cmd, out, stderr := startDS(t, nil, "log", "-f", "--cat", path)
	out.waitFor(t, "one")
	w.WriteFrame(frames.Frame{Channel: 1, Position: 1, Payload: []byte("two\n")})
	w.Close() // StreamEnded
	out.waitFor(t, "two")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		t.Fatalf("ds log -f returned by itself (%v) after the stream ended; stderr %s", err, stderr)
	case <-time.After(300 * time.Millisecond):
	}
	cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ds log -f after SIGINT: %v; stderr %s", err, stderr)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ds log -f did not end after SIGINT")
	}
}

// TestLogFollowTruncated: a followed file that is truncated, or replaced,
// is said so on stderr and read again from its start.
func TestLogFollowTruncated(t *testing.T) {
	for _, how := range []string{"truncated", "replaced"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "live.dss")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			w := liveWriter(t, f)
			w.WriteFrame(frames.Frame{Channel: 1, Position: 0, Payload: []byte("before\n")})
			w.Flush()
			cmd, out, stderr := startDS(t, nil, "log", "-f", "--cat", path)
			out.waitFor(t, "before")
			// Another capture (another life), unended, in its place.
			other := frames.StreamID{Node: "live", Life: 2}
			var buf bytes.Buffer
			w2, err := segments.NewWriter(&buf, frames.StreamDescriptor{Stream: other},
				[]frames.ChannelDescriptor{{Stream: other, ID: 1, Name: "proc.live.stdout", Content: frames.TextStream()}}, segments.WriterOptions{})
			if err != nil {
				t.Fatal(err)
			}
			w2.WriteFrame(frames.Frame{Channel: 1, Position: 0, Payload: []byte("after\n")})
			w2.Flush()
			switch how {
			case "truncated":
				if err := f.Truncate(0); err != nil {
					t.Fatal(err)
				}
				f.Seek(0, io.SeekStart)
				f.Write(buf.Bytes())
			case "replaced":
				tmp := filepath.Join(dir, "new.dss")
				if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(tmp, path); err != nil {
					t.Fatal(err)
				}
			}
			f.Close()
			out.waitFor(t, "after")
			if code := interrupt(t, cmd); code != 0 {
				t.Errorf("exit %d after SIGINT, want 0", code)
			}
			if want := "ds: " + path + ": file " + how + "; reading it again from the start\n"; stderr.String() != want {
				t.Errorf("stderr %q, want %q", stderr, want)
			}
		})
	}
}

// TestFollowSIGTERM: SIGTERM ends ds log -f cleanly too, with what was
// printed flushed.
func TestFollowSIGTERM(t *testing.T) {
	path := filepath.Join(t.TempDir(), "live.dss")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := liveWriter(t, f)
	w.WriteFrame(frames.Frame{Channel: 1, Position: 0, Payload: []byte("no newline yet")})
	w.Flush()
	cmd, out, stderr := startDS(t, nil, "log", "-f", path)
	out.waitFor(t, "proc.live.stdout  no newline yet…") // shown after a quiet time
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("ds log -f after SIGTERM: %v; stderr %s", err, stderr)
	}
}

// ds tail -f --cursor-file with no cursor saved yet prints the last lines,
// then follows; at SIGINT it saves the cursor of what it printed, and the
// next run starts after it.
func TestTailFollowNewCursor(t *testing.T) {
	dir := t.TempDir()
	capture := filepath.Join(dir, "run.dss")
	cursor := filepath.Join(dir, "cursor")
	wrap, feed := startWrap(t, capture, "echo first; read a; echo second; read b; echo third", "first")
	tail, out, stderr := startDS(t, nil, "tail", "-f", "--cat", "--cursor-file", cursor, capture)
	out.waitFor(t, "first")
	io.WriteString(feed, "\n")
	if before := out.waitFor(t, "second"); len(before) != 0 {
		t.Errorf("between first and second: %q", before)
	}
	if code := interrupt(t, tail); code != 0 {
		t.Errorf("ds tail -f: exit %d after SIGINT, want 0; stderr %s", code, stderr)
	}
	io.WriteString(feed, "\n")
	feed.Close()
	wrap.Wait()
	// The next run prints only what came after.
	code, rest, errOut := runInputs(t, nil, "tail", "--cat", "--cursor-file", cursor, capture)
	if code != 0 || rest != "third\n" {
		t.Fatalf("resumed run: exit %d, %q (stderr %s), want \"third\\n\"", code, rest, errOut)
	}
}

// ds series reading a live pipe prints each row as its frame arrives.
func TestSeriesLivePipe(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	cmd, out, stderr := startDS(t, pr, "series", "app.m", "--field", "a", "-o", "csv", "-")
	pr.Close()
	w := liveWriterOf(t, pw, frames.ChannelDescriptor{Stream: liveStream, ID: 1, Name: "app.m", Content: frames.JSONRecord("app.m")})
	write := func(pos uint64, s string) { writeFlushed(t, w, pos, s) }
	write(0, `{"a":1}`)
	out.waitFor(t, ",1") // the first row, before the second frame is written
	write(1, `{"a":2}`)
	out.waitFor(t, ",2")
	w.Close()
	pw.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("ds series: %v; stderr %s", err, stderr)
	}
}

package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// readCapture returns the payloads of channel name in a capture, in
// position order, and whether the stream ended (StreamEnded).
func readCapture(t *testing.T, r io.Reader, name string) (payloads []string, ended bool, health []frames.Health) {
	t.Helper()
	names := map[frames.ChannelID]string{}
	sr := segments.NewReader(r, segments.ReaderOptions{})
	for {
		e, err := sr.Next()
		if err == io.EOF {
			return payloads, ended, health
		}
		if err != nil {
			t.Fatalf("read capture: %v", err)
		}
		switch e.Kind {
		case segments.EntrySegment:
			for _, d := range e.Header.Channels {
				names[d.ID] = d.Name
			}
		case segments.EntryChannel:
			names[e.Channel.ID] = e.Channel.Name
		case segments.EntryStreamEnded:
			ended = true
		case segments.EntryFrame:
			switch names[e.Frame.Channel] {
			case name:
				payloads = append(payloads, string(e.Frame.Payload))
			case frames.HealthChannel:
				h, err := frames.DecodeRecord(e.Frame.Payload, frames.Health{})
				if err != nil {
					t.Fatal(err)
				}
				health = append(health, h)
			}
		}
	}
}

// waitForFrames waits until the capture file holds n frames of channel
// name (it is flushed every --flush interval).
func waitForFrames(t *testing.T, path, name string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			if got := countFrames(b, name); got >= n {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s: %d frames of %s did not arrive", path, n, name)
}

// countFrames counts the frames of channel name in a capture being
// written (a torn tail is normal there).
func countFrames(b []byte, name string) int {
	names := map[frames.ChannelID]string{}
	sr := segments.NewReader(bytes.NewReader(b), segments.ReaderOptions{})
	n := 0
	for {
		e, err := sr.Next()
		if err != nil {
			return n
		}
		switch e.Kind {
		case segments.EntrySegment:
			for _, d := range e.Header.Channels {
				names[d.ID] = d.Name
			}
		case segments.EntryChannel:
			names[e.Channel.ID] = e.Channel.Name
		case segments.EntryFrame:
			if names[e.Frame.Channel] == name {
				n++
			}
		}
	}
}

// TestEmitSignal: INT, TERM or HUP while the producer is still writing
// ends the stream cleanly: exit 0, every line read so far recorded (a
// partial line included), StreamEnded written.
func TestEmitSignal(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			capture := filepath.Join(t.TempDir(), "sig.dss")
			cmd := dsCommand("emit", "-c", "sys.journal", "--flush", "20ms", "-o", capture)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer stdin.Close()
			io.WriteString(stdin, "one\ntwo\n")
			waitForFrames(t, capture, "sys.journal", 2)
			io.WriteString(stdin, "three\npartial")
			waitForFrames(t, capture, "sys.journal", 4) // the partial line after capture.IdleFlush (50 ms)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("ds emit: %v\n%s", err, stderr.Bytes())
				}
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				t.Fatal("ds emit did not end on " + sig.String())
			}
			if stderr.Len() != 0 {
				t.Errorf("stderr: %q", stderr.Bytes())
			}
			f, err := os.Open(capture)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, ended, health := readCapture(t, f, "sys.journal")
			if want := []string{"one\n", "two\n", "three\n", "partial"}; !slices.Equal(got, want) {
				t.Errorf("frames %q, want %q", got, want)
			}
			if !ended {
				t.Error("no StreamEnded record")
			}
			if len(health) < 2 {
				t.Errorf("%d health records, want one at the start and one at the end", len(health))
			}
		})
	}
}

// TestEmitStopSignalWhileReading: a stop signal while a read of a quiet
// pipe (still open) is in progress ends the stream; the partial line read
// before it is recorded.
func TestEmitStopSignalWhileReading(t *testing.T) {
	capture := filepath.Join(t.TempDir(), "q.dss")
	cmd := dsCommand("emit", "-c", "q", "-o", capture)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	io.WriteString(stdin, "a\n")
	waitForFrames(t, capture, "q", 1)
	io.WriteString(stdin, "b")
	time.Sleep(200 * time.Millisecond) // read (bytes not read by the signal stay unread)
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("ds emit: %v", err)
	}
	f, err := os.Open(capture)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, ended, _ := readCapture(t, f, "q")
	if want := []string{"a\n", "b"}; !slices.Equal(got, want) || !ended {
		t.Fatalf("frames %q (ended %v), want %q, ended", got, ended, want)
	}
}

// TestEmitPrompt: with -o - a pipe reader gets each line within the flush
// interval, while stdin is still open.
func TestEmitPrompt(t *testing.T) {
	cmd := dsCommand("emit", "-c", "live", "-o", "-")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()
	frame := make(chan string, 4)
	go func() {
		defer close(frame)
		names := map[frames.ChannelID]string{}
		sr := segments.NewReader(stdout, segments.ReaderOptions{})
		for {
			e, err := sr.Next()
			if err != nil {
				return
			}
			switch e.Kind {
			case segments.EntrySegment:
				for _, d := range e.Header.Channels {
					names[d.ID] = d.Name
				}
			case segments.EntryFrame:
				if names[e.Frame.Channel] == "live" {
					frame <- string(e.Frame.Payload)
				}
			}
		}
	}()
	for _, line := range []string{"first\n", "second\n"} {
		start := time.Now()
		io.WriteString(stdin, line)
		select {
		case got := <-frame:
			if got != line {
				t.Fatalf("got %q, want %q", got, line)
			}
			t.Logf("%q arrived after %v", line, time.Since(start))
		case <-time.After(5 * time.Second):
			t.Fatalf("%q did not arrive while stdin was open", line)
		}
	}
}

// TestEmitBackpressure: a capture sink slower than the producer (a FIFO
// read slowly) makes ds emit stop reading stdin until there is room;
// nothing is dropped.
func TestEmitBackpressure(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a few MB through a slow FIFO")
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "sink")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	copied := make(chan []byte, 1)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			copied <- nil
			return
		}
		defer f.Close()
		var out bytes.Buffer
		buf := make([]byte, 64<<10)
		for {
			n, err := f.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				copied <- out.Bytes()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	const n = 150000
	in := seqText(n)
	cmd := dsCommand("emit", "-c", "seq", "-o", fifo)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("ds emit: %v\n%s", err, stderr.Bytes())
	}
	out := <-copied
	got, ended, health := readCapture(t, bytes.NewReader(out), "seq")
	// (A line may come back in two frames: a read that ends inside it
	// and a next read more than capture.IdleFlush (50 ms) later.)
	if strings.Join(got, "") != string(in) || len(got) < n || !ended {
		t.Fatalf("%d frames for %d lines, the same bytes: %v (ended %v)", len(got), n, strings.Join(got, "") == string(in), ended)
	}
	last := health[len(health)-1]
	if last.MuxDropped != 0 || last.SubscriberDropped != 0 {
		t.Fatalf("dropped: %+v", last)
	}
}

// TestEmitCaptureFails: a capture that cannot be written (-o /dev/full)
// stops ds emit with exit 1 and the error on stderr, once.
func TestEmitCaptureFails(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"ds", "emit", "-c", "x", "-o", "/dev/full"}, strings.NewReader("a\nb\n"), &stdout, &stderr)
	if code != exitFailure {
		t.Fatalf("exit %d, want %d; stderr %q", code, exitFailure, stderr.Bytes())
	}
	if c := strings.Count(stderr.String(), "no space left on device"); c != 1 {
		t.Fatalf("stderr %q: want the error once", stderr.Bytes())
	}
}

// TestEmitInterruptible: a pipe on stdin is read through a descriptor
// whose read an interrupt ends; release leaves the pipe in blocking mode.
func TestEmitInterruptible(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	fd := r.Fd() // (puts r in blocking mode, as os.Stdin is)
	in, interrupt, release := interruptible(r)
	done := make(chan error, 1)
	go func() {
		_, err := in.Read(make([]byte, 16))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	if !interrupt() {
		t.Fatal("a pipe read cannot be interrupted")
	}
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the read was not interrupted")
	}
	release()
	fl, _, errno := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
	if errno != 0 {
		t.Fatal(errno)
	}
	if fl&syscall.O_NONBLOCK != 0 {
		t.Fatal("the pipe was left non-blocking")
	}
}

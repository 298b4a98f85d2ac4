package capture

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// Kick drains the capture at once: a record submitted and kicked reaches
// an uncompressed capture's reader (a pipe) long before the capture's own
// timer (an hour here) would have written it. This is how ds host gets
// each sample written as it is taken.
func TestCaptureKick(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var ch frames.ChannelID
	opts := Options{Output: "-", Stream: frames.StreamID{Node: "n", Life: 1}, Label: "kick", Compression: segments.CompressNone,
		Flush: time.Hour, Poll: time.Hour, Queue: 64,
		Setup: func(e *frames.Endpoint) (err error) {
			ch, err = e.RegisterChannel("app.x", frames.TextStream())
			return err
		}}
	c, err := Start(opts, w, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		var buf bytes.Buffer
		b := make([]byte, 4096)
		for !bytes.Contains(buf.Bytes(), []byte("kicked\n")) {
			n, err := r.Read(b)
			buf.Write(b[:n])
			if err != nil {
				break
			}
		}
		got <- buf.Bytes()
	}()
	c.Endpoint().Producer().SubmitText(ch, "kicked\n")
	c.Kick()
	select {
	case b := <-got:
		if !bytes.Contains(b, []byte("kicked\n")) {
			t.Fatalf("the reader got %d bytes without the record", len(b))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a kicked record did not reach the pipe")
	}
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	w.Close()
}

// testOptions are the options of a small capture of stream n#life.
func testOptions(output string, life frames.Life) Options {
	return Options{Output: output, Stream: frames.StreamID{Node: "n", Life: life}, Label: "t",
		Compression: segments.CompressNone, Flush: 10 * time.Millisecond, Queue: 64}
}

// A named file is never replaced; Append adds another stream to a
// capture, but refuses a stream already in it with a *StreamExistsError,
// and refuses a file that is not a capture.
func TestStartFile(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "c.dss")
	c, err := Start(testOptions(name, 1), io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	if _, err := Start(testOptions(name, 2), io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "exists: not replacing it") {
		t.Fatalf("a second capture to %s: %v", name, err)
	}
	o := testOptions(name, 1)
	o.Append = true
	var se *StreamExistsError
	if _, err := Start(o, io.Discard, io.Discard); !errors.As(err, &se) || se.Stream != o.Stream || se.File != name {
		t.Fatalf("append of the same stream: %v", err)
	}
	o.Stream.Life = 2
	c, err = Start(o, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	spans, err := segments.NewBackWalker(f, fi.Size()).All()
	if err != nil {
		t.Fatal(err)
	}
	lives := map[frames.Life]bool{}
	for _, sp := range spans {
		if sp.Header != nil {
			lives[sp.Header.Stream.Stream.Life] = true
		}
	}
	if len(lives) != 2 {
		t.Fatalf("lives in the capture: %v, want 1 and 2", lives)
	}
	text := filepath.Join(dir, "notes.txt")
	os.WriteFile(text, []byte("hello\n"), 0o644)
	o = testOptions(text, 3)
	o.Append = true
	if _, err := Start(o, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "is not a ds capture") {
		t.Fatalf("append to a text file: %v", err)
	}
}

// With a directory as Output the file is named LABEL-TIME.dss there, and
// the name is said on the warning writer.
func TestStartGeneratedName(t *testing.T) {
	dir := t.TempDir()
	o := testOptions(dir, 1)
	o.Time = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	var warn bytes.Buffer
	c, err := Start(o, io.Discard, &warn)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, "t-20240506T070809.dss")
	if c.Name() != want || warn.String() != "ds: capturing to "+want+"\n" {
		t.Fatalf("name %q, warnings %q; want %q", c.Name(), warn.String(), want)
	}
}

// fakeOutput is an Output that counts what it is handed and reports a
// loss.
type fakeOutput struct {
	takes, flushes, settles, closes int
	lost                            uint64
}

func (o *fakeOutput) Name() string { return "fake://out" }
func (o *fakeOutput) Take(flush bool) {
	o.takes++
	if flush {
		o.flushes++
	}
}
func (o *fakeOutput) Waiting() int64                   { return 0 }
func (o *fakeOutput) Settle(ctx context.Context) error { o.settles++; return nil }
func (o *fakeOutput) Close(ctx context.Context) OutputReport {
	o.closes++
	return OutputReport{Output: o.Name(), LostFrames: o.lost, Unrecorded: []frames.TransportLoss{{From: 3, To: 5, Frames: 3, Reason: "gone"}}}
}

// Without a file, the outputs alone are handed every batch, the capture
// is named after the first, and Finish settles and closes each once and
// says what it lost; an output that lost nothing fails nothing.
func TestStartOutputsOnly(t *testing.T) {
	out := &fakeOutput{lost: 3}
	o := testOptions("", 1)
	o.NoFile = true
	o.Outputs = func(e *frames.Endpoint) ([]Output, error) { return []Output{out}, nil }
	var warn bytes.Buffer
	c, err := Start(o, io.Discard, &warn)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	// Its only output lost frames: no copy has them, the capture failed.
	var lost *OutputsLostError
	if err := c.Finish(); !errors.As(err, &lost) || len(lost.Reports) != 1 || lost.Reports[0].LostFrames != 3 {
		t.Fatalf("Finish = %v, want an *OutputsLostError of 3 frames", err)
	}
	if c.Name() != "fake://out" || out.takes < 3 || out.flushes < 1 || out.settles != 1 || out.closes != 1 {
		t.Fatalf("name %q, output %+v", c.Name(), *out)
	}
	want := "ds: warning: fake://out lost 3 frames (no capture file has them); ds gaps shows where and why\nds:   positions 3–5 not delivered: gone\n"
	if warn.String() != want {
		t.Fatalf("warnings %q, want %q", warn.String(), want)
	}

	whole := &fakeOutput{}
	o.Outputs = func(e *frames.Endpoint) ([]Output, error) { return []Output{whole}, nil }
	if c, err = Start(o, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := c.Finish(); err != nil {
		t.Fatalf("Finish with nothing lost = %v", err)
	}
}

// The keep policy keeps the ends of the clock and health channels, every
// health record that places a loss, and every lifecycle and transport
// record.
func TestKeepPolicy(t *testing.T) {
	var k KeepPolicy
	for i, name := range []string{frames.ClockChannel, frames.HealthChannel, "proc.x.lifecycle", frames.TransportChannel, "proc.x.stdout"} {
		k.Declare(frames.ChannelDescriptor{ID: frames.ChannelID(i + 1), Name: name})
	}
	for _, tt := range []struct {
		ch      frames.ChannelID
		payload string
		want    segments.Keep
	}{
		{1, `{}`, segments.KeepEnds},
		{2, `{"muxDropped":0}`, segments.KeepEnds},
		{2, `{"loss":{"frames":1}}`, segments.KeepFrame},
		{3, `{"event":"exited"}`, segments.KeepFrame},
		{4, `{}`, segments.KeepFrame},
		{5, "text\n", segments.KeepNone},
		{9, "undeclared", segments.KeepNone},
	} {
		if got := k.Keep(tt.ch, []byte(tt.payload)); got != tt.want {
			t.Errorf("Keep(%d, %q) = %v, want %v", tt.ch, tt.payload, got, tt.want)
		}
	}
}

package segments

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// frameSignal is a sink that reports each frame on a channel.
type frameSignal struct {
	discard
	frames chan frames.Frame
}

type discard struct{}

func (discard) Header(SegmentHeader)                           {}
func (discard) Channel(frames.ChannelDescriptor)               {}
func (discard) Frame(frames.StreamID, frames.Frame)            {}
func (discard) Ended(frames.StreamID)                          {}
func (discard) Trimmed(frames.StreamID, frames.Position, bool) {}
func (discard) Damage(int64, int64, bool, error)               {}
func (s frameSignal) Frame(_ frames.StreamID, f frames.Frame) {
	s.frames <- frames.Frame{Channel: f.Channel, Position: f.Position, Payload: bytes.Clone(f.Payload)}
}

// TestScanLive: Scan reads ahead in batches, but hands every frame of a
// live pipe to the sink as soon as it has arrived, not when a batch fills
// or the pipe ends.
func TestScanLive(t *testing.T) {
	s := frames.StreamID{Node: "live", Life: 1}
	pr, pw := io.Pipe()
	w, err := NewWriter(pw, frames.StreamDescriptor{Stream: s}, []frames.ChannelDescriptor{{Stream: s, ID: 1, Name: "out", Content: frames.TextStream()}}, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sink := frameSignal{frames: make(chan frames.Frame, 1)}
	done := make(chan error, 1)
	go func() { done <- Scan(context.Background(), pr, ScanOptions{}, sink) }()
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		for i := range 3 {
			w.WriteFrame(frames.Frame{Channel: 1, Position: frames.Position(i), Payload: []byte{'a' + byte(i), '\n'}})
			w.Flush()
		}
	}()
	for i := range 3 {
		select {
		case f := <-sink.frames:
			if f.Position != frames.Position(i) || f.Payload[0] != 'a'+byte(i) {
				t.Fatalf("frame %d: %+v", i, f)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("frame %d was written and flushed, but the sink has not seen it", i)
		}
	}
	<-wrote
	w.Close()
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// idleLog is a sink that notes frames and Idle calls, in order.
type idleLog struct {
	discard
	events chan string
}

func (s *idleLog) Frame(_ frames.StreamID, f frames.Frame) { s.events <- "frame " + string(f.Payload) }
func (s *idleLog) Idle(quiet bool) {
	if quiet {
		s.events <- "quiet"
	} else {
		s.events <- "idle"
	}
}

// TestScanIdle: a sink that is an Idler is told when the input has handed
// over everything it had (Idle(false)), and, with IdleAfter, when it then
// stays quiet (Idle(true), once).
func TestScanIdle(t *testing.T) {
	s := frames.StreamID{Node: "live", Life: 1}
	pr, pw := io.Pipe()
	w, err := NewWriter(pw, frames.StreamDescriptor{Stream: s}, []frames.ChannelDescriptor{{Stream: s, ID: 1, Name: "out", Content: frames.TextStream()}}, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sink := &idleLog{events: make(chan string, 100)}
	done := make(chan error, 1)
	go func() { done <- Scan(context.Background(), pr, ScanOptions{IdleAfter: 50 * time.Millisecond}, sink) }()
	next := func() string {
		select {
		case ev := <-sink.events:
			return ev
		case <-time.After(10 * time.Second):
			t.Fatal("nothing for 10 s")
			return ""
		}
	}
	closeIt := make(chan struct{})
	go func() {
		w.WriteFrame(frames.Frame{Channel: 1, Position: 0, Payload: []byte("a")})
		w.Flush()
		<-closeIt
		w.Close()
		pw.Close()
	}()
	// The header may come with its own Idle: skip Idle(false) until the frame.
	ev := next()
	for ev == "idle" {
		ev = next()
	}
	if ev != "frame a" {
		t.Fatalf("got %q, want the frame", ev)
	}
	if ev = next(); ev != "idle" {
		t.Fatalf("after the frame: %q, want idle", ev)
	}
	if ev = next(); ev != "quiet" {
		t.Fatalf("then %q, want quiet", ev)
	}
	select {
	case ev := <-sink.events:
		t.Fatalf("quiet is said once, then %q", ev)
	case <-time.After(150 * time.Millisecond):
	}
	close(closeIt)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestScanFollowWhole: following a capture that is complete already hands
// over all of it (the summary after the last entry holds nothing for the
// sink) before waiting for more.
func TestScanFollowWhole(t *testing.T) {
	s := frames.StreamID{Node: "f", Life: 1}
	capture := conformanceCapture(t, s, true, frames.Frame{Channel: 1, Position: 0, Payload: []byte("x\n")}, frames.Frame{Channel: 1, Position: 1, Payload: []byte("y\n")})
	var c callLog
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	sink := &endSignal{callLog: &c, ended: make(chan struct{})}
	go func() { done <- Scan(ctx, bytes.NewReader(capture), ScanOptions{Follow: true}, sink) }()
	select {
	case <-sink.ended:
	case <-time.After(10 * time.Second):
		t.Fatalf("the end of the stream was not handed over; got\n%s", c.String())
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Scan = %v, want context.Canceled", err)
	}
	if got := c.String(); !strings.Contains(got, `frame f#1 1 ch1 "y\n"`) {
		t.Errorf("got\n%s", got)
	}
}

type endSignal struct {
	*callLog
	ended chan struct{}
}

func (e *endSignal) Ended(s frames.StreamID) {
	e.callLog.Ended(s)
	close(e.ended)
}

// conformanceCapture writes a capture of stream s with three channels
// (1 text, 2 and 3 JSON records) holding fs, ended (closed) or not.
func conformanceCapture(t *testing.T, s frames.StreamID, ended bool, fs ...frames.Frame) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, frames.StreamDescriptor{Stream: s}, []frames.ChannelDescriptor{
		{Stream: s, ID: 1, Name: "proc.job.stdout", Content: frames.TextStream()},
		{Stream: s, ID: 2, Name: "host.resource", Content: frames.JSONRecord("host.resource")},
		{Stream: s, ID: 3, Name: frames.HealthChannel, Content: frames.JSONRecord(frames.HealthChannel)},
	}, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	if ended {
		err = w.Close()
	} else {
		err = w.Flush()
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestScanTrimmedTrust: a Trimmed record is reported with store set only
// from a store's read-out (ScanOptions.Store); from a capture file,
// CaptureTrimmed is told how many positions below the horizon the input
// holds, wherever the record is, once the input is read.
func TestScanTrimmedTrust(t *testing.T) {
	s := frames.StreamID{Node: "t", Life: 1}
	capture := func(trimAt int) []byte {
		var buf bytes.Buffer
		w, err := NewWriter(&buf, frames.StreamDescriptor{Stream: s}, []frames.ChannelDescriptor{{Stream: s, ID: 1, Name: "out", Content: frames.TextStream()}}, WriterOptions{Compression: CompressNone})
		if err != nil {
			t.Fatal(err)
		}
		for p := range 10 {
			if p == trimAt {
				if err := w.WriteTrimmed(5); err != nil {
					t.Fatal(err)
				}
			}
			if p == 3 {
				continue // position 3 is absent
			}
			if err := w.WriteFrame(frames.Frame{Channel: 1, Position: frames.Position(p), Payload: []byte("x\n")}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	for _, at := range []int{0, 7} {
		in := capture(at)
		type note struct {
			s      frames.StreamID
			before frames.Position
			n      uint64
		}
		var notes []note
		opts := ScanOptions{CaptureTrimmed: func(s frames.StreamID, before frames.Position, n uint64) { notes = append(notes, note{s, before, n}) }}
		var c callLog
		if err := Scan(context.Background(), bytes.NewReader(in), opts, &c); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(c.String(), "trimmed t#1 below 5\n") || strings.Contains(c.String(), "by its store") {
			t.Errorf("record at %d: calls\n%s", at, c.String())
		}
		if len(notes) != 1 || notes[0] != (note{s, 5, 4}) {
			t.Errorf("record at %d: CaptureTrimmed %v, want t#1 below 5: 4 positions", at, notes)
		}
		notes = nil
		opts.Store = true
		c = callLog{}
		if err := Scan(context.Background(), bytes.NewReader(in), opts, &c); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(c.String(), "trimmed t#1 below 5 by its store") || len(notes) != 0 {
			t.Errorf("record at %d, a store's read-out: notes %v, calls\n%s", at, notes, c.String())
		}
	}
}

package views

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// frameSignal is a sink that reports each frame on a channel.
type frameSignal struct {
	discard
	frames chan frames.Frame
}

type discard struct{}

func (discard) Header(SegmentHeader)                {}
func (discard) Channel(frames.ChannelDescriptor)    {}
func (discard) Frame(frames.StreamID, frames.Frame) {}
func (discard) Ended(frames.StreamID)               {}
func (discard) Damage(int64, int64, bool, error)    {}
func (s frameSignal) Frame(_ frames.StreamID, f frames.Frame) {
	s.frames <- frames.Frame{Channel: f.Channel, Position: f.Position, Payload: bytes.Clone(f.Payload)}
}

// TestScanLive: Scan reads ahead in batches, but hands every frame of a
// live pipe to the sink as soon as it has arrived, not when a batch fills
// or the pipe ends.
func TestScanLive(t *testing.T) {
	s := frames.StreamID{Node: "live", Life: 1}
	pr, pw := io.Pipe()
	w, err := segments.NewWriter(pw, frames.StreamDescriptor{Stream: s}, []frames.ChannelDescriptor{{Stream: s, ID: 1, Name: "out", Content: frames.TextStream()}}, segments.WriterOptions{})
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

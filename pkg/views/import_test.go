package views

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// callLog is a sink that writes down every call, one string each.
type callLog struct {
	mu    sync.Mutex
	calls []string
}

func (c *callLog) add(format string, args ...any) {
	c.mu.Lock()
	c.calls = append(c.calls, fmt.Sprintf(format, args...))
	c.mu.Unlock()
}

func (c *callLog) Header(h segments.SegmentHeader) {
	c.add("header %s seq=%d channels=%d writer=%q @%d", h.Stream.Stream, h.Seq, len(h.Channels), h.Writer, h.Offset)
}
func (c *callLog) Channel(d frames.ChannelDescriptor) { c.add("channel %d %s", d.ID, d.Name) }
func (c *callLog) Frame(s frames.StreamID, f frames.Frame) {
	c.add("frame %s %d ch%d %q", s, f.Position, f.Channel, f.Payload)
}
func (c *callLog) Ended(s frames.StreamID) { c.add("ended %s", s) }
func (c *callLog) Trimmed(s frames.StreamID, before frames.Position, _ bool) {
	c.add("trimmed %s below %d", s, before)
}
func (c *callLog) Damage(offset, end int64, torn bool, err error) {
	c.add("damage %d-%d torn=%v", offset, end, torn)
}

func (c *callLog) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.calls, "\n")
}

var impStream = frames.StreamID{Node: "n1", Life: 7}

// dsq1Stream is a DSQ1 stream of impStream: a header declaring channel 1
// (text), then the records of evs.
func dsq1Stream(t testing.TB, evs ...frames.Event) []byte {
	t.Helper()
	b, err := wireformat.AppendDSQ1Header(nil, [16]byte{1}, []byte("tok"), frames.StreamDescriptor{Stream: impStream},
		[]frames.ChannelDescriptor{{Stream: impStream, ID: 1, Name: "proc.x.stdout", Content: frames.TextStream()}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if b, err = wireformat.AppendDSQ1Record(b, ev); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func dsq1Frame(ch frames.ChannelID, pos uint64, payload string) frames.Event {
	return frames.FrameEvent(frames.FrameDelivery{Channel: frames.ChannelRef{Stream: impStream, Channel: ch}, Position: frames.Position(pos), Payload: []byte(payload)})
}

// envelopes is legacy delivery envelopes back to back.
func envelopes(ds ...frames.Delivery) []byte {
	var b []byte
	for _, d := range ds {
		b = wireformat.AppendLegacyDelivery(b, d)
	}
	return b
}

func envelope(node string, life, pos uint64, ch frames.ChannelID, payload string) frames.Delivery {
	return frames.Delivery{Stream: frames.StreamID{Node: frames.NodeID(node), Life: frames.Life(life)}, Frame: frames.Frame{Channel: ch, Position: frames.Position(pos), Payload: []byte(payload)}}
}

// discard is a sink that ignores everything.
type discard struct{}

func (discard) Header(segments.SegmentHeader)                  {}
func (discard) Channel(frames.ChannelDescriptor)               {}
func (discard) Frame(frames.StreamID, frames.Frame)            {}
func (discard) Ended(frames.StreamID)                          {}
func (discard) Trimmed(frames.StreamID, frames.Position, bool) {}
func (discard) Damage(int64, int64, bool, error)               {}

// TestScanAnyLog: what ds log prints of a DSQ1 stream (names from its
// catalog) and of legacy envelopes (no names: raw).
func TestScanAnyLog(t *testing.T) {
	render := func(in []byte) string {
		var out bytes.Buffer
		p := NewPrinter(&out, LogOptions{})
		sink := NewLogSink(p, 0)
		if err := segments.ScanAny(context.Background(), bytes.NewReader(in), segments.ScanOptions{}, sink); err != nil {
			t.Fatal(err)
		}
		sink.A.Flush()
		p.Close()
		return out.String()
	}
	got := render(dsq1Stream(t, dsq1Frame(1, 0, "alpha\n"), dsq1Frame(1, 1, "beta\n"), frames.StreamEndedEvent(impStream)))
	if !strings.Contains(got, "proc.x.stdout") || !strings.Contains(got, "alpha") || !strings.Contains(got, "beta") {
		t.Errorf("DSQ1:\n%s", got)
	}
	got = render(envelopes(envelope("n1", 7, 0, 3, "hi\n"), envelope("n1", 7, 1, 3, "there\n")))
	if !strings.Contains(got, "hi") || !strings.Contains(got, "there") {
		t.Errorf("legacy:\n%s", got)
	}
}

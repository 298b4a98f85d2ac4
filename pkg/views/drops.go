package views

import (
	"encoding/json"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// Drop is one place where a producer refused submissions (a full queue,
// or a stream that had ended): Frames submissions totalling Bytes payload
// bytes never got a position, immediately before position Before, the
// position of the datastream.health record that reports them. A refused
// submission can never show up as a gap; this is how a view shows it.
type Drop struct {
	Before frames.Position `json:"before"`
	Frames uint64          `json:"frames"`
	// Bytes is nil when the writer did not say (health records without
	// "loss", from older writers: the drop is then derived from the
	// mux_dropped counter and placed at the first record that counts it).
	Bytes  *uint64 `json:"bytes"`
	Reason string  `json:"reason"` // "queue full", "ended", …
}

// Losses counts what a [Printer] saw that its output may not show: gaps
// (positions assigned but never stored), drops (submissions refused
// before they got a position) and transport losses (positions an output
// of the stream did not deliver, see [TransportLoss]), over every stream
// and channel.
type Losses struct {
	Gaps              uint64 // interior gaps
	MissingFrames     uint64 // positions inside them
	Drops             uint64 // places where submissions were refused
	DroppedFrames     uint64 // submissions refused there
	Trimmed           uint64 // frames after a cursor no longer in the input
	Transport         uint64 // transport losses (datastream.transport records)
	UndeliveredFrames uint64 // frames they say were not delivered
	ClockSteps        uint64 // steps of a wall clock (see ClockStep): no loss of frames
}

// healthRecord is the part of a datastream.health record ([frames.Health])
// views read, with the presence of mux_dropped_bytes, which older writers
// did not write.
type healthRecord struct {
	MuxDropped        uint64       `json:"mux_dropped"`
	MuxDroppedBytes   *uint64      `json:"mux_dropped_bytes"`
	SubscriberDropped uint64       `json:"subscriber_dropped"`
	Loss              *frames.Loss `json:"loss"`
}

// dropTracker derives the drops of one stream from its health records, fed
// in position order.
type dropTracker struct {
	records  uint64  // health records read, decodable or not
	decoded  bool    // at least one decoded
	based    bool    // mux is a baseline for the next counter-only record
	mux      uint64  // the largest mux_dropped so far in position order
	muxBytes *uint64 // the largest mux_dropped_bytes so far, if any
	maxMux   uint64  // the largest mux_dropped seen
	maxSubsc uint64  // the largest subscriber_dropped seen
}

// health reads the health record at pos. fromStart says whether the stream
// is seen from position 0 (so that a zero baseline holds for its first
// record); late marks a record delivered out of order, which can report
// its own "loss" but says nothing about the counters in between. It
// returns the drop the record reports, if any.
func (t *dropTracker) health(pos frames.Position, payload []byte, fromStart, late bool) (Drop, bool) {
	t.records++
	var h healthRecord
	if json.Unmarshal(payload, &h) != nil {
		return Drop{}, false
	}
	t.decoded = true
	t.maxMux = max(t.maxMux, h.MuxDropped)
	t.maxSubsc = max(t.maxSubsc, h.SubscriberDropped)
	if late {
		if h.Loss != nil && h.Loss.Frames > 0 {
			return lossDrop(pos, h.Loss), true
		}
		return Drop{}, false
	}
	prev, prevBytes, based := t.mux, t.muxBytes, t.based || fromStart
	if !t.based && fromStart {
		prevBytes = new(uint64) // nothing was dropped before position 0
	}
	// The baseline only rises: a counter below it (a record whose reading
	// was taken before a loss placed ahead of it) neither lowers it nor
	// makes the next record's rise look like a new drop.
	t.mux, t.based = max(prev, h.MuxDropped), true
	if h.MuxDroppedBytes != nil && (prevBytes == nil || *h.MuxDroppedBytes > *prevBytes) {
		t.muxBytes = h.MuxDroppedBytes
	} else {
		t.muxBytes = prevBytes
	}
	if h.Loss != nil {
		if h.Loss.Frames == 0 {
			return Drop{}, false
		}
		return lossDrop(pos, h.Loss), true
	}
	// No "loss": an older writer, or a record carrying one was lost in a
	// gap. The counter's increase is shown here.
	if !based || h.MuxDropped <= prev {
		return Drop{}, false
	}
	d := Drop{Before: pos, Frames: h.MuxDropped - prev, Reason: frames.LossQueueFull}
	if prevBytes != nil && h.MuxDroppedBytes != nil && *h.MuxDroppedBytes >= *prevBytes {
		b := *h.MuxDroppedBytes - *prevBytes
		d.Bytes = &b
	}
	return d, true
}

func lossDrop(pos frames.Position, l *frames.Loss) Drop {
	b := l.Bytes
	reason := l.Reason
	if reason == "" {
		reason = frames.LossQueueFull
	}
	return Drop{Before: pos, Frames: l.Frames, Bytes: &b, Reason: reason}
}

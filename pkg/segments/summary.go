package segments

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"slices"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// Summary is what a segment's SegmentSummary record says
// (wireformat.Summary), as a [Span] gives it.
type Summary = wireformat.Summary

// ChannelCount is one channel's counts in a [Summary]; its Keep field
// holds a [Keep] value (what the summary kept of the channel).
type ChannelCount = wireformat.ChannelCount

// Keep says whether a segment's summary keeps a copy of a frame
// ([WriterOptions.Keep]).
type Keep uint8

const (
	// KeepNone keeps no copy: the frame is only counted.
	KeepNone Keep = iota
	// KeepEnds keeps the first and the last frame of the channel in each
	// segment (a clock's span, a counter's latest reading).
	KeepEnds
	// KeepFrame keeps this frame, within the summary's room, and the
	// channel's ends (an exit record, a health record that reports a loss).
	KeepFrame
)

// Room for kept frames in one segment's summary: past it, KeepFrame
// frames are no longer kept (the summary says so, and a reader reads the
// frames instead); ends are always kept. A payload larger than
// maxKeptPayload is never kept.
const (
	maxKeptBytes   = 64 << 10
	maxKeptFrames  = 256
	maxKeptPayload = 16 << 10
)

// segStats accumulates what a segment's summary says: for the segment, or
// for a block until it is written into one.
type segStats struct {
	frames, bytes uint64
	first, last   frames.Position
	ordered       bool
	chans         []chanStats // by id
	hit           int         // index of the last channel counted
	kept          []wireformat.KeptFrame
	keptBytes     int
	keptAll       bool
	ended         bool
}

type chanStats struct {
	id            frames.ChannelID
	frames, bytes uint64
	first, last   frames.Position
	head, tail    wireformat.KeptFrame // the ends, when kept
	hasEnds       bool
	keep          Keep // the most asked of any frame
}

func (s *segStats) reset() { *s = segStats{chans: s.chans[:0], keptAll: true} }

// channel returns the counts of channel id, adding them if new.
func (s *segStats) channel(id frames.ChannelID) *chanStats {
	if s.hit < len(s.chans) && s.chans[s.hit].id == id {
		return &s.chans[s.hit]
	}
	if i := int(id) - 1; i >= 0 && i < len(s.chans) && s.chans[i].id == id {
		s.hit = i // ids handed out from 1: found where they are dense
		return &s.chans[i]
	}
	i, found := slices.BinarySearchFunc(s.chans, id, func(c chanStats, id frames.ChannelID) int { return cmp.Compare(c.id, id) })
	if !found {
		s.chans = slices.Insert(s.chans, i, chanStats{id: id})
	}
	s.hit = i
	return &s.chans[i]
}

// add counts frame f, keeping a copy as keep says.
func (s *segStats) add(f frames.Frame, keep Keep) {
	n := uint64(len(f.Payload))
	if s.frames == 0 {
		s.first, s.last, s.ordered = f.Position, f.Position, true
	} else {
		s.ordered = s.ordered && f.Position > s.last
		s.first, s.last = min(s.first, f.Position), max(s.last, f.Position)
	}
	s.frames++
	s.bytes += n
	c := s.channel(f.Channel)
	if c.frames == 0 {
		c.first, c.last = f.Position, f.Position
	} else {
		c.first, c.last = min(c.first, f.Position), max(c.last, f.Position)
	}
	c.frames++
	c.bytes += n
	c.keep = max(c.keep, keep)
	if keep == KeepNone {
		return
	}
	if len(f.Payload) > maxKeptPayload {
		s.keptAll = false
		return
	}
	if !c.hasEnds {
		c.head = wireformat.KeptFrame{Channel: f.Channel, Position: f.Position, Payload: bytes.Clone(f.Payload)}
		c.hasEnds = true
	}
	c.tail = wireformat.KeptFrame{Channel: f.Channel, Position: f.Position, Payload: append(c.tail.Payload[:0], f.Payload...)}
	if keep == KeepFrame {
		s.keepFrame(wireformat.KeptFrame{Channel: f.Channel, Position: f.Position, Payload: bytes.Clone(f.Payload)})
	}
}

func (s *segStats) keepFrame(k wireformat.KeptFrame) {
	if !s.keptAll || len(s.kept) >= maxKeptFrames || s.keptBytes+len(k.Payload) > maxKeptBytes {
		s.keptAll = false
		return
	}
	s.kept = append(s.kept, k)
	s.keptBytes += len(k.Payload)
}

// merge adds the counts of o, a block written after what s counts.
func (s *segStats) merge(o *segStats) {
	if o.frames == 0 {
		return
	}
	if s.frames == 0 {
		s.first, s.last, s.ordered = o.first, o.last, o.ordered
	} else {
		s.ordered = s.ordered && o.ordered && o.first > s.last
		s.first, s.last = min(s.first, o.first), max(s.last, o.last)
	}
	s.frames += o.frames
	s.bytes += o.bytes
	for i := range o.chans {
		oc := &o.chans[i]
		c := s.channel(oc.id)
		if c.frames == 0 {
			c.first, c.last = oc.first, oc.last
		} else {
			c.first, c.last = min(c.first, oc.first), max(c.last, oc.last)
		}
		c.frames += oc.frames
		c.bytes += oc.bytes
		c.keep = max(c.keep, oc.keep)
		if oc.hasEnds {
			if !c.hasEnds {
				c.head = wireformat.KeptFrame{Channel: oc.id, Position: oc.head.Position, Payload: bytes.Clone(oc.head.Payload)}
				c.hasEnds = true
			}
			c.tail = wireformat.KeptFrame{Channel: oc.id, Position: oc.tail.Position, Payload: append(c.tail.Payload[:0], oc.tail.Payload...)}
		}
	}
	s.keptAll = s.keptAll && o.keptAll
	for _, k := range o.kept {
		s.keepFrame(wireformat.KeptFrame{Channel: k.Channel, Position: k.Position, Payload: bytes.Clone(k.Payload)})
	}
}

// summary returns the summary of a segment with these counts.
func (s *segStats) summary(id [8]byte, seq uint64, length int64) *wireformat.Summary {
	sum := &wireformat.Summary{
		SegmentID: hex.EncodeToString(id[:]), Seq: seq, Length: length,
		Frames: s.frames, Bytes: s.bytes, Ordered: s.frames > 0 && s.ordered,
		Ended: s.ended, KeptAll: s.keptAll, Channels: []wireformat.ChannelCount{},
	}
	if s.frames > 0 {
		first, last := s.first, s.last
		sum.First, sum.Last = &first, &last
	}
	kept := slices.Clone(s.kept)
	for _, c := range s.chans {
		cc := wireformat.ChannelCount{ID: c.id, Frames: c.frames, Bytes: c.bytes, First: c.first, Last: c.last}
		if c.hasEnds {
			cc.Keep = min(uint8(c.keep), wireformat.KeepFrames)
		}
		sum.Channels = append(sum.Channels, cc)
		if c.hasEnds {
			kept = append(kept, c.head, c.tail)
		}
	}
	slices.SortStableFunc(kept, func(a, b wireformat.KeptFrame) int { return cmp.Compare(a.Position, b.Position) })
	sum.Kept = slices.CompactFunc(kept, func(a, b wireformat.KeptFrame) bool { return a.Position == b.Position })
	if !sum.Ordered {
		// Positions may repeat: the kept frames cannot be told apart by
		// position, and a summary reader reads such a segment anyway.
		sum.Kept, sum.KeptAll = nil, false
	}
	return sum
}

package views

import (
	"encoding/json"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// This file holds the printer's structured output (LogOptions.Entries):
// what FormatJSON would print, one object at a time, handed to a function
// as an [Entry] instead of being encoded, for renderers of their own (ds
// report's HTML). The lines, records, notes and their order, time and
// selection are those of ds log --json.

// EntryKind says what an [Entry] is.
type EntryKind uint8

const (
	// EntryLine is one text line, joined across frames: Payload holds
	// its bytes without the newline; Partial is set when it had none.
	EntryLine EntryKind = iota + 1
	// EntryRecord is a frame of a JsonRecord channel whose payload is
	// JSON (Payload, as written).
	EntryRecord
	// EntryBytes is any other frame: a Bytes channel's, a record that is
	// not JSON, a frame of a channel without a descriptor (Channel ""),
	// or a late or conflicting frame of a text channel (not joined);
	// with LogOptions.JSONFrames, every frame of a text channel
	// (Content KindTextStream).
	EntryBytes
	// EntryGap is positions Range.From..Range.To assigned but never
	// stored.
	EntryGap
	// EntryDrop is Drop.Frames submissions refused before position
	// Drop.Before (a datastream.health record's report).
	EntryDrop
	// EntryTransport is positions an output of the stream did not
	// deliver (Transport), reported at Position, its record's.
	EntryTransport
	// EntryStart says the stream starts at Position: the frames before
	// are not in the input (not a loss).
	EntryStart
	// EntryTrimmed is positions Range.From..Range.To no longer in the
	// input (after a cursor, or trimmed by a store; not a loss).
	EntryTrimmed
	// EntryDamage is bytes [Offset, End) of input File that could not be
	// read (Torn: a torn tail at Offset). Stream is zero.
	EntryDamage
)

// An Entry is one object of ds log --json, handed to LogOptions.Entries.
// It and its byte slices (Payload, Message) are the printer's, valid only
// during the call and not to be changed: the printer reuses them (one
// Entry, not one per line).
type Entry struct {
	Kind   EntryKind
	Stream frames.StreamID
	// Channel and ChannelID name the frame's channel (EntryLine,
	// EntryRecord, EntryBytes); Channel is "" without a descriptor.
	Channel   string
	ChannelID frames.ChannelID
	Content   frames.ContentKind
	// Position is the first frame's (of a line, a frame, a note's
	// place); LastPosition that of a line's last frame.
	Position, LastPosition frames.Position
	// TimeNS is the stream's latest datastream.clock reading before it,
	// in ns since the Unix epoch (0: none yet), as --json's "time"; a
	// note has one too (the time of where it is shown), which --json
	// does not print.
	TimeNS int64
	// SteadyNS is TimeNS less the steps the stream's wall clock made
	// before it (see ClockStep; 0 when TimeNS is): it moves as the
	// monotonic clock does across a step, so the time between two
	// entries of a stream, measured by it, is never made up by a clock
	// that was set (ds log --time=delta measures so).
	SteadyNS int64
	// StartNS is the first datastream.clock reading of the inputs (0:
	// none yet), in ns since the Unix epoch: the origin ds log
	// --time=since-start and --since +D measure from, by SteadyNS.
	StartNS int64
	Payload []byte
	Partial bool // EntryLine: printed without its newline
	Late    bool // a frame that arrived after its stream went past it
	// Conflict is a frame refused: another payload was stored first.
	Conflict bool
	// Message is what ds log prints for a note after its columns
	// (escaped for a terminal): "positions 3–5 missing (3 frames)".
	Message   []byte
	Range     segments.Gap   // EntryGap, EntryTrimmed
	Drop      Drop           // EntryDrop
	Transport *TransportLoss // EntryTransport
	// File, Offset, End and Torn describe EntryDamage; Err is its
	// cause, as ds log prints it.
	File        string
	Offset, End int64
	Torn        bool
	Err         string
}

// entryFrame hands frame f of channel ci (nil: none) of stream st to
// p.entries (see jsonFrame).
func (p *Printer) entryFrame(st *streamInfo, ci *chanInfo, kind segments.ItemKind, f *frames.Frame) {
	e := &p.entry
	*e = Entry{Kind: EntryBytes, Stream: st.desc.Stream, ChannelID: f.Channel, Position: f.Position, LastPosition: f.Position,
		TimeNS: st.clock.ns, SteadyNS: st.clock.steady, StartNS: p.clock.startNS, Payload: f.Payload, Late: kind == segments.ItemLate, Conflict: kind == segments.ItemConflict}
	if ci != nil {
		e.Channel, e.Content = ci.name, ci.kind
		if ci.kind == frames.KindJSONRecord && json.Valid(f.Payload) {
			e.Kind = EntryRecord
		}
	}
	p.entries(e)
}

// entryLine hands a text line to p.entries (see jsonText).
func (p *Printer) entryLine(st *streamInfo, ci *chanInfo, sp lineSpan, line []byte) {
	e := &p.entry
	if e.Kind != EntryLine {
		*e = Entry{} // a line sets the fields that follow: the rest stays zero
	}
	e.Kind, e.Stream, e.Channel, e.ChannelID, e.Content = EntryLine, st.desc.Stream, ci.name, ci.id, ci.kind
	e.Position, e.LastPosition, e.TimeNS, e.SteadyNS, e.StartNS = sp.pos, max(sp.last, sp.pos), p.clock.lineNS, p.clock.lineSteady, p.clock.startNS
	e.Payload, e.Partial = line, !sp.nl
	p.entries(e)
}

// entryNote hands note e of stream st (nil: of an input) to p.entries,
// with p.msg as its message and the time of the line being rendered.
func (p *Printer) entryNote(st *streamInfo, e Entry) {
	if st != nil {
		e.Stream = st.desc.Stream
	}
	e.TimeNS, e.SteadyNS, e.StartNS, e.Message = p.clock.lineNS, p.clock.lineSteady, p.clock.startNS, p.msg
	p.entry = e
	p.entries(&p.entry)
}

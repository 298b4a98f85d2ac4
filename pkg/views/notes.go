package views

import (
	"strconv"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/textfmt"
)

// This file holds the notes a [Printer] prints among the lines: gaps,
// drops (datastream.health), transport losses (datastream.transport),
// steps of the wall clock (datastream.clock),
// positions trimmed after a cursor or by a store, where a stream read
// from part-way starts, and damaged ranges of an input. In the text
// format a note is a line whose position column is "~" ("!" for damage)
// and whose channel column says what it is; in FormatJSON it is an object
// whose "text" is that line's message; FormatCat shows none, and
// [Printer.Losses] counts them.

// streamNotes is what the notes keep of one stream: its health and
// transport channels and the drops its health records report.
type streamNotes struct {
	healthID  frames.ChannelID // datastream.health, if hasHealth
	hasHealth bool
	transpID  frames.ChannelID // datastream.transport, if hasTransp
	hasTransp bool
	fromStart bool // position 0 was printed: the stream is seen from its start
	drops     dropTracker
}

// reads reports whether channel id is the stream's health or transport
// channel.
func (n *streamNotes) reads(id frames.ChannelID) bool {
	return n.hasHealth && id == n.healthID || n.hasTransp && id == n.transpID
}

// Losses returns what the printer has seen so far of gaps and drops, over
// every stream and channel, whether or not its format shows them (--cat
// does not).
func (p *Printer) Losses() Losses { return p.losses }

// records reads frame f of stream st when it is a datastream.health or
// datastream.transport record, and prints the drop or transport loss it
// reports (when show, the selection's decision for the frame) before the
// frame: a loss concerns the whole stream, whatever the channel filters.
func (p *Printer) records(st *streamInfo, kind segments.ItemKind, f *frames.Frame, show bool) {
	n := &st.notes
	if n.hasHealth && f.Channel == n.healthID {
		if d, ok := n.drops.health(f.Position, f.Payload, n.fromStart, kind == segments.ItemLate); ok && show {
			p.losses.Drops++
			p.losses.DroppedFrames += d.Frames
			p.drop(st, d)
		}
	}
	if show && n.hasTransp && f.Channel == n.transpID {
		if t, ok := decodeTransport(f.Payload); ok {
			p.losses.Transport++
			p.losses.UndeliveredFrames += t.Frames
			p.transport(st, f.Position, &t)
		}
	}
}

// cutNote prints the held lines of stream st that a note at pos comes
// after (none with --json=frames, which joins no lines).
func (p *Printer) cutNote(st *streamInfo, pos frames.Position) {
	if p.format != FormatJSON || !p.json.frames {
		p.cutBefore(st, pos, nil)
	}
}

// lossNote prints the text line of a loss of stream st: "~", what (gap,
// dropped, lost) and msg, styled. msg may be p.msg.
func (p *Printer) lossNote(st *streamInfo, what string, msg []byte) {
	p.lossLine(st, "~", styleLoss, what, styleLoss, msg)
}

// gap shows the gap g of stream st, in place.
func (p *Printer) gap(st *streamInfo, g segments.Gap) {
	if p.format == FormatCat {
		return
	}
	p.cutNote(st, g.From)
	p.msg = appendGapMsg(p.msg[:0], g)
	if p.entries != nil {
		p.entryNote(st, Entry{Kind: EntryGap, Position: g.From, LastPosition: g.To, Range: g})
		return
	}
	if p.format == FormatJSON {
		p.jsonNote(appendRangeJSON(p.jsonNoteHead(st, "gap"), g.From, g.To, g.Count), p.msg)
		return
	}
	p.lossNote(st, "gap", p.msg)
}

// drop shows submissions refused before position d.Before, in place.
func (p *Printer) drop(st *streamInfo, d Drop) {
	if p.format == FormatCat {
		return
	}
	p.cutNote(st, d.Before)
	p.msg = appendDropMsg(p.msg[:0], d)
	if p.entries != nil {
		p.entryNote(st, Entry{Kind: EntryDrop, Position: d.Before, LastPosition: d.Before, Drop: d})
		return
	}
	if p.format == FormatJSON {
		p.jsonNote(appendDropJSON(p.jsonNoteHead(st, "dropped"), d), p.msg)
		return
	}
	p.lossNote(st, "dropped", p.msg)
}

// transport shows, in place at position at (its datastream.transport
// record's), the positions an output did not deliver.
func (p *Printer) transport(st *streamInfo, at frames.Position, t *TransportLoss) {
	if p.format == FormatCat {
		return
	}
	p.cutNote(st, at)
	p.msg = appendTransportMsg(p.msg[:0], t)
	if p.entries != nil {
		p.entryNote(st, Entry{Kind: EntryTransport, Position: at, LastPosition: at, Transport: t})
		return
	}
	if p.format == FormatJSON {
		p.jsonNote(appendTransportJSON(p.jsonNoteHead(st, "transport_loss"), t), p.msg)
		return
	}
	p.lossNote(st, "lost", p.msg)
}

// clockStep shows, in place at position c.Position (its datastream.clock
// record's), a step of stream st's wall clock.
func (p *Printer) clockStep(st *streamInfo, c ClockStep) {
	if p.format == FormatCat {
		return
	}
	p.cutNote(st, c.Position)
	p.msg = append(p.msg[:0], c.String()...)
	if p.format == FormatJSON {
		p.jsonNote(appendClockStepJSON(p.jsonNoteHead(st, "clock_step"), c), p.msg)
		return
	}
	p.lossNote(st, "clock", p.msg)
}

// appendClockStepJSON appends the body of a clock step's object,
// `{"position":P,"after":A,"step_ns":S,"elapsed_ns":E,"from_unix_ns":F,"to_unix_ns":T}`.
func appendClockStepJSON(b []byte, c ClockStep) []byte {
	b = append(b, `{"position":`...)
	b = strconv.AppendUint(b, uint64(c.Position), 10)
	b = append(b, `,"after":`...)
	b = strconv.AppendUint(b, uint64(c.After), 10)
	b = append(b, `,"step_ns":`...)
	b = strconv.AppendInt(b, c.StepNS, 10)
	b = append(b, `,"elapsed_ns":`...)
	b = strconv.AppendInt(b, c.ElapsedNS, 10)
	b = append(b, `,"from_unix_ns":`...)
	b = strconv.AppendInt(b, c.FromUnixNS, 10)
	b = append(b, `,"to_unix_ns":`...)
	b = strconv.AppendInt(b, c.ToUnixNS, 10)
	return append(b, '}')
}

// start shows that a stream's frames before position pos are not in the
// input (it was cut off at its start, or is the end of a longer capture):
// not a loss, and not counted as one.
func (p *Printer) start(st *streamInfo, pos frames.Position) {
	if p.format == FormatCat {
		return
	}
	p.msg = appendStartMsg(p.msg[:0], pos)
	if p.entries != nil {
		p.entryNote(st, Entry{Kind: EntryStart, Position: pos, LastPosition: pos})
		return
	}
	if p.format == FormatJSON {
		b := append(p.jsonNoteHead(st, "start"), `{"position":`...)
		p.jsonNote(append(strconv.AppendUint(b, uint64(pos), 10), '}'), p.msg)
		return
	}
	p.lossLine(st, "~", styleStart, "start", styleNone, p.msg)
}

// startItem shows where a stream read from part-way starts. Given a cursor
// for the stream, frames between the cursor and the first one in the input
// are gone (trimmed, or never kept): that is said, with their count, so
// that a consumer never skips frames silently; when the input starts at or
// before the cursor, nothing is said.
func (p *Printer) startItem(st *streamInfo, pos frames.Position) {
	if st.sel.hasAfter {
		p.checkTrimmed(st, pos)
		return
	}
	if r := p.sel.Positions; r != nil && r.From >= pos {
		return
	}
	p.start(st, pos)
}

// checkTrimmed is called with the position of the first item of stream st
// (a frame, a gap's start, or where the stream starts): when the stream
// has a cursor and that position is past the cursor's next one, the frames
// between are gone and that is said, once.
func (p *Printer) checkTrimmed(st *streamInfo, pos frames.Position) {
	if !st.sel.hasAfter || st.sel.checked {
		return
	}
	st.sel.checked = true
	if pos > st.sel.after+1 {
		p.clock.at(&st.clock)
		p.losses.Trimmed += uint64(pos - st.sel.after - 1)
		p.trimmed(st, st.sel.after+1, pos-1, false)
	}
}

// storeTrimmed shows that a store trimmed stream st's positions first..
// last (ds trim; first is 0 but for a hole below a capture's Trimmed
// record): once, not as a loss. After a cursor, only the trimmed
// positions past the cursor are shown, as no longer in the input.
func (p *Printer) storeTrimmed(st *streamInfo, first, last frames.Position) {
	from := first
	if st.sel.hasAfter {
		st.sel.checked = true
		if last <= st.sel.after {
			return // consumed before they were trimmed
		}
		from = max(first, st.sel.after+1)
		p.losses.Trimmed += uint64(last-from) + 1
	}
	p.clock.at(&st.clock)
	p.trimmed(st, from, last, !st.sel.hasAfter)
}

// trimmed shows that positions from..to of stream st are no longer in
// the input: after a consumer's cursor, or, when store is set, trimmed by
// the store (no cursor involved).
func (p *Printer) trimmed(st *streamInfo, from, to frames.Position, store bool) {
	if p.format == FormatCat {
		return
	}
	if store {
		p.msg = appendStoreTrimmedMsg(p.msg[:0], from, to)
	} else {
		p.msg = appendTrimmedMsg(p.msg[:0], from, to)
	}
	if p.entries != nil {
		p.entryNote(st, Entry{Kind: EntryTrimmed, Position: from, LastPosition: to, Range: segments.Gap{From: from, To: to, Count: uint64(to-from) + 1}})
		return
	}
	if p.format == FormatJSON {
		p.jsonNote(appendRangeJSON(p.jsonNoteHead(st, "trimmed"), from, to, uint64(to-from)+1), p.msg)
		return
	}
	p.lossLine(st, "~", styleLoss, "trimmed", styleNone, p.msg)
}

// Damage renders a damaged byte range [offset, end) of file, or a torn tail
// when torn is set.
func (p *Printer) Damage(file string, offset, end int64, torn bool, err error) {
	if p.err != nil || p.format == FormatCat {
		return
	}
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	p.msg = appendDamageMsg(p.msg[:0], file, offset, end, torn, msg)
	if p.entries != nil {
		p.entryNote(nil, Entry{Kind: EntryDamage, File: file, Offset: offset, End: end, Torn: torn, Err: msg})
		return
	}
	if p.format == FormatJSON {
		b := append(p.line[:0], `{"damage":{"file":`...)
		b = textfmt.AppendJSONString(b, file, true)
		b = append(b, `,"offset":`...)
		b = strconv.AppendInt(b, offset, 10)
		b = append(b, `,"end":`...)
		b = strconv.AppendInt(b, end, 10)
		b = append(b, `,"torn_tail":`...)
		b = strconv.AppendBool(b, torn)
		b = append(b, `,"error":`...)
		b = textfmt.AppendJSONString(b, msg, true)
		p.jsonNote(append(b, '}'), p.msg)
		return
	}
	p.lossLine(nil, "!", styleDamage, "damage", styleDamage, p.msg)
}

// appendRangeJSON appends `{"from":F,"to":T,"count":N}`, the body of a
// gap's and a trim's object.
func appendRangeJSON(b []byte, from, to frames.Position, count uint64) []byte {
	b = append(b, `{"from":`...)
	b = strconv.AppendUint(b, uint64(from), 10)
	b = append(b, `,"to":`...)
	b = strconv.AppendUint(b, uint64(to), 10)
	b = append(b, `,"count":`...)
	b = strconv.AppendUint(b, count, 10)
	return append(b, '}')
}

// appendDropJSON appends the body of a drop's object,
// `{"before":P,"frames":N,"bytes":B,"reason":R}` (bytes null when not
// known).
func appendDropJSON(b []byte, d Drop) []byte {
	b = append(b, `{"before":`...)
	b = strconv.AppendUint(b, uint64(d.Before), 10)
	b = append(b, `,"frames":`...)
	b = strconv.AppendUint(b, d.Frames, 10)
	b = append(b, `,"bytes":`...)
	if d.Bytes != nil {
		b = strconv.AppendUint(b, *d.Bytes, 10)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"reason":`...)
	b = textfmt.AppendJSONString(b, d.Reason, true)
	return append(b, '}')
}

// Note messages, as the text format shows them after the columns and as
// the "text" of their --json objects. What they quote from the input is
// escaped for a terminal.

func appendGapMsg(b []byte, g segments.Gap) []byte {
	b = appendPositions(b, g.From, g.To)
	b = append(b, " missing ("...)
	return append(textfmt.AppendNouns(b, g.Count, "frame"), ')')
}

func appendStartMsg(b []byte, pos frames.Position) []byte {
	b = append(b, "starts at position "...)
	b = strconv.AppendUint(b, uint64(pos), 10)
	return append(b, ": earlier frames not in the input"...)
}

func appendTrimmedMsg(b []byte, from, to frames.Position) []byte {
	b = appendPositions(b, from, to)
	b = append(b, " after the cursor are no longer in the input ("...)
	return append(textfmt.AppendNouns(b, uint64(to-from)+1, "frame"), ')')
}

func appendStoreTrimmedMsg(b []byte, from, to frames.Position) []byte {
	b = appendPositions(b, from, to)
	b = append(b, " trimmed from the store ("...)
	// Positions, not frames: what was stored below is not known here.
	return append(textfmt.AppendNouns(b, uint64(to-from)+1, "position"), ')')
}

// appendPositions appends "position N" or "positions A–B".
func appendPositions(b []byte, from, to frames.Position) []byte {
	if to == from {
		b = append(b, "position "...)
		return strconv.AppendUint(b, uint64(from), 10)
	}
	b = append(b, "positions "...)
	b = strconv.AppendUint(b, uint64(from), 10)
	b = append(b, "–"...)
	return strconv.AppendUint(b, uint64(to), 10)
}

func appendDropMsg(b []byte, d Drop) []byte {
	b = textfmt.AppendNouns(b, d.Frames, "frame")
	b = append(b, " before position "...)
	b = strconv.AppendUint(b, uint64(d.Before), 10)
	b = append(b, " ("...)
	b = appendEscaped(b, d.Reason, true)
	return append(b, ')')
}

func appendDamageMsg(b []byte, file string, offset, end int64, torn bool, msg string) []byte {
	b = appendEscaped(b, file, true)
	if torn {
		b = append(b, ": torn tail at byte "...)
		b = strconv.AppendInt(b, offset, 10)
	} else {
		b = append(b, ": bytes "...)
		b = strconv.AppendInt(b, offset, 10)
		b = append(b, "–"...)
		b = strconv.AppendInt(b, end-1, 10)
		b = append(b, " unreadable ("...)
		b = strconv.AppendInt(b, end-offset, 10)
		b = append(b, " bytes)"...)
	}
	if msg != "" {
		b = append(b, ": "...)
		b = appendEscaped(b, msg, true)
	}
	return b
}

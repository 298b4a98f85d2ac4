package views

import (
	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// cursorTracker keeps what a consumer of a [Printer] saves to resume
// (ds tail --cursor-file): per stream, the last position taken in, and
// the first hole (gap) past the cursor it started from.
type cursorTracker struct {
	forgotten segments.Cursor // the cursors of streams forgotten, and Selection.After's
	holes     segments.Cursor // per stream, the first position of its first gap past the cursor
}

// streamCursor is how far one stream was taken in.
type streamCursor struct {
	consumed bool // pos is set
	pos      frames.Position
}

func newCursorTracker(after segments.Cursor) cursorTracker {
	c := cursorTracker{forgotten: segments.Cursor{}}
	for id, pos := range after {
		c.forgotten[id] = pos
	}
	return c
}

// take moves the cursor to pos if pos is past it.
func (c *streamCursor) take(pos frames.Position) {
	if !c.consumed || pos > c.pos {
		c.pos, c.consumed = pos, true
	}
}

// gap notes the gap g of stream st: the first past the stream's cursor
// (Selection.After) is its hole.
func (c *cursorTracker) gap(st *streamInfo, g segments.Gap) {
	id := st.desc.Stream
	if _, seen := c.holes[id]; !seen && (!st.sel.hasAfter || g.To > st.sel.after) {
		if c.holes == nil {
			c.holes = segments.Cursor{}
		}
		c.holes[id] = max(g.From, st.sel.after+1)
	}
}

// forget keeps the cursor of a stream the printer is done with.
func (c *cursorTracker) forget(st *streamInfo) {
	if st.read.consumed && !st.sel.hidden {
		if old, ok := c.forgotten[st.desc.Stream]; !ok || st.read.pos > old {
			c.forgotten[st.desc.Stream] = st.read.pos
		}
	}
}

// cursor returns the cursors of the streams forgotten and of streams.
func (c *cursorTracker) cursor(streams map[frames.StreamID]*streamInfo) segments.Cursor {
	out := make(segments.Cursor, len(c.forgotten)+len(streams))
	for id, pos := range c.forgotten {
		out[id] = pos
	}
	for id, st := range streams {
		if st.read.consumed && !st.sel.hidden {
			if old, ok := out[id]; !ok || st.read.pos > old {
				out[id] = st.read.pos
			}
		}
	}
	return out
}

// holesCopy returns a copy of the holes.
func (c *cursorTracker) holesCopy() segments.Cursor {
	out := make(segments.Cursor, len(c.holes))
	for id, pos := range c.holes {
		out[id] = pos
	}
	return out
}

// Cursor returns, per stream, the last position the printer has taken in
// (printed, or passed over by the filters), together with the entries of
// Selection.After for streams it did not see: given back as
// Selection.After, a later run resumes after it. Call it after Close, so
// that what it covers has been written out (at-least-once: a run killed
// between the output and saving the cursor prints some lines again).
func (p *Printer) Cursor() segments.Cursor { return p.cursors.cursor(p.streams.m) }

// Holes returns, per stream, the first position of the first gap the
// printer was given past the stream's cursor (Selection.After): positions
// that may still arrive (a store fills them from a late copy). A consumer
// that must not skip them saves its cursor before them ([Cursor] of
// [Printer.Cursor] lowered to the hole's position - 1).
func (p *Printer) Holes() segments.Cursor { return p.cursors.holesCopy() }

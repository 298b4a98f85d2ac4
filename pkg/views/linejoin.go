package views

import (
	"bytes"
	"cmp"
	"slices"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// This file holds how a [Printer] joins the frames of a text channel into
// lines: a line split across frames is shown once, whole, at the position
// it started, unless a line of another channel of the stream has to be
// printed after it first (see [Printer.cutBefore]).

// maxLine bounds how much of one unfinished text line a printer holds per
// channel; a longer line is printed in pieces of this size.
const maxLine = 1 << 20

// partial is the unfinished line held for one text channel of a stream.
type partial struct {
	st     *streamInfo
	ch     *chanInfo
	pos    frames.Position
	last   frames.Position // the position of the last frame joined
	ns     int64           // the stream's clock reading when the line started
	steady int64           // and its steady time (see timebase)
	buf    []byte
	// cut is set when the line was printed unfinished (another line of
	// the stream had to come after it, or it reached maxLine): the rest of
	// it, up to its newline, is printed as a line of its own unless empty.
	cut bool
}

// lineSpan is where a text line being printed lies: the positions of its
// first and last frames, whether it ended with a newline (a held line
// printed unfinished did not), and whether it continues a line printed
// unfinished before it (the rest of a cut line). The text format marks
// both (lineMark), --json says "partial" and "continues".
type lineSpan struct {
	pos, last frames.Position
	nl        bool
	cont      bool
}

// joiner holds the unfinished lines of every stream, in the order they
// were opened (the order Close and EndStream print them in).
type joiner struct {
	pending []*partial
}

// open returns the held line of text channel ci of stream st, new and
// empty if it had none.
func (j *joiner) open(st *streamInfo, ci *chanInfo) *partial {
	if pl := ci.line; pl != nil {
		return pl
	}
	pl := &partial{st: st, ch: ci}
	ci.line = pl
	j.pending = append(j.pending, pl)
	st.lines = append(st.lines, pl)
	return pl
}

// before appends to dst the held lines of stream st that started before
// position pos (except the line except, if not nil), in the order they
// started.
func before(dst []*partial, st *streamInfo, pos frames.Position, except *partial) []*partial {
	for _, pl := range st.lines {
		if pl != except && len(pl.buf) > 0 && pl.pos < pos {
			dst = append(dst, pl)
		}
	}
	if len(dst) > 1 {
		slices.SortFunc(dst, func(a, b *partial) int { return cmp.Compare(a.pos, b.pos) })
	}
	return dst
}

// blankLine reports whether line is empty once a CRLF's CR is removed:
// the rest of a cut line that is only its line end is not printed.
func blankLine(line []byte) bool { return len(line) == 0 || len(line) == 1 && line[0] == '\r' }

// cutBefore prints, as they are, the held partial lines of stream st that
// started before position pos (except the line except, if not nil), in the
// order they started. Joining a line split across frames must not reorder
// lines across the channels of a stream: whatever is printed at pos comes
// after them. The rest of a cut line is printed as a line of its own when
// it arrives (unless it is empty).
func (p *Printer) cutBefore(st *streamInfo, pos frames.Position, except *partial) {
	// Inlined, this skips the call when the stream never held a line.
	if len(st.lines) != 0 {
		p.cutHeld(st, pos, except)
	}
}

// cutHeld is cutBefore's work.
func (p *Printer) cutHeld(st *streamInfo, pos frames.Position, except *partial) {
	var some [8]*partial
	for _, pl := range before(some[:0], st, pos, except) {
		p.printPartial(pl)
	}
}

// flushPartial prints a held partial line, after those of the stream's
// other channels that started before it.
func (p *Printer) flushPartial(pl *partial) {
	if len(pl.buf) == 0 {
		return
	}
	p.cutBefore(pl.st, pl.pos, pl)
	p.printPartial(pl)
}

// printPartial prints a held partial line as it is and empties it; what
// follows it on its channel, up to a newline, is the rest of a cut line.
func (p *Printer) printPartial(pl *partial) {
	p.clock.lineNS, p.clock.lineSteady = pl.ns, pl.steady
	if !pl.cut || !blankLine(pl.buf) || p.format == FormatJSON {
		p.printText(pl.st, pl.ch, lineSpan{pos: pl.pos, last: pl.last, cont: pl.cut}, pl.buf)
	}
	pl.buf, pl.cut = pl.buf[:0], true
}

// joinText renders frame f of text channel ci: it joins the frame to the
// held line of the channel until a newline, and prints each line it
// completes.
func (p *Printer) joinText(st *streamInfo, ci *chanInfo, f *frames.Frame) {
	data := f.Payload
	pl := ci.line
	pos := f.Position
	if pl != nil && len(pl.buf) > 0 {
		pos = pl.pos
	}
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			pl = p.lines.open(st, ci)
			if len(pl.buf) == 0 {
				pl.pos, pl.ns, pl.steady = pos, st.clock.ns, st.clock.steady
			}
			pl.last = f.Position
			pl.buf = append(pl.buf, data...)
			if len(pl.buf) >= maxLine {
				p.flushPartial(pl)
			}
			return
		}
		line := data[:i]
		cut := false
		ns, steady := st.clock.ns, st.clock.steady
		if pl != nil {
			if len(pl.buf) > 0 {
				pl.buf = append(pl.buf, line...)
				line = pl.buf
				ns, steady = pl.ns, pl.steady
			}
			cut, pl.cut = pl.cut, false
		}
		if !cut || !blankLine(line) || p.format == FormatJSON {
			// One text line, after the held partial lines of the
			// stream's other channels that started before it.
			p.cutBefore(st, pos, pl)
			p.clock.lineNS, p.clock.lineSteady = ns, steady
			p.printText(st, ci, lineSpan{pos: pos, last: f.Position, nl: true, cont: cut}, line)
		}
		if pl != nil {
			pl.buf = pl.buf[:0]
		}
		data = data[i+1:]
		pos = f.Position
	}
}

// endLines prints the held lines of stream st, in the order they were
// opened, and lets go of them.
func (p *Printer) endLines(st *streamInfo) {
	keep := p.lines.pending[:0]
	for _, pl := range p.lines.pending {
		if pl.st != st {
			keep = append(keep, pl)
			continue
		}
		p.flushPartial(pl)
		pl.ch.line = nil
	}
	clear(p.lines.pending[len(keep):])
	p.lines.pending = keep
	st.lines = nil
}

// FlushPartials prints the unfinished lines held so far, as they are (a
// live input that has been quiet for a while: its last line is shown
// before its newline arrives); the rest of such a line, when it comes, is
// printed as a line of its own. It does not flush the output.
func (p *Printer) FlushPartials() {
	for _, pl := range p.lines.pending {
		p.flushPartial(pl)
	}
}

// closeLines prints every held line and lets go of them.
func (p *Printer) closeLines() {
	for _, pl := range p.lines.pending {
		p.flushPartial(pl)
	}
	for _, pl := range p.lines.pending {
		pl.ch.line, pl.st.lines = nil, nil
	}
	p.lines.pending = nil
}

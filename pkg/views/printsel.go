package views

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// This file holds what the printer does for the shared filters
// ([Selection]), the time column, cursors and JSON text lines.

// matchStream notes which stream filters the stream d matches.
func (p *Printer) matchStream(d frames.StreamDescriptor) {
	i := len(p.sel.Channels) + len(p.sel.Contents)
	for _, n := range p.sel.Nodes {
		if n == d.Stream.Node {
			p.matched[i] = true
		}
		i++
	}
	for _, s := range p.sel.Streams {
		if s == d.Stream {
			p.matched[i] = true
		}
		i++
	}
	for _, o := range p.sel.Origins {
		if o == d.Origin {
			p.matched[i] = true
		}
		i++
	}
}

// matchChannel notes which channel filters the channel d of a shown stream
// matches.
func (p *Printer) matchChannel(d frames.ChannelDescriptor) {
	i := 0
	for _, f := range p.sel.Channels {
		if f.Match(d) {
			p.matched[i] = true
		}
		i++
	}
	for _, k := range p.sel.Contents {
		if k == d.Content.Kind {
			p.matched[i] = true
		}
		i++
	}
}

// Unmatched returns, once the inputs are read, the filters that matched
// no channel or stream of the inputs, as the user would spell them
// ("-c nosuch", "--node n9", "--content bytes"), so that a command can say
// why it printed nothing.
func (p *Printer) Unmatched() []string {
	var out []string
	i := 0
	for _, f := range p.sel.Channels {
		if !p.matched[i] {
			name := f.Value
			if f.Kind == frames.ChannelsPrefix {
				name += "*"
			}
			out = append(out, "-c "+name)
		}
		i++
	}
	for _, k := range p.sel.Contents {
		if !p.matched[i] {
			out = append(out, "--content "+contentFlag(k))
		}
		i++
	}
	for _, n := range p.sel.Nodes {
		if !p.matched[i] {
			out = append(out, "--node "+string(n))
		}
		i++
	}
	for _, s := range p.sel.Streams {
		if !p.matched[i] {
			out = append(out, "--stream "+s.String())
		}
		i++
	}
	for _, o := range p.sel.Origins {
		if !p.matched[i] {
			out = append(out, "--origin "+o.String())
		}
		i++
	}
	return out
}

func contentFlag(k frames.ContentKind) string {
	switch k {
	case frames.KindTextStream:
		return "text"
	case frames.KindJSONRecord:
		return "json"
	}
	return "bytes"
}

// Untimed returns the streams shown that had no datastream.clock reading
// at all when --since or --until needed one: their frames could not be
// placed in time and were not shown.
func (p *Printer) Untimed() []frames.StreamID { return p.untimed }

// shows is the decision of the position, cursor and time bounds for a
// frame at pos of stream st (after st's clock reading was updated).
func (p *Printer) shows(st *streamInfo, pos frames.Position) bool {
	if r := p.sel.Positions; r != nil && (pos < r.From || pos > r.To) {
		return false
	}
	if st.hasAfter && pos <= st.after {
		return false
	}
	if p.sel.timed() {
		return p.inTime(st)
	}
	return true
}

// timed takes stream st, which now has a clock reading, off the untimed
// list: only frames before its first reading went unplaced.
func (p *Printer) timed(st *streamInfo) {
	st.untimed = false
	for i, id := range p.untimed {
		if id == st.desc.Stream {
			p.untimed = append(p.untimed[:i], p.untimed[i+1:]...)
			break
		}
	}
}

// beyond reports whether a frame at pos of stream st is past the end of
// what the selection shows (--positions' end, --until): the cursor does
// not move over it, so that a later run shows it.
func (p *Printer) beyond(st *streamInfo, pos frames.Position) bool {
	if r := p.sel.Positions; r != nil && pos > r.To {
		return true
	}
	if b := p.sel.Until; b != nil && st.clockNS != 0 {
		if ns, ok := b.resolve(p.startNS); ok && st.clockNS > ns {
			return true
		}
	}
	return false
}

// inTime reports whether stream st's current time is within --since and
// --until.
func (p *Printer) inTime(st *streamInfo) bool {
	if st.clockNS == 0 {
		if !st.untimed {
			st.untimed = true
			p.untimed = append(p.untimed, st.desc.Stream)
		}
		return false
	}
	if b := p.sel.Since; b != nil {
		if ns, ok := b.resolve(p.startNS); !ok || st.clockNS < ns {
			return false
		}
	}
	if b := p.sel.Until; b != nil {
		if ns, ok := b.resolve(p.startNS); ok && st.clockNS > ns {
			return false
		}
	}
	return true
}

// clipGap cuts a gap to the positions shown; ok is false when nothing of
// it is.
func (p *Printer) clipGap(st *streamInfo, g segments.Gap) (segments.Gap, bool) {
	if r := p.sel.Positions; r != nil {
		g.From, g.To = max(g.From, r.From), min(g.To, r.To)
	}
	if st.hasAfter && g.From <= st.after {
		if g.To <= st.after {
			return g, false
		}
		g.From = st.after + 1
	}
	if g.From > g.To {
		return g, false
	}
	if p.sel.timed() && !p.inTime(st) {
		return g, false
	}
	g.Count = uint64(g.To-g.From) + 1
	return g, true
}

// startItem shows where a stream read from part-way starts. Given a cursor
// for the stream, frames between the cursor and the first one in the input
// are gone (trimmed, or never kept): that is said, with their count, so
// that a consumer never skips frames silently; when the input starts at or
// before the cursor, nothing is said.
func (p *Printer) startItem(st *streamInfo, pos frames.Position) {
	if st.hasAfter {
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
	if !st.hasAfter || st.checked {
		return
	}
	st.checked = true
	if pos > st.after+1 {
		p.lineNS = st.clockNS
		p.losses.Trimmed += uint64(pos - st.after - 1)
		p.trimmed(st, st.after+1, pos-1)
	}
}

// storeTrimmed shows that a store trimmed stream st's positions first..
// last (ds trim; first is 0 but for a hole below a capture's Trimmed
// record): once, not as a loss. After a cursor, only the trimmed positions
// past the cursor are shown, as no longer in the input.
func (p *Printer) storeTrimmed(st *streamInfo, first, last frames.Position) {
	from := first
	if st.hasAfter {
		st.checked = true
		if last <= st.after {
			return // consumed before they were trimmed
		}
		from = max(first, st.after+1)
		p.losses.Trimmed += uint64(last-from) + 1
	}
	p.lineNS = st.clockNS
	p.trimmedBy(st, from, last, !st.hasAfter)
}

// trimmed shows that positions from..to of stream st, after a consumer's
// cursor, are no longer in the input.
func (p *Printer) trimmed(st *streamInfo, from, to frames.Position) {
	p.trimmedBy(st, from, to, false)
}

// trimmedBy is trimmed; store says that the store trimmed them (no cursor
// involved).
func (p *Printer) trimmedBy(st *streamInfo, from, to frames.Position, store bool) {
	msg := appendTrimmedMsg
	if store {
		msg = appendStoreTrimmedMsg
	}
	count := uint64(to-from) + 1
	switch p.opts.Format {
	case FormatCat:
		return
	case FormatJSON:
		p.line = append(p.line[:0], st.jsonHead...)
		p.line = append(p.line, `,"trimmed":{"from":`...)
		p.line = strconv.AppendUint(p.line, uint64(from), 10)
		p.line = append(p.line, `,"to":`...)
		p.line = strconv.AppendUint(p.line, uint64(to), 10)
		p.line = append(p.line, `,"count":`...)
		p.line = strconv.AppendUint(p.line, count, 10)
		p.line = append(p.line, "}}\n"...)
		p.line = p.withText(p.line, msg(p.msg[:0], from, to))
		p.write(p.line)
	default:
		p.lossPrefix("trimmed")
		p.line = msg(p.line, from, to)
		p.line = append(p.line, '\n')
		p.out(st, p.line)
	}
}

// forget keeps the cursor of a stream the printer is done with.
func (p *Printer) forget(st *streamInfo) {
	if st.consumed && !st.hidden {
		if c, ok := p.cursors[st.desc.Stream]; !ok || st.cursor > c {
			p.cursors[st.desc.Stream] = st.cursor
		}
	}
}

// Cursor returns, per stream, the last position the printer has taken in
// (printed, or passed over by the filters), together with the entries of
// Selection.After for streams it did not see: given back as
// Selection.After, a later run resumes after it. Call it after Close, so
// that what it covers has been written out (at-least-once: a run killed
// between the output and saving the cursor prints some lines again).
func (p *Printer) Cursor() Cursor {
	c := make(Cursor, len(p.cursors)+len(p.streams))
	for id, pos := range p.cursors {
		c[id] = pos
	}
	for id, st := range p.streams {
		if st.consumed && !st.hidden {
			if old, ok := c[id]; !ok || st.cursor > old {
				c[id] = st.cursor
			}
		}
	}
	return c
}

// Holes returns, per stream, the first position of the first gap the
// printer was given past the stream's cursor (Selection.After): positions
// that may still arrive (a store fills them from a late copy). A consumer
// that must not skip them saves its cursor before them ([Cursor] of
// [Printer.Cursor] lowered to the hole's position - 1).
func (p *Printer) Holes() Cursor {
	c := make(Cursor, len(p.holes))
	for id, pos := range p.holes {
		c[id] = pos
	}
	return c
}

// appendTime appends the time column (LogOptions.Time) of the line being
// rendered, whose time is p.lineNS, and two spaces.
func (p *Printer) appendTime(b []byte) []byte {
	if p.opts.Time == TimeNone || p.opts.Format != FormatText {
		return b
	}
	ns := p.lineNS
	n := len(b)
	switch {
	case ns == 0:
		b = append(b, '-')
	case p.opts.Time == TimeWall:
		t := time.Unix(0, ns)
		if p.opts.UTC {
			b = t.UTC().AppendFormat(b, "2006-01-02T15:04:05.000000Z")
		} else {
			b = t.Local().AppendFormat(b, "2006-01-02 15:04:05.000000")
		}
	case p.opts.Time == TimeUnix:
		b = strconv.AppendInt(b, ns/1e9, 10)
		b = append(b, '.')
		b = fmt.Appendf(b, "%09d", ns%1e9)
	case p.opts.Time == TimeSinceStart:
		b = appendSeconds(b, ns-p.startNS)
	case p.opts.Time == TimeDelta:
		if p.prevNS == 0 {
			b = appendSeconds(b, 0)
		} else {
			b = appendSeconds(b, ns-p.prevNS)
		}
	}
	w := timeWidth(p.opts.Time)
	if pad := w - (len(b) - n); pad > 0 && p.opts.Time == TimeWall {
		b = appendPad(b, pad)
	} else if pad > 0 {
		// right-align: move what was written
		b = append(b, make([]byte, pad)...)
		copy(b[n+pad:], b[n:len(b)-pad])
		for i := n; i < n+pad; i++ {
			b[i] = ' '
		}
	}
	return append(b, "  "...)
}

// timeWidth is the width of the time column of mode m.
func timeWidth(m TimeMode) int {
	switch m {
	case TimeWall:
		return 26
	case TimeUnix:
		return 20
	}
	return 11
}

// appendSeconds appends d nanoseconds as signed seconds with microseconds,
// "+12.345678".
func appendSeconds(b []byte, d int64) []byte {
	sign := byte('+')
	if d < 0 {
		sign, d = '-', -d
	}
	b = append(b, sign)
	b = strconv.AppendInt(b, d/1e9, 10)
	return fmt.Appendf(b, ".%06d", d%1e9/1e3)
}

// withText gives a JSON object of the per-line --json (b, ending in
// "}\n") a "text" member: what ds log shows of it after its columns, so
// that jq 'select(.text|test("FAIL"))' finds in every object what grep
// finds in ds log's lines. --json=frames objects have none but text
// frames'.
func (p *Printer) withText(b, msg []byte) []byte {
	if p.opts.JSONFrames || len(b) < 2 {
		return b
	}
	b = append(b[:len(b)-2], `,"text":`...)
	b, _ = appendJSONQuoted(b, msg)
	return append(b, "}\n"...)
}

// Loss messages, as the text format shows them after the columns and as
// the "text" of their --json objects.

func appendGapMsg(b []byte, g segments.Gap) []byte {
	b = appendPositions(b, g.From, g.To)
	b = append(b, " missing ("...)
	return appendCount(b, g.Count, "frame")
}

func appendStartMsg(b []byte, pos frames.Position) []byte {
	b = append(b, "starts at position "...)
	b = strconv.AppendUint(b, uint64(pos), 10)
	return append(b, ": earlier frames not in the input"...)
}

func appendTrimmedMsg(b []byte, from, to frames.Position) []byte {
	b = appendPositions(b, from, to)
	b = append(b, " after the cursor are no longer in the input ("...)
	return appendCount(b, uint64(to-from)+1, "frame")
}

func appendStoreTrimmedMsg(b []byte, from, to frames.Position) []byte {
	b = appendPositions(b, from, to)
	b = append(b, " trimmed from the store ("...)
	// Positions, not frames: what was stored below is not known here.
	return appendCount(b, uint64(to-from)+1, "position")
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
	b = strconv.AppendUint(b, d.Frames, 10)
	if d.Frames == 1 {
		b = append(b, " frame before position "...)
	} else {
		b = append(b, " frames before position "...)
	}
	b = strconv.AppendUint(b, uint64(d.Before), 10)
	b = append(b, " ("...)
	b = appendEscaped(b, []byte(d.Reason), true)
	return append(b, ')')
}

func appendDamageMsg(b []byte, file string, offset, end int64, torn bool, msg string) []byte {
	b = appendEscaped(b, []byte(file), true)
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
		b = appendEscaped(b, []byte(msg), true)
	}
	return b
}

// appendCount appends "N things)" ("1 thing)").
func appendCount(b []byte, n uint64, what string) []byte {
	b = strconv.AppendUint(b, n, 10)
	b = append(b, ' ')
	b = append(b, what...)
	if n != 1 {
		b = append(b, 's')
	}
	return append(b, ')')
}

// appendTimeJSON appends `,"time":"…"` for the clock reading ns (nothing
// for 0), formatting it once per reading: the lines and frames of a drain
// tick share it.
func (st *streamInfo) appendTimeJSON(b []byte, ns int64) []byte {
	if ns == 0 {
		return b
	}
	if st.timeNS != ns || len(st.timeJSON) == 0 {
		t := append(st.timeJSON[:0], `,"time":"`...)
		t = time.Unix(0, ns).UTC().AppendFormat(t, time.RFC3339Nano)
		st.timeJSON, st.timeNS = append(t, '"'), ns
	}
	return append(b, st.timeJSON...)
}

// jsonText prints one text line as a JSON object (FormatJSON without
// JSONFrames): the line's bytes exact, its newline included when it had
// one (p.lineNL), from its first frame's position to its last's
// (p.lineLast).
func (p *Printer) jsonText(st *streamInfo, ci *chanInfo, pos frames.Position, line []byte) {
	if p.sel.Grep != nil && !p.sel.Grep.Match(line) {
		return
	}
	b := append(p.line[:0], st.jsonHead...)
	b = append(b, `,"position":`...)
	b = strconv.AppendUint(b, uint64(pos), 10)
	b = append(b, `,"last_position":`...)
	b = strconv.AppendUint(b, uint64(max(p.lineLast, pos)), 10)
	b = append(b, ci.json...)
	n := len(b)
	b = append(b, `,"text":`...)
	var ok bool
	if p.lineNL {
		// The quoted line is closed after its newline is added.
		if b, ok = appendJSONQuoted(b, line); ok {
			b = append(b[:len(b)-1], `\n"`...)
		}
	} else {
		b, ok = appendJSONQuoted(b, line)
	}
	if !ok {
		raw := line
		if p.lineNL {
			raw = append(append(p.raw[:0], line...), '\n')
			p.raw = raw
		}
		b = append(b[:n], `,"bytes_b64":"`...)
		b = base64.StdEncoding.AppendEncode(b, raw)
		b = append(b, `","utf8":false`...)
	}
	if !p.lineNL {
		b = append(b, `,"partial":true`...)
	}
	b = st.appendTimeJSON(b, p.lineNS)
	b = append(b, "}\n"...)
	p.line = b
	p.write(b)
}

package views

import (
	"bytes"
	"github.com/ds-telemetry/ds/pkg/segments"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// This file holds the text format (FormatText): its columns,
//
//	[stream  ]position  [time  ]channel  text
//
// its styles when colours are on, and how a text line, a record and a
// loss line are written. What a line shows of a payload is escaped by
// the terminal rules (terminal.go).

// StreamColumnMode says when the text format leads each line with the
// stream (`node#life`).
type StreamColumnMode uint8

const (
	// StreamColumnAuto shows the column once the printer knows of more
	// than one stream.
	StreamColumnAuto StreamColumnMode = iota
	// StreamColumnAlways shows it on every line.
	StreamColumnAlways
	// StreamColumnNever never shows it.
	StreamColumnNever
)

// textLayout is the text format's layout: which columns show and how
// wide, the styles, and how a line holding CRs shows.
type textLayout struct {
	color      bool // LogOptions.Color
	crSegments bool // LogOptions.CRSegments
	mode       StreamColumnMode
	multi      bool // a stream column leads each line
	seen       int  // streams shown declared so far
	streamW    int  // width of the stream column
	nameW      int  // width of the channel column
	// short maps the streams the printer was told of up front (Expect)
	// to their stream column.
	short    map[frames.StreamID]string
	grepFrom int    // where the payload starts in the line being rendered, -1 for loss lines
	grepTo   int    // where it ends (before its mark and newline), -1 but for text lines
	col      []byte // scratch for the stream column
}

func newTextLayout(opts LogOptions) textLayout {
	return textLayout{
		color:      opts.Color,
		crSegments: opts.CRSegments,
		mode:       opts.StreamColumn,
		multi:      opts.StreamColumn == StreamColumnAlways,
		nameW:      16,
	}
}

// expect sets the stream column for the streams the inputs are known to
// hold (see [Printer.Expect]).
func (l *textLayout) expect(streams []frames.StreamID) {
	nodes := make(map[frames.NodeID]int, len(streams))
	for _, s := range streams {
		nodes[s.Node]++
	}
	l.short = make(map[frames.StreamID]string, len(streams))
	for _, s := range streams {
		col := s.String()
		if nodes[s.Node] == 1 && len(nodes) == len(streams) {
			col = string(s.Node)
		}
		l.short[s] = col
		l.streamW = max(l.streamW, nameWidth(col))
	}
	if len(streams) > 1 && l.mode == StreamColumnAuto {
		l.multi = true
	}
}

// addStream sets the stream column of a new stream st and widens the
// column for it; a second stream shown brings the column (in
// StreamColumnAuto) from then on.
func (l *textLayout) addStream(st *streamInfo) {
	st.col, st.colW = st.name, nameWidth(st.name)
	if c, ok := l.short[st.desc.Stream]; ok {
		st.col, st.colW = c, nameWidth(c)
	}
	l.streamW = max(l.streamW, st.colW)
	if !st.sel.hidden {
		l.seen++
	}
	if l.seen > 1 && l.mode == StreamColumnAuto {
		l.multi = true
	}
}

// addChannel widens the channel column for a new channel shown (visible)
// whose name is w runes wide (up to 40 runes).
func (l *textLayout) addChannel(visible bool, w int) {
	if visible && w > l.nameW && w <= 40 {
		l.nameW = w
	}
}

// A style is the SGR sequence that starts it; sgrReset ends it.
type style string

// The styles of ds log's text format when colours are on. They colour
// ds's own columns and loss lines only; a text line's own colours are the
// child's.
const (
	styleNone      style = ""
	stylePosition  style = "\x1b[2m"    // the position column: dim
	styleStderr    style = "\x1b[31m"   // the channel column of a *.stderr channel: red
	styleLifecycle style = "\x1b[36m"   // the channel column of proc.*.lifecycle: cyan
	styleLoss      style = "\x1b[1;33m" // gap and drop lines: bold yellow
	styleDamage    style = "\x1b[1;31m" // damaged-range lines: bold red
	styleStart     style = "\x1b[2m"    // a stream's "starts at position" line: dim
)

// streamStyles colour the stream column, one per stream, chosen by a hash
// of its name so that a stream keeps its colour from run to run and input
// to input. Red is left to stderr and damage.
var streamStyles = [...]style{
	"\x1b[32m", "\x1b[33m", "\x1b[34m", "\x1b[35m", "\x1b[36m",
	"\x1b[92m", "\x1b[93m", "\x1b[94m", "\x1b[95m", "\x1b[96m",
}

// channelStyle returns the style of the channel column of channel name.
func channelStyle(name string) style {
	switch {
	case strings.HasSuffix(name, ".stderr"):
		return styleStderr
	case strings.HasPrefix(name, "proc.") && strings.HasSuffix(name, ".lifecycle"):
		return styleLifecycle
	}
	return styleNone
}

// streamStyle returns the style of the stream column of the stream named
// name (node#life).
func streamStyle(name string) style {
	h := uint32(2166136261) // FNV-1a
	for i := 0; i < len(name); i++ {
		h = (h ^ uint32(name[i])) * 16777619
	}
	return streamStyles[h%uint32(len(streamStyles))]
}

// on returns s when colours are on, nothing otherwise.
func (l *textLayout) on(s style) string {
	if l.color {
		return string(s)
	}
	return ""
}

// off returns what ends s: sgrReset when colours are on and s is a style.
func (l *textLayout) off(s style) string {
	if l.color && s != styleNone {
		return sgrReset
	}
	return ""
}

// appendStyled appends text in style s (when colours are on).
func (l *textLayout) appendStyled(b []byte, s style, text string) []byte {
	b = append(b, l.on(s)...)
	b = append(b, text...)
	return append(b, l.off(s)...)
}

// appendChannel appends the channel column of a line of ci: its name,
// escaped, in its style, padded to the column's width.
func (l *textLayout) appendChannel(b []byte, ci *chanInfo) []byte {
	s := styleNone
	if l.color {
		s = channelStyle(ci.name)
	}
	b = append(b, s...)
	b, w := appendName(b, ci.name, int(ci.width))
	b = append(b, l.off(s)...)
	return appendPad(b, l.nameW-w)
}

// appendStreamColumn appends the stream column of a line of st (nil: no
// stream, "-"), its column text escaped, in the stream's colour, which
// its full name chooses, padded to the column's width, and two spaces.
func (l *textLayout) appendStreamColumn(b []byte, st *streamInfo) []byte {
	if st == nil {
		return append(appendPad(append(b, '-'), l.streamW-1), "  "...)
	}
	s := styleNone
	if l.color {
		s = streamStyle(st.name)
	}
	b = append(b, s...)
	b, w := appendName(b, st.col, st.colW)
	b = append(b, l.off(s)...)
	return append(appendPad(b, l.streamW-w), "  "...)
}

// appendText appends a text line escaped for the output: with stopCR, only
// what precedes its first CR, returning false there. When colours are on
// its SGR sequences pass, and a line they leave with attributes changed
// ends with sgrReset.
func (l *textLayout) appendText(b, line []byte, stopCR bool) ([]byte, bool) {
	var flags escapeFlags
	if stopCR {
		flags |= stopAtCR
	}
	if l.color {
		flags |= passSGR
	}
	b, ok, dirty := appendTerminal(b, line, flags)
	if dirty && ok {
		b = append(b, sgrReset...)
	}
	return b, ok
}

// appendPrefix appends the position, time and channel columns of a line
// of channel id (ci nil: a channel without a descriptor, shown as #id),
// and notes where its text starts (for -g).
func (l *textLayout) appendPrefix(b []byte, tb *timebase, pos frames.Position, ci *chanInfo, id frames.ChannelID) []byte {
	n := decimalLen(uint64(pos))
	b = appendPad(b, 6-n) // right-aligned in 6 columns
	b = append(b, l.on(stylePosition)...)
	b = appendDecimal(b, uint64(pos), n)
	b = append(b, l.off(stylePosition)...)
	b = append(b, "  "...)
	b = tb.appendColumn(b)
	if ci != nil {
		b = l.appendChannel(b, ci) // escaped, styled, padded
	} else {
		n := len(b)
		b = append(b, '#')
		b = strconv.AppendUint(b, uint64(id), 10)
		b = appendPad(b, l.nameW-(len(b)-n))
	}
	b = append(b, "  "...)
	l.grepFrom, l.grepTo = len(b), -1
	return b
}

// appendLossPrefix appends the columns of a loss line (a gap, drop,
// transport loss, trim or start): mark ("~", or "!" for damage) where the
// position goes, the time column and what in the channel column, both in
// style s. -g does not apply to loss lines.
func (l *textLayout) appendLossPrefix(b []byte, tb *timebase, mark string, s style, what string) []byte {
	b = append(b, "     "...)
	b = l.appendStyled(b, s, mark)
	b = append(b, "  "...)
	b = tb.appendColumn(b)
	l.grepFrom, l.grepTo = -1, -1
	b = l.appendStyled(b, s, what)
	b = appendPad(b, l.nameW-utf8.RuneCountInString(what))
	return append(b, "  "...)
}

// out writes one text-format line of stream st (nil: no stream), unless
// -g hides it: a stream column leads it when the printer knows of more
// than one stream (LogOptions.StreamColumn).
func (p *Printer) out(st *streamInfo, line []byte) {
	if p.sel.Grep != nil && p.text.grepFrom >= 0 && p.text.grepFrom < len(line) {
		end := len(line) - 1
		if to := p.text.grepTo; to >= p.text.grepFrom && to < end {
			end = to
		}
		if !p.sel.Grep.Match(line[p.text.grepFrom:end]) {
			return
		}
	}
	p.clock.printed()
	if p.text.multi {
		p.text.col = p.text.appendStreamColumn(p.text.col[:0], st) // escaped, coloured, padded
		p.write(p.text.col)
	}
	p.write(line)
}

// lineMark is the text format's mark of a line printed in pieces: it ends
// a line printed before its newline (an unfinished line: the stream ended
// without it, or something of another channel of the stream, a 1 MiB
// piece or a quiet live input made the printer print it first), and it
// starts the row that continues such a line. --cat has no marks; --json
// says "partial" and "continues".
const lineMark = "…"

// printText prints one text line as it is (in FormatJSON, as an object),
// marked when it is unfinished or continues one (see lineMark).
func (p *Printer) printText(st *streamInfo, ci *chanInfo, sp lineSpan, line []byte) {
	if p.format == FormatJSON {
		p.jsonText(st, ci, sp, line)
		return
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1] // CRLF is a line end
	}
	p.line = p.textHead(sp.pos, ci, sp.cont)
	if b, ok := p.text.appendText(p.line, line, true); ok {
		p.line = p.textEnd(st, b, sp.nl)
		return
	}
	// The line holds CRs (b stopped at the first).
	if p.text.crSegments {
		head := sp.cont
		for {
			i := bytes.IndexByte(line, '\r')
			if i < 0 {
				break
			}
			p.textSegment(st, ci, sp.pos, line[:i], head, true)
			head = false
			line = line[i+1:]
		}
		p.textSegment(st, ci, sp.pos, line, head, sp.nl)
		return
	}
	// A terminal shows the last segment written over the others: the
	// last that is not empty. One after a CR does not continue what the
	// row continues: it overwrites it.
	cont := sp.cont
	for {
		i := bytes.LastIndexByte(line, '\r')
		if i < 0 || i+1 < len(line) {
			cont = cont && i < 0
			line = line[i+1:]
			break
		}
		line = line[:i]
	}
	p.textSegment(st, ci, sp.pos, line, cont, sp.nl)
}

// textSegment prints one segment of a text line, without CRs: with cont,
// after the mark of a continued line; without nl, before that of an
// unfinished one.
func (p *Printer) textSegment(st *streamInfo, ci *chanInfo, pos frames.Position, line []byte, cont, nl bool) {
	p.line = p.textHead(pos, ci, cont)
	p.line, _ = p.text.appendText(p.line, line, false)
	p.line = p.textEnd(st, p.line, nl)
}

// textHead starts p.line with the columns of a text line at pos of
// channel ci and, when cont, the mark of a continued line (which -g does
// not see).
func (p *Printer) textHead(pos frames.Position, ci *chanInfo, cont bool) []byte {
	b := p.text.appendPrefix(p.line[:0], &p.clock, pos, ci, ci.id)
	if cont {
		b = p.text.appendStyled(b, stylePosition, lineMark)
		p.text.grepFrom = len(b)
	}
	return b
}

// textEnd ends the text line b, with the mark of an unfinished line
// unless nl (which -g does not see), and prints it; it returns the line.
func (p *Printer) textEnd(st *streamInfo, b []byte, nl bool) []byte {
	p.text.grepTo = len(b)
	if !nl {
		b = p.text.appendStyled(b, stylePosition, lineMark)
	}
	b = append(b, '\n')
	p.out(st, b)
	return b
}

// textRecord prints frame f of channel ci (nil: one without a descriptor)
// whole, on one line: a record as compact JSON, bytes escaped, and a late
// or conflicting frame of any channel with its note.
func (p *Printer) textRecord(st *streamInfo, ci *chanInfo, kind segments.ItemKind, f *frames.Frame) {
	note := ""
	switch kind {
	case segments.ItemConflict:
		note = "[conflict: another payload was stored first] "
	case segments.ItemLate:
		note = "[late] "
	}
	var except *partial
	if ci != nil {
		except = ci.line
	}
	p.cutBefore(st, f.Position, except)
	p.line = p.text.appendPrefix(p.line[:0], &p.clock, f.Position, ci, f.Channel)
	p.line = append(p.line, note...)
	ok := false
	if ci != nil && ci.kind == frames.KindJSONRecord {
		n := len(p.line)
		if p.line, ok = appendCompactJSON(p.line, f.Payload); ok {
			// JSON strings may hold bidi controls and C1 characters:
			// they never reach the terminal raw.
			p.line = appendTerminalSafe(p.line, n)
		}
	}
	if !ok {
		p.line = appendEscaped(p.line, f.Payload, true)
	}
	p.line = append(p.line, '\n')
	p.out(st, p.line)
}

// lossLine prints the text line of a note of stream st (nil: of an
// input): its columns (see appendLossPrefix) and msg, in style msgStyle.
// msg may be p.msg.
func (p *Printer) lossLine(st *streamInfo, mark string, s style, what string, msgStyle style, msg []byte) {
	p.line = p.text.appendLossPrefix(p.line[:0], &p.clock, mark, s, what)
	p.line = append(p.line, p.text.on(msgStyle)...)
	p.line = append(p.line, msg...)
	p.line = append(p.line, p.text.off(msgStyle)...)
	p.line = append(p.line, '\n')
	p.out(st, p.line)
}

// decimalLen returns the number of decimal digits of v.
func decimalLen(v uint64) int {
	n := 1
	for ; v >= 10000; v /= 10000 {
		n += 4
	}
	for ; v >= 10; v /= 10 {
		n++
	}
	return n
}

const decimalPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899"

// appendDecimal appends v, of n = decimalLen(v) digits, in decimal (as
// strconv.AppendUint does, without its copy).
func appendDecimal(b []byte, v uint64, n int) []byte {
	b = append(b, spaces[:n]...)
	d := b[len(b)-n:]
	i := n
	for v >= 100 {
		r := v % 100 * 2
		v /= 100
		d[i-1], d[i-2] = decimalPairs[r+1], decimalPairs[r]
		i -= 2
	}
	if v >= 10 {
		d[i-1], d[i-2] = decimalPairs[v*2+1], decimalPairs[v*2]
	} else {
		d[i-1] = byte('0' + v)
	}
	return b
}

const spaces = "                                                                "

// appendPad appends n spaces (none if n ≤ 0).
func appendPad(b []byte, n int) []byte {
	for n > len(spaces) {
		b = append(b, spaces...)
		n -= len(spaces)
	}
	if n > 0 {
		b = append(b, spaces[:n]...)
	}
	return b
}

// appendPadded appends s, padded with spaces to w runes.
func appendPadded(b []byte, s string, w int) []byte {
	return appendPad(append(b, s...), w-utf8.RuneCountInString(s))
}

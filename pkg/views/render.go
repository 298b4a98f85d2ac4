package views

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/base64"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// LogFormat selects how [Log] prints frames.
type LogFormat uint8

const (
	// FormatText prints one line per text line with stable, greppable
	// columns: [stream] position channel text (DESIGN.md §5).
	FormatText LogFormat = iota
	// FormatCat prints payload bytes only, byte-exact: no gap, drop or
	// transport loss lines ([Printer.Losses] counts them).
	FormatCat
	// FormatJSON prints one JSON object per frame, gap, drop, transport
	// loss and damaged range (newline-delimited, lossless). A frame's "time" is its
	// stream's latest datastream.clock reading before it (see the package
	// doc).
	FormatJSON
)

// LogOptions configures [Log] and [NewPrinter].
type LogOptions struct {
	Format LogFormat
	// Channels selects channels by descriptor (exact name or prefix, see
	// frames.ParseChannelPattern); empty means every channel. Frames whose
	// channel has no descriptor match only when Channels is empty. Gaps,
	// drops and transport losses concern the whole stream and are shown
	// whatever Channels says.
	Channels []frames.ChannelFilter
	// All shows the writer's own datastream.* channels, which are hidden
	// unless All is set or Channels names them.
	All bool
	// CRSegments shows every carriage-return-separated segment of a text
	// line on its own line; by default a line renders as a terminal shows
	// it, the last segment winning.
	CRSegments bool
	// Color colours the text format for a terminal (ds log --color): a
	// text line's own SGR sequences pass, and ds's columns and loss lines
	// are styled (see terminal.go). Off, every escape sequence is shown
	// escaped. FormatJSON and FormatCat are never coloured.
	Color bool
	// Window is the assembler's reorder window per stream, in bytes (0:
	// DefaultWindow; see AssemblerOptions).
	Window int
	// Follow keeps reading inputs that grow (tail -f).
	Follow bool
	// StreamColumn fixes the stream column of the text format:
	// StreamColumnAuto (the default) shows it from the first line on when
	// the inputs hold more than one stream, as far as the printer can know
	// up front (see [Printer.Streams]), and from the first line of a
	// second stream on otherwise; lines are never held back to decide.
	StreamColumn StreamColumnMode
	// Select is what is shown (the shared filters); Channels above adds
	// to Select.Channels.
	Select Selection
	// Time adds a time column to the text format (--time).
	Time TimeMode
	// UTC shows wall-clock times in UTC instead of the local time zone.
	UTC bool
	// JSONFrames makes FormatJSON print one object per frame of a text
	// channel (--json=frames); by default it prints one per text line,
	// joined across frames as the text format joins them.
	JSONFrames bool
}

// TimeMode selects the time column of the text format. A line's time is
// its stream's latest datastream.clock reading at or before the frame the
// line started in (see the package doc); a line before any reading shows
// "-".
type TimeMode uint8

const (
	// TimeNone shows no time column.
	TimeNone TimeMode = iota
	// TimeWall shows the wall clock, "2006-01-02 15:04:05.000000" in the
	// local time zone, or RFC 3339 with a Z in UTC (LogOptions.UTC).
	TimeWall
	// TimeSinceStart shows seconds since the start of the inputs (their
	// first clock reading the printer saw), "+12.345678".
	TimeSinceStart
	// TimeDelta shows seconds since the previous line printed, to find
	// stalls, "+0.000123".
	TimeDelta
	// TimeUnix shows Unix seconds with nanoseconds, "1764584035.123456789".
	TimeUnix
)

// ParseTimeMode parses a --time value: wall (or an empty value), utc,
// since-start, delta, unix.
func ParseTimeMode(s string) (mode TimeMode, utc bool, err error) {
	switch s {
	case "", "wall", "local":
		return TimeWall, false, nil
	case "utc":
		return TimeWall, true, nil
	case "since-start", "start":
		return TimeSinceStart, false, nil
	case "delta":
		return TimeDelta, false, nil
	case "unix":
		return TimeUnix, false, nil
	case "none":
		return TimeNone, false, nil
	}
	return 0, false, fmt.Errorf("--time=%s: want wall, utc, since-start, delta, unix or none", s)
}

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

// maxLine bounds how much of one unfinished text line a printer holds per
// channel; a longer line is printed in pieces of this size.
const maxLine = 1 << 20

// partial is the unfinished line held for one text channel of a stream.
type partial struct {
	st   *streamInfo
	ch   *chanInfo
	pos  frames.Position
	last frames.Position // the position of the last frame joined
	ns   int64           // the stream's clock reading when the line started
	buf  []byte
	// cut is set when the line was printed unfinished (another line of
	// the stream had to come after it, or it reached maxLine): the rest of
	// it, up to its newline, is printed as a line of its own unless empty.
	cut bool
}

// chanInfo is what a printer knows of one declared channel, decided once
// when its (first) descriptor arrives, so that rendering a frame needs no
// map lookup or string building.
type chanInfo struct {
	desc    frames.ChannelDescriptor
	width   int  // desc.Name in runes, for the channel column
	visible bool // the filter decision
	kind    frames.ContentKind
	json    []byte   // `,"channel":NAME,"channel_id":ID,"content":KIND` (FormatJSON)
	line    *partial // the held unfinished line, once there was one
}

// maxSmallChannel bounds the channel ids a stream keeps in a slice indexed
// by id (registration hands out 1, 2, 3, …); larger ids, which an input
// may hold, live in a map.
const maxSmallChannel = 256

type streamInfo struct {
	desc     frames.StreamDescriptor
	name     string // desc.Stream.String()
	nameW    int    // name in runes
	jsonHead []byte // `{"stream":…,"node":…,"life":N` (FormatJSON)
	chans    []*chanInfo
	big      map[frames.ChannelID]*chanInfo // ids ≥ maxSmallChannel
	clockID  frames.ChannelID               // datastream.clock, 0 if undeclared
	clockNS  int64                          // latest clock reading, 0 if none yet
	timeNS   int64                          // the reading timeJSON shows
	timeJSON []byte                         // `,"time":"…"` of timeNS

	healthID  frames.ChannelID // datastream.health, if hasHealth
	hasHealth bool
	transpID  frames.ChannelID // datastream.transport, if hasTransp
	hasTransp bool
	fromStart bool   // position 0 was printed: the stream is seen from its start
	hidden    bool   // the stream filters hide it
	col       string // the stream column's text: name, or a shorter unambiguous form
	colW      int    // col in runes
	consumed  bool   // cursor is set
	cursor    frames.Position
	after     frames.Position // Select.After's entry for the stream, if hasAfter
	hasAfter  bool
	checked   bool       // checkTrimmed has looked at its first position
	untimed   bool       // it had no clock reading when --since/--until needed one
	lines     []*partial // the partial lines of its channels, in the order they were opened
	drops     dropTracker
}

func newStreamInfo(d frames.StreamDescriptor, format LogFormat) *streamInfo {
	st := &streamInfo{desc: d, name: d.Stream.String()}
	st.nameW = utf8.RuneCountInString(st.name)
	if format == FormatJSON {
		b := append([]byte(nil), `{"stream":`...)
		b = appendJSONString(b, st.name)
		b = append(b, `,"node":`...)
		b = appendJSONString(b, d.Stream.Node)
		b = append(b, `,"life":`...)
		st.jsonHead = strconv.AppendUint(b, uint64(d.Stream.Life), 10)
	}
	return st
}

// channel returns what is known of channel id, nil if it has no
// descriptor.
func (st *streamInfo) channel(id frames.ChannelID) *chanInfo {
	if uint64(id) < uint64(len(st.chans)) {
		return st.chans[id]
	}
	if id < maxSmallChannel {
		return nil
	}
	return st.big[id]
}

func (st *streamInfo) setChannel(id frames.ChannelID, ci *chanInfo) {
	if id >= maxSmallChannel {
		if st.big == nil {
			st.big = make(map[frames.ChannelID]*chanInfo)
		}
		st.big[id] = ci
		return
	}
	if int(id) >= len(st.chans) {
		st.chans = append(st.chans, make([]*chanInfo, int(id)+1-len(st.chans))...)
	}
	st.chans[id] = ci
}

// Printer renders assembled items for ds log. Feed it descriptors as they
// are read ([Printer.Stream], [Printer.Channel]), then items in order
// ([Printer.Item]) and damaged ranges ([Printer.Damage]); Close flushes
// unfinished lines. It decodes payloads only to render them: a payload it
// cannot decode is shown raw (spec §8.3). Write errors are sticky and
// returned by Close.
type Printer struct {
	opts    LogOptions
	w       *bufio.Writer
	streams map[frames.StreamID]*streamInfo
	last    *streamInfo // the stream of the previous item, to skip the map lookup
	pending []*partial  // partial lines, in the order they were opened
	// unknownVisible is the filter decision for channels without a
	// descriptor: shown only when no channel is selected.
	unknownVisible bool

	multi   bool // a stream column leads each line (text format)
	seen    int  // streams declared so far
	streamW int  // width of the stream column
	sel     Selection
	// short maps the streams the printer was told of up front (Expect)
	// to their stream column.
	short map[frames.StreamID]string
	// unmatched counts, per filter of sel that names something, whether
	// anything in the inputs matched it (see Unmatched).
	matched  []bool
	startNS  int64 // the first clock reading seen: the start of the inputs
	prevNS   int64 // the time of the previous line printed (TimeDelta)
	lineNS   int64 // the time of the line being rendered
	lineLast frames.Position
	lineNL   bool // the text line being rendered ended with a newline
	grepFrom int  // where the payload starts in p.line, -1 for loss lines
	untimed  []frames.StreamID
	cursors  Cursor // the cursors of streams forgotten
	holes    Cursor // per stream, the first position of its first gap past the cursor
	raw      []byte // scratch for jsonText
	msg      []byte // scratch for loss messages
	nameW    int    // width of the channel column
	line     []byte
	col      []byte // the stream column
	losses   Losses
	err      error
}

// NewPrinter returns a printer writing to w.
func NewPrinter(w io.Writer, opts LogOptions) *Printer {
	sel := opts.Select
	sel.Channels = append(slices.Clip(sel.Channels), opts.Channels...)
	p := &Printer{
		opts:           opts,
		sel:            sel,
		w:              bufio.NewWriterSize(w, 256<<10),
		streams:        make(map[frames.StreamID]*streamInfo),
		unknownVisible: len(sel.Channels) == 0 && len(sel.Contents) == 0,
		nameW:          16,
		multi:          opts.StreamColumn == StreamColumnAlways,
		cursors:        Cursor{},
	}
	p.matched = make([]bool, len(sel.Channels)+len(sel.Contents)+len(sel.Nodes)+len(sel.Streams)+len(sel.Origins))
	for id, pos := range sel.After {
		p.cursors[id] = pos
	}
	return p
}

// Expect tells the printer, before the first item, which streams the
// inputs hold (as far as the caller could find out, e.g. from the segment
// headers of files): with more than one, the stream column (in
// StreamColumnAuto) leads every line from the first on, as wide as the
// widest, and shows a stream's node alone when no other stream expected
// has the same node.
func (p *Printer) Expect(streams []frames.StreamID) {
	// Streams the stream filters hide do not count (origin is not known
	// from an id: --origin is decided when the descriptor comes).
	streams = slices.DeleteFunc(slices.Clone(streams), func(s frames.StreamID) bool {
		return !p.sel.streamVisible(frames.StreamDescriptor{Stream: s}) && len(p.sel.Origins) == 0
	})
	nodes := make(map[frames.NodeID]int, len(streams))
	for _, s := range streams {
		nodes[s.Node]++
	}
	p.short = make(map[frames.StreamID]string, len(streams))
	for _, s := range streams {
		col := s.String()
		if nodes[s.Node] == 1 && len(nodes) == len(streams) {
			col = string(s.Node)
		}
		p.short[s] = col
		p.streamW = max(p.streamW, nameWidth(col))
	}
	if len(streams) > 1 && p.opts.StreamColumn == StreamColumnAuto {
		p.multi = true
	}
}

// Stream records a stream descriptor (from a segment header).
func (p *Printer) Stream(d frames.StreamDescriptor) {
	if st := p.streams[d.Stream]; st != nil {
		st.desc = d
		st.hidden = !p.sel.streamVisible(d)
		p.matchStream(d)
		return
	}
	st := newStreamInfo(d, p.opts.Format)
	st.col, st.colW = st.name, nameWidth(st.name)
	if c, ok := p.short[d.Stream]; ok {
		st.col, st.colW = c, nameWidth(c)
	}
	p.streamW = max(p.streamW, st.colW)
	st.hidden = !p.sel.streamVisible(d)
	p.matchStream(d)
	if a, ok := p.sel.After[d.Stream]; ok {
		st.after, st.hasAfter = a, true
	}
	p.streams[d.Stream] = st
	if !st.hidden {
		p.seen++
	}
	if p.seen > 1 && p.opts.StreamColumn == StreamColumnAuto {
		p.multi = true // a second stream: the column from now on
	}
}

// Channel records a channel descriptor (from a segment header or a
// ChannelDeclared record). The first descriptor for an id wins.
func (p *Printer) Channel(d frames.ChannelDescriptor) {
	st := p.stream(d.Stream)
	if st.channel(d.ID) != nil {
		return
	}
	ci := &chanInfo{desc: d, width: nameWidth(d.Name), visible: p.isVisible(d), kind: d.Content.Kind}
	if !st.hidden {
		p.matchChannel(d)
	}
	if p.opts.Format == FormatJSON {
		b := append([]byte(nil), `,"channel":`...)
		b = appendJSONString(b, d.Name)
		b = append(b, `,"channel_id":`...)
		b = strconv.AppendUint(b, uint64(d.ID), 10)
		b = append(b, `,"content":`...)
		ci.json = appendJSONString(b, d.Content.Kind.String())
	}
	st.setChannel(d.ID, ci)
	switch d.Name {
	case frames.ClockChannel:
		st.clockID = d.ID
	case frames.HealthChannel:
		st.healthID, st.hasHealth = d.ID, true
	case frames.TransportChannel:
		st.transpID, st.hasTransp = d.ID, true
	}
	if ci.visible && ci.width > p.nameW && ci.width <= 40 {
		p.nameW = ci.width
	}
}

func (p *Printer) stream(s frames.StreamID) *streamInfo {
	if st := p.last; st != nil && st.desc.Stream == s {
		return st
	}
	st := p.streams[s]
	if st == nil {
		p.Stream(frames.StreamDescriptor{Stream: s})
		st = p.streams[s]
	}
	p.last = st
	return st
}

// isVisible is the filter decision for a channel with descriptor d (see
// unknownVisible for one without).
func (p *Printer) isVisible(d frames.ChannelDescriptor) bool {
	if selected, ok := p.sel.channelSelected(d); ok {
		if len(p.sel.Channels) == 0 && !p.opts.All && strings.HasPrefix(d.Name, "datastream.") {
			return false // --content alone does not name the writer's own channels
		}
		return selected
	}
	switch {
	case p.opts.All:
		return true
	}
	return !strings.HasPrefix(d.Name, "datastream.")
}

// Item renders one assembled item. A datastream.health record that
// reports refused submissions (see [Drop]) is preceded by a drop line,
// and a datastream.transport record that reports positions an output did
// not deliver (see [TransportLoss]) by a "lost" line, whatever the
// channel filter: a loss concerns the whole stream.
func (p *Printer) Item(it segments.Item) {
	if p.err != nil {
		return
	}
	st := p.stream(it.Stream)
	if st.hidden {
		return
	}
	if st.hasAfter && !st.checked {
		switch it.Kind {
		case segments.ItemGap:
			p.checkTrimmed(st, it.Gap.From)
		case segments.ItemFrame, segments.ItemLate, segments.ItemConflict:
			p.checkTrimmed(st, it.Frame.Position)
		}
	}
	switch it.Kind {
	case segments.ItemGap:
		if _, seen := p.holes[it.Stream]; !seen && (!st.hasAfter || it.Gap.To > st.after) {
			if p.holes == nil {
				p.holes = Cursor{}
			}
			p.holes[it.Stream] = max(it.Gap.From, st.after+1)
		}
		g, ok := p.clipGap(st, it.Gap)
		if !ok {
			return
		}
		p.losses.Gaps++
		p.losses.MissingFrames += g.Count
		p.lineNS = st.clockNS
		p.gap(st, g)
		return
	case segments.ItemStart:
		p.startItem(st, it.Frame.Position)
		return
	case segments.ItemTrimmed:
		p.storeTrimmed(st, it.Gap.From, it.Gap.To)
		return
	}
	f := &it.Frame
	if it.Kind == segments.ItemFrame && f.Position == 0 {
		st.fromStart = true
	}
	if f.Channel == st.clockID && st.clockID != 0 && it.Kind == segments.ItemFrame {
		if ns, ok := decodeClock(f.Payload); ok && ns > 0 {
			st.clockNS = ns
			if st.untimed {
				p.timed(st)
			}
			if p.startNS == 0 {
				p.startNS = ns
			}
		}
	}
	show := p.shows(st, f.Position)
	if it.Kind == segments.ItemFrame && (!st.consumed || f.Position > st.cursor) && !p.beyond(st, f.Position) {
		st.cursor, st.consumed = f.Position, true
	}
	p.lineNS = st.clockNS
	if st.hasHealth && f.Channel == st.healthID && it.Kind != segments.ItemConflict {
		if d, ok := st.drops.health(f.Position, f.Payload, st.fromStart, it.Kind == segments.ItemLate); ok && show {
			p.losses.Drops++
			p.losses.DroppedFrames += d.Frames
			p.drop(st, d)
		}
	}
	if st.hasTransp && f.Channel == st.transpID && it.Kind != segments.ItemConflict && show {
		if t, ok := decodeTransport(f.Payload); ok {
			p.losses.Transport++
			p.losses.UndeliveredFrames += t.Frames
			p.transport(st, f.Position, &t)
		}
	}
	if !show {
		return
	}
	ci := st.channel(f.Channel)
	if ci == nil && !p.unknownVisible || ci != nil && !ci.visible {
		return
	}
	switch p.opts.Format {
	case FormatCat:
		if len(p.sel.Channels)+len(p.sel.Contents) > 0 || ci != nil && ci.kind == frames.KindTextStream {
			p.write(f.Payload)
		}
	case FormatJSON:
		if !p.opts.JSONFrames && ci != nil && ci.kind == frames.KindTextStream && it.Kind == segments.ItemFrame {
			p.textFrame(st, ci, it.Kind, f)
			return
		}
		p.jsonFrame(st, ci, it.Kind, f)
	default:
		p.textFrame(st, ci, it.Kind, f)
	}
}

// decodeClock returns the UnixNS of a datastream.clock record, and whether
// it decodes. The form the writer writes, {"unix_ns":N,"mono_ns":M} with
// integers, is read here; any other goes through frames.DecodeRecord, so
// that the result is always DecodeRecord's.
func decodeClock(payload []byte) (int64, bool) {
	const head, mid = `{"unix_ns":`, `,"mono_ns":`
	rest, ok := bytes.CutPrefix(payload, []byte(head))
	var unix int64
	if ok {
		unix, rest, ok = cutJSONInt(rest)
	}
	if ok {
		rest, ok = bytes.CutPrefix(rest, []byte(mid))
	}
	if ok {
		_, rest, ok = cutJSONInt(rest)
	}
	if ok && len(rest) == 1 && rest[0] == '}' {
		return unix, true
	}
	c, err := frames.DecodeRecord(payload, frames.ClockRecord{})
	return c.UnixNS, err == nil
}

// cutJSONInt reads a JSON integer (no fraction or exponent) that fits an
// int64 from the start of b and returns it and the rest of b.
func cutJSONInt(b []byte) (int64, []byte, bool) {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	j := i
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	if j == i || b[i] == '0' && j > i+1 || j-i > 19 {
		return 0, nil, false
	}
	n, err := strconv.ParseInt(string(b[:j]), 10, 64)
	return n, b[j:], err == nil
}

// Damage renders a damaged byte range [offset, end) of file, or a torn tail
// when torn is set.
func (p *Printer) Damage(file string, offset, end int64, torn bool, err error) {
	if p.err != nil {
		return
	}
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	switch p.opts.Format {
	case FormatCat:
		return
	case FormatJSON:
		p.line = append(p.line[:0], `{"damage":{"file":`...)
		p.line = appendJSONString(p.line, file)
		p.line = append(p.line, `,"offset":`...)
		p.line = strconv.AppendInt(p.line, offset, 10)
		p.line = append(p.line, `,"end":`...)
		p.line = strconv.AppendInt(p.line, end, 10)
		p.line = append(p.line, `,"torn_tail":`...)
		p.line = strconv.AppendBool(p.line, torn)
		p.line = append(p.line, `,"error":`...)
		p.line = appendJSONString(p.line, msg)
		p.line = append(p.line, "}}\n"...)
		p.line = p.withText(p.line, appendDamageMsg(p.msg[:0], file, offset, end, torn, msg))
	default:
		p.line = append(p.line[:0], "     "...)
		p.line = p.appendStyled(p.line, styleDamage, "!")
		p.line = append(p.line, "  "...)
		p.line = p.appendTime(p.line)
		p.grepFrom = -1
		p.line = p.appendStyled(p.line, styleDamage, "damage")
		p.line = appendPad(p.line, p.nameW-len("damage"))
		p.line = append(p.line, "  "...)
		p.line = append(p.line, p.on(styleDamage)...)
		p.line = appendDamageMsg(p.line, file, offset, end, torn, msg)
		p.line = append(p.line, p.off(styleDamage)...)
		p.line = append(p.line, '\n')
		p.out(nil, p.line)
		return
	}
	p.write(p.line)
}

// Losses returns what the printer has seen so far of gaps and drops, over
// every stream and channel, whether or not its format shows them (--cat
// does not).
func (p *Printer) Losses() Losses { return p.losses }

// EndStream prints the unfinished lines of stream s, as they are, in the
// order they started: nothing can complete them once the stream has ended;
// then the printer forgets the stream.
func (p *Printer) EndStream(s frames.StreamID) {
	st := p.streams[s]
	if st == nil {
		return
	}
	keep := p.pending[:0]
	for _, pl := range p.pending {
		if pl.st != st {
			keep = append(keep, pl)
			continue
		}
		p.flushPartial(pl)
		pl.ch.line = nil
	}
	clear(p.pending[len(keep):])
	p.pending = keep
	st.lines = nil
	// Nothing is left to print of it: forget it, so that a capture of very
	// many streams costs memory for the live ones only (its cursor
	// excepted). A later copy of the stream comes with its header, which
	// declares it again.
	p.forget(st)
	delete(p.streams, s)
	if p.last == st {
		p.last = nil
	}
}

// Close prints unfinished lines and flushes the output.
func (p *Printer) Close() error {
	for _, pl := range p.pending {
		p.flushPartial(pl)
	}
	for _, pl := range p.pending {
		pl.ch.line, pl.st.lines = nil, nil
	}
	p.pending = nil
	if p.err == nil {
		p.err = p.w.Flush()
	}
	return p.err
}

// FlushPartials prints the unfinished lines held so far, as they are (a
// live input that has been quiet for a while: its last line is shown
// before its newline arrives); the rest of such a line, when it comes, is
// printed as a line of its own. It does not flush the output.
func (p *Printer) FlushPartials() {
	for _, pl := range p.pending {
		p.flushPartial(pl)
	}
}

// Flush writes buffered output without closing unfinished lines (the
// columns are fixed by the streams seen so far).
func (p *Printer) Flush() error {
	if p.err == nil {
		p.err = p.w.Flush()
	}
	return p.err
}

func (p *Printer) write(b []byte) {
	if p.err == nil {
		_, p.err = p.w.Write(b)
	}
}

// out writes one text-format line of stream st (nil: no stream), unless
// -g hides it: a stream column leads it when the printer knows of more
// than one stream (LogOptions.StreamColumn).
func (p *Printer) out(st *streamInfo, line []byte) {
	if p.sel.Grep != nil && p.grepFrom >= 0 && p.grepFrom < len(line) && !p.sel.Grep.Match(line[p.grepFrom:len(line)-1]) {
		return
	}
	p.prevNS = p.lineNS
	if p.multi {
		if st != nil {
			p.col = p.appendStreamColumn(p.col[:0], st) // escaped, coloured, padded
		} else {
			p.col = appendPad(append(p.col[:0], '-'), p.streamW-1)
		}
		p.col = append(p.col, "  "...)
		p.write(p.col)
	}
	p.write(line)
}

// prefix starts p.line with the position and channel columns of a line of
// channel id (ci nil: a channel without a descriptor, shown as #id).
func (p *Printer) prefix(pos frames.Position, ci *chanInfo, id frames.ChannelID) {
	n := decimalLen(uint64(pos))
	p.line = appendPad(p.line[:0], 6-n) // right-aligned in 6 columns
	p.line = append(p.line, p.on(stylePosition)...)
	p.line = appendDecimal(p.line, uint64(pos), n)
	p.line = append(p.line, p.off(stylePosition)...)
	p.line = append(p.line, "  "...)
	p.line = p.appendTime(p.line)
	if ci != nil {
		p.line = p.appendChannel(p.line, ci) // escaped, styled, padded
	} else {
		n := len(p.line)
		p.line = append(p.line, '#')
		p.line = strconv.AppendUint(p.line, uint64(id), 10)
		p.line = appendPad(p.line, p.nameW-(len(p.line)-n))
	}
	p.line = append(p.line, "  "...)
	p.grepFrom = len(p.line)
}

// lossPrefix starts p.line with the columns of a gap, drop or transport
// loss line.
func (p *Printer) lossPrefix(what string) {
	p.line = append(p.line[:0], "     "...)
	p.line = p.appendStyled(p.line, lossStyle(what), "~")
	p.line = append(p.line, "  "...)
	p.line = p.appendTime(p.line)
	p.grepFrom = -1
	p.line = p.appendStyled(p.line, lossStyle(what), what)
	p.line = appendPad(p.line, p.nameW-utf8.RuneCountInString(what))
	p.line = append(p.line, "  "...)
}

// lossLine prints the text line of a loss of stream st: "~", the time
// column, what (gap, dropped, lost) in the name column, and msg, styled.
// msg may be p.msg.
func (p *Printer) lossLine(st *streamInfo, what string, msg []byte) {
	p.lossPrefix(what)
	p.line = append(p.line, p.on(styleLoss)...)
	p.line = append(p.line, msg...)
	p.line = append(p.line, p.off(styleLoss)...)
	p.line = append(p.line, '\n')
	p.out(st, p.line)
}

func (p *Printer) gap(st *streamInfo, g segments.Gap) {
	switch p.opts.Format {
	case FormatCat:
		return
	case FormatJSON:
		if !p.opts.JSONFrames {
			p.cutBefore(st, g.From, nil)
		}
		p.line = append(p.line[:0], st.jsonHead...)
		p.line = append(p.line, `,"gap":{"from":`...)
		p.line = strconv.AppendUint(p.line, uint64(g.From), 10)
		p.line = append(p.line, `,"to":`...)
		p.line = strconv.AppendUint(p.line, uint64(g.To), 10)
		p.line = append(p.line, `,"count":`...)
		p.line = strconv.AppendUint(p.line, g.Count, 10)
		p.line = append(p.line, "}}\n"...)
		p.line = p.withText(p.line, appendGapMsg(p.msg[:0], g))
	default:
		p.cutBefore(st, g.From, nil)
		p.lossLine(st, "gap", appendGapMsg(p.msg[:0], g))
		return
	}
	p.write(p.line)
}

// start shows that a stream's frames before position pos are not in the
// input (it was cut off at its start, or is the end of a longer capture):
// not a loss, and not counted as one.
func (p *Printer) start(st *streamInfo, pos frames.Position) {
	switch p.opts.Format {
	case FormatCat:
		return
	case FormatJSON:
		p.line = append(p.line[:0], st.jsonHead...)
		p.line = append(p.line, `,"start":{"position":`...)
		p.line = strconv.AppendUint(p.line, uint64(pos), 10)
		p.line = append(p.line, "}}\n"...)
		p.line = p.withText(p.line, appendStartMsg(p.msg[:0], pos))
		p.write(p.line)
	default:
		p.lossPrefix("start")
		p.line = appendStartMsg(p.line, pos)
		p.line = append(p.line, '\n')
		p.out(st, p.line)
	}
}

// drop shows submissions refused before position d.Before, in place.
func (p *Printer) drop(st *streamInfo, d Drop) {
	switch p.opts.Format {
	case FormatCat:
		return
	case FormatJSON:
		if !p.opts.JSONFrames {
			p.cutBefore(st, d.Before, nil)
		}
		p.line = append(p.line[:0], st.jsonHead...)
		p.line = append(p.line, `,"dropped":{"before":`...)
		p.line = strconv.AppendUint(p.line, uint64(d.Before), 10)
		p.line = append(p.line, `,"frames":`...)
		p.line = strconv.AppendUint(p.line, d.Frames, 10)
		p.line = append(p.line, `,"bytes":`...)
		if d.Bytes != nil {
			p.line = strconv.AppendUint(p.line, *d.Bytes, 10)
		} else {
			p.line = append(p.line, "null"...)
		}
		p.line = append(p.line, `,"reason":`...)
		p.line = appendJSONString(p.line, d.Reason)
		p.line = append(p.line, "}}\n"...)
		p.line = p.withText(p.line, appendDropMsg(p.msg[:0], d))
		p.write(p.line)
	default:
		p.cutBefore(st, d.Before, nil)
		p.lossLine(st, "dropped", appendDropMsg(p.msg[:0], d))
	}
}

// cutBefore prints, as they are, the held partial lines of stream st that
// started before position pos (except the line except, if not nil), in the
// order they started. Joining a line split across frames must not reorder
// lines across the channels of a stream: whatever is printed at pos comes
// after them. The rest of a cut line is printed as a line of its own when
// it arrives (unless it is empty).
func (p *Printer) cutBefore(st *streamInfo, pos frames.Position, except *partial) {
	var some [8]*partial
	cut := some[:0]
	for _, pl := range st.lines {
		if pl != except && len(pl.buf) > 0 && pl.pos < pos {
			cut = append(cut, pl)
		}
	}
	if len(cut) > 1 {
		slices.SortFunc(cut, func(a, b *partial) int { return cmp.Compare(a.pos, b.pos) })
	}
	for _, pl := range cut {
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
	p.lineLast, p.lineNL, p.lineNS = pl.last, false, pl.ns
	if !pl.cut || !blankLine(pl.buf) || p.opts.Format == FormatJSON {
		p.printText(pl.st, pl.ch, pl.ch.desc.ID, pl.pos, pl.buf, "")
	}
	pl.buf, pl.cut = pl.buf[:0], true
}

// blankLine reports whether line is empty once a CRLF's CR is removed:
// the rest of a cut line that is only its line end is not printed.
func blankLine(line []byte) bool { return len(line) == 0 || len(line) == 1 && line[0] == '\r' }

func (p *Printer) textFrame(st *streamInfo, ci *chanInfo, kind segments.ItemKind, f *frames.Frame) {
	note := ""
	switch kind {
	case segments.ItemConflict:
		note = "[conflict: another payload was stored first] "
	case segments.ItemLate:
		note = "[late] "
	}
	if ci == nil || ci.kind != frames.KindTextStream || note != "" {
		// Records, bytes and frames of unknown channels are shown whole,
		// one line per frame.
		var except *partial
		if ci != nil {
			except = ci.line
		}
		p.cutBefore(st, f.Position, except)
		p.prefix(f.Position, ci, f.Channel)
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
		return
	}
	// Text: join frames of the channel until a newline, so a line split
	// across frames is shown once, whole, at the position it started,
	// unless a line of another channel of the stream has to be printed
	// after it first (see cutBefore).
	data := f.Payload
	pl := ci.line
	pos := f.Position
	if pl != nil && len(pl.buf) > 0 {
		pos = pl.pos
	}
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			if pl == nil {
				pl = &partial{st: st, ch: ci}
				ci.line = pl
				p.pending = append(p.pending, pl)
				st.lines = append(st.lines, pl)
			}
			if len(pl.buf) == 0 {
				pl.pos, pl.ns = pos, st.clockNS
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
		ns := st.clockNS
		if pl != nil {
			if len(pl.buf) > 0 {
				pl.buf = append(pl.buf, line...)
				line = pl.buf
				ns = pl.ns
			}
			cut, pl.cut = pl.cut, false
		}
		if !cut || !blankLine(line) || p.opts.Format == FormatJSON {
			// One text line, after the held partial lines of the
			// stream's other channels that started before it.
			p.cutBefore(st, pos, pl)
			p.lineLast, p.lineNL, p.lineNS = f.Position, true, ns
			p.printText(st, ci, f.Channel, pos, line, "")
		}
		if pl != nil {
			pl.buf = pl.buf[:0]
		}
		data = data[i+1:]
		pos = f.Position
	}
}

// printText prints one text line as it is.
func (p *Printer) printText(st *streamInfo, ci *chanInfo, id frames.ChannelID, pos frames.Position, line []byte, note string) {
	if p.opts.Format == FormatJSON {
		p.jsonText(st, ci, pos, line)
		return
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1] // CRLF is a line end
	}
	p.prefix(pos, ci, id)
	p.line = append(p.line, note...)
	if b, ok := p.appendText(p.line, line, true); ok {
		p.line = append(b, '\n')
		p.out(st, p.line)
		return
	}
	// The line holds CRs (b stopped at the first).
	if p.opts.CRSegments {
		for {
			i := bytes.IndexByte(line, '\r')
			if i < 0 {
				break
			}
			p.textLine(st, ci, id, pos, line[:i], note)
			line = line[i+1:]
		}
	} else {
		// A terminal shows the last segment written over the others: the
		// last that is not empty.
		for {
			i := bytes.LastIndexByte(line, '\r')
			if i < 0 || i+1 < len(line) {
				line = line[i+1:]
				break
			}
			line = line[:i]
		}
	}
	p.textLine(st, ci, id, pos, line, note)
}

// textLine prints one segment of a text line, without CRs.
func (p *Printer) textLine(st *streamInfo, ci *chanInfo, id frames.ChannelID, pos frames.Position, line []byte, note string) {
	p.prefix(pos, ci, id)
	p.line = append(p.line, note...)
	p.line, _ = p.appendText(p.line, line, false)
	p.line = append(p.line, '\n')
	p.out(st, p.line)
}

func (p *Printer) jsonFrame(st *streamInfo, ci *chanInfo, kind segments.ItemKind, f *frames.Frame) {
	if !p.opts.JSONFrames {
		// Lines of text channels are joined across frames: what comes
		// after a line's start is printed after it.
		var except *partial
		if ci != nil {
			except = ci.line
		}
		p.cutBefore(st, f.Position, except)
	}
	if p.sel.Grep != nil && !p.sel.Grep.Match(f.Payload) {
		return
	}
	b := append(p.line[:0], st.jsonHead...)
	b = append(b, `,"position":`...)
	b = strconv.AppendUint(b, uint64(f.Position), 10)
	if ci != nil {
		b = append(b, ci.json...)
	} else {
		b = append(b, `,"channel":null,"channel_id":`...)
		b = strconv.AppendUint(b, uint64(f.Channel), 10)
		b = append(b, `,"content":null`...)
	}
	n := len(b)
	ok := false
	switch {
	case ci == nil:
	case ci.kind == frames.KindTextStream:
		b = append(b, `,"text":`...)
		if b, ok = appendJSONQuoted(b, f.Payload); !ok {
			b = b[:n] // not UTF-8
		}
	case ci.kind == frames.KindJSONRecord:
		b = append(b, `,"record":`...)
		rec := len(b)
		if b, ok = appendCompactJSON(b, f.Payload); !ok {
			b = b[:n]
		} else if !p.opts.JSONFrames {
			// The record as ds log shows it, for jq's test() (see withText).
			p.msg = append(p.msg[:0], b[rec:]...)
			b = append(b, `,"text":`...)
			b, _ = appendJSONQuoted(b, p.msg)
		}
	}
	if !ok {
		b = append(b, `,"bytes_b64":"`...)
		b = base64.StdEncoding.AppendEncode(b, f.Payload)
		b = append(b, '"')
		switch {
		case ci == nil:
		case ci.kind == frames.KindTextStream:
			b = append(b, `,"utf8":false`...)
		case ci.kind == frames.KindJSONRecord:
			b = append(b, `,"invalid_json":true`...)
		}
		if !p.opts.JSONFrames {
			// The bytes as ds log shows them, escaped.
			p.msg = appendEscaped(p.msg[:0], f.Payload, true)
			b = append(b, `,"text":`...)
			b, _ = appendJSONQuoted(b, p.msg)
		}
	}
	switch kind {
	case segments.ItemConflict:
		b = append(b, `,"conflict":true`...)
	case segments.ItemLate:
		b = append(b, `,"late":true`...)
	}
	b = st.appendTimeJSON(b, st.clockNS)
	b = append(b, "}\n"...)
	p.line = b
	p.write(b)
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

// Bytes of eight lanes, for testing eight bytes at once.
const (
	lanes01 = 0x0101010101010101
	lanes80 = 0x8080808080808080
)

// printable8 reports whether the eight bytes of x (one per lane) are all
// printable ASCII, 0x20 to 0x7e. Each term is exact as to whether any lane
// has its property: bytes below 0x20 (x - 0x20 borrows into the top bit
// of a lane that had it clear), above 0x7e (x + 1 reaches the top bit, or
// it was set).
func printable8(x uint64) bool {
	return ((x-0x20*lanes01)&^x|(x+lanes01)|x)&lanes80 == 0
}

// appendEscaped appends payload with everything a terminal would act on
// shown visibly (the rules in terminal.go: controls and bytes that are not
// UTF-8 as \xNN, bidirectional controls as \uNNNN), so that raw bytes are
// visible and nothing reaches the terminal as a control sequence. Tabs are
// kept unless all is set (then everything but printable text is escaped).
func appendEscaped(b, payload []byte, all bool) []byte {
	var flags escapeFlags
	if all {
		flags = escapeTab
	}
	b, _, _ = appendTerminal(b, payload, flags)
	return b
}

// appendEscapedText is appendEscaped of a text line (tabs kept), as long as
// it has no CR: at a CR it stops and returns false, with b extended by what
// precedes the CR.
func appendEscapedText(b, line []byte) ([]byte, bool) {
	b, ok, _ := appendTerminal(b, line, stopAtCR)
	return b, ok
}

const hexDigits = "0123456789abcdef"

// jsonSafe holds the ASCII bytes that encoding/json copies into a string
// as they are (its htmlSafeSet): not '"', '\\', '<', '>', '&' or a control
// character below 0x20.
var jsonSafe = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = true
	}
	for _, c := range `"\<>&` {
		t[c] = false
	}
	return t
}()

// jsonSafe8 reports whether the eight bytes of x are all jsonSafe: none
// is below 0x20 or from 0x80 up, nor '"' or '&' (x|4 is 0x26), '<' or '>' (x|2
// is 0x3e), or '\\'. Each term is exact as to whether any lane has its
// property (see printable8; (v-1)&^v has the top bit of a lane set where
// v is zero).
func jsonSafe8(x uint64) bool {
	q := (x | 0x04*lanes01) ^ 0x26*lanes01
	a := (x | 0x02*lanes01) ^ 0x3e*lanes01
	s := x ^ 0x5c*lanes01
	return ((x-0x20*lanes01)&^x|x|(q-lanes01)&^q|(a-lanes01)&^a|(s-lanes01)&^s)&lanes80 == 0
}

// load64 returns the eight bytes of s at i, the first in the low byte.
func load64[S ~string | ~[]byte](s S, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// appendJSONString appends s as a JSON string, exactly as json.Marshal
// encodes it: <, > and & as \u003c, \u003e and \u0026, U+2028 and U+2029
// escaped, and each byte that is not valid UTF-8 as \ufffd.
func appendJSONString[S ~string | ~[]byte](b []byte, s S) []byte {
	b, _ = appendJSONQuoted(b, s)
	return b
}

// appendJSONQuoted is appendJSONString that also reports whether s is
// valid UTF-8 (utf8.Valid), so that a caller can check and encode in one
// pass.
func appendJSONQuoted[S ~string | ~[]byte](b []byte, s S) ([]byte, bool) {
	valid := true
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if jsonSafe[c] {
			i++
			for i+8 <= len(s) && jsonSafe8(load64(s, i)) {
				i += 8
			}
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
			}
			i++
			start = i
			continue
		}
		var rb [utf8.UTFMax]byte
		r, size := utf8.DecodeRune(rb[:copy(rb[:], s[i:])])
		switch {
		case r == utf8.RuneError && size == 1:
			valid = false
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&15])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"'), valid
}

// maxJSONDepth is encoding/json's nesting limit: a value nested deeper is
// not valid JSON to json.Valid.
const maxJSONDepth = 10000

// appendCompactJSON appends src with the insignificant space elided, as
// json.Compact does, if src is valid JSON (json.Valid); if it is not, it
// returns b unchanged and false. It reads src once.
func appendCompactJSON(b, src []byte) ([]byte, bool) {
	n0 := len(b)
	// One bit per open container, set for an object, clear for an array.
	var stack [4]uint64
	objects := stack[:]
	depth := 0
	i, start := 0, 0 // src[start:i] is yet to be appended
	key := false     // an object's key comes next
value:
	for {
		if i < len(src) && isJSONSpace(src[i]) {
			b, i, start = elideSpace(b, src, i, start)
		}
		if key {
			if i == len(src) || src[i] != '"' {
				return b[:n0], false
			}
			if i = endJSONString(src, i); i < 0 {
				return b[:n0], false
			}
			if i < len(src) && isJSONSpace(src[i]) {
				b, i, start = elideSpace(b, src, i, start)
			}
			if i == len(src) || src[i] != ':' {
				return b[:n0], false
			}
			i++
			if i < len(src) && isJSONSpace(src[i]) {
				b, i, start = elideSpace(b, src, i, start)
			}
			key = false
		}
		if i == len(src) {
			return b[:n0], false
		}
		switch c := src[i]; c {
		case '{', '[':
			if depth == maxJSONDepth {
				return b[:n0], false
			}
			if depth>>6 == len(objects) {
				objects = append(objects, 0)
			}
			if c == '{' {
				objects[depth>>6] |= 1 << (depth & 63)
			} else {
				objects[depth>>6] &^= 1 << (depth & 63)
			}
			depth++
			i++
			if i < len(src) && isJSONSpace(src[i]) {
				b, i, start = elideSpace(b, src, i, start)
			}
			if i < len(src) && src[i] == c+2 { // '}' or ']': empty
				i++
				depth--
				break
			}
			key = c == '{'
			continue value
		case '"':
			i = endJSONString(src, i)
		case 't':
			i = cutLiteral(src, i, "true")
		case 'f':
			i = cutLiteral(src, i, "false")
		case 'n':
			i = cutLiteral(src, i, "null")
		default:
			i = endJSONNumber(src, i)
		}
		if i < 0 {
			return b[:n0], false
		}
		// After a value: close containers until a comma.
		for {
			if i < len(src) && isJSONSpace(src[i]) {
				b, i, start = elideSpace(b, src, i, start)
			}
			if depth == 0 {
				if i < len(src) {
					return b[:n0], false
				}
				return append(b, src[start:]...), true
			}
			if i == len(src) {
				return b[:n0], false
			}
			inObject := objects[(depth-1)>>6]&(1<<((depth-1)&63)) != 0
			switch c := src[i]; {
			case c == ',':
				i++
				key = inObject
				continue value
			case c == '}' && inObject, c == ']' && !inObject:
				i++
				depth--
			default:
				return b[:n0], false
			}
		}
	}
}

// elideSpace appends src[start:i] to b and skips the white space at src[i:];
// it returns b and the new i and start, both after the space.
func elideSpace(b, src []byte, i, start int) ([]byte, int, int) {
	b = append(b, src[start:i]...)
	for i++; i < len(src) && isJSONSpace(src[i]); i++ {
	}
	return b, i, i
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// jsonPlain holds the bytes a JSON string holds as they are: not '"', '\\'
// or a control character below 0x20. encoding/json's scanner does not
// check UTF-8.
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// endJSONString returns the index after the JSON string starting at
// src[i], a '"', or -1 if it is not a valid string.
func endJSONString(src []byte, i int) int {
	for i++; i < len(src); {
		if jsonPlain[src[i]] {
			i++
			continue
		}
		switch src[i] {
		case '"':
			return i + 1
		case '\\':
			if i+1 == len(src) {
				return -1
			}
			switch src[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(src) {
					return -1
				}
				for _, h := range src[i+2 : i+6] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return -1
					}
				}
				i += 6
			default:
				return -1
			}
		default:
			return -1 // a control character
		}
	}
	return -1
}

// endJSONNumber returns the index after the JSON number starting at src[i],
// or -1 if there is none.
func endJSONNumber(src []byte, i int) int {
	if i < len(src) && src[i] == '-' {
		i++
	}
	switch {
	case i == len(src):
		return -1
	case src[i] == '0':
		i++
	case '1' <= src[i] && src[i] <= '9':
		i = endDigits(src, i+1)
	default:
		return -1
	}
	if i < len(src) && src[i] == '.' {
		if i+1 == len(src) || !isDigit(src[i+1]) {
			return -1
		}
		i = endDigits(src, i+1)
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		if i == len(src) || !isDigit(src[i]) {
			return -1
		}
		i = endDigits(src, i)
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func endDigits(src []byte, i int) int {
	for i < len(src) && isDigit(src[i]) {
		i++
	}
	return i
}

// cutLiteral returns the index after lit at src[i], or -1 if it is not
// there.
func cutLiteral(src []byte, i int, lit string) int {
	if len(src)-i < len(lit) || string(src[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

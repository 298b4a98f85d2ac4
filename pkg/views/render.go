package views

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// LogFormat selects how [Log] prints frames.
type LogFormat uint8

const (
	// FormatText prints one line per text line with stable, greppable
	// columns: [stream] position channel text (DESIGN.md §5).
	FormatText LogFormat = iota
	// FormatCat prints payload bytes only, byte-exact: no gap or drop
	// lines ([Printer.Losses] counts them).
	FormatCat
	// FormatJSON prints one JSON object per frame, gap, drop and damaged
	// range (newline-delimited, lossless). A frame's "time" is its
	// stream's latest datastream.clock reading before it (see the package
	// doc).
	FormatJSON
)

// LogOptions configures [Log] and [NewPrinter].
type LogOptions struct {
	Format LogFormat
	// Channels selects channels by descriptor (exact name or prefix, see
	// frames.ParseChannelPattern); empty means every channel. Frames whose
	// channel has no descriptor match only when Channels is empty. Gaps and
	// drops concern the whole stream and are shown whatever Channels says.
	Channels []frames.ChannelFilter
	// All shows the writer's own datastream.* channels, which are hidden
	// unless All is set or Channels names them.
	All bool
	// CRSegments shows every carriage-return-separated segment of a text
	// line on its own line; by default a line renders as a terminal shows
	// it, the last segment winning.
	CRSegments bool
	// Window is the assembler's reorder window (0: DefaultWindow).
	Window int
	// Follow keeps reading inputs that grow (tail -f).
	Follow bool
}

// maxLine bounds how much of one unfinished text line a printer holds per
// channel; a longer line is printed in pieces of this size.
const maxLine = 1 << 20

type lineKey struct {
	stream  frames.StreamID
	channel frames.ChannelID
}

type partial struct {
	pos frames.Position
	buf []byte
	// cut is set when the line was printed unfinished (another line of
	// the stream had to come after it, or it reached maxLine): the rest of
	// it, up to its newline, is printed as a line of its own unless empty.
	cut bool
}

type streamInfo struct {
	desc     frames.StreamDescriptor
	channels map[frames.ChannelID]frames.ChannelDescriptor
	visible  map[frames.ChannelID]bool // cache of the filter decision
	clockID  frames.ChannelID          // datastream.clock, 0 if undeclared
	clockNS  int64                     // latest clock reading, 0 if none yet

	healthID  frames.ChannelID // datastream.health, if hasHealth
	hasHealth bool
	fromStart bool               // position 0 was printed: the stream is seen from its start
	lines     []frames.ChannelID // channels with a partials entry
	drops     dropTracker
}

// Printer renders assembled items for ds log. Feed it descriptors as they
// are read ([Printer.Stream], [Printer.Channel]), then items in order
// ([Printer.Item]) and damaged ranges ([Printer.Damage]); Close flushes
// unfinished lines. It decodes payloads only to render them: a payload it
// cannot decode is shown raw (spec §8.3). Write errors are sticky and
// returned by Close.
type Printer struct {
	opts     LogOptions
	w        *bufio.Writer
	streams  map[frames.StreamID]*streamInfo
	partials map[lineKey]*partial
	pending  []lineKey // order in which partial lines were opened

	multi     bool // a stream column leads each line (text format)
	decided   bool // multi is fixed; until then lines are held
	held      []heldLine
	heldBytes int
	streamW   int // width of the stream column
	nameW     int // width of the channel column
	line      []byte
	losses    Losses
	err       error
}

// NewPrinter returns a printer writing to w.
func NewPrinter(w io.Writer, opts LogOptions) *Printer {
	return &Printer{
		opts:     opts,
		w:        bufio.NewWriterSize(w, 256<<10),
		streams:  make(map[frames.StreamID]*streamInfo),
		partials: make(map[lineKey]*partial),
		nameW:    16,
	}
}

// Stream records a stream descriptor (from a segment header).
func (p *Printer) Stream(d frames.StreamDescriptor) {
	if st := p.streams[d.Stream]; st != nil {
		st.desc = d
		return
	}
	p.streamW = max(p.streamW, len(d.Stream.String()))
	p.streams[d.Stream] = &streamInfo{desc: d, channels: make(map[frames.ChannelID]frames.ChannelDescriptor), visible: make(map[frames.ChannelID]bool)}
	if len(p.streams) > 1 && !p.decided {
		p.decide() // several streams: a stream column, from the first line on
	}
}

// Channel records a channel descriptor (from a segment header or a
// ChannelDeclared record). The first descriptor for an id wins.
func (p *Printer) Channel(d frames.ChannelDescriptor) {
	st := p.stream(d.Stream)
	if _, ok := st.channels[d.ID]; ok {
		return
	}
	st.channels[d.ID] = d
	delete(st.visible, d.ID)
	switch d.Name {
	case frames.ClockChannel:
		st.clockID = d.ID
	case frames.HealthChannel:
		st.healthID, st.hasHealth = d.ID, true
	}
	if p.isVisible(st, d.ID) && len(d.Name) > p.nameW && len(d.Name) <= 40 {
		p.nameW = len(d.Name)
	}
}

func (p *Printer) stream(s frames.StreamID) *streamInfo {
	st := p.streams[s]
	if st == nil {
		p.Stream(frames.StreamDescriptor{Stream: s})
		st = p.streams[s]
	}
	return st
}

func (p *Printer) isVisible(st *streamInfo, id frames.ChannelID) bool {
	if v, ok := st.visible[id]; ok {
		return v
	}
	d, known := st.channels[id]
	v := false
	switch {
	case len(p.opts.Channels) > 0:
		for _, f := range p.opts.Channels {
			if known && f.Match(d) {
				v = true
				break
			}
		}
	case !known:
		v = true
	case p.opts.All:
		v = true
	default:
		v = !strings.HasPrefix(d.Name, "datastream.")
	}
	if !known {
		return v // do not cache: a descriptor may still arrive
	}
	st.visible[id] = v
	return v
}

// Item renders one assembled item. A datastream.health record that
// reports refused submissions (see [Drop]) is preceded by a drop line,
// whatever the channel filter: a loss concerns the whole stream.
func (p *Printer) Item(it Item) {
	if p.err != nil {
		return
	}
	st := p.stream(it.Stream)
	if it.Kind == ItemGap {
		p.losses.Gaps++
		p.losses.MissingFrames += it.Gap.Count
		p.gap(st, it.Gap)
		return
	}
	f := it.Frame
	if it.Kind == ItemFrame && f.Position == 0 {
		st.fromStart = true
	}
	if f.Channel == st.clockID && st.clockID != 0 && it.Kind == ItemFrame {
		if c, err := frames.DecodeRecord(f.Payload, frames.ClockRecord{}); err == nil && c.UnixNS > 0 {
			st.clockNS = c.UnixNS
		}
	}
	if st.hasHealth && f.Channel == st.healthID && it.Kind != ItemConflict {
		if d, ok := st.drops.health(f.Position, f.Payload, st.fromStart, it.Kind == ItemLate); ok {
			p.losses.Drops++
			p.losses.DroppedFrames += d.Frames
			p.drop(st, d)
		}
	}
	if !p.isVisible(st, f.Channel) {
		return
	}
	switch p.opts.Format {
	case FormatCat:
		if d, ok := st.channels[f.Channel]; len(p.opts.Channels) > 0 || (ok && d.Content.Kind == frames.KindTextStream) {
			p.write(f.Payload)
		}
	case FormatJSON:
		p.jsonFrame(st, it)
	default:
		p.textFrame(st, it)
	}
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
	default:
		p.line = p.line[:0]
		p.line = append(p.line, "     !  "...)
		p.line = appendPadded(p.line, "damage", p.nameW)
		p.line = append(p.line, "  "...)
		p.line = append(p.line, file...)
		if torn {
			p.line = append(p.line, ": torn tail at byte "...)
			p.line = strconv.AppendInt(p.line, offset, 10)
		} else {
			p.line = append(p.line, ": bytes "...)
			p.line = strconv.AppendInt(p.line, offset, 10)
			p.line = append(p.line, "–"...)
			p.line = strconv.AppendInt(p.line, end-1, 10)
			p.line = append(p.line, " unreadable ("...)
			p.line = strconv.AppendInt(p.line, end-offset, 10)
			p.line = append(p.line, " bytes)"...)
		}
		if msg != "" {
			p.line = append(p.line, ": "...)
			p.line = appendEscaped(p.line, []byte(msg), true)
		}
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
// order they started: nothing can complete them once the stream has ended.
func (p *Printer) EndStream(s frames.StreamID) {
	keep := p.pending[:0]
	for _, k := range p.pending {
		if k.stream != s {
			keep = append(keep, k)
			continue
		}
		p.flushPartial(p.streams[k.stream], k.channel, p.partials[k])
		delete(p.partials, k)
	}
	p.pending = keep
	if st := p.streams[s]; st != nil {
		st.lines = nil
	}
}

// Close prints unfinished lines and flushes the output.
func (p *Printer) Close() error {
	for _, k := range p.pending {
		p.flushPartial(p.streams[k.stream], k.channel, p.partials[k])
	}
	p.pending, p.partials = nil, make(map[lineKey]*partial)
	p.decide()
	if p.err == nil {
		p.err = p.w.Flush()
	}
	return p.err
}

// Flush writes buffered output without closing unfinished lines (the
// columns are fixed by the streams seen so far).
func (p *Printer) Flush() error {
	p.decide()
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

// out writes one text-format line of stream st (nil: no stream). Until the
// printer knows whether the input holds more than one stream, lines are
// held back (up to maxUndecided bytes), so that every line gets the same
// columns: a stream column leads each line when there are several streams.
func (p *Printer) out(st *streamInfo, line []byte) {
	if !p.decided {
		p.held = append(p.held, heldLine{st: st, line: bytes.Clone(line)})
		p.heldBytes += len(line)
		if p.heldBytes >= maxUndecided {
			p.decide()
		}
		return
	}
	if p.multi {
		var col [64]byte
		c := col[:0]
		name := "-"
		if st != nil {
			name = st.desc.Stream.String()
		}
		c = appendPadded(c, name, p.streamW)
		c = append(c, "  "...)
		p.write(c)
	}
	p.write(line)
}

// decide fixes the columns and prints the held lines.
func (p *Printer) decide() {
	if p.decided {
		return
	}
	p.decided, p.multi = true, len(p.streams) > 1
	for _, h := range p.held {
		p.out(h.st, h.line)
	}
	p.held, p.heldBytes = nil, 0
}

// maxUndecided bounds the output held back before the first line is
// printed; past it, the columns are fixed by the streams seen so far.
const maxUndecided = 1 << 20

type heldLine struct {
	st   *streamInfo
	line []byte
}

func (p *Printer) prefix(st *streamInfo, pos string, channel string) {
	p.line = p.line[:0]
	for i := len(pos); i < 6; i++ {
		p.line = append(p.line, ' ')
	}
	p.line = append(p.line, pos...)
	p.line = append(p.line, "  "...)
	p.line = appendPadded(p.line, channel, p.nameW)
	p.line = append(p.line, "  "...)
}

func (p *Printer) gap(st *streamInfo, g Gap) {
	switch p.opts.Format {
	case FormatCat:
		return
	case FormatJSON:
		p.line = p.jsonHead(p.line[:0], st)
		p.line = append(p.line, `,"gap":{"from":`...)
		p.line = strconv.AppendUint(p.line, uint64(g.From), 10)
		p.line = append(p.line, `,"to":`...)
		p.line = strconv.AppendUint(p.line, uint64(g.To), 10)
		p.line = append(p.line, `,"count":`...)
		p.line = strconv.AppendUint(p.line, g.Count, 10)
		p.line = append(p.line, "}}\n"...)
	default:
		p.cutBefore(st, g.From, 0, false)
		p.prefix(st, "~", "gap")
		p.line = append(p.line, "positions "...)
		p.line = strconv.AppendUint(p.line, uint64(g.From), 10)
		if g.To != g.From {
			p.line = append(p.line, "–"...)
			p.line = strconv.AppendUint(p.line, uint64(g.To), 10)
		}
		p.line = append(p.line, " missing ("...)
		p.line = strconv.AppendUint(p.line, g.Count, 10)
		if g.Count == 1 {
			p.line = append(p.line, " frame)\n"...)
		} else {
			p.line = append(p.line, " frames)\n"...)
		}
		p.out(st, p.line)
		return
	}
	p.write(p.line)
}

// drop shows submissions refused before position d.Before, in place.
func (p *Printer) drop(st *streamInfo, d Drop) {
	switch p.opts.Format {
	case FormatCat:
		return
	case FormatJSON:
		p.line = p.jsonHead(p.line[:0], st)
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
		p.write(p.line)
	default:
		p.cutBefore(st, d.Before, 0, false)
		p.prefix(st, "~", "dropped")
		p.line = strconv.AppendUint(p.line, d.Frames, 10)
		if d.Frames == 1 {
			p.line = append(p.line, " frame before position "...)
		} else {
			p.line = append(p.line, " frames before position "...)
		}
		p.line = strconv.AppendUint(p.line, uint64(d.Before), 10)
		p.line = append(p.line, " ("...)
		p.line = appendEscaped(p.line, []byte(d.Reason), true)
		p.line = append(p.line, ")\n"...)
		p.out(st, p.line)
	}
}

// cutBefore prints, as they are, the held partial lines of stream st that
// started before position pos (except channel except, when skip is set),
// in the order they started. Joining a line split across frames must not
// reorder lines across the channels of a stream: whatever is printed at
// pos comes after them. The rest of a cut line is printed as a line of its
// own when it arrives (unless it is empty).
func (p *Printer) cutBefore(st *streamInfo, pos frames.Position, except frames.ChannelID, skip bool) {
	var cut []lineKey
	for _, ch := range st.lines {
		if skip && ch == except {
			continue
		}
		k := lineKey{st.desc.Stream, ch}
		if pl := p.partials[k]; pl != nil && len(pl.buf) > 0 && pl.pos < pos {
			cut = append(cut, k)
		}
	}
	if len(cut) > 1 {
		slices.SortFunc(cut, func(a, b lineKey) int { return cmp.Compare(p.partials[a].pos, p.partials[b].pos) })
	}
	for _, k := range cut {
		p.printPartial(st, k.channel, p.partials[k])
	}
}

// flushPartial prints a held partial line, after those of the stream's
// other channels that started before it.
func (p *Printer) flushPartial(st *streamInfo, ch frames.ChannelID, pl *partial) {
	if pl == nil || len(pl.buf) == 0 {
		return
	}
	p.cutBefore(st, pl.pos, ch, true)
	p.printPartial(st, ch, pl)
}

// printPartial prints a held partial line as it is and empties it; what
// follows it on its channel, up to a newline, is the rest of a cut line.
func (p *Printer) printPartial(st *streamInfo, ch frames.ChannelID, pl *partial) {
	if !pl.cut || !blankLine(pl.buf) {
		p.printText(st, ch, pl.pos, pl.buf, "")
	}
	pl.buf, pl.cut = pl.buf[:0], true
}

// blankLine reports whether line is empty once a CRLF's CR is removed:
// the rest of a cut line that is only its line end is not printed.
func blankLine(line []byte) bool { return len(line) == 0 || len(line) == 1 && line[0] == '\r' }

func channelName(st *streamInfo, id frames.ChannelID) (frames.ChannelDescriptor, string, bool) {
	d, ok := st.channels[id]
	if !ok {
		return d, "#" + strconv.FormatUint(uint64(id), 10), false
	}
	return d, d.Name, true
}

func (p *Printer) textFrame(st *streamInfo, it Item) {
	f := it.Frame
	d, name, known := channelName(st, f.Channel)
	note := ""
	switch it.Kind {
	case ItemConflict:
		note = "[conflict: another payload was stored first] "
	case ItemLate:
		note = "[late] "
	}
	if !known || d.Content.Kind != frames.KindTextStream || note != "" {
		// Records, bytes and frames of unknown channels are shown whole,
		// one line per frame.
		p.cutBefore(st, f.Position, f.Channel, true)
		p.prefix(st, strconv.FormatUint(uint64(f.Position), 10), name)
		p.line = append(p.line, note...)
		if known && d.Content.Kind == frames.KindJSONRecord && json.Valid(f.Payload) {
			p.line = appendCompactJSON(p.line, f.Payload)
		} else {
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
	k := lineKey{st.desc.Stream, f.Channel}
	data := f.Payload
	pl := p.partials[k]
	pos := f.Position
	if pl != nil && len(pl.buf) > 0 {
		pos = pl.pos
	}
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			if pl == nil {
				pl = &partial{}
				p.partials[k] = pl
				p.pending = append(p.pending, k)
				st.lines = append(st.lines, f.Channel)
			}
			if len(pl.buf) == 0 {
				pl.pos = pos
			}
			pl.buf = append(pl.buf, data...)
			if len(pl.buf) >= maxLine {
				p.flushPartial(st, f.Channel, pl)
			}
			return
		}
		line := data[:i]
		cut := false
		if pl != nil {
			if len(pl.buf) > 0 {
				pl.buf = append(pl.buf, line...)
				line = pl.buf
			}
			cut, pl.cut = pl.cut, false
		}
		if !cut || !blankLine(line) {
			p.textLine(st, f.Channel, pos, line, "")
		}
		if pl != nil {
			pl.buf = pl.buf[:0]
		}
		data = data[i+1:]
		pos = f.Position
	}
}

// textLine prints one text line (without its newline) of channel ch that
// started at pos, after the held partial lines of the stream's other
// channels that started before it.
func (p *Printer) textLine(st *streamInfo, ch frames.ChannelID, pos frames.Position, line []byte, note string) {
	p.cutBefore(st, pos, ch, true)
	p.printText(st, ch, pos, line, note)
}

// printText prints one text line as it is.
func (p *Printer) printText(st *streamInfo, ch frames.ChannelID, pos frames.Position, line []byte, note string) {
	_, name, _ := channelName(st, ch)
	line = bytes.TrimSuffix(line, []byte{'\r'}) // CRLF is a line end
	if bytes.IndexByte(line, '\r') >= 0 {
		segs := bytes.Split(line, []byte{'\r'})
		if p.opts.CRSegments {
			for _, s := range segs {
				p.textLine1(st, name, pos, s, note)
			}
			return
		}
		// A terminal shows the last segment written over the others.
		last := segs[len(segs)-1]
		for j := len(segs) - 1; j >= 0 && len(last) == 0; j-- {
			last = segs[j]
		}
		line = last
	}
	p.textLine1(st, name, pos, line, note)
}

func (p *Printer) textLine1(st *streamInfo, name string, pos frames.Position, line []byte, note string) {
	p.prefix(st, strconv.FormatUint(uint64(pos), 10), name)
	p.line = append(p.line, note...)
	p.line = appendEscaped(p.line, line, false)
	p.line = append(p.line, '\n')
	p.out(st, p.line)
}

func (p *Printer) jsonHead(b []byte, st *streamInfo) []byte {
	b = append(b, `{"stream":`...)
	b = appendJSONString(b, st.desc.Stream.String())
	b = append(b, `,"node":`...)
	b = appendJSONString(b, string(st.desc.Stream.Node))
	b = append(b, `,"life":`...)
	return strconv.AppendUint(b, uint64(st.desc.Stream.Life), 10)
}

func (p *Printer) jsonFrame(st *streamInfo, it Item) {
	f := it.Frame
	d, name, known := channelName(st, f.Channel)
	b := p.jsonHead(p.line[:0], st)
	b = append(b, `,"position":`...)
	b = strconv.AppendUint(b, uint64(f.Position), 10)
	b = append(b, `,"channel":`...)
	if known {
		b = appendJSONString(b, name)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"channel_id":`...)
	b = strconv.AppendUint(b, uint64(f.Channel), 10)
	b = append(b, `,"content":`...)
	if known {
		b = appendJSONString(b, d.Content.Kind.String())
	} else {
		b = append(b, "null"...)
	}
	switch {
	case known && d.Content.Kind == frames.KindTextStream && utf8.Valid(f.Payload):
		b = append(b, `,"text":`...)
		b = appendJSONString(b, string(f.Payload))
	case known && d.Content.Kind == frames.KindJSONRecord && json.Valid(f.Payload):
		b = append(b, `,"record":`...)
		b = appendCompactJSON(b, f.Payload)
	default:
		b = append(b, `,"bytes_b64":"`...)
		b = base64.StdEncoding.AppendEncode(b, f.Payload)
		b = append(b, '"')
		if known && d.Content.Kind == frames.KindTextStream {
			b = append(b, `,"utf8":false`...)
		}
		if known && d.Content.Kind == frames.KindJSONRecord {
			b = append(b, `,"invalid_json":true`...)
		}
	}
	switch it.Kind {
	case ItemConflict:
		b = append(b, `,"conflict":true`...)
	case ItemLate:
		b = append(b, `,"late":true`...)
	}
	if st.clockNS != 0 {
		b = append(b, `,"time":"`...)
		b = time.Unix(0, st.clockNS).UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	b = append(b, "}\n"...)
	p.line = b
	p.write(b)
}

func appendPadded(b []byte, s string, w int) []byte {
	b = append(b, s...)
	for i := utf8.RuneCountInString(s); i < w; i++ {
		b = append(b, ' ')
	}
	return b
}

func appendCompactJSON(b, payload []byte) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, payload) != nil {
		return appendEscaped(b, payload, true)
	}
	return append(b, buf.Bytes()...)
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // strings always marshal
	return append(b, q...)
}

const hexDigits = "0123456789abcdef"

// appendEscaped appends payload with every byte a terminal would act on or
// that is not valid UTF-8 shown as \xNN, so that raw bytes are visible and
// nothing reaches the terminal as a control sequence. Tabs are kept unless
// all is set (then everything but printable text is escaped).
func appendEscaped(b, payload []byte, all bool) []byte {
	for i := 0; i < len(payload); {
		c := payload[i]
		if c >= 0x20 && c < 0x7f {
			j := i + 1
			for j < len(payload) && payload[j] >= 0x20 && payload[j] < 0x7f {
				j++
			}
			b = append(b, payload[i:j]...)
			i = j
			continue
		}
		if c == '\t' && !all {
			b = append(b, c)
			i++
			continue
		}
		if c >= 0x80 {
			r, n := utf8.DecodeRune(payload[i:])
			if r != utf8.RuneError && !(r >= 0x80 && r < 0xa0) {
				b = append(b, payload[i:i+n]...)
				i += n
				continue
			}
		}
		b = append(b, '\\', 'x', hexDigits[c>>4], hexDigits[c&15])
		i++
	}
	return b
}

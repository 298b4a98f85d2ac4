package views

import (
	"bufio"
	"github.com/ds-telemetry/ds/pkg/segments"
	"io"
	"slices"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// LogFormat selects how [Log] prints frames.
type LogFormat uint8

const (
	// FormatText prints one line per text line with stable, greppable
	// columns: [stream] position channel text (see ds(1)).
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
	// are styled. Off, every escape sequence is shown
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
	// Entries, if not nil, makes the printer write nothing: each object
	// FormatJSON (one per text line) would print is handed to Entries as
	// an [Entry] instead, in the same order ([Entry] has the rules);
	// Format, Color and Time are then ignored. With JSONFrames, each
	// frame of a text channel is an EntryBytes of its own (as
	// --json=frames prints it), not joined into lines. The *Entry is the
	// printer's own, valid only during the call (it is reused for the
	// next). ds report renders its HTML from them, ds export its formats.
	Entries func(*Entry)
	// CatFrames, if not nil, makes FormatCat write nothing: each frame
	// whose bytes it would write is handed to CatFrames instead, with
	// its stream's steady time (the latest datastream.clock reading
	// before it, less the steps its wall clock made, in ns since the Unix
	// epoch; 0 before any reading), as --time=delta measures, and what
	// its channel is ([CatChannel]). ds play paces its output by the
	// time, and escapes by the channel. The payload is valid only during
	// the call.
	CatFrames func(steadyNS int64, payload []byte, ch CatChannel)
}

// CatChannel is what [LogOptions].CatFrames is told of a frame's channel.
type CatChannel struct {
	// Name is the channel's name (proc.make.stdout).
	Name string
	// Kind is its content class: text, a JSON record, bytes.
	Kind frames.ContentKind
	// Terminal reports a ds wrap --pty capture's output: a text channel
	// proc.LABEL.stdout of a stream that declared no proc.LABEL.stderr
	// (ds wrap --pty merges both on a pseudo-terminal and registers
	// stdout alone, before the command starts). Its bytes are what a
	// terminal was sent, escapes included.
	Terminal bool
}

// Printer renders assembled items for ds log. Feed it descriptors as they
// are read ([Printer.Stream], [Printer.Channel]), then items in order
// ([Printer.Item]) and damaged ranges ([Printer.Damage]); Close flushes
// unfinished lines. It decodes payloads only to render them: a payload it
// cannot decode is shown raw (see ds-format(5)). Write errors are sticky
// and returned by Close. A Printer is not safe for concurrent use.
//
// A Printer is a composition of parts, each in its own file: the
// per-stream state (stream.go), the selection (selector.go), the clock
// (timebase.go), the joining of frames into lines (linejoin.go), the
// cursors consumers save (cursors.go), the notes of losses and damage
// (notes.go), and the formats (render_text.go, render_json.go, and
// terminal.go for the escaping). Item dispatches to them; no part calls
// another through an interface, so the per-frame path has no dynamic
// dispatch and no allocation.
type Printer struct {
	format  LogFormat
	w       *bufio.Writer
	err     error // sticky: the first write error
	streams streamTable
	sel     selector
	clock   timebase
	lines   joiner
	cursors cursorTracker
	losses  Losses
	text    textLayout                      // FormatText
	json    jsonLayout                      // FormatJSON
	entries func(*Entry)                    // LogOptions.Entries (FormatJSON then)
	entry   Entry                           // the one handed to entries, reused: no allocation a line
	cat     func(int64, []byte, CatChannel) // LogOptions.CatFrames (FormatCat)
	line    []byte                          // the line being rendered
	msg     []byte                          // scratch for a note's message
}

// NewPrinter returns a printer writing to w.
func NewPrinter(w io.Writer, opts LogOptions) *Printer {
	sel := opts.Select
	sel.Channels = append(slices.Clip(sel.Channels), opts.Channels...)
	if opts.Entries != nil {
		opts.Format, opts.Color, opts.Time = FormatJSON, false, TimeNone
	}
	p := &Printer{
		format:  opts.Format,
		w:       bufio.NewWriterSize(w, 256<<10),
		streams: streamTable{m: make(map[frames.StreamID]*streamInfo)},
		sel:     newSelector(sel, opts.All),
		clock:   timebase{utc: opts.UTC},
		cursors: newCursorTracker(sel.After),
		text:    newTextLayout(opts),
		json:    jsonLayout{frames: opts.JSONFrames},
		entries: opts.Entries,
		cat:     opts.CatFrames,
	}
	if opts.Format == FormatText {
		p.clock.column = opts.Time
	}
	return p
}

// Expect tells the printer, before the first item, which streams the
// inputs hold (as far as the caller could find out, e.g. from the segment
// headers of files): with more than one, the stream column (in
// StreamColumnAuto) leads every line from the first on, as wide as the
// widest, and shows a stream's node alone when no other stream expected
// has the same node. Streams the stream filters hide do not count.
func (p *Printer) Expect(streams []frames.StreamID) {
	p.text.expect(p.sel.expectStreams(streams))
}

// Stream records a stream descriptor (from a segment header).
func (p *Printer) Stream(d frames.StreamDescriptor) {
	if st := p.streams.m[d.Stream]; st != nil {
		st.desc = d
		st.sel.hidden = !p.sel.streamVisible(d)
		p.sel.matchStream(d)
		return
	}
	st := newStreamInfo(d, p.format)
	st.sel = p.sel.bounds(d)
	p.text.addStream(st)
	p.streams.m[d.Stream] = st
}

// Channel records a channel descriptor (from a segment header or a
// ChannelDeclared record). The first descriptor for an id wins.
func (p *Printer) Channel(d frames.ChannelDescriptor) {
	st := p.stream(d.Stream)
	if st.decl.add(d) {
		p.declared(st, d)
	}
}

// Catalog records the channels of a segment header of stream s, as
// Channel does each. The printer may keep cat, which the caller must not
// change after (a Sink may retain a header's channels).
func (p *Printer) Catalog(s frames.StreamID, cat []frames.ChannelDescriptor) {
	st := p.stream(s)
	if !st.decl.adopt(cat) {
		for _, d := range cat {
			p.Channel(d)
		}
		return
	}
	for _, d := range cat {
		p.declared(st, d)
	}
}

// declared takes in channel d, newly declared in stream st. What the
// printer keeps of a channel to render its frames (a chanInfo) is made at
// its first frame (channelOf): a header of 140 000 channels, of which a
// few write, costs no state a channel.
func (p *Printer) declared(st *streamInfo, d frames.ChannelDescriptor) {
	visible := p.sel.channelVisible(d)
	if !st.sel.hidden {
		p.sel.matchChannel(d)
	}
	switch d.Name {
	case frames.ClockChannel:
		st.clock.id = d.ID
	case frames.HealthChannel:
		st.notes.healthID, st.notes.hasHealth = d.ID, true
	case frames.TransportChannel:
		st.notes.transpID, st.notes.hasTransp = d.ID, true
	}
	p.text.addChannel(visible, nameWidth(d.Name))
}

// channelOf returns what the printer keeps of channel id of stream st,
// made at the first call; nil for an undeclared channel.
func (p *Printer) channelOf(st *streamInfo, id frames.ChannelID) *chanInfo {
	if ci := st.channel(id); ci != nil {
		return ci
	}
	d, ok := st.decl.find(id)
	if !ok {
		return nil
	}
	ci := st.newChanInfo(d, p.sel.channelVisible(d))
	st.setChannel(id, ci)
	return ci
}

// stream returns stream s, declaring it (with no descriptor but its id)
// if it is new. Inlined, consecutive items of one stream skip a call.
func (p *Printer) stream(s frames.StreamID) *streamInfo {
	if st := p.streams.last; st != nil && st.desc.Stream == s {
		return st
	}
	return p.lookup(s)
}

// lookup is stream for a stream other than the last one looked up.
func (p *Printer) lookup(s frames.StreamID) *streamInfo {
	st := p.streams.get(s)
	if st == nil {
		p.Stream(frames.StreamDescriptor{Stream: s})
		st = p.streams.get(s)
	}
	return st
}

// Unmatched returns, once the inputs are read, the filters that matched
// no channel or stream of the inputs, as the user would spell them
// ("-c nosuch", "--node n9", "--content bytes"), so that a command can say
// why it printed nothing.
func (p *Printer) Unmatched() []string { return p.sel.unmatched() }

// Untimed returns the streams shown that had no datastream.clock reading
// at all when --since or --until needed one: their frames could not be
// placed in time and were not shown.
func (p *Printer) Untimed() []frames.StreamID { return p.sel.untimed }

// Item renders one assembled item. A datastream.health record that
// reports refused submissions (see [Drop]) is preceded by a drop line,
// a datastream.transport record that reports positions an output did
// not deliver (see [TransportLoss]) by a "lost" line, and a
// datastream.clock record that shows a step of the wall clock (see
// [ClockStep]) by a "clock" line, whatever the channel filter: these
// concern the whole stream.
func (p *Printer) Item(it segments.Item) {
	if p.err != nil {
		return
	}
	st := p.stream(it.Stream)
	if st.sel.hidden {
		return
	}
	switch it.Kind {
	case segments.ItemGap:
		if st.sel.hasAfter && !st.sel.checked {
			p.checkTrimmed(st, it.Gap.From)
		}
		p.itemGap(st, it.Gap)
	case segments.ItemStart:
		p.startItem(st, it.Frame.Position)
	case segments.ItemTrimmed:
		p.storeTrimmed(st, it.Gap.From, it.Gap.To)
	default:
		if st.sel.hasAfter && !st.sel.checked {
			p.checkTrimmed(st, it.Frame.Position)
		}
		p.itemFrame(st, it.Kind, &it.Frame)
	}
}

// itemGap renders the gap g of stream st, as much of it as the selection
// shows.
func (p *Printer) itemGap(st *streamInfo, g segments.Gap) {
	p.cursors.gap(st, g)
	g, ok := p.sel.clipGap(st, g, p.clock.startNS)
	if !ok {
		return
	}
	p.losses.Gaps++
	p.losses.MissingFrames += g.Count
	p.clock.at(&st.clock)
	p.gap(st, g)
}

// itemFrame renders frame f of stream st, delivered as kind (ItemFrame,
// ItemLate or ItemConflict): it takes in a clock reading, moves the
// stream's cursor, reads health and transport records, and, if the
// selection shows the frame, renders it in the printer's format.
func (p *Printer) itemFrame(st *streamInfo, kind segments.ItemKind, f *frames.Frame) {
	if kind == segments.ItemFrame {
		if f.Position == 0 {
			st.notes.fromStart = true
		}
		if f.Channel == st.clock.id && st.clock.id != 0 && p.clock.read(&st.clock, f.Position, f.Payload) && st.sel.untimed {
			p.sel.clocked(st)
		}
	}
	show := p.sel.shows(st, f.Position, p.clock.startNS)
	if kind == segments.ItemFrame && !p.sel.beyond(st, f.Position, p.clock.startNS) {
		st.read.take(f.Position)
	}
	p.clock.at(&st.clock)
	if st.clock.stepped {
		st.clock.stepped = false
		if show {
			p.losses.ClockSteps++
			p.clockStep(st, st.clock.step)
		}
	}
	if kind != segments.ItemConflict && st.notes.reads(f.Channel) {
		p.records(st, kind, f, show)
	}
	if !show {
		return
	}
	ci := p.channelOf(st, f.Channel)
	if !p.sel.shown(ci) {
		return
	}
	// The format's renderer (render_text.go, render_json.go); called from
	// here, not through a function of its own, to keep the per-frame path
	// one call shorter.
	text := ci != nil && ci.kind == frames.KindTextStream
	switch p.format {
	case FormatCat:
		// A conflicting copy is no part of the stream rebuilt (the first
		// copy is): its bytes would splice another run's output in; the
		// log's stderr warning counts it (WarnCopies).
		if kind == segments.ItemConflict {
			return
		}
		if len(p.sel.Channels)+len(p.sel.Contents) > 0 || text {
			if p.cat != nil {
				cc := CatChannel{Kind: frames.KindBytes}
				if ci != nil {
					cc = CatChannel{Name: ci.name, Kind: ci.kind, Terminal: st.terminal(ci)}
				}
				p.cat(st.clock.steady, f.Payload, cc)
				return
			}
			p.write(f.Payload)
		}
	case FormatJSON:
		if text && !p.json.frames && kind == segments.ItemFrame {
			p.joinText(st, ci, f)
			return
		}
		p.jsonFrame(st, ci, kind, f)
	default:
		if text && kind != segments.ItemConflict && kind != segments.ItemLate {
			p.joinText(st, ci, f)
			return
		}
		p.textRecord(st, ci, kind, f)
	}
}

// EndStream prints the unfinished lines of stream s, as they are, in the
// order they started: nothing can complete them once the stream has ended;
// then the printer forgets the stream.
func (p *Printer) EndStream(s frames.StreamID) {
	st := p.streams.m[s]
	if st == nil {
		return
	}
	p.endLines(st)
	// Nothing is left to print of it: forget it, so that a capture of very
	// many streams costs memory for the live ones only (its cursor
	// excepted). A later copy of the stream comes with its header, which
	// declares it again.
	p.cursors.forget(st)
	p.streams.remove(s)
}

// Close prints unfinished lines and flushes the output.
func (p *Printer) Close() error {
	p.closeLines()
	if p.err == nil {
		p.err = p.w.Flush()
	}
	return p.err
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

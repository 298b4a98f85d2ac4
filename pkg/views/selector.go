package views

import (
	"github.com/ds-telemetry/ds/pkg/segments"
	"slices"
	"strings"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// selector is a [Printer]'s side of a [Selection]: the filter decisions
// for streams, channels, positions and times, and what the filters
// matched of the inputs (for [Printer.Unmatched] and [Printer.Untimed]).
// Grep is applied where a line is rendered (render_text.go,
// render_json.go).
type selector struct {
	Selection
	// all shows the writer's own datastream.* channels (LogOptions.All).
	all bool
	// unknownVisible is the filter decision for channels without a
	// descriptor: shown only when no channel is selected.
	unknownVisible bool
	// matched says, per filter of Selection that names something, whether
	// anything in the inputs matched it (see unmatched).
	matched []bool
	untimed []frames.StreamID // the streams inTime found without a clock reading
}

// streamBounds is what the selection decided, or keeps, for one stream.
type streamBounds struct {
	hidden   bool            // the stream filters hide it
	after    frames.Position // Selection.After's entry for the stream, if hasAfter
	hasAfter bool
	checked  bool // checkTrimmed has looked at its first position
	untimed  bool // it had no clock reading when --since/--until needed one
}

func newSelector(sel Selection, all bool) selector {
	return selector{
		Selection:      sel,
		all:            all,
		unknownVisible: len(sel.Channels) == 0 && len(sel.Contents) == 0,
		matched:        make([]bool, len(sel.Channels)+len(sel.Contents)+len(sel.Nodes)+len(sel.Streams)+len(sel.Origins)),
	}
}

// bounds returns the decisions for a stream of descriptor d, noting which
// stream filters it matches.
func (s *selector) bounds(d frames.StreamDescriptor) streamBounds {
	b := streamBounds{hidden: !s.streamVisible(d)}
	s.matchStream(d)
	if a, ok := s.After[d.Stream]; ok {
		b.after, b.hasAfter = a, true
	}
	return b
}

// expected reports whether a stream the printer is told of up front
// counts for the stream column: one the stream filters hide does not
// (origin is not known from an id: --origin is decided when the
// descriptor comes).
func (s *selector) expected(id frames.StreamID) bool {
	return s.streamVisible(frames.StreamDescriptor{Stream: id}) || len(s.Origins) > 0
}

// channelVisible is the filter decision for a channel with descriptor d
// (see unknownVisible for one without).
func (s *selector) channelVisible(d frames.ChannelDescriptor) bool {
	if selected, ok := s.channelSelected(d); ok {
		if len(s.Channels) == 0 && !s.all && strings.HasPrefix(d.Name, "datastream.") {
			return false // --content alone does not name the writer's own channels
		}
		return selected
	}
	if s.all {
		return true
	}
	return !strings.HasPrefix(d.Name, "datastream.")
}

// shown is the filter decision for a frame of channel ci (nil: one
// without a descriptor).
func (s *selector) shown(ci *chanInfo) bool {
	if ci == nil {
		return s.unknownVisible
	}
	return ci.visible
}

// matchStream notes which stream filters the stream d matches.
func (s *selector) matchStream(d frames.StreamDescriptor) {
	i := len(s.Channels) + len(s.Contents)
	for _, n := range s.Nodes {
		if n == d.Stream.Node {
			s.matched[i] = true
		}
		i++
	}
	for _, id := range s.Streams {
		if id == d.Stream {
			s.matched[i] = true
		}
		i++
	}
	for _, o := range s.Origins {
		if o == d.Origin {
			s.matched[i] = true
		}
		i++
	}
}

// matchChannel notes which channel filters the channel d of a shown stream
// matches.
func (s *selector) matchChannel(d frames.ChannelDescriptor) {
	i := 0
	for _, f := range s.Channels {
		if f.Match(d) {
			s.matched[i] = true
		}
		i++
	}
	for _, k := range s.Contents {
		if k == d.Content.Kind {
			s.matched[i] = true
		}
		i++
	}
}

// unmatched returns the filters that matched nothing, as the user would
// spell them (see [Printer.Unmatched]).
func (s *selector) unmatched() []string {
	return s.Selection.unmatchedFlags(func(i int) bool { return s.matched[i] })
}

// unmatchedFlags spells, as the user typed them, the filters of s that
// hit(i) says matched nothing: i counts the channel filters, then the
// content, node, stream and origin filters, each in the order given
// ("-c nosuch", "-c proc.*", "--content bytes", "--node n9", "--stream
// n#1", "--origin Bootstrap").
func (s *Selection) unmatchedFlags(hit func(i int) bool) []string {
	var out []string
	i := 0
	add := func(flag string) {
		if !hit(i) {
			out = append(out, flag)
		}
		i++
	}
	for _, f := range s.Channels {
		name := f.Value
		if f.Kind == frames.ChannelsPrefix {
			name += "*"
		}
		add("-c " + name)
	}
	for _, k := range s.Contents {
		add("--content " + contentFlag(k))
	}
	for _, n := range s.Nodes {
		add("--node " + string(n))
	}
	for _, id := range s.Streams {
		add("--stream " + id.String())
	}
	for _, o := range s.Origins {
		add("--origin " + o.String())
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

// shows is the decision of the position, cursor and time bounds for a
// frame at pos of stream st (after st's clock reading was updated); start
// is the start of the inputs (timebase.startNS).
func (s *selector) shows(st *streamInfo, pos frames.Position, start int64) bool {
	if r := s.Positions; r != nil && (pos < r.From || pos > r.To) {
		return false
	}
	if st.sel.hasAfter && pos <= st.sel.after {
		return false
	}
	if s.timed() {
		return s.inTime(st, start)
	}
	return true
}

// clocked takes stream st, which now has a clock reading, off the untimed
// list: only frames before its first reading went unplaced.
func (s *selector) clocked(st *streamInfo) {
	st.sel.untimed = false
	for i, id := range s.untimed {
		if id == st.desc.Stream {
			s.untimed = append(s.untimed[:i], s.untimed[i+1:]...)
			break
		}
	}
}

// beyond reports whether a frame at pos of stream st is past the end of
// what the selection shows (--positions' end, --until): the cursor does
// not move over it, so that a later run shows it.
func (s *selector) beyond(st *streamInfo, pos frames.Position, start int64) bool {
	if r := s.Positions; r != nil && pos > r.To {
		return true
	}
	if b := s.Until; b != nil && st.clock.ns != 0 {
		if ns, ok := b.resolve(start); ok && st.clock.ns > ns {
			return true
		}
	}
	return false
}

// inTime reports whether stream st's current time is within --since and
// --until.
func (s *selector) inTime(st *streamInfo, start int64) bool {
	if st.clock.ns == 0 {
		if !st.sel.untimed {
			st.sel.untimed = true
			s.untimed = append(s.untimed, st.desc.Stream)
		}
		return false
	}
	if b := s.Since; b != nil {
		if ns, ok := b.resolve(start); !ok || st.clock.ns < ns {
			return false
		}
	}
	if b := s.Until; b != nil {
		if ns, ok := b.resolve(start); ok && st.clock.ns > ns {
			return false
		}
	}
	return true
}

// clipGap cuts a gap to the positions shown; ok is false when nothing of
// it is.
func (s *selector) clipGap(st *streamInfo, g segments.Gap, start int64) (segments.Gap, bool) {
	if r := s.Positions; r != nil {
		g.From, g.To = max(g.From, r.From), min(g.To, r.To)
	}
	if st.sel.hasAfter && g.From <= st.sel.after {
		if g.To <= st.sel.after {
			return g, false
		}
		g.From = st.sel.after + 1
	}
	if g.From > g.To {
		return g, false
	}
	if s.timed() && !s.inTime(st, start) {
		return g, false
	}
	g.Count = uint64(g.To-g.From) + 1
	return g, true
}

// expectStreams returns the streams of streams that count for the stream
// column (see expected).
func (s *selector) expectStreams(streams []frames.StreamID) []frames.StreamID {
	return slices.DeleteFunc(slices.Clone(streams), func(id frames.StreamID) bool { return !s.expected(id) })
}

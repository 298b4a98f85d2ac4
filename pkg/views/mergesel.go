package views

import (
	"errors"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// ErrBoundFromStart is returned by [NewMergeSelection] for a time bound
// relative to the start of the inputs (+DURATION): a merge reads its
// inputs once and cannot know their start in advance.
var ErrBoundFromStart = errors.New("views: a time bound relative to the inputs' start cannot be applied in one pass")

// MergeSelection applies the shared filters of a [Selection] to a merge
// of captures (segments.Merge, ds merge), as the views apply them to
// what they show: stream filters (Nodes, Streams, Origins) choose streams,
// channel filters (Channels, Contents) channels, and Positions, Since
// and Until the frames of each stream, a frame's time being its stream's
// latest datastream.clock reading (a stream without one keeps nothing).
// Grep and After do not apply to a merge and are ignored. It notes which
// filters matched something, for [MergeSelection.Unmatched].
//
// A MergeSelection serves one merge: its functions are called from the
// goroutine that runs it, and Unmatched and Untimed are read after it.
type MergeSelection struct {
	sel       Selection
	streamHit []bool // per Nodes, Streams, Origins entry: a stream matched
	chanHit   []bool // per Channels, Contents entry: a channel matched
	clock     map[frames.StreamID]int64
	untimed   map[frames.StreamID]bool
	untimedIn []frames.StreamID
}

// NewMergeSelection returns the merge filters of sel. A Since or Until
// bound relative to the inputs' start is refused with ErrBoundFromStart.
func NewMergeSelection(sel Selection) (*MergeSelection, error) {
	for _, b := range []*TimeBound{sel.Since, sel.Until} {
		if b != nil && b.FromStart {
			return nil, ErrBoundFromStart
		}
	}
	return &MergeSelection{
		sel:       sel,
		streamHit: make([]bool, len(sel.Nodes)+len(sel.Streams)+len(sel.Origins)),
		chanHit:   make([]bool, len(sel.Channels)+len(sel.Contents)),
	}, nil
}

// Apply sets the Select, Channels and Frame functions of opts to those of
// the filters given (the others are left as they are).
func (m *MergeSelection) Apply(opts *segments.MergeOptions) {
	if len(m.streamHit) > 0 {
		opts.Select = m.stream
	}
	if len(m.chanHit) > 0 {
		opts.Channels = m.channel
	}
	if m.sel.Positions != nil || m.sel.Since != nil || m.sel.Until != nil {
		opts.Frame = m.frame
	}
}

// stream decides a stream: every filter kind given must match.
func (m *MergeSelection) stream(d frames.StreamDescriptor) bool {
	s := &m.sel
	i := 0
	ok := true
	match := func(hit bool) {
		if hit {
			m.streamHit[i] = true
		}
		i++
	}
	oneOf := func(n int, f func(k int) bool) {
		found := n == 0
		for k := range n {
			hit := f(k)
			match(hit)
			found = found || hit
		}
		ok = ok && found
	}
	oneOf(len(s.Nodes), func(k int) bool { return d.Stream.Node == s.Nodes[k] })
	oneOf(len(s.Streams), func(k int) bool { return d.Stream == s.Streams[k] })
	oneOf(len(s.Origins), func(k int) bool { return d.Origin == s.Origins[k] })
	return ok
}

// channel decides a channel: its content must be one Contents names
// (when given) and its name one Channels names (when given).
func (m *MergeSelection) channel(_ frames.StreamID, d frames.ChannelDescriptor) bool {
	s := &m.sel
	okName := len(s.Channels) == 0
	for k, f := range s.Channels {
		if f.Match(d) {
			okName = true
			m.chanHit[k] = true
		}
	}
	okContent := len(s.Contents) == 0
	for k, c := range s.Contents {
		if d.Content.Kind == c {
			okContent = true
			m.chanHit[len(s.Channels)+k] = true
		}
	}
	return okName && okContent
}

// frame applies Positions, Since and Until to a frame in position order:
// its time is its stream's latest clock reading.
func (m *MergeSelection) frame(s frames.StreamID, d *frames.ChannelDescriptor, f frames.Frame) bool {
	if p := m.sel.Positions; p != nil && (f.Position < p.From || f.Position > p.To) {
		return false
	}
	if m.sel.Since == nil && m.sel.Until == nil {
		return true
	}
	if m.clock == nil {
		m.clock, m.untimed = map[frames.StreamID]int64{}, map[frames.StreamID]bool{}
	}
	if d != nil && d.Name == frames.ClockChannel {
		if c, err := frames.DecodeRecord(f.Payload, frames.ClockRecord{UnixNS: -1}); err == nil && c.UnixNS >= 0 {
			m.clock[s] = c.UnixNS
		}
	}
	ns, ok := m.clock[s]
	if !ok {
		if !m.untimed[s] {
			m.untimed[s] = true
			m.untimedIn = append(m.untimedIn, s)
		}
		return false
	}
	if b := m.sel.Since; b != nil && ns < b.UnixNS {
		return false
	}
	if b := m.sel.Until; b != nil && ns > b.UnixNS {
		return false
	}
	return true
}

// Unmatched returns, once the merge is done, the filters that matched no
// channel or stream of the inputs, as the user would spell them ("-c
// nosuch", "--content bytes", "--node n9", "--stream n#1", "--origin
// Bootstrap"): channel filters first, then stream filters, each in the
// order given.
func (m *MergeSelection) Unmatched() []string {
	nc := len(m.sel.Channels) + len(m.sel.Contents)
	return m.sel.unmatchedFlags(func(i int) bool {
		if i < nc {
			return m.chanHit[i]
		}
		return m.streamHit[i-nc]
	})
}

// Untimed returns, once the merge is done, the streams that Since or
// Until left out whole because they had no datastream.clock reading at
// all, in the order met.
func (m *MergeSelection) Untimed() []frames.StreamID {
	var ids []frames.StreamID
	for _, id := range m.untimedIn {
		if _, ok := m.clock[id]; !ok {
			ids = append(ids, id)
		}
	}
	return ids
}

package catalogfile

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/ds-telemetry/ds/pkg/frames"
)

var (
	// ErrConflict is matched (errors.Is) by every [*ConflictError].
	ErrConflict = errors.New("catalogfile: conflicting descriptors")

	// ErrInvalid means a descriptor a catalog cannot hold: channel id 0
	// (never handed out, ARCHITECTURE.md rule 2.4), an empty channel name, or a content
	// kind or stream origin outside the seed's spellings.
	ErrInvalid = errors.New("catalogfile: invalid descriptor")
)

// A ConflictError reports two descriptors that cannot both hold (seed 000
// §2.4, §3.3): two stream descriptors of one stream that differ, two channel
// descriptors with the same stream and id that differ, or two channel ids of
// one stream with the same name. Old is the descriptor the catalog held,
// New the one being added; exactly one of the pairs is set.
type ConflictError struct {
	Stream frames.StreamID // the stream both descriptors belong to

	OldStream, NewStream *frames.StreamDescriptor // a stream conflict

	// A channel conflict. OldChannel.ID == NewChannel.ID when the descriptors
	// of one id differ; otherwise the two ids share OldChannel.Name.
	OldChannel, NewChannel *frames.ChannelDescriptor

	OldSource, NewSource string // where each descriptor came from
}

// Error names both descriptors, as seed JSON, and both sources.
func (e *ConflictError) Error() string {
	switch {
	case e.OldStream != nil && e.NewStream != nil:
		return fmt.Sprintf("catalogfile: conflicting descriptors for stream %s: %s from %q, %s from %q",
			e.Stream, jsonText(e.OldStream), e.OldSource, jsonText(e.NewStream), e.NewSource)
	case e.OldChannel != nil && e.NewChannel != nil && e.OldChannel.ID != e.NewChannel.ID:
		return fmt.Sprintf("catalogfile: channel name %q of stream %s is id %d in %q and id %d in %q",
			e.NewChannel.Name, e.Stream, e.OldChannel.ID, e.OldSource, e.NewChannel.ID, e.NewSource)
	case e.OldChannel != nil && e.NewChannel != nil:
		return fmt.Sprintf("catalogfile: conflicting descriptors for channel %d of stream %s: %s from %q, %s from %q",
			e.NewChannel.ID, e.Stream, jsonText(e.OldChannel), e.OldSource, jsonText(e.NewChannel), e.NewSource)
	}
	return fmt.Sprintf("catalogfile: conflicting descriptors for stream %s", e.Stream)
}

// Unwrap returns [ErrConflict].
func (e *ConflictError) Unwrap() error { return ErrConflict }

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}

// StreamEntry is a stream as a [Catalog] holds it.
type StreamEntry struct {
	// Descriptor is the stream's descriptor. For an undeclared stream only
	// Descriptor.Stream is meaningful.
	Descriptor frames.StreamDescriptor
	// Declared is false for a stream known only through its channels.
	Declared bool
	// Source says where the descriptor came from; "" when undeclared.
	Source string
}

// ChannelEntry is a channel as a [Catalog] holds it.
type ChannelEntry struct {
	Descriptor frames.ChannelDescriptor
	Source     string // where the descriptor came from
}

// Catalog is an in-memory set of stream and channel descriptors, each with
// the source it came from. The zero value is an empty catalog ready to use.
//
// A Catalog is not safe for concurrent use when any goroutine adds to it;
// methods that only read may run concurrently. Descriptors go in and come
// out as copies: changing a returned Label does not change the catalog.
type Catalog struct {
	streams map[frames.StreamID]*streamState
}

type streamState struct {
	entry    StreamEntry
	channels map[frames.ChannelID]ChannelEntry
	names    map[string]frames.ChannelID
}

// New returns an empty catalog.
func New() *Catalog { return &Catalog{} }

// AddStream adds a stream descriptor that came from source. It is a no-op
// when the catalog holds an identical descriptor, and declares the stream
// when the catalog knew only its channels. It returns a [*ConflictError]
// when the catalog holds a different descriptor for the stream, and an error
// wrapping [ErrInvalid] for an origin outside the seed's spellings; the
// catalog is then unchanged.
func (c *Catalog) AddStream(desc frames.StreamDescriptor, source string) error {
	if _, err := desc.Origin.MarshalJSON(); err != nil {
		return fmt.Errorf("%w: stream %s: origin %d", ErrInvalid, desc.Stream, desc.Origin)
	}
	st := c.streams[desc.Stream]
	if st != nil && st.entry.Declared {
		if streamEqual(st.entry.Descriptor, desc) {
			return nil
		}
		return &ConflictError{
			Stream:    desc.Stream,
			OldStream: ptr(cloneStream(st.entry.Descriptor)), NewStream: ptr(cloneStream(desc)),
			OldSource: st.entry.Source, NewSource: source,
		}
	}
	if st == nil {
		st = c.newStream(desc.Stream)
	}
	st.entry = StreamEntry{Descriptor: cloneStream(desc), Declared: true, Source: source}
	return nil
}

// AddChannel adds a channel descriptor that came from source. It is a no-op
// when the catalog holds an identical descriptor for the same stream and id.
// It returns a [*ConflictError] when the catalog holds a different
// descriptor (name, label or content) for that stream and id, or holds the
// same name under another id of the stream; and an error wrapping
// [ErrInvalid] for id 0, an empty name or an unknown content kind. The
// catalog is then unchanged. The channel's stream need not be declared.
func (c *Catalog) AddChannel(desc frames.ChannelDescriptor, source string) error {
	switch {
	case desc.ID == 0:
		return fmt.Errorf("%w: channel id 0 in stream %s", ErrInvalid, desc.Stream)
	case desc.Name == "":
		return fmt.Errorf("%w: channel %d of stream %s has no name", ErrInvalid, desc.ID, desc.Stream)
	}
	if _, err := desc.Content.MarshalJSON(); err != nil {
		return fmt.Errorf("%w: channel %d of stream %s: content kind %d", ErrInvalid, desc.ID, desc.Stream, desc.Content.Kind)
	}
	st := c.streams[desc.Stream]
	if st != nil {
		if old, ok := st.channels[desc.ID]; ok {
			if channelEqual(old.Descriptor, desc) {
				return nil
			}
			return channelConflict(old, desc, source)
		}
		if id, ok := st.names[desc.Name]; ok {
			return channelConflict(st.channels[id], desc, source)
		}
	} else {
		st = c.newStream(desc.Stream)
	}
	st.channels[desc.ID] = ChannelEntry{Descriptor: cloneChannel(desc), Source: source}
	st.names[desc.Name] = desc.ID
	return nil
}

func channelConflict(old ChannelEntry, desc frames.ChannelDescriptor, source string) *ConflictError {
	return &ConflictError{
		Stream:     desc.Stream,
		OldChannel: ptr(cloneChannel(old.Descriptor)), NewChannel: ptr(cloneChannel(desc)),
		OldSource: old.Source, NewSource: source,
	}
}

func (c *Catalog) newStream(id frames.StreamID) *streamState {
	if c.streams == nil {
		c.streams = make(map[frames.StreamID]*streamState)
	}
	st := &streamState{
		entry:    StreamEntry{Descriptor: frames.StreamDescriptor{Stream: id}},
		channels: make(map[frames.ChannelID]ChannelEntry),
		names:    make(map[string]frames.ChannelID),
	}
	c.streams[id] = st
	return st
}

// AddEvent adds the descriptor of a StreamDeclared or ChannelDeclared event,
// as [Catalog.AddStream] or [Catalog.AddChannel] would, and ignores every
// other event. It lets a catalog follow a live subscription or a
// wireformat.DSQ1Reader (its HeaderEvents, then each Next). A declaration
// event without its descriptor yields an error wrapping [ErrInvalid].
func (c *Catalog) AddEvent(ev frames.Event, source string) error {
	switch ev.Kind {
	case frames.EventStreamDeclared:
		if ev.Stream == nil {
			return fmt.Errorf("%w: StreamDeclared event without descriptor", ErrInvalid)
		}
		return c.AddStream(*ev.Stream, source)
	case frames.EventChannelDeclared:
		if ev.Channel == nil {
			return fmt.Errorf("%w: ChannelDeclared event without descriptor", ErrInvalid)
		}
		return c.AddChannel(*ev.Channel, source)
	}
	return nil
}

// Merge adds every descriptor of other to c, keeping c's source for
// descriptors both hold. It is all or nothing: if any descriptor of other
// conflicts with c, Merge changes nothing and returns every conflict, each a
// [*ConflictError], joined with errors.Join (errors.As finds the first).
// other is not changed; a nil other is an empty catalog.
func (c *Catalog) Merge(other *Catalog) error {
	if other == nil {
		return nil
	}
	merged := c.clone()
	var errs []error
	for _, s := range other.Streams() {
		if s.Declared {
			if err := merged.AddStream(s.Descriptor, s.Source); err != nil {
				errs = append(errs, err)
			}
		} else if merged.streams[s.Descriptor.Stream] == nil {
			merged.newStream(s.Descriptor.Stream)
		}
		for _, ch := range other.Channels(s.Descriptor.Stream) {
			if err := merged.AddChannel(ch.Descriptor, ch.Source); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	c.streams = merged.streams
	return nil
}

func (c *Catalog) clone() *Catalog {
	n := &Catalog{streams: make(map[frames.StreamID]*streamState, len(c.streams))}
	for id, st := range c.streams {
		cp := &streamState{
			entry:    st.entry,
			channels: make(map[frames.ChannelID]ChannelEntry, len(st.channels)),
			names:    make(map[string]frames.ChannelID, len(st.names)),
		}
		for k, v := range st.channels {
			cp.channels[k] = v
		}
		for k, v := range st.names {
			cp.names[k] = v
		}
		n.streams[id] = cp
	}
	return n
}

// Stream returns the entry of stream and whether the catalog knows the
// stream at all (declared or through its channels).
func (c *Catalog) Stream(stream frames.StreamID) (StreamEntry, bool) {
	st := c.streams[stream]
	if st == nil {
		return StreamEntry{}, false
	}
	return cloneStreamEntry(st.entry), true
}

// Lookup returns channel id of stream and whether the catalog holds it.
func (c *Catalog) Lookup(stream frames.StreamID, id frames.ChannelID) (ChannelEntry, bool) {
	st := c.streams[stream]
	if st == nil {
		return ChannelEntry{}, false
	}
	e, ok := st.channels[id]
	if !ok {
		return ChannelEntry{}, false
	}
	return cloneChannelEntry(e), true
}

// LookupName returns the channel of stream called name and whether the
// catalog holds it. Names are exact; there is no prefix matching here.
func (c *Catalog) LookupName(stream frames.StreamID, name string) (ChannelEntry, bool) {
	st := c.streams[stream]
	if st == nil {
		return ChannelEntry{}, false
	}
	id, ok := st.names[name]
	if !ok {
		return ChannelEntry{}, false
	}
	return cloneChannelEntry(st.channels[id]), true
}

// Streams returns every stream the catalog knows, declared or not, sorted
// by [frames.StreamID.Compare]. The slice is new on every call.
func (c *Catalog) Streams() []StreamEntry {
	out := make([]StreamEntry, 0, len(c.streams))
	for _, st := range c.streams {
		out = append(out, cloneStreamEntry(st.entry))
	}
	slices.SortFunc(out, func(a, b StreamEntry) int { return a.Descriptor.Stream.Compare(b.Descriptor.Stream) })
	return out
}

// Channels returns the channels of stream sorted by id, or nil when the
// catalog knows none. The slice is new on every call.
func (c *Catalog) Channels(stream frames.StreamID) []ChannelEntry {
	st := c.streams[stream]
	if st == nil || len(st.channels) == 0 {
		return nil
	}
	out := make([]ChannelEntry, 0, len(st.channels))
	for _, e := range st.channels {
		out = append(out, cloneChannelEntry(e))
	}
	slices.SortFunc(out, func(a, b ChannelEntry) int { return cmp.Compare(a.Descriptor.ID, b.Descriptor.ID) })
	return out
}

func streamEqual(a, b frames.StreamDescriptor) bool {
	return a.Stream == b.Stream && a.Origin == b.Origin && labelEqual(a.Label, b.Label)
}

func channelEqual(a, b frames.ChannelDescriptor) bool {
	return a.Stream == b.Stream && a.ID == b.ID && a.Name == b.Name &&
		labelEqual(a.Label, b.Label) && a.Content.Equal(b.Content)
}

func labelEqual(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func ptr[T any](v T) *T { return &v }

func cloneString(s *string) *string {
	if s == nil {
		return nil
	}
	return ptr(*s)
}

func cloneStream(d frames.StreamDescriptor) frames.StreamDescriptor {
	d.Label = cloneString(d.Label)
	return d
}

func cloneChannel(d frames.ChannelDescriptor) frames.ChannelDescriptor {
	d.Label = cloneString(d.Label)
	if d.Content.Kind == frames.KindJSONRecord {
		d.Content.Schema = cloneString(d.Content.Schema)
	} else {
		d.Content.Schema = nil // meaningless outside JsonRecord (frames.ChannelContent)
	}
	return d
}

func cloneStreamEntry(e StreamEntry) StreamEntry {
	e.Descriptor = cloneStream(e.Descriptor)
	return e
}

func cloneChannelEntry(e ChannelEntry) ChannelEntry {
	e.Descriptor = cloneChannel(e.Descriptor)
	return e
}

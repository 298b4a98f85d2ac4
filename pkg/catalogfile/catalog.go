package catalogfile

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
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
//
// A catalog is held compactly, for catalogs of a hundred thousand channels
// and more (a 16 MiB header, ds-format(5) "SIZE LIMITS"): the channels of a
// stream as one slice sorted by id, about 48 bytes each besides their
// names, and each distinct source once.
type Catalog struct {
	streams map[frames.StreamID]*streamState
	sources []string         // each distinct source once; streamState.srcs indexes it
	srcIdx  map[string]int32 // the index of each source in sources
}

type streamState struct {
	entry StreamEntry
	// descs are the stream's channels sorted by id, their pointers the
	// catalog's own, in the form a segment header takes, so that
	// [Catalog.Descriptors] hands them out without a copy (a store's
	// commit of 120 000 channels held one of 8 MiB beside the catalog;
	// issue 21 item 5); shared says it did, and descs is copied before
	// anything in it moves. srcs holds the index in Catalog.sources of
	// each one's source.
	descs  []frames.ChannelDescriptor
	srcs   []int32
	shared bool
	names  nameIndex
}

// nameIndex finds a stream's channel by name: the id of each name, keyed
// by a hash of it (a map of the names themselves took 6 of the 12 MiB of a
// catalog of 120 000 channels), and in a map of their own the few names
// whose hash another name had first.
type nameIndex struct {
	seed     maphash.Seed
	ids      map[uint64]frames.ChannelID
	collided map[string]frames.ChannelID
}

// get returns the id of the channel called name; nameOf gives the name of
// a channel of the stream by id.
func (x *nameIndex) get(name string, nameOf func(frames.ChannelID) string) (frames.ChannelID, bool) {
	if id, ok := x.collided[name]; ok {
		return id, true
	}
	id, ok := x.ids[maphash.String(x.seed, name)]
	if !ok || nameOf(id) != name {
		return 0, false
	}
	return id, true
}

// put adds the channel id called name, a name get does not find.
func (x *nameIndex) put(name string, id frames.ChannelID) {
	h := maphash.String(x.seed, name)
	if _, taken := x.ids[h]; !taken {
		x.ids[h] = id
		return
	}
	if x.collided == nil {
		x.collided = make(map[string]frames.ChannelID)
	}
	x.collided[name] = id
}

// nameOf returns the name of channel id of st, "" if st has none.
func (st *streamState) nameOf(id frames.ChannelID) string {
	if k, ok := st.find(id); ok {
		return st.descs[k].Name
	}
	return ""
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
	_, err := c.addStream(desc, source)
	return err
}

// addStream is AddStream, also reporting whether the catalog changed.
func (c *Catalog) addStream(desc frames.StreamDescriptor, source string) (bool, error) {
	if err := c.checkStream(desc, source); err != nil {
		return false, err
	}
	st := c.streams[desc.Stream]
	if st != nil && st.entry.Declared {
		return false, nil
	}
	if st == nil {
		st = c.newStream(desc.Stream)
	}
	st.entry = StreamEntry{Descriptor: cloneStream(desc), Declared: true, Source: source}
	return true, nil
}

// checkStream returns the error AddStream would return, changing nothing.
func (c *Catalog) checkStream(desc frames.StreamDescriptor, source string) error {
	if _, err := desc.Origin.MarshalJSON(); err != nil {
		return fmt.Errorf("%w: stream %s: origin %d", ErrInvalid, desc.Stream, desc.Origin)
	}
	st := c.streams[desc.Stream]
	if st != nil && st.entry.Declared && !streamEqual(st.entry.Descriptor, desc) {
		return &ConflictError{
			Stream:    desc.Stream,
			OldStream: ptr(cloneStream(st.entry.Descriptor)), NewStream: ptr(cloneStream(desc)),
			OldSource: st.entry.Source, NewSource: source,
		}
	}
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
	_, err := c.addChannel(desc, source)
	return err
}

// addChannel is AddChannel, also reporting whether the catalog changed.
func (c *Catalog) addChannel(desc frames.ChannelDescriptor, source string) (bool, error) {
	held, at, err := c.checkChannel(desc, source)
	if err != nil || held {
		return false, err
	}
	st := c.streams[desc.Stream]
	if st == nil {
		st = c.newStream(desc.Stream)
	}
	d, src := cloneChannel(desc), c.sourceIndex(source)
	if at == len(st.descs) {
		// The common case: ids in order. What Descriptors handed out
		// ends before (it is clipped): nothing of it moves.
		st.descs, st.srcs = append(st.descs, d), append(st.srcs, src)
	} else {
		if st.shared {
			st.descs, st.shared = slices.Clone(st.descs), false
		}
		st.descs, st.srcs = slices.Insert(st.descs, at, d), slices.Insert(st.srcs, at, src)
	}
	st.names.put(desc.Name, desc.ID)
	return true, nil
}

// checkChannel returns the error AddChannel would return, changing
// nothing; otherwise whether the catalog holds desc already and, when it
// does not, where in its stream's channels desc goes.
func (c *Catalog) checkChannel(desc frames.ChannelDescriptor, source string) (held bool, at int, err error) {
	switch {
	case desc.ID == 0:
		return false, 0, fmt.Errorf("%w: channel id 0 in stream %s", ErrInvalid, desc.Stream)
	case desc.Name == "":
		return false, 0, fmt.Errorf("%w: channel %d of stream %s has no name", ErrInvalid, desc.ID, desc.Stream)
	}
	if _, err := desc.Content.MarshalJSON(); err != nil {
		return false, 0, fmt.Errorf("%w: channel %d of stream %s: content kind %d", ErrInvalid, desc.ID, desc.Stream, desc.Content.Kind)
	}
	st := c.streams[desc.Stream]
	if st == nil {
		return false, 0, nil
	}
	at, found := st.find(desc.ID)
	if found {
		old := c.entry(st, at)
		if channelEqual(old.Descriptor, desc) {
			return true, at, nil
		}
		return false, 0, channelConflict(old, desc, source)
	}
	if id, ok := st.names.get(desc.Name, st.nameOf); ok {
		k, _ := st.find(id)
		return false, 0, channelConflict(c.entry(st, k), desc, source)
	}
	return false, at, nil
}

// find returns where channel id is or would go in st.descs, and whether
// it is there.
func (st *streamState) find(id frames.ChannelID) (int, bool) {
	n := len(st.descs)
	if n == 0 || st.descs[n-1].ID < id {
		return n, false
	}
	return slices.BinarySearchFunc(st.descs, id, func(d frames.ChannelDescriptor, id frames.ChannelID) int { return cmp.Compare(d.ID, id) })
}

// sourceIndex returns the index of source in c.sources, adding it.
func (c *Catalog) sourceIndex(source string) int32 {
	if n := len(c.sources); n > 0 && c.sources[n-1] == source {
		return int32(n - 1)
	}
	if i, ok := c.srcIdx[source]; ok {
		return i
	}
	if c.srcIdx == nil {
		c.srcIdx = make(map[string]int32)
	}
	i := int32(len(c.sources))
	c.sources = append(c.sources, source)
	c.srcIdx[source] = i
	return i
}

// entry returns channel k of st as a ChannelEntry, its pointers copied.
func (c *Catalog) entry(st *streamState, k int) ChannelEntry {
	return ChannelEntry{Descriptor: cloneChannel(st.descs[k]), Source: c.sources[st.srcs[k]]}
}

func channelConflict(old ChannelEntry, desc frames.ChannelDescriptor, source string) *ConflictError {
	return &ConflictError{
		Stream:     desc.Stream,
		OldChannel: ptr(old.Descriptor), NewChannel: ptr(cloneChannel(desc)),
		OldSource: old.Source, NewSource: source,
	}
}

func (c *Catalog) newStream(id frames.StreamID) *streamState {
	if c.streams == nil {
		c.streams = make(map[frames.StreamID]*streamState)
	}
	st := &streamState{
		entry: StreamEntry{Descriptor: frames.StreamDescriptor{Stream: id}},
		names: nameIndex{seed: maphash.MakeSeed(), ids: make(map[uint64]frames.ChannelID)},
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
	_, err := c.MergeChanged(other)
	return err
}

// MergeChanged is [Catalog.Merge], also reporting whether c changed: a
// stream or channel of other that c did not hold, or a stream c knew
// only through its channels that other declares. It checks every
// descriptor of other before it adds any, so that it needs no copy of c
// (a store's catalog of a hundred thousand channels is merged at every
// commit).
func (c *Catalog) MergeChanged(other *Catalog) (changed bool, err error) {
	if other == nil {
		return false, nil
	}
	// other holds no conflict within itself, so checking each of its
	// descriptors against c alone finds every conflict of the merge.
	var errs []error
	for _, id := range other.streamIDs() {
		ost := other.streams[id]
		if ost.entry.Declared {
			if err := c.checkStream(ost.entry.Descriptor, ost.entry.Source); err != nil {
				errs = append(errs, err)
			}
		}
		for k := range ost.descs {
			e := other.entry(ost, k)
			if _, _, err := c.checkChannel(e.Descriptor, e.Source); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return false, errors.Join(errs...)
	}
	for _, id := range other.streamIDs() {
		ost := other.streams[id]
		if ost.entry.Declared {
			ch, _ := c.addStream(ost.entry.Descriptor, ost.entry.Source)
			changed = changed || ch
		} else if c.streams[id] == nil {
			c.newStream(id)
			changed = true
		}
		for k := range ost.descs {
			e := other.entry(ost, k)
			ch, _ := c.addChannel(e.Descriptor, e.Source)
			changed = changed || ch
		}
	}
	return changed, nil
}

// streamIDs returns the ids of c's streams, sorted.
func (c *Catalog) streamIDs() []frames.StreamID {
	ids := make([]frames.StreamID, 0, len(c.streams))
	for id := range c.streams {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, frames.StreamID.Compare)
	return ids
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
	k, ok := st.find(id)
	if !ok {
		return ChannelEntry{}, false
	}
	return c.entry(st, k), true
}

// LookupName returns the channel of stream called name and whether the
// catalog holds it. Names are exact; there is no prefix matching here.
func (c *Catalog) LookupName(stream frames.StreamID, name string) (ChannelEntry, bool) {
	st := c.streams[stream]
	if st == nil {
		return ChannelEntry{}, false
	}
	id, ok := st.names.get(name, st.nameOf)
	if !ok {
		return ChannelEntry{}, false
	}
	return c.Lookup(stream, id)
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
	if st == nil || len(st.descs) == 0 {
		return nil
	}
	out := make([]ChannelEntry, len(st.descs))
	for k := range st.descs {
		out[k] = c.entry(st, k)
	}
	return out
}

// Descriptors returns the descriptors of the channels of stream sorted by
// id, or nil when the catalog knows none: [Catalog.Channels] without the
// sources, in one slice (what a segment header takes). The slice is the
// catalog's own, not a copy (a catalog of 120 000 channels would need
// 8 MiB more): what the catalog learns later never changes it (the
// catalog copies it first where it would), but the caller must not change
// its elements or what their pointers point to.
func (c *Catalog) Descriptors(stream frames.StreamID) []frames.ChannelDescriptor {
	st := c.streams[stream]
	if st == nil || len(st.descs) == 0 {
		return nil
	}
	st.shared = true
	return slices.Clip(st.descs)
}

// AdoptChannels adds descs, channels of stream sorted by strictly
// increasing id (a segment header's catalog as the readers decode it),
// from source, as AddChannel would add each, and reports whether it added
// any. Where the catalog knows the stream but none of its channels, and
// every descriptor is one AddChannel would take, it takes descs itself
// (and the strings and pointers of its elements) as the stream's storage
// instead of copying it: a reader's header of 120 000 channels and the
// catalog made of it are 8 MiB, not 16 (issue 21 item 5). The caller
// must not use descs afterwards. Otherwise each descriptor is added in
// turn; the first error (as AddChannel's) stops it, with the descriptors
// before it added.
func (c *Catalog) AdoptChannels(stream frames.StreamID, descs []frames.ChannelDescriptor, source string) (bool, error) {
	if st := c.streams[stream]; st != nil && len(st.descs) == 0 {
		if names, ok := adoptable(st, descs); ok {
			st.descs, st.shared, st.names = slices.Clip(descs), false, names
			src := c.sourceIndex(source)
			st.srcs = make([]int32, len(descs))
			for k := range st.srcs {
				st.srcs[k] = src
			}
			return len(descs) > 0, nil
		}
	}
	changed := false
	for _, d := range descs {
		ch, err := c.addChannel(d, source)
		if err != nil {
			return changed, err
		}
		changed = changed || ch
	}
	return changed, nil
}

// adoptable reports whether descs can become the channels of st, which
// has none: each of st's stream, a valid descriptor, in the order of ids,
// names distinct, and in the form cloneChannel makes; if so, it returns
// their name index.
func adoptable(st *streamState, descs []frames.ChannelDescriptor) (nameIndex, bool) {
	names := nameIndex{seed: st.names.seed, ids: make(map[uint64]frames.ChannelID, len(descs))}
	nameOf := func(id frames.ChannelID) string {
		k, ok := slices.BinarySearchFunc(descs, id, func(d frames.ChannelDescriptor, id frames.ChannelID) int { return cmp.Compare(d.ID, id) })
		if !ok {
			return ""
		}
		return descs[k].Name
	}
	for k := range descs {
		d := &descs[k]
		switch {
		case d.Stream != st.entry.Descriptor.Stream, d.ID == 0, d.Name == "",
			k > 0 && d.ID <= descs[k-1].ID,
			d.Content.Kind != frames.KindJSONRecord && d.Content.Schema != nil:
			return nameIndex{}, false
		}
		if _, err := d.Content.MarshalJSON(); err != nil {
			return nameIndex{}, false
		}
		if _, dup := names.get(d.Name, nameOf); dup {
			return nameIndex{}, false
		}
		names.put(d.Name, d.ID)
	}
	return names, true
}

// Grow makes room for stream to hold n channels in all (a header's full
// catalog), so that adding them one by one does not grow the catalog's
// slices step by step: for 120 000 channels each step's old copy, 8 MiB
// at the last, stayed resident beside the new one. It does nothing for a
// stream the catalog does not know, and changes nothing it holds.
func (c *Catalog) Grow(stream frames.StreamID, n int) {
	st := c.streams[stream]
	if st == nil {
		return
	}
	if more := n - len(st.descs); more > 0 && cap(st.descs) < n {
		st.descs, st.shared = slices.Grow(st.descs, more), false
		st.srcs = slices.Grow(st.srcs, more)
		if len(st.names.ids) == 0 && len(st.names.collided) == 0 {
			st.names.ids = make(map[uint64]frames.ChannelID, n)
		}
	}
}

// Empty reports whether the catalog holds no stream and no channel.
func (c *Catalog) Empty() bool { return len(c.streams) == 0 }

// Len returns the number of channels of stream the catalog holds.
func (c *Catalog) Len(stream frames.StreamID) int {
	if st := c.streams[stream]; st != nil {
		return len(st.descs)
	}
	return 0
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

package frames

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"unicode/utf8"
)

// ErrChannelConflict is wrapped by the *ConflictError that [Catalog.Register]
// returns when a name is registered again with other content (ARCHITECTURE.md rule 3.3).
var ErrChannelConflict = errors.New("frames: channel registered with conflicting content")

// ErrChannelsExhausted is returned when a catalog has handed out every id up
// to its limit. Ids are never reused (ARCHITECTURE.md rule 2.4), so this is final.
var ErrChannelsExhausted = errors.New("frames: channel ids exhausted")

// ErrEmptyChannelName is returned when a channel name is empty.
var ErrEmptyChannelName = errors.New("frames: empty channel name")

// ErrBadChannelName is returned for a channel name that is not valid UTF-8:
// JSON catalogs could not keep it apart from other names.
var ErrBadChannelName = errors.New("frames: channel name is not valid UTF-8")

// ErrBadContent is returned for a content kind outside Bytes, TextStream
// and JsonRecord.
var ErrBadContent = errors.New("frames: unknown content kind")

// A ConflictError reports a registration of Name with content Requested when
// the catalog already holds Name with content Existing (ARCHITECTURE.md rule 3.3). It wraps
// [ErrChannelConflict].
type ConflictError struct {
	Name      string
	ID        ChannelID
	Existing  ChannelContent
	Requested ChannelContent
}

// Error names the channel and both contents.
func (e *ConflictError) Error() string {
	return fmt.Sprintf("frames: channel %q (id %d) is registered as %s, not %s", e.Name, e.ID, e.Existing, e.Requested)
}

// Unwrap returns ErrChannelConflict.
func (e *ConflictError) Unwrap() error { return ErrChannelConflict }

// Catalog is the stream-local map from channel names to ids (ARCHITECTURE.md rule 2.4, §5.1).
// Ids are handed out densely from 1 and never reused. Registering a name
// again with the same content returns the existing id; with other content it
// is a *ConflictError. A Catalog is safe for concurrent use.
type Catalog struct {
	stream StreamID
	maxID  ChannelID

	mu     sync.RWMutex
	byName map[string]ChannelID
	descs  []ChannelDescriptor // descs[i] has id i+1
}

// NewCatalog returns an empty catalog for stream whose ids run from 1 to
// maxID inclusive; maxID 0 means the whole uint32 range.
func NewCatalog(stream StreamID, maxID ChannelID) *Catalog {
	if maxID == 0 {
		maxID = math.MaxUint32
	}
	return &Catalog{stream: stream, maxID: maxID, byName: make(map[string]ChannelID)}
}

// Register returns the id of name, allocating the next one if the name is
// new; created reports whether it was. label may be nil. Errors:
// [ErrEmptyChannelName], [ErrBadChannelName], [ErrBadContent], a *ConflictError (wrapping [ErrChannelConflict]),
// [ErrChannelsExhausted].
func (c *Catalog) Register(name string, label *string, content ChannelContent) (d ChannelDescriptor, created bool, err error) {
	if name == "" {
		return ChannelDescriptor{}, false, ErrEmptyChannelName
	}
	if !utf8.ValidString(name) {
		return ChannelDescriptor{}, false, fmt.Errorf("%w: %q", ErrBadChannelName, name)
	}
	if content.Kind > KindJSONRecord {
		return ChannelDescriptor{}, false, fmt.Errorf("%w: %d", ErrBadContent, content.Kind)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if id, ok := c.byName[name]; ok {
		d := c.descs[id-1]
		if !d.Content.Equal(content) {
			return ChannelDescriptor{}, false, &ConflictError{Name: name, ID: id, Existing: d.Content, Requested: content}
		}
		return d, false, nil
	}
	if uint64(len(c.descs)) >= uint64(c.maxID) {
		return ChannelDescriptor{}, false, fmt.Errorf("%w: %d channels registered, cannot add %q", ErrChannelsExhausted, len(c.descs), name)
	}
	id := ChannelID(len(c.descs) + 1)
	d = ChannelDescriptor{Stream: c.stream, ID: id, Name: name, Label: label, Content: content}
	c.descs = append(c.descs, d)
	c.byName[name] = id
	return d, true, nil
}

// Lookup returns the descriptor of id, or false if id was never handed out.
func (c *Catalog) Lookup(id ChannelID) (ChannelDescriptor, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if id == 0 || int(id) > len(c.descs) {
		return ChannelDescriptor{}, false
	}
	return c.descs[id-1], true
}

// ID returns the id registered for name, or false.
func (c *Catalog) ID(name string) (ChannelID, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	id, ok := c.byName[name]
	return id, ok
}

// Len returns how many channels are registered; ids 1..Len are valid.
func (c *Catalog) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.descs)
}

// Descriptors returns a copy of every descriptor in id order.
func (c *Catalog) Descriptors() []ChannelDescriptor {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return append([]ChannelDescriptor(nil), c.descs...)
}

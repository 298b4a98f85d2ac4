package frames

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// NodeID names the node that produces a stream: any UTF-8 string, by default
// the host name (ARCHITECTURE.md §2; ARCHITECTURE.md rule 2.2).
type NodeID string

// Life identifies one incarnation of a node (ARCHITECTURE.md rule 2.2). A node that restarts
// begins a new Life; frames of different lives never merge. ds uses the
// producer's start time in nanoseconds since the Unix epoch by default.
type Life uint64

// StreamID is the ingest key of a stream: one node incarnation (ARCHITECTURE.md rule 2.2).
// Its text form is "node#life", e.g. "ci-7#1732953600123456789"; its JSON form
// is {"node":"ci-7","life":1732953600123456789}.
type StreamID struct {
	Node NodeID `json:"node"`
	Life Life   `json:"life"`
}

// String returns the text form node#life.
func (s StreamID) String() string {
	return string(s.Node) + "#" + strconv.FormatUint(uint64(s.Life), 10)
}

// ErrBadStreamID is returned by [ParseStreamID] for text that is not node#life.
var ErrBadStreamID = errors.New("frames: stream id must be NODE#LIFE with a decimal life")

// ParseStreamID parses the text form node#life. The node may itself contain
// '#': the life is what follows the last '#'. It returns an error wrapping
// [ErrBadStreamID] when there is no '#' or the life is not a decimal uint64.
func ParseStreamID(s string) (StreamID, error) {
	i := strings.LastIndexByte(s, '#')
	if i < 0 {
		return StreamID{}, fmt.Errorf("%w: %q", ErrBadStreamID, s)
	}
	life, err := strconv.ParseUint(s[i+1:], 10, 64)
	if err != nil {
		return StreamID{}, fmt.Errorf("%w: %q", ErrBadStreamID, s)
	}
	return StreamID{Node: NodeID(s[:i]), Life: Life(life)}, nil
}

// Compare orders stream ids by node, then life. It returns -1, 0 or +1.
// The order is only for stable output; it is not a time order (ARCHITECTURE.md rule 2.3).
func (s StreamID) Compare(o StreamID) int {
	if c := strings.Compare(string(s.Node), string(o.Node)); c != 0 {
		return c
	}
	switch {
	case s.Life < o.Life:
		return -1
	case s.Life > o.Life:
		return 1
	}
	return 0
}

// Position orders frames within one stream (ARCHITECTURE.md rule 2.3). It is assigned by the
// stream's [Mux] at drain time from a single counter shared by all channels,
// starting at 0, monotonic and never reused. Positions of different streams
// are not comparable.
type Position uint64

// ChannelID is a stream-local channel number (ARCHITECTURE.md rule 2.4). Registration hands
// out 1, 2, 3, …; 0 is never handed out. The same ChannelID in two streams
// names two unrelated channels unless their descriptors say otherwise.
type ChannelID uint32

// Frame is the unit of ordered data (ARCHITECTURE.md rule 2.1): bytes on a stream-local
// channel at a stream-local position. It has no timestamp. Payload is opaque
// to everything but views.
type Frame struct {
	Channel  ChannelID
	Position Position
	Payload  []byte
}

// ContentKind is the class of a channel's content without its schema
// (ARCHITECTURE.md rule 2.4 ChannelContentKind). Its JSON form is "Bytes", "TextStream" or
// "JsonRecord".
type ContentKind uint8

const (
	// KindBytes is arbitrary bytes, shown raw unless a view knows more.
	KindBytes ContentKind = iota
	// KindTextStream is UTF-8-ish text chunks; invalid bytes are shown raw.
	KindTextStream
	// KindJSONRecord is one JSON value per payload.
	KindJSONRecord
)

var kindNames = [...]string{"Bytes", "TextStream", "JsonRecord"}

// String returns the seed spelling: "Bytes", "TextStream" or "JsonRecord".
func (k ContentKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "ContentKind(" + strconv.Itoa(int(k)) + ")"
}

// ParseContentKind accepts the seed spellings ("Bytes", "TextStream",
// "JsonRecord") and the CLI spellings ("bytes", "text", "json").
func ParseContentKind(s string) (ContentKind, error) {
	switch s {
	case "Bytes", "bytes":
		return KindBytes, nil
	case "TextStream", "text":
		return KindTextStream, nil
	case "JsonRecord", "json":
		return KindJSONRecord, nil
	}
	return 0, fmt.Errorf("frames: unknown content kind %q (want bytes, text or json)", s)
}

// ChannelContent is catalog metadata that says how a channel's payloads are
// meant to be displayed (ARCHITECTURE.md rule 5.2, §5.4). It is never derived from payload
// bytes. Schema is meaningful only for KindJSONRecord and may be nil.
type ChannelContent struct {
	Kind   ContentKind
	Schema *string
}

// Bytes returns the Bytes content class; TextStream and JSONRecord build
// the other two.
func Bytes() ChannelContent { return ChannelContent{Kind: KindBytes} }

// TextStream is the content class of process output and log lines.
func TextStream() ChannelContent { return ChannelContent{Kind: KindTextStream} }

// JSONRecord is the content class of JSON records; schema "" means none.
func JSONRecord(schema string) ChannelContent {
	c := ChannelContent{Kind: KindJSONRecord}
	if schema != "" {
		c.Schema = &schema
	}
	return c
}

// Equal reports whether two contents are the same class with the same schema.
// It is the comparison the catalog uses for its conflict check (ARCHITECTURE.md rule 3.3).
func (c ChannelContent) Equal(o ChannelContent) bool {
	if c.Kind != o.Kind {
		return false
	}
	if c.Kind != KindJSONRecord {
		return true
	}
	switch {
	case c.Schema == nil && o.Schema == nil:
		return true
	case c.Schema == nil || o.Schema == nil:
		return false
	}
	return *c.Schema == *o.Schema
}

// String returns "Bytes", "TextStream", "JsonRecord" or "JsonRecord(schema)".
func (c ChannelContent) String() string {
	if c.Kind == KindJSONRecord && c.Schema != nil {
		return "JsonRecord(" + *c.Schema + ")"
	}
	return c.Kind.String()
}

// StreamOrigin says where a stream came from (ARCHITECTURE.md rule 2.2). It is subscription
// metadata, not a clock. The zero value is OriginRemoteNode, the default.
type StreamOrigin uint8

const (
	// OriginRemoteNode is a stream produced by a (possibly remote) node; the default.
	OriginRemoteNode StreamOrigin = iota
	// OriginOrchestrator is a stream produced by the orchestrator itself.
	OriginOrchestrator
	// OriginBootstrap is a stream produced while bootstrapping a node.
	OriginBootstrap
)

var originNames = [...]string{"RemoteNode", "Orchestrator", "Bootstrap"}

// String returns the seed spelling: "RemoteNode", "Orchestrator" or "Bootstrap".
func (o StreamOrigin) String() string {
	if int(o) < len(originNames) {
		return originNames[o]
	}
	return "StreamOrigin(" + strconv.Itoa(int(o)) + ")"
}

// ParseStreamOrigin accepts the seed spellings and their lower-case forms.
func ParseStreamOrigin(s string) (StreamOrigin, error) {
	for i, n := range originNames {
		if s == n || strings.EqualFold(s, n) {
			return StreamOrigin(i), nil
		}
	}
	return 0, fmt.Errorf("frames: unknown stream origin %q (want RemoteNode, Orchestrator or Bootstrap)", s)
}

// StreamDescriptor declares a stream (ARCHITECTURE.md rule 2.2). Label is optional.
type StreamDescriptor struct {
	Stream StreamID
	Label  *string
	Origin StreamOrigin
}

// ChannelDescriptor declares one channel of one stream (ARCHITECTURE.md rule 2.4): the
// stream-local id, its dotted name, an optional label and its content class.
type ChannelDescriptor struct {
	Stream  StreamID
	ID      ChannelID
	Name    string
	Label   *string
	Content ChannelContent
}

// ChannelRef is the globally resolved identity of a raw channel (ARCHITECTURE.md rule 2.4):
// a ChannelID means nothing without its stream.
type ChannelRef struct {
	Stream  StreamID  `json:"stream"`
	Channel ChannelID `json:"channel"`
}

// FrameDelivery is the live-event form of a frame (ARCHITECTURE.md rule 2.5).
type FrameDelivery struct {
	Channel  ChannelRef
	Position Position
	Payload  []byte
}

// Delivery is the ingest and store form of a frame (ARCHITECTURE.md rule 6.1): a frame and
// the stream it belongs to.
type Delivery struct {
	Stream StreamID
	Frame  Frame
}

// Delivery converts a live frame event to the ingest form.
func (f FrameDelivery) Delivery() Delivery {
	return Delivery{Stream: f.Channel.Stream, Frame: Frame{Channel: f.Channel.Channel, Position: f.Position, Payload: f.Payload}}
}

// Source is anything that yields deliveries one at a time, such as a capture
// reader. Next returns io.EOF at a clean end. The returned payload belongs to
// the caller.
type Source interface {
	Next() (Delivery, error)
}

// EventKind says which of the four datastream events an [Event] holds.
type EventKind uint8

const (
	// EventStreamDeclared carries a StreamDescriptor in Event.Stream.
	EventStreamDeclared EventKind = iota + 1
	// EventChannelDeclared carries a ChannelDescriptor in Event.Channel.
	EventChannelDeclared
	// EventFrame carries a FrameDelivery in Event.Frame.
	EventFrame
	// EventStreamEnded carries the ended stream in Event.Ended.
	EventStreamEnded
)

var eventNames = [...]string{"", "StreamDeclared", "ChannelDeclared", "Frame", "StreamEnded"}

// String returns the seed spelling of the event kind.
func (k EventKind) String() string {
	if k >= 1 && int(k) < len(eventNames) {
		return eventNames[k]
	}
	return "EventKind(" + strconv.Itoa(int(k)) + ")"
}

// Event is one DatastreamEvent (ARCHITECTURE.md rule 2.5): exactly one of its payload fields
// is meaningful, chosen by Kind. Frames, the hot case, are held by value so
// that fanout allocates nothing per frame.
type Event struct {
	Kind    EventKind
	Stream  *StreamDescriptor  // EventStreamDeclared
	Channel *ChannelDescriptor // EventChannelDeclared
	Frame   FrameDelivery      // EventFrame
	Ended   StreamID           // EventStreamEnded
}

// StreamDeclaredEvent builds a StreamDeclared event; ChannelDeclaredEvent,
// FrameEvent and StreamEndedEvent build the other kinds.
func StreamDeclaredEvent(d StreamDescriptor) Event {
	return Event{Kind: EventStreamDeclared, Stream: &d}
}

// ChannelDeclaredEvent builds an EventChannelDeclared.
func ChannelDeclaredEvent(d ChannelDescriptor) Event {
	return Event{Kind: EventChannelDeclared, Channel: &d}
}

// FrameEvent builds an EventFrame.
func FrameEvent(f FrameDelivery) Event { return Event{Kind: EventFrame, Frame: f} }

// StreamEndedEvent builds an EventStreamEnded.
func StreamEndedEvent(s StreamID) Event { return Event{Kind: EventStreamEnded, Ended: s} }

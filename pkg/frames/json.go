package frames

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// The JSON forms in this file follow serde's defaults in the seed system
// (ARCHITECTURE.md §2): unit enum variants are strings, data-carrying variants are
// one-key objects, Option is null, Vec<u8> is an array of numbers. Decoders
// tolerate version skew (ARCHITECTURE.md rule 5.6): missing fields take their defaults and
// unknown fields are ignored.

// ErrBadJSON is wrapped by every JSON decoding error of this package that is
// not a plain syntax error.
var ErrBadJSON = errors.New("frames: bad JSON")

// MarshalJSON encodes the origin as "RemoteNode", "Orchestrator" or "Bootstrap".
func (o StreamOrigin) MarshalJSON() ([]byte, error) {
	if int(o) >= len(originNames) {
		return nil, fmt.Errorf("%w: stream origin %d", ErrBadJSON, o)
	}
	return []byte(`"` + originNames[o] + `"`), nil
}

// UnmarshalJSON decodes an origin spelled as by MarshalJSON.
func (o *StreamOrigin) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("%w: stream origin: %v", ErrBadJSON, err)
	}
	for i, n := range originNames {
		if s == n {
			*o = StreamOrigin(i)
			return nil
		}
	}
	return fmt.Errorf("%w: unknown stream origin %q", ErrBadJSON, s)
}

// MarshalJSON encodes the kind as "Bytes", "TextStream" or "JsonRecord".
func (k ContentKind) MarshalJSON() ([]byte, error) {
	if int(k) >= len(kindNames) {
		return nil, fmt.Errorf("%w: content kind %d", ErrBadJSON, k)
	}
	return []byte(`"` + kindNames[k] + `"`), nil
}

// UnmarshalJSON decodes a kind spelled as by MarshalJSON.
func (k *ContentKind) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("%w: content kind: %v", ErrBadJSON, err)
	}
	for i, n := range kindNames {
		if s == n {
			*k = ContentKind(i)
			return nil
		}
	}
	return fmt.Errorf("%w: unknown content kind %q", ErrBadJSON, s)
}

type jsonSchema struct {
	Schema *string `json:"schema"`
}

// MarshalJSON encodes "Bytes", "TextStream" or {"JsonRecord":{"schema":…}}.
func (c ChannelContent) MarshalJSON() ([]byte, error) {
	switch c.Kind {
	case KindBytes, KindTextStream:
		return c.Kind.MarshalJSON()
	case KindJSONRecord:
		return json.Marshal(map[string]jsonSchema{"JsonRecord": {Schema: c.Schema}})
	}
	return nil, fmt.Errorf("%w: content kind %d", ErrBadJSON, c.Kind)
}

// UnmarshalJSON decodes a content spelled as by MarshalJSON. A bare
// "JsonRecord" string is accepted as a record without schema.
func (c *ChannelContent) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var k ContentKind
		if err := k.UnmarshalJSON(b); err != nil {
			return err
		}
		*c = ChannelContent{Kind: k}
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("%w: content: %v", ErrBadJSON, err)
	}
	raw, ok := m["JsonRecord"]
	if !ok || len(m) != 1 {
		return fmt.Errorf("%w: content must be \"Bytes\", \"TextStream\" or {\"JsonRecord\":{…}}", ErrBadJSON)
	}
	var s jsonSchema
	if !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		if err := json.Unmarshal(raw, &s); err != nil {
			return fmt.Errorf("%w: content: %v", ErrBadJSON, err)
		}
	}
	*c = ChannelContent{Kind: KindJSONRecord, Schema: s.Schema}
	return nil
}

type jsonStreamDescriptor struct {
	Stream StreamID     `json:"stream"`
	Label  *string      `json:"label"`
	Origin StreamOrigin `json:"origin"`
}

// MarshalJSON encodes {"stream":{"node":…,"life":…},"label":…,"origin":…}.
func (d StreamDescriptor) MarshalJSON() ([]byte, error) {
	return json.Marshal(jsonStreamDescriptor(d))
}

// UnmarshalJSON decodes a stream descriptor; a missing origin is RemoteNode.
func (d *StreamDescriptor) UnmarshalJSON(b []byte) error {
	var j jsonStreamDescriptor
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*d = StreamDescriptor(j)
	return nil
}

type jsonChannelDescriptor struct {
	Stream  StreamID       `json:"stream"`
	ID      ChannelID      `json:"id"`
	Name    string         `json:"name"`
	Label   *string        `json:"label"`
	Content ChannelContent `json:"content"`
}

// MarshalJSON encodes {"stream":…,"id":1,"name":…,"label":…,"content":…}.
func (d ChannelDescriptor) MarshalJSON() ([]byte, error) {
	return json.Marshal(jsonChannelDescriptor(d))
}

// UnmarshalJSON decodes a channel descriptor; a missing content is Bytes.
func (d *ChannelDescriptor) UnmarshalJSON(b []byte) error {
	var j jsonChannelDescriptor
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*d = ChannelDescriptor(j)
	return nil
}

// byteArray is serde's encoding of Vec<u8>: a JSON array of numbers.
type byteArray []byte

func (p byteArray) MarshalJSON() ([]byte, error) {
	out := make([]byte, 0, 2+4*len(p))
	out = append(out, '[')
	for i, c := range p {
		if i > 0 {
			out = append(out, ',')
		}
		out = strconv.AppendUint(out, uint64(c), 10)
	}
	return append(out, ']'), nil
}

func (p *byteArray) UnmarshalJSON(b []byte) error {
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] != '[' {
		return fmt.Errorf("%w: payload must be an array of bytes", ErrBadJSON)
	}
	var ns []uint8
	if err := json.Unmarshal(b, &ns); err != nil {
		return fmt.Errorf("%w: payload must be an array of bytes: %v", ErrBadJSON, err)
	}
	if ns == nil {
		ns = []byte{}
	}
	*p = ns
	return nil
}

type jsonFrameDelivery struct {
	Channel  ChannelRef `json:"channel"`
	Position Position   `json:"position"`
	Payload  byteArray  `json:"payload"`
}

// MarshalJSON encodes {"channel":{"stream":…,"channel":1},"position":0,"payload":[104,105]}.
func (f FrameDelivery) MarshalJSON() ([]byte, error) {
	return json.Marshal(jsonFrameDelivery{f.Channel, f.Position, f.Payload})
}

// UnmarshalJSON decodes a frame delivery spelled as by MarshalJSON.
func (f *FrameDelivery) UnmarshalJSON(b []byte) error {
	var j jsonFrameDelivery
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*f = FrameDelivery{Channel: j.Channel, Position: j.Position, Payload: []byte(j.Payload)}
	return nil
}

// MarshalJSON encodes the event as serde's externally tagged enum:
// {"StreamDeclared":{…}}, {"ChannelDeclared":{…}}, {"Frame":{…}} or
// {"StreamEnded":{"node":…,"life":…}}.
func (e Event) MarshalJSON() ([]byte, error) {
	var v any
	switch e.Kind {
	case EventStreamDeclared:
		if e.Stream == nil {
			return nil, fmt.Errorf("%w: StreamDeclared event without descriptor", ErrBadJSON)
		}
		v = e.Stream
	case EventChannelDeclared:
		if e.Channel == nil {
			return nil, fmt.Errorf("%w: ChannelDeclared event without descriptor", ErrBadJSON)
		}
		v = e.Channel
	case EventFrame:
		v = e.Frame
	case EventStreamEnded:
		v = e.Ended
	default:
		return nil, fmt.Errorf("%w: event kind %d", ErrBadJSON, e.Kind)
	}
	return json.Marshal(map[string]any{e.Kind.String(): v})
}

// UnmarshalJSON decodes an event spelled as by MarshalJSON.
func (e *Event) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("%w: event: %v", ErrBadJSON, err)
	}
	if len(m) != 1 {
		return fmt.Errorf("%w: event must be an object with exactly one key", ErrBadJSON)
	}
	for k, raw := range m {
		switch k {
		case "StreamDeclared":
			var d StreamDescriptor
			if err := json.Unmarshal(raw, &d); err != nil {
				return err
			}
			*e = StreamDeclaredEvent(d)
		case "ChannelDeclared":
			var d ChannelDescriptor
			if err := json.Unmarshal(raw, &d); err != nil {
				return err
			}
			*e = ChannelDeclaredEvent(d)
		case "Frame":
			var f FrameDelivery
			if err := json.Unmarshal(raw, &f); err != nil {
				return err
			}
			*e = FrameEvent(f)
		case "StreamEnded":
			var s StreamID
			if err := json.Unmarshal(raw, &s); err != nil {
				return err
			}
			*e = StreamEndedEvent(s)
		default:
			return fmt.Errorf("%w: unknown event %q", ErrBadJSON, k)
		}
	}
	return nil
}

// MarshalJSON encodes "All", {"Origin":…}, {"Node":…} or {"Stream":…}.
func (f SourceFilter) MarshalJSON() ([]byte, error) {
	switch f.Kind {
	case SourceAll:
		return []byte(`"All"`), nil
	case SourceOrigin:
		return json.Marshal(map[string]StreamOrigin{"Origin": f.Origin})
	case SourceNode:
		return json.Marshal(map[string]NodeID{"Node": f.Node})
	case SourceStream:
		return json.Marshal(map[string]StreamID{"Stream": f.Stream})
	}
	return nil, fmt.Errorf("%w: source filter kind %d", ErrBadJSON, f.Kind)
}

// UnmarshalJSON decodes a source filter spelled as by MarshalJSON.
func (f *SourceFilter) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte(`"All"`)) {
		*f = AllSources()
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || len(m) != 1 {
		return fmt.Errorf("%w: source filter must be \"All\" or a one-key object", ErrBadJSON)
	}
	var err error
	for k, raw := range m {
		switch k {
		case "Origin":
			f.Kind, err = SourceOrigin, json.Unmarshal(raw, &f.Origin)
		case "Node":
			f.Kind, err = SourceNode, json.Unmarshal(raw, &f.Node)
		case "Stream":
			f.Kind, err = SourceStream, json.Unmarshal(raw, &f.Stream)
		default:
			err = fmt.Errorf("%w: unknown source filter %q", ErrBadJSON, k)
		}
	}
	return err
}

// MarshalJSON encodes "All", {"Name":…}, {"Prefix":…}, {"Content":…} or
// {"Glob":…} (ds's extension, [ChannelsGlob]).
func (f ChannelFilter) MarshalJSON() ([]byte, error) {
	switch f.Kind {
	case ChannelsAll:
		return []byte(`"All"`), nil
	case ChannelsName:
		return json.Marshal(map[string]string{"Name": f.Value})
	case ChannelsPrefix:
		return json.Marshal(map[string]string{"Prefix": f.Value})
	case ChannelsContent:
		return json.Marshal(map[string]ContentKind{"Content": f.Content})
	case ChannelsGlob:
		return json.Marshal(map[string]string{"Glob": f.Value})
	}
	return nil, fmt.Errorf("%w: channel filter kind %d", ErrBadJSON, f.Kind)
}

// UnmarshalJSON decodes a channel filter spelled as by MarshalJSON.
func (f *ChannelFilter) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte(`"All"`)) {
		*f = AllChannels()
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || len(m) != 1 {
		return fmt.Errorf("%w: channel filter must be \"All\" or a one-key object", ErrBadJSON)
	}
	var err error
	for k, raw := range m {
		switch k {
		case "Name":
			f.Kind, err = ChannelsName, json.Unmarshal(raw, &f.Value)
		case "Prefix":
			f.Kind, err = ChannelsPrefix, json.Unmarshal(raw, &f.Value)
		case "Content":
			f.Kind, err = ChannelsContent, json.Unmarshal(raw, &f.Content)
		case "Glob":
			f.Kind, err = ChannelsGlob, json.Unmarshal(raw, &f.Value)
		default:
			err = fmt.Errorf("%w: unknown channel filter %q", ErrBadJSON, k)
		}
	}
	return err
}

type jsonSubscriptionRequest struct {
	Sources  SourceFilter  `json:"sources"`
	Channels ChannelFilter `json:"channels"`
}

// MarshalJSON encodes {"sources":…,"channels":…}.
func (r SubscriptionRequest) MarshalJSON() ([]byte, error) {
	return json.Marshal(jsonSubscriptionRequest(r))
}

// UnmarshalJSON decodes a request; missing filters mean All.
func (r *SubscriptionRequest) UnmarshalJSON(b []byte) error {
	var j jsonSubscriptionRequest
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*r = SubscriptionRequest(j)
	return nil
}

type jsonFrame struct {
	Channel  ChannelID `json:"channel"`
	Position Position  `json:"position"`
	Payload  byteArray `json:"payload"`
}

// MarshalJSON encodes {"channel":1,"position":0,"payload":[104,105]}, the
// seed's serde spelling of Frame.
func (f Frame) MarshalJSON() ([]byte, error) {
	return json.Marshal(jsonFrame{f.Channel, f.Position, f.Payload})
}

// UnmarshalJSON decodes a frame spelled as by MarshalJSON.
func (f *Frame) UnmarshalJSON(b []byte) error {
	var j jsonFrame
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*f = Frame{Channel: j.Channel, Position: j.Position, Payload: []byte(j.Payload)}
	return nil
}

type jsonDelivery struct {
	Stream StreamID `json:"stream"`
	Frame  Frame    `json:"frame"`
}

// MarshalJSON encodes {"stream":{"node":…,"life":…},"frame":{…}}.
func (d Delivery) MarshalJSON() ([]byte, error) { return json.Marshal(jsonDelivery(d)) }

// UnmarshalJSON decodes a delivery spelled as by MarshalJSON.
func (d *Delivery) UnmarshalJSON(b []byte) error {
	var j jsonDelivery
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*d = Delivery(j)
	return nil
}

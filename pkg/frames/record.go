package frames

import (
	"encoding/json"
	"strings"
)

// EncodeRecord encodes v as the payload of a JSON record channel (spec
// §5.5). It is json.Marshal: the codec contract is decode(encode(r)) == r.
func EncodeRecord(v any) ([]byte, error) { return json.Marshal(v) }

// DecodeRecord decodes a JSON record payload into a copy of defaults and
// returns it, following the seed's schema-evolution rules (ARCHITECTURE.md rule 5.6):
// fields missing from the payload keep their default values and unknown
// fields are ignored. A payload that is not JSON of the right shape is an
// error, returned with T's zero value; callers (views) then show the
// payload raw (ARCHITECTURE.md rule 8.3).
//
// Maps, slices and pointers in defaults are never written through: the
// defaults are copied (through their JSON form) before decoding.
func DecodeRecord[T any](payload []byte, defaults T) (T, error) {
	var v T
	if b, err := json.Marshal(defaults); err == nil {
		if err := json.Unmarshal(b, &v); err != nil {
			v = defaults
		}
	} else {
		v = defaults
	}
	if err := json.Unmarshal(payload, &v); err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// ChannelKind is a view's decision of how far to decode a channel
// (ARCHITECTURE.md rule 5.2): Typed records, Text, or Opaque bytes.
type ChannelKind uint8

const (
	// Opaque is the default for names a view does not know: shown raw
	// (ARCHITECTURE.md rule 5.4, the forward-compatible fallback).
	Opaque ChannelKind = iota
	// Text channels are decoded as UTF-8 text where valid.
	Text
	// Typed channels are decoded as JSON records.
	Typed
)

var channelKindNames = [...]string{"Opaque", "Text", "Typed"}

// String returns "Opaque", "Text" or "Typed".
func (k ChannelKind) String() string {
	if int(k) < len(channelKindNames) {
		return channelKindNames[k]
	}
	return "ChannelKind(?)"
}

// Classifier maps a channel name to how a view decodes it (ARCHITECTURE.md rule 5.2).
type Classifier interface {
	Classify(name string) ChannelKind
}

// Registry is a caller-owned [Classifier] (ARCHITECTURE.md rule 5.2 ChannelRegistry): exact
// typed names, exact text names and text prefixes. Unknown names are
// [Opaque]. Exact names win over prefixes; the longest prefix wins among
// prefixes. The zero value classifies everything as Opaque. A Registry is
// not safe for concurrent mutation; build it, then share it.
type Registry struct {
	typed    map[string]bool
	text     map[string]bool
	prefixes []string
}

// Typed marks names as typed record channels and returns r.
func (r *Registry) Typed(names ...string) *Registry {
	if r.typed == nil {
		r.typed = make(map[string]bool)
	}
	for _, n := range names {
		r.typed[n] = true
	}
	return r
}

// Text marks names as text channels and returns r.
func (r *Registry) Text(names ...string) *Registry {
	if r.text == nil {
		r.text = make(map[string]bool)
	}
	for _, n := range names {
		r.text[n] = true
	}
	return r
}

// TextPrefix marks every name starting with one of prefixes as text (for
// dynamic families such as "proc.") and returns r.
func (r *Registry) TextPrefix(prefixes ...string) *Registry {
	r.prefixes = append(r.prefixes, prefixes...)
	return r
}

// Classify returns the kind of name.
func (r *Registry) Classify(name string) ChannelKind {
	if r.typed[name] {
		return Typed
	}
	if r.text[name] {
		return Text
	}
	best := -1
	for _, p := range r.prefixes {
		if strings.HasPrefix(name, p) && len(p) > best {
			best = len(p)
		}
	}
	if best >= 0 {
		return Text
	}
	return Opaque
}

// ContentClassifier classifies by catalog content where a descriptor is
// known: JsonRecord → Typed, TextStream → Text, Bytes → Opaque. It is what
// ds's views use; it reads descriptors only, never payloads.
func ContentClassifier(c ChannelContent) ChannelKind {
	switch c.Kind {
	case KindJSONRecord:
		return Typed
	case KindTextStream:
		return Text
	}
	return Opaque
}

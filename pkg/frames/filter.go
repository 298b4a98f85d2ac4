package frames

import "strings"

// SourceKind selects which streams a [SourceFilter] matches (ARCHITECTURE.md rule 3.4).
type SourceKind uint8

const (
	// SourceAll matches every stream.
	SourceAll SourceKind = iota
	// SourceOrigin matches streams whose descriptor has SourceFilter.Origin.
	SourceOrigin
	// SourceNode matches every life of SourceFilter.Node.
	SourceNode
	// SourceStream matches exactly SourceFilter.Stream (one node, one life).
	SourceStream
)

// SourceFilter selects streams (ARCHITECTURE.md rule 3.4). Its JSON form is the seed's:
// "All", {"Origin":"Bootstrap"}, {"Node":"n1"} or {"Stream":{"node":"n1","life":7}}.
type SourceFilter struct {
	Kind   SourceKind
	Origin StreamOrigin // SourceOrigin
	Node   NodeID       // SourceNode
	Stream StreamID     // SourceStream
}

// AllSources returns the filter that matches every source; OriginSource,
// NodeSource and StreamSource build the others.
func AllSources() SourceFilter { return SourceFilter{} }

// OriginSource matches streams of one origin.
func OriginSource(o StreamOrigin) SourceFilter { return SourceFilter{Kind: SourceOrigin, Origin: o} }

// NodeSource matches every life of one node.
func NodeSource(n NodeID) SourceFilter { return SourceFilter{Kind: SourceNode, Node: n} }

// StreamSource matches one stream.
func StreamSource(s StreamID) SourceFilter { return SourceFilter{Kind: SourceStream, Stream: s} }

// Match reports whether the filter selects the stream described by d.
func (f SourceFilter) Match(d StreamDescriptor) bool {
	switch f.Kind {
	case SourceAll:
		return true
	case SourceOrigin:
		return d.Origin == f.Origin
	case SourceNode:
		return d.Stream.Node == f.Node
	case SourceStream:
		return d.Stream == f.Stream
	}
	return false
}

// ChannelFilterKind selects how a [ChannelFilter] matches (ARCHITECTURE.md rule 3.4).
type ChannelFilterKind uint8

const (
	// ChannelsAll matches every channel.
	ChannelsAll ChannelFilterKind = iota
	// ChannelsName matches the exact name ChannelFilter.Value.
	ChannelsName
	// ChannelsPrefix matches names that start with ChannelFilter.Value
	// (plain strings.HasPrefix; "proc.*" is CLI sugar for prefix "proc.").
	ChannelsPrefix
	// ChannelsContent matches channels whose content kind is ChannelFilter.Content.
	ChannelsContent
	// ChannelsGlob matches names against the pattern ChannelFilter.Value,
	// in which each * stands for any run of characters, dots included
	// ("proc.*.stdout" matches proc.build.stdout and proc.a.b.stdout);
	// every other character stands for itself. An extension of the seed's
	// filters (ARCHITECTURE.md rule 3.4), for the CLI's -c.
	ChannelsGlob
)

// ChannelFilter selects channels by descriptor, never by payload (ARCHITECTURE.md rule 3.4).
// Its JSON form is the seed's: "All", {"Name":"host.cpu"}, {"Prefix":"proc."}
// or {"Content":"JsonRecord"}.
type ChannelFilter struct {
	Kind    ChannelFilterKind
	Value   string      // ChannelsName, ChannelsPrefix, ChannelsGlob
	Content ContentKind // ChannelsContent
}

// AllChannels returns the filter that matches every channel; NameChannel,
// PrefixChannels and ContentChannels build the others.
func AllChannels() ChannelFilter { return ChannelFilter{} }

// NameChannel matches one exact channel name.
func NameChannel(name string) ChannelFilter { return ChannelFilter{Kind: ChannelsName, Value: name} }

// PrefixChannels matches names starting with prefix.
func PrefixChannels(prefix string) ChannelFilter {
	return ChannelFilter{Kind: ChannelsPrefix, Value: prefix}
}

// ContentChannels matches one content kind.
func ContentChannels(k ContentKind) ChannelFilter {
	return ChannelFilter{Kind: ChannelsContent, Content: k}
}

// GlobChannels matches names against pattern, each * any run of
// characters ([ChannelsGlob]).
func GlobChannels(pattern string) ChannelFilter {
	return ChannelFilter{Kind: ChannelsGlob, Value: pattern}
}

// ParseChannelPattern turns the CLI spelling into a filter: a pattern
// whose only * is its last character ("proc.*") is a prefix match, one
// with a * elsewhere ("proc.*.stdout") a glob ([ChannelsGlob]), anything
// else an exact name.
func ParseChannelPattern(p string) ChannelFilter {
	if i := strings.IndexByte(p, '*'); i >= 0 && i < len(p)-1 {
		return GlobChannels(p)
	}
	if strings.HasSuffix(p, "*") {
		return PrefixChannels(strings.TrimSuffix(p, "*"))
	}
	return NameChannel(p)
}

// globMatch reports whether name matches pattern, each * of which stands
// for any run of characters (none included). It runs in O(len(name) ×
// stars): each literal piece is found at its leftmost place.
func globMatch(pattern, name string) bool {
	first, rest, ok := strings.Cut(pattern, "*")
	if !ok {
		return pattern == name
	}
	if !strings.HasPrefix(name, first) {
		return false
	}
	name = name[len(first):]
	for {
		piece, more, ok := strings.Cut(rest, "*")
		if !ok { // the last piece: it must end the name
			return len(name) >= len(piece) && strings.HasSuffix(name, piece)
		}
		i := strings.Index(name, piece)
		if i < 0 {
			return false
		}
		name, rest = name[i+len(piece):], more
	}
}

// Match reports whether the filter selects the channel described by d.
func (f ChannelFilter) Match(d ChannelDescriptor) bool {
	switch f.Kind {
	case ChannelsAll:
		return true
	case ChannelsName:
		return d.Name == f.Value
	case ChannelsPrefix:
		return strings.HasPrefix(d.Name, f.Value)
	case ChannelsContent:
		return d.Content.Kind == f.Content
	case ChannelsGlob:
		return globMatch(f.Value, d.Name)
	}
	return false
}

// SubscriptionRequest selects what a subscriber's initial snapshot holds
// (ARCHITECTURE.md rule 3.4, §6.2). Future events are broadcast regardless of the request;
// the request stays useful to downstream filters.
type SubscriptionRequest struct {
	Sources  SourceFilter
	Channels ChannelFilter
}

// Match reports whether a channel of the stream described by s passes both filters.
func (r SubscriptionRequest) Match(s StreamDescriptor, c ChannelDescriptor) bool {
	return r.Sources.Match(s) && r.Channels.Match(c)
}

package wireformat

import (
	"bytes"
	"unicode/utf8"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// A header's catalog is the JSON array of its channel descriptors
// (ds-format(5) "SEGMENT HEADER"). encoding/json decodes one of 140 000
// channels (a 16 MiB catalog) in about a second, and allocates 15 times
// its size doing it, which a reader that reads a header more than once (ds
// tail, ds info) pays each time and which put a 16 MiB header past the
// 64 MiB a reader may hold (issue 21 item 5). ds writers spell the catalog
// one way: encoding/json's, without spaces, fields in order. fastCatalog
// decodes exactly that spelling, with strings that need no unescaping, in
// one pass that allocates only the descriptors, their names and labels;
// anything else (a space, an escape, another field order, another
// writer's spelling) makes it give up, and the catalog is decoded by
// encoding/json, whose result the fast path equals wherever it answers.

// fastCatalog decodes catalog, a JSON array of channel descriptors of
// stream, into dst (appended to). It reports false, and dst is then to be
// ignored, when catalog is not in the canonical spelling, or names a
// descriptor of another stream (whose error encoding/json's path gives).
// Every descriptor's Stream.Node is stream's own string, not a copy.
func fastCatalog(dst []frames.ChannelDescriptor, catalog []byte, stream frames.StreamID) ([]frames.ChannelDescriptor, bool) {
	d := catalogDecoder{stream: stream, dst: dst}
	n, ok := d.feed(catalog, true)
	return d.dst, ok && n == len(catalog) && d.state == catDone
}

// A catalogDecoder is fastCatalog in pieces, for a catalog read from a
// file a window at a time ([ParseHeaderAt]): feed decodes the whole
// descriptors in a piece and says where the first it could not finish
// begins, and the caller feeds that again with what follows it.
type catalogDecoder struct {
	stream frames.StreamID
	node   []byte
	dst    []frames.ChannelDescriptor
	state  catalogState
}

// catalogState is what a catalogDecoder expects next.
type catalogState uint8

const (
	catStart catalogState = iota // "null" or "["
	catFirst                     // "]" or a descriptor
	catEntry                     // a descriptor
	catSep                       // "," or "]"
	catDone                      // nothing
)

// feed decodes b, the catalog's bytes from where the last call left off
// (final: b goes on to the catalog's end). It returns how many bytes of b
// it used, always ending after a whole token or descriptor, and false when
// the catalog is not in the canonical spelling (what follows is then to
// be ignored). Unless final, a piece that ends inside a descriptor is not
// a fault: the bytes from that descriptor's start are left unused.
func (d *catalogDecoder) feed(b []byte, final bool) (int, bool) {
	if d.node == nil {
		d.node = []byte(d.stream.Node)
	}
	p := catalogParser{b: b}
	for {
		mark := p.pos
		p.short = false
		switch d.state {
		case catStart:
			switch {
			case p.lit("null"):
				d.dst, d.state = nil, catDone
			case p.lit("["):
				d.state = catFirst
			}
		case catFirst:
			if p.lit("]") {
				if d.dst == nil {
					d.dst = []frames.ChannelDescriptor{} // as encoding/json: empty, not nil
				}
				d.state = catDone
			} else if !p.short {
				d.state = catEntry
				continue
			}
		case catEntry:
			if c, ok := p.descriptor(d.stream, d.node); ok {
				d.dst, d.state = append(d.dst, c), catSep
			}
		case catSep:
			switch {
			case p.lit("]"):
				d.state = catDone
			case p.lit(","):
				d.state = catEntry
			}
		case catDone:
			return p.pos, p.done()
		}
		if p.pos == mark { // nothing decoded
			if p.short && !final {
				return mark, true
			}
			return mark, false
		}
	}
}

// descriptor decodes one channel descriptor of stream (whose node is
// node), as encoding/json spells it.
func (p *catalogParser) descriptor(stream frames.StreamID, node []byte) (frames.ChannelDescriptor, bool) {
	start := p.pos
	d, ok := p.descriptorFields(stream, node)
	if !ok {
		p.pos = start
	}
	return d, ok
}

func (p *catalogParser) descriptorFields(stream frames.StreamID, node []byte) (frames.ChannelDescriptor, bool) {
	var d frames.ChannelDescriptor
	if !p.lit(`{"stream":{"node":`) {
		return d, false
	}
	n, ok := p.str()
	if !ok || !bytes.Equal(n, node) || !p.lit(`,"life":`) {
		return d, false
	}
	life, ok := p.uint(1<<64 - 1)
	if !ok || frames.Life(life) != stream.Life || !p.lit(`},"id":`) {
		return d, false
	}
	id, ok := p.uint(1<<32 - 1)
	if !ok || !p.lit(`,"name":`) {
		return d, false
	}
	name, ok := p.str()
	if !ok || !p.lit(`,"label":`) {
		return d, false
	}
	if !p.lit("null") {
		l, ok := p.str()
		if !ok {
			return d, false
		}
		label := string(l)
		d.Label = &label
	}
	switch {
	case !p.lit(`,"content":`):
		return d, false
	case p.lit(`"Bytes"`):
		d.Content = frames.ChannelContent{Kind: frames.KindBytes}
	case p.lit(`"TextStream"`):
		d.Content = frames.ChannelContent{Kind: frames.KindTextStream}
	case p.lit(`{"JsonRecord":{"schema":`):
		d.Content = frames.ChannelContent{Kind: frames.KindJSONRecord}
		if !p.lit("null") {
			s, ok := p.str()
			if !ok {
				return d, false
			}
			schema := string(s)
			d.Content.Schema = &schema
		}
		if !p.lit("}}") {
			return d, false
		}
	default:
		return d, false
	}
	if !p.lit("}") {
		return d, false
	}
	d.Stream, d.ID, d.Name = stream, frames.ChannelID(id), string(name)
	return d, true
}

// A catalogParser reads the canonical spelling of a catalog.
type catalogParser struct {
	b   []byte
	pos int
	// short is set when a token was not consumed because the input ended
	// before it could be told (more input might have made it).
	short bool
}

// lit consumes s if the input goes on with it.
func (p *catalogParser) lit(s string) bool {
	if rest := p.b[p.pos:]; len(rest) < len(s) {
		if string(rest) == s[:len(rest)] {
			p.short = true
		}
		return false
	}
	if string(p.b[p.pos:p.pos+len(s)]) != s {
		return false
	}
	p.pos += len(s)
	return true
}

func (p *catalogParser) done() bool { return p.pos == len(p.b) }

// str consumes a JSON string that needs no unescaping (no backslash, no
// control character, valid UTF-8: decoded, it is its own bytes) and
// returns its contents, aliasing the input.
func (p *catalogParser) str() ([]byte, bool) {
	if p.pos >= len(p.b) {
		p.short = true
		return nil, false
	}
	if p.b[p.pos] != '"' {
		return nil, false
	}
	start := p.pos + 1
	i := bytes.IndexByte(p.b[start:], '"')
	if i < 0 {
		p.short = true
		return nil, false
	}
	s := p.b[start : start+i]
	ascii := true
	for _, c := range s {
		if c < 0x20 || c == '\\' {
			return nil, false
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	if !ascii && !utf8.Valid(s) {
		return nil, false
	}
	p.pos = start + i + 1
	return s, true
}

// uint consumes a JSON number that is an integer of at most max, spelled
// without sign, leading zeros, fraction or exponent.
func (p *catalogParser) uint(max uint64) (uint64, bool) {
	start := p.pos
	var v uint64
	for p.pos < len(p.b) && p.b[p.pos] >= '0' && p.b[p.pos] <= '9' {
		d := uint64(p.b[p.pos] - '0')
		if v > (max-d)/10 {
			return 0, false
		}
		v = v*10 + d
		p.pos++
	}
	if p.pos == len(p.b) {
		p.short = true // the number may go on
		p.pos = start
		return 0, false
	}
	n := p.pos - start
	if n == 0 || n > 1 && p.b[start] == '0' {
		return 0, false
	}
	if p.b[p.pos] == '.' || p.b[p.pos] == 'e' || p.b[p.pos] == 'E' {
		return 0, false
	}
	return v, true
}

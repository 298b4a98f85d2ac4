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
	p := catalogParser{b: catalog}
	if p.lit("null") && p.done() {
		return nil, true
	}
	if !p.lit("[") {
		return dst, false
	}
	if p.lit("]") {
		if dst == nil {
			dst = []frames.ChannelDescriptor{} // as encoding/json: empty, not nil
		}
		return dst, p.done()
	}
	node := []byte(stream.Node)
	for {
		var d frames.ChannelDescriptor
		if !p.lit(`{"stream":{"node":`) {
			return dst, false
		}
		n, ok := p.str()
		if !ok || !bytes.Equal(n, node) || !p.lit(`,"life":`) {
			return dst, false
		}
		life, ok := p.uint(1<<64 - 1)
		if !ok || frames.Life(life) != stream.Life || !p.lit(`},"id":`) {
			return dst, false
		}
		id, ok := p.uint(1<<32 - 1)
		if !ok || !p.lit(`,"name":`) {
			return dst, false
		}
		name, ok := p.str()
		if !ok || !p.lit(`,"label":`) {
			return dst, false
		}
		d.Stream, d.ID, d.Name = stream, frames.ChannelID(id), string(name)
		if !p.lit("null") {
			l, ok := p.str()
			if !ok {
				return dst, false
			}
			label := string(l)
			d.Label = &label
		}
		switch {
		case !p.lit(`,"content":`):
			return dst, false
		case p.lit(`"Bytes"`):
			d.Content = frames.ChannelContent{Kind: frames.KindBytes}
		case p.lit(`"TextStream"`):
			d.Content = frames.ChannelContent{Kind: frames.KindTextStream}
		case p.lit(`{"JsonRecord":{"schema":`):
			d.Content = frames.ChannelContent{Kind: frames.KindJSONRecord}
			if !p.lit("null") {
				s, ok := p.str()
				if !ok {
					return dst, false
				}
				schema := string(s)
				d.Content.Schema = &schema
			}
			if !p.lit("}}") {
				return dst, false
			}
		default:
			return dst, false
		}
		if !p.lit("}") {
			return dst, false
		}
		dst = append(dst, d)
		if p.lit("]") {
			return dst, p.done()
		}
		if !p.lit(",") {
			return dst, false
		}
	}
}

// A catalogParser reads the canonical spelling of a catalog.
type catalogParser struct {
	b   []byte
	pos int
}

// lit consumes s if the input goes on with it.
func (p *catalogParser) lit(s string) bool {
	if len(p.b)-p.pos < len(s) || string(p.b[p.pos:p.pos+len(s)]) != s {
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
	if p.pos >= len(p.b) || p.b[p.pos] != '"' {
		return nil, false
	}
	start := p.pos + 1
	i := bytes.IndexByte(p.b[start:], '"')
	if i < 0 {
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
	n := p.pos - start
	if n == 0 || n > 1 && p.b[start] == '0' {
		return 0, false
	}
	if p.pos < len(p.b) && (p.b[p.pos] == '.' || p.b[p.pos] == 'e' || p.b[p.pos] == 'E') {
		return 0, false
	}
	return v, true
}

package segments

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// Cursor says, per stream, the last position a reader has consumed: a
// view given a cursor shows only later positions, and a printer reports
// the cursor of what it printed, so that a later run resumes after it (ds
// tail --cursor-file; a store's named consumers, [Store.Consumer], keep
// one per stream).
//
// Its text form ([Cursor.String], [ParseCursor]) is a comma-separated list
// of NODE#LIFE=POSITION, sorted, with every byte of NODE outside
// [A-Za-z0-9._~-] percent-encoded, so that any node name survives a
// shell, a file and a URL.
type Cursor map[frames.StreamID]frames.Position

// String returns the text form of the cursor ("" for an empty one).
func (c Cursor) String() string {
	ids := make([]frames.StreamID, 0, len(c))
	for id := range c {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, frames.StreamID.Compare)
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		for j := 0; j < len(id.Node); j++ {
			ch := id.Node[j]
			if ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '.' || ch == '_' || ch == '~' || ch == '-' {
				b.WriteByte(ch)
			} else {
				fmt.Fprintf(&b, "%%%02X", ch)
			}
		}
		fmt.Fprintf(&b, "#%d=%d", id.Life, c[id])
	}
	return b.String()
}

// Merge raises each entry of c to the one of o where o's is later, and
// adds to c the entries it lacks. c must not be nil unless o is empty.
func (c Cursor) Merge(o Cursor) {
	for id, pos := range o {
		if old, ok := c[id]; !ok || pos > old {
			c[id] = pos
		}
	}
}

// ParseCursor parses the text form of a cursor; surrounding white space
// is ignored, and an empty string is the empty cursor (not nil). A
// malformed entry is an error that quotes it.
func ParseCursor(s string) (Cursor, error) {
	c := Cursor{}
	s = strings.TrimSpace(s)
	if s == "" {
		return c, nil
	}
	for _, e := range strings.Split(s, ",") {
		stream, pos, ok := strings.Cut(e, "=")
		hash := strings.LastIndexByte(stream, '#')
		if !ok || hash < 0 {
			return nil, fmt.Errorf("cursor entry %q: want NODE#LIFE=POSITION", e)
		}
		node, err := unescapeNode(stream[:hash])
		if err != nil {
			return nil, fmt.Errorf("cursor entry %q: %v", e, err)
		}
		life, err := strconv.ParseUint(stream[hash+1:], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("cursor entry %q: life %q is not a number", e, stream[hash+1:])
		}
		p, err := strconv.ParseUint(pos, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("cursor entry %q: position %q is not a number", e, pos)
		}
		c[frames.StreamID{Node: frames.NodeID(node), Life: frames.Life(life)}] = frames.Position(p)
	}
	return c, nil
}

// unescapeNode undoes the percent-encoding of a node name in a cursor's
// text form.
func unescapeNode(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b = append(b, s[i])
			continue
		}
		if i+3 > len(s) {
			return "", errors.New("node: truncated %-escape")
		}
		v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return "", fmt.Errorf("node: bad %%-escape %q", s[i:i+3])
		}
		b = append(b, byte(v))
		i += 2
	}
	return string(b), nil
}

package faults

import (
	"fmt"
	"slices"

	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// PlaceKind says what lies at a [Place].
type PlaceKind uint8

const (
	// PlaceHeader is a segment header.
	PlaceHeader PlaceKind = iota + 1
	// PlaceRecord is a record of a segment other than the two below:
	// ChannelDeclared, Frame, Block, or a reserved or experimental type.
	PlaceRecord
	// PlaceStreamEnded is a StreamEnded record.
	PlaceStreamEnded
	// PlaceSummary is a SegmentSummary record, the last of its segment.
	PlaceSummary
)

var placeNames = [...]string{"", "header", "record", "stream-ended", "summary"}

// String returns "header", "record", "stream-ended" or "summary".
func (k PlaceKind) String() string {
	if int(k) < len(placeNames) && k > 0 {
		return placeNames[k]
	}
	return fmt.Sprintf("PlaceKind(%d)", uint8(k))
}

// Place is where a header or record of a DSS capture lies: bytes
// [Offset, End) of the capture. Segment is the index of its segment in
// the capture, counting from 0.
type Place struct {
	Offset, End int64
	Kind        PlaceKind
	Type        wireformat.RecordType // the record's type; 0 for a header
	Segment     int
}

// Places returns where every header and record of the DSS capture data
// lies, in order (Blocks as one record each). It reads only what a valid
// capture holds: at the first bytes that are neither a header nor a
// record valid under their segment's CRC seed it stops, and returns the
// places before them and an error naming the offset.
func Places(data []byte) ([]Place, error) {
	var places []Place
	var seed uint32
	seg, inSeg := -1, false
	for off := 0; off < len(data); {
		b := data[off:]
		if len(b) >= len(wireformat.Magic) && string(b[:len(wireformat.Magic)]) == wireformat.Magic {
			h, n, err := wireformat.ParseHeader(b)
			if err != nil {
				return places, fmt.Errorf("faults: header at offset %d: %w", off, err)
			}
			seg++
			inSeg, seed = true, h.Seed()
			places = append(places, Place{Offset: int64(off), End: int64(off + n), Kind: PlaceHeader, Segment: seg})
			off += n
			continue
		}
		if !inSeg {
			return places, fmt.Errorf("faults: offset %d: no segment header", off)
		}
		rec, n, err := wireformat.ParseRecord(b, seed, wireformat.MaxRecordSize)
		if err != nil {
			return places, fmt.Errorf("faults: record at offset %d: %w", off, err)
		}
		k := PlaceRecord
		switch rec.Type {
		case wireformat.TypeStreamEnded:
			k = PlaceStreamEnded
		case wireformat.TypeSummary:
			k = PlaceSummary
		}
		places = append(places, Place{Offset: int64(off), End: int64(off + n), Kind: k, Type: rec.Type, Segment: seg})
		off += n
	}
	return places, nil
}

// Segments splits the DSS capture data into its segments (each a header
// and its records), for a transport whose pieces are whole segments. The
// slices alias data. It returns the error of [Places] for data that is
// not a valid capture.
func Segments(data []byte) ([][]byte, error) {
	places, err := Places(data)
	if err != nil {
		return nil, err
	}
	var segs [][]byte
	for i, p := range places {
		if p.Kind != PlaceHeader {
			continue
		}
		end := int64(len(data))
		for _, q := range places[i+1:] {
			if q.Kind == PlaceHeader {
				end = q.Offset
				break
			}
		}
		segs = append(segs, data[p.Offset:end])
	}
	return segs, nil
}

// Cut splits data, a capture of the places given (from [Places]; nil for
// bytes of any kind), into files: it draws up to cuts distinct offsets
// strictly inside data and returns the pieces between them, in order
// (their concatenation is data; the slices alias it). Each offset is
// drawn from one of: any byte; inside a segment header; just before or
// just after a StreamEnded record; a record or segment boundary. The
// offsets are recorded in the script (OpCut).
func (t *Transport) Cut(data []byte, places []Place, cuts int) [][]byte {
	var headers, ended []Place
	for _, p := range places {
		switch p.Kind {
		case PlaceHeader:
			headers = append(headers, p)
		case PlaceStreamEnded:
			ended = append(ended, p)
		}
	}
	n := int64(len(data))
	seen := map[int64]bool{}
	var offs []int64
	for range cuts {
		if n < 2 {
			break
		}
		var off int64
		switch c := t.rng.IntN(4); {
		case c == 1 && len(headers) > 0:
			h := headers[t.rng.IntN(len(headers))]
			off = h.Offset + 1 + t.rng.Int64N(h.End-h.Offset-1)
		case c == 2 && len(ended) > 0:
			e := ended[t.rng.IntN(len(ended))]
			off = e.Offset
			if t.rng.IntN(2) == 0 {
				off = e.End
			}
		case c == 3 && len(places) > 0:
			off = places[t.rng.IntN(len(places))].Offset
		default:
			off = 1 + t.rng.Int64N(n-1)
		}
		if off <= 0 || off >= n || seen[off] {
			continue
		}
		seen[off] = true
		offs = append(offs, off)
	}
	slices.Sort(offs)
	t.script.Ops = append(t.script.Ops, Op{Kind: OpCut, Offsets: offs})
	return CutAt(data, offs)
}

// CutAt splits data at the given offsets, ascending and inside data,
// into len(offsets)+1 pieces that alias data.
func CutAt(data []byte, offsets []int64) [][]byte {
	pieces := make([][]byte, 0, len(offsets)+1)
	prev := int64(0)
	for _, off := range offsets {
		pieces = append(pieces, data[prev:off])
		prev = off
	}
	return append(pieces, data[prev:])
}

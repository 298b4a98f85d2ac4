package wireformat

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"unicode/utf8"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// legacyFixedSize is the size of the envelope without node and payload.
const legacyFixedSize = 4 + 8 + 8 + 4 + 4

var (
	// ErrLegacyTrailingBytes is returned by [DecodeLegacyDelivery] when bytes
	// follow a complete envelope.
	ErrLegacyTrailingBytes = errors.New("wireformat: trailing bytes after legacy delivery envelope")

	// ErrLegacyNodeUTF8 is returned by [DecodeLegacyDelivery] when the node
	// name is not valid UTF-8.
	ErrLegacyNodeUTF8 = errors.New("wireformat: legacy delivery node is not valid UTF-8")
)

// DecodeLegacyDelivery decodes b, which must hold exactly one legacy delivery
// envelope.
//
// The legacy delivery envelope is the seed system's encoding of one
// [frames.Delivery] (ARCHITECTURE.md rule 6.4, ARCHITECTURE.md cases 4). It has no magic, no
// version and no outer length: one envelope is exactly one byte slice. All
// integers are little-endian:
//
//	offset    size  type   field
//	0         4     u32    node length N
//	4         N     UTF-8  node
//	4+N       8     u64    life
//	12+N      8     u64    position
//	20+N      4     u32    channel id
//	24+N      4     u32    payload length P
//	28+N      P     bytes  payload (opaque, never validated)
//
// The envelope is 28+N+P bytes long. Stream n1#7, position 2, channel 3,
// payload "hi" is the 32 bytes
//
//	02 00 00 00 6E 31 07 00 00 00 00 00 00 00 02 00
//	00 00 00 00 00 00 03 00 00 00 02 00 00 00 68 69
//
// An envelope cut short anywhere, including a length that claims more bytes
// than b holds, yields an error wrapping [io.ErrUnexpectedEOF]; a length is
// always checked against len(b) before anything is allocated. Bytes after the
// payload yield [ErrLegacyTrailingBytes] and a node that is not UTF-8 yields
// [ErrLegacyNodeUTF8]. The payload is never inspected.
//
// The returned delivery does not alias b: its payload is a copy (non-nil,
// possibly empty). DecodeLegacyDelivery is safe for concurrent use.
func DecodeLegacyDelivery(b []byte) (frames.Delivery, error) {
	var d frames.Delivery
	if len(b) < 4 {
		return d, legacyTruncated("node length")
	}
	nodeLen := uint64(binary.LittleEndian.Uint32(b))
	rest := b[4:]
	if uint64(len(rest)) < nodeLen {
		return d, legacyTruncated("node")
	}
	node := rest[:nodeLen]
	if !utf8.Valid(node) {
		return d, ErrLegacyNodeUTF8
	}
	rest = rest[nodeLen:]
	if len(rest) < legacyFixedSize-4 {
		return d, legacyTruncated("header after node")
	}
	d.Stream = frames.StreamID{Node: frames.NodeID(node), Life: frames.Life(binary.LittleEndian.Uint64(rest))}
	d.Frame.Position = frames.Position(binary.LittleEndian.Uint64(rest[8:]))
	d.Frame.Channel = frames.ChannelID(binary.LittleEndian.Uint32(rest[16:]))
	payloadLen := uint64(binary.LittleEndian.Uint32(rest[20:]))
	rest = rest[24:]
	switch {
	case uint64(len(rest)) < payloadLen:
		return frames.Delivery{}, legacyTruncated("payload")
	case uint64(len(rest)) > payloadLen:
		return frames.Delivery{}, fmt.Errorf("%w (%d bytes)", ErrLegacyTrailingBytes, uint64(len(rest))-payloadLen)
	}
	d.Frame.Payload = append([]byte{}, rest...)
	return d, nil
}

func legacyTruncated(field string) error {
	return fmt.Errorf("wireformat: legacy delivery: %s: %w", field, io.ErrUnexpectedEOF)
}

// AppendLegacyDelivery appends the legacy delivery envelope of d to dst and
// returns the extended slice (see [DecodeLegacyDelivery] for the layout). It
// is the exact inverse of [DecodeLegacyDelivery] for every delivery whose
// node is valid UTF-8; it does not validate the node itself.
//
// It panics if the node or the payload is longer than 2^32−1 bytes, which
// the format cannot express.
func AppendLegacyDelivery(dst []byte, d frames.Delivery) []byte {
	if uint64(len(d.Stream.Node)) > math.MaxUint32 || uint64(len(d.Frame.Payload)) > math.MaxUint32 {
		panic("wireformat: legacy delivery node or payload longer than 2^32-1 bytes")
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(d.Stream.Node)))
	dst = append(dst, d.Stream.Node...)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(d.Stream.Life))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(d.Frame.Position))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(d.Frame.Channel))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(d.Frame.Payload)))
	return append(dst, d.Frame.Payload...)
}

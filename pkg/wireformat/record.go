package wireformat

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"math"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// Record is one decoded record: its type and its body, unescaped.
type Record struct {
	Type RecordType
	// Escaped reports whether the stored body was escaped (tag bit 7). It
	// is informational: [AppendRecord] decides escaping by itself.
	Escaped bool
	// Body is the unescaped body. From [ParseRecord] it aliases the input
	// unless Escaped is true.
	Body []byte
}

// magicStart is the first byte of Magic, the only byte escaping rewrites.
const magicStart = 0x89

// AppendRecord appends rec as a record of a segment whose CRC seed is seed
// (see [Seed]): tag, u32 body length, body, u32 CRC32C. If the encoded
// record would contain [Magic], it is written escaped instead (tag bit 7
// set, every 0x89 of the body stored as 89 00). rec.Escaped is ignored.
//
// It returns dst unchanged and an error wrapping [ErrBadTag] if rec.Type is
// not [RecordType.Valid], or [ErrTooLarge] if the stored body would exceed
// [DefaultMaxRecordSize], the largest record every reader accepts.
func AppendRecord(dst []byte, seed uint32, rec Record) ([]byte, error) {
	if !rec.Type.Valid() {
		return dst, fmt.Errorf("%w: type 0x%02x", ErrBadTag, uint8(rec.Type))
	}
	if len(rec.Body) > DefaultMaxRecordSize {
		return dst, fmt.Errorf("%w: record body of %d bytes (at most %d)", ErrTooLarge, len(rec.Body), DefaultMaxRecordSize)
	}
	start := len(dst)
	dst = append(dst, byte(rec.Type), 0, 0, 0, 0)
	dst = append(dst, rec.Body...)
	return finishRecord(dst, start, seed)
}

// finishRecord completes the record that starts at dst[start] with its tag
// and a length placeholder followed by the plain body: it fills in the
// length, appends the CRC, and re-encodes the record escaped if it contains
// the magic.
func finishRecord(dst []byte, start int, seed uint32) ([]byte, error) {
	size := len(dst) - start - 5
	binary.LittleEndian.PutUint32(dst[start+1:], uint32(size))
	dst = binary.LittleEndian.AppendUint32(dst, crc32.Update(seed, castagnoli, dst[start:]))
	if !bytes.Contains(dst[start:], []byte(Magic)) {
		return dst, nil
	}
	// Rare: escape. The escaped body is longer, so it is built from a copy.
	body := bytes.Clone(dst[start+5 : start+5+size])
	tag := dst[start] | EscapedFlag
	dst = append(dst[:start], tag, 0, 0, 0, 0)
	dst = appendEscaped(dst, body)
	size = len(dst) - start - 5
	if size > DefaultMaxRecordSize {
		return dst[:start], fmt.Errorf("%w: escaped record body of %d bytes (at most %d)", ErrTooLarge, size, DefaultMaxRecordSize)
	}
	binary.LittleEndian.PutUint32(dst[start+1:], uint32(size))
	return binary.LittleEndian.AppendUint32(dst, crc32.Update(seed, castagnoli, dst[start:])), nil
}

// appendEscaped appends b with every 0x89 byte followed by 0x00.
func appendEscaped(dst, b []byte) []byte {
	for {
		i := bytes.IndexByte(b, magicStart)
		if i < 0 {
			return append(dst, b...)
		}
		dst = append(dst, b[:i+1]...)
		dst = append(dst, 0)
		b = b[i+1:]
	}
}

// appendUnescaped appends the unescaped form of b (89 00 → 89). Any other
// byte after 0x89, or a final 0x89, is [ErrBadEscape].
func appendUnescaped(dst, b []byte) ([]byte, error) {
	for {
		i := bytes.IndexByte(b, magicStart)
		if i < 0 {
			return append(dst, b...), nil
		}
		if i+1 >= len(b) || b[i+1] != 0 {
			return dst, ErrBadEscape
		}
		dst = append(dst, b[:i+1]...)
		b = b[i+2:]
	}
}

// ParseRecord decodes the record at the start of b in a segment whose CRC
// seed is seed, accepting stored bodies of at most max bytes (max ≤ 0 means
// [DefaultMaxRecordSize]; it is capped at [MaxRecordSize]). It returns the
// record and the number of bytes it occupies (RecordOverhead plus the
// stored body length).
//
// It checks, in order: the tag ([ErrBadTag] when the type is not
// [RecordType.Valid]), the length ([ErrTooLarge], before anything is read or
// allocated for the body), the CRC ([ErrChecksum]) and the escaping
// ([ErrBadEscape]; n is then still the record's length, as its framing is
// sound). Records of reserved and experimental types decode like
// any other; the caller skips them. The body is not interpreted: see
// [ParseFrameBody], [ParseChannelBody] and [DecodeBlock].
//
// If b ends before the record does, ParseRecord returns io.ErrUnexpectedEOF
// and n is the length the record needs: exact once b holds the 5-byte tag
// and length, a lower bound before. Body aliases b unless the record was
// escaped, in which case it is a new slice.
func ParseRecord(b []byte, seed uint32, max int) (rec Record, n int, err error) {
	if max <= 0 {
		max = DefaultMaxRecordSize
	}
	max = min(max, MaxRecordSize)
	if len(b) == 0 {
		return Record{}, RecordOverhead, io.ErrUnexpectedEOF
	}
	tag := b[0]
	rec.Type, rec.Escaped = RecordType(tag&^EscapedFlag), tag&EscapedFlag != 0
	if !rec.Type.Valid() {
		return Record{}, 0, fmt.Errorf("%w: tag 0x%02x", ErrBadTag, tag)
	}
	if len(b) < 5 {
		return Record{}, RecordOverhead, io.ErrUnexpectedEOF
	}
	size := binary.LittleEndian.Uint32(b[1:])
	if size > uint32(max) {
		return Record{}, 0, fmt.Errorf("%w: record body of %d bytes (at most %d)", ErrTooLarge, size, max)
	}
	n = RecordOverhead + int(size)
	if len(b) < n {
		return Record{}, n, io.ErrUnexpectedEOF
	}
	if crc32.Update(seed, castagnoli, b[:n-4]) != binary.LittleEndian.Uint32(b[n-4:]) {
		return Record{}, 0, fmt.Errorf("%w (%s record)", ErrChecksum, rec.Type)
	}
	rec.Body = b[5 : n-4]
	if rec.Escaped {
		if rec.Body, err = appendUnescaped(nil, rec.Body); err != nil {
			return Record{}, n, err // the framing is sound: n lets the caller skip it
		}
	}
	return rec, n, nil
}

// AppendFrame appends f as a Frame record of a segment whose CRC seed is
// seed, escaping it if needed (see [AppendRecord]). It is the hot path of
// writing: it copies the payload once and allocates nothing when dst has
// room. It returns dst unchanged and an error wrapping [ErrTooLarge] if the
// payload exceeds [MaxPayloadSize].
func AppendFrame(dst []byte, seed uint32, f frames.Frame) ([]byte, error) {
	if len(f.Payload) > MaxPayloadSize {
		return dst, fmt.Errorf("%w: payload of %d bytes (at most %d)", ErrTooLarge, len(f.Payload), MaxPayloadSize)
	}
	start := len(dst)
	dst = append(dst, byte(TypeFrame), 0, 0, 0, 0)
	dst = AppendFrameBody(dst, f)
	return finishRecord(dst, start, seed)
}

// AppendFrameBody appends the body of a Frame record: uvarint channel id,
// uvarint position, payload (to the end of the body).
func AppendFrameBody(dst []byte, f frames.Frame) []byte {
	dst = binary.AppendUvarint(dst, uint64(f.Channel))
	dst = binary.AppendUvarint(dst, uint64(f.Position))
	return append(dst, f.Payload...)
}

// ParseFrameBody decodes a Frame record body. It returns [ErrBadBody] for a
// malformed varint or a channel id over 2³²−1. The payload aliases body; an
// empty payload is a non-nil empty slice only if body has capacity.
func ParseFrameBody(body []byte) (frames.Frame, error) {
	if len(body) >= 2 && body[0] < 0x80 && body[1] < 0x80 {
		// The common case: one-byte channel id and position (an inner
		// frame's position delta).
		return frames.Frame{Channel: frames.ChannelID(body[0]), Position: frames.Position(body[1]), Payload: body[2:]}, nil
	}
	ch, k := binary.Uvarint(body)
	if k <= 0 || ch > math.MaxUint32 {
		return frames.Frame{}, fmt.Errorf("%w: frame channel id", ErrBadBody)
	}
	pos, k2 := binary.Uvarint(body[k:])
	if k2 <= 0 {
		return frames.Frame{}, fmt.Errorf("%w: frame position", ErrBadBody)
	}
	return frames.Frame{Channel: frames.ChannelID(ch), Position: frames.Position(pos), Payload: body[k+k2:]}, nil
}

// AppendChannelBody appends the body of a ChannelDeclared record: the JSON
// form of d (frames' spelling).
func AppendChannelBody(dst []byte, d *frames.ChannelDescriptor) ([]byte, error) {
	b, err := json.Marshal(d)
	if err != nil {
		return dst, fmt.Errorf("wireformat: encode channel descriptor: %w", err)
	}
	return append(dst, b...), nil
}

// ParseChannelBody decodes a ChannelDeclared record body. It returns an
// error wrapping [ErrBadBody] if the JSON does not decode. Checking that the
// descriptor names the segment's stream is the caller's job.
func ParseChannelBody(body []byte) (frames.ChannelDescriptor, error) {
	var d frames.ChannelDescriptor
	if err := json.Unmarshal(body, &d); err != nil {
		return frames.ChannelDescriptor{}, fmt.Errorf("%w: channel descriptor: %w", ErrBadBody, err)
	}
	return d, nil
}

// AppendTrimmedBody appends the body of a Trimmed record: uvarint H, the
// trim horizon of the segment's stream in its store (ds-format(5)
// "Trimmed"): frames below position H were deleted by their store, and a
// reader hides any of them that remain.
func AppendTrimmedBody(dst []byte, h frames.Position) []byte {
	return binary.AppendUvarint(dst, uint64(h))
}

// ParseTrimmedBody decodes a Trimmed record body: the horizon H. Bytes
// after the uvarint are ignored (a later minor version may add fields). It
// returns [ErrBadBody] for a missing or malformed uvarint.
func ParseTrimmedBody(body []byte) (frames.Position, error) {
	h, k := binary.Uvarint(body)
	if k <= 0 {
		return 0, fmt.Errorf("%w: trimmed horizon", ErrBadBody)
	}
	return frames.Position(h), nil
}

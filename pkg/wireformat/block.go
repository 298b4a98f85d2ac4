package wireformat

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// A Block record (ds-format(5) "Block") holds a batch of inner records,
// compressed. Its body is
//
//	u8 codec (CodecZstd, CodecS2) · uvarint U (uncompressed size) · compressed bytes
//
// and the U decompressed bytes are a sequence of inner records
//
//	u8 type · uvarint L · L bytes of body
//
// with the bodies of the outer records of the same type, no CRC (the
// block's covers them) and no escaping, except that an inner Frame stores
// its position as a difference (see [AppendInnerFrame]).

// The zstd encoder and decoder are shared by every writer and reader of the
// process: EncodeAll and DecodeAll are safe for concurrent use, and each
// holds at most GOMAXPROCS internal states sized for MaxBlockSize.
// DecodeAll decodes a block straight into the content buffer, which serves
// as its window: a decoder state takes about 0.35 MiB besides it.
//
// The encoder runs at klauspost's fastest level (about zstd -1) with a
// window of MaxBlockSize. Measured on log text in 1 MiB blocks as ds wrap
// writes it (pkg/segments BenchmarkCaptureSize and varied frame sizes),
// SpeedDefault compresses no better (11% worse to 9% better) at 1.2–1.5
// times the CPU, SpeedBetterCompression 6% worse to 15% better at 2.5–4
// times the CPU, and SpeedBestCompression 13–17% better at 10 times; the
// fastest level compresses about 250 MB/s per core of varied service logs
// and 500 MB/s of regular ones.
//
// That holds for varied text, not for all: on the 2 MB output of seq(1),
// the fastest level is 5 times the size of zstd -3 and SpeedDefault 0.91
// times it, at half the speed. A writer that keeps up with its producer
// uses SpeedDefault ([BlockZstd]), the fastest level when it falls behind
// ([BlockZstdFast]), and S2 ([BlockS2]) when even that does not keep up.
var (
	zstdEncoder        = sync.OnceValues(func() (*zstd.Encoder, error) { return newZstdEncoder(zstd.SpeedFastest) })
	zstdDefaultEncoder = sync.OnceValues(func() (*zstd.Encoder, error) { return newZstdEncoder(zstd.SpeedDefault) })
	zstdDecoder        = sync.OnceValues(func() (*zstd.Decoder, error) {
		return zstd.NewReader(nil,
			zstd.WithDecoderMaxMemory(MaxBlockSize),
			zstd.WithDecoderMaxWindow(MaxBlockSize),
			zstd.WithDecodeAllCapLimit(true),
			zstd.WithDecoderConcurrency(0))
	})
)

func newZstdEncoder(level zstd.EncoderLevel) (*zstd.Encoder, error) {
	return zstd.NewWriter(nil,
		zstd.WithEncoderLevel(level),
		zstd.WithEncoderCRC(false), // the record CRC covers the block
		zstd.WithWindowSize(MaxBlockSize),
		zstd.WithLowerEncoderMem(true))
}

// BlockCodec is how [AppendBlockBodyWith] compresses a block: a codec and,
// for zstd, its level.
type BlockCodec uint8

const (
	// BlockZstdFast is zstd at klauspost's fastest level (about zstd -1):
	// what AppendBlockBody writes.
	BlockZstdFast BlockCodec = iota
	// BlockZstd is zstd at klauspost's default level (about zstd -3):
	// smaller on regular text (far smaller on some, see above), at about
	// half the speed.
	BlockZstd
	// BlockS2 is [CodecS2]: the fastest, and the largest.
	BlockS2
)

// String returns "zstd-fast", "zstd" or "s2".
func (c BlockCodec) String() string {
	switch c {
	case BlockZstdFast:
		return "zstd-fast"
	case BlockZstd:
		return "zstd"
	case BlockS2:
		return "s2"
	}
	return fmt.Sprintf("BlockCodec(%d)", uint8(c))
}

// AppendBlock appends a Block record holding content, a sequence of inner
// records built with [AppendInner] or [AppendInnerFrame], compressed with
// zstd, for a segment whose CRC seed is seed. Like [AppendRecord] it escapes
// the record if needed. It returns dst unchanged and an error wrapping
// [ErrTooLarge] if content exceeds [MaxBlockSize]. It is safe for concurrent
// use.
func AppendBlock(dst []byte, seed uint32, content []byte) ([]byte, error) {
	if len(content) > MaxBlockSize {
		return dst, fmt.Errorf("%w: block of %d bytes (at most %d)", ErrTooLarge, len(content), MaxBlockSize)
	}
	start := len(dst)
	dst = append(dst, byte(TypeBlock), 0, 0, 0, 0)
	dst, err := AppendBlockBody(dst, content)
	if err != nil {
		return dst[:start], err
	}
	return finishRecord(dst, start, seed)
}

// AppendBlockBody appends the body of a Block record holding content (see
// [AppendBlock]): codec, uncompressed size, zstd frame. A writer that
// compresses blocks in the background builds the record around it with
// [AppendRecord] once it knows the segment. It returns dst unchanged and an
// error wrapping [ErrTooLarge] if content exceeds [MaxBlockSize]. It is safe
// for concurrent use.
func AppendBlockBody(dst, content []byte) ([]byte, error) {
	return AppendBlockBodyWith(dst, content, BlockZstdFast)
}

// AppendBlockBodyWith is [AppendBlockBody] with the codec and level c.
func AppendBlockBodyWith(dst, content []byte, c BlockCodec) ([]byte, error) {
	if len(content) > MaxBlockSize {
		return dst, fmt.Errorf("%w: block of %d bytes (at most %d)", ErrTooLarge, len(content), MaxBlockSize)
	}
	switch c {
	case BlockS2:
		dst = append(dst, CodecS2)
		dst = binary.AppendUvarint(dst, uint64(len(content)))
		n := len(dst)
		dst = grow(dst, s2.MaxEncodedLen(len(content)))
		out := s2.Encode(dst[n:cap(dst)], content)
		return dst[:n+len(out)], nil
	case BlockZstdFast, BlockZstd:
		get := zstdEncoder
		if c == BlockZstd {
			get = zstdDefaultEncoder
		}
		enc, err := get()
		if err != nil {
			return dst, fmt.Errorf("wireformat: zstd encoder: %w", err)
		}
		dst = append(dst, CodecZstd)
		dst = binary.AppendUvarint(dst, uint64(len(content)))
		return enc.EncodeAll(content, dst), nil
	}
	return dst, fmt.Errorf("wireformat: unknown block codec %v", c)
}

// DecodeBlock decompresses the body of a Block record (as returned by
// [ParseRecord]) and appends the content, U bytes of inner records, to dst.
// It returns an error wrapping [ErrUnknownCodec] for a codec other than
// [CodecZstd] and [CodecS2], [ErrTooLarge] if U exceeds [MaxBlockSize] (checked before
// anything is allocated), or [ErrBadBody] if the body is malformed or does
// not decompress to exactly U bytes. Memory use is bounded by MaxBlockSize
// whatever the body claims. The inner records are not checked: walk them
// with [ParseInner]. It is safe for concurrent use.
func DecodeBlock(dst, body []byte) ([]byte, error) {
	if len(body) == 0 {
		return dst, fmt.Errorf("%w: empty block", ErrBadBody)
	}
	if body[0] != CodecZstd && body[0] != CodecS2 {
		return dst, fmt.Errorf("%w %d", ErrUnknownCodec, body[0])
	}
	size, k := binary.Uvarint(body[1:])
	if k <= 0 {
		return dst, fmt.Errorf("%w: block size", ErrBadBody)
	}
	if size > MaxBlockSize {
		return dst, fmt.Errorf("%w: block of %d bytes (at most %d)", ErrTooLarge, size, MaxBlockSize)
	}
	if body[0] == CodecS2 {
		return decodeS2(dst, body[1+k:], int(size))
	}
	dec, err := zstdDecoder()
	if err != nil {
		return dst, fmt.Errorf("wireformat: zstd decoder: %w", err)
	}
	n := len(dst)
	if cap(dst)-n < int(size) {
		grown := make([]byte, n, n+int(size))
		copy(grown, dst)
		dst = grown
	}
	// The capacity limit makes the decoder stop after size bytes.
	out, err := dec.DecodeAll(body[1+k:], dst[:n:n+int(size)])
	if err != nil {
		return dst, fmt.Errorf("%w: zstd: %w", ErrBadBody, err)
	}
	if len(out)-n != int(size) {
		return dst, fmt.Errorf("%w: block decompressed to %d bytes, header says %d", ErrBadBody, len(out)-n, size)
	}
	return out, nil
}

// grow returns dst with room for n more bytes, allocated once and exactly:
// slices.Grow's append of make([]byte, n) allocates the n bytes a second
// time when the compiler does not elide it (under the race detector: a
// 16 MiB header cost 32 MiB).
func grow(dst []byte, n int) []byte {
	if cap(dst)-len(dst) >= n {
		return dst
	}
	out := make([]byte, len(dst), len(dst)+n)
	copy(out, dst)
	return out
}

// decodeS2 appends to dst the size bytes that the S2 block src decodes
// to: the block's own length prefix must say size too (checked before
// anything is allocated).
func decodeS2(dst, src []byte, size int) ([]byte, error) {
	n, err := s2.DecodedLen(src)
	if err != nil {
		return dst, fmt.Errorf("%w: s2: %w", ErrBadBody, err)
	}
	if n != size {
		return dst, fmt.Errorf("%w: s2 block of %d bytes, header says %d", ErrBadBody, n, size)
	}
	start := len(dst)
	dst = grow(dst, size)
	out, err := s2.Decode(dst[start:start+size], src)
	if err != nil {
		return dst[:start], fmt.Errorf("%w: s2: %w", ErrBadBody, err)
	}
	if len(out) != size {
		return dst[:start], fmt.Errorf("%w: block decompressed to %d bytes, header says %d", ErrBadBody, len(out), size)
	}
	return dst[:start+size], nil
}

// AppendInner appends an inner block record: u8 type, uvarint body length,
// body. The caller puts only ChannelDeclared, Frame and StreamEnded records
// in a block.
func AppendInner(dst []byte, t RecordType, body []byte) []byte {
	dst = append(dst, byte(t))
	dst = binary.AppendUvarint(dst, uint64(len(body)))
	return append(dst, body...)
}

// AppendInnerFrame appends f as an inner Frame record, without an
// intermediate copy of the payload. Its body is uvarint channel id, zigzag
// varint of f.Position − next, payload: next is the position expected
// after the previous Frame of the block (f.Position of that frame + 1), or
// 0 for the first Frame of a block. Consecutive positions thus cost one
// constant byte, which compresses to almost nothing. The arithmetic wraps
// modulo 2⁶⁴, so every position is encodable.
func AppendInnerFrame(dst []byte, f frames.Frame, next frames.Position) []byte {
	d := zigzag(f.Position, next)
	size := uvarintLen(uint64(f.Channel)) + uvarintLen(d) + len(f.Payload)
	dst = append(dst, byte(TypeFrame))
	dst = binary.AppendUvarint(dst, uint64(size))
	dst = binary.AppendUvarint(dst, uint64(f.Channel))
	dst = binary.AppendUvarint(dst, d)
	return append(dst, f.Payload...)
}

// InnerFrameSize returns the size in bytes of f as an inner record after a
// frame that leaves next expected (see [AppendInnerFrame]).
func InnerFrameSize(f frames.Frame, next frames.Position) int {
	size := uvarintLen(uint64(f.Channel)) + uvarintLen(zigzag(f.Position, next)) + len(f.Payload)
	return 1 + uvarintLen(uint64(size)) + size
}

// ParseInnerFrameBody decodes the body of an inner Frame record given the
// position next expected (see [AppendInnerFrame]). It returns [ErrBadBody]
// for a malformed varint or a channel id over 2³²−1. The payload aliases
// body.
func ParseInnerFrameBody(body []byte, next frames.Position) (frames.Frame, error) {
	if len(body) >= 2 && body[0] < 0x80 && body[1] < 0x80 {
		// The common case, inlined: one-byte channel id and delta.
		d := uint64(body[1])
		return frames.Frame{Channel: frames.ChannelID(body[0]), Position: next + frames.Position(int64(d>>1)^-int64(d&1)), Payload: body[2:]}, nil
	}
	f, err := ParseFrameBody(body)
	if err != nil {
		return f, err
	}
	d := uint64(f.Position)
	f.Position = next + frames.Position(int64(d>>1)^-int64(d&1))
	return f, nil
}

// zigzag maps the signed difference pos − next (modulo 2⁶⁴) to an
// unsigned integer that is small when the difference is.
func zigzag(pos, next frames.Position) uint64 {
	d := int64(pos - next)
	return uint64(d<<1) ^ uint64(d>>63)
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// ParseInner decodes the inner block record at the start of b and returns it
// with the number of bytes it occupies. The body aliases b. It returns
// [ErrBadTag] for type 0, a Block (blocks do not nest), a type with bit 7
// set (inner records are never escaped) or a type that is not
// [RecordType.Valid]; [ErrBadBody] for a malformed length; and
// io.ErrUnexpectedEOF if b ends inside the record, which inside a complete
// block means the block is malformed. Reserved and experimental types
// decode; the caller skips them as it does outer records.
func ParseInner(b []byte) (Record, int, error) {
	if len(b) >= 2 && b[1] < 0x80 && RecordType(b[0]) == TypeFrame {
		// The common case, inlined: a Frame of under 128 bytes (a line).
		n := 2 + int(b[1])
		if n > len(b) {
			return Record{}, 0, io.ErrUnexpectedEOF
		}
		return Record{Type: TypeFrame, Body: b[2:n]}, n, nil
	}
	if len(b) == 0 {
		return Record{}, 0, io.ErrUnexpectedEOF
	}
	t := RecordType(b[0])
	if !t.Valid() || t == TypeBlock {
		return Record{}, 0, fmt.Errorf("%w: inner record type 0x%02x", ErrBadTag, b[0])
	}
	size, k := binary.Uvarint(b[1:])
	if k == 0 {
		return Record{}, 0, io.ErrUnexpectedEOF
	}
	if k < 0 {
		return Record{}, 0, fmt.Errorf("%w: inner record length", ErrBadBody)
	}
	if size > uint64(len(b)-1-k) {
		return Record{}, 0, io.ErrUnexpectedEOF
	}
	n := 1 + k + int(size)
	return Record{Type: t, Body: b[1+k : n]}, n, nil
}

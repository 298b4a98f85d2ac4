package wireformat

import (
	"hash/crc32"
	"strconv"
)

// Magic is the first 8 bytes of every DSS segment (ds-format(5) "SEGMENT
// HEADER"): 89 44 53 53 0D 0A 1A 0A. As in PNG, the high bit of the first
// byte, the CR LF pair, the ^Z and the final LF detect transfers that strip
// the eighth bit or translate line endings. Writers keep the invariant that
// the magic appears in a capture only where a segment header starts
// (ds-format(5) "ESCAPING").
const Magic = "\x89DSS\r\n\x1a\n"

// Format version written by this package (ds-format(5) "VERSIONS"). A reader
// refuses a segment whose major version is not MajorVersion and reads one of
// any minor version, ignoring header-body bytes it does not know. Minor
// version 1 added the HeaderCopy record ([TypeHeaderCopy]); 1.0 readers skip
// it as a reserved record. Version 2 added the S2 block codec, version 3
// the parity form of the HeaderCopy ([ParityKind]), which 1.1 and 1.2
// readers skip as a HeaderCopy.
const (
	MajorVersion = 1
	MinorVersion = 3
)

// Sizes of the fixed parts of the format, in bytes.
const (
	// HeaderPrefixSize is the size of the header fields before the header
	// body: magic (8), major (1), minor (1), body length (4).
	HeaderPrefixSize = 14
	// HeaderOverhead is HeaderPrefixSize plus the 4-byte header CRC.
	HeaderOverhead = HeaderPrefixSize + 4
	// RecordOverhead is the size of a record's fixed fields: tag (1), body
	// length (4) and CRC (4).
	RecordOverhead = 9
)

// Size limits (ds-format(5) "SIZE LIMITS"). Every length read from input is
// checked against its limit before anything is allocated for it.
const (
	// MaxHeaderSize is the largest header body length, in bytes (16 MiB − 1).
	MaxHeaderSize = 1<<24 - 1
	// MaxRecordSize is the format's hard limit on a record's stored body
	// length, in bytes (16 MiB − 1): the top byte of a record's length field
	// is always 0, which the escaping argument relies on.
	MaxRecordSize = 1<<24 - 1
	// DefaultMaxRecordSize is the largest stored body, in bytes (4 MiB), that
	// ds writers produce and that ds readers accept unless told otherwise.
	DefaultMaxRecordSize = 4 << 20
	// MaxPayloadSize is the largest frame payload, in bytes (1 MiB), that
	// [AppendFrame] encodes. A fully escaped frame body of that size still
	// fits DefaultMaxRecordSize.
	MaxPayloadSize = 1 << 20
	// MaxBlockSize is the largest uncompressed content of a Block record, in
	// bytes (1 MiB). Decoders refuse larger blocks before allocating.
	MaxBlockSize = 1 << 20
	// DefaultBlockSize is the uncompressed block content size, in bytes
	// (1 MiB, MaxBlockSize), at which ds writers close a block.
	DefaultBlockSize = MaxBlockSize
)

// RecordType is the type of a record: bits 0–6 of its tag byte
// (ds-format(5) "RECORDS"). Bit 7 of the tag ([EscapedFlag]) says whether the
// stored body is escaped; it is not part of the type.
type RecordType uint8

// Record types. 0x08–0x3F are reserved for future standard records and
// 0x40–0x7F for private or experimental use; readers skip both by length.
// 0x09, 0x0A, 0x0D and 0x1A are never assigned: see [RecordType.Valid].
const (
	TypeInvalid         RecordType = 0x00 // never valid: zero fill is damage
	TypeChannelDeclared RecordType = 0x01 // body: JSON frames.ChannelDescriptor
	TypeFrame           RecordType = 0x02 // body: uvarint channel, uvarint position, payload
	TypeStreamEnded     RecordType = 0x03 // body: empty (extra bytes ignored)
	TypeBlock           RecordType = 0x04 // body: codec, uvarint size, compressed inner records
	TypeSummary         RecordType = 0x05 // body: JSON Summary, the last record of a segment
	TypeTrimmed         RecordType = 0x06 // body: uvarint H, the trim horizon of a store (ds-format(5) "Trimmed")
	TypeHeaderCopy      RecordType = 0x07 // body: major, minor, the header body; right after the header (ds-format(5) "HeaderCopy")

	FirstReservedType     RecordType = 0x08
	FirstExperimentalType RecordType = 0x40
	LastExperimentalType  RecordType = 0x7F
)

// EscapedFlag is bit 7 of a tag byte: set when the stored body is escaped
// (every 0x89 byte of the body stored as 89 00).
const EscapedFlag = 0x80

// Block codecs (ds-format(5) "Block"): the first byte of a Block body.
const (
	// CodecZstd is a single zstd frame (RFC 8878), the codec of format
	// version 1.0.
	CodecZstd = 1
	// CodecS2 (format version 1.2) is one S2 block (klauspost/compress/s2's
	// block format, a superset of Snappy's): about four times as fast to
	// write as zstd's fastest level, about 1.5 times its size on log text.
	// ds writers use it only when zstd cannot keep up with their producer,
	// instead of storing the block's records plain.
	CodecS2 = 2
)

// Valid reports whether t may appear in a record: it is not 0, fits in 7
// bits, and is none of 0x09, 0x0A, 0x0D, 0x1A. Those four are never
// assigned: 0x89 (0x09 escaped) starts the magic, and 0x0A, 0x0D and 0x1A
// as tags could complete a magic begun at the end of the previous record
// (ds-format(5) "ESCAPING").
func (t RecordType) Valid() bool {
	switch t {
	case TypeInvalid, 0x09, 0x0A, 0x0D, 0x1A:
		return false
	}
	return t <= LastExperimentalType
}

// Known reports whether t is one of the record types of format 1.1
// (ChannelDeclared, Frame, StreamEnded, Block, SegmentSummary, Trimmed,
// HeaderCopy).
func (t RecordType) Known() bool { return t >= TypeChannelDeclared && t <= TypeHeaderCopy }

// Reserved reports whether t is a valid type in the range reserved for
// future standard records (0x08–0x3F). Readers report such records to their
// caller and skip them by length.
func (t RecordType) Reserved() bool {
	return t.Valid() && t >= FirstReservedType && t < FirstExperimentalType
}

// Experimental reports whether t is in the private/experimental range
// (0x40–0x7F). Readers skip such records silently.
func (t RecordType) Experimental() bool {
	return t >= FirstExperimentalType && t <= LastExperimentalType
}

var typeNames = [...]string{"Invalid", "ChannelDeclared", "Frame", "StreamEnded", "Block", "SegmentSummary", "Trimmed", "HeaderCopy"}

// String returns the type's name, or "Reserved(0x08)" / "Experimental(0x40)"
// / "RecordType(0x89)".
func (t RecordType) String() string {
	h := strconv.FormatUint(uint64(t)|0x100, 16)[1:]
	switch {
	case int(t) < len(typeNames):
		return typeNames[t]
	case t.Reserved():
		return "Reserved(0x" + h + ")"
	case t.Experimental():
		return "Experimental(0x" + h + ")"
	}
	return "RecordType(0x" + h + ")"
}

// castagnoli is the CRC32C table. hash/crc32 uses the CPU's CRC32
// instruction for it where there is one.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Seed returns the CRC seed of a segment: CRC32C of its 8-byte segment id.
// A record's CRC is crc32.Update(Seed(id), Castagnoli, tag‖length‖body),
// that is CRC32C(id‖tag‖length‖body), so a record copied from another
// segment never validates.
func Seed(segmentID [8]byte) uint32 { return crc32.Checksum(segmentID[:], castagnoli) }

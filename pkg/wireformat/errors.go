package wireformat

import "errors"

// Errors of the DSS decoders and encoders. Decoders return them bare or
// wrapped with detail (test with errors.Is); package segments adds the byte
// offset. A decoder that needs more input returns io.ErrUnexpectedEOF.
var (
	// ErrBadMagic means the bytes where a segment header should start are
	// not [Magic].
	ErrBadMagic = errors.New("wireformat: bad magic (not a DSS segment)")

	// ErrUnknownVersion means a segment header of a major version other
	// than [MajorVersion]. The segment cannot be read; ds needs upgrading.
	ErrUnknownVersion = errors.New("wireformat: unknown format version")

	// ErrChecksum means a header or record whose CRC32C does not match its
	// bytes (or, for a record, does not match under this segment's seed).
	ErrChecksum = errors.New("wireformat: checksum mismatch")

	// ErrTooLarge means a length over its limit: a header body over
	// [MaxHeaderSize], a record body over the reader's maximum, a block over
	// [MaxBlockSize], a payload over [MaxPayloadSize].
	ErrTooLarge = errors.New("wireformat: length exceeds maximum")

	// ErrBadTag means a tag whose type is 0 or not [RecordType.Valid], or an
	// inner block record of a type that cannot be inside a block.
	ErrBadTag = errors.New("wireformat: bad record tag")

	// ErrBadEscape means an escaped body in which 0x89 is followed by a byte
	// other than 0x00, or ends the body.
	ErrBadEscape = errors.New("wireformat: bad escape in record body")

	// ErrBadBody means a record whose framing and CRC are sound but whose
	// body does not decode: a bad varint, bad JSON, a block that does not
	// decompress to its stated size, a descriptor of another stream.
	ErrBadBody = errors.New("wireformat: malformed record body")

	// ErrUnknownCodec means a Block record with a codec other than
	// [CodecZstd]. Readers skip the block and report it.
	ErrUnknownCodec = errors.New("wireformat: unknown block codec")

	// ErrWrongStream means a channel descriptor that names a stream other
	// than its segment's.
	ErrWrongStream = errors.New("wireformat: descriptor names another stream")

	// ErrMagicInHeader means that an encoded header contains [Magic] after
	// its first byte. The caller picks another segment id and retries.
	ErrMagicInHeader = errors.New("wireformat: magic inside encoded header")
)

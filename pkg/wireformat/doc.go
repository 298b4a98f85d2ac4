// Package wireformat turns one unit of the ds byte formats into bytes and
// back. It is the transport encoding stage of the pipeline (ARCHITECTURE.md §1):
//
//	producers → endpoint/catalog → mux → fanout → transport → ingest → views
//	                                              └ wireformat (bytes) ┘
//
// It knows single records, never files: package segments arranges records
// into segments and captures, and reads them from streams.
//
// # DSS, the capture format of ds
//
// The specification is man/ds-format.5 (ds-format(5)); the doc comments cite
// its sections. All integers are little-endian; varints are
// encoding/binary's uvarint; checksums are CRC32C (Castagnoli).
//
//   - A segment header ([AppendHeader], [ParseHeader]) starts with [Magic]
//     89 44 53 53 0D 0A 1A 0A, then major and minor version, the header body
//     length, the body (segment id, sequence number, writer identity, JSON
//     stream descriptor, JSON catalog) and a CRC32C of all of it.
//   - A record ([AppendRecord], [AppendFrame], [ParseRecord]) is a tag
//     (type in bits 0–6, escaped flag in bit 7), a u32 body length, the body
//     and a CRC32C seeded with the segment id ([Seed]).
//   - Types: ChannelDeclared (JSON [frames.ChannelDescriptor],
//     [ParseChannelBody]), Frame (uvarint channel, uvarint position,
//     payload; [ParseFrameBody]), StreamEnded (empty), Block (zstd-compressed
//     inner records whose frames store position differences;
//     [AppendBlock], [AppendBlockBody], [DecodeBlock], [ParseInner],
//     [AppendInnerFrame], [ParseInnerFrameBody]), SegmentSummary (JSON [Summary],
//     the last record of a segment; [AppendSummary], [FindSummary]),
//     Trimmed (uvarint trim horizon of a store; [AppendTrimmedBody],
//     [ParseTrimmedBody]), HeaderCopy (the header's version and body again,
//     right after it, to recover a damaged header; [AppendHeaderCopy],
//     [ParseHeaderCopy], [HeaderFieldsSize]; for a header too large for
//     that, its parity copy: [AppendHeaderParity], [ParseHeaderParity],
//     [HeaderParity.Recover]). Types 0x08–0x3F are reserved
//     and 0x40–0x7F experimental: decoders return them so that readers can
//     skip them.
//   - A record that would contain the magic is stored escaped, so the magic
//     appears in a capture only where a segment starts.
//
// Decoders take a []byte and report how many bytes they consumed, as
// binary.Uvarint does; when the input is short they return
// io.ErrUnexpectedEOF and the length they need. They check every length
// against its limit ([MaxHeaderSize], the caller's maximum record size,
// [MaxBlockSize]) before allocating, and never panic on any input. Errors
// are the sentinels of this package ([ErrBadMagic], [ErrUnknownVersion],
// [ErrChecksum], [ErrTooLarge], [ErrBadTag], [ErrBadEscape], [ErrBadBody],
// [ErrUnknownCodec], [ErrWrongStream]), bare or wrapped with detail; the
// caller adds byte offsets and file names.
//
// # Importers
//
// The package also decodes the byte streams of the seed system, which ds
// imports: the legacy delivery envelope ([DecodeLegacyDelivery]) and the
// catalog-aware DSQ1 transport stream ([NewDSQ1Reader]); see ARCHITECTURE.md §8
// §4.
package wireformat

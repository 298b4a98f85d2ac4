package wireformat

import (
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"hash/maphash"
	"io"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// HeaderPiece is the most [ParseHeaderAt] reads of a header at a time, in
// bytes, unless one channel descriptor is longer.
const HeaderPiece = 1 << 20

// ParseHeaderAt is [ParseHeaderRepeats] for a large header in a file: it
// decodes the header of n bytes (the length ParseHeader's
// io.ErrUnexpectedEOF gave for it) at offset off of src, reading it in
// pieces of [HeaderPiece] bytes, so that the header's bytes are never held
// beside what they decode to. A reader of a 16 MiB header then holds its
// descriptors (about 11 MiB for 120 000 channels) and one piece, not 16 MiB
// more (issue 21 item 5: 64 MiB for every reader and writer).
//
// It reads the header twice: the first time to check its CRC32C and, with
// m, to tell a repeated catalog (returned with CatalogRepeated set, as by
// ParseHeaderRepeats, and not read again), the second to decode the
// catalog. Where it answers, its Header is the one ParseHeaderRepeats
// returns for the same bytes and memo.
//
// It reports false, having changed nothing of m, where it cannot answer
// this way: a header that fails a check (magic, version, length, CRC, its
// fields), a read error or short read, a catalog not in ds writers'
// spelling (a space, an escape: ParseHeader's encoding/json path), or
// fields before the catalog longer than a piece. The caller then reads the
// header whole and parses it with ParseHeaderRepeats, which says what is
// wrong, if anything.
func ParseHeaderAt(src io.ReaderAt, off int64, n int, m *CatalogMemo) (Header, bool) {
	return parseHeaderAt(src, off, n, m, HeaderPiece)
}

func parseHeaderAt(src io.ReaderAt, off int64, n int, m *CatalogMemo, piece int) (Header, bool) {
	if n < HeaderOverhead || n > HeaderOverhead+MaxHeaderSize {
		return Header{}, false
	}
	buf := make([]byte, min(n, piece))
	if len(buf) < HeaderPrefixSize || !readAt(src, buf, off) {
		return Header{}, false
	}
	if string(buf[:len(Magic)]) != Magic || buf[len(Magic)] != MajorVersion ||
		HeaderOverhead+int(binary.LittleEndian.Uint32(buf[10:])) != n {
		return Header{}, false
	}
	crcAt := n - 4
	body := buf[HeaderPrefixSize:min(len(buf), crcAt)]
	f, err := cutHeaderFields(body)
	if err != nil {
		return Header{}, false
	}
	size, k := binary.Uvarint(f.rest)
	catStart := HeaderPrefixSize + len(body) - len(f.rest) + k
	if k <= 0 || size > uint64(crcAt-catStart) {
		return Header{}, false
	}
	catEnd := catStart + int(size)
	h := Header{Major: buf[8], Minor: buf[9], SegmentID: f.segmentID, Seq: f.seq, Writer: string(f.writer)}
	if json.Unmarshal(f.stream, &h.Stream) != nil {
		return Header{}, false
	}

	// The first reading: the CRC, the number of descriptors and, for a
	// catalog that a memo remembers, its hashes.
	var hs *[2]maphash.Hash
	if m != nil && catEnd-catStart >= minMemoCatalog {
		hs = m.hashes()
	}
	var count elementCounter
	crc := uint32(0)
	for at := 0; at < crcAt; at += piece {
		b := buf[:min(piece, crcAt-at)]
		if !readAt(src, b, off+int64(at)) {
			return Header{}, false
		}
		crc = crc32.Update(crc, castagnoli, b)
		c := clip(b, at, catStart, catEnd)
		count.feed(c)
		if hs != nil {
			hs[0].Write(c)
			hs[1].Write(c)
		}
	}
	var stored [4]byte
	if !readAt(src, stored[:], off+int64(crcAt)) || binary.LittleEndian.Uint32(stored[:]) != crc {
		return Header{}, false
	}
	var sum [2]uint64
	if hs != nil {
		sum = [2]uint64{hs[0].Sum64(), hs[1].Sum64()}
		if m.matches(catEnd-catStart, sum, h.Stream) {
			h.CatalogRepeated = true
			return h, true
		}
	}

	// The second: the catalog, a window at a time, each descriptor whole
	// in one (the window grows for a longer one).
	d := catalogDecoder{stream: h.Stream.Stream}
	if size > 64<<10 {
		if c := count.count(); c <= int(size)/minDescriptorSize {
			d.dst = make([]frames.ChannelDescriptor, 0, c)
		}
	}
	have := 0
	for at := catStart; ; {
		if have == len(buf) {
			grown := make([]byte, min(2*len(buf), catEnd-catStart))
			copy(grown, buf)
			buf = grown
		}
		k := min(len(buf)-have, catEnd-at)
		if !readAt(src, buf[have:have+k], off+int64(at)) {
			return Header{}, false
		}
		at += k
		w := buf[:have+k]
		final := at == catEnd
		used, ok := d.feed(w, final)
		if !ok {
			return Header{}, false
		}
		if final {
			if used != len(w) || d.state != catDone {
				return Header{}, false
			}
			break
		}
		have = copy(buf, w[used:])
	}
	h.Channels = d.dst
	if hs != nil {
		m.remember(catEnd-catStart, sum, h.Stream)
	}
	return h, true
}

// readAt fills b from src at off, reporting whether it could.
func readAt(src io.ReaderAt, b []byte, off int64) bool {
	n, err := src.ReadAt(b, off)
	return n == len(b) && (err == nil || err == io.EOF)
}

// clip returns the part of b, which holds bytes at..at+len(b) of a
// header, that lies within start..end.
func clip(b []byte, at, start, end int) []byte {
	lo, hi := max(start-at, 0), min(end-at, len(b))
	if lo >= hi {
		return nil
	}
	return b[lo:hi]
}

// HeaderCheckAt reports whether the n bytes at offset off of src are a
// segment header whose magic, major version, length (it must say n) and
// CRC32C check, reading them in pieces of [HeaderPiece] bytes: a
// resynchronising reader of a file tells a large header from damage
// without holding it (the fields are then ParseHeaderAt's to decode). It
// reports false on a read error or short read too.
func HeaderCheckAt(src io.ReaderAt, off int64, n int) bool {
	if n < HeaderOverhead || n > HeaderOverhead+MaxHeaderSize {
		return false
	}
	buf := make([]byte, min(n, HeaderPiece))
	if !readAt(src, buf, off) ||
		string(buf[:len(Magic)]) != Magic || buf[len(Magic)] != MajorVersion ||
		HeaderOverhead+int(binary.LittleEndian.Uint32(buf[10:])) != n {
		return false
	}
	crcAt := n - 4
	crc := uint32(0)
	for at := 0; at < crcAt; at += HeaderPiece {
		b := buf[:min(HeaderPiece, crcAt-at)]
		if !readAt(src, b, off+int64(at)) {
			return false
		}
		crc = crc32.Update(crc, castagnoli, b)
	}
	var stored [4]byte
	return readAt(src, stored[:], off+int64(crcAt)) && binary.LittleEndian.Uint32(stored[:]) == crc
}

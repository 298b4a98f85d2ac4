package wireformat

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"hash/maphash"
	"io"
	"unicode"
	"unicode/utf8"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// Header is a DSS segment header (ds-format(5) "SEGMENT HEADER"). It makes
// its segment self-describing: it names the stream and carries the full
// catalog known when the segment started.
type Header struct {
	// Major and Minor are the format version read by [ParseHeader].
	// [AppendHeader] ignores them and writes MajorVersion.MinorVersion.
	Major, Minor uint8
	// SegmentID is random per segment. Its CRC32C seeds every record CRC of
	// the segment (see [Seed]).
	SegmentID [8]byte
	// Seq is 0 for a writer's first segment of a stream and grows by one at
	// each rotation.
	Seq uint64
	// Writer identifies the software that wrote the segment, e.g.
	// "ds 0.1.0": UTF-8 without control characters.
	Writer string
	// Stream describes the segment's stream.
	Stream frames.StreamDescriptor
	// Channels is the full catalog known when the segment started, each
	// descriptor of Stream.Stream; nil when CatalogRepeated.
	Channels []frames.ChannelDescriptor
	// CatalogRepeated, set only by [ParseHeaderRepeats], says that the
	// header's catalog is, byte for byte, that of the last large header
	// parsed before it with the same [CatalogMemo] (same stream too): it
	// declares nothing new, and Channels is left nil, not decoded again.
	// AppendHeader ignores it.
	CatalogRepeated bool
}

// Seed returns the record CRC seed of the segment: [Seed](h.SegmentID).
func (h *Header) Seed() uint32 { return Seed(h.SegmentID) }

// AppendHeader appends the encoded segment header h to dst: magic, version
// MajorVersion.MinorVersion, body length, body, CRC32C. It returns an error,
// and dst unchanged, if a descriptor names another stream than h.Stream
// ([ErrWrongStream]), if h.Writer is not UTF-8 free of control characters,
// if the body would exceed [MaxHeaderSize] ([ErrTooLarge]), or if the
// encoded header contains [Magic] after its first byte ([ErrMagicInHeader];
// another SegmentID fixes that).
func AppendHeader(dst []byte, h *Header) ([]byte, error) {
	if err := checkHeaderFields(h); err != nil {
		return dst, err
	}
	stream, err := json.Marshal(h.Stream)
	if err != nil {
		return dst, fmt.Errorf("wireformat: encode stream descriptor: %w", err)
	}
	start := len(dst)
	dst = grow(dst, HeaderOverhead+8+2*binary.MaxVarintLen64+len(h.Writer)+len(stream)+catalogEstimate(h.Channels))
	dst = append(dst, Magic...)
	dst = append(dst, MajorVersion, MinorVersion, 0, 0, 0, 0)
	dst = append(dst, h.SegmentID[:]...)
	dst = binary.AppendUvarint(dst, h.Seq)
	dst = appendString(dst, h.Writer)
	dst = appendString(dst, string(stream))
	// The catalog is encoded in place, a descriptor at a time, after room
	// for its length, then moved down to follow the length as encoded:
	// a 16 MiB catalog is never held twice.
	room := len(dst)
	dst = append(dst, make([]byte, binary.MaxVarintLen32)...)
	if dst, err = appendCatalog(dst, h.Channels); err != nil {
		return dst[:start], fmt.Errorf("wireformat: encode catalog: %w", err)
	}
	catalogLen := len(dst) - room - binary.MaxVarintLen32
	if catalogLen > MaxHeaderSize {
		return dst[:start], fmt.Errorf("%w: header body of more than %d bytes (at most %d)", ErrTooLarge, catalogLen, MaxHeaderSize)
	}
	var lenBuf [binary.MaxVarintLen32]byte
	k := binary.PutUvarint(lenBuf[:], uint64(catalogLen))
	copy(dst[room:], lenBuf[:k])
	copy(dst[room+k:], dst[room+binary.MaxVarintLen32:])
	dst = dst[:room+k+catalogLen]
	n := len(dst) - start - HeaderPrefixSize
	if n > MaxHeaderSize {
		return dst[:start], fmt.Errorf("%w: header body of %d bytes (at most %d)", ErrTooLarge, n, MaxHeaderSize)
	}
	binary.LittleEndian.PutUint32(dst[start+10:], uint32(n))
	dst = binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
	if bytes.Contains(dst[start+1:], []byte(Magic)) {
		return dst[:start], ErrMagicInHeader
	}
	return dst, nil
}

// CopyMayNotFit reports, without encoding h, whether its HeaderCopy
// record may be too large ([AppendHeaderCopy] would return ErrTooLarge):
// false means it fits. It estimates h's size from its strings and 128
// bytes a descriptor, more than a descriptor takes unless its strings
// need escapes. ds writers ask [PlanHeader] when it says true, and write
// a header whose copy does not fit with [HeaderPlan.Write], never holding
// it whole.
func CopyMayNotFit(h *Header) bool {
	estimate := 8 + 3*binary.MaxVarintLen64 + len(h.Writer) + 256 + len(h.Stream.Stream.Node) + catalogEstimate(h.Channels)
	return 2+estimate > DefaultMaxRecordSize
}

// A HeaderPlan is a header sized, its catalog encoded once a descriptor
// at a time, to be written in pieces by [HeaderPlan.Write]: the body's
// length comes before the catalog.
type HeaderPlan struct {
	h          *Header
	stream     []byte // the stream descriptor's JSON
	catalogLen int    // the catalog's JSON, bytes
	body       int    // the body, bytes
	parity     *parityBuilder
}

// PlanHeader sizes h, encoding one descriptor at a time through buf
// (returned for reuse), so that sizing a 16 MiB catalog holds next to
// nothing. Its errors are CheckHeader's.
func PlanHeader(h *Header, buf []byte) (HeaderPlan, []byte, error) {
	if err := checkHeaderFields(h); err != nil {
		return HeaderPlan{}, buf, err
	}
	stream, err := json.Marshal(h.Stream)
	if err != nil {
		return HeaderPlan{}, buf, fmt.Errorf("wireformat: encode stream descriptor: %w", err)
	}
	catalogLen := 2 + max(0, len(h.Channels)-1) // brackets and commas
	for i := range h.Channels {
		if buf, err = appendChannel(buf[:0], &h.Channels[i]); err != nil {
			return HeaderPlan{}, buf, fmt.Errorf("wireformat: encode catalog: %w", err)
		}
		catalogLen += len(buf)
	}
	n := 8 + uvarintLen(h.Seq) + uvarintLen(uint64(len(h.Writer))) + len(h.Writer) +
		uvarintLen(uint64(len(stream))) + len(stream) + uvarintLen(uint64(catalogLen)) + catalogLen
	if n > MaxHeaderSize {
		return HeaderPlan{}, buf, fmt.Errorf("%w: header body of %d bytes (at most %d)", ErrTooLarge, n, MaxHeaderSize)
	}
	return HeaderPlan{h: h, stream: stream, catalogLen: catalogLen, body: n}, buf, nil
}

// CopyFits reports whether the planned header's HeaderCopy fits in a
// record of DefaultMaxRecordSize ([AppendHeaderCopy]).
func (p *HeaderPlan) CopyFits() bool { return 2+p.body <= DefaultMaxRecordSize }

// WriteHeader writes the segment header h to w, byte for byte what
// [AppendHeader] appends, never holding it whole: [PlanHeader], then
// [HeaderPlan.Write]. It encodes the catalog twice (the body's length
// comes before it), so it costs about twice AppendHeader's CPU. Its
// results are Write's, and PlanHeader's errors.
func WriteHeader(w io.Writer, h *Header, buf []byte) (int64, []byte, error) {
	p, buf, err := PlanHeader(h, buf)
	if err != nil {
		return 0, buf, err
	}
	return p.Write(w, buf)
}

// Write writes the planned header to w, its catalog encoded a descriptor
// at a time through buf, which it grows to about 64 KiB and returns for
// reuse. It returns the bytes written to w, buf, and an error:
// ErrMagicInHeader before anything is written (the magic cannot occur
// from the catalog on, see below), or w's, after which a part of the
// header may have been written. It computes the header's parity copy as
// it goes, for [HeaderPlan.AppendParity].
func (p *HeaderPlan) Write(w io.Writer, buf []byte) (int64, []byte, error) {
	h := p.h
	b := append(buf[:0], Magic...)
	b = append(b, MajorVersion, MinorVersion)
	b = binary.LittleEndian.AppendUint32(b, uint32(p.body))
	b = append(b, h.SegmentID[:]...)
	b = binary.AppendUvarint(b, h.Seq)
	b = appendString(b, h.Writer)
	b = appendString(b, string(p.stream))
	b = binary.AppendUvarint(b, uint64(p.catalogLen))
	// The magic holds 0D 0A 1A, which JSON text never holds raw, and
	// neither '[' nor ']', which begin and end the catalog: past the
	// catalog's length it can occur neither in the catalog nor across
	// its ends, nor in the CRC after its ']'. Checking what comes before
	// is checking the whole header.
	if bytes.Contains(b[1:], []byte(Magic)) {
		return 0, b, ErrMagicInHeader
	}
	var written int64
	crc := uint32(0)
	p.parity = newParityBuilder(ParityShardSize)
	bodyFrom := HeaderPrefixSize // of b, where the body starts
	flush := func() error {
		crc = crc32.Update(crc, castagnoli, b)
		p.parity.Write(b[bodyFrom:])
		bodyFrom = 0
		k, err := w.Write(b)
		written += int64(k)
		b = b[:0]
		return err
	}
	b = append(b, '[')
	wrote := 2 // brackets
	var err error
	for i := range h.Channels {
		if i > 0 {
			b = append(b, ',')
			wrote++
		}
		k := len(b)
		if b, err = appendChannel(b, &h.Channels[i]); err != nil {
			return written, b, fmt.Errorf("wireformat: encode catalog: %w", err)
		}
		wrote += len(b) - k
		if len(b) >= 64<<10 {
			if err := flush(); err != nil {
				return written, b, err
			}
		}
	}
	b = append(b, ']')
	if wrote != p.catalogLen {
		return written, b, fmt.Errorf("wireformat: catalog encoded to %d bytes, then %d", p.catalogLen, wrote)
	}
	crc = crc32.Update(crc, castagnoli, b)
	p.parity.Write(b[bodyFrom:])
	b = binary.LittleEndian.AppendUint32(b, crc)
	k, err := w.Write(b)
	written += int64(k)
	return written, b[:0], err
}

// AppendParity appends the parity copy ([AppendHeaderParity]) of the
// header that [HeaderPlan.Write] last wrote whole, computed as it wrote it.
// It returns dst unchanged and an error wrapping [ErrBadBody] when Write
// has not written the whole header.
func (p *HeaderPlan) AppendParity(dst []byte) ([]byte, error) {
	if p.parity == nil || p.parity.n != p.body {
		return dst, fmt.Errorf("%w: header parity copy of a header not written whole", ErrBadBody)
	}
	return p.parity.appendRecord(dst, MinorVersion, p.h.SegmentID)
}

// CheckHeader reports the error [AppendHeader] would return for h, but
// [ErrMagicInHeader] (which depends on the segment id): a descriptor of
// another stream, a bad writer identity, a descriptor that does not
// encode, or a body over [MaxHeaderSize]. It is [PlanHeader]'s error: it
// encodes one descriptor at a time, so that checking a 16 MiB catalog
// holds next to nothing.
func CheckHeader(h *Header) error {
	_, _, err := PlanHeader(h, nil)
	return err
}

// checkHeaderFields checks the fields of h that need no encoding.
func checkHeaderFields(h *Header) error {
	if !utf8.ValidString(h.Writer) || containsControl(h.Writer) {
		return fmt.Errorf("wireformat: writer identity %q must be UTF-8 without control characters", h.Writer)
	}
	for i := range h.Channels {
		if h.Channels[i].Stream != h.Stream.Stream {
			return fmt.Errorf("%w: channel %d is of %s, header stream is %s", ErrWrongStream, h.Channels[i].ID, h.Channels[i].Stream, h.Stream.Stream)
		}
	}
	return nil
}

// catalogEstimate returns about the bytes of the JSON of channels: their
// strings and 128 bytes of the rest each (its longest spelling is 119),
// so that a header is encoded with one allocation unless its strings need
// escaping.
func catalogEstimate(channels []frames.ChannelDescriptor) int {
	n := 2
	for i := range channels {
		d := &channels[i]
		n += 128 + len(d.Name) + len(d.Stream.Node)
		if d.Label != nil {
			n += len(*d.Label)
		}
		if d.Content.Schema != nil {
			n += len(*d.Content.Schema)
		}
	}
	return n
}

// appendCatalog appends the JSON array of channels, spelled as
// json.Marshal spells it ("[]" for none), one descriptor at a time.
func appendCatalog(dst []byte, channels []frames.ChannelDescriptor) ([]byte, error) {
	dst = append(dst, '[')
	var err error
	for i := range channels {
		if i > 0 {
			dst = append(dst, ',')
		}
		if dst, err = appendChannel(dst, &channels[i]); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

// appendChannel appends d as json.Marshal spells it in an array.
func appendChannel(dst []byte, d *frames.ChannelDescriptor) ([]byte, error) {
	b, err := json.Marshal(d)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

func containsControl(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) {
			return true
		}
	}
	return false
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// ParseHeader decodes the segment header at the start of b and returns it
// with the number of bytes it occupies (HeaderOverhead plus the body
// length). It checks, in order: the magic ([ErrBadMagic]), the major version
// ([ErrUnknownVersion], wrapped with the version found), the body length
// against [MaxHeaderSize] ([ErrTooLarge]), the CRC32C ([ErrChecksum]) and
// the body's fields ([ErrBadBody], or [ErrWrongStream] for a catalog entry
// of another stream). Body bytes after the known fields are ignored, so
// minor versions can add fields.
//
// If b ends before the header does, ParseHeader returns io.ErrUnexpectedEOF
// and n is the length the header needs: exact once b holds the 14-byte
// prefix, a lower bound before. The returned Header does not alias b.
func ParseHeader(b []byte) (h Header, n int, err error) { return parseHeader(b, false, nil) }

// ParseHeaderRepeats is [ParseHeader] for a reader of consecutive
// headers whose consumer keeps what each header declared (the first
// declaration of a channel wins): a header whose catalog is large (at
// least 64 KiB) and the same, byte for byte, as that of the last large
// header parsed with m, of the same stream, is returned with
// CatalogRepeated set and Channels nil, its catalog not decoded again.
// ds writers repeat the full catalog in every segment: a reader of a
// capture of 16 MiB headers then holds one decoded catalog at a time
// (about 11 MB for 120 000 channels), not a new one beside the old, and
// decodes it once. m may be nil (ParseHeader).
func ParseHeaderRepeats(b []byte, m *CatalogMemo) (h Header, n int, err error) {
	return parseHeader(b, false, m)
}

// CatalogMemo is what [ParseHeaderRepeats] remembers of the last large
// catalog it decoded: its stream's descriptor, length and a 128-bit hash of its bytes,
// keyed at random per memo, so that no crafted input can aim at a
// collision. It holds no descriptor. The zero value is an empty memo; it
// is not safe for concurrent use.
type CatalogMemo struct {
	seeds  [2]maphash.Seed
	seeded bool
	size   int
	sum    [2]uint64
	stream frames.StreamDescriptor // its Label a copy
}

// minMemoCatalog is the catalog size, in bytes, from which a CatalogMemo
// remembers a catalog: below it, decoding is cheaper than telling.
const minMemoCatalog = 64 << 10

// repeats reports whether catalog, of the stream d describes, is the
// remembered one, and remembers it otherwise. The whole descriptor counts,
// not only the stream's id: a header that describes its stream otherwise
// (a conflict, or a view's selection by origin or label) is decoded, so
// that a view that shows the stream from it on still learns its channels.
func (m *CatalogMemo) repeats(catalog []byte, d frames.StreamDescriptor) bool {
	h := m.hashes()
	h[0].Write(catalog)
	h[1].Write(catalog)
	sum := [2]uint64{h[0].Sum64(), h[1].Sum64()}
	if m.matches(len(catalog), sum, d) {
		return true
	}
	m.remember(len(catalog), sum, d)
	return false
}

// hashes returns the two hashes of m's seeds, for a catalog's bytes to be
// written to: a catalog's sum is theirs.
func (m *CatalogMemo) hashes() *[2]maphash.Hash {
	if !m.seeded {
		m.seeds, m.seeded = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}, true
	}
	var h [2]maphash.Hash
	h[0].SetSeed(m.seeds[0])
	h[1].SetSeed(m.seeds[1])
	return &h
}

// matches reports whether a catalog of size bytes whose hashes are sum, of
// the stream d describes, is the one m remembers.
func (m *CatalogMemo) matches(size int, sum [2]uint64, d frames.StreamDescriptor) bool {
	same := m.stream.Stream == d.Stream && m.stream.Origin == d.Origin &&
		(m.stream.Label == nil) == (d.Label == nil) && (d.Label == nil || *m.stream.Label == *d.Label)
	return m.size == size && m.sum == sum && same
}

// remember makes the catalog of size bytes whose hashes are sum, of the
// stream d describes, the one m remembers.
func (m *CatalogMemo) remember(size int, sum [2]uint64, d frames.StreamDescriptor) {
	m.size, m.sum, m.stream = size, sum, d
	if d.Label != nil {
		label := *d.Label
		m.stream.Label = &label
	}
}

// forget drops what m remembers (a catalog that did not decode).
func (m *CatalogMemo) forget() { m.size = 0 }

// ParseHeaderStream is [ParseHeader] for a caller that needs to know only
// which stream a segment is of: it checks the same (the catalog's syntax
// excepted) and returns the header without its writer identity and
// catalog (Writer "", Channels nil). A walk over a file's segments then
// does not decode a catalog of 140 000 channels (13 MiB of heap) to learn
// the stream id.
func ParseHeaderStream(b []byte) (h Header, n int, err error) { return parseHeader(b, true, nil) }

func parseHeader(b []byte, streamOnly bool, memo *CatalogMemo) (h Header, n int, err error) {
	m := min(len(b), len(Magic))
	if string(b[:m]) != Magic[:m] {
		return Header{}, 0, ErrBadMagic
	}
	if len(b) > len(Magic) && b[len(Magic)] != MajorVersion {
		return Header{}, 0, versionError(b[len(Magic)])
	}
	if len(b) < HeaderPrefixSize {
		return Header{}, HeaderOverhead, io.ErrUnexpectedEOF
	}
	size := binary.LittleEndian.Uint32(b[10:])
	if size > MaxHeaderSize {
		return Header{}, 0, fmt.Errorf("%w: header body of %d bytes (at most %d)", ErrTooLarge, size, MaxHeaderSize)
	}
	n = HeaderOverhead + int(size)
	if len(b) < n {
		return Header{}, n, io.ErrUnexpectedEOF
	}
	if crc32.Checksum(b[:n-4], castagnoli) != binary.LittleEndian.Uint32(b[n-4:]) {
		return Header{}, 0, fmt.Errorf("%w (segment header)", ErrChecksum)
	}
	h, err = parseHeaderBody(b[HeaderPrefixSize:n-4], streamOnly, memo)
	if err != nil {
		return Header{}, 0, err
	}
	h.Major, h.Minor = b[8], b[9]
	return h, n, nil
}

func versionError(major byte) error {
	if major > MajorVersion {
		return fmt.Errorf("%w: newer major version %d; upgrade ds", ErrUnknownVersion, major)
	}
	return fmt.Errorf("%w: major version %d", ErrUnknownVersion, major)
}

func parseHeaderBody(body []byte, streamOnly bool, m *CatalogMemo) (Header, error) {
	f, err := cutHeaderFields(body)
	if err != nil {
		return Header{}, err
	}
	h := Header{SegmentID: f.segmentID, Seq: f.seq}
	if !streamOnly {
		h.Writer = string(f.writer)
	}
	if err := json.Unmarshal(f.stream, &h.Stream); err != nil {
		return Header{}, fmt.Errorf("%w: header stream descriptor: %w", ErrBadBody, err)
	}
	catalog, _, err := cutString(f.rest, "catalog")
	if err != nil {
		return Header{}, err
	}
	if streamOnly {
		return h, nil
	}
	if m == nil || len(catalog) < minMemoCatalog {
		return h, decodeCatalog(&h, catalog)
	}
	if m.repeats(catalog, h.Stream) {
		h.CatalogRepeated = true
		return h, nil
	}
	if err := decodeCatalog(&h, catalog); err != nil {
		m.forget()
		return Header{}, err
	}
	return h, nil
}

// headerFields are the fields of a header body before its catalog, as
// [cutHeaderFields] finds them; writer and stream alias the body, and rest
// is what follows them (the catalog field, then what later minor versions
// add).
type headerFields struct {
	segmentID      [8]byte
	seq            uint64
	writer, stream []byte
	rest           []byte
}

// cutHeaderFields reads the fields of a header body before its catalog
// (ds-format(5) "SEGMENT HEADER"): segment id, sequence number, writer
// identity and stream descriptor, the last two not decoded. It returns an
// error wrapping [ErrBadBody] where body ends inside them.
func cutHeaderFields(body []byte) (headerFields, error) {
	var f headerFields
	if len(body) < len(f.segmentID) {
		return f, fmt.Errorf("%w: header body of %d bytes has no segment id", ErrBadBody, len(body))
	}
	copy(f.segmentID[:], body)
	body = body[len(f.segmentID):]
	seq, k := binary.Uvarint(body)
	if k <= 0 {
		return f, fmt.Errorf("%w: header sequence number", ErrBadBody)
	}
	f.seq, body = seq, body[k:]
	var err error
	if f.writer, body, err = cutString(body, "writer identity"); err != nil {
		return f, err
	}
	if f.stream, f.rest, err = cutString(body, "stream descriptor"); err != nil {
		return f, err
	}
	return f, nil
}

// CheckHeaderStart checks what b holds of a segment header's start, for
// an input whose header is too large to hold before deciding that it is
// a DSS capture (segments.Detect): the magic, major version 1, a body
// length within [MaxHeaderSize], and the body's fields up to the
// catalog: a writer identity of UTF-8 without control characters, a
// stream descriptor that decodes, and a catalog that starts with '['
// and whose length keeps the fields within the body length (a later
// minor version may add fields after it). b must hold
// the fields up to the catalog's first byte; the CRC, beyond b, is not
// checked. It returns the body length, or an error wrapping
// [ErrBadMagic], [ErrUnknownVersion], [ErrTooLarge] or [ErrBadBody], or
// io.ErrUnexpectedEOF when b is too short.
func CheckHeaderStart(b []byte) (int, error) {
	if len(b) < HeaderPrefixSize {
		return 0, io.ErrUnexpectedEOF
	}
	if string(b[:len(Magic)]) != Magic {
		return 0, ErrBadMagic
	}
	if b[8] != MajorVersion {
		return 0, versionError(b[8])
	}
	size := int(binary.LittleEndian.Uint32(b[10:]))
	if size > MaxHeaderSize {
		return 0, fmt.Errorf("%w: segment header body of %d bytes", ErrTooLarge, size)
	}
	body := b[HeaderPrefixSize:min(len(b), HeaderPrefixSize+size)]
	f, err := cutHeaderFields(body)
	if err != nil {
		if len(body) < size {
			return 0, io.ErrUnexpectedEOF
		}
		return 0, err
	}
	if !utf8.Valid(f.writer) || containsControl(string(f.writer)) {
		return 0, fmt.Errorf("%w: header writer identity", ErrBadBody)
	}
	var desc frames.StreamDescriptor
	if err := json.Unmarshal(f.stream, &desc); err != nil {
		return 0, fmt.Errorf("%w: header stream descriptor: %w", ErrBadBody, err)
	}
	n, k := binary.Uvarint(f.rest)
	switch {
	case k == 0 || k > 0 && len(f.rest) == k:
		return 0, io.ErrUnexpectedEOF
	case k < 0 || uint64(len(body)-len(f.rest)+k)+n > uint64(size) || f.rest[k] != '[':
		return 0, fmt.Errorf("%w: header catalog length", ErrBadBody)
	}
	return size, nil
}

// decodeCatalog decodes catalog, a header's catalog field, into
// h.Channels; h.Stream must be set (each descriptor must be of its
// stream).
func decodeCatalog(h *Header, catalog []byte) error {
	if len(catalog) > 64<<10 {
		// A large catalog is decoded into a slice of its size: grown
		// by append, a 16 MiB catalog's slice would hold its old copies
		// too (about 20 MiB more at the peak).
		if n := countElements(catalog); n <= len(catalog)/minDescriptorSize {
			h.Channels = make([]frames.ChannelDescriptor, 0, n)
		}
	}
	if chans, ok := fastCatalog(h.Channels, catalog, h.Stream.Stream); ok {
		h.Channels = chans
		return nil
	}
	if err := json.Unmarshal(catalog, &h.Channels); err != nil {
		return fmt.Errorf("%w: header catalog: %w", ErrBadBody, err)
	}
	for _, c := range h.Channels {
		if c.Stream != h.Stream.Stream {
			return fmt.Errorf("%w: %w: header channel %d is of %s, header stream is %s", ErrBadBody, ErrWrongStream, c.ID, c.Stream, h.Stream.Stream)
		}
	}
	return nil
}

// AppendHeaderCopy appends the HeaderCopy record (ds-format(5)
// "HeaderCopy") of the encoded segment header header, as [AppendHeader]
// made it: a record of type [TypeHeaderCopy] whose body is the header's
// major and minor version bytes followed by its body (segment id, sequence
// number, writer identity, stream descriptor, catalog), under the seed of
// the header's own segment id. Writers put it right after the header, so
// that a reader can recover the segment when the header is damaged. It
// returns dst unchanged and an error wrapping [ErrTooLarge] when the
// record's stored body would exceed [DefaultMaxRecordSize] (a header
// larger than 4 MiB has no copy), or [ErrBadBody] when header is too short
// to be a header.
func AppendHeaderCopy(dst, header []byte) ([]byte, error) {
	if len(header) < HeaderOverhead+8 {
		return dst, fmt.Errorf("%w: segment header of %d bytes", ErrBadBody, len(header))
	}
	body := header[HeaderPrefixSize : len(header)-4]
	if 2+len(body) > DefaultMaxRecordSize {
		return dst, fmt.Errorf("%w: header copy of %d bytes (at most %d)", ErrTooLarge, 2+len(body), DefaultMaxRecordSize)
	}
	seed := Seed([8]byte(body[:8]))
	start := len(dst)
	dst = append(dst, byte(TypeHeaderCopy), 0, 0, 0, 0)
	dst = append(dst, header[len(Magic):len(Magic)+2]...)
	dst = append(dst, body...)
	out, err := finishRecord(dst, start, seed)
	if err != nil {
		return dst[:start], err
	}
	return out, nil
}

// ParseHeaderCopy decodes the body of a HeaderCopy record (as
// [ParseRecord] returns it, unescaped) into the header it copies, with
// Major and Minor set from the copy. It returns an error wrapping
// [ErrUnknownVersion] for a copy of another major version, and the
// errors of [ParseHeader] for a body that does not decode. Checking that
// the record's CRC holds under the seed of the copy's segment id is the
// caller's job. The Header does not alias body.
func ParseHeaderCopy(body []byte) (Header, error) {
	if len(body) < 2 {
		return Header{}, fmt.Errorf("%w: header copy of %d bytes", ErrBadBody, len(body))
	}
	if body[0] != MajorVersion {
		return Header{}, versionError(body[0])
	}
	h, err := parseHeaderBody(body[2:], false, nil)
	if err != nil {
		return Header{}, err
	}
	h.Major, h.Minor = body[0], body[1]
	return h, nil
}

// HeaderFieldsSize returns the size in bytes of the fields this version
// knows at the start of the header body b (segment id, sequence number,
// writer identity, stream descriptor, catalog), judging by their own
// length prefixes only: a reader whose header length field is damaged
// finds where the body ends by it. If b ends first it returns
// io.ErrUnexpectedEOF and a lower bound of the bytes it needs (more than
// len(b)); a malformed varint is [ErrBadBody], and fields longer than
// [MaxHeaderSize] are [ErrTooLarge]. The fields are not decoded.
func HeaderFieldsSize(b []byte) (int, error) {
	n := 8 // segment id
	if len(b) < n {
		return n, io.ErrUnexpectedEOF
	}
	for field := range 4 {
		size, k := binary.Uvarint(b[n:])
		if k == 0 {
			return max(n+1, len(b)+1), io.ErrUnexpectedEOF
		}
		if k < 0 {
			return 0, fmt.Errorf("%w: header field length", ErrBadBody)
		}
		n += k
		if field > 0 {
			if size > MaxHeaderSize {
				return 0, fmt.Errorf("%w: header field of %d bytes", ErrTooLarge, size)
			}
			n += int(size)
		}
		if n > MaxHeaderSize {
			return 0, fmt.Errorf("%w: header body of %d bytes (at most %d)", ErrTooLarge, n, MaxHeaderSize)
		}
		if n > len(b) {
			return n, io.ErrUnexpectedEOF
		}
	}
	return n, nil
}

// minDescriptorSize is a lower bound of the JSON size of a channel
// descriptor as ds writes it, in bytes: a catalog whose elements are
// smaller on average is decoded without a preallocated slice.
const minDescriptorSize = 48

// countElements returns the number of elements of the JSON array b,
// counting the commas outside strings, objects and nested arrays; it
// assumes b is a well-formed array and is only an estimate otherwise.
func countElements(b []byte) int {
	var c elementCounter
	c.feed(b)
	return c.count()
}

// An elementCounter is countElements over an array given in pieces. The
// zero value has seen nothing.
type elementCounter struct {
	n, depth          int
	inString, escaped bool
	nonEmpty          bool
}

// feed counts the elements in b, the bytes of the array after those fed
// before.
func (e *elementCounter) feed(b []byte) {
	n, depth, inString, escaped, nonEmpty := e.n, e.depth, e.inString, e.escaped, e.nonEmpty
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
		case c == ',' && depth == 1:
			n++
		}
		if depth >= 1 && c != ' ' && c != '\t' && c != '\n' && c != '\r' && !(depth == 1 && c == '[') {
			nonEmpty = true
		}
	}
	e.n, e.depth, e.inString, e.escaped, e.nonEmpty = n, depth, inString, escaped, nonEmpty
}

// count returns the number of elements of what was fed.
func (e *elementCounter) count() int {
	if !e.nonEmpty {
		return 0
	}
	return e.n + 1
}

// cutString splits a uvarint-length-prefixed field off b.
func cutString(b []byte, what string) (field, rest []byte, err error) {
	size, k := binary.Uvarint(b)
	if k <= 0 || size > uint64(len(b)-k) {
		return nil, nil, fmt.Errorf("%w: header %s length", ErrBadBody, what)
	}
	end := k + int(size)
	return b[k:end], b[end:], nil
}

package segments

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"unicode/utf8"

	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// InputFormat is what the first bytes of an input say it holds (see
// [Detect] for the rule).
type InputFormat uint8

const (
	// InputEmpty is an input without a single byte: an empty capture (ds
	// wrap creates its file before it writes the first header).
	InputEmpty InputFormat = iota
	// InputDSS is a DSS capture: it starts with Magic, or with
	// a part of it and then ends (a header cut short).
	InputDSS
	// InputDSQ1 is the seed system's catalog-aware transport stream: it
	// starts with DSQ1Magic, or with a part of it and then ends.
	InputDSQ1
	// InputLegacy is a stream of the seed system's legacy delivery
	// envelopes, back to back.
	InputLegacy
)

var inputFormatNames = [...]string{"empty", "DSS capture", "DSQ1 stream", "legacy envelopes"}

// String returns a name for f: "empty", "DSS capture", "DSQ1 stream" or
// "legacy envelopes".
func (f InputFormat) String() string {
	if int(f) < len(inputFormatNames) {
		return inputFormatNames[f]
	}
	return fmt.Sprintf("InputFormat(%d)", uint8(f))
}

// ErrNotCapture is returned by [Detect] and [ScanAny] for an input that is
// none of the formats ds reads (see [Detect]). Nothing was reported to the
// sink.
var ErrNotCapture = errors.New("segments: not a capture (expected a DSS capture, a DSQ1 stream or legacy envelopes)")

// Limits of the legacy envelopes that [Detect] and [ScanAny] accept. The
// envelope has no magic and no checksum, so these bounds are what tells a
// legacy stream from other bytes, and where one stops making sense.
const (
	// MaxLegacyNodeSize is the longest node name, in bytes, of a legacy
	// envelope (1 KiB; node names are host names in practice).
	MaxLegacyNodeSize = 1 << 10
	// MaxLegacyPayloadSize is the largest payload, in bytes, of a legacy
	// envelope (64 MiB, the DSQ1 record limit). Nothing is allocated for
	// a longer one.
	MaxLegacyPayloadSize = MaxDSQ1RecordSize
)

// Writer identities that [ScanAny] reports in the SegmentHeader of the
// streams it imports.
const (
	DSQ1Writer   = "DSQ1 stream"
	LegacyWriter = "legacy delivery envelopes"
)

// importBufferSize is the buffer through which [ScanAny] reads; the
// detection peeks into it.
const importBufferSize = 64 << 10

// legacyFixedSize is a legacy envelope without node and payload: node
// length, life, position, channel, payload length.
const legacyFixedSize = 4 + 8 + 8 + 4 + 4

// Detect reads the first bytes of r and says what r holds:
//
//   - no byte at all: [InputEmpty];
//   - Magic (89 44 53 53 0D 0A 1A 0A), or a part of it and the
//     end of input: [InputDSS];
//   - "DSQ1", or a part of it and the end of input: [InputDSQ1];
//   - a first legacy delivery envelope that decodes whole: [InputLegacy].
//     The envelope has no magic, so the rule is a heuristic: the node
//     length is 1 to MaxLegacyNodeSize bytes, the node is valid UTF-8
//     without control characters (U+0000–U+001F, U+007F), the payload
//     length is at most MaxLegacyPayloadSize and the input holds the
//     whole payload, and DecodeLegacyDelivery accepts the
//     envelope. A text file fails at once (its first four bytes make a
//     node length of hundreds of millions), and so do the usual binary
//     formats;
//   - a DSS capture whose first bytes are damaged or cut: a magic with at
//     most two bytes wrong at the start, a magic within the first 64 KiB,
//     or, further on but within the first [DetectWindow] bytes, a magic
//     followed by a valid segment header (a capture read from the middle
//     of a segment, whose first bytes are the rest of a record; a header
//     that would end beyond the bytes Detect holds, up to 16 MiB, by the
//     fields [wireformat.CheckHeaderStart] checks):
//     [InputDSS], the bytes before the header being damage (ds-format(5)
//     "Resynchronisation") that the segment reader reports;
//   - anything else: [ErrNotCapture].
//
// Detect reads r through a buffer of 64 KiB, so it consumes up to that
// much of r (the whole first envelope of a legacy stream, if it is
// larger), and up to DetectWindow bytes of an input that is none of the
// formats or starts in the middle of a segment. It returns r's error
// other than io.EOF, if any.
func Detect(r io.Reader) (InputFormat, error) {
	f, _, err := detect(bufio.NewReaderSize(r, importBufferSize))
	return f, err
}

// detect is [Detect] on a buffered reader, which it leaves unconsumed
// except for a legacy envelope larger than its buffer, and the bytes up to
// the first header of a DSS capture read from the middle of a segment
// (see midSegmentDSS): those it reads, and returns, for the reader of
// the format to read first.
func detect(br *bufio.Reader) (InputFormat, []byte, error) {
	b, err := br.Peek(len(Magic))
	if err != nil && err != io.EOF {
		return 0, nil, err
	}
	switch {
	case len(b) == 0:
		return InputEmpty, nil, nil
	case bytes.HasPrefix([]byte(Magic), b):
		return InputDSS, nil, nil
	case len(b) >= len(DSQ1Magic) && string(b[:len(DSQ1Magic)]) == DSQ1Magic,
		len(b) < len(DSQ1Magic) && bytes.HasPrefix([]byte(DSQ1Magic), b):
		return InputDSQ1, nil, nil
	}
	first, ok, err := firstLegacy(br)
	switch {
	case err != nil:
		return 0, nil, err
	case !ok:
		if damagedDSS(br) {
			return InputDSS, nil, nil
		}
		pre, ok, err := midSegmentDSS(br)
		switch {
		case err != nil:
			return 0, nil, err
		case ok:
			return InputDSS, pre, nil
		}
		return 0, nil, ErrNotCapture
	}
	return InputLegacy, first, nil
}

// damagedDSS reports whether br holds a DSS capture whose first bytes are
// damaged: a magic with at most two bytes wrong at its start (a flipped
// bit), or a whole one further into what can be peeked (garbage before
// it, a head cut inside a record). The segment reader then reports the
// damaged range and reads on, as for damage anywhere else: a flipped bit
// never costs the frames around it.
func damagedDSS(br *bufio.Reader) bool {
	b, _ := br.Peek(br.Size())
	return StartsLikeDSS(b) || bytes.Contains(b, []byte(Magic))
}

// DetectWindow is how far into an input, in bytes, [Detect] looks for a
// segment header when the input starts with no format's mark: 12 MiB.
// A capture read from the middle of a segment (tail -c +N capture.dss)
// starts inside a record; a writer starts a new segment once the
// current one holds DefaultSegmentSize bytes, at its next record (whose
// body is at most wireformat.DefaultMaxRecordSize), so from any byte of
// a capture written with the default sizes the next header is closer
// than this.
const DetectWindow = DefaultSegmentSize + 2*wireformat.DefaultMaxRecordSize

// midSegmentDSS reads br for a DSS capture read from the middle of a
// segment: within the first DetectWindow bytes, a Magic followed by a
// valid header (its CRC checks), or, in an input shorter than that with
// no header, a SegmentSummary record that ends it (the tail of a
// one-segment capture). It returns the bytes it read (up to and including
// the start of that header, for the segment reader to report the bytes
// before it as damage and read on) and true; false once DetectWindow
// bytes or the end of input passed without one. It returns
// br's error other than the end of input.
func midSegmentDSS(br *bufio.Reader) ([]byte, bool, error) {
	const chunk = 1 << 20
	magic := []byte(Magic)
	var b []byte
	searched := 0 // b[:searched] holds no header start
	for {
		n := min(chunk, DetectWindow+importBufferSize-len(b)) // room for the header found last
		if n <= 0 {
			return b, false, nil
		}
		m, err := io.ReadFull(br, grow(&b, n))
		b = b[:len(b)-n+m]
		for {
			i := bytes.Index(b[searched:], magic)
			if i < 0 {
				searched = max(searched, len(b)-len(magic)+1)
				break
			}
			at := searched + i
			if at >= DetectWindow {
				return b, false, nil
			}
			_, _, herr := wireformat.ParseHeader(b[at:])
			if herr == nil {
				return b, true, nil
			}
			if herr == io.ErrUnexpectedEOF && len(b[at:]) >= wireformat.HeaderPrefixSize &&
				at+wireformat.HeaderOverhead+int(binary.LittleEndian.Uint32(b[at+10:])) > DetectWindow+importBufferSize {
				// A header larger than the room left (a catalog of up
				// to 16 MiB): its start is checked as far as it goes,
				// its CRC is the reader's to check.
				if _, serr := wireformat.CheckHeaderStart(b[at:]); serr == nil {
					return b, true, nil
				} else if serr == io.ErrUnexpectedEOF && err == nil {
					searched = at
					break
				}
				searched = at + 1
				continue
			}
			if herr == io.ErrUnexpectedEOF && err == nil {
				// Its end is not read yet: look again after the next read.
				searched = at
				break
			}
			searched = at + 1
		}
		if err != nil {
			if err := ioErr(err); err != nil {
				return nil, false, err
			}
			// No header at all, but the input ends as a DSS segment does,
			// with its SegmentSummary (whose CRC holds under the seed of
			// the segment id it names): the end of a one-segment capture
			// read from its middle. Its frames cannot be named without
			// the header; it is a capture all of whose bytes are damage,
			// not text.
			_, _, ok := wireformat.FindSummary(b)
			return b, ok, nil
		}
		if searched >= DetectWindow {
			return b, false, nil
		}
	}
}

// grow extends *b by n bytes and returns them.
func grow(b *[]byte, n int) []byte {
	*b = slices.Grow(*b, n)[:len(*b)+n]
	return (*b)[len(*b)-n:]
}

// StartsLikeDSS reports whether b, the first bytes of an input, start as
// a DSS capture does: the segment magic with at most two of its 8 bytes
// wrong (a flipped bit is damage, for the segment reader to report, not
// another format). A b shorter than the magic counts its missing bytes as
// wrong.
func StartsLikeDSS(b []byte) bool {
	magic := Magic
	wrong := max(0, len(magic)-len(b))
	for i := range min(len(b), len(magic)) {
		if b[i] != magic[i] {
			wrong++
		}
	}
	return wrong <= 2
}

// firstLegacy checks that br starts with a plausible legacy envelope (see
// [Detect]). An envelope that fits the buffer is only peeked at; a larger
// one is read and returned.
func firstLegacy(br *bufio.Reader) ([]byte, bool, error) {
	h, err := br.Peek(4)
	if len(h) < 4 {
		return nil, false, ioErr(err)
	}
	n := binary.LittleEndian.Uint32(h)
	if n == 0 || n > MaxLegacyNodeSize {
		return nil, false, nil
	}
	h, err = br.Peek(legacyFixedSize + int(n))
	if len(h) < legacyFixedSize+int(n) {
		return nil, false, ioErr(err)
	}
	if !plausibleNode(h[4 : 4+n]) {
		return nil, false, nil
	}
	p := binary.LittleEndian.Uint32(h[len(h)-4:])
	if p > MaxLegacyPayloadSize {
		return nil, false, nil
	}
	total := legacyFixedSize + int(n) + int(p)
	var env, first []byte
	if total <= br.Size() {
		env, err = br.Peek(total)
		if len(env) < total {
			return nil, false, ioErr(err)
		}
	} else {
		env, err = readUpTo(br, total)
		if len(env) < total {
			return nil, false, ioErr(err)
		}
		first = env
	}
	if _, err := DecodeLegacyDelivery(env); err != nil {
		return nil, false, nil
	}
	return first, true, nil
}

// plausibleNode reports whether b is a node name a legacy envelope may
// carry: valid UTF-8 without control characters.
func plausibleNode(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, c := range b {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

// ioErr returns err unless it only says that the input ended.
func ioErr(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF || err == bufio.ErrBufferFull {
		return nil
	}
	return err
}

// readUpTo reads n bytes from r, or fewer if r ends first, allocating as
// the bytes arrive (at most about 1 MiB ahead of them), so that a length
// read from input costs no more than the input holds.
func readUpTo(r io.Reader, n int) ([]byte, error) {
	const chunk = 1 << 20
	b := make([]byte, 0, min(n, chunk))
	for len(b) < n {
		k := min(n-len(b), chunk)
		if cap(b)-len(b) < k {
			b = append(b, make([]byte, k)...)[:len(b)]
		}
		m, err := io.ReadFull(r, b[len(b):len(b)+k])
		b = b[:len(b)+m]
		if err != nil {
			return b, err
		}
	}
	return b, nil
}

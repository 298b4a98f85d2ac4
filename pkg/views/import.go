package views

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// InputFormat is what the first bytes of an input say it holds (see
// [Detect] for the rule).
type InputFormat uint8

const (
	// InputEmpty is an input without a single byte: an empty capture (ds
	// wrap creates its file before it writes the first header).
	InputEmpty InputFormat = iota
	// InputDSS is a DSS capture: it starts with segments.Magic, or with
	// a part of it and then ends (a header cut short).
	InputDSS
	// InputDSQ1 is the seed system's catalog-aware transport stream: it
	// starts with segments.DSQ1Magic, or with a part of it and then ends.
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
var ErrNotCapture = errors.New("views: not a capture (expected a DSS capture, a DSQ1 stream or legacy envelopes)")

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
	MaxLegacyPayloadSize = segments.MaxDSQ1RecordSize
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
//   - segments.Magic (89 44 53 53 0D 0A 1A 0A), or a part of it and the
//     end of input: [InputDSS];
//   - "DSQ1", or a part of it and the end of input: [InputDSQ1];
//   - a first legacy delivery envelope that decodes whole: [InputLegacy].
//     The envelope has no magic, so the rule is a heuristic: the node
//     length is 1 to MaxLegacyNodeSize bytes, the node is valid UTF-8
//     without control characters (U+0000–U+001F, U+007F), the payload
//     length is at most MaxLegacyPayloadSize and the input holds the
//     whole payload, and segments.DecodeLegacyDelivery accepts the
//     envelope. A text file fails at once (its first four bytes make a
//     node length of hundreds of millions), and so do the usual binary
//     formats;
//   - anything else: [ErrNotCapture].
//
// Detect reads r through a buffer of 64 KiB, so it consumes up to that
// much of r (the whole first envelope of a legacy stream, if it is
// larger). It returns r's error other than io.EOF, if any.
func Detect(r io.Reader) (InputFormat, error) {
	f, _, err := detect(bufio.NewReaderSize(r, importBufferSize))
	return f, err
}

// detect is [Detect] on a buffered reader, which it leaves unconsumed
// except for a legacy envelope larger than its buffer: that one it reads,
// and returns.
func detect(br *bufio.Reader) (InputFormat, []byte, error) {
	b, err := br.Peek(len(segments.Magic))
	if err != nil && err != io.EOF {
		return 0, nil, err
	}
	switch {
	case len(b) == 0:
		return InputEmpty, nil, nil
	case bytes.HasPrefix([]byte(segments.Magic), b):
		return InputDSS, nil, nil
	case len(b) >= len(segments.DSQ1Magic) && string(b[:len(segments.DSQ1Magic)]) == segments.DSQ1Magic,
		len(b) < len(segments.DSQ1Magic) && bytes.HasPrefix([]byte(segments.DSQ1Magic), b):
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
	return StartsLikeDSS(b) || bytes.Contains(b, []byte(segments.Magic))
}

// StartsLikeDSS reports whether b, the first bytes of an input, start as
// a DSS capture does: the segment magic with at most two of its 8 bytes
// wrong (a flipped bit is damage, for the segment reader to report, not
// another format). A b shorter than the magic counts its missing bytes as
// wrong.
func StartsLikeDSS(b []byte) bool {
	magic := segments.Magic
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
	if _, err := segments.DecodeLegacyDelivery(env); err != nil {
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

// ScanAny reads one input of any format ds reads (see [Detect]) from r and
// reports what it holds to sink, as [Scan] does:
//
//   - a DSS capture as [Scan] does, with opts;
//   - a DSQ1 stream is read with segments.DSQ1Reader: its header is a
//     Header (the stream descriptor and its channels, Seq 0, Writer
//     DSQ1Writer), ChannelDeclared records are Channel, frames Frame,
//     StreamEnded Ended. A record that is framed but does not decode
//     (unknown tag, bad lengths inside it, bad JSON, another stream) is
//     damage, and reading goes on at the next record: the u32 length
//     prefixes keep the framing. A length prefix of 0 or over
//     segments.MaxDSQ1RecordSize, or a header that does not decode,
//     loses the framing (the format has no mark to resynchronise on): the
//     rest of the input is one damaged range. A stream that ends inside a
//     length prefix, a record or the header has a torn tail;
//   - legacy envelopes become frames of stream node#life, with no
//     channel descriptors (views show them raw): the first envelope of
//     each stream is preceded by a Header of a descriptor holding only
//     the stream (Seq 0, Writer LegacyWriter). An envelope whose node is
//     not UTF-8 is damage, skipped by its lengths; a length over its
//     limit (MaxLegacyNodeSize, MaxLegacyPayloadSize) loses the framing,
//     and the rest of the input is one damaged range; an envelope cut
//     short by the end of input is a torn tail.
//
// An empty input is an empty capture: ScanAny returns nil and reports
// nothing. With opts.Follow, it waits for the first bytes of an empty
// input instead (until ctx ends); DSQ1 streams and legacy envelopes are
// read to their end, not followed. An input of no known format returns
// [ErrNotCapture], and nothing is reported to sink.
//
// Damage is reported to sink, with byte offsets from opts.Offset, and not
// returned. ScanAny returns nil at the end of input, ctx.Err() when ctx
// ends (at once, even while the input is being detected), and otherwise
// the read error that stopped it. A sink that is an [Idler] is told when
// the input pauses, whatever its format, as by Scan.
//
// ScanAny reads r through a bufio.Reader of 64 KiB.
func ScanAny(ctx context.Context, r io.Reader, opts ScanOptions, sink Sink) error {
	return scan(ctx, r, opts, sink, true)
}

// openSource returns the reader of entries of f: for [Scan] a
// segments.Reader, for [ScanAny] the reader of the format detected. It
// returns io.EOF for an empty input (with opts.Follow, it waits for its
// first bytes instead), and ErrNotCapture.
func openSource(ctx context.Context, f *batchFeed, opts ScanOptions, anyFormat bool) (entrySource, error) {
	ropts := segments.ReaderOptions{Follow: opts.Follow, Context: ctx, MaxRecordSize: opts.MaxRecordSize, Offset: opts.Offset, SkipBefore: opts.SkipBefore, SkipSummaries: true}
	if !anyFormat {
		return segments.NewReader(f, ropts), nil
	}
	br := bufio.NewReaderSize(f, importBufferSize)
	for {
		format, first, err := detect(br)
		if err != nil {
			return nil, err
		}
		switch format {
		case InputDSS:
			return segments.NewReader(br, ropts), nil
		case InputDSQ1:
			return &dsq1Source{br: br, base: opts.Offset}, nil
		case InputLegacy:
			return &legacySource{br: br, off: opts.Offset, first: first, seen: make(map[frames.StreamID]bool)}, nil
		}
		if !opts.Follow {
			return nil, io.EOF // empty: an empty capture
		}
		t := time.NewTimer(segments.DefaultPollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-f.stop:
			t.Stop()
			return nil, errScanStopped
		case <-t.C:
		}
	}
}

// dsq1Feeder hands a DSQ1Reader the header, then one whole record at a
// time, framed here: the reader then never reads past the record it is
// decoding, so that after a record it cannot decode (its errors are
// sticky) a fresh reader goes on at the next record.
type dsq1Feeder struct {
	br      *bufio.Reader
	off     int64  // input offset of the next byte of br
	pending []byte // what is left to hand over of the current record
	start   int64  // input offset of the current record
	end     int64  // input offset just after it
	framing *segments.CorruptError
	err     error // a read error of br
}

// errFraming stops a DSQ1Reader when the feeder has lost the framing.
var errFraming = errors.New("views: dsq1 framing lost")

func (f *dsq1Feeder) Read(p []byte) (int, error) {
	if len(f.pending) == 0 {
		if err := f.next(); err != nil {
			return 0, err
		}
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

// next frames the next record.
func (f *dsq1Feeder) next() error {
	f.start = f.off
	h, err := f.br.Peek(4)
	if len(h) < 4 {
		if err = ioErr(err); err != nil {
			f.err = err
			return err
		}
		if len(h) == 0 {
			return io.EOF
		}
		f.stop(fmt.Errorf("views: dsq1 length prefix: %w", io.ErrUnexpectedEOF))
		return errFraming
	}
	n := binary.LittleEndian.Uint32(h)
	switch {
	case n == 0:
		f.stop(segments.ErrDSQ1EmptyRecord)
		return errFraming
	case n > segments.MaxDSQ1RecordSize:
		f.stop(fmt.Errorf("%w (record of %d bytes, at most %d)", segments.ErrDSQ1TooLarge, n, segments.MaxDSQ1RecordSize))
		return errFraming
	}
	rec, err := readUpTo(f.br, 4+int(n))
	f.off += int64(len(rec))
	if len(rec) < 4+int(n) {
		if err = ioErr(err); err != nil {
			f.err = err
			return err
		}
		f.framing = &segments.CorruptError{Offset: f.start, End: f.off, Err: fmt.Errorf("views: dsq1 record of %d bytes cut short: %w", n, io.ErrUnexpectedEOF)}
		return errFraming
	}
	f.pending, f.end = rec, f.off
	return nil
}

// stop gives up the framing at the current record: the rest of the input
// is one damaged range.
func (f *dsq1Feeder) stop(cause error) {
	n, err := io.Copy(io.Discard, f.br)
	f.off += n
	if err != nil {
		f.err = err
		return
	}
	f.framing = &segments.CorruptError{Offset: f.start, End: f.off, Err: cause}
}

// dsq1Source reads a DSQ1 stream as entries (see [ScanAny]).
type dsq1Source struct {
	br     *bufio.Reader
	base   int64 // input offset of the stream
	f      *dsq1Feeder
	dr     *segments.DSQ1Reader // nil until the header is read
	stream frames.StreamDescriptor
	err    error // sticky: the end
}

func (s *dsq1Source) NextView(e *segments.Entry) error {
	if s.err != nil {
		return s.err
	}
	*e = segments.Entry{}
	if s.dr == nil {
		return s.header(e)
	}
	ev, err := s.dr.Next()
	f := s.f
	switch {
	case err == io.EOF:
		s.err = io.EOF
		return io.EOF
	case f.err != nil:
		s.err = f.err
		return f.err
	case f.framing != nil:
		s.err = io.EOF
		return f.framing
	case err != nil:
		// A framed record that does not decode: skip it, and go on with
		// a fresh reader (the DSQ1Reader's errors are sticky).
		ce := &segments.CorruptError{Offset: f.start, End: f.end, Err: dsq1Cause(err)}
		f.pending, err = segments.AppendDSQ1Header(nil, s.dr.FlowID, nil, s.stream, nil)
		if err == nil {
			s.dr, err = segments.NewDSQ1Reader(f)
		}
		if err != nil {
			s.err = fmt.Errorf("views: dsq1 resume: %w", err) // unreachable: a header of a stream that decoded
		}
		return ce
	}
	e.Offset, e.Stream = f.start, s.stream.Stream
	switch ev.Kind {
	case frames.EventChannelDeclared:
		e.Kind, e.Channel = segments.EntryChannel, ev.Channel
	case frames.EventFrame:
		fr := ev.Frame
		e.Kind, e.Frame = segments.EntryFrame, frames.Frame{Channel: fr.Channel.Channel, Position: fr.Position, Payload: fr.Payload}
	case frames.EventStreamEnded:
		e.Kind = segments.EntryStreamEnded
	}
	return nil
}

// header reads the stream's header: an EntrySegment, or the damage of a
// header cut short (a torn tail) or bad (the rest of the input).
func (s *dsq1Source) header(e *segments.Entry) error {
	hdr, err := readDSQ1Header(s.br)
	if err = ioErr(err); err != nil && !errors.Is(err, segments.ErrDSQ1TooLarge) {
		s.err = err
		return err
	}
	dr, err := segments.NewDSQ1Reader(bytes.NewReader(hdr))
	if err != nil {
		end := s.base + int64(len(hdr))
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			n, cerr := io.Copy(io.Discard, s.br)
			end += n
			if cerr != nil {
				s.err = cerr
				return cerr
			}
		}
		s.err = io.EOF
		return &segments.CorruptError{Offset: s.base, End: end, Err: err}
	}
	s.stream = dr.Stream
	s.f = &dsq1Feeder{br: s.br, off: s.base + int64(len(hdr)), pending: hdr}
	if s.dr, err = segments.NewDSQ1Reader(s.f); err != nil {
		s.err = fmt.Errorf("views: dsq1 header: %w", err) // unreachable: the header just decoded
		return s.err
	}
	*e = segments.Entry{Kind: segments.EntrySegment, Offset: s.base, Stream: dr.Stream.Stream,
		Header: &segments.Header{Writer: DSQ1Writer, Stream: dr.Stream, Channels: dr.Channels}}
	return nil
}

// dsq1Cause is the error of a DSQ1Reader without the record offset it
// adds, which counts from where that reader started (the damaged range
// says where the record is).
func dsq1Cause(err error) error {
	msg := err.Error()
	if i := strings.LastIndex(msg, " (record at offset "); i > 0 {
		return &causeError{msg: msg[:i], err: err}
	}
	return err
}

// causeError is an error with another message.
type causeError struct {
	msg string
	err error
}

func (e *causeError) Error() string { return e.msg }
func (e *causeError) Unwrap() error { return e.err }

// readDSQ1Header reads the bytes of a DSQ1 header (see
// segments.DSQ1Reader for the layout), as far as the input holds them.
// A JSON length over segments.MaxDSQ1JSONSize stops it with
// segments.ErrDSQ1TooLarge.
func readDSQ1Header(br *bufio.Reader) ([]byte, error) {
	hdr, err := readUpTo(br, 4+16+2)
	if len(hdr) < 22 {
		return hdr, err
	}
	token, err := readUpTo(br, int(binary.LittleEndian.Uint16(hdr[20:])))
	hdr = append(hdr, token...)
	if err != nil {
		return hdr, err
	}
	for range 2 {
		n, err := readUpTo(br, 4)
		hdr = append(hdr, n...)
		if err != nil {
			return hdr, err
		}
		size := binary.LittleEndian.Uint32(n)
		if size > segments.MaxDSQ1JSONSize {
			return hdr, segments.ErrDSQ1TooLarge
		}
		b, err := readUpTo(br, int(size))
		hdr = append(hdr, b...)
		if err != nil {
			return hdr, err
		}
	}
	return hdr, nil
}

// maxLegacyStreams bounds the streams [ScanAny] remembers having reported
// a Header for, in a legacy stream; past it, it forgets them all (a
// stream then gets its Header again).
const maxLegacyStreams = 4096

// legacySource reads legacy envelopes as entries (see [ScanAny]).
type legacySource struct {
	br    *bufio.Reader
	off   int64  // input offset of the next envelope
	first []byte // the first envelope, if detect read it
	seen  map[frames.StreamID]bool
	held  *frames.Delivery // an envelope whose Header was returned first
	at    int64            // input offset of the envelope returned last
	err   error            // sticky: the end
}

func (s *legacySource) NextView(e *segments.Entry) error {
	*e = segments.Entry{}
	if d := s.held; d != nil {
		s.held = nil
		return s.frame(e, d)
	}
	if s.err != nil {
		return s.err
	}
	env, consumed, stop, err := nextLegacy(s.br, s.first)
	s.first = nil
	switch {
	case err != nil:
		s.err = err
		return err
	case stop != nil:
		// The framing is lost, or the input ended inside an envelope:
		// the rest of the input is one damaged range.
		end := s.off
		if consumed {
			end += int64(len(env))
		}
		n, err := io.Copy(io.Discard, s.br)
		if err != nil {
			s.err = err
			return err
		}
		s.err = io.EOF
		return &segments.CorruptError{Offset: s.off, End: end + n, Err: stop}
	case env == nil:
		s.err = io.EOF
		return io.EOF
	}
	off := s.off
	s.off += int64(len(env))
	d, err := segments.DecodeLegacyDelivery(env) // copies the payload
	if !consumed {
		s.br.Discard(len(env)) // peeked: buffered
	}
	if err != nil {
		// Framed, but not an envelope (a node that is not UTF-8):
		// skipped by its lengths.
		return &segments.CorruptError{Offset: off, End: s.off, Err: err}
	}
	if !s.seen[d.Stream] {
		if len(s.seen) >= maxLegacyStreams {
			clear(s.seen)
		}
		s.seen[d.Stream] = true
		s.held, s.at = &d, off
		*e = segments.Entry{Kind: segments.EntrySegment, Offset: off, Stream: d.Stream,
			Header: &segments.Header{Writer: LegacyWriter, Stream: frames.StreamDescriptor{Stream: d.Stream}}}
		return nil
	}
	s.at = off
	return s.frame(e, &d)
}

// frame makes *e the frame of envelope d.
func (s *legacySource) frame(e *segments.Entry, d *frames.Delivery) error {
	*e = segments.Entry{Kind: segments.EntryFrame, Offset: s.at, Stream: d.Stream, Frame: d.Frame}
	return nil
}

// nextLegacy returns the next envelope of br (first, if not nil, which
// was read already), and whether it was read (consumed) or only peeked
// at, which it is when it fits the buffer. At the end of input it
// returns nil. An envelope whose lengths are over their limits, or that
// the input cuts short, yields stop, saying why (env then holds what
// was read of it, if consumed); err is a read error.
func nextLegacy(br *bufio.Reader, first []byte) (env []byte, consumed bool, stop, err error) {
	if first != nil {
		return first, true, nil, nil
	}
	h, err := br.Peek(4)
	if len(h) < 4 {
		if err = ioErr(err); err != nil || len(h) == 0 {
			return nil, false, nil, err
		}
		return nil, false, fmt.Errorf("views: legacy envelope: node length: %w", io.ErrUnexpectedEOF), nil
	}
	n := binary.LittleEndian.Uint32(h)
	if n > MaxLegacyNodeSize {
		return nil, false, fmt.Errorf("views: legacy envelope: node of %d bytes, at most %d", n, MaxLegacyNodeSize), nil
	}
	h, err = br.Peek(legacyFixedSize + int(n))
	if len(h) < legacyFixedSize+int(n) {
		if err = ioErr(err); err != nil {
			return nil, false, nil, err
		}
		return nil, false, fmt.Errorf("views: legacy envelope: header: %w", io.ErrUnexpectedEOF), nil
	}
	p := binary.LittleEndian.Uint32(h[len(h)-4:])
	if p > MaxLegacyPayloadSize {
		return nil, false, fmt.Errorf("views: legacy envelope: payload of %d bytes, at most %d", p, MaxLegacyPayloadSize), nil
	}
	total := legacyFixedSize + int(n) + int(p)
	if total <= br.Size() {
		env, err = br.Peek(total)
	} else {
		env, err = readUpTo(br, total)
		consumed = true
	}
	if len(env) < total {
		if err = ioErr(err); err != nil {
			return nil, false, nil, err
		}
		return env, consumed, fmt.Errorf("views: legacy envelope: payload: %w", io.ErrUnexpectedEOF), nil
	}
	return env, consumed, nil, nil
}

package segments

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

	"github.com/ds-telemetry/ds/pkg/frames"
)

// ScanAny reads one input of any format ds reads (see [Detect]) from r and
// reports what it holds to sink, as [Scan] does:
//
//   - a DSS capture as [Scan] does, with opts;
//   - a DSQ1 stream is read with DSQ1Reader: its header is a
//     Header (the stream descriptor and its channels, Seq 0, Writer
//     DSQ1Writer), ChannelDeclared records are Channel, frames Frame,
//     StreamEnded Ended. A record that is framed but does not decode
//     (unknown tag, bad lengths inside it, bad JSON, another stream) is
//     damage, and reading goes on at the next record: the u32 length
//     prefixes keep the framing. A length prefix of 0 or over
//     MaxDSQ1RecordSize, or a header that does not decode,
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
// Reader, for [ScanAny] the reader of the format detected. It
// returns io.EOF for an empty input (with opts.Follow, it waits for its
// first bytes instead), and ErrNotCapture.
func openSource(ctx context.Context, f *batchFeed, opts ScanOptions, anyFormat bool) (entrySource, error) {
	ropts := ReaderOptions{Follow: opts.Follow, Context: ctx, MaxRecordSize: opts.MaxRecordSize, Offset: opts.Offset, SkipBefore: opts.SkipBefore, SkipSummaries: true, SkipRepeatedCatalogs: true}
	if !anyFormat {
		return NewReader(f, ropts), nil
	}
	br := bufio.NewReaderSize(f, importBufferSize)
	for {
		format, first, err := detect(br)
		if err != nil {
			return nil, err
		}
		switch format {
		case InputDSS:
			if first != nil {
				// Read from the middle of a segment: the bytes detect
				// read to find a header come first.
				return NewReader(&prefixReader{pre: first, r: bufferedReader{br, f}}, ropts), nil
			}
			return NewReader(bufferedReader{br, f}, ropts), nil
		case InputDSQ1:
			return &dsq1Source{br: br, base: opts.Offset}, nil
		case InputLegacy:
			return &legacySource{br: br, off: opts.Offset, first: first, seen: make(map[frames.StreamID]bool)}, nil
		}
		if !opts.Follow {
			return nil, io.EOF // empty: an empty capture
		}
		t := time.NewTimer(DefaultPollInterval)
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

// prefixReader reads pre, then r: unlike io.MultiReader it goes on
// reading r after r said io.EOF once (a followed input grows).
type prefixReader struct {
	pre []byte
	r   io.Reader
}

// bufferedReader is the bufio.Reader of ScanAny over its input, which
// says what file it reads and where (a FileInput): the Reader's buffer
// then grows at once to a large header the file holds.
type bufferedReader struct {
	*bufio.Reader
	under io.Reader
}

// ReadingFile reports the file under the buffer, and where the next byte is:
// the buffer's first (a FileInput).
func (b bufferedReader) ReadingFile() (io.ReaderAt, int64, int64, bool) {
	f, off, end, ok := fileAt(b.under)
	return f, off - int64(b.Buffered()), end, ok && off >= int64(b.Buffered())
}

// ReadingFile reports the file under r, and where the next byte is: the
// prefix's first, before what r reads (a FileInput).
func (p *prefixReader) ReadingFile() (io.ReaderAt, int64, int64, bool) {
	f, off, end, ok := fileAt(p.r)
	return f, off - int64(len(p.pre)), end, ok && off >= int64(len(p.pre))
}

func (p *prefixReader) Read(b []byte) (int, error) {
	if len(p.pre) > 0 {
		n := copy(b, p.pre)
		p.pre = p.pre[n:]
		if len(p.pre) == 0 {
			p.pre = nil // up to 12 MiB, let go (Detect's window)
		}
		return n, nil
	}
	return p.r.Read(b)
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
	framing *CorruptError
	err     error // a read error of br
}

// errFraming stops a DSQ1Reader when the feeder has lost the framing.
var errFraming = errors.New("segments: dsq1 framing lost")

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
		f.stop(fmt.Errorf("segments: dsq1 length prefix: %w", io.ErrUnexpectedEOF))
		return errFraming
	}
	n := binary.LittleEndian.Uint32(h)
	switch {
	case n == 0:
		f.stop(ErrDSQ1EmptyRecord)
		return errFraming
	case n > MaxDSQ1RecordSize:
		f.stop(fmt.Errorf("%w (record of %d bytes, at most %d)", ErrDSQ1TooLarge, n, MaxDSQ1RecordSize))
		return errFraming
	}
	rec, err := readUpTo(f.br, 4+int(n))
	f.off += int64(len(rec))
	if len(rec) < 4+int(n) {
		if err = ioErr(err); err != nil {
			f.err = err
			return err
		}
		f.framing = &CorruptError{Offset: f.start, End: f.off, Err: fmt.Errorf("segments: dsq1 record of %d bytes cut short: %w", n, io.ErrUnexpectedEOF)}
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
	f.framing = &CorruptError{Offset: f.start, End: f.off, Err: cause}
}

// dsq1Source reads a DSQ1 stream as entries (see [ScanAny]).
type dsq1Source struct {
	br     *bufio.Reader
	base   int64 // input offset of the stream
	f      *dsq1Feeder
	dr     *DSQ1Reader // nil until the header is read
	stream frames.StreamDescriptor
	err    error // sticky: the end
}

func (s *dsq1Source) NextView(e *Entry) error {
	if s.err != nil {
		return s.err
	}
	*e = Entry{}
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
		ce := &CorruptError{Offset: f.start, End: f.end, Err: dsq1Cause(err)}
		f.pending, err = AppendDSQ1Header(nil, s.dr.FlowID, nil, s.stream, nil)
		if err == nil {
			s.dr, err = NewDSQ1Reader(f)
		}
		if err != nil {
			s.err = fmt.Errorf("segments: dsq1 resume: %w", err) // unreachable: a header of a stream that decoded
		}
		return ce
	}
	e.Offset, e.Stream = f.start, s.stream.Stream
	switch ev.Kind {
	case frames.EventChannelDeclared:
		e.Kind, e.Channel = EntryChannel, ev.Channel
	case frames.EventFrame:
		fr := ev.Frame
		e.Kind, e.Frame = EntryFrame, frames.Frame{Channel: fr.Channel.Channel, Position: fr.Position, Payload: fr.Payload}
	case frames.EventStreamEnded:
		e.Kind = EntryStreamEnded
	}
	return nil
}

// header reads the stream's header: an EntrySegment, or the damage of a
// header cut short (a torn tail) or bad (the rest of the input).
func (s *dsq1Source) header(e *Entry) error {
	hdr, err := readDSQ1Header(s.br)
	if err = ioErr(err); err != nil && !errors.Is(err, ErrDSQ1TooLarge) {
		s.err = err
		return err
	}
	dr, err := NewDSQ1Reader(bytes.NewReader(hdr))
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
		return &CorruptError{Offset: s.base, End: end, Err: err}
	}
	s.stream = dr.Stream
	s.f = &dsq1Feeder{br: s.br, off: s.base + int64(len(hdr)), pending: hdr}
	if s.dr, err = NewDSQ1Reader(s.f); err != nil {
		s.err = fmt.Errorf("segments: dsq1 header: %w", err) // unreachable: the header just decoded
		return s.err
	}
	*e = Entry{Kind: EntrySegment, Offset: s.base, Stream: dr.Stream.Stream,
		Header: &Header{Writer: DSQ1Writer, Stream: dr.Stream, Channels: dr.Channels}}
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
// DSQ1Reader for the layout), as far as the input holds them.
// A JSON length over MaxDSQ1JSONSize stops it with
// ErrDSQ1TooLarge.
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
		if size > MaxDSQ1JSONSize {
			return hdr, ErrDSQ1TooLarge
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

func (s *legacySource) NextView(e *Entry) error {
	*e = Entry{}
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
		return &CorruptError{Offset: s.off, End: end + n, Err: stop}
	case env == nil:
		s.err = io.EOF
		return io.EOF
	}
	off := s.off
	s.off += int64(len(env))
	d, err := DecodeLegacyDelivery(env) // copies the payload
	if !consumed {
		s.br.Discard(len(env)) // peeked: buffered
	}
	if err != nil {
		// Framed, but not an envelope (a node that is not UTF-8):
		// skipped by its lengths.
		return &CorruptError{Offset: off, End: s.off, Err: err}
	}
	if !s.seen[d.Stream] {
		if len(s.seen) >= maxLegacyStreams {
			clear(s.seen)
		}
		s.seen[d.Stream] = true
		s.held, s.at = &d, off
		*e = Entry{Kind: EntrySegment, Offset: off, Stream: d.Stream,
			Header: &Header{Writer: LegacyWriter, Stream: frames.StreamDescriptor{Stream: d.Stream}}}
		return nil
	}
	s.at = off
	return s.frame(e, &d)
}

// frame makes *e the frame of envelope d.
func (s *legacySource) frame(e *Entry, d *frames.Delivery) error {
	*e = Entry{Kind: EntryFrame, Offset: s.at, Stream: d.Stream, Frame: d.Frame}
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
		return nil, false, fmt.Errorf("segments: legacy envelope: node length: %w", io.ErrUnexpectedEOF), nil
	}
	n := binary.LittleEndian.Uint32(h)
	if n > MaxLegacyNodeSize {
		return nil, false, fmt.Errorf("segments: legacy envelope: node of %d bytes, at most %d", n, MaxLegacyNodeSize), nil
	}
	h, err = br.Peek(legacyFixedSize + int(n))
	if len(h) < legacyFixedSize+int(n) {
		if err = ioErr(err); err != nil {
			return nil, false, nil, err
		}
		return nil, false, fmt.Errorf("segments: legacy envelope: header: %w", io.ErrUnexpectedEOF), nil
	}
	p := binary.LittleEndian.Uint32(h[len(h)-4:])
	if p > MaxLegacyPayloadSize {
		return nil, false, fmt.Errorf("segments: legacy envelope: payload of %d bytes, at most %d", p, MaxLegacyPayloadSize), nil
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
		return env, consumed, fmt.Errorf("segments: legacy envelope: payload: %w", io.ErrUnexpectedEOF), nil
	}
	return env, consumed, nil, nil
}

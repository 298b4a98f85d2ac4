package wireformat

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// Limits and magic of the DSQ1 stream; see [DSQ1Reader] for its layout.
const (
	// DSQ1Magic is the first four bytes of a DSQ1 stream.
	DSQ1Magic = "DSQ1"

	// MaxDSQ1JSONSize is the largest JSON document, in bytes, that a DSQ1
	// header or ChannelDeclared record may hold (16 MiB, as in the original).
	MaxDSQ1JSONSize = 16 << 20

	// MaxDSQ1RecordSize is the largest record body, in bytes, that
	// [DSQ1Reader] accepts (64 MiB). It bounds a frame payload to
	// MaxDSQ1RecordSize−17 bytes. The original set no limit; ds refuses
	// longer records before allocating anything for them.
	MaxDSQ1RecordSize = 64 << 20
)

const (
	dsq1TagChannelDeclared = 0x01
	dsq1TagFrame           = 0x02
	dsq1TagStreamEnded     = 0x03

	dsq1FrameFixedSize = 1 + 4 + 8 + 4 // tag, channel, position, payload length
)

var (
	// ErrDSQ1Magic means the stream does not start with [DSQ1Magic].
	ErrDSQ1Magic = errors.New("wireformat: not a DSQ1 stream (bad magic)")

	// ErrDSQ1EmptyRecord means a record length prefix of 0: every record has
	// at least a tag byte.
	ErrDSQ1EmptyRecord = errors.New("wireformat: dsq1 record of length 0")

	// ErrDSQ1Tag means a record tag other than 01, 02 or 03.
	ErrDSQ1Tag = errors.New("wireformat: unknown dsq1 record tag")

	// ErrDSQ1TooLarge means a length over [MaxDSQ1JSONSize] for JSON, over
	// [MaxDSQ1RecordSize] for a record, or over 65535 bytes for a token. It
	// is reported before anything is allocated for the length.
	ErrDSQ1TooLarge = errors.New("wireformat: dsq1 length exceeds maximum")

	// ErrDSQ1ShortRecord means a complete record whose body is too short for
	// its fields, such as a Frame body of 16 bytes or a payload length that
	// runs past the record. The stream itself was not cut: a stream cut
	// short yields io.ErrUnexpectedEOF instead.
	ErrDSQ1ShortRecord = errors.New("wireformat: dsq1 record body truncated")

	// ErrDSQ1TrailingBytes means a record body longer than its fields.
	ErrDSQ1TrailingBytes = errors.New("wireformat: trailing bytes in dsq1 record")

	// ErrDSQ1Descriptor means JSON in the header or in a ChannelDeclared
	// record that does not decode as the descriptor it should hold.
	ErrDSQ1Descriptor = errors.New("wireformat: bad dsq1 descriptor")

	// ErrDSQ1StreamMismatch means a channel descriptor naming a stream other
	// than the header's. Frames of a DSQ1 stream belong to the header's
	// stream, so such a descriptor could only misname them.
	ErrDSQ1StreamMismatch = errors.New("wireformat: dsq1 channel descriptor names another stream")

	// ErrDSQ1Event means an event that has no DSQ1 record, such as a zero
	// Event or a ChannelDeclared event without its descriptor.
	ErrDSQ1Event = errors.New("wireformat: event has no dsq1 record")
)

// DSQ1Reader decodes a DSQ1 stream into [frames.Event] values.
// [NewDSQ1Reader] reads and checks the header; [DSQ1Reader.Next] returns one
// event per record.
//
// The DSQ1 catalog-aware transport stream is the byte stream of the seed
// system's QUIC adapter (ARCHITECTURE.md rule 6.4, ARCHITECTURE.md cases 4). ds reads it to
// import captures of the original system; ds's own captures use DSS. All
// integers are little-endian.
//
// Header:
//
//	offset      size  type    field
//	0           4     bytes   magic "DSQ1" (44 53 51 31)
//	4           16    bytes   flow id
//	20          2     u16     token length T
//	22          T     bytes   token
//	22+T        4     u32     stream descriptor length J (at most MaxDSQ1JSONSize)
//	26+T        J     JSON    frames.StreamDescriptor
//	26+T+J      4     u32     channel list length K (at most MaxDSQ1JSONSize)
//	30+T+J      K     JSON    array of frames.ChannelDescriptor
//
// Then records until the end of the stream, each a u32 body length L
// (1 ≤ L ≤ MaxDSQ1RecordSize) followed by L bytes of body. The first body
// byte is a tag:
//
//	tag  record           rest of the body (L−1 bytes)
//	01   ChannelDeclared  JSON frames.ChannelDescriptor (at most MaxDSQ1JSONSize)
//	02   Frame            u32 channel id, u64 position, u32 payload length P,
//	                      P payload bytes; L is exactly 17+P
//	03   StreamEnded      nothing; L is exactly 1
//
// There is no StreamDeclared record: the header carries the stream
// descriptor. Any other tag is an error, as in the original: unlike DSS,
// DSQ1 has no reserved tags to skip. The frame (channel 1, position 0, "alpha") is the record
//
//	16 00 00 00 02 01 00 00 00 00 00 00 00 00 00 00
//	00 05 00 00 00 61 6C 70 68 61
//
// ds reads the format more strictly than the original: a stream that ends
// inside a length prefix or a record is truncated, never a clean end; every
// descriptor must name the header's stream; a record with bytes beyond its
// fields is an error.
//
// The header fields are set by NewDSQ1Reader and never changed by the
// reader; changing them does not change what Next returns. A DSQ1Reader is
// not safe for concurrent use.
type DSQ1Reader struct {
	FlowID   [16]byte                   // opaque flow id of the transport
	Token    []byte                     // opaque token; non-nil, possibly empty
	Stream   frames.StreamDescriptor    // the stream every record belongs to
	Channels []frames.ChannelDescriptor // channels declared in the header, in stream order

	r      *bufio.Reader
	stream frames.StreamID // Stream.Stream, kept private so Next cannot be misled
	off    int64           // bytes consumed from r
	err    error           // sticky
}

// NewDSQ1Reader reads the DSQ1 header from r and returns a reader positioned
// at the first record. It reads through a buffer and so may consume bytes of
// r beyond the record last returned; the caller keeps ownership of r.
//
// Errors: [ErrDSQ1Magic] when the magic is wrong; an error wrapping
// io.ErrUnexpectedEOF when r ends inside the header (including an empty r);
// [ErrDSQ1TooLarge] for a JSON length over [MaxDSQ1JSONSize];
// [ErrDSQ1Descriptor] for JSON that does not decode; [ErrDSQ1StreamMismatch]
// for a header channel of another stream; any error of r, wrapped.
func NewDSQ1Reader(r io.Reader) (*DSQ1Reader, error) {
	dr := &DSQ1Reader{r: bufio.NewReaderSize(r, 64<<10)}
	if err := dr.readHeader(); err != nil {
		return nil, err
	}
	return dr, nil
}

func (r *DSQ1Reader) readHeader() error {
	var magic [4]byte
	n, err := io.ReadFull(r.r, magic[:])
	r.off += int64(n)
	if string(magic[:n]) != DSQ1Magic[:n] {
		return fmt.Errorf("%w: starts with % x", ErrDSQ1Magic, magic[:n])
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return dsq1HeaderErr("magic", err)
	}
	if err := r.readFull(r.FlowID[:]); err != nil {
		return dsq1HeaderErr("flow id", err)
	}
	var u16 [2]byte
	if err := r.readFull(u16[:]); err != nil {
		return dsq1HeaderErr("token length", err)
	}
	r.Token = make([]byte, binary.LittleEndian.Uint16(u16[:]))
	if err := r.readFull(r.Token); err != nil {
		return dsq1HeaderErr("token", err)
	}
	b, err := r.readJSON()
	if err != nil {
		return dsq1HeaderErr("stream descriptor", err)
	}
	if err := json.Unmarshal(b, &r.Stream); err != nil {
		return fmt.Errorf("%w: header stream descriptor: %w", ErrDSQ1Descriptor, err)
	}
	r.stream = r.Stream.Stream
	if b, err = r.readJSON(); err != nil {
		return dsq1HeaderErr("channel descriptors", err)
	}
	if err := json.Unmarshal(b, &r.Channels); err != nil {
		return fmt.Errorf("%w: header channel descriptors: %w", ErrDSQ1Descriptor, err)
	}
	for _, c := range r.Channels {
		if c.Stream != r.stream {
			return fmt.Errorf("%w: header channel %d is of %s, header stream is %s", ErrDSQ1StreamMismatch, c.ID, c.Stream, r.stream)
		}
	}
	return nil
}

// dsq1HeaderErr adds the header field to err. Errors of this package lead
// with their sentinel; others (I/O, io.ErrUnexpectedEOF) get a prefix.
func dsq1HeaderErr(field string, err error) error {
	if errors.Is(err, ErrDSQ1TooLarge) {
		return fmt.Errorf("%w (header %s)", err, field)
	}
	return fmt.Errorf("wireformat: dsq1 header: %s: %w", field, err)
}

// readJSON reads a u32 length and that many bytes, refusing lengths over
// MaxDSQ1JSONSize before allocating.
func (r *DSQ1Reader) readJSON() ([]byte, error) {
	var u32 [4]byte
	if err := r.readFull(u32[:]); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint32(u32[:])
	if n > MaxDSQ1JSONSize {
		return nil, fmt.Errorf("%w (%d bytes of JSON, at most %d)", ErrDSQ1TooLarge, n, MaxDSQ1JSONSize)
	}
	return r.readN(int(n))
}

// HeaderEvents returns the header as the events a live subscriber would have
// seen first: StreamDeclared for r.Stream, then ChannelDeclared for each of
// r.Channels in order. The events hold copies of the descriptors.
func (r *DSQ1Reader) HeaderEvents() []frames.Event {
	evs := make([]frames.Event, 0, 1+len(r.Channels))
	evs = append(evs, frames.StreamDeclaredEvent(r.Stream))
	for _, c := range r.Channels {
		evs = append(evs, frames.ChannelDeclaredEvent(c))
	}
	return evs
}

// Next decodes the next record and returns it as an event: a
// [frames.EventChannelDeclared], a [frames.EventFrame] whose ChannelRef names
// the header's stream, or a [frames.EventStreamEnded] for the header's
// stream. Records after StreamEnded are returned like any other. The event
// and its payload belong to the caller.
//
// At the end of the stream, exactly at a record boundary, Next returns
// io.EOF. A stream that ends inside a length prefix or a record yields an
// error wrapping io.ErrUnexpectedEOF. A bad record yields [ErrDSQ1EmptyRecord],
// [ErrDSQ1TooLarge] (checked before allocating), [ErrDSQ1Tag],
// [ErrDSQ1ShortRecord], [ErrDSQ1TrailingBytes], [ErrDSQ1Descriptor] or
// [ErrDSQ1StreamMismatch], wrapped with the byte offset of the record in the
// stream. Errors are sticky: once Next returns an error, every later call
// returns the same error.
func (r *DSQ1Reader) Next() (frames.Event, error) {
	if r.err != nil {
		return frames.Event{}, r.err
	}
	ev, err := r.next()
	if err != nil {
		r.err = err
		return frames.Event{}, err
	}
	return ev, nil
}

func (r *DSQ1Reader) next() (frames.Event, error) {
	start := r.off
	var hdr [dsq1FrameFixedSize]byte
	n, err := io.ReadFull(r.r, hdr[:4])
	r.off += int64(n)
	switch {
	case err == io.EOF:
		return frames.Event{}, io.EOF
	case err != nil:
		return frames.Event{}, dsq1RecordErr(start, "length prefix", err)
	}
	length := binary.LittleEndian.Uint32(hdr[:4])
	switch {
	case length == 0:
		return frames.Event{}, dsq1BadRecord(start, ErrDSQ1EmptyRecord)
	case length > MaxDSQ1RecordSize:
		return frames.Event{}, dsq1BadRecord(start, fmt.Errorf("%w (record of %d bytes, at most %d)", ErrDSQ1TooLarge, length, MaxDSQ1RecordSize))
	}
	if err := r.readFull(hdr[:1]); err != nil {
		return frames.Event{}, dsq1RecordErr(start, "tag", err)
	}
	switch tag := hdr[0]; tag {
	case dsq1TagChannelDeclared:
		if length-1 > MaxDSQ1JSONSize {
			return frames.Event{}, dsq1BadRecord(start, fmt.Errorf("%w (%d bytes of JSON, at most %d)", ErrDSQ1TooLarge, length-1, MaxDSQ1JSONSize))
		}
		b, err := r.readN(int(length - 1))
		if err != nil {
			return frames.Event{}, dsq1RecordErr(start, "channel descriptor", err)
		}
		var d frames.ChannelDescriptor
		if err := json.Unmarshal(b, &d); err != nil {
			return frames.Event{}, dsq1BadRecord(start, fmt.Errorf("%w: %w", ErrDSQ1Descriptor, err))
		}
		if d.Stream != r.stream {
			return frames.Event{}, dsq1BadRecord(start, fmt.Errorf("%w: channel %d is of %s, header stream is %s", ErrDSQ1StreamMismatch, d.ID, d.Stream, r.stream))
		}
		return frames.ChannelDeclaredEvent(d), nil

	case dsq1TagFrame:
		if length < dsq1FrameFixedSize {
			return frames.Event{}, dsq1BadRecord(start, fmt.Errorf("%w: frame body of %d bytes, at least %d", ErrDSQ1ShortRecord, length, dsq1FrameFixedSize))
		}
		if err := r.readFull(hdr[1:]); err != nil {
			return frames.Event{}, dsq1RecordErr(start, "frame header", err)
		}
		payloadLen := binary.LittleEndian.Uint32(hdr[13:])
		switch want := uint64(dsq1FrameFixedSize) + uint64(payloadLen); {
		case want > uint64(length):
			return frames.Event{}, dsq1BadRecord(start, fmt.Errorf("%w: frame payload of %d bytes in a body of %d", ErrDSQ1ShortRecord, payloadLen, length))
		case want < uint64(length):
			return frames.Event{}, dsq1BadRecord(start, fmt.Errorf("%w: frame payload of %d bytes in a body of %d", ErrDSQ1TrailingBytes, payloadLen, length))
		}
		payload, err := r.readN(int(payloadLen))
		if err != nil {
			return frames.Event{}, dsq1RecordErr(start, "frame payload", err)
		}
		return frames.FrameEvent(frames.FrameDelivery{
			Channel:  frames.ChannelRef{Stream: r.stream, Channel: frames.ChannelID(binary.LittleEndian.Uint32(hdr[1:]))},
			Position: frames.Position(binary.LittleEndian.Uint64(hdr[5:])),
			Payload:  payload,
		}), nil

	case dsq1TagStreamEnded:
		if length != 1 {
			return frames.Event{}, dsq1BadRecord(start, fmt.Errorf("%w: StreamEnded body of %d bytes", ErrDSQ1TrailingBytes, length))
		}
		return frames.StreamEndedEvent(r.stream), nil

	default:
		return frames.Event{}, dsq1BadRecord(start, fmt.Errorf("%w 0x%02x", ErrDSQ1Tag, tag))
	}
}

// dsq1RecordErr adds the offset of the record to an I/O error, such as
// io.ErrUnexpectedEOF, that happened while reading part of it.
func dsq1RecordErr(off int64, part string, err error) error {
	return fmt.Errorf("wireformat: dsq1 record at offset %d: %s: %w", off, part, err)
}

// dsq1BadRecord adds the offset of the record to an error that leads with
// one of this file's sentinels.
func dsq1BadRecord(off int64, err error) error {
	return fmt.Errorf("%w (record at offset %d)", err, off)
}

// readFull fills b, mapping an early end of input (even before the first
// byte) to io.ErrUnexpectedEOF.
func (r *DSQ1Reader) readFull(b []byte) error {
	n, err := io.ReadFull(r.r, b)
	r.off += int64(n)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// readN reads exactly n bytes into a new slice. Memory grows with the bytes
// actually read, so a length that promises more than the input holds costs
// at most about one chunk more than the input.
func (r *DSQ1Reader) readN(n int) ([]byte, error) {
	const chunk = 1 << 20
	if n <= chunk {
		b := make([]byte, n)
		return b, r.readFull(b)
	}
	b := make([]byte, 0, chunk)
	for len(b) < n {
		k := min(n-len(b), chunk)
		b = slices.Grow(b, k)
		if err := r.readFull(b[len(b) : len(b)+k]); err != nil {
			return nil, err
		}
		b = b[:len(b)+k]
	}
	return b, nil
}

// AppendDSQ1Header appends a DSQ1 header (see [DSQ1Reader] for the layout) to dst and
// returns the extended slice. Channels are written in the order given; a nil
// channels is written as the empty array.
//
// It returns dst unchanged and an error wrapping [ErrDSQ1TooLarge] for a
// token over 65535 bytes or a JSON document over [MaxDSQ1JSONSize],
// [ErrDSQ1StreamMismatch] for a channel of another stream than desc, or the
// error of encoding a descriptor to JSON.
func AppendDSQ1Header(dst []byte, flowID [16]byte, token []byte, desc frames.StreamDescriptor, channels []frames.ChannelDescriptor) ([]byte, error) {
	if len(token) > math.MaxUint16 {
		return dst, fmt.Errorf("%w (token of %d bytes, at most %d)", ErrDSQ1TooLarge, len(token), math.MaxUint16)
	}
	for _, c := range channels {
		if c.Stream != desc.Stream {
			return dst, fmt.Errorf("%w: channel %d is of %s, header stream is %s", ErrDSQ1StreamMismatch, c.ID, c.Stream, desc.Stream)
		}
	}
	streamJSON, err := json.Marshal(desc)
	if err != nil {
		return dst, fmt.Errorf("wireformat: encode dsq1 stream descriptor: %w", err)
	}
	if channels == nil {
		channels = []frames.ChannelDescriptor{}
	}
	channelsJSON, err := json.Marshal(channels)
	if err != nil {
		return dst, fmt.Errorf("wireformat: encode dsq1 channel descriptors: %w", err)
	}
	if len(streamJSON) > MaxDSQ1JSONSize || len(channelsJSON) > MaxDSQ1JSONSize {
		return dst, fmt.Errorf("%w (header JSON of %d and %d bytes, at most %d)", ErrDSQ1TooLarge, len(streamJSON), len(channelsJSON), MaxDSQ1JSONSize)
	}
	out := append(dst, DSQ1Magic...)
	out = append(out, flowID[:]...)
	out = binary.LittleEndian.AppendUint16(out, uint16(len(token)))
	out = append(out, token...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(streamJSON)))
	out = append(out, streamJSON...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(channelsJSON)))
	return append(out, channelsJSON...), nil
}

// AppendDSQ1Record appends the DSQ1 record of ev (see [DSQ1Reader] for the layout) to
// dst and returns the extended slice:
//   - EventChannelDeclared: a ChannelDeclared record with ev.Channel as JSON;
//   - EventFrame: a Frame record of ev.Frame's channel id, position and
//     payload. The frame's stream is not written: a DSQ1 stream holds one
//     stream, the header's, and the caller must not mix in others;
//   - EventStreamEnded: a StreamEnded record (the stream is implied, too);
//   - EventStreamDeclared: nothing, and no error. As in the original, the
//     stream descriptor travels in the header only (ARCHITECTURE.md rule 6.4).
//
// It returns dst unchanged and [ErrDSQ1Event] for any other event or a
// ChannelDeclared event without descriptor, [ErrDSQ1TooLarge] for JSON over
// [MaxDSQ1JSONSize] or a record over [MaxDSQ1RecordSize], or the error of
// encoding the descriptor to JSON.
func AppendDSQ1Record(dst []byte, ev frames.Event) ([]byte, error) {
	switch ev.Kind {
	case frames.EventChannelDeclared:
		if ev.Channel == nil {
			return dst, fmt.Errorf("%w: ChannelDeclared event without descriptor", ErrDSQ1Event)
		}
		b, err := json.Marshal(ev.Channel)
		if err != nil {
			return dst, fmt.Errorf("wireformat: encode dsq1 channel descriptor: %w", err)
		}
		if len(b) > MaxDSQ1JSONSize {
			return dst, fmt.Errorf("%w (%d bytes of JSON, at most %d)", ErrDSQ1TooLarge, len(b), MaxDSQ1JSONSize)
		}
		out := binary.LittleEndian.AppendUint32(dst, uint32(1+len(b)))
		out = append(out, dsq1TagChannelDeclared)
		return append(out, b...), nil

	case frames.EventFrame:
		f := ev.Frame
		if len(f.Payload) > MaxDSQ1RecordSize-dsq1FrameFixedSize {
			return dst, fmt.Errorf("%w (payload of %d bytes, at most %d)", ErrDSQ1TooLarge, len(f.Payload), MaxDSQ1RecordSize-dsq1FrameFixedSize)
		}
		out := binary.LittleEndian.AppendUint32(dst, uint32(dsq1FrameFixedSize+len(f.Payload)))
		out = append(out, dsq1TagFrame)
		out = binary.LittleEndian.AppendUint32(out, uint32(f.Channel.Channel))
		out = binary.LittleEndian.AppendUint64(out, uint64(f.Position))
		out = binary.LittleEndian.AppendUint32(out, uint32(len(f.Payload)))
		return append(out, f.Payload...), nil

	case frames.EventStreamEnded:
		out := binary.LittleEndian.AppendUint32(dst, 1)
		return append(out, dsq1TagStreamEnded), nil

	case frames.EventStreamDeclared:
		return dst, nil
	}
	return dst, fmt.Errorf("%w: event kind %s", ErrDSQ1Event, ev.Kind)
}

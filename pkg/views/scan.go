package views

import (
	"context"
	"errors"
	"io"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// Sink receives what [Scan] reads from a capture, in file order.
type Sink interface {
	// Segment reports a segment header: the stream and its full catalog.
	Segment(d frames.StreamDescriptor, channels []frames.ChannelDescriptor)
	// Channel reports a ChannelDeclared record.
	Channel(d frames.ChannelDescriptor)
	// Frame reports a frame of stream s. f.Payload is valid only during the
	// call: Scan reuses its storage for the next frame.
	Frame(s frames.StreamID, f frames.Frame)
	// Ended reports a StreamEnded record.
	Ended(s frames.StreamID)
	// Damage reports bytes [offset, end) that could not be read; torn is
	// set when the input ended inside a record (a writer that was killed).
	Damage(offset, end int64, torn bool, err error)
}

// ScanOptions configures [Scan].
type ScanOptions struct {
	// Follow waits for a growing input to grow instead of stopping at its
	// end, until ctx is done (tail -f).
	Follow bool
	// MaxRecordSize overrides the reader's record size limit (0: default).
	MaxRecordSize int
}

// Scan reads one capture from r and reports everything in it to sink. It
// returns nil at the end of the input (damage is reported to the sink, not
// returned), ctx.Err() when ctx ends, and otherwise the I/O error that
// stopped it.
func Scan(ctx context.Context, r io.Reader, opts ScanOptions, sink Sink) error {
	sr := segments.NewReader(r, segments.ReaderOptions{Follow: opts.Follow, Context: ctx, MaxRecordSize: opts.MaxRecordSize})
	// A damaged range is reported once the reader has gone past it, so that
	// a truncated record at the very end (a torn tail) can be told from one
	// cut short by the next good record.
	var held *segments.CorruptError
	report := func(tail bool) {
		if held != nil {
			sink.Damage(held.Offset, held.End, tail && errors.Is(held.Err, io.ErrUnexpectedEOF), held.Err)
			held = nil
		}
	}
	var e segments.Entry
	for {
		err := sr.NextInto(&e)
		if err == io.EOF {
			report(true)
			return nil
		}
		var ce *segments.CorruptError
		if errors.As(err, &ce) {
			report(false)
			held = ce
			continue
		}
		if err != nil {
			report(false)
			return err
		}
		report(false)
		switch e.Kind {
		case segments.EntrySegment:
			sink.Segment(e.Header.Stream, e.Header.Channels)
		case segments.EntryChannel:
			sink.Channel(*e.Channel)
		case segments.EntryFrame:
			sink.Frame(e.Stream, e.Frame)
		case segments.EntryStreamEnded:
			sink.Ended(e.Stream)
		}
	}
}

// Info implements Sink too: see its Segment, Channel, Frame, Ended and
// Damage methods.
var _ Sink = (*Info)(nil)

// LogSink feeds a [Printer] through an [Assembler]: it is what ds log
// scans into.
type LogSink struct {
	P    *Printer
	A    *Assembler
	File string // the input's name, for damage lines
}

// NewLogSink returns a sink printing to p with the given reorder window.
func NewLogSink(p *Printer, window int) *LogSink {
	return &LogSink{P: p, A: NewAssembler(window, p.Item)}
}

// Segment implements Sink.
func (s *LogSink) Segment(d frames.StreamDescriptor, channels []frames.ChannelDescriptor) {
	s.P.Stream(d)
	for _, c := range channels {
		s.P.Channel(c)
	}
}

// Channel implements Sink.
func (s *LogSink) Channel(d frames.ChannelDescriptor) { s.P.Channel(d) }

// Frame implements Sink.
func (s *LogSink) Frame(id frames.StreamID, f frames.Frame) { s.A.Add(id, f) }

// Ended implements Sink: the stream's frames still held are flushed (an
// ended stream has no more to come) and its unfinished lines printed.
func (s *LogSink) Ended(id frames.StreamID) {
	s.A.FlushStream(id)
	s.P.EndStream(id)
}

// Damage implements Sink.
func (s *LogSink) Damage(offset, end int64, torn bool, err error) {
	s.P.Damage(s.File, offset, end, torn, err)
}

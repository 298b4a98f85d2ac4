package views

import (
	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// Info implements Sink too: see its Header, Channel, Frame, Ended and
// Damage methods.
var _ segments.Sink = (*Info)(nil)

// LogSink feeds a [Printer] through an [segments.Assembler]: it is what ds log
// scans into.
type LogSink struct {
	P    *Printer
	A    *segments.Assembler
	File string // the input's name, for damage lines
	// Partial says that the input is read from part-way (ds tail): every
	// stream starts at the first position read, where it starts is not
	// shown, and neither are frames below it (late ones).
	Partial bool
}

// NewLogSink returns a sink printing to p with the given reorder window
// per stream, in bytes (0: DefaultWindow; see [segments.AssemblerOptions]).
func NewLogSink(p *Printer, window int) *LogSink {
	s := &LogSink{P: p}
	s.A = segments.NewAssembler(window, s.item)
	return s
}

// item passes assembled items to the printer.
func (s *LogSink) item(it segments.Item) {
	if s.Partial && (it.Kind == segments.ItemStart || it.Kind == segments.ItemLate) {
		// Read from part-way: where a stream starts is not news, and a
		// frame below it was most likely in what was not read.
		return
	}
	s.P.Item(it)
}

// Header implements Sink.
func (s *LogSink) Header(h segments.SegmentHeader) {
	s.P.Stream(h.Stream)
	s.P.Catalog(h.Stream.Stream, h.Channels)
	seq := h.Seq
	if s.Partial {
		seq = max(seq, 1) // earlier frames were not read, not lost
	}
	s.A.Segment(h.Stream.Stream, seq)
}

// Segment is Header for a writer's first segment (sequence number 0).
func (s *LogSink) Segment(d frames.StreamDescriptor, channels []frames.ChannelDescriptor) {
	s.Header(segments.SegmentHeader{Stream: d, Channels: channels})
}

// Channel implements Sink.
func (s *LogSink) Channel(d frames.ChannelDescriptor) { s.P.Channel(d) }

// Frame implements Sink.
func (s *LogSink) Frame(id frames.StreamID, f frames.Frame) { s.A.Add(id, f) }

// Ended implements Sink: the stream's unfinished lines are printed, and
// the printer forgets it, unless it holds frames back: another input may
// still hold what they wait for (a StreamEnded record ends nothing that a
// later copy can fill), and Printer.Close prints what is left at the end.
func (s *LogSink) Ended(id frames.StreamID) {
	if !s.A.Holding(id) {
		s.P.EndStream(id)
	}
}

// Trimmed implements Sink.
func (s *LogSink) Trimmed(id frames.StreamID, before frames.Position, store bool) {
	s.A.Trimmed(id, before, store)
}

// Damage implements Sink.
func (s *LogSink) Damage(offset, end int64, torn bool, err error) {
	s.P.Damage(s.File, offset, end, torn, err)
}

// Idle implements [segments.Idler]: the input has paused, so what was printed is
// written out ([Printer.Flush]); when it has been quiet for a while
// (quiet), the lines held unfinished are printed first, as they are
// ([Printer.FlushPartials]). A write error is kept by the printer, for
// Close to return.
func (s *LogSink) Idle(quiet bool) {
	if quiet {
		// A live input gone quiet: what is held waiting for a hole is
		// shown, with the gap; a frame of it arriving later is late.
		s.A.Flush()
		s.P.FlushPartials()
	}
	s.P.Flush()
}

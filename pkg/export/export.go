package export

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/sources"
	"github.com/ds-telemetry/ds/pkg/viewer"
	"github.com/ds-telemetry/ds/pkg/views"
)

// Format is an output format of [Write].
type Format uint8

const (
	// Asciicast is asciicast v2 (see the package doc).
	Asciicast Format = iota + 1
	// OTLP is OTLP/JSON logs, one ExportLogsServiceRequest per line.
	//
	// Each request has one resourceLogs, one scopeLogs (scope name "ds",
	// version Options.Version) and one logRecord. The resource is the
	// stream: attributes service.name (the stream's label, ds wrap
	// --label, when it has one), service.instance.id and ds.stream
	// (NODE#LIFE), ds.node, ds.life (decimal, as a string: it is 64-bit
	// unsigned) and ds.label; a damaged range, which belongs to no
	// stream, has a resource naming its file: service.name "ds" and
	// ds.file. The record:
	//
	//   - timeUnixNano and observedTimeUnixNano: the stream's latest
	//     datastream.clock reading before the frame (ns since the Unix
	//     epoch, as a decimal string; an upper bound on when the frame
	//     arrived, within one flush interval), left out before any reading;
	//     a damaged range has the latest time of the records before it,
	//     or, before any, only observedTimeUnixNano, the time of export;
	//   - severityNumber and severityText: a line of a proc.*.stderr
	//     channel is WARN (13), of any other channel INFO (9): stderr holds
	//     a program's diagnostics and progress as much as its errors, so
	//     ERROR would make alerts of them; a gap, drop or transport loss is
	//     WARN, a damaged range ERROR (17), any other note INFO;
	//   - body: a text line without its newline (and one CR before it,
	//     the CR LF of a --pty capture, as a terminal shows it), as stringValue, or as
	//     bytesValue (base64) when it is not UTF-8; a record's JSON as
	//     written, compacted, as stringValue; a bytes frame as bytesValue;
	//     a note's message (as ds log prints it) as stringValue;
	//   - attributes: ds.channel, ds.position (intValue), ds.last_position
	//     (a line's last frame, when it spans several), log.iostream
	//     (stdout or stderr, for proc.*.stdout and proc.*.stderr, as the
	//     OpenTelemetry semantic conventions name it), ds.partial,
	//     ds.late, ds.conflict (true when so); a note has ds.note (gap,
	//     dropped, lost, start, trimmed, damaged) and its numbers: ds.from,
	//     ds.to, ds.frames (gap, trimmed, lost), ds.before and ds.frames
	//     (dropped), ds.output (lost), ds.reason (dropped, lost), ds.file, ds.offset, ds.end, ds.torn
	//     (damaged).
	OTLP
	// CSV is RFC 4180 CSV (encoding/csv): a header row
	// stream,position,channel,time,text (the columns of ds series -o
	// csv, then the text), then one row per text line, record, bytes
	// frame and note, in the order ds log prints them. stream is
	// NODE#LIFE (empty for a damaged range); position the first frame's
	// (of a line), or as in ds log ~ for a note (! for a damaged range),
	// whose channel is then what it is
	// (gap, dropped, lost, start, trimmed, damaged); time RFC 3339 in UTC
	// with nanoseconds, empty before the stream's first clock reading;
	// text a line without its newline and one CR before it (each byte that is not UTF-8
	// replaced by U+FFFD, as ds log --json's "text"), a record's compact
	// JSON, a bytes frame's bytes escaped as Go escapes them (\x00), a
	// note's message. In every cell, each C0 control byte but tab,
	// newline and CR, and DEL, is written \xNN (ESC as \x1b), always, so
	// that a CSV shown on a terminal cannot drive it; a backslash is left
	// as it is. A cell starting with = + - or @ is not altered: a
	// spreadsheet may read it as a formula.
	CSV
	// TSV is CSV with tabs between cells and no quoting: a tab, newline,
	// carriage return or backslash in a cell is written \t, \n, \r or \\
	// (the escapes of PostgreSQL's text COPY format, as ds series -o tsv),
	// and each other control byte as in CSV, \xNN (ESC as \x1b).
	TSV
)

// Formats lists the format names [ParseFormat] takes, in the order help
// lists them.
var Formats = []string{"asciicast", "otlp", "csv", "tsv"}

// ParseFormat parses a format name: asciicast, otlp, csv or tsv.
func ParseFormat(s string) (Format, error) {
	for i, name := range Formats {
		if s == name {
			return Format(i + 1), nil
		}
	}
	return 0, fmt.Errorf("export: unknown format %q (want asciicast, otlp, csv or tsv)", s)
}

// String returns the format's name.
func (f Format) String() string {
	if f >= Asciicast && int(f) <= len(Formats) {
		return Formats[f-1]
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// DefaultWidth and DefaultHeight are the terminal size of an asciicast
// header when Options.Width or Height is 0, in columns and rows.
const (
	DefaultWidth  = 80
	DefaultHeight = 24
)

// Options configures [Write].
type Options struct {
	Format Format
	// Select is what is exported (the views' shared filters, as ds log
	// takes them).
	Select views.Selection
	// Width and Height are the asciicast terminal size in columns and
	// rows (0: DefaultWidth, DefaultHeight).
	Width, Height int
	// Title is the asciicast header's title ("": none).
	Title string
	// Version is the OTLP scope's version, ds's ("": none).
	Version string
}

// Result says what [Write] wrote.
type Result struct {
	// Records is the number of events (asciicast, header excluded), log
	// records (OTLP) or rows (CSV, TSV, header excluded) written.
	Records uint64
	// Streams is the number of streams read.
	Streams int
}

// Write reads the named inputs with r (as ds log does: merged by time,
// r.Set opens them; warnings and damage on r.Stderr, which must be set)
// and writes them to w in opts.Format (see [Format] and the package doc).
// Damaged ranges are exported in place, as ds log shows them.
//
// It returns what it wrote and the inputs' worst outcome (nil or a
// *sources.StatusError), or the first write error (w is then not written
// to again, but the inputs are read to their end). Write is not safe for
// concurrent use of one r.
func Write(ctx context.Context, r *viewer.Inputs, names []string, opts Options, w io.Writer) (Result, error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	out := &output{w: bw}
	var enc encoder
	switch opts.Format {
	case Asciicast:
		enc = newAsciicast(out, opts)
	case OTLP:
		enc = newOTLP(out, opts)
	case CSV, TSV:
		enc = newTable(out, opts.Format == TSV)
	default:
		return Result{}, fmt.Errorf("export: unknown format %v", opts.Format)
	}
	labels := map[frames.StreamID]*string{}
	p := views.NewPrinter(io.Discard, views.LogOptions{
		Select:     opts.Select,
		JSONFrames: opts.Format == Asciicast,
		Entries:    func(e *views.Entry) { enc.entry(e, labels[e.Stream]) },
	})
	sink := views.NewLogSink(p, 0)
	// Without follow the inputs' sinks are called one at a time, from
	// this goroutine: labels needs no lock.
	// The lifecycle records are read as they are scanned, before the
	// selection: a recording's command and pty come from its "started"
	// record even when --since or -c leaves that record out.
	var onStarted func(frames.StreamID, *views.Lifecycle)
	if st, ok := enc.(starter); ok {
		onStarted = st.started
	}
	lifecycles := map[castKey]bool{}
	err := r.Scan(ctx, names, false, func(in *sources.Input) segments.Sink {
		return &inputSink{LogSink: sink, name: in.Name, labels: labels, lifecycles: lifecycles, started: onStarted}
	}, nil)
	sink.A.Flush()
	_ = p.Close() // it writes nothing: Entries
	enc.close()
	if out.err == nil {
		out.err = bw.Flush()
	}
	views.WarnCopies(r.Stderr, views.CopyCounts(sink.A), "exported")
	viewer.WarnSelection(r.Stderr, p)
	res := Result{Records: out.records, Streams: len(labels)}
	if out.err != nil {
		return res, out.err
	}
	return res, err
}

// inputSink is the log sink as one input feeds it: its damage names the
// input, its headers give the streams' labels, and the "started"
// records of its lifecycle channels go to started (when not nil) as
// they are read, whatever the selection shows.
type inputSink struct {
	*views.LogSink
	name       string
	labels     map[frames.StreamID]*string
	lifecycles map[castKey]bool // proc.*.lifecycle channels, by stream and id
	started    func(frames.StreamID, *views.Lifecycle)
}

// starter is an encoder that takes every "started" lifecycle record of
// the inputs, before the selection (the asciicast header's command).
type starter interface {
	started(s frames.StreamID, l *views.Lifecycle)
}

// Header implements segments.Sink.
func (s *inputSink) Header(h segments.SegmentHeader) {
	if l, ok := s.labels[h.Stream.Stream]; !ok || l == nil {
		s.labels[h.Stream.Stream] = h.Stream.Label
	}
	for _, d := range h.Channels {
		s.declare(d)
	}
	s.LogSink.Header(h)
}

// Channel implements segments.Sink.
func (s *inputSink) Channel(d frames.ChannelDescriptor) {
	s.declare(d)
	s.LogSink.Channel(d)
}

func (s *inputSink) declare(d frames.ChannelDescriptor) {
	if _, ok := views.LifecycleLabel(d.Name); ok && s.started != nil {
		s.lifecycles[castKey{d.Stream, d.ID}] = true
	}
}

// Frame implements segments.Sink.
func (s *inputSink) Frame(st frames.StreamID, f frames.Frame) {
	if _, ok := s.labels[st]; !ok {
		s.labels[st] = nil // a stream without a header (DSQ1, legacy)
	}
	if s.started != nil && s.lifecycles[castKey{st, f.Channel}] {
		if l, err := views.ParseLifecycle(f.Payload); err == nil && l.Event == "started" {
			s.started(st, &l)
		}
	}
	s.LogSink.Frame(st, f)
}

// Damage implements segments.Sink.
func (s *inputSink) Damage(offset, end int64, torn bool, err error) {
	s.File = s.name
	s.LogSink.Damage(offset, end, torn, err)
}

// An encoder writes entries in one format; close writes what it held
// back.
type encoder interface {
	// entry encodes e, of a stream whose label is label (nil: none).
	entry(e *views.Entry, label *string)
	close()
}

// output is where an encoder writes: a sticky write error and a count.
type output struct {
	w       *bufio.Writer
	err     error
	records uint64
}

// record writes one record's bytes (b, its newline included) and counts
// it.
func (o *output) record(b []byte) {
	if o.err != nil {
		return
	}
	_, o.err = o.w.Write(b)
	o.records++
}

// write writes b, not counted (a header).
func (o *output) write(b []byte) {
	if o.err == nil {
		_, o.err = o.w.Write(b)
	}
}

package views

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/textfmt"
)

// SeriesFormat selects how a [Series] prints its rows.
type SeriesFormat uint8

const (
	// SeriesJSON prints one JSON object per row (newline-delimited):
	//
	//	{"stream":"n1#7","node":"n1","life":7,"position":2,"channel":"host.cpu",
	//	 "time":"2024-11-30T08:00:00.1Z","time_unix_ns":1732953600100000000,
	//	 "values":{"host.total_percent":12.5}}
	//
	// every key always present, in this order: "time" and "time_unix_ns"
	// are null before the stream's first clock reading (and for a late
	// frame); "values" maps each field path, as given, to its value (null
	// when the record lacks it). Without fields "record" holds the whole
	// record instead of "values". A late frame (one that arrived after its
	// position had been declared part of a gap) also has "late":true.
	SeriesJSON SeriesFormat = iota
	// SeriesCSV prints RFC 4180 CSV (encoding/csv): a header row
	// stream,position,channel,time,PATH… (or …,time,record), then one row
	// per frame. A string is written as its text, a number, true or false
	// as in JSON, null and a missing value as an empty cell, an array or
	// object as compact JSON; cells are quoted where CSV needs it.
	SeriesCSV
	// SeriesTSV is SeriesCSV with tabs between cells and no quoting: a
	// tab, newline, carriage return or backslash in a cell is written as
	// \t, \n, \r or \\ (the escapes of PostgreSQL's text COPY format).
	SeriesTSV
)

// ParseSeriesFormat accepts "json", "csv" and "tsv".
func ParseSeriesFormat(s string) (SeriesFormat, error) {
	switch s {
	case "json":
		return SeriesJSON, nil
	case "csv":
		return SeriesCSV, nil
	case "tsv":
		return SeriesTSV, nil
	}
	return 0, fmt.Errorf("views: unknown series format %q (want json, csv or tsv)", s)
}

// SeriesOptions configures [NewSeries].
type SeriesOptions struct {
	// Channels selects the channels whose frames are rows (exact name or
	// prefix, see frames.ParseChannelPattern); it must not be empty.
	// Frames of channels without a descriptor never match.
	Channels []frames.ChannelFilter
	// Fields are gjson paths (github.com/tidwall/gjson syntax:
	// "host.total_percent", "gpus.#.memory_used_mib",
	// `interfaces.#(name=="eth0").rx_bytes`) whose values make a row; no
	// fields means the whole record. A path may not be empty or given
	// twice.
	Fields []string
	// Format is the output format.
	Format SeriesFormat
	// Rate turns each field's values, read as cumulative counters, into
	// per-second rates (see [Series]). It needs Fields.
	Rate bool
	// Window is the assembler's reorder window per stream, in bytes (0:
	// DefaultWindow; see AssemblerOptions).
	Window int
	// Points, if not nil, takes each row instead of the output (Format
	// is then ignored and nothing is written): ds series --plot and
	// -o svg chart the rows. It needs Fields. Rows come as they would
	// be printed: the same frames, times, rates and nulls.
	Points func(SeriesPoint)
}

// SeriesPoint is one row of a [Series] as numbers, for a chart
// ([SeriesOptions].Points).
type SeriesPoint struct {
	Stream   frames.StreamID
	Channel  string
	Position frames.Position
	// TimeNS is the row's time, ns since the Unix epoch; 0 when it has
	// none (before the first clock reading, or a late frame).
	TimeNS int64
	Late   bool
	// Resumed says the stream lost frames (a gap, or submissions
	// dropped) since the channel's previous row: a chart breaks its line.
	Resumed bool
	// Values holds one value per field, in the order of
	// [SeriesOptions].Fields (with Rate, the rates).
	Values []SeriesValue
}

// SeriesValue is a field's value in a [SeriesPoint]: a number (OK), no
// number (null, missing, a string, a boolean, an object: OK false), or,
// for an array (a path with #), its elements, each a SeriesValue
// (IsArray; arrays in arrays are not numbers).
type SeriesValue struct {
	Num     float64
	OK      bool
	IsArray bool
	Elems   []SeriesValue
}

// seriesValueOf reads a gjson value as a SeriesValue.
func seriesValueOf(r gjson.Result, top bool) SeriesValue {
	if top && r.IsArray() {
		v := SeriesValue{IsArray: true}
		r.ForEach(func(_, e gjson.Result) bool {
			v.Elems = append(v.Elems, seriesValueOf(e, false))
			return true
		})
		return v
	}
	s := sampleOf(r)
	return SeriesValue{Num: s.f, OK: s.kind != sampleNone}
}

// value is r as a SeriesValue.
func (r rateValue) value() SeriesValue {
	if r.isArr {
		v := SeriesValue{IsArray: true, Elems: make([]SeriesValue, len(r.array))}
		for i, e := range r.array {
			v.Elems[i] = e.value()
		}
		return v
	}
	return SeriesValue{Num: r.v, OK: r.ok}
}

// Series prints the frames of JSON record channels as a time series: it
// is what ds series scans into (it is a [segments.Sink]). Each frame of a matching
// channel whose payload is JSON (any content kind: a JsonRecord channel,
// or a text channel whose frames are JSON values) is one row: its stream,
// position, channel, time and the values of the field paths. Frames come
// out per stream in position order, rebuilt by an [segments.Assembler]
// (duplicates collapsed, first wins); rows of different streams come in
// the order their frames are read (interleaved, as the streams are in the
// input). A frame's time is its stream's latest
// datastream.clock reading at or before its position (see the package
// doc); rows before the first reading have none. A frame whose payload is
// not JSON is no row: it is counted in [SeriesStats].Skipped.
//
// ARCHITECTURE.md case 3.8: a series never picks frames of other channels. §3.9:
// a path the record lacks has no value (null, an empty cell), and fields
// not asked for are ignored.
//
// # Rates
//
// With [SeriesOptions].Rate each field is a cumulative counter, and a
// row's value is its increase since the previous sample of the same
// series, per second of clock time: (v_i − v_{i−1}) / (t_i − t_{i−1}). A
// series is one field of one channel of one stream (node#life), so a new
// life starts new series. The rate is null, never negative or made up,
// when:
//   - the sample is the series' first;
//   - the previous sample is not known to be the previous one: the
//     stream has a gap (positions lost) or a drop (submissions refused,
//     see [Drop]) since it, or the previous frame of the channel was not
//     JSON;
//   - either value is missing or not a number (a string, a boolean, an
//     object), or the counter went down (a reset);
//   - either time is unknown, or the time did not advance (two frames of
//     one drain tick share a clock reading).
//
// Integers are subtracted exactly (up to 2^64−1), other numbers as
// float64. An array value (from a path with #) is rated element by
// element, pairing elements by index: the result is an array of the same
// length, each element a rate or null by the rules above; when the two
// arrays differ in length (elements cannot be paired) every element is
// null. Pairing by index suits arrays whose order is stable (GPUs by
// index); to follow one element by key, select it in the path
// (`interfaces.#(name=="eth0").rx_bytes`). A late frame is
// printed with a null rate and is not the previous sample of the next.
//
// A Series is not safe for concurrent use. Write errors are sticky and
// returned by [Series.Close].
type Series struct {
	opts   SeriesOptions
	w      *bufio.Writer
	csv    *csv.Writer
	a      *segments.Assembler
	cat    viewCatalog
	err    error
	rows   uint64
	skip   map[string]uint64
	line   []byte
	scrat  []byte
	cells  []string
	head   []string // the CSV/TSV header row, nil once written (or for JSON)
	closed bool
}

// SeriesStats says what a [Series] printed and skipped.
type SeriesStats struct {
	// Rows counts the rows printed.
	Rows uint64
	// Skipped counts, per channel name, the frames of matching channels
	// that were not JSON (sorted by name).
	Skipped []SkippedFrames
	// Unmatched lists the channel patterns (as given to
	// frames.ParseChannelPattern, rebuilt from the filters) that matched
	// no declared channel of any stream.
	Unmatched []string
	// Channels lists the names of the declared channels of the inputs,
	// sorted, at most [MaxListedChannels]; ChannelsMore says that there
	// were more.
	Channels     []string
	ChannelsMore bool
}

// SkippedFrames counts the frames of one channel name a view skipped.
type SkippedFrames struct {
	Channel string
	Frames  uint64
}

// MaxListedChannels bounds the channel names [SeriesStats] and
// [Latest.Channels] list.
const MaxListedChannels = 64

// NewSeries returns a series printing to w. It returns an error (about
// the options, for a usage message) when opts.Channels is empty, a field
// path is empty or repeated, or Rate is set without fields. Feed it with
// [segments.Scan]; then call [Series.Close]. The CSV or TSV header row is
// written with the first row, or by Close when there was none and every
// channel pattern matched a channel: a series that fails (ds series
// exits 1 when a pattern matches nothing) prints no header.
func NewSeries(w io.Writer, opts SeriesOptions) (*Series, error) {
	if len(opts.Channels) == 0 {
		return nil, errors.New("series: no channel given")
	}
	for i, f := range opts.Fields {
		if f == "" {
			return nil, errors.New("series: empty field path")
		}
		if slices.Contains(opts.Fields[:i], f) {
			return nil, fmt.Errorf("series: field %q given twice", f)
		}
	}
	if opts.Rate && len(opts.Fields) == 0 {
		return nil, errors.New("series: --rate needs at least one field (counters are named by --field)")
	}
	if opts.Points != nil && len(opts.Fields) == 0 {
		return nil, errors.New("series: a chart needs at least one field (the values are named by --field)")
	}
	s := &Series{
		opts: opts,
		w:    bufio.NewWriterSize(w, 64<<10),
		cat:  newViewCatalog(opts.Channels, false),
		skip: make(map[string]uint64),
	}
	s.a = segments.NewAssembler(opts.Window, s.item)
	switch opts.Format {
	case SeriesCSV:
		s.csv = csv.NewWriter(s.w)
	}
	if opts.Format != SeriesJSON {
		// Written before the first row, or by Close (writeHead).
		s.head = []string{"stream", "position", "channel", "time"}
		if len(opts.Fields) == 0 {
			s.head = append(s.head, "record")
		}
		s.head = append(s.head, opts.Fields...)
	}
	return s, nil
}

// Header implements Sink.
func (s *Series) Header(h segments.SegmentHeader) {
	s.cat.header(h)
	s.a.Segment(h.Stream.Stream, h.Seq)
}

// Channel implements Sink.
func (s *Series) Channel(d frames.ChannelDescriptor) { s.cat.channel(d) }

// Frame implements Sink.
func (s *Series) Frame(id frames.StreamID, f frames.Frame) { s.a.Add(id, f) }

// Ended implements Sink. Held frames stay held: another input may still
// fill what they wait for.
func (s *Series) Ended(frames.StreamID) {}

// Trimmed implements Sink.
func (s *Series) Trimmed(id frames.StreamID, before frames.Position, store bool) {
	s.a.Trimmed(id, before, store)
}

// Idle implements [segments.Idler]: when the input has nothing more for now (a
// live pipe), the rows printed so far are written out.
func (s *Series) Idle(quiet bool) {
	if s.closed {
		return
	}
	if quiet {
		// A live input gone quiet: rows held behind a hole are printed,
		// after the gap; a frame of it arriving later is late.
		s.a.Flush()
	}
	if s.csv != nil {
		s.csv.Flush()
	}
	if err := s.w.Flush(); err != nil && s.err == nil {
		s.err = err
	}
}

// Damage implements Sink. A series has no place for damage in its output;
// the caller reports it (on stderr).
func (s *Series) Damage(offset, end int64, torn bool, err error) {}

// Close prints the frames still held back, flushes the output and
// returns the first write error. Close does not close the underlying
// writer.
func (s *Series) Close() error {
	if !s.closed {
		s.closed = true
		s.a.Flush()
		if s.head != nil && s.opts.Points == nil && len(s.cat.unmatched()) == 0 {
			s.writeHead() // no rows: a header only
		}
		if s.csv != nil {
			s.csv.Flush()
			if err := s.csv.Error(); err != nil && s.err == nil {
				s.err = err
			}
		}
		if err := s.w.Flush(); err != nil && s.err == nil {
			s.err = err
		}
	}
	return s.err
}

// Stats returns what was printed and skipped so far.
func (s *Series) Stats() SeriesStats {
	st := SeriesStats{Rows: s.rows, Unmatched: s.cat.unmatched()}
	st.Channels, st.ChannelsMore = s.cat.channelNames()
	for name, n := range s.skip {
		st.Skipped = append(st.Skipped, SkippedFrames{Channel: name, Frames: n})
	}
	slices.SortFunc(st.Skipped, func(a, b SkippedFrames) int { return strings.Compare(a.Channel, b.Channel) })
	return st
}

// item takes an assembled item.
func (s *Series) item(it segments.Item) {
	vs := s.cat.item(it)
	if vs == nil {
		return
	}
	if it.Kind != segments.ItemFrame && it.Kind != segments.ItemLate {
		return
	}
	ch := s.cat.channelOf(vs, it.Frame.Channel)
	if ch == nil || !ch.match {
		return
	}
	s.row(vs, ch, it.Kind == segments.ItemLate, &it.Frame)
}

// row prints the row of frame f of channel ch, or counts it as skipped.
func (s *Series) row(vs *viewStream, ch *viewChannel, late bool, f *frames.Frame) {
	var ok bool
	s.scrat, ok = appendCompactJSON(s.scrat[:0], f.Payload)
	if !ok {
		s.skip[ch.desc.Name]++
		if !late {
			ch.prev.ok = false // the series' previous sample is lost
		}
		return
	}
	if s.err != nil {
		return
	}
	s.rows++
	timeNS := vs.clockNS
	if late {
		timeNS = 0
	}
	var vals []gjson.Result
	if len(s.opts.Fields) > 0 {
		vals = gjson.GetManyBytes(s.scrat, s.opts.Fields...)
	}
	var rates []rateValue
	if s.opts.Rate {
		rates = s.rates(vs, ch, late, f.Position, timeNS, vals)
	}
	if s.opts.Points != nil {
		p := SeriesPoint{Stream: vs.id, Channel: ch.desc.Name, Position: f.Position, TimeNS: timeNS, Late: late, Values: make([]SeriesValue, len(vals))}
		if !late {
			p.Resumed = ch.pointSeen && ch.pointGen != vs.gen
			ch.pointSeen, ch.pointGen = true, vs.gen
		}
		for i, v := range vals {
			if rates != nil {
				p.Values[i] = rates[i].value()
			} else {
				p.Values[i] = seriesValueOf(v, true)
			}
		}
		s.opts.Points(p)
		return
	}
	if s.opts.Format == SeriesJSON {
		s.jsonRow(vs, ch, late, f.Position, timeNS, vals, rates)
		return
	}
	cells := append(s.cells[:0], vs.name, strconv.FormatUint(uint64(f.Position), 10), ch.desc.Name, "")
	if timeNS != 0 {
		cells[3] = formatTime(timeNS)
	}
	switch {
	case len(s.opts.Fields) == 0:
		cells = append(cells, string(s.scrat))
	case rates != nil:
		for _, r := range rates {
			cells = append(cells, string(r.appendJSON(s.line[:0], true)))
		}
	default:
		for _, v := range vals {
			cells = append(cells, cellOf(v))
		}
	}
	s.cells = cells
	s.writeHead()
	s.writeCells(cells)
}

// writeHead writes the CSV or TSV header row, unless it was written.
func (s *Series) writeHead() {
	if s.head != nil {
		s.writeCells(s.head)
		s.head = nil
	}
}

// jsonRow prints a row in SeriesJSON.
func (s *Series) jsonRow(vs *viewStream, ch *viewChannel, late bool, pos frames.Position, timeNS int64, vals []gjson.Result, rates []rateValue) {
	b := append(s.line[:0], vs.jsonHead...)
	b = append(b, `,"position":`...)
	b = strconv.AppendUint(b, uint64(pos), 10)
	b = append(b, `,"channel":`...)
	b = textfmt.AppendJSONString(b, ch.desc.Name, true)
	if timeNS != 0 {
		b = append(b, `,"time":"`...)
		b = time.Unix(0, timeNS).UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, `","time_unix_ns":`...)
		b = strconv.AppendInt(b, timeNS, 10)
	} else {
		b = append(b, `,"time":null,"time_unix_ns":null`...)
	}
	if late {
		b = append(b, `,"late":true`...)
	}
	if len(s.opts.Fields) == 0 {
		b = append(b, `,"record":`...)
		b = append(b, s.scrat...)
	} else {
		b = append(b, `,"values":{`...)
		for i, path := range s.opts.Fields {
			if i > 0 {
				b = append(b, ',')
			}
			b = textfmt.AppendJSONString(b, path, true)
			b = append(b, ':')
			if rates != nil {
				b = rates[i].appendJSON(b, false)
			} else {
				b = appendResult(b, vals[i])
			}
		}
		b = append(b, '}')
	}
	b = append(b, "}\n"...)
	s.line = b
	if _, err := s.w.Write(b); err != nil && s.err == nil {
		s.err = err
	}
}

// writeCells prints one CSV or TSV row.
func (s *Series) writeCells(cells []string) {
	if s.err != nil {
		return
	}
	if s.csv != nil {
		if err := s.csv.Write(cells); err != nil {
			s.err = err
		}
		return
	}
	b := s.line[:0]
	for i, c := range cells {
		if i > 0 {
			b = append(b, '\t')
		}
		b = textfmt.AppendTSVCell(b, c)
	}
	b = append(b, '\n')
	s.line = b
	if _, err := s.w.Write(b); err != nil {
		s.err = err
	}
}

// formatTime formats a clock reading (ns since the Unix epoch) as RFC 3339
// in UTC, with nanoseconds.
func formatTime(ns int64) string {
	return time.Unix(0, ns).UTC().Format(time.RFC3339Nano)
}

// appendResult appends a gjson value as compact JSON, null when it does
// not exist.
func appendResult(b []byte, r gjson.Result) []byte {
	if !r.Exists() {
		return append(b, "null"...)
	}
	if c, ok := appendCompactJSON(b, []byte(r.Raw)); ok {
		return c
	}
	// A value gjson made up that is not JSON (it never should be): its
	// text, as a string.
	return textfmt.AppendJSONString(b, r.String(), true)
}

// cellOf is the CSV/TSV cell of a gjson value (see SeriesCSV).
func cellOf(r gjson.Result) string {
	switch r.Type {
	case gjson.Null:
		return ""
	case gjson.String:
		return r.Str
	case gjson.JSON:
		return string(appendResult(nil, r))
	}
	return r.Raw
}

// A sample is one numeric value of a counter.
type sample struct {
	kind sampleKind
	u    uint64  // sampleUint
	f    float64 // every kind but sampleNone
}

type sampleKind uint8

const (
	sampleNone  sampleKind = iota // missing, or not a number
	sampleUint                    // an integer in [0, 2^64)
	sampleFloat                   // any other number
)

// sampleOf reads a number; anything else is sampleNone.
func sampleOf(r gjson.Result) sample {
	if r.Type != gjson.Number {
		return sample{}
	}
	if u, err := strconv.ParseUint(r.Raw, 10, 64); err == nil {
		return sample{kind: sampleUint, u: u, f: float64(u)}
	}
	f, err := strconv.ParseFloat(r.Raw, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return sample{}
	}
	return sample{kind: sampleFloat, f: f}
}

// perSecond returns the rate from prev to cur over dtNS nanoseconds, and
// false where [Series] says a rate is null.
func perSecond(prev, cur sample, dtNS int64) (float64, bool) {
	if prev.kind == sampleNone || cur.kind == sampleNone || dtNS <= 0 {
		return 0, false
	}
	var d float64
	if prev.kind == sampleUint && cur.kind == sampleUint {
		if cur.u < prev.u {
			return 0, false
		}
		d = float64(cur.u - prev.u)
	} else {
		if cur.f < prev.f {
			return 0, false
		}
		d = cur.f - prev.f
	}
	r := d / (float64(dtNS) / 1e9)
	if math.IsInf(r, 0) || math.IsNaN(r) {
		return 0, false
	}
	return r, true
}

// fieldSample is one field's value in a sample: a number or an array of
// them.
type fieldSample struct {
	one   sample
	array []sample
	isArr bool
}

func fieldSampleOf(r gjson.Result) fieldSample {
	if !r.IsArray() {
		return fieldSample{one: sampleOf(r)}
	}
	fs := fieldSample{isArr: true}
	r.ForEach(func(_, v gjson.Result) bool {
		fs.array = append(fs.array, sampleOf(v))
		return true
	})
	return fs
}

// rateValue is a field's rate in a row: null, a number, or an array of
// numbers and nulls.
type rateValue struct {
	ok    bool
	v     float64
	array []rateValue
	isArr bool
}

// appendJSON appends r as JSON; in a cell (cell set), null is empty.
func (r rateValue) appendJSON(b []byte, cell bool) []byte {
	switch {
	case r.isArr:
		b = append(b, '[')
		for i, e := range r.array {
			if i > 0 {
				b = append(b, ',')
			}
			b = e.appendJSON(b, false)
		}
		return append(b, ']')
	case r.ok:
		return textfmt.AppendJSONFloat(b, r.v)
	case cell:
		return b
	}
	return append(b, "null"...)
}

// seriesPrev is the previous sample of a channel's series.
type seriesPrev struct {
	ok     bool // a sample is there to rate against
	gen    uint64
	timeNS int64
	fields []fieldSample
}

// rates computes the rates of a row and makes it the previous sample of
// its channel's series (unless it is late).
func (s *Series) rates(vs *viewStream, ch *viewChannel, late bool, pos frames.Position, timeNS int64, vals []gjson.Result) []rateValue {
	out := make([]rateValue, len(vals))
	p := &ch.prev
	usable := !late && p.ok && p.gen == vs.gen && p.timeNS != 0 && timeNS != 0
	dt := timeNS - p.timeNS
	if len(p.fields) != len(vals) {
		p.fields = make([]fieldSample, len(vals))
	}
	for i, v := range vals {
		cur := fieldSampleOf(v)
		if usable {
			out[i] = rateOf(p.fields[i], cur, dt)
		} else {
			out[i] = rateOf(fieldSample{}, cur, dt) // null, in cur's shape
		}
		if !late {
			p.fields[i] = cur
		}
	}
	if !late {
		p.ok, p.gen, p.timeNS = true, vs.gen, timeNS
	}
	return out
}

// rateOf rates one field. An array value gets an array of the same
// length, null where an element has no rate (see [Series]).
func rateOf(prev, cur fieldSample, dtNS int64) rateValue {
	if !cur.isArr {
		if prev.isArr {
			return rateValue{}
		}
		v, ok := perSecond(prev.one, cur.one, dtNS)
		return rateValue{ok: ok, v: v}
	}
	r := rateValue{isArr: true, array: make([]rateValue, len(cur.array))}
	if !prev.isArr || len(prev.array) != len(cur.array) {
		return r
	}
	for i := range cur.array {
		r.array[i].v, r.array[i].ok = perSecond(prev.array[i], cur.array[i], dtNS)
	}
	return r
}

// viewCatalog is what series and latest know of the streams they read:
// channel descriptors and whether they match, clock readings, and the
// breaks in each stream (gaps, drops) that part a series.
type viewCatalog struct {
	filters []frames.ChannelFilter
	// hideOwn hides the writer's own datastream.* channels unless a
	// filter names them (latest without channels).
	hideOwn bool
	streams map[frames.StreamID]*viewStream
	last    *viewStream
	matched []bool              // per filter: it matched a declared channel
	names   map[string]struct{} // declared channel names, up to MaxListedChannels+1
}

// viewStream is one stream of a [viewCatalog].
type viewStream struct {
	id       frames.StreamID
	name     string // node#life
	jsonHead []byte // `{"stream":…,"node":…,"life":N`
	// decl holds the stream's declared channels; chans the state of
	// those that had a frame, made at the first (a header of 140 000
	// channels costs its descriptors once, not a viewChannel each).
	decl      declaredChannels
	chans     map[frames.ChannelID]*viewChannel
	clockID   frames.ChannelID // datastream.clock, 0 if undeclared
	healthID  frames.ChannelID // datastream.health, 0 if undeclared
	clockNS   int64            // the latest clock reading in position order, 0 if none
	fromStart bool             // position 0 was seen
	gen       uint64           // bumped at every gap and drop
	drops     dropTracker
}

// viewChannel is one declared channel of a [viewStream].
type viewChannel struct {
	desc  frames.ChannelDescriptor
	match bool
	prev  seriesPrev // series
	// pointGen is the stream's gen at the channel's previous point
	// (SeriesOptions.Points), pointSeen whether there was one.
	pointGen  uint64
	pointSeen bool
	last      latestFrame // latest
}

func newViewCatalog(filters []frames.ChannelFilter, hideOwn bool) viewCatalog {
	return viewCatalog{
		filters: filters,
		hideOwn: hideOwn,
		streams: make(map[frames.StreamID]*viewStream),
		matched: make([]bool, len(filters)),
		names:   make(map[string]struct{}),
	}
}

func (c *viewCatalog) stream(id frames.StreamID) *viewStream {
	if vs := c.last; vs != nil && vs.id == id {
		return vs
	}
	vs := c.streams[id]
	if vs == nil {
		vs = &viewStream{id: id, name: id.String(), chans: make(map[frames.ChannelID]*viewChannel)}
		b := append([]byte(nil), `{"stream":`...)
		b = textfmt.AppendJSONString(b, vs.name, true)
		b = append(b, `,"node":`...)
		b = textfmt.AppendJSONString(b, id.Node, true)
		b = append(b, `,"life":`...)
		vs.jsonHead = strconv.AppendUint(b, uint64(id.Life), 10)
		c.streams[id] = vs
	}
	c.last = vs
	return vs
}

func (c *viewCatalog) header(h segments.SegmentHeader) {
	vs := c.stream(h.Stream.Stream)
	if vs.decl.adopt(h.Channels) {
		for _, d := range h.Channels {
			c.declared(vs, d)
		}
		return
	}
	for _, d := range h.Channels {
		c.channel(d)
	}
}

// channel records a descriptor; the first one for an id wins.
func (c *viewCatalog) channel(d frames.ChannelDescriptor) {
	vs := c.stream(d.Stream)
	if vs.decl.add(d) {
		c.declared(vs, d)
	}
}

// channelOf returns the state of stream vs's channel id, made at its first
// frame; nil for an undeclared channel.
func (c *viewCatalog) channelOf(vs *viewStream, id frames.ChannelID) *viewChannel {
	if ch := vs.chans[id]; ch != nil {
		return ch
	}
	d, ok := vs.decl.find(id)
	if !ok {
		return nil
	}
	ch := &viewChannel{desc: d, match: c.match(d, nil)}
	vs.chans[id] = ch
	return ch
}

// match reports whether the filters (none: all but the writer's own
// channels when they are hidden) take channel d, and marks in matched,
// when not nil, each filter that does.
func (c *viewCatalog) match(d frames.ChannelDescriptor, matched []bool) bool {
	if len(c.filters) == 0 {
		return !c.hideOwn || !strings.HasPrefix(d.Name, "datastream.")
	}
	m := false
	for i, f := range c.filters {
		if f.Match(d) {
			m = true
			if matched != nil {
				matched[i] = true
			}
		}
	}
	return m
}

// declared takes in a channel newly declared in stream vs.
func (c *viewCatalog) declared(vs *viewStream, d frames.ChannelDescriptor) {
	c.match(d, c.matched)
	switch d.Name {
	case frames.ClockChannel:
		vs.clockID = d.ID
	case frames.HealthChannel:
		vs.healthID = d.ID
	}
	if len(c.names) <= MaxListedChannels {
		c.names[d.Name] = struct{}{}
	}
}

// item keeps the stream's clock and breaks up to date with an assembled
// item and returns the item's stream (nil for nothing to show).
func (c *viewCatalog) item(it segments.Item) *viewStream {
	vs := c.stream(it.Stream)
	switch it.Kind {
	case segments.ItemGap:
		vs.gen++
		return nil
	case segments.ItemFrame:
	case segments.ItemLate:
		return vs
	default:
		return nil
	}
	f := &it.Frame
	if f.Position == 0 {
		vs.fromStart = true
	}
	switch {
	case f.Channel == 0:
	case f.Channel == vs.clockID:
		if ns, ok := decodeClock(f.Payload); ok && ns > 0 {
			vs.clockNS = ns
		}
	case f.Channel == vs.healthID:
		if _, ok := vs.drops.health(f.Position, f.Payload, vs.fromStart, false); ok {
			vs.gen++
		}
	}
	return vs
}

// unmatched returns the filters that matched no declared channel, in
// their CLI spelling.
func (c *viewCatalog) unmatched() []string {
	var out []string
	for i, f := range c.filters {
		if !c.matched[i] {
			out = append(out, patternOf(f))
		}
	}
	return out
}

// channelNames returns the declared channel names, sorted, at most
// MaxListedChannels, and whether there were more.
func (c *viewCatalog) channelNames() ([]string, bool) {
	names := make([]string, 0, len(c.names))
	for n := range c.names {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(names) > MaxListedChannels {
		return names[:MaxListedChannels], true
	}
	return names, false
}

// patternOf is the CLI spelling of a channel filter (the inverse of
// frames.ParseChannelPattern).
func patternOf(f frames.ChannelFilter) string {
	switch f.Kind {
	case frames.ChannelsPrefix:
		return f.Value + "*"
	case frames.ChannelsContent:
		return "content " + f.Content.String()
	case frames.ChannelsAll:
		return "*"
	}
	return f.Value
}

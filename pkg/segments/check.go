package segments

import (
	"bufio"
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"io"
	"slices"
	"strings"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// A Checker verifies inputs record by record, as ds check does (see
// ds(1)): every CRC, damaged ranges and torn tails, descriptors that
// conflict, segment summaries that disagree with their frames, and what
// each input holds of each stream. It returns its findings as data; the
// caller renders them.
//
// One Checker checks any number of inputs, one after another: the
// descriptors of channels and streams are compared across them (a stream
// split over files is one stream), so a conflict names the input where
// the first declaration was. A Checker is not safe for concurrent use.
type Checker struct {
	decls map[checkKey]checkDecl // streams (channel 0)
	// chans are the channels' first declarations, by stream: keyed by id
	// alone and without their stream, a catalog of 140 000 channels (a
	// 16 MiB header) takes about 12 MiB, not 32.
	chans map[frames.StreamID]*streamDecls
}

// NewChecker returns a Checker that has seen no input yet.
func NewChecker() *Checker {
	return &Checker{decls: make(map[checkKey]checkDecl), chans: make(map[frames.StreamID]*streamDecls)}
}

// CheckOptions configures [Checker.Check].
type CheckOptions struct {
	// Format is what the input holds, as [Detect] found it (a regular
	// file): a DSS capture is read with a [Reader], summaries included;
	// DSQ1 streams and legacy envelopes through [ScanAny]; an empty input
	// is read not at all. It is ignored with Sniff.
	Format InputFormat
	// Sniff says that the format is not known (stdin, a pipe, a store's
	// stream): a DSS capture is told by the first bytes of its magic, and
	// anything else goes to ScanAny, which tells the rest (its headers
	// then set the report's Format).
	Sniff bool
	// Live says that a writer still holds the input: a torn tail is then
	// a [LiveTail], no problem.
	Live bool
	// Store says that the input is a store's read-out
	// ([Store.OpenStream]): its Trimmed records are the store's, and the
	// frames below them that remain are hidden (StreamCheck.Hidden).
	// Without it, the input is a capture file, whose frames below a
	// Trimmed record are a [TrimmedFrames] finding.
	Store bool
	// Finding, if not nil, is called with each finding as Check meets
	// it, in input order, on the goroutine that called Check. What the
	// finding points to is valid only during the call.
	Finding func(Finding)
}

// A Finding is one thing [Checker.Check] found in an input: a
// *[DamagedRange], *[TornTail], *[LiveTail], *[UnknownRecord],
// *[ChannelConflict], *[StreamConflict], *[SummaryMismatch] or
// *[TrimmedFrames].
type Finding interface {
	// Problem reports whether the finding makes the input fail the
	// check (ds check exits 3): damage, torn tails, conflicts and
	// summaries that disagree do; a live tail and an unknown record do
	// not.
	Problem() bool
}

// DamagedRange is bytes [Offset, End) of the input that could not be
// read (a flipped bit, a bad length, bytes that are no DSS), skipped up
// to the next good record or segment. Records adjacent damaged records
// make one range; Err is the first one's cause (for an input read
// through ScanAny, Records is 1 and Err a *[RunError] for a run).
type DamagedRange struct {
	Offset, End int64
	Records     int
	Err         error
}

// TornTail is an input that ends inside a record, at bytes
// [Offset, End): a writer killed mid-record. Err says where it was cut.
type TornTail struct {
	Offset, End int64
	Err         error
}

// LiveTail is the record cut short at byte Offset at the end of a live
// input ([CheckOptions].Live): still being written, no torn tail.
type LiveTail struct {
	Offset int64
}

// UnknownRecord is a record at byte Offset of a type this reader does
// not know (a newer writer), or, with Err set, a Block of an unknown
// codec: not damage (its CRC was checked), but its frames, if any, are
// not counted.
type UnknownRecord struct {
	Offset int64
	Stream frames.StreamID
	Type   wireformat.RecordType
	Err    error
}

// ChannelPlace is where and how a channel was declared: at byte Offset
// of input Input (a segment header or a ChannelDeclared record; for an
// input read through ScanAny, the place of its stream's header).
type ChannelPlace struct {
	Input   string
	Offset  int64
	Channel frames.ChannelDescriptor
}

// ChannelConflict is one channel id of one stream declared with two
// descriptors that differ in name, label or content: First was met
// first (in this input or an earlier one), Second now. Each pair of
// descriptors is reported once per input.
type ChannelConflict struct {
	First, Second ChannelPlace
}

// StreamPlace is where and how a stream was described: in a segment
// header at byte Offset of input Input.
type StreamPlace struct {
	Input  string
	Offset int64
	Stream frames.StreamDescriptor
}

// StreamConflict is one stream described with two descriptors that
// differ in origin or label, First met first, Second now. Each pair is
// reported once per input.
type StreamConflict struct {
	First, Second StreamPlace
}

// SummaryFields says which parts of a segment summary disagree with the
// segment it describes, a set of bits.
type SummaryFields uint16

// The parts of a [SummaryMismatch], in the order ds check lists them.
const (
	// SummaryInvalid: the summary contradicts itself
	// (wireformat.Summary.Check fails with SummaryMismatch.Invalid).
	SummaryInvalid SummaryFields = 1 << iota
	// SummarySegmentID: its segment id is not the header's.
	SummarySegmentID
	// SummarySeq: its sequence number is not the header's.
	SummarySeq
	// SummaryLength: its length is not the segment's (header to summary).
	SummaryLength
	// SummaryCounts: its frame count or payload bytes differ.
	SummaryCounts
	// SummaryPositions: its first or last position differ.
	SummaryPositions
	// SummaryOrdered: its Ordered flag differs.
	SummaryOrdered
	// SummaryEnded: its Ended flag differs from whether the segment holds
	// a StreamEnded record.
	SummaryEnded
	// SummaryChannelCount: it counts another number of channels than the
	// segment's frames are of. Channels are compared only when nothing
	// above disagrees.
	SummaryChannelCount
	// SummaryChannel: it counts channel SummaryMismatch.Channel (an index
	// into both channel lists) otherwise; only the first such channel is
	// reported.
	SummaryChannel
)

// SegmentCounts is what a segment holds, counted as a writer counts it
// for its summary.
type SegmentCounts struct {
	Frames, Bytes uint64           // frames, and their payload bytes
	First, Last   *frames.Position // lowest and highest position; nil without frames
	Ordered       bool             // frames in strictly increasing position order (false without frames)
	Ended         bool             // the segment holds a StreamEnded record
	Length        int64            // bytes from the header's first byte to the summary's
	// Channels counts per channel, by id (Keep is 0).
	Channels []wireformat.ChannelCount
}

// SummaryMismatch is a segment summary, at byte Offset, that disagrees
// with the frames of its segment, whose header is at byte SegmentOffset.
// A summary is compared only for a segment read without damage.
type SummaryMismatch struct {
	Offset, SegmentOffset int64
	Stream                frames.StreamID
	Seq                   uint64  // the header's sequence number
	SegmentID             [8]byte // the header's segment id
	// Summary is the record as read; Segment what the segment holds.
	Summary *wireformat.Summary
	Segment SegmentCounts
	// Fields says what disagrees; Invalid is the error of Summary.Check
	// with SummaryInvalid; Channel the index of the first channel that
	// disagrees with SummaryChannel.
	Fields  SummaryFields
	Invalid error
	Channel int
}

// Problem implements [Finding]: true.
func (*DamagedRange) Problem() bool { return true }

// Problem implements [Finding]: true.
func (*TornTail) Problem() bool { return true }

// Problem implements [Finding]: false.
func (*LiveTail) Problem() bool { return false }

// Problem implements [Finding]: false.
func (*UnknownRecord) Problem() bool { return false }

// Problem implements [Finding]: true.
func (*ChannelConflict) Problem() bool { return true }

// Problem implements [Finding]: true.
func (*StreamConflict) Problem() bool { return true }

// Problem implements [Finding]: true.
func (*SummaryMismatch) Problem() bool { return true }

// TrimmedFrames is a capture file (no store's read-out, see
// CheckOptions.Store) that holds a Trimmed record of Stream, at horizon
// Before, and Frames frames (distinct positions) below it. A Trimmed
// record is authoritative only in what a store reads out (ds-format(5)
// "Trimmed"): in a capture it hides nothing, and the views show those
// frames; a capture that holds both was not written so (crafted, or
// spliced). It is reported after the input is read.
type TrimmedFrames struct {
	Stream frames.StreamID
	Before frames.Position
	Frames uint64
}

// Problem implements [Finding]: true.
func (*TrimmedFrames) Problem() bool { return true }

// CheckReport is what [Checker.Check] read of one input.
type CheckReport struct {
	// Format is what the input held (for a sniffed input that is not
	// DSS: InputDSQ1 unless a header said legacy envelopes).
	Format InputFormat
	// Bytes is how many bytes were read; Segments the segment headers
	// (for DSQ1 streams and legacy envelopes, the stream headers the
	// importer reports), Frames the frames of all streams.
	Bytes    int64
	Segments uint64
	Frames   uint64
	// Problems counts the findings that are problems ([Finding].Problem).
	Problems uint64
	// Streams is what the input holds of each stream, by stream id.
	Streams []StreamCheck
}

// PositionRun is the positions From to To, both included.
type PositionRun struct {
	From, To frames.Position
}

// MaxCheckRuns is how many runs of positions [Checker.Check] keeps per
// stream: past it, gaps are no longer counted (StreamCheck.RunsOverflow)
// and duplicates only within the runs kept.
const MaxCheckRuns = 1 << 16

// StreamCheck is what an input holds of one stream.
type StreamCheck struct {
	Stream     frames.StreamID
	Segments   uint64 // segment headers of the stream
	Frames     uint64
	Bytes      uint64 // payload bytes
	Duplicates uint64 // frames of positions seen before
	Ended      bool   // a StreamEnded record was seen
	// TrimmedBelow is the highest Trimmed record's horizon: the store
	// the input was read from deleted the frames below it (0: none).
	// Positions below it are no gap; Hidden counts those left there,
	// which views hide in a store's read-out (CheckOptions.Store) and
	// show in a capture file (a [TrimmedFrames] finding).
	TrimmedBelow frames.Position
	Hidden       uint64
	// Runs are the positions held, at or above TrimmedBelow, as ascending
	// runs; RunsOverflow says that there were more than MaxCheckRuns, so
	// that the last runs were widened to cover the rest: Gaps and Missing
	// then count nothing reliable.
	Runs         []PositionRun
	RunsOverflow bool
	// Gaps is the number of interior gaps between the runs, Missing the
	// positions in them.
	Gaps, Missing uint64
}

// Check reads r, the input called name, to its end and returns what it
// found (each finding also went to opts.Finding as it was met). It
// returns an error only when it could not read the input to its end: a
// read error, ctx's error, or [ErrNotCapture]; damage is a finding, not
// an error. The report of what was read comes with an error too.
//
// Check reads as fast as a [Reader] does, in memory bounded by the
// reader's plus a few hundred bytes per stream and per run of positions.
func (c *Checker) Check(ctx context.Context, r io.Reader, name string, opts CheckOptions) (*CheckReport, error) {
	ck := &inputChecker{c: c, name: name, opts: opts, rep: CheckReport{Format: opts.Format}, streams: make(map[frames.StreamID]*checkStream)}
	err := ck.read(ctx, r)
	ck.finish()
	return &ck.rep, err
}

// checkKey is a channel of a stream, for the catalog check (channel 0:
// the stream itself).
type checkKey struct {
	stream frames.StreamID
	id     frames.ChannelID
}

// checkDecl is where a stream was first declared, and how.
type checkDecl struct {
	stream frames.StreamDescriptor
	input  string
	offset int64
}

// chanDecl is where a channel was first declared, and how: its
// descriptor but for the stream, which keys the map that holds it.
type chanDecl struct {
	name    string
	label   *string
	content frames.ChannelContent
	input   string
	offset  int64
}

// descriptor returns the descriptor of channel id of stream s.
func (c *chanDecl) descriptor(s frames.StreamID, id frames.ChannelID) frames.ChannelDescriptor {
	return frames.ChannelDescriptor{Stream: s, ID: id, Name: c.name, Label: c.label, Content: c.content}
}

// streamDecls holds where each channel of one stream was first declared:
// most often all in one header, whose catalog is kept as the reader
// decoded it (base, sorted by id, with the header's input and offset), and
// the channels declared after it in more. A catalog of 140 000 channels
// then costs its decoded slice, not a map entry each (19 MB).
type streamDecls struct {
	base       []frames.ChannelDescriptor // ids strictly increasing; never changed
	baseInput  string
	baseOffset int64
	more       map[frames.ChannelID]chanDecl
}

// find returns the first declaration of channel id.
func (sd *streamDecls) find(id frames.ChannelID) (chanDecl, bool) {
	if i, ok := slices.BinarySearchFunc(sd.base, id, func(d frames.ChannelDescriptor, id frames.ChannelID) int { return cmp.Compare(d.ID, id) }); ok {
		d := &sd.base[i]
		return chanDecl{name: d.Name, label: d.Label, content: d.Content, input: sd.baseInput, offset: sd.baseOffset}, true
	}
	d, ok := sd.more[id]
	return d, ok
}

// adopt takes catalog, of a header at offset of input, as the stream's
// first declarations when it has none and catalog is sorted by id without
// repeats, and reports whether it did.
func (sd *streamDecls) adopt(catalog []frames.ChannelDescriptor, input string, offset int64) bool {
	if sd.base != nil || sd.more != nil || len(catalog) == 0 {
		return false
	}
	for i := 1; i < len(catalog); i++ {
		if catalog[i-1].ID >= catalog[i].ID {
			return false
		}
	}
	sd.base, sd.baseInput, sd.baseOffset = catalog, input, offset
	return true
}

// inputChecker checks one input: it takes its entries in input order and
// hands findings over as it meets them.
type inputChecker struct {
	c    *Checker
	name string
	opts CheckOptions
	rep  CheckReport
	// conflicts already reported, so that a channel repeated in every
	// header is reported once per pair of descriptors.
	conflicts map[checkConflictKey]bool

	streams map[frames.StreamID]*checkStream
	last    *checkStream // the stream of the last entry, to skip the map

	seg checkSegment

	// The damaged range being gathered: adjacent ranges make one, and the
	// last may turn out to be a torn tail.
	pending  *CorruptError
	pendingN int
	// lastDamage is the last damaged range the reader returned: a
	// header recovered from its copy comes right after its own.
	lastDamage CorruptError
}

type checkConflictKey struct {
	ch   checkKey
	a, b string // the two descriptors, described
}

// read reads the input to its end.
func (ck *inputChecker) read(ctx context.Context, r io.Reader) error {
	cr := &CountingReader{R: r}
	defer func() { ck.rep.Bytes = cr.N() }()
	if ck.opts.Sniff {
		// Stdin or a pipe: a DSS capture is told by its magic; anything
		// else goes to the importers, which tell the rest.
		br := bufio.NewReaderSize(cr, 64<<10)
		head, err := br.Peek(len(wireformat.Magic))
		switch {
		case len(head) == 0 && err == io.EOF:
			ck.rep.Format = InputEmpty
		case err != nil && err != io.EOF:
			return err
		case strings.HasPrefix(wireformat.Magic, string(head)):
			ck.rep.Format = InputDSS
		default:
			ck.rep.Format = InputDSQ1 // or legacy: its headers say (checkSink)
		}
		return ck.readFormat(ctx, br)
	}
	return ck.readFormat(ctx, cr)
}

func (ck *inputChecker) readFormat(ctx context.Context, r io.Reader) error {
	switch ck.rep.Format {
	case InputEmpty:
		return nil
	case InputDSS:
		return ck.readDSS(ctx, r)
	}
	// DSQ1 streams and legacy envelopes: through the importers.
	return ScanAny(ctx, r, ScanOptions{}, checkSink{ck})
}

// readDSS reads a DSS capture with a Reader, summaries included.
func (ck *inputChecker) readDSS(ctx context.Context, r io.Reader) error {
	rd := NewReader(r, ReaderOptions{})
	var e Entry
	for n := 0; ; n++ {
		if n&0xFFF == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		err := rd.NextView(&e)
		if err == io.EOF {
			ck.flushDamage(true)
			return nil
		}
		var ce *CorruptError
		if errors.As(err, &ce) {
			ck.damage(ce)
			ck.lastDamage = *ce
			continue
		}
		if err != nil {
			ck.flushDamage(false)
			return err
		}
		damagedTo := ck.lastDamage.End == e.Offset && ck.pending != nil
		if ck.pending != nil {
			ck.flushDamage(false)
		}
		switch e.Kind {
		case EntrySegment:
			h := e.Header
			ck.header(e.Offset, h.Stream, h.Seq, h.SegmentID, true, h.Channels)
			if damagedTo {
				// Perhaps recovered from its HeaderCopy, which the
				// reader returns at the copy's offset: the segment
				// (and its summary's length) may start at the damage.
				ck.seg.damagedFrom = ck.lastDamage.Offset
			}
		case EntryChannel:
			ck.channel(e.Offset, *e.Channel)
		case EntryFrame:
			ck.frame(e.Stream, e.Frame)
		case EntryStreamEnded:
			ck.ended(e.Stream)
		case EntrySummary:
			ck.summary(e.Offset, e.Stream, e.Summary)
		case EntryUnknown:
			ck.unknown(e.Offset, e.Stream, e.Type, e.Err)
		case EntryTrimmed:
			ck.trimmed(e.Stream, e.Frame.Position)
		}
	}
}

// checkSink feeds a inputChecker from ScanAny (DSQ1, legacy), which gathers
// adjacent damaged ranges and tells torn tails itself.
type checkSink struct{ ck *inputChecker }

func (s checkSink) Header(h SegmentHeader) {
	switch h.Writer {
	case DSQ1Writer:
		s.ck.rep.Format = InputDSQ1
	case LegacyWriter:
		s.ck.rep.Format = InputLegacy
	}
	s.ck.header(h.Offset, h.Stream, h.Seq, [8]byte{}, false, h.Channels)
}
func (s checkSink) Channel(d frames.ChannelDescriptor)                    { s.ck.channel(-1, d) }
func (s checkSink) Frame(id frames.StreamID, f frames.Frame)              { s.ck.frame(id, f) }
func (s checkSink) Ended(id frames.StreamID)                              { s.ck.ended(id) }
func (s checkSink) Trimmed(id frames.StreamID, h frames.Position, _ bool) { s.ck.trimmed(id, h) }
func (s checkSink) Damage(offset, end int64, torn bool, err error) {
	s.ck.report(offset, end, 1, torn, err)
}

// found hands a finding over, counting it if it is a problem.
func (ck *inputChecker) found(f Finding) {
	if f.Problem() {
		ck.rep.Problems++
	}
	if ck.opts.Finding != nil {
		ck.opts.Finding(f)
	}
}

// damage takes a damaged range from the reader: adjacent ranges are
// gathered into one.
func (ck *inputChecker) damage(ce *CorruptError) {
	ck.seg.damaged = true
	if p := ck.pending; p != nil && p.End == ce.Offset && !errors.Is(ce.Err, io.ErrUnexpectedEOF) {
		p.End = ce.End
		ck.pendingN++
		return
	}
	ck.flushDamage(false)
	ck.pending = &CorruptError{Offset: ce.Offset, End: ce.End, Err: ce.Err}
	ck.pendingN = 1
}

// flushDamage reports the range gathered; atEOF says that the input ended
// right after it (a range cut short by the end is a torn tail).
func (ck *inputChecker) flushDamage(atEOF bool) {
	p := ck.pending
	if p == nil {
		return
	}
	ck.pending = nil
	torn := atEOF && ck.pendingN == 1 && errors.Is(p.Err, io.ErrUnexpectedEOF)
	ck.report(p.Offset, p.End, ck.pendingN, torn, p.Err)
}

// report hands over a damaged range [offset, end) of n records, or a
// torn tail; a torn tail of a live capture is no problem.
func (ck *inputChecker) report(offset, end int64, n int, torn bool, err error) {
	ck.seg.damaged = true
	switch {
	case torn && ck.opts.Live:
		ck.found(&LiveTail{Offset: offset})
	case torn:
		ck.found(&TornTail{Offset: offset, End: end, Err: err})
	default:
		ck.found(&DamagedRange{Offset: offset, End: end, Records: n, Err: err})
	}
}

// header starts a segment of the stream desc describes, at offset (hasID:
// id is its segment id, and a summary may follow), and checks the
// descriptor and the catalog.
func (ck *inputChecker) header(offset int64, desc frames.StreamDescriptor, seq uint64, id [8]byte, hasID bool, catalog []frames.ChannelDescriptor) {
	s := desc.Stream
	ck.rep.Segments++
	st := ck.stream(s)
	st.segments++
	ck.seg.start(offset, s, seq, id, hasID)
	ck.describe(offset, desc)
	if ck.decls(s).adopt(catalog, ck.name, offset) {
		return
	}
	for _, d := range catalog {
		ck.declare(offset, d)
	}
}

// decls returns the declarations of stream s, adding it.
func (ck *inputChecker) decls(s frames.StreamID) *streamDecls {
	sd := ck.c.chans[s]
	if sd == nil {
		sd = &streamDecls{}
		ck.c.chans[s] = sd
	}
	return sd
}

// describe checks a stream descriptor, found at offset, against the
// first one of its stream: origin and label.
func (ck *inputChecker) describe(offset int64, desc frames.StreamDescriptor) {
	k := checkKey{stream: desc.Stream} // channel 0: the stream itself
	first, ok := ck.c.decls[k]
	if !ok {
		ck.c.decls[k] = checkDecl{stream: desc, input: ck.name, offset: offset}
		return
	}
	a, b := describeStream(first.stream), describeStream(desc)
	if a == b || !ck.newConflict(checkConflictKey{k, a, b}) {
		return
	}
	ck.found(&StreamConflict{
		First:  StreamPlace{first.input, first.offset, first.stream},
		Second: StreamPlace{ck.name, offset, desc},
	})
}

// newConflict reports true, unless the conflict was met before in this
// input (a descriptor repeated in every header).
func (ck *inputChecker) newConflict(k checkConflictKey) bool {
	if ck.conflicts[k] {
		return false
	}
	if ck.conflicts == nil {
		ck.conflicts = make(map[checkConflictKey]bool)
	}
	ck.conflicts[k] = true
	return true
}

// channel checks a ChannelDeclared record.
func (ck *inputChecker) channel(offset int64, d frames.ChannelDescriptor) {
	ck.stream(d.Stream)
	if offset < 0 {
		offset = ck.seg.offset // an importer: the stream header's place
	}
	ck.declare(offset, d)
}

// declare checks descriptor d, found at offset, against the one declared
// first for its channel.
func (ck *inputChecker) declare(offset int64, d frames.ChannelDescriptor) {
	k := checkKey{d.Stream, d.ID}
	sd := ck.decls(d.Stream)
	decl, ok := sd.find(d.ID)
	if !ok {
		if sd.more == nil {
			sd.more = make(map[frames.ChannelID]chanDecl)
		}
		sd.more[d.ID] = chanDecl{name: d.Name, label: d.Label, content: d.Content, input: ck.name, offset: offset}
		return
	}
	first := decl.descriptor(d.Stream, d.ID)
	if sameDescriptor(first, d) {
		return
	}
	if !ck.newConflict(checkConflictKey{k, describeChannel(first), describeChannel(d)}) {
		return
	}
	ck.found(&ChannelConflict{
		First:  ChannelPlace{decl.input, decl.offset, first},
		Second: ChannelPlace{ck.name, offset, d},
	})
}

// stream returns the state of stream s, adding it.
func (ck *inputChecker) stream(s frames.StreamID) *checkStream {
	if st := ck.last; st != nil && st.id == s {
		return st
	}
	st := ck.streams[s]
	if st == nil {
		st = &checkStream{id: s}
		ck.streams[s] = st
	}
	ck.last = st
	return st
}

func (ck *inputChecker) frame(s frames.StreamID, f frames.Frame) {
	ck.rep.Frames++
	st := ck.stream(s)
	st.frames++
	st.bytes += uint64(len(f.Payload))
	if st.pos.add(f.Position) {
		st.duplicates++
	}
	if ck.seg.active && ck.seg.stream == s {
		ck.seg.tally.add(f.Channel, f.Position, len(f.Payload))
	}
}

func (ck *inputChecker) ended(s frames.StreamID) {
	ck.stream(s).ended = true
	if ck.seg.active && ck.seg.stream == s {
		ck.seg.tally.ended = true
	}
}

// trimmed takes a Trimmed record: the stream's trim horizon is at least
// h.
func (ck *inputChecker) trimmed(s frames.StreamID, h frames.Position) {
	st := ck.stream(s)
	st.horizon = max(st.horizon, h)
}

func (ck *inputChecker) unknown(offset int64, s frames.StreamID, t wireformat.RecordType, err error) {
	if err != nil {
		// A Block of an unknown codec: its frames are not counted, so the
		// segment's summary cannot be compared.
		ck.seg.damaged = true
	}
	ck.found(&UnknownRecord{Offset: offset, Stream: s, Type: t, Err: err})
}

// summary compares a segment's SegmentSummary at offset with what the
// segment held.
func (ck *inputChecker) summary(offset int64, s frames.StreamID, sum *wireformat.Summary) {
	sg := &ck.seg
	if !sg.active || sg.stream != s || sg.summarised {
		return
	}
	sg.summarised = true
	if sg.damaged {
		return // its frames were not all read: the damage is the finding
	}
	m := &SummaryMismatch{Offset: offset, SegmentOffset: sg.offset, Stream: s, Seq: sg.seq, SegmentID: sg.id, Summary: sum}
	if err := sum.Check(); err != nil {
		m.Fields |= SummaryInvalid
		m.Invalid = err
	}
	if sg.hasID && sum.SegmentID != hex.EncodeToString(sg.id[:]) {
		m.Fields |= SummarySegmentID
	}
	if sum.Seq != sg.seq {
		m.Fields |= SummarySeq
	}
	if start := offset - sum.Length; start != sg.offset && (sg.damagedFrom < 0 || start != sg.damagedFrom) {
		m.Fields |= SummaryLength
	}
	m.Fields |= sg.tally.disagree(sum)
	if m.Fields == 0 {
		m.Fields = sg.tally.disagreeChannels(sum, &m.Channel)
	}
	if m.Fields == 0 {
		return
	}
	m.Segment = sg.tally.counts()
	m.Segment.Length = offset - sg.offset
	ck.found(m)
}

// finish makes the streams' reports.
func (ck *inputChecker) finish() {
	ids := make([]frames.StreamID, 0, len(ck.streams))
	for id := range ck.streams {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, frames.StreamID.Compare)
	ck.rep.Streams = make([]StreamCheck, 0, len(ids))
	for _, id := range ids {
		sc := ck.streams[id].report()
		if !ck.opts.Store && sc.Hidden > 0 {
			ck.found(&TrimmedFrames{Stream: id, Before: sc.TrimmedBelow, Frames: sc.Hidden})
		}
		ck.rep.Streams = append(ck.rep.Streams, sc)
	}
}

// checkSegment is the segment being read, for its summary.
type checkSegment struct {
	active     bool
	offset     int64
	stream     frames.StreamID
	seq        uint64
	id         [8]byte
	hasID      bool
	damaged    bool // damage met since its header, or a block not read
	summarised bool
	tally      checkTally
	// damagedFrom is the start of the damaged range that ended right at
	// its header (one recovered from its HeaderCopy starts there), or -1.
	damagedFrom int64
}

func (sg *checkSegment) start(offset int64, s frames.StreamID, seq uint64, id [8]byte, hasID bool) {
	chans := sg.tally.chans[:0]
	*sg = checkSegment{active: true, offset: offset, stream: s, seq: seq, id: id, hasID: hasID, damagedFrom: -1}
	sg.tally.chans = chans
}

// checkTally is what a segment holds, counted as a writer counts it for
// its summary.
type checkTally struct {
	frames, bytes uint64
	first, last   frames.Position
	ordered       bool
	ended         bool
	chans         []wireformat.ChannelCount // by id
	hit           int
}

func (t *checkTally) add(ch frames.ChannelID, p frames.Position, n int) {
	if t.frames == 0 {
		t.first, t.last, t.ordered = p, p, true
	} else {
		t.ordered = t.ordered && p > t.last
		t.first, t.last = min(t.first, p), max(t.last, p)
	}
	t.frames++
	t.bytes += uint64(n)
	var c *wireformat.ChannelCount
	if t.hit < len(t.chans) && t.chans[t.hit].ID == ch {
		c = &t.chans[t.hit]
	} else {
		i, found := slices.BinarySearchFunc(t.chans, ch, func(c wireformat.ChannelCount, id frames.ChannelID) int { return cmp.Compare(c.ID, id) })
		if !found {
			t.chans = slices.Insert(t.chans, i, wireformat.ChannelCount{ID: ch, First: p, Last: p})
		}
		t.hit = i
		c = &t.chans[i]
	}
	c.Frames++
	c.Bytes += uint64(n)
	c.First, c.Last = min(c.First, p), max(c.Last, p)
}

// disagree returns where summary sum differs from the tally in its totals
// (SummaryCounts to SummaryEnded).
func (t *checkTally) disagree(sum *wireformat.Summary) SummaryFields {
	var why SummaryFields
	if sum.Frames != t.frames || sum.Bytes != t.bytes {
		why |= SummaryCounts
	}
	tf, tl := t.ends()
	if !samePos(sum.First, tf) || !samePos(sum.Last, tl) {
		why |= SummaryPositions
	}
	if sum.Ordered != (t.frames > 0 && t.ordered) {
		why |= SummaryOrdered
	}
	if sum.Ended != t.ended {
		why |= SummaryEnded
	}
	return why
}

// disagreeChannels compares the channels of summary sum with the tally's
// (SummaryChannelCount, SummaryChannel: *channel is the index of the
// first that differs); it is asked only when nothing else disagrees.
func (t *checkTally) disagreeChannels(sum *wireformat.Summary, channel *int) SummaryFields {
	if sum.Channels == nil {
		return 0
	}
	if len(sum.Channels) != len(t.chans) {
		return SummaryChannelCount
	}
	for i, c := range sum.Channels {
		g := t.chans[i]
		if c.ID != g.ID || c.Frames != g.Frames || c.Bytes != g.Bytes || c.First != g.First || c.Last != g.Last {
			*channel = i
			return SummaryChannel
		}
	}
	return 0
}

func (t *checkTally) ends() (*frames.Position, *frames.Position) {
	if t.frames == 0 {
		return nil, nil
	}
	f, l := t.first, t.last
	return &f, &l
}

// counts returns the tally, its channels copied.
func (t *checkTally) counts() SegmentCounts {
	f, l := t.ends()
	return SegmentCounts{Frames: t.frames, Bytes: t.bytes, First: f, Last: l, Ordered: t.frames > 0 && t.ordered, Ended: t.ended, Channels: slices.Clone(t.chans)}
}

func samePos(a, b *frames.Position) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// checkStream is what an input holds of one stream.
type checkStream struct {
	id               frames.StreamID
	segments, frames uint64
	bytes            uint64
	duplicates       uint64
	ended            bool
	// horizon is the highest Trimmed record's (0: none).
	horizon frames.Position
	pos     checkPositions
}

// report returns the stream's StreamCheck; it clips the positions below
// the trim horizon.
func (st *checkStream) report() StreamCheck {
	sc := StreamCheck{Stream: st.id, Segments: st.segments, Frames: st.frames, Bytes: st.bytes, Duplicates: st.duplicates, Ended: st.ended, TrimmedBelow: st.horizon, RunsOverflow: st.pos.overflow}
	if st.horizon > 0 {
		sc.Hidden = st.pos.clip(st.horizon)
	}
	sc.Runs = st.pos.spans
	sc.Gaps, sc.Missing = st.pos.gaps()
	return sc
}

// checkPositions is a set of positions as ascending runs. Positions
// added in order extend the last run; others are found by binary search.
// Past MaxCheckRuns runs it stops listing them (overflow): gaps are then
// not counted, and duplicates only within the runs kept.
type checkPositions struct {
	spans    []PositionRun
	overflow bool
}

// add adds p and reports whether it was there already.
func (ps *checkPositions) add(p frames.Position) bool {
	n := len(ps.spans)
	if n > 0 {
		last := &ps.spans[n-1]
		if p > last.To {
			if p == last.To+1 {
				last.To = p
				return false
			}
			ps.insert(n, p)
			return false
		}
		if p >= last.From {
			return true
		}
	}
	i, _ := slices.BinarySearchFunc(ps.spans, p, func(r PositionRun, p frames.Position) int {
		switch {
		case r.To < p:
			return -1
		case r.From > p:
			return 1
		}
		return 0
	})
	if i < n && ps.spans[i].From <= p && p <= ps.spans[i].To {
		return true
	}
	// ps.spans[i-1].To < p < ps.spans[i].From
	joinLo := i > 0 && ps.spans[i-1].To+1 == p
	joinHi := i < n && ps.spans[i].From == p+1
	switch {
	case joinLo && joinHi:
		ps.spans[i-1].To = ps.spans[i].To
		ps.spans = slices.Delete(ps.spans, i, i+1)
	case joinLo:
		ps.spans[i-1].To = p
	case joinHi:
		ps.spans[i].From = p
	default:
		ps.insert(i, p)
	}
	return false
}

// insert adds the run {p, p} at index i, unless the runs are full: then
// it widens a neighbour to cover p (gaps are no longer counted).
func (ps *checkPositions) insert(i int, p frames.Position) {
	if len(ps.spans) < MaxCheckRuns {
		ps.spans = slices.Insert(ps.spans, i, PositionRun{p, p})
		return
	}
	ps.overflow = true
	if i > 0 {
		ps.spans[i-1].To = max(ps.spans[i-1].To, p)
	} else {
		ps.spans[0].From = min(ps.spans[0].From, p)
	}
}

// clip removes the positions below h, and returns how many there were.
func (ps *checkPositions) clip(h frames.Position) uint64 {
	var n uint64
	i := 0
	for ; i < len(ps.spans) && ps.spans[i].To < h; i++ {
		n += uint64(ps.spans[i].To-ps.spans[i].From) + 1
	}
	ps.spans = ps.spans[i:]
	if len(ps.spans) > 0 && ps.spans[0].From < h {
		n += uint64(h - ps.spans[0].From)
		ps.spans[0].From = h
	}
	return n
}

// gaps returns the number of interior gaps and of positions in them.
func (ps *checkPositions) gaps() (n, missing uint64) {
	for i := 1; i < len(ps.spans); i++ {
		n++
		missing += uint64(ps.spans[i].From - ps.spans[i-1].To - 1)
	}
	return n, missing
}

package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/sources"
	"github.com/ds-telemetry/ds/pkg/wireformat"
)

func checkCommand() *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "verify captures record by record: damage, torn tails, catalog conflicts, summaries",
		UsageText: "ds check [--json] [-q] INPUT…",
		Description: `Reads every record of each input (capture files, directories of captures
as the views take them, stores, or - for stdin), checks every CRC, and
reports what it finds, one line each on stdout:

   FILE: bytes A–B damaged: WHY
          bytes that could not be read (a flipped bit, a bad length,
          bytes that are no DSS), skipped up to the next good record or
          segment; adjacent damaged records make one range
   FILE: torn tail at byte A: WHY
          the input ends inside a record (a writer killed mid-record)
   FILE: stream S: channel N declared as NAME (CONTENT) at byte A and as
          NAME (CONTENT) at byte B
          one channel id of one stream with two descriptors, in segment
          headers or ChannelDeclared records (of this input or, naming it,
          an earlier one)
   FILE: stream S described as (origin O, label L) at byte A and as
          (origin O, label L) at byte B
          one stream with two descriptors in its segment headers
   FILE: byte A: summary of stream S's segment at byte B disagrees with
          its frames: WHAT
          a SegmentSummary whose frame count, payload bytes, first or last
          position, order, StreamEnded flag or per-channel counts differ
          from the frames of its segment, or that names another segment;
          a summary is never trusted over the frames it describes (it is
          compared only for segments read without damage)
   FILE: byte A: record of unknown type T in stream S, skipped
          a record type this ds does not know (a newer writer), or a Block
          of an unknown codec: not damage, its CRC checked
   FILE: tail at byte A still being written
          a live capture (a writer holds it): a record cut short at its
          end is no torn tail
   FILE: stream S: N frames, positions A–B, …
          what the input holds of each stream: frames, payload bytes,
          segments, positions first–last, interior gaps (positions missing
          between the first and the last, the first 10 listed), the trim
          horizon of a store (positions below it are trimmed, not a gap),
          duplicates (positions seen before), and whether a StreamEnded
          record was seen
   FILE: ok: … | FILE: N problems: …
          the input's size, segments, streams and frames

Damage, torn tails, catalog conflicts (of channels or of the stream
itself) and summaries that disagree are problems; gaps, duplicates and streams without a StreamEnded record are
not (a lossy transport, cat a.dss a.dss, a writer still running). -q
prints the problems only, and nothing for a clean input.

A store (ds ingest) is checked as the views read it: each of its streams
is an input named "STORE (NODE#LIFE)", and offsets are those of the
stream as the store gives it out (its chunk files in position order).
Besides DSS captures, ds check reads the seed system's DSQ1 streams and
legacy envelopes (which have no segment summaries).

ds check is a full read: it reads as fast as ds log --cat, in memory
bounded by the reader's (a few MiB) plus a few hundred bytes per stream
and per run of positions (at most 65536 runs per stream are kept: beyond,
gaps are counted no more and the stream line says so).

Exit status: 0 when every input is clean, 3 when any has a problem, 2 when
an input is not a capture or the command line is wrong, 1 when an input
cannot be read (the worst wins).`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: `print one JSON object per line: each finding, then each stream, then ` +
				`the input; each object starts with "input" (the name) and "kind", then by kind: ` +
				`damage: "offset", "end" (the bytes [offset, end)), "records", "error"; ` +
				`torn: "offset", "end", "error"; live: "offset"; ` +
				`unknown: "offset", "stream", "type", "error"; ` +
				`conflict: "stream", "channel_id", "first" and "second", each {"input", "offset", "name", "content"}; ` +
				`stream_conflict: "stream", "first" and "second", each {"input", "offset", "origin", "label"}; ` +
				`summary: "offset", "segment_offset", "stream", "seq", "disagrees" (what, in words), ` +
				`"summary" and "segment", each {"frames", "bytes", "first", "last", "ordered", "ended"}; ` +
				`stream: "stream", "node", "life", "segments", "frames", "bytes", "first", "last", "gaps", "missing", ` +
				`"gap_list" (the first 10, each {"from", "to", "count"}), "gaps_counted", "duplicates", "ended", ` +
				`"trimmed_below", "hidden"; ` +
				`input: "format", "bytes", "segments", "streams", "frames", "problems", "ok" ` +
				`(first, last and trimmed_below are null when there is none)`},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print only the problems: nothing for a clean input"},
		},
		Action: checkAction,
	}
}

func checkAction(ctx context.Context, c *cli.Command) error {
	limitReadMemory()
	root := c.Root()
	names := c.Args().Slice()
	if len(names) == 0 {
		return usagef("no input given (name capture files, or - for stdin)")
	}
	opts := checkOptions{JSON: c.Bool("json"), Quiet: c.Bool("quiet")}
	return runCheck(ctx, opts, names, root.Reader, root.Writer, root.ErrWriter)
}

// checkOptions are ds check's flags.
type checkOptions struct {
	JSON  bool // one JSON object per finding
	Quiet bool // problems only
}

// runCheck checks each named input (see checkCommand) and returns the
// worst outcome: an input that cannot be read (exit 1), one that is no
// capture (exit 2), a problem found (exit 3).
func runCheck(ctx context.Context, opts checkOptions, names []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var o outcome
	bw := bufio.NewWriterSize(stdout, 64<<10)
	out := &checkOut{w: bw, opts: opts}
	catalogs := make(map[checkChannelKey]checkDecl) // across inputs: a stream split over files is one stream
	set := envSources()
	for _, name := range expandNames(set, names, stderr, &o) {
		in, err := set.Open(context.Background(), name, stdin, false)
		if err != nil {
			o.fail(stderr, err)
			continue
		}
		ck := newChecker(in, out, catalogs)
		err = ck.read(ctx)
		in.Close()
		if err != nil {
			if errors.Is(err, context.Canceled) {
				break
			}
			o.fail(stderr, sources.InputError(in.Name, err))
			if errors.Is(err, segments.ErrNotCapture) {
				continue
			}
		}
		ck.finish(err == nil)
		if ck.problems > 0 {
			o.damage()
		}
		if out.err != nil {
			break
		}
	}
	if err := bw.Flush(); err != nil && out.err == nil {
		out.err = err
	}
	if out.err != nil && !isEPIPE(out.err) {
		return out.err
	}
	return o.status()
}

// checkChannelKey is a channel of a stream, for the catalog check.
type checkChannelKey struct {
	stream frames.StreamID
	id     frames.ChannelID
}

// checkDecl is where a channel (or, for channel 0, the stream) was first
// declared, and how.
type checkDecl struct {
	d      frames.ChannelDescriptor
	stream frames.StreamDescriptor
	input  string
	offset int64
}

// checker checks one input: it takes its entries in input order and
// writes findings to out as it meets them.
type checker struct {
	in       *sources.Input
	out      *checkOut
	catalogs map[checkChannelKey]checkDecl
	// conflicts already reported, so that a channel repeated in every
	// header is reported once per pair of descriptors.
	conflicts map[checkConflictKey]bool

	format   segments.InputFormat
	size     int64 // bytes read
	segments uint64
	frames   uint64
	problems uint64

	streams map[frames.StreamID]*checkStream
	last    *checkStream // the stream of the last entry, to skip the map

	seg checkSegment

	// The damaged range being gathered: adjacent ranges make one, and the
	// last may turn out to be a torn tail.
	pending  *segments.CorruptError
	pendingN int
}

type checkConflictKey struct {
	ch   checkChannelKey
	a, b string // the two descriptors, as printed
}

func newChecker(in *sources.Input, out *checkOut, catalogs map[checkChannelKey]checkDecl) *checker {
	return &checker{in: in, out: out, catalogs: catalogs, format: in.Format, streams: make(map[frames.StreamID]*checkStream)}
}

// read reads the input to its end. It returns an I/O error, ctx's error,
// or segments.ErrNotCapture; damage is a finding, not an error.
func (ck *checker) read(ctx context.Context) error {
	cr := &atomicCounter{r: ck.in.R}
	defer func() { ck.size = cr.n.Load() }()
	if ck.in.File == nil {
		// Stdin or a pipe: a DSS capture is told by its magic; anything
		// else goes to the views' importers, which tell the rest.
		br := bufio.NewReaderSize(cr, 64<<10)
		head, err := br.Peek(len(wireformat.Magic))
		switch {
		case len(head) == 0 && err == io.EOF:
			ck.format = segments.InputEmpty
		case err != nil && err != io.EOF:
			return err
		case strings.HasPrefix(wireformat.Magic, string(head)):
			ck.format = segments.InputDSS
		default:
			ck.format = segments.InputDSQ1 // or legacy: its headers say (checkSink)
		}
		return ck.readFormat(ctx, br)
	}
	return ck.readFormat(ctx, cr)
}

func (ck *checker) readFormat(ctx context.Context, r io.Reader) error {
	switch ck.format {
	case segments.InputEmpty:
		return nil
	case segments.InputDSS:
		return ck.readDSS(ctx, r)
	}
	// DSQ1 streams and legacy envelopes: through the views' importers.
	return segments.ScanAny(ctx, r, segments.ScanOptions{}, checkSink{ck})
}

// readDSS reads a DSS capture with a segments.Reader, summaries included.
func (ck *checker) readDSS(ctx context.Context, r io.Reader) error {
	rd := segments.NewReader(r, segments.ReaderOptions{})
	var e segments.Entry
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
		var ce *segments.CorruptError
		if errors.As(err, &ce) {
			ck.damage(ce)
			continue
		}
		if err != nil {
			ck.flushDamage(false)
			return err
		}
		if ck.pending != nil {
			ck.flushDamage(false)
		}
		switch e.Kind {
		case segments.EntrySegment:
			h := e.Header
			ck.header(e.Offset, h.Stream, h.Seq, h.SegmentID, true, h.Channels)
		case segments.EntryChannel:
			ck.channel(e.Offset, *e.Channel)
		case segments.EntryFrame:
			ck.frame(e.Stream, e.Frame)
		case segments.EntryStreamEnded:
			ck.ended(e.Stream)
		case segments.EntrySummary:
			ck.summary(e.Offset, e.Stream, e.Summary)
		case segments.EntryUnknown:
			ck.unknown(e.Offset, e.Stream, e.Type, e.Err)
		case segments.EntryTrimmed:
			ck.trimmed(e.Stream, e.Frame.Position)
		}
	}
}

// checkSink feeds a checker from segments.ScanAny (DSQ1, legacy), which
// gathers adjacent damaged ranges and tells torn tails itself.
type checkSink struct{ ck *checker }

func (s checkSink) Header(h segments.SegmentHeader) {
	switch h.Writer {
	case segments.DSQ1Writer:
		s.ck.format = segments.InputDSQ1
	case segments.LegacyWriter:
		s.ck.format = segments.InputLegacy
	}
	s.ck.header(h.Offset, h.Stream, h.Seq, [8]byte{}, false, h.Channels)
}
func (s checkSink) Channel(d frames.ChannelDescriptor)            { s.ck.channel(-1, d) }
func (s checkSink) Frame(id frames.StreamID, f frames.Frame)      { s.ck.frame(id, f) }
func (s checkSink) Ended(id frames.StreamID)                      { s.ck.ended(id) }
func (s checkSink) Trimmed(id frames.StreamID, h frames.Position) { s.ck.trimmed(id, h) }
func (s checkSink) Damage(offset, end int64, torn bool, err error) {
	s.ck.report(offset, end, 1, torn, err)
}

// damage takes a damaged range from the reader: adjacent ranges are
// gathered into one.
func (ck *checker) damage(ce *segments.CorruptError) {
	ck.seg.damaged = true
	if p := ck.pending; p != nil && p.End == ce.Offset && !errors.Is(ce.Err, io.ErrUnexpectedEOF) {
		p.End = ce.End
		ck.pendingN++
		return
	}
	ck.flushDamage(false)
	ck.pending = &segments.CorruptError{Offset: ce.Offset, End: ce.End, Err: ce.Err}
	ck.pendingN = 1
}

// flushDamage reports the range gathered; atEOF says that the input ended
// right after it (a range cut short by the end is a torn tail).
func (ck *checker) flushDamage(atEOF bool) {
	p := ck.pending
	if p == nil {
		return
	}
	ck.pending = nil
	torn := atEOF && ck.pendingN == 1 && errors.Is(p.Err, io.ErrUnexpectedEOF)
	ck.report(p.Offset, p.End, ck.pendingN, torn, p.Err)
}

// report writes a damaged range [offset, end) of n records, or a torn
// tail; a torn tail of a live capture is no problem.
func (ck *checker) report(offset, end int64, n int, torn bool, err error) {
	ck.seg.damaged = true
	cause := checkSafe(checkCause(err))
	switch {
	case torn && ck.in.Live:
		ck.out.finding(false, checkLive{checkHead{ck.in.Name, "live"}, offset},
			"%s: tail at byte %d still being written (a writer holds the file)", ck.in.Name, offset)
	case torn:
		ck.problems++
		ck.out.finding(true, checkTorn{checkHead{ck.in.Name, "torn"}, offset, end, cause},
			"%s: torn tail at byte %d: %s", ck.in.Name, offset, cause)
	default:
		ck.problems++
		what := cause
		if n > 1 {
			what = fmt.Sprintf("%d records, the first: %s", n, cause)
		}
		ck.out.finding(true, checkDamage{checkHead{ck.in.Name, "damage"}, offset, end, n, cause},
			"%s: bytes %d–%d damaged: %s", ck.in.Name, offset, end-1, what)
	}
}

// checkCause is the text of a reader's error, without the package
// prefixes a user need not read.
func checkCause(err error) string {
	var ce *segments.CorruptError
	if errors.As(err, &ce) {
		err = ce.Err
	}
	s := err.Error()
	for _, p := range []string{"segments: ", "wireformat: ", "views: "} {
		s = strings.TrimPrefix(s, p)
	}
	return s
}

// header starts a segment of the stream desc describes, at offset (hasID:
// id is its segment id, and a summary may follow), and checks the
// descriptor and the catalog.
func (ck *checker) header(offset int64, desc frames.StreamDescriptor, seq uint64, id [8]byte, hasID bool, catalog []frames.ChannelDescriptor) {
	s := desc.Stream
	ck.segments++
	st := ck.stream(s)
	st.segments++
	ck.seg.start(offset, s, seq, id, hasID)
	ck.describe(offset, desc)
	for _, d := range catalog {
		ck.declare(offset, d)
	}
}

// describe checks a stream descriptor, found at offset, against the
// first one of its stream: origin and label.
func (ck *checker) describe(offset int64, desc frames.StreamDescriptor) {
	k := checkChannelKey{stream: desc.Stream} // channel 0: the stream itself
	first, ok := ck.catalogs[k]
	if !ok {
		ck.catalogs[k] = checkDecl{stream: desc, input: ck.in.Name, offset: offset}
		return
	}
	a, b := checkDescribeStream(first.stream), checkDescribeStream(desc)
	if a == b || !ck.newConflict(checkConflictKey{k, a, b}) {
		return
	}
	ck.out.finding(true, checkStreamConflict{
		checkHead: checkHead{ck.in.Name, "stream_conflict"}, Stream: desc.Stream.String(),
		First:  checkStreamPlace{first.input, first.offset, first.stream.Origin.String(), first.stream.Label},
		Second: checkStreamPlace{ck.in.Name, offset, desc.Origin.String(), desc.Label},
	}, "%s: stream %s described as %s %s and as %s at byte %d",
		ck.in.Name, checkSafe(desc.Stream.String()), a, ck.where(first), b, offset)
}

// checkDescribeStream is a stream descriptor as the conflict line shows
// it.
func checkDescribeStream(d frames.StreamDescriptor) string {
	label := "no label"
	if d.Label != nil {
		label = "label " + strconv.Quote(*d.Label)
	}
	return "(origin " + d.Origin.String() + ", " + label + ")"
}

// newConflict counts a conflict as a problem and reports true, unless it
// was met before in this input (a descriptor repeated in every header).
func (ck *checker) newConflict(k checkConflictKey) bool {
	if ck.conflicts[k] {
		return false
	}
	if ck.conflicts == nil {
		ck.conflicts = make(map[checkConflictKey]bool)
	}
	ck.conflicts[k] = true
	ck.problems++
	return true
}

// where says where a first declaration was: in this input, or another.
func (ck *checker) where(first checkDecl) string {
	if first.input != ck.in.Name {
		return fmt.Sprintf("in %s at byte %d", checkSafe(first.input), first.offset)
	}
	return fmt.Sprintf("at byte %d", first.offset)
}

// channel checks a ChannelDeclared record.
func (ck *checker) channel(offset int64, d frames.ChannelDescriptor) {
	ck.stream(d.Stream)
	if offset < 0 {
		offset = ck.seg.offset // an importer: the stream header's place
	}
	ck.declare(offset, d)
}

// declare checks descriptor d, found at offset, against the one declared
// first for its channel.
func (ck *checker) declare(offset int64, d frames.ChannelDescriptor) {
	k := checkChannelKey{d.Stream, d.ID}
	first, ok := ck.catalogs[k]
	if !ok {
		ck.catalogs[k] = checkDecl{d: d, input: ck.in.Name, offset: offset}
		return
	}
	if checkSameDescriptor(first.d, d) {
		return
	}
	a, b := checkDescribe(first.d), checkDescribe(d)
	if !ck.newConflict(checkConflictKey{k, a, b}) {
		return
	}
	ck.out.finding(true, checkConflict{
		checkHead: checkHead{ck.in.Name, "conflict"}, Stream: d.Stream.String(), ChannelID: d.ID,
		First:  checkPlace{first.input, first.offset, first.d.Name, first.d.Content},
		Second: checkPlace{ck.in.Name, offset, d.Name, d.Content},
	}, "%s: stream %s: channel %d declared as %s %s and as %s at byte %d",
		ck.in.Name, checkSafe(d.Stream.String()), d.ID, a, ck.where(first), b, offset)
}

// checkSameDescriptor reports whether two descriptors of one channel id
// agree: name, label and content.
func checkSameDescriptor(a, b frames.ChannelDescriptor) bool {
	return a.Name == b.Name && (a.Label == nil) == (b.Label == nil) && (a.Label == nil || *a.Label == *b.Label) && a.Content.Equal(b.Content)
}

// checkDescribe is a descriptor as the conflict line shows it.
func checkDescribe(d frames.ChannelDescriptor) string {
	s := strconv.Quote(d.Name) + " (" + d.Content.String()
	if d.Label != nil {
		s += ", label " + strconv.Quote(*d.Label)
	}
	return s + ")"
}

// stream returns the state of stream s, adding it.
func (ck *checker) stream(s frames.StreamID) *checkStream {
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

func (ck *checker) frame(s frames.StreamID, f frames.Frame) {
	ck.frames++
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

func (ck *checker) ended(s frames.StreamID) {
	ck.stream(s).ended = true
	if ck.seg.active && ck.seg.stream == s {
		ck.seg.tally.ended = true
	}
}

// trimmed takes a Trimmed record: the stream's trim horizon is at least
// h.
func (ck *checker) trimmed(s frames.StreamID, h frames.Position) {
	st := ck.stream(s)
	st.horizon = max(st.horizon, h)
}

func (ck *checker) unknown(offset int64, s frames.StreamID, t wireformat.RecordType, err error) {
	if err != nil {
		// A Block of an unknown codec: its frames are not counted, so the
		// segment's summary cannot be compared.
		ck.seg.damaged = true
	}
	what := t.String()
	cause := ""
	if err != nil {
		cause = checkCause(err)
		what += " (" + checkSafe(cause) + ")"
	}
	ck.out.finding(false, checkUnknown{checkHead{ck.in.Name, "unknown"}, offset, s.String(), t.String(), cause},
		"%s: byte %d: record of unknown type %s in stream %s, skipped", ck.in.Name, offset, what, checkSafe(s.String()))
}

// summary compares a segment's SegmentSummary at offset with what the
// segment held.
func (ck *checker) summary(offset int64, s frames.StreamID, sum *wireformat.Summary) {
	sg := &ck.seg
	if !sg.active || sg.stream != s || sg.summarised {
		return
	}
	sg.summarised = true
	if sg.damaged {
		return // its frames were not all read: the damage is the finding
	}
	var why []string
	if err := sum.Check(); err != nil {
		why = append(why, "it contradicts itself ("+checkSafe(checkCause(err))+")")
	}
	if sg.hasID && sum.SegmentID != hex.EncodeToString(sg.id[:]) {
		why = append(why, fmt.Sprintf("segment id %s, the header's %x", checkSafe(sum.SegmentID), sg.id))
	}
	if sum.Seq != sg.seq {
		why = append(why, fmt.Sprintf("sequence number %d, the header's %d", sum.Seq, sg.seq))
	}
	if offset-sum.Length != sg.offset {
		why = append(why, fmt.Sprintf("length %d bytes, the segment's %d", sum.Length, offset-sg.offset))
	}
	why = append(why, sg.tally.disagree(sum)...)
	if len(why) == 0 {
		return
	}
	ck.problems++
	ck.out.finding(true, checkSummaryFinding{
		checkHead: checkHead{ck.in.Name, "summary"}, Offset: offset, SegmentOffset: sg.offset,
		Stream: s.String(), Seq: sg.seq, Disagrees: why,
		Summary: checkCounts{sum.Frames, sum.Bytes, sum.First, sum.Last, sum.Ordered, sum.Ended},
		Segment: sg.tally.counts(),
	}, "%s: byte %d: summary of stream %s's segment at byte %d disagrees with its frames: %s",
		ck.in.Name, offset, checkSafe(s.String()), sg.offset, strings.Join(why, "; "))
}

// finish reports the streams and the input (read: the input was read to
// its end).
func (ck *checker) finish(read bool) {
	ids := make([]frames.StreamID, 0, len(ck.streams))
	for id := range ck.streams {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, frames.StreamID.Compare)
	for _, id := range ids {
		ck.streams[id].report(ck.in.Name, ck.out)
	}
	fin := checkInput{checkHead{ck.in.Name, "input"}, ck.format.String(), ck.size, ck.segments, len(ck.streams), ck.frames, ck.problems, ck.problems == 0 && read}
	desc := fmt.Sprintf("%d bytes, %s, %s, %s", ck.size, checkNouns(ck.segments, "segment"), checkNouns(uint64(len(ck.streams)), "stream"), checkNouns(ck.frames, "frame"))
	switch {
	case !read:
		ck.out.finding(true, fin, "%s: not read to its end: %s", ck.in.Name, desc)
	case ck.problems == 0:
		ck.out.finding(false, fin, "%s: ok: %s", ck.in.Name, desc)
	default:
		ck.out.finding(true, fin, "%s: %s: %s", ck.in.Name, checkNouns(ck.problems, "problem"), desc)
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
}

func (sg *checkSegment) start(offset int64, s frames.StreamID, seq uint64, id [8]byte, hasID bool) {
	chans := sg.tally.chans[:0]
	*sg = checkSegment{active: true, offset: offset, stream: s, seq: seq, id: id, hasID: hasID}
	sg.tally.chans = chans
}

// checkTally is what a segment holds, counted as a writer counts it for
// its summary.
type checkTally struct {
	frames, bytes uint64
	first, last   frames.Position
	ordered       bool
	ended         bool
	chans         []checkChanTally // by id
	hit           int
}

type checkChanTally struct {
	id            frames.ChannelID
	frames, bytes uint64
	first, last   frames.Position
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
	var c *checkChanTally
	if t.hit < len(t.chans) && t.chans[t.hit].id == ch {
		c = &t.chans[t.hit]
	} else {
		i, found := slices.BinarySearchFunc(t.chans, ch, func(c checkChanTally, id frames.ChannelID) int { return cmp.Compare(c.id, id) })
		if !found {
			t.chans = slices.Insert(t.chans, i, checkChanTally{id: ch, first: p, last: p})
		}
		t.hit = i
		c = &t.chans[i]
	}
	c.frames++
	c.bytes += uint64(n)
	c.first, c.last = min(c.first, p), max(c.last, p)
}

// disagree lists where summary sum differs from the tally.
func (t *checkTally) disagree(sum *wireformat.Summary) []string {
	var why []string
	if sum.Frames != t.frames || sum.Bytes != t.bytes {
		why = append(why, fmt.Sprintf("%s of %d bytes, the segment holds %s of %d bytes", checkNouns(sum.Frames, "frame"), sum.Bytes, checkNouns(t.frames, "frame"), t.bytes))
	}
	tf, tl := t.ends()
	if !checkSamePos(sum.First, tf) || !checkSamePos(sum.Last, tl) {
		why = append(why, fmt.Sprintf("positions %s, the segment's %s", checkSpan(sum.First, sum.Last), checkSpan(tf, tl)))
	}
	if sum.Ordered != (t.frames > 0 && t.ordered) {
		why = append(why, fmt.Sprintf("ordered %v, the segment's frames %s", sum.Ordered, map[bool]string{true: "are in order", false: "are not in order"}[t.frames > 0 && t.ordered]))
	}
	if sum.Ended != t.ended {
		why = append(why, fmt.Sprintf("ended %v, the segment %s a StreamEnded record", sum.Ended, map[bool]string{true: "holds", false: "holds no"}[t.ended]))
	}
	if sum.Channels != nil {
		// Compared only when the totals agree: otherwise they say nothing
		// more.
		if len(why) > 0 {
			return why
		}
		if len(sum.Channels) != len(t.chans) {
			return append(why, fmt.Sprintf("%s counted, the segment's frames are of %s", checkNouns(uint64(len(sum.Channels)), "channel"), checkNouns(uint64(len(t.chans)), "channel")))
		}
		for i, c := range sum.Channels {
			g := t.chans[i]
			if c.ID != g.id || c.Frames != g.frames || c.Bytes != g.bytes || c.First != g.first || c.Last != g.last {
				why = append(why, fmt.Sprintf("channel %d: %s of %d bytes at %d–%d, the segment's channel %d: %s of %d bytes at %d–%d",
					c.ID, checkNouns(c.Frames, "frame"), c.Bytes, c.First, c.Last, g.id, checkNouns(g.frames, "frame"), g.bytes, g.first, g.last))
				break
			}
		}
	}
	return why
}

func (t *checkTally) ends() (*frames.Position, *frames.Position) {
	if t.frames == 0 {
		return nil, nil
	}
	f, l := t.first, t.last
	return &f, &l
}

func (t *checkTally) counts() checkCounts {
	f, l := t.ends()
	return checkCounts{t.frames, t.bytes, f, l, t.frames > 0 && t.ordered, t.ended}
}

func checkSamePos(a, b *frames.Position) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

func checkSpan(a, b *frames.Position) string {
	if a == nil || b == nil {
		return "none"
	}
	return fmt.Sprintf("%d–%d", *a, *b)
}

// checkStream is what an input holds of one stream.
type checkStream struct {
	id               frames.StreamID
	segments, frames uint64
	bytes            uint64
	duplicates       uint64
	ended            bool
	// horizon is the highest Trimmed record's: the store the input was
	// read from deleted the frames below it (0: none). Positions below it
	// are no gap, and frames left there are hidden from views.
	horizon frames.Position
	pos     checkPositions
}

// checkListedGaps is how many gaps a stream line lists (the JSON
// gap_list too); the counts cover them all.
const checkListedGaps = 10

func (st *checkStream) report(input string, out *checkOut) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: stream %s: %s", input, checkSafe(st.id.String()), checkNouns(st.frames, "frame"))
	js := checkStreamJSON{checkHead: checkHead{input, "stream"}, Stream: st.id.String(), Node: string(st.id.Node), Life: uint64(st.id.Life),
		Segments: st.segments, Frames: st.frames, Bytes: st.bytes, Duplicates: st.duplicates, Ended: st.ended, GapsCounted: !st.pos.overflow, GapList: []checkGap{}}
	trimmed := ""
	if st.horizon > 0 {
		h := st.horizon
		js.TrimmedBelow = &h
		js.Hidden = st.pos.clip(h)
		trimmed = fmt.Sprintf(", trimmed below %d", h)
		if js.Hidden > 0 {
			trimmed += fmt.Sprintf(" (%s below it, hidden)", checkNouns(js.Hidden, "position"))
		}
	}
	spans := st.pos.spans
	if len(spans) > 0 {
		first, last := spans[0].from, spans[len(spans)-1].to
		js.First, js.Last = &first, &last
		fmt.Fprintf(&b, " of %d bytes in %s, ", st.bytes, checkNouns(st.segments, "segment"))
		b.WriteString(positionRun(first, last))
		gaps, missing := st.pos.gaps()
		js.Gaps, js.Missing = gaps, missing
		switch {
		case st.pos.overflow:
			b.WriteString(", gaps not counted (too many runs of positions)")
		case gaps == 0:
			b.WriteString(", no gap")
		default:
			fmt.Fprintf(&b, ", %s (%s missing:", checkNouns(gaps, "gap"), checkNouns(missing, "position"))
			for i, sp := range spans[1:] {
				if i == checkListedGaps {
					fmt.Fprintf(&b, " …")
					break
				}
				from, to := spans[i].to+1, sp.from-1
				js.GapList = append(js.GapList, checkGap{from, to, uint64(to-from) + 1})
				if i > 0 {
					b.WriteByte(',')
				}
				if from == to {
					fmt.Fprintf(&b, " %d", from)
				} else {
					fmt.Fprintf(&b, " %d–%d", from, to)
				}
			}
			b.WriteByte(')')
		}
	} else {
		fmt.Fprintf(&b, " in %s", checkNouns(st.segments, "segment"))
	}
	b.WriteString(trimmed)
	if st.duplicates > 0 {
		fmt.Fprintf(&b, ", %s (positions seen before)", checkNouns(st.duplicates, "duplicate"))
	}
	if st.ended {
		b.WriteString(", ended")
	} else {
		b.WriteString(", not ended")
	}
	out.finding(false, js, "%s", b.String())
}

// checkPositions is a set of positions as ascending runs. Positions
// added in order extend the last run; others are found by binary search.
// Past checkMaxRuns runs it stops listing them (overflow): gaps are then
// not counted, and duplicates only within the runs kept.
type checkPositions struct {
	spans    []checkRun
	overflow bool
}

type checkRun struct{ from, to frames.Position } // inclusive

const checkMaxRuns = 1 << 16

// add adds p and reports whether it was there already.
func (ps *checkPositions) add(p frames.Position) bool {
	n := len(ps.spans)
	if n > 0 {
		last := &ps.spans[n-1]
		if p > last.to {
			if p == last.to+1 {
				last.to = p
				return false
			}
			ps.insert(n, p)
			return false
		}
		if p >= last.from {
			return true
		}
	}
	i, _ := slices.BinarySearchFunc(ps.spans, p, func(r checkRun, p frames.Position) int {
		switch {
		case r.to < p:
			return -1
		case r.from > p:
			return 1
		}
		return 0
	})
	if i < n && ps.spans[i].from <= p && p <= ps.spans[i].to {
		return true
	}
	// ps.spans[i-1].to < p < ps.spans[i].from
	joinLo := i > 0 && ps.spans[i-1].to+1 == p
	joinHi := i < n && ps.spans[i].from == p+1
	switch {
	case joinLo && joinHi:
		ps.spans[i-1].to = ps.spans[i].to
		ps.spans = slices.Delete(ps.spans, i, i+1)
	case joinLo:
		ps.spans[i-1].to = p
	case joinHi:
		ps.spans[i].from = p
	default:
		ps.insert(i, p)
	}
	return false
}

// insert adds the run {p, p} at index i, unless the runs are full: then
// it widens a neighbour to cover p (gaps are no longer counted).
func (ps *checkPositions) insert(i int, p frames.Position) {
	if len(ps.spans) < checkMaxRuns {
		ps.spans = slices.Insert(ps.spans, i, checkRun{p, p})
		return
	}
	ps.overflow = true
	if i > 0 {
		ps.spans[i-1].to = max(ps.spans[i-1].to, p)
	} else {
		ps.spans[0].from = min(ps.spans[0].from, p)
	}
}

// clip removes the positions below h, and returns how many there were.
func (ps *checkPositions) clip(h frames.Position) uint64 {
	var n uint64
	i := 0
	for ; i < len(ps.spans) && ps.spans[i].to < h; i++ {
		n += uint64(ps.spans[i].to-ps.spans[i].from) + 1
	}
	ps.spans = ps.spans[i:]
	if len(ps.spans) > 0 && ps.spans[0].from < h {
		n += uint64(h - ps.spans[0].from)
		ps.spans[0].from = h
	}
	return n
}

// gaps returns the number of interior gaps and of positions in them.
func (ps *checkPositions) gaps() (n, missing uint64) {
	for i := 1; i < len(ps.spans); i++ {
		n++
		missing += uint64(ps.spans[i].from - ps.spans[i-1].to - 1)
	}
	return n, missing
}

// checkOut writes ds check's findings: text lines, or JSON objects.
type checkOut struct {
	w    *bufio.Writer
	opts checkOptions
	err  error // the first write error
}

// finding writes one finding: js with --json, else the line of format
// and args. A finding that is no problem is left out with -q.
func (o *checkOut) finding(problem bool, js any, format string, args ...any) {
	if o.err != nil || o.opts.Quiet && !problem {
		return
	}
	var err error
	if o.opts.JSON {
		var b []byte
		if b, err = json.Marshal(js); err == nil {
			b = append(b, '\n')
			_, err = o.w.Write(b)
		}
	} else {
		line := fmt.Sprintf(format, args...)
		// The input's name leads every line: made safe for a terminal as
		// the rest (names, errors and ids taken from input are quoted by
		// checkSafe where they are put in).
		if name, ok := args[0].(string); ok && strings.HasPrefix(line, name) {
			line = checkSafe(name) + line[len(name):]
		}
		_, err = fmt.Fprintln(o.w, line)
	}
	if err != nil {
		o.err = err
	}
}

// The JSON shapes of the findings (see the --json usage). checkHead
// leads each.
type checkHead struct {
	Input string `json:"input"`
	Kind  string `json:"kind"`
}

type checkDamage struct {
	checkHead
	Offset  int64  `json:"offset"`
	End     int64  `json:"end"`
	Records int    `json:"records"`
	Error   string `json:"error"`
}

type checkTorn struct {
	checkHead
	Offset int64  `json:"offset"`
	End    int64  `json:"end"`
	Error  string `json:"error"`
}

type checkLive struct {
	checkHead
	Offset int64 `json:"offset"`
}

type checkUnknown struct {
	checkHead
	Offset int64  `json:"offset"`
	Stream string `json:"stream"`
	Type   string `json:"type"`
	Error  string `json:"error"`
}

type checkPlace struct {
	Input   string                `json:"input"`
	Offset  int64                 `json:"offset"`
	Name    string                `json:"name"`
	Content frames.ChannelContent `json:"content"`
}

type checkConflict struct {
	checkHead
	Stream    string           `json:"stream"`
	ChannelID frames.ChannelID `json:"channel_id"`
	First     checkPlace       `json:"first"`
	Second    checkPlace       `json:"second"`
}

type checkStreamPlace struct {
	Input  string  `json:"input"`
	Offset int64   `json:"offset"`
	Origin string  `json:"origin"`
	Label  *string `json:"label"`
}

type checkStreamConflict struct {
	checkHead
	Stream string           `json:"stream"`
	First  checkStreamPlace `json:"first"`
	Second checkStreamPlace `json:"second"`
}

type checkCounts struct {
	Frames  uint64           `json:"frames"`
	Bytes   uint64           `json:"bytes"`
	First   *frames.Position `json:"first"`
	Last    *frames.Position `json:"last"`
	Ordered bool             `json:"ordered"`
	Ended   bool             `json:"ended"`
}

type checkSummaryFinding struct {
	checkHead
	Offset        int64       `json:"offset"`
	SegmentOffset int64       `json:"segment_offset"`
	Stream        string      `json:"stream"`
	Seq           uint64      `json:"seq"`
	Disagrees     []string    `json:"disagrees"`
	Summary       checkCounts `json:"summary"`
	Segment       checkCounts `json:"segment"`
}

type checkGap struct {
	From  frames.Position `json:"from"`
	To    frames.Position `json:"to"`
	Count uint64          `json:"count"`
}

type checkStreamJSON struct {
	checkHead
	Stream      string           `json:"stream"`
	Node        string           `json:"node"`
	Life        uint64           `json:"life"`
	Segments    uint64           `json:"segments"`
	Frames      uint64           `json:"frames"`
	Bytes       uint64           `json:"bytes"`
	First       *frames.Position `json:"first"`
	Last        *frames.Position `json:"last"`
	Gaps        uint64           `json:"gaps"`
	Missing     uint64           `json:"missing"`
	GapList     []checkGap       `json:"gap_list"`
	GapsCounted bool             `json:"gaps_counted"`
	Duplicates  uint64           `json:"duplicates"`
	Ended       bool             `json:"ended"`
	// TrimmedBelow is the trim horizon (a Trimmed record), null without;
	// Hidden counts the positions left below it.
	TrimmedBelow *frames.Position `json:"trimmed_below"`
	Hidden       uint64           `json:"hidden"`
}

type checkInput struct {
	checkHead
	Format   string `json:"format"`
	Bytes    int64  `json:"bytes"`
	Segments uint64 `json:"segments"`
	Streams  int    `json:"streams"`
	Frames   uint64 `json:"frames"`
	Problems uint64 `json:"problems"`
	OK       bool   `json:"ok"`
}

// checkNouns returns "1 frame", "2 frames".
func checkNouns(n uint64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.FormatUint(n, 10) + " " + what + "s"
}

// checkSafe returns s, or s quoted when it has control characters or bytes
// that are not UTF-8 (a name or an error taken from input), so that no
// capture sends escape sequences to the reader's terminal.
func checkSafe(s string) string {
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) && r != ' ' {
			return strconv.Quote(s)
		}
	}
	return s
}

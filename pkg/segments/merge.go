package segments

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// MergeInput is one capture that [Merge] reads: Name names it in reports
// and errors (a file name, or "-"), Open opens it when its turn comes.
// Merge closes what Open returns.
type MergeInput struct {
	Name string
	Open func() (io.ReadCloser, error)
	// Store says that the input is a store's read-out
	// ([Store.OpenStream]): its Trimmed records hide the frames below
	// them ([Assembler.Trim]). A capture file's hide nothing
	// ([Assembler.TrimCapture]): its frames below are merged, and the
	// output keeps the record.
	Store bool
}

// MergeOptions configures [Merge]. The zero value is valid: every stream
// and channel, plain records, the default memory budget, nothing reported
// as it is found.
type MergeOptions struct {
	// Compression of the output (CompressNone for the zero value).
	Compression Compression
	// SegmentSize is the output's segment size in bytes
	// (WriterOptions.SegmentSize): 0 means DefaultSegmentSize.
	SegmentSize int64
	// Memory is what the assembler may hold in memory, in bytes, before it
	// spills held frames to temporary files (AssemblerOptions.Memory): 0
	// means DefaultMemory. Inputs in order hold nothing.
	Memory int
	// TempDir is where spill files are made (AssemblerOptions.TempDir):
	// "" means os.TempDir().
	TempDir string
	// Select, if not nil, says which streams are merged, from their
	// descriptor in the first segment header read of each: the others are
	// skipped whole (their frames are never assembled). nil merges all.
	Select func(frames.StreamDescriptor) bool
	// Channels, if not nil, says which channels of a selected stream are
	// written, from their descriptors: frames of the others, and frames
	// of channels without a descriptor, are left out after assembly (so
	// that they still count as present: what is left out is no gap). The
	// output's catalog holds only the channels selected. nil writes all.
	Channels func(frames.StreamID, frames.ChannelDescriptor) bool
	// Frame, if not nil, is asked about every frame of a selected stream
	// in position order, after assembly and before Channels, with its
	// channel's descriptor (nil when the stream's catalog lacks it): false
	// leaves the frame out (ds merge --positions, --since, --until). A
	// stream whose last frames were left out by Frame gets no StreamEnded
	// record: its end is not in the output. The payload is valid during
	// the call only.
	Frame func(s frames.StreamID, d *frames.ChannelDescriptor, f frames.Frame) bool
	// Keep, if not nil, makes the output's segment summaries keep copies
	// of frames as a producer's would (WriterOptions.Keep), so that ds
	// info reads the output from its summaries: it is given a stream's
	// output catalog whenever that changes and returns the Keep function
	// for the stream's frames. nil keeps none.
	Keep func(catalog []frames.ChannelDescriptor) func(frames.ChannelID, []byte) Keep
	// WriterID is the writer identity of the output's headers: "" means
	// DefaultWriterID.
	WriterID string
	// Rand is the source of the output's segment ids (WriterOptions.Rand):
	// nil means crypto/rand. With a deterministic source the same inputs
	// give the same output bytes.
	Rand io.Reader
	// Context, if not nil, stops the merge when it is done: Merge then
	// returns its error (checked between batches of about 1 MiB).
	Context context.Context
	// Progress, if not nil, is called as input is read with the bytes
	// read so far, of all inputs together, from the goroutine that called
	// Merge.
	Progress func(bytesRead int64)
	// Warn, if not nil, is called with each finding as it is made, from
	// the goroutine that called Merge: an *[InputDamage] for a damaged
	// range of an input (reported once its extent is known) and a
	// *[ConflictError] for a different payload met at a stored position.
	Warn func(error)
	// Gap, if not nil, is called with each interior gap of a stream (the
	// positions that no input holds), as it is found: after the frames
	// before it (ds recover lists them).
	Gap func(frames.StreamID, Gap)
}

// MergeReport says what [Merge] did.
type MergeReport struct {
	// Inputs is the number of inputs read; Streams the number of streams
	// written.
	Inputs, Streams int
	// Frames counts the frames written, conflicting copies excepted.
	Frames uint64
	// Duplicates counts copies of stored positions dropped (identical, or
	// Uncompared); Uncompared those whose earlier copy could no longer be
	// compared (see [Assembler]).
	Duplicates, Uncompared uint64
	// Conflicts counts different payloads met at stored positions: each is
	// written after the frame that won, as a second Frame record of that
	// position.
	Conflicts uint64
	// Gaps counts interior gaps of the streams written; Missing the
	// positions in them. Gaps are absences: nothing is written for them.
	Gaps, Missing uint64
	// Trimmed counts frames dropped because they lie below their stream's
	// trim horizon (a Trimmed record in an input).
	Trimmed uint64
	// Unknown counts records of types this reader does not know, skipped
	// and not copied to the output.
	Unknown uint64
	// SpilledFrames and SpilledBytes count what the assembler wrote to
	// temporary files (frames out of order beyond MergeOptions.Memory).
	SpilledFrames uint64
	SpilledBytes  int64
	// Damaged says that some input had damage or a torn tail.
	Damaged bool
	// Damage lists the damaged ranges of the inputs, adjacent ranges as
	// one, in the order found: at most maxMergeDamage; DamageCount counts
	// them all.
	Damage      []InputDamage
	DamageCount int
	// Repaired counts, of them, the segment headers repaired from their
	// copies ([ErrHeaderRepaired]): damage that cost no frame.
	Repaired int
}

// maxMergeDamage bounds the damaged ranges a [MergeReport] keeps.
const maxMergeDamage = 100

// InputDamage is a damaged byte range [Offset, End) of an input of
// [Merge]: what a reader could not read there (Err, the first range's
// cause when adjacent ranges are reported as one; Records counts them).
// Torn says that it is the input's tail, cut short by its end (a writer
// that stopped mid-record).
type InputDamage struct {
	Input       string
	Offset, End int64
	Torn        bool
	Records     int
	Err         error
}

// Error names the input and the range, in the words of ds's views.
func (d *InputDamage) Error() string {
	cause := d.Err
	if d.Records > 1 {
		cause = fmt.Errorf("%v, and %d more damaged records right after it", d.Err, d.Records-1)
	}
	if d.Torn {
		return fmt.Sprintf("%s: torn tail at byte %d (the writer stopped mid-record): %v", d.Input, d.Offset, cause)
	}
	if d.Records == 1 && errors.Is(d.Err, ErrHeaderRepaired) {
		return fmt.Sprintf("%s: bytes %d–%d damaged: %v", d.Input, d.Offset, d.End-1, cause)
	}
	return fmt.Sprintf("%s: bytes %d–%d unreadable, skipped: %v", d.Input, d.Offset, d.End-1, cause)
}

// Unwrap returns the cause.
func (d *InputDamage) Unwrap() error { return d.Err }

// ConflictError reports a frame whose position was already stored with a
// different payload (ARCHITECTURE.md §6: first wins, and the conflict is
// reported): found in Input ("" when found at the end, among frames held
// back), of channel Channel.
type ConflictError struct {
	Input    string
	Stream   frames.StreamID
	Position frames.Position
	Channel  frames.ChannelID
}

// Error names the input, stream and position.
func (e *ConflictError) Error() string {
	in := ""
	if e.Input != "" {
		in = e.Input + ": "
	}
	return fmt.Sprintf("%sstream %s, position %d: a different payload for a frame already merged (channel %d); the first copy is kept, this one is written after it", in, e.Stream, e.Position, e.Channel)
}

// CatalogConflictError is the error of [Merge] when two inputs (or two
// segments of one) describe the same stream or channel differently: the
// output could not say which is right. First and Second name the inputs;
// Channel is 0 for the stream descriptor itself.
type CatalogConflictError struct {
	Stream        frames.StreamID
	Channel       frames.ChannelID
	First, Second string
	What          string // the two descriptions, for the message
}

// Error names the stream, the channel and both inputs.
func (e *CatalogConflictError) Error() string {
	what := "stream " + e.Stream.String()
	if e.Channel != 0 {
		what += fmt.Sprintf(", channel %d", e.Channel)
	}
	return fmt.Sprintf("%s is described differently by %s and %s: %s", what, e.First, e.Second, e.What)
}

// ErrNotDSS is the cause of [Merge]'s error for an input that holds no DSS
// segment and does not start like one.
var ErrNotDSS = errors.New("not a DSS capture (ds merge reads DSS captures only)")

// MergeCompare is how many of the last positions emitted of each stream
// keep a payload hash, so that a copy from a later input is told identical
// or conflicting (AssemblerOptions.Compare): 16384 positions, 384 KiB per
// stream, within the assembler's history budget.
const MergeCompare = 1 << 14

// Merge reads inputs, in order, and writes to w one canonical capture of
// every stream they hold (ds merge; ARCHITECTURE.md §5, issue "merge"). Each
// input must be a DSS capture (a concatenation of segments of any
// streams); one that is not is an error wrapping [ErrNotDSS].
//
// The frames of each (node, life) stream are rebuilt by position, whatever
// the inputs' order, by one [Assembler] (header sequence numbers, frames
// and Trimmed records go to it), and written in position order:
// duplicates (the same identity, position in its stream, met again) are
// written once, the first copy winning; a different payload met at a
// stored position is a conflict, reported through Warn and written as a
// second Frame record of that position after the first, so that readers
// of the output see it too; lives never merge. Gaps are not written: they
// are absences, counted in the report (and passed to Gap). Each stream's
// catalog is the union of its inputs' catalogs; a channel (or the stream
// itself) described differently by two inputs is a *[CatalogConflictError]
// naming both. A stream that any input ended (a StreamEnded record) is
// ended in the output after its last frame; a stream trimmed by a store
// (a Trimmed record) carries the highest horizon read. Read from a store
// (MergeInput.Store), its frames below the horizon are dropped from then
// on (frames below it that were written before the record was read, from
// an input read earlier, stay in the output, before the record); a
// capture file's Trimmed record hides nothing (ds-format(5) "Trimmed"):
// its frames below are merged, and the record is not written out. A
// stream whose head
// is missing from every input (its first segment read has a sequence
// number above 0), or whose first frames the filters left out, starts
// with a header of sequence number 1, so that readers of the output know
// its earlier frames are elsewhere.
//
// The output is written by one [Writer] at a time: when the stream
// written changes, the current one's segment is ended with its summary
// ([Writer.EndSegment]; with its StreamEnded record when an input ended
// the stream), so segments never mix streams. A Block record of an input
// whose frames are all written as they are read, in order, is copied to
// the output as it is ([Writer.CopyBlock]) instead of being compressed
// again: inputs in position order (one writer's captures, split or whole,
// and captures of different streams) are merged at about the cost of
// reading them.
//
// Memory: inputs in position order stream through in bounded memory,
// about 20 MiB of heap whatever their size (the reader's buffers, a few
// MiB of batches read ahead, the writer's blocks, the assembler's payload
// hashes); frames out of order are held by the assembler within
// opts.Memory and spilled to temporary files beyond. Each stream costs
// about 700 bytes besides (its catalog, the assembler's state and
// hashes), for the whole merge. The inputs are read and decoded in a
// goroutine ahead of the assembly.
//
// Damage does not stop a merge: each damaged range is reported (Warn, and
// MergeReport.Damage) and everything readable is merged. An error opening
// or reading an input, a catalog conflict, an error writing to w or one of
// the assembler's spill files ends the merge with that error; what was
// written to w until then is not a complete capture and should be thrown
// away. Merge does not close w.
func Merge(inputs []MergeInput, w io.Writer, opts MergeOptions) (MergeReport, error) {
	m := &merger{
		opts:    opts,
		inputs:  inputs,
		out:     w,
		streams: make(map[frames.StreamID]*mergeStream),
		cur:     -1,
	}
	m.asm = NewAssemblerWith(AssemblerOptions{Memory: opts.Memory, TempDir: opts.TempDir, Compare: MergeCompare}, m.item)
	err := m.run()
	m.report.SpilledFrames, m.report.SpilledBytes = m.asm.Spilled()
	if cerr := m.asm.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("segments: merge: spill: %w", cerr)
	}
	m.report.Inputs = len(inputs)
	return m.report, err
}

// merger is the state of one [Merge].
type merger struct {
	opts    MergeOptions
	inputs  []MergeInput
	out     io.Writer
	asm     *Assembler
	streams map[frames.StreamID]*mergeStream
	order   []*mergeStream // in order of first appearance
	last    *mergeStream   // of the last item, to skip the map lookup
	report  MergeReport
	err     error // the first error: the merge stops

	cur int // index of the input being fed, -1 at the end

	// The output: the writer of one stream at a time.
	w      *Writer
	wst    *mergeStream
	keepFn func(frames.ChannelID, []byte) Keep

	spare *Writer // the writer, between streams

	copy blockCopy
}

// blockCopy follows the frames of an input's Block record: when each is
// written as it is added, in order, and nothing else is written among
// them, the output's block holds exactly the input block's records, and
// the input block's compressed body is copied ([Writer.CopyBlock]) instead
// of compressing them again. Inputs in order, the common case, are thus
// merged without recompression.
type blockCopy struct {
	on     bool // every frame written since the block started was its own
	stream frames.StreamID
	n      int             // frames written
	adding bool            // a frame of the block is being added
	pos    frames.Position // its position
}

// mergeStream is what a merge knows of one stream.
type mergeStream struct {
	id      frames.StreamID
	desc    frames.StreamDescriptor
	from    int  // the input whose header described it first
	skip    bool // not selected
	catalog mergeCatalog
	ended   bool
	trimmed frames.Position // the highest trim horizon read (0: none)
	trimOut frames.Position // the horizon written to the output
	opened  bool            // a writer was made for the stream
	seq     uint64          // the next segment's sequence number, once opened
	head    bool            // ItemStart: the head is missing
	cutHead bool            // frames were left out before the first written
	cutTail bool            // Frame left out frames after the last written
	written uint64          // frames written
	lo, hi  frames.Position // the first and last positions written
	endOut  bool            // a StreamEnded record is written after the last frame
	// conflicts holds conflicting copies found while their first copy was
	// still held (not written yet): they are written right after it.
	conflicts map[frames.Position][]frames.Frame
}

// mergeCatalog is a stream's catalog: the descriptors of the first header
// that declared its channels, kept as that header's reader decoded them
// (a 16 MiB header's 120 000 channels are not copied), and those declared
// after them.
type mergeCatalog struct {
	base     []frames.ChannelDescriptor // in the order of ids, clipped
	baseFrom int                        // the input whose header base is
	baseOff  []bool                     // base's channels not written (nil: none)
	more     []mergeChannel             // the others, in the order of ids
	hit      int                        // index in more of the last lookup
}

// mergeChannel is a channel of a stream's catalog and the input that
// described it first.
type mergeChannel struct {
	d    frames.ChannelDescriptor
	from int
	sel  bool // written (Channels)
}

// mergeRef is a channel found in a mergeCatalog.
type mergeRef struct {
	d    *frames.ChannelDescriptor
	from int  // the input that described it first
	sel  bool // written (Channels)
}

// lookup returns the channel id's entry, or false.
func (c *mergeCatalog) lookup(id frames.ChannelID) (mergeRef, bool) {
	if i, found := slices.BinarySearchFunc(c.base, id, func(d frames.ChannelDescriptor, id frames.ChannelID) int { return cmp.Compare(d.ID, id) }); found {
		return mergeRef{d: &c.base[i], from: c.baseFrom, sel: c.baseOff == nil || !c.baseOff[i]}, true
	}
	if c.hit < len(c.more) && c.more[c.hit].d.ID == id {
		e := &c.more[c.hit]
		return mergeRef{d: &e.d, from: e.from, sel: e.sel}, true
	}
	i, found := slices.BinarySearchFunc(c.more, id, func(c mergeChannel, id frames.ChannelID) int { return cmp.Compare(c.d.ID, id) })
	if !found {
		return mergeRef{}, false
	}
	c.hit = i
	e := &c.more[i]
	return mergeRef{d: &e.d, from: e.from, sel: e.sel}, true
}

// empty reports whether no channel is declared.
func (c *mergeCatalog) empty() bool { return len(c.base) == 0 && len(c.more) == 0 }

// add adds channel d, not in the catalog, described first by input in.
func (c *mergeCatalog) add(d frames.ChannelDescriptor, in int, sel bool) {
	i, _ := slices.BinarySearchFunc(c.more, d.ID, func(c mergeChannel, id frames.ChannelID) int { return cmp.Compare(c.d.ID, id) })
	c.more = slices.Insert(c.more, i, mergeChannel{d: d, from: in, sel: sel})
}

// out returns the catalog as the output holds it, in the order of ids:
// base itself (clipped: appending to it copies it) when it is all of it.
func (c *mergeCatalog) out() []frames.ChannelDescriptor {
	if len(c.more) == 0 && c.baseOff == nil {
		return c.base
	}
	out := make([]frames.ChannelDescriptor, 0, len(c.base)+len(c.more))
	i := 0
	for _, e := range c.more {
		for ; i < len(c.base) && c.base[i].ID < e.d.ID; i++ {
			if c.baseOff == nil || !c.baseOff[i] {
				out = append(out, c.base[i])
			}
		}
		if e.sel {
			out = append(out, e.d)
		}
	}
	for ; i < len(c.base); i++ {
		if c.baseOff == nil || !c.baseOff[i] {
			out = append(out, c.base[i])
		}
	}
	return out
}

// outCatalog returns the stream's catalog as the output holds it; the
// caller must not change it.
func (st *mergeStream) outCatalog() []frames.ChannelDescriptor { return st.catalog.out() }

func (m *merger) inputName(i int) string {
	if i < 0 || i >= len(m.inputs) {
		return ""
	}
	return m.inputs[i].Name
}

// fail records the merge's first error.
func (m *merger) fail(err error) {
	if m.err == nil {
		m.err = err
	}
}

// run reads the inputs (in a goroutine, see readInputs) and feeds the
// assembler, then flushes it and ends every stream.
func (m *merger) run() error {
	done := make(chan struct{})
	batches := make(chan *mergeBatch, mergeAhead)
	free := make(chan *mergeBatch, mergeAhead+2)
	// Blocks of the inputs written unchanged are copied, not compressed
	// again, unless the filters may leave frames out.
	copyBlocks := m.opts.Compression == CompressZstd && m.opts.Frame == nil && m.opts.Channels == nil
	go readInputs(m.inputs, copyBlocks, batches, free, done)
	// On return the reader stops at its next batch; it is not waited for
	// (it may be blocked reading a pipe), and closes its input itself.
	defer close(done)
	for b := range batches {
		for i := range b.items {
			m.handle(&b.items[i])
			if m.err != nil {
				return m.err
			}
		}
		if m.opts.Progress != nil {
			m.opts.Progress(b.read)
		}
		if err := m.asm.Err(); err != nil {
			// Spilling failed (a full temporary file system): stop now,
			// before what cannot be spilled fills memory.
			m.fail(fmt.Errorf("segments: merge: spill: %w", err))
			return m.err
		}
		if ctx := m.opts.Context; ctx != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		b.reset()
		select {
		case free <- b:
		default:
		}
	}
	m.cur = -1
	m.asm.Flush()
	if m.err == nil {
		if err := m.asm.Err(); err != nil {
			m.fail(fmt.Errorf("segments: merge: spill: %w", err))
		}
	}
	if m.err != nil {
		return m.err
	}
	return m.finish()
}

// handle takes one item read from an input.
func (m *merger) handle(it *mergeItem) {
	m.cur = int(it.input)
	switch it.kind {
	case itemFail:
		m.fail(it.err)
	case itemDamage:
		m.damage(it.damage)
	case itemUnknown:
		m.report.Unknown++
	case itemHeader:
		m.header(it)
	case itemChannel:
		if st := m.stream(it.stream); st != nil && !st.skip && m.declare(st, *it.channel, int(it.input)) {
			m.setKeep(st)
		}
	case itemFrame:
		st := m.last
		if st == nil || st.id != it.stream {
			st = m.stream(it.stream)
			m.last = st
		}
		if st != nil && !st.skip {
			m.copy.adding, m.copy.pos = true, it.frame.Position
			m.asm.Add(it.stream, it.frame)
			m.copy.adding = false
		}
	case itemBlockStart:
		m.copy = blockCopy{on: true, stream: it.stream}
	case itemBlockEnd:
		if c := m.copy; c.on && c.n > 0 && c.n == int(it.frame.Position) && m.wst != nil && m.wst.id == c.stream {
			if err := m.w.CopyBlock(it.frame.Payload, c.n); err != nil {
				m.fail(err)
			}
		}
		m.copy = blockCopy{}
	case itemEnded:
		if st := m.stream(it.stream); st != nil {
			st.ended = true
		}
	case itemTrimmed, itemStoreTrimmed:
		if st := m.stream(it.stream); st != nil && !st.skip {
			if it.kind == itemStoreTrimmed {
				// Only a store's horizon goes to the output: a capture
				// file's Trimmed record hides nothing, and written out
				// above the frames kept below it, it would make the
				// output a capture ds check rejects.
				st.trimmed = max(st.trimmed, it.frame.Position)
			}
			m.asm.Trimmed(it.stream, it.frame.Position, it.kind == itemStoreTrimmed)
		}
	}
}

// stream returns the stream's state, nil for a stream no header has
// described yet (entries of a segment come after its header).
func (m *merger) stream(id frames.StreamID) *mergeStream {
	if m.last != nil && m.last.id == id {
		return m.last
	}
	return m.streams[id]
}

// header takes a segment header: the stream's descriptor and catalog, and
// its sequence number for the assembler.
func (m *merger) header(it *mergeItem) {
	h := it.header
	id := h.Stream.Stream
	in := int(it.input)
	st := m.streams[id]
	if st == nil {
		st = &mergeStream{id: id, desc: h.Stream, from: in}
		if m.opts.Select != nil && !m.opts.Select(h.Stream) {
			st.skip = true
		}
		m.streams[id] = st
		m.order = append(m.order, st)
	} else if !sameStream(st.desc, h.Stream) {
		m.fail(&CatalogConflictError{Stream: id, First: m.inputName(st.from), Second: m.inputName(in),
			What: fmt.Sprintf("%s, then %s", describeStream(st.desc), describeStream(h.Stream))})
		return
	}
	m.last = st
	if st.skip {
		return
	}
	if st.catalog.empty() && m.adopt(st, h.Channels, in) {
		m.asm.Segment(id, h.Seq)
		return
	}
	added := false
	for _, d := range h.Channels {
		added = m.declare(st, d, in) || added
		if m.err != nil {
			return
		}
	}
	if added {
		m.setKeep(st)
	}
	m.asm.Segment(id, h.Seq)
}

// adopt makes channels, the catalog of input in's header, the base of the
// empty catalog of st, if it is in the order of ids without repeats (as
// ds writes catalogs); it reports whether it did.
func (m *merger) adopt(st *mergeStream, channels []frames.ChannelDescriptor, in int) bool {
	if len(channels) == 0 || !slices.IsSortedFunc(channels, func(a, b frames.ChannelDescriptor) int { return cmp.Compare(a.ID, b.ID) }) {
		return false
	}
	for i := 1; i < len(channels); i++ {
		if channels[i].ID == channels[i-1].ID {
			return false
		}
	}
	c := &st.catalog
	c.base, c.baseFrom = slices.Clip(channels), in
	if m.opts.Channels != nil {
		c.baseOff = make([]bool, len(channels))
		for i := range channels {
			c.baseOff[i] = !m.opts.Channels(st.id, channels[i])
		}
	}
	if m.wst == st {
		for i := range channels {
			if c.baseOff == nil || !c.baseOff[i] {
				if err := m.w.DeclareChannel(channels[i]); err != nil {
					m.fail(err)
					return true
				}
			}
		}
		m.setKeep(st)
	}
	return true
}

func sameStream(a, b frames.StreamDescriptor) bool {
	return a.Stream == b.Stream && a.Origin == b.Origin &&
		(a.Label == nil) == (b.Label == nil) && (a.Label == nil || *a.Label == *b.Label)
}

func describeStream(d frames.StreamDescriptor) string {
	label := "no label"
	if d.Label != nil {
		label = fmt.Sprintf("label %q", *d.Label)
	}
	return fmt.Sprintf("origin %s, %s", d.Origin, label)
}

func describeChannel(d frames.ChannelDescriptor) string {
	s := fmt.Sprintf("%q (%s", d.Name, d.Content)
	if d.Label != nil {
		s += fmt.Sprintf(", label %q", *d.Label)
	}
	return s + ")"
}

// declare adds channel d, described by input in, to the stream's catalog;
// it reports whether it was added to the output being written (the
// caller then calls setKeep).
func (m *merger) declare(st *mergeStream, d frames.ChannelDescriptor, in int) bool {
	if c, ok := st.catalog.lookup(d.ID); ok {
		if !sameDescriptor(*c.d, d) {
			m.fail(&CatalogConflictError{Stream: st.id, Channel: d.ID, First: m.inputName(c.from), Second: m.inputName(in),
				What: fmt.Sprintf("%s, then %s", describeChannel(*c.d), describeChannel(d))})
		}
		return false
	}
	sel := m.opts.Channels == nil || m.opts.Channels(st.id, d)
	st.catalog.add(d, in, sel)
	if sel && m.wst == st {
		if err := m.w.DeclareChannel(d); err != nil {
			m.fail(err)
		}
		return true
	}
	return false
}

// setKeep makes the Keep function of the stream being written.
func (m *merger) setKeep(st *mergeStream) {
	if m.opts.Keep != nil {
		m.keepFn = m.opts.Keep(st.outCatalog())
	}
}

// damage reports a damaged range.
func (m *merger) damage(d *InputDamage) {
	m.report.Damaged = true
	m.report.DamageCount++
	if d.Records == 1 && errors.Is(d.Err, ErrHeaderRepaired) {
		m.report.Repaired++
	}
	if len(m.report.Damage) < maxMergeDamage {
		m.report.Damage = append(m.report.Damage, *d)
	}
	if m.opts.Warn != nil {
		m.opts.Warn(d)
	}
}

// item takes what the assembler emits.
func (m *merger) item(it Item) {
	if m.err != nil {
		return
	}
	st := m.last
	if st == nil || st.id != it.Stream {
		st = m.streams[it.Stream]
	}
	switch it.Kind {
	case ItemFrame, ItemLate:
		if m.keepFrame(st, it.Frame) {
			m.write(st, it.Frame)
			m.report.Frames++
			if cs, ok := st.conflicts[it.Frame.Position]; ok {
				for _, c := range cs {
					m.write(st, c)
				}
			}
		}
		if st.conflicts != nil {
			delete(st.conflicts, it.Frame.Position)
		}
	case ItemConflict:
		if m.opts.Warn != nil {
			m.opts.Warn(&ConflictError{Input: m.inputName(m.cur), Stream: it.Stream, Position: it.Frame.Position, Channel: it.Frame.Channel})
		}
		// Written when its channel is, within the frames written (Frame
		// is asked about frames in position order only).
		p := it.Frame.Position
		c, ok := st.catalog.lookup(it.Frame.Channel)
		switch sel := ok && c.sel || !ok && m.opts.Channels == nil; {
		case !sel:
		case st.written > 0 && st.lo <= p && p <= st.hi:
			m.write(st, it.Frame)
		case st.written == 0 || p > st.hi:
			// Its first copy is held, not written yet: it follows it
			// (whatever the order of arrival or the memory bound).
			if st.conflicts == nil {
				st.conflicts = make(map[frames.Position][]frames.Frame)
			}
			f := it.Frame
			f.Payload = bytes.Clone(f.Payload)
			st.conflicts[p] = append(st.conflicts[p], f)
		}
	case ItemGap:
		if m.opts.Gap != nil {
			m.opts.Gap(it.Stream, it.Gap)
		}
	case ItemStart:
		st.head = true
	case ItemTrimmed:
		st.trimmed = max(st.trimmed, it.Gap.To+1)
		if m.wst == st {
			m.writeTrim(st)
		}
	}
}

// keepFrame applies the filters to a frame in position order.
func (m *merger) keepFrame(st *mergeStream, f frames.Frame) bool {
	var c mergeRef
	var ok bool
	if m.opts.Frame != nil || m.opts.Channels != nil {
		c, ok = st.catalog.lookup(f.Channel)
	}
	if m.opts.Frame != nil {
		if !m.opts.Frame(st.id, c.d, f) {
			st.cutTail = true
			st.cutHead = st.cutHead || !st.opened
			return false
		}
		st.cutTail = false
	}
	if m.opts.Channels != nil && (!ok || !c.sel) {
		st.cutHead = st.cutHead || !st.opened
		return false
	}
	return true
}

// write writes frame f of stream st.
func (m *merger) write(st *mergeStream, f frames.Frame) {
	w := m.writer(st)
	if w == nil {
		return
	}
	if c := &m.copy; c.on {
		switch {
		case !c.adding || st.id != c.stream || f.Position != c.pos:
			c.on = false // not the block's own frame, as it is added
		case c.n == 0:
			// The block's first frame starts an output block.
			if err := w.EndBlock(); err != nil {
				m.fail(err)
				return
			}
		}
		c.n++
	}
	if err := w.WriteFrame(f); err != nil {
		m.fail(err)
		return
	}
	if st.written == 0 {
		st.lo = f.Position
	}
	st.endOut = false
	st.hi = max(st.hi, f.Position)
	st.written++
}

// writer returns the writer of stream st, ending the segment of the stream
// written before.
func (m *merger) writer(st *mergeStream) *Writer {
	if m.wst == st {
		return m.w
	}
	if m.err != nil || !m.release() {
		return nil
	}
	seq := st.seq
	if !st.opened && (st.head || st.cutHead) {
		seq = 1
	}
	opts := WriterOptions{
		SegmentSize: m.opts.SegmentSize, Compression: m.opts.Compression,
		WriterID: m.opts.WriterID, Rand: m.opts.Rand, FirstSeq: seq,
	}
	if m.opts.Keep != nil {
		opts.Keep = func(ch frames.ChannelID, payload []byte) Keep {
			if m.keepFn == nil {
				return KeepNone
			}
			return m.keepFn(ch, payload)
		}
	}
	// One Writer writes every stream in turn, keeping its buffers.
	var err error
	w := m.spare
	if w == nil {
		w, err = newWriter(m.out, st.desc, st.outCatalog(), opts, true)
	} else {
		err = w.reset(st.desc, st.outCatalog(), opts, true)
	}
	if err != nil {
		m.fail(fmt.Errorf("segments: merge: stream %s: %w", st.id, err))
		return nil
	}
	if !st.opened {
		m.report.Streams++
	}
	m.w, m.wst, m.spare, st.opened = w, st, nil, true
	m.setKeep(st)
	m.writeTrim(st)
	if m.err != nil {
		return nil
	}
	return w
}

// release ends the segment of the stream being written, and lets its
// writer go: a stream that an input ended is ended there (with a
// StreamEnded record, in the same segment), and again at the end if
// frames of it come after; it reports false on error.
func (m *merger) release() bool {
	st := m.wst
	if st == nil {
		return true
	}
	var err error
	if st.ended && !st.cutTail {
		err = m.w.Close()
		st.endOut = true
	} else {
		err = m.w.EndSegment()
	}
	if err != nil {
		m.fail(err)
		return false
	}
	st.seq = m.w.NextSeq()
	m.spare, m.w, m.wst, m.keepFn = m.w, nil, nil, nil
	return true
}

// writeTrim writes the stream's trim horizon if the output lacks it.
func (m *merger) writeTrim(st *mergeStream) {
	if st.trimmed <= st.trimOut {
		return
	}
	if err := m.w.WriteTrimmed(st.trimmed); err != nil {
		m.fail(err)
		return
	}
	st.trimOut = st.trimmed
}

// finish ends every stream written: a StreamEnded record for those an
// input ended (unless Frame left their end out) and that lack one after
// their last frame, the trim horizon where it is not written yet; a stream
// that had no frames at all is written as its header. The stream being
// written is ended first, in its segment.
func (m *merger) finish() error {
	order := m.order
	if m.wst != nil {
		order = append([]*mergeStream{m.wst}, slices.DeleteFunc(slices.Clone(order), func(st *mergeStream) bool { return st == m.wst })...)
	}
	for _, st := range order {
		if st.skip {
			continue
		}
		s := m.asm.Stats(st.id)
		m.report.Duplicates += s.Duplicates
		m.report.Uncompared += s.Uncompared
		m.report.Conflicts += s.Conflicts
		m.report.Gaps += s.Gaps
		m.report.Missing += s.Missing
		m.report.Trimmed += s.Trimmed
		empty := !st.opened && !st.cutHead // no frame of it anywhere: keep it as a header
		end := st.ended && !st.cutTail && !st.endOut && (st.opened || empty)
		if !end && st.trimmed <= st.trimOut && !empty && m.wst != st {
			continue
		}
		if m.writer(st) == nil {
			return m.err
		}
		if !end && !st.ended {
			// Ended, trimmed or a header of its own: release does
			// what is left.
			if err := m.w.Flush(); err != nil {
				return err
			}
		}
		if !m.release() {
			return m.err
		}
	}
	return m.err
}

// The reading side: a goroutine reads the inputs in order and hands the
// merge batches of items.

// mergeAhead is how many batches the reader may have read ahead.
const mergeAhead = 4

// A batch holds up to batchItems items or batchArena bytes of payloads:
// about 500 KiB, so that the batches in flight (mergeAhead, one being
// filled, one being merged and a few free ones) hold about 4 MiB.
const (
	batchItems = 2048
	batchArena = 256 << 10
)

type itemKind uint8

const (
	itemHeader itemKind = iota + 1
	itemChannel
	itemFrame
	itemEnded
	itemTrimmed      // frame.Position: the horizon, of a capture's Trimmed record
	itemStoreTrimmed // the same, of a store's read-out
	itemUnknown
	itemDamage
	itemFail       // err: the input could not be opened or read
	itemBlockStart // the frames that follow, up to itemBlockEnd, are those of one Block record
	itemBlockEnd   // frame.Payload: the block's stored body; frame.Position: its frames
)

type mergeItem struct {
	kind    itemKind
	input   int32
	stream  frames.StreamID
	frame   frames.Frame
	header  *wireformat.Header
	channel *frames.ChannelDescriptor
	damage  *InputDamage
	err     error
}

type mergeBatch struct {
	items []mergeItem
	arena []byte // the payloads of the items' frames
	read  int64  // bytes read of all inputs when the batch was sent
}

func (b *mergeBatch) reset() {
	clear(b.items)
	b.items = b.items[:0]
	b.arena = b.arena[:0]
}

// inputReader counts what is read of an input and keeps its first bytes.
type inputReader struct {
	r    io.Reader
	n    int64
	head []byte
}

func (c *inputReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if len(c.head) < len(wireformat.Magic) {
		c.head = append(c.head, p[:min(n, len(wireformat.Magic)-len(c.head))]...)
	}
	c.n += int64(n)
	return n, err
}

// ReadingFile reports the file under r (a FileInput).
func (c *inputReader) ReadingFile() (io.ReaderAt, int64, int64, bool) { return fileAt(c.r) }

// feed is the reader goroutine's side of the batches.
type feed struct {
	out   chan<- *mergeBatch
	free  <-chan *mergeBatch
	done  <-chan struct{}
	b     *mergeBatch
	total int64 // bytes read of the inputs before the current one
	// copyBlocks marks the frames of each Block record (itemBlockStart,
	// itemBlockEnd), so that the merge can copy blocks it writes unchanged.
	copyBlocks bool
	blockBody  []byte // the current block's body, kept until its end
}

// room returns the batch to add an item with n bytes of arena to: the
// current one, or a new one after the current one is handed over when it
// lacks room; nil when the merge has stopped.
func (f *feed) room(n int, read int64) *mergeBatch {
	b := f.batch()
	if len(b.items) > 0 && (len(b.arena)+n > cap(b.arena) || len(b.items) >= cap(b.items)) {
		if !f.send(read) {
			return nil
		}
		b = f.batch()
	}
	return b
}

func (f *feed) batch() *mergeBatch {
	if f.b == nil {
		select {
		case f.b = <-f.free:
		default:
			f.b = &mergeBatch{items: make([]mergeItem, 0, batchItems), arena: make([]byte, 0, batchArena)}
		}
	}
	return f.b
}

// send hands the current batch over; it reports false when the merge has
// stopped.
func (f *feed) send(read int64) bool {
	if f.b == nil || len(f.b.items) == 0 {
		return true
	}
	f.b.read = read
	select {
	case f.out <- f.b:
		f.b = nil
		return true
	case <-f.done:
		return false
	}
}

// readInputs reads every input in order into batches, until the inputs
// end, one fails, or done is closed.
func readInputs(inputs []MergeInput, copyBlocks bool, out chan<- *mergeBatch, free <-chan *mergeBatch, done <-chan struct{}) {
	defer close(out)
	f := &feed{out: out, free: free, done: done, copyBlocks: copyBlocks}
	for i := range inputs {
		ok, n := readInput(f, int32(i), inputs[i])
		f.total += n
		if !ok || !f.send(f.total) {
			return
		}
	}
}

// readInput reads one input; it reports false when the merge must stop
// (the input failed, or the merge has stopped), and the bytes read.
func readInput(f *feed, idx int32, in MergeInput) (bool, int64) {
	add := func(it mergeItem) {
		b := f.batch()
		it.input = idx
		b.items = append(b.items, it)
	}
	fail := func(err error) (bool, int64) {
		add(mergeItem{kind: itemFail, err: err})
		f.send(f.total)
		return false, 0
	}
	rc, err := in.Open()
	if err != nil {
		return fail(fmt.Errorf("%s: %w", in.Name, err))
	}
	defer rc.Close()
	src := &inputReader{r: rc}
	r := NewReader(src, ReaderOptions{SkipSummaries: true, SkipRepeatedCatalogs: true})
	var (
		e    Entry
		pend *InputDamage  // the damage run not reported yet
		last *CorruptError // the last range of pend
		seg  bool          // a segment header was read
		// The block whose frames are being read (copyBlocks).
		inBlock  bool
		blockOff int64
		blockN   int  // its frames so far
		blockBad bool // it holds other records than frames
	)
	endBlock := func() bool {
		if !inBlock {
			return true
		}
		inBlock = false
		if blockBad {
			return true
		}
		b := f.room(len(f.blockBody), f.total+src.n)
		if b == nil {
			return false
		}
		start := len(b.arena)
		b.arena = append(b.arena, f.blockBody...)
		add(mergeItem{kind: itemBlockEnd, frame: frames.Frame{Position: frames.Position(blockN), Payload: b.arena[start:len(b.arena):len(b.arena)]}})
		return true
	}
	// report hands pend over; at the end of input (tail), a last range
	// cut short by the end is a torn tail, reported apart from the run
	// before it.
	report := func(tail bool) {
		if pend == nil {
			return
		}
		if tail && errors.Is(last.Err, io.ErrUnexpectedEOF) {
			if pend.Records > 1 {
				run := *pend
				run.End, run.Records = last.Offset, run.Records-1
				add(mergeItem{kind: itemDamage, damage: &run})
			}
			pend = &InputDamage{Input: in.Name, Offset: last.Offset, End: last.End, Torn: true, Records: 1, Err: last.Err}
		}
		add(mergeItem{kind: itemDamage, damage: pend})
		pend, last = nil, nil
	}
	var ce *CorruptError
	for {
		err := r.NextView(&e)
		if err == io.EOF {
			break
		}
		if err != nil && errors.As(err, &ce) {
			if !endBlock() {
				return false, src.n
			}
			if pend != nil && (pend.End == ce.Offset || !seg) {
				pend.End = ce.End // adjacent, or all before the first segment
				pend.Records++
			} else {
				report(false)
				pend = &InputDamage{Input: in.Name, Offset: ce.Offset, End: ce.End, Records: 1, Err: ce.Err}
			}
			last = ce
			continue
		}
		if err != nil {
			return fail(fmt.Errorf("%s: %w", in.Name, err))
		}
		report(false) // something follows it: no tail
		if f.copyBlocks {
			body, _, ok := r.Block()
			if !ok || !inBlock || e.Offset != blockOff {
				if !endBlock() {
					return false, src.n
				}
				if ok && e.Kind == EntryFrame {
					inBlock, blockOff, blockN, blockBad = true, e.Offset, 0, false
					f.blockBody = append(f.blockBody[:0], body...)
					add(mergeItem{kind: itemBlockStart, stream: e.Stream})
				}
			}
			if inBlock {
				if e.Kind == EntryFrame {
					blockN++
				} else {
					blockBad = true
				}
			}
		}
		switch e.Kind {
		case EntrySegment:
			seg = true
			add(mergeItem{kind: itemHeader, header: e.Header})
		case EntryChannel:
			add(mergeItem{kind: itemChannel, stream: e.Stream, channel: e.Channel})
		case EntryFrame:
			b := f.room(len(e.Frame.Payload), f.total+src.n)
			if b == nil {
				return false, src.n
			}
			start := len(b.arena)
			b.arena = append(b.arena, e.Frame.Payload...)
			fr := e.Frame
			fr.Payload = b.arena[start:len(b.arena):len(b.arena)]
			b.items = append(b.items, mergeItem{kind: itemFrame, input: idx, stream: e.Stream, frame: fr})
		case EntryStreamEnded:
			add(mergeItem{kind: itemEnded, stream: e.Stream})
		case EntryTrimmed:
			k := itemTrimmed
			if in.Store {
				k = itemStoreTrimmed
			}
			add(mergeItem{kind: k, stream: e.Stream, frame: frames.Frame{Position: e.Frame.Position}})
		case EntryUnknown:
			add(mergeItem{kind: itemUnknown})
		}
	}
	if !seg && src.n > 0 && !bytes.HasPrefix(src.head, []byte(wireformat.Magic)) {
		return fail(fmt.Errorf("%s: %w", in.Name, ErrNotDSS))
	}
	if !endBlock() {
		return false, src.n
	}
	report(true)
	return true, src.n
}

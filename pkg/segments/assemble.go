package segments

import (
	"bytes"
	"hash/maphash"
	"math"
	"sort"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// Defaults of [AssemblerOptions].
const (
	// DefaultMemory is what an [Assembler] holds back in memory across all
	// streams, in bytes, before it spills held frames to a temporary file
	// (8 MiB).
	DefaultMemory = 8 << 20
	// DefaultWindow is DefaultMemory, under the name the views' options
	// use (LogOptions.Window and the like).
	DefaultWindow = DefaultMemory
)

// heldOverhead is what an [Assembler] counts for each frame it holds back,
// in bytes, on top of its payload: the frame's heap entry, its entry in
// the stream's map of held positions (both amortised over their growth)
// and the rounding of the payload's allocation. memory_test.go checks it
// against the heap.
const heldOverhead = 160

// Bounds of what an [Assembler] remembers of one stream's history.
const (
	// maxSpans bounds the runs of emitted positions remembered per stream
	// (16 bytes each). Past it the oldest half is forgotten.
	maxSpans = 1024
	// maxRecent bounds the hashes of emitted frames kept per stream
	// (24 bytes each) when AssemblerOptions.Compare is 0: 16384, as ds
	// merge keeps (MergeCompare), so that a view reading a merged capture
	// compares every conflicting copy ds merge wrote (it comes less than
	// that many positions after its first).
	maxRecent = 1 << 14
	// Each stream may remember freeSpans runs, and freeRecent hashes once
	// it has shown disorder; what streams remember beyond (every hash of
	// a stream in order) is bounded by maxHistory bytes in all: past it, a
	// stream forgets its oldest runs instead of adding one, and its hashes
	// do not grow (a stream in order then keeps only its last frame's).
	freeSpans  = 8
	freeRecent = 16
	maxHistory = 8 << 20
)

// ItemKind says what an [Item] reports.
type ItemKind uint8

const (
	// ItemFrame is a frame in position order.
	ItemFrame ItemKind = iota + 1
	// ItemGap is an interior hole: positions Gap.From..Gap.To were assigned
	// by the producer but never arrived (ARCHITECTURE.md rule 7.3).
	ItemGap
	// ItemConflict is a frame refused because another payload was already
	// stored for its position (first wins, ARCHITECTURE.md rule 7.2; ARCHITECTURE.md §6 asks that
	// the conflict be reported). Frame holds the refused frame.
	ItemConflict
	// ItemLate is a frame that arrived after its stream had gone past its
	// position without it: its position had been declared part of a gap
	// (by a Flush: the end of input, or a live input that went quiet), or
	// it lies below the position the stream started at. It is shown where
	// it arrives, never dropped.
	ItemLate
	// ItemStart says that the stream starts at Frame.Position (Frame has
	// no channel and no payload), and that the frames before it are not
	// in the input: the stream's first segment read is not its writer's
	// first (its header's sequence number is above 0), so the writer had
	// written earlier frames, which the input lacks (a capture whose head
	// was cut off, or a later file of a rotated capture). It is not a gap.
	// It comes right before the stream's first ItemFrame.
	ItemStart
	// ItemTrimmed says that positions Gap.From..Gap.To of the stream
	// were deleted by a store's trim ([Assembler.Trim], the Trimmed
	// record of ds-format(5)): not lost, not a gap. From a store, From is
	// 0, and it comes before the stream's first ItemFrame, or where the
	// trim was read when that was later. From a capture file
	// ([Assembler.TrimCapture]), it says so of the positions below the
	// record's horizon that the input lacks: those before the stream's
	// first frame (From 0), and each interior hole below the horizon,
	// where a gap would come.
	ItemTrimmed
)

// Gap is an inclusive run of missing positions; Count = To - From + 1.
type Gap struct {
	From, To frames.Position
	Count    uint64
}

// Item is one thing an [Assembler] emits.
type Item struct {
	Kind   ItemKind
	Stream frames.StreamID
	// Frame is the frame of ItemFrame, ItemConflict and ItemLate (its
	// Payload is valid only during the emit call: a frame read back from
	// a spill file shares a buffer) and the position of ItemStart.
	Frame frames.Frame
	Gap   Gap // ItemGap, ItemTrimmed
}

// StreamStats counts what the assembler saw of one stream. Every frame
// added is counted once: in Frames, Late, Duplicates or Conflicts.
type StreamStats struct {
	Frames uint64 // frames emitted in order
	Bytes  uint64 // payload bytes of those frames
	// Duplicates counts copies of a position already emitted or held,
	// dropped: identical payloads, and those that could not be compared
	// (Uncompared).
	Duplicates uint64
	// Uncompared counts the duplicates whose earlier copy's payload was
	// no longer known (see [Assembler]): a different payload among them
	// would be a conflict that went unseen.
	Uncompared uint64
	Conflicts  uint64 // different payloads for a stored position, refused
	Late       uint64 // frames emitted where they arrived (ItemLate)
	// Trimmed counts frames dropped because they lie below the stream's
	// trim horizon ([Assembler.Trim]).
	Trimmed uint64
	// Before is the stream's trim horizon: positions below it were
	// trimmed by a store (0: none).
	Before frames.Position
	// CaptureBefore is the highest horizon of a Trimmed record read from
	// a capture file ([Assembler.TrimCapture]; 0: none): absent positions
	// below it are trimmed, not lost, and its frames below it are shown.
	// Shown counts those frames: emitted (in order or late) at a
	// position below CaptureBefore, which a store's record would have
	// hidden.
	CaptureBefore frames.Position
	Shown         uint64
	Gaps          uint64 // interior gaps declared
	Missing       uint64 // positions inside those gaps
	First         frames.Position
	Last          frames.Position
	// HeadMissing says that the stream's first segment read was not its
	// writer's first: it starts at First, and the frames before First are
	// not in the input (see ItemStart).
	HeadMissing bool
}

// AssemblerOptions configures an [Assembler]. The zero value is valid.
type AssemblerOptions struct {
	// Memory is the most an Assembler holds back in memory across all
	// streams, in bytes (payloads plus a per-frame overhead of a few
	// hundred bytes); beyond it, held frames are spilled to a temporary
	// file. 0 means DefaultMemory.
	Memory int
	// TempDir is where spill files are made: "" means os.TempDir(). A
	// spill file is unlinked as soon as it is created, so nothing is left
	// behind, whatever happens to the process.
	TempDir string
	// Eager starts a stream whose first segment read is not its writer's
	// first at the first position that arrives, at once, instead of
	// holding its frames until the end of input in case lower ones come.
	// It is for readers that read a capture from part-way (ds tail) or
	// that trust one capture's order to report on it quickly (ds info);
	// a lower position arriving later is then late ([ItemLate]), never
	// dropped.
	Eager bool
	// Compare is how many of the last positions emitted of each stream
	// keep a payload hash, from the stream's first frame, so that a copy
	// arriving after its first was emitted (the same stream in a second
	// input, read after the first) is told identical or conflicting. 0
	// means 16384 (MergeCompare). The history budget (8 MiB for all
	// streams) bounds it: a stream that has shown no disorder keeps
	// hashes only within it. With Compare set, every stream counts as
	// disordered from its start: its first 16 hashes are free of the
	// budget (ds merge sets it).
	Compare int
}

// Assembler is streaming ingest (ARCHITECTURE.md §9): it rebuilds each stream by
// position from deliveries in any order. Frames come out in position order
// per stream; duplicates collapse (first wins) and a different payload for
// a stored position is reported as a conflict; an interior hole comes out as
// a gap; a leading or trailing absence is not a gap (ARCHITECTURE.md case 3.4).
// Streams are keyed by (node, life) and never merge.
//
// # Order independence
//
// A frame whose position is not the next one expected is held back (its
// payload copied) until the positions before it arrive. Nothing is
// guessed: a gap is declared only by [Assembler.Flush] (at the end of
// input, or when a live input has gone quiet), never because frames were
// held for long, so any order of arrival, any cut of the input and any
// duplication give the same frames in the same order (ARCHITECTURE.md §6
// invariant 11). What is held is bounded in memory, not on disk: past
// AssemblerOptions.Memory bytes, every stream's held frames are sorted
// and spilled to a temporary file, as sort(1) does, and read back in
// order as the positions before them arrive. A capture written by one
// writer is already in order and flows straight through, holding
// nothing.
//
// A stream starts at position 0 (or at its trim horizon, see
// [Assembler.Trim]) as soon as that position arrives. Otherwise a lower
// position may still arrive: the stream holds its frames until it does
// or until Flush, and then starts at the lowest position held. When no
// segment of the stream read so far was its writer's first (see
// [Assembler.Segment]), that start comes after an [ItemStart]; with
// AssemblerOptions.Eager such a stream starts at once.
//
// # Duplicates, conflicts and late frames
//
// Copies of a position that are held at the same time are compared
// exactly (their payload hashes), and the first to arrive wins. A frame
// whose position the stream has gone past is classified by position.
// The assembler remembers which positions were emitted as ranges (the
// run since the last gap, and earlier runs): a position emitted before
// is a duplicate; any other position (one in a declared gap, one below
// where the stream started) is a late frame, emitted as [ItemLate] where
// it arrives and remembered as emitted. A stream remembers up to 1024
// earlier runs (8 to 16 once the history budget below is spent): past
// that it forgets the oldest half, and a frame below what it remembers is
// shown late, even if it is in fact a copy of a frame emitted long ago:
// a frame is never dropped as a copy without its position having been
// seen.
//
// Telling a conflict from an identical copy needs the earlier payload.
// The assembler keeps, per stream, hashes of the channel and payload:
//   - of the last frame emitted, so that a repeat of it (a copy right
//     after its first) is always compared;
//   - of every frame held back;
//   - of the frames it emitted before the last, from its start, for the
//     last 16384 positions (AssemblerOptions.Compare positions): so a
//     copy from a second input read after the first (two captures of
//     one stream, merged by time), or a conflicting copy that ds merge
//     wrote after its first, is compared. These take 24 bytes each: a
//     stream that has shown disorder (held frames, or a copy of a past
//     position) keeps its first 16 whatever the budget; every other
//     hash comes out of the history budget below, first come, first
//     served, and a stream in order that finds it spent keeps only its
//     last frame's (a capture of a million one-frame streams costs no
//     more than before).
//
// A repeat of any other emitted position (one whose hash was not kept,
// or was forgotten, or one added by [Assembler.AddRun], which keeps
// none) is counted as a duplicate in StreamStats.Duplicates and in
// StreamStats.Uncompared: if its payload differed, the conflict went
// unseen, and the views say how many copies they could not compare
// rather than call them identical. Hashes are 64-bit maphash values:
// two different payloads may collide, with probability 2⁻⁶⁴.
//
// # Memory
//
// An Assembler holds at most Memory bytes of frames in memory (as counted
// above), plus about 250 bytes per stream (its state, counters and the
// assembler's index of streams), plus for each spilled run its position
// in the spill file (about 100 bytes) and, while it is being read back,
// a 16 KiB buffer (at most 128 such buffers at once), plus what streams
// remember of their history: up to 8 runs (16 bytes each) and 16 hashes
// (24 bytes each) per stream that had gaps or disorder, about 80 bytes
// per stream of more than one frame that keeps hashes, and beyond that a
// history budget of 8 MiB for all streams together. The work per frame is
// O(log held), independent of position spans (ARCHITECTURE.md case 3.4:
// positions 0 and 2^64−1).
//
// Call [Assembler.Close] when done: it closes the spill files. A spill
// file that cannot be written or read back is an error of
// [Assembler.Err]; the frames it would have held stay in memory, or are
// lost with that error: never silently.
//
// An Assembler is not safe for concurrent use.
type Assembler struct {
	memory  int // bytes held in memory across streams before a spill
	tempDir string
	eager   bool
	compare int // Compare, or maxRecent
	emit    func(Item)
	streams map[frames.StreamID]*assembly
	order   []*assembly
	last    *assembly // the stream of the previous Add, to skip the map lookup
	holders []*assembly
	held    int    // bytes held in memory across all streams
	seq     uint64 // arrivals, so that the first copy wins among held ones
	history int    // bytes of history beyond each stream's free allowance
	maxHist int    // maxHistory (tests lower it)
	seed    maphash.Seed
	spill   spillState
}

// NewAssembler returns an assembler that calls emit for every item, in
// order, holding at most memory bytes in memory before it spills (0:
// DefaultMemory): it is [NewAssemblerWith] with
// AssemblerOptions{Memory: memory}.
func NewAssembler(memory int, emit func(Item)) *Assembler {
	return NewAssemblerWith(AssemblerOptions{Memory: memory}, emit)
}

// NewAssemblerWith returns an assembler configured by opts that calls emit
// for every item, in order.
func NewAssemblerWith(opts AssemblerOptions, emit func(Item)) *Assembler {
	if opts.Memory <= 0 {
		opts.Memory = DefaultMemory
	}
	cmp := maxRecent
	if opts.Compare > 0 {
		cmp = opts.Compare
	}
	return &Assembler{
		memory: opts.Memory, tempDir: opts.TempDir, eager: opts.Eager, compare: cmp,
		emit: emit, maxHist: maxHistory, seed: maphash.MakeSeed(),
		streams: make(map[frames.StreamID]*assembly),
		spill:   spillState{hashAll: opts.Compare > 0},
	}
}

// Flags of an assembly.
const (
	started    uint8 = 1 << iota // next and run are set
	done                         // MaxUint64 was emitted: nothing follows
	resumed                      // the first segment read was not the writer's first
	disorder                     // the stream has shown disorder: hash what it emits
	sawFirst                     // a segment that was its writer's first was read
	announced                    // ItemTrimmed was emitted
	lastHashed                   // lastHash is the hash of the frame at stats.Last
)

// assembly is the state of one stream: about 200 bytes until it needs
// more (held, hist).
type assembly struct {
	id    frames.StreamID
	next  frames.Position // the next position expected, once started
	run   frames.Position // positions run..next-1 (..MaxUint64 when done) were emitted in order
	flags uint8
	hidx  int32 // index in Assembler.holders, -1 when holding nothing in memory
	// lastHash is the hash of the frame emitted last (at stats.Last),
	// with the lastHashed flag (not after AddRun).
	lastHash uint64
	held     *holding // nil until a frame is held back
	hist     *history // nil until a gap, a late frame or disorder
	stats    streamCounts
}

// before returns the stream's trim horizon: positions below it are dropped.
func (st *assembly) before() frames.Position {
	if st.stats.odd == nil {
		return 0
	}
	return st.stats.odd.Before
}

// soft returns the horizon of a capture's Trimmed record when it is above
// the store's (0 otherwise): positions below it that are absent are
// trimmed, frames below it are shown.
func (st *assembly) soft() frames.Position {
	if st.stats.odd == nil || st.stats.odd.CaptureBefore <= st.stats.odd.Before {
		return 0
	}
	return st.stats.odd.CaptureBefore
}

// startsAt reports whether a stream that has not started starts at pos
// when pos is the lowest position it holds: at 0, at the trim horizon,
// or at a capture's horizon (nothing precedes them, or what precedes them
// was trimmed).
func (st *assembly) startsAt(pos frames.Position) bool {
	return pos == st.before() || pos == st.soft() && pos > 0
}

// lead returns the end of the positions a stream is trimmed of at its
// head: the trim horizon, or, up to a capture's horizon, the positions
// before the stream's first frame (before it starts: the horizon).
func (st *assembly) lead() frames.Position {
	h, s := st.before(), st.soft()
	if s <= h {
		return h
	}
	if st.flags&started != 0 {
		return max(h, min(s, st.stats.First))
	}
	return s
}

// streamCounts is what an assembly counts of every stream; the counters
// that stay 0 for most streams are apart, allocated when one moves, so
// that an idle stream costs little.
type streamCounts struct {
	Frames, Bytes uint64
	First, Last   frames.Position
	odd           *StreamStats // Duplicates, Uncompared, Conflicts, Late, Gaps, Missing, HeadMissing
}

// oddStats returns the stream's rarely moved counters, allocating them.
func (st *assembly) oddStats() *StreamStats {
	if st.stats.odd == nil {
		st.stats.odd = &StreamStats{}
	}
	return st.stats.odd
}

// full returns the counts as a StreamStats.
func (c *streamCounts) full() StreamStats {
	var s StreamStats
	if c.odd != nil {
		s = *c.odd
	}
	s.Frames, s.Bytes, s.First, s.Last = c.Frames, c.Bytes, c.First, c.Last
	return s
}

// holding is what a stream holds back: a min-heap in memory of frames by
// (position, arrival), with their payload hashes, indexed by position once
// there are more than a few, for duplicate detection; and the runs spilled
// to files, a min-heap by their next frame.
type holding struct {
	pending []heldFrame
	hashes  map[frames.Position]uint64 // nil while len(pending) <= maxScannedHeld
	bytes   int                        // in memory, counted as payload + heldOverhead per frame
	runs    []*spillRun
}

// maxScannedHeld is how many held frames are searched one by one for a
// copy; beyond, they are indexed.
const maxScannedHeld = 8

// hash returns the payload hash of the frame held in memory at position p.
func (hs *holding) hash(p frames.Position) (uint64, bool) {
	if hs.hashes != nil {
		h, ok := hs.hashes[p]
		return h, ok
	}
	var h, seq uint64
	ok := false
	for i := range hs.pending {
		if x := &hs.pending[i]; x.f.Position == p && (!ok || x.seq < seq) {
			h, seq, ok = x.hash, x.seq, true // the first copy's
		}
	}
	return h, ok
}

// empty reports whether nothing is held, in memory or spilled.
func (hs *holding) empty() bool { return hs == nil || len(hs.pending) == 0 && len(hs.runs) == 0 }

// lowest returns the position and arrival of the lowest frame held.
func (hs *holding) lowest() (frames.Position, uint64) {
	var p frames.Position
	var seq uint64
	ok := false
	if len(hs.pending) > 0 {
		p, seq, ok = hs.pending[0].f.Position, hs.pending[0].seq, true
	}
	if len(hs.runs) > 0 {
		r := hs.runs[0]
		if !ok || r.head.f.Position < p || r.head.f.Position == p && r.head.seq < seq {
			p, seq = r.head.f.Position, r.head.seq
		}
	}
	return p, seq
}

type heldFrame struct {
	f    frames.Frame
	hash uint64
	seq  uint64 // arrival
}

func (x *heldFrame) less(y *heldFrame) bool {
	return x.f.Position < y.f.Position || x.f.Position == y.f.Position && x.seq < y.seq
}

// history is what a stream remembers of what it emitted before its
// current run.
type history struct {
	spans  []posSpan       // runs of emitted positions below run-1: ascending, disjoint, not adjacent
	floor  frames.Position // positions below floor were forgotten
	recent []recent        // by position % len: hashes of frames emitted before the last
	free   int             // entries of recent free of the budget: freeRecent once the stream showed disorder
	puts   int             // frames put in recent, for its growth
	charge int             // bytes counted in Assembler.history
}

type posSpan struct{ from, to frames.Position } // inclusive

type recent struct {
	pos  frames.Position
	hash uint64
	ok   bool
}

func (a *Assembler) stream(s frames.StreamID) *assembly {
	st := a.streams[s]
	if st == nil {
		st = &assembly{id: s, hidx: -1}
		if a.spill.hashAll {
			st.flags |= disorder // hash from the start (AssemblerOptions.Compare)
		}
		a.streams[s] = st
		a.order = append(a.order, st)
	}
	return st
}

// Segment tells the assembler that a segment of stream s starts, whose
// header carries sequence number seq. When the first segment seen of s
// has seq > 0, the writer had written earlier segments of s, which may
// not be in the input: unless a segment with seq 0 is read before the
// stream starts, its start comes after an [ItemStart]
// (StreamStats.HeadMissing), and with AssemblerOptions.Eager it starts at
// the first position that arrives, at once.
func (a *Assembler) Segment(s frames.StreamID, seq uint64) {
	_, seen := a.streams[s]
	st := a.stream(s)
	switch {
	case seq == 0:
		st.flags |= sawFirst
	case !seen:
		st.flags |= resumed
	}
}

// Trim tells the assembler that the frames of stream s below position
// before were deleted by a store (ds trim; the Trimmed record of
// ds-format(5)): such frames are dropped wherever they arrive (counted in
// StreamStats.Trimmed), the stream starts at before as it would at 0, and
// an [ItemTrimmed] is emitted once, before the stream's first item (or at
// once, when the stream has already started). A lower horizon than one
// already known changes nothing.
func (a *Assembler) Trim(s frames.StreamID, before frames.Position) {
	st := a.stream(s)
	if before <= st.before() {
		return
	}
	st.oddStats().Before = before
	st.flags &^= announced
	if st.flags&started == 0 {
		// Frames held below the horizon go; the stream starts at once if
		// the horizon's frame is held.
		a.dropTrimmed(st)
		if st.held.empty() {
			return
		}
		if lo, _ := st.held.lowest(); lo == before {
			a.start(st, before)
			a.drain(st, false)
		}
		return
	}
	if st.flags&started != 0 {
		a.announce(st)
		if st.flags&done == 0 && st.next < before {
			if st.next > st.run {
				a.addSpan(st, posSpan{st.run, st.next - 1})
			}
			st.run, st.next = before, before // trimmed, not missing: no gap
		}
		a.drain(st, false)
	}
}

// Trimmed takes a Trimmed record of stream s at horizon before as a
// [Sink] reports it: from a store's read-out (store) it is [Assembler.Trim],
// from a capture file [Assembler.TrimCapture].
func (a *Assembler) Trimmed(s frames.StreamID, before frames.Position, store bool) {
	if store {
		a.Trim(s, before)
	} else {
		a.TrimCapture(s, before)
	}
}

// TrimCapture tells the assembler that a capture file (no store's
// read-out) holds a Trimmed record of stream s at horizon before
// (ds-format(5) "Trimmed"): it hides nothing there, for a capture is no
// store that deleted frames. Frames below before are emitted as any
// others (counted in StreamStats.Shown); positions below before that the
// input lacks are trimmed, not lost: an [ItemTrimmed] instead of the
// leading absence (From 0) or of the interior gap, and the stream may
// start at before as it would at 0 (a merged capture of a trimmed store
// starts there), after which a frame below arriving is late. A lower
// horizon than one already known changes nothing; StreamStats.
// CaptureBefore is the highest.
func (a *Assembler) TrimCapture(s frames.StreamID, before frames.Position) {
	st := a.stream(s)
	odd := st.oddStats()
	if before <= odd.CaptureBefore {
		return
	}
	old, oldLead := max(odd.CaptureBefore, odd.Before), st.lead()
	odd.CaptureBefore = before
	if before <= odd.Before {
		return
	}
	odd.Shown += st.emittedIn(old, before)
	if st.flags&started == 0 {
		if !st.held.empty() {
			if lo, _ := st.held.lowest(); lo == before {
				a.start(st, before)
				a.drain(st, false)
			}
		}
		return
	}
	if st.lead() > oldLead {
		st.flags &^= announced
		a.announce(st)
	}
}

// emittedIn returns how many positions in [lo, hi) the stream emitted,
// as far as it remembers.
func (st *assembly) emittedIn(lo, hi frames.Position) uint64 {
	if st.flags&started == 0 || lo >= hi {
		return 0
	}
	n := uint64(0)
	add := func(from, to frames.Position) { // inclusive
		from, to = max(from, lo), min(to, hi-1)
		if from <= to {
			n += uint64(to-from) + 1
		}
	}
	if st.flags&done != 0 {
		add(st.run, math.MaxUint64)
	} else if st.next > st.run {
		add(st.run, st.next-1)
	}
	if st.hist != nil {
		for _, sp := range st.hist.spans {
			add(sp.from, sp.to)
		}
	}
	return n
}

// announce emits the stream's ItemTrimmed for its head, once.
func (a *Assembler) announce(st *assembly) {
	before := st.lead()
	if before == 0 || st.flags&announced != 0 {
		return
	}
	st.flags |= announced
	a.emit(Item{Kind: ItemTrimmed, Stream: st.id, Gap: Gap{From: 0, To: before - 1, Count: uint64(before)}})
}

// Add ingests one frame of stream s. f.Payload need only be valid during
// the call: a frame emitted at once is passed on as it is, and a frame held
// back is copied.
func (a *Assembler) Add(s frames.StreamID, f frames.Frame) {
	st := a.last
	if st == nil || st.id != s {
		st = a.stream(s)
		a.last = st
	}
	a.seq++
	if f.Position < st.before() {
		st.oddStats().Trimmed++
		return
	}
	switch {
	case st.flags&started != 0:
		if st.flags&done == 0 && f.Position == st.next {
			if st.held.empty() {
				a.emitFrame(st, f, 0, false) // in order: the common case
				return
			}
			if lo, _ := st.held.lowest(); lo != f.Position {
				a.emitFrame(st, f, 0, false)
				a.drain(st, false)
				return
			}
			// An earlier copy is held (spilled): it wins; this one
			// joins it, to be compared when they come out.
		} else if st.flags&done != 0 || f.Position < st.next {
			a.past(st, f)
			return
		}
	case st.flags&resumed != 0 && st.flags&sawFirst == 0 && a.eager:
		a.start(st, f.Position)
		a.emitFrame(st, f, 0, false)
		return
	case st.startsAt(f.Position) && st.held.empty():
		// Nothing precedes position 0 (or the trim horizon, or a
		// capture's): a stream seen from its start flows straight
		// through.
		a.start(st, f.Position)
		a.emitFrame(st, f, 0, false)
		return
	}
	if !a.hold(st, f) {
		return
	}
	if st.flags&started == 0 {
		// A lower position may still arrive: wait for it (or for Flush).
		lo, _ := st.held.lowest()
		if !st.startsAt(lo) {
			a.enforceMemory()
			return
		}
		a.start(st, lo)
	}
	a.drain(st, false)
	a.enforceMemory()
}

// AddRun ingests the frames at every position from first to last of
// stream s, in order, holding bytes payload bytes in all, without their
// payloads: a segment whose summary says it holds exactly that run. It is
// [Assembler.Add] of each of those frames, except that it emits no
// ItemFrame for them (the caller counts them from the summary) and keeps
// nothing to compare a later copy with (a repeat of one of them counts as
// a duplicate not compared). ItemStart and ItemTrimmed are emitted as Add
// would; with AssemblerOptions.Eager, so is the gap before the run.
//
// It reports false, and does nothing, when the run cannot simply be
// appended: frames of s are held back, the run does not lie after what s
// emitted, it lies after a hole and the assembler is not eager (the
// hole's frames may still come), it reaches below the trim horizon, or s
// has not started and the run starts neither at its start (0 or the
// horizon) nor, eagerly, in a segment after the writer's first. The
// caller then adds the segment's frames one by one.
func (a *Assembler) AddRun(s frames.StreamID, first, last frames.Position, bytes uint64) bool {
	st := a.stream(s)
	if last < first || !st.held.empty() || st.flags&done != 0 || first < st.before() {
		return false
	}
	switch {
	case st.flags&started != 0:
		if first < st.next || first > st.next && !a.eager {
			return false
		}
		if first > st.next {
			a.gap(st, first)
		}
	case st.startsAt(first) || st.flags&resumed != 0 && st.flags&sawFirst == 0 && a.eager:
		a.start(st, first)
	default:
		return false
	}
	if sb := st.soft(); first < sb {
		st.oddStats().Shown += uint64(min(last, sb-1)-first) + 1
	}
	if st.flags&lastHashed != 0 && st.stats.Frames > 0 {
		a.remember(st, st.stats.Last, st.lastHash) // it stays comparable
	}
	st.flags &^= lastHashed // nothing to compare with
	st.stats.Frames += uint64(last-first) + 1
	st.stats.Bytes += bytes
	st.stats.Last = last
	if last == math.MaxUint64 {
		st.flags |= done
	} else {
		st.next = last + 1
	}
	return true
}

// start starts st at position pos.
func (a *Assembler) start(st *assembly, pos frames.Position) {
	st.flags |= started
	st.next, st.run, st.stats.First = pos, pos, pos
	a.announce(st)
	if pos > max(st.before(), st.soft()) && st.flags&resumed != 0 && st.flags&sawFirst == 0 {
		st.oddStats().HeadMissing = true
		a.emit(Item{Kind: ItemStart, Stream: st.id, Frame: frames.Frame{Position: pos}})
	}
}

// hashOf returns the hash that tells copies of a position apart: of the
// frame's payload and channel (a copy on another channel differs).
func (a *Assembler) hashOf(f frames.Frame) uint64 {
	return maphash.Bytes(a.seed, f.Payload) ^ uint64(f.Channel)*0x9e3779b97f4a7c15
}

// hold holds f back; it reports false if f was a copy of a frame held in
// memory (copies of spilled frames are told apart as they come out).
func (a *Assembler) hold(st *assembly, f frames.Frame) bool {
	h := a.hashOf(f)
	if st.held == nil {
		st.held = &holding{}
	} else if len(st.held.runs) == 0 {
		// With runs spilled, an earlier copy may be among them: copies are
		// then compared as they come out, in order of arrival.
		if hh, ok := st.held.hash(f.Position); ok {
			a.duplicate(st, f, hh == h, true)
			return false
		}
	}
	if st.flags&started != 0 {
		st.flags |= disorder // not merely waiting for its start
	}
	f.Payload = bytes.Clone(f.Payload)
	st.held.push(heldFrame{f: f, hash: h, seq: a.seq})
	a.account(st, heldCost(f.Payload))
	return true
}

func heldCost(payload []byte) int { return len(payload) + heldOverhead }

// past handles a frame whose position the stream has gone past.
func (a *Assembler) past(st *assembly, f frames.Frame) {
	st.flags |= disorder
	p := f.Position
	if st.stats.Frames > 0 && p == st.stats.Last && st.flags&lastHashed != 0 {
		a.duplicate(st, f, st.lastHash == a.hashOf(f), true)
		return
	}
	if r := st.recentOf(p); r != nil {
		a.duplicate(st, f, r.hash == a.hashOf(f), true)
		return
	}
	if st.emitted(p) {
		a.duplicate(st, f, true, false)
		return
	}
	// Never emitted: in a declared gap, below the start, or forgotten.
	st.oddStats().Late++
	if p < st.soft() {
		st.oddStats().Shown++
	}
	a.markEmitted(st, p)
	a.remember(st, p, a.hashOf(f))
	a.emit(Item{Kind: ItemLate, Stream: st.id, Frame: f})
}

// duplicate counts a copy of a stored position: identical (same), not
// compared (!compared) or a conflict.
func (a *Assembler) duplicate(st *assembly, f frames.Frame, same, compared bool) {
	if same {
		st.oddStats().Duplicates++
		if !compared {
			st.oddStats().Uncompared++
		}
		return
	}
	st.oddStats().Conflicts++
	a.emit(Item{Kind: ItemConflict, Stream: st.id, Frame: f})
}

// drain emits held frames that are next in order, and the copies of
// the last one emitted. With force it emits everything held, declaring
// the gaps before them.
func (a *Assembler) drain(st *assembly, force bool) {
	for !st.held.empty() {
		if lo, _ := st.held.lowest(); !force && st.flags&done == 0 && lo > st.next {
			break
		}
		a.emitLowest(st)
	}
	a.release(st)
}

// emitLowest emits the lowest held frame of a started stream, after the
// gap before it, if any; a copy of the frame emitted last is compared
// with it.
func (a *Assembler) emitLowest(st *assembly) {
	p, ok := a.pop(st)
	if !ok {
		return // a spill file could not be read: a.err says so
	}
	switch {
	case p.f.Position < st.before():
		st.oddStats().Trimmed++
		return
	case st.flags&done != 0 || p.f.Position < st.next:
		if st.flags&lastHashed != 0 && p.f.Position == st.stats.Last {
			a.duplicate(st, p.f, p.hash == st.lastHash, true)
			return
		}
		a.past(st, p.f)
		return
	case p.f.Position != st.next:
		a.gap(st, p.f.Position)
	}
	a.emitFrame(st, p.f, p.hash, true)
}

// gap declares the gap from st.next to lo-1; its part below a capture's
// trim horizon is trimmed, not a gap.
func (a *Assembler) gap(st *assembly, lo frames.Position) {
	if sb := st.soft(); st.next < sb {
		to := min(lo, sb)
		if st.next > st.run {
			a.addSpan(st, posSpan{st.run, st.next - 1})
		}
		t := Gap{From: st.next, To: to - 1, Count: uint64(to - st.next)}
		st.run, st.next = to, to
		a.emit(Item{Kind: ItemTrimmed, Stream: st.id, Gap: t})
		if to == lo {
			return
		}
	}
	g := Gap{From: st.next, To: lo - 1, Count: uint64(lo - st.next)}
	st.oddStats().Gaps++
	st.oddStats().Missing += g.Count
	if st.next > st.run {
		a.addSpan(st, posSpan{st.run, st.next - 1})
	}
	st.run, st.next = lo, lo
	a.emit(Item{Kind: ItemGap, Stream: st.id, Gap: g})
}

// emitFrame emits f, the next frame in order; hash is its payload's hash
// when hashed is set.
func (a *Assembler) emitFrame(st *assembly, f frames.Frame, hash uint64, hashed bool) {
	if !hashed {
		hash = a.hashOf(f)
	}
	if st.flags&lastHashed != 0 && st.stats.Frames > 0 {
		// The frame emitted last leaves lastHash for the ring: every
		// emitted frame's hash is kept, as far as the budget allows.
		a.remember(st, st.stats.Last, st.lastHash)
	}
	st.lastHash = hash
	st.flags |= lastHashed
	if f.Position < st.soft() {
		st.oddStats().Shown++
	}
	st.stats.Frames++
	st.stats.Bytes += uint64(len(f.Payload))
	st.stats.Last = f.Position
	if f.Position == math.MaxUint64 {
		st.flags |= done
	} else {
		st.next = f.Position + 1
	}
	a.emit(Item{Kind: ItemFrame, Stream: st.id, Frame: f})
}

// remember keeps the hash of the frame emitted at pos, growing the ring of
// recent hashes with the frames emitted, up to maxRecent (or
// AssemblerOptions.Compare): the first freeRecent of a stream that has
// shown disorder free, the others within the history budget (a stream
// in order that finds the budget spent keeps none).
func (a *Assembler) remember(st *assembly, pos frames.Position, hash uint64) {
	free := 0
	if st.flags&disorder != 0 {
		free = freeRecent
	}
	if free == 0 && (st.hist == nil || len(st.hist.recent) == 0) && a.history+24*4 > a.maxHist {
		return // in order, and no budget left for a ring
	}
	h := st.history()
	if free > h.free {
		h.free = free
		a.recharge(h)
	}
	h.puts++
	if n := max(4, 2*len(h.recent)); h.puts > len(h.recent) && n <= max(a.compare, 4) && (n <= h.free || a.history+24*(n-max(len(h.recent), h.free)) <= a.maxHist) {
		old := h.recent
		h.recent = make([]recent, n)
		for _, r := range old {
			if r.ok {
				h.recent[uint64(r.pos)%uint64(len(h.recent))] = r
			}
		}
		a.recharge(h)
	}
	h.recent[uint64(pos)%uint64(len(h.recent))] = recent{pos: pos, hash: hash, ok: true}
}

func (st *assembly) history() *history {
	if st.hist == nil {
		st.hist = &history{}
	}
	return st.hist
}

// recentOf returns the recent hash of position p, if kept.
func (st *assembly) recentOf(p frames.Position) *recent {
	if st.hist == nil || len(st.hist.recent) == 0 {
		return nil
	}
	r := &st.hist.recent[uint64(p)%uint64(len(st.hist.recent))]
	if !r.ok || r.pos != p {
		return nil
	}
	return r
}

// emitted reports whether position p, which the stream has gone past, was
// emitted (as far as the stream remembers).
func (st *assembly) emitted(p frames.Position) bool {
	if p >= st.run && (st.flags&done != 0 || p < st.next) {
		return true
	}
	if st.hist == nil {
		return false
	}
	s := st.hist.spans
	i := sort.Search(len(s), func(i int) bool { return s[i].to >= p })
	return i < len(s) && s[i].from <= p
}

// markEmitted records that position p, below the current run, was emitted
// (late).
func (a *Assembler) markEmitted(st *assembly, p frames.Position) {
	if st.hist != nil && p < st.hist.floor {
		return // forgotten territory: nothing to record it against
	}
	defer func() {
		if st.hist != nil {
			a.recharge(st.hist)
		}
	}()
	if p+1 == st.run {
		st.run = p
		if h := st.hist; h != nil && len(h.spans) > 0 && h.spans[len(h.spans)-1].to+1 == p {
			st.run = h.spans[len(h.spans)-1].from
			h.spans = h.spans[:len(h.spans)-1]
		}
		return
	}
	h := st.history()
	s := h.spans
	i := sort.Search(len(s), func(i int) bool { return s[i].from > p }) // s[i-1].from <= p
	joinLo := i > 0 && s[i-1].to+1 == p
	joinHi := i < len(s) && s[i].from == p+1
	switch {
	case joinLo && joinHi:
		s[i-1].to = s[i].to
		h.spans = append(s[:i], s[i+1:]...)
	case joinLo:
		s[i-1].to = p
	case joinHi:
		s[i].from = p
	default:
		h.spans = append(s, posSpan{})
		copy(h.spans[i+1:], h.spans[i:])
		h.spans[i] = posSpan{p, p}
		a.trimSpans(h)
	}
}

// addSpan appends a run below the current one.
func (a *Assembler) addSpan(st *assembly, sp posSpan) {
	h := st.history()
	h.spans = append(h.spans, sp)
	a.trimSpans(h)
}

// trimSpans forgets the oldest half of the runs once there are more than
// maxSpans, or more than freeSpans when the history of all streams is
// full.
func (a *Assembler) trimSpans(h *history) {
	n := len(h.spans)
	if n > maxSpans || n > freeSpans && a.history+16 > a.maxHist {
		k := n / 2
		h.floor = h.spans[k-1].to + 1
		h.spans = append(h.spans[:0:0], h.spans[k:]...)
	}
	a.recharge(h)
}

// recharge counts in a.history what h remembers beyond a stream's free
// allowance.
func (a *Assembler) recharge(h *history) {
	c := 16*max(0, len(h.spans)-freeSpans) + 24*max(0, len(h.recent)-h.free)
	a.history += c - h.charge
	h.charge = c
}

// account adds delta bytes to what st holds in memory, keeping the list of
// streams that hold something in memory.
func (a *Assembler) account(st *assembly, delta int) {
	st.held.bytes += delta
	a.held += delta
	switch {
	case st.held.bytes > 0 && st.hidx < 0:
		st.hidx = int32(len(a.holders))
		a.holders = append(a.holders, st)
	case st.held.bytes <= 0 && st.hidx >= 0:
		i, n := int(st.hidx), len(a.holders)-1
		a.holders[i] = a.holders[n]
		a.holders[i].hidx = int32(i)
		a.holders[n] = nil
		a.holders = a.holders[:n]
		st.hidx = -1
	}
}

// enforceMemory spills what every stream holds in memory once all of it
// together is over the memory bound.
func (a *Assembler) enforceMemory() {
	if a.held > a.memory && a.spill.err == nil {
		a.spillAll()
	}
}

// release drops the storage of a stream that holds nothing any more.
func (a *Assembler) release(st *assembly) {
	if st.held != nil && st.held.empty() {
		st.held = nil
	}
}

// Flush emits everything held for every stream, declaring the gaps that
// remain: call it at the end of input, or when a live input has gone
// quiet (a frame of a declared gap that arrives after is then late).
// Streams that were waiting for a lower position start at the lowest
// held.
func (a *Assembler) Flush() {
	for _, st := range a.order {
		a.flush(st)
	}
}

// FlushStream is Flush for one stream.
func (a *Assembler) FlushStream(s frames.StreamID) {
	if st := a.streams[s]; st != nil {
		a.flush(st)
	}
}

func (a *Assembler) flush(st *assembly) {
	if st.flags&started == 0 {
		a.dropTrimmed(st)
		if st.held.empty() {
			a.announce(st) // trimmed whole: say so all the same
			return
		}
		lo, _ := st.held.lowest()
		a.start(st, lo)
	}
	if st.held.empty() {
		return
	}
	a.drain(st, true)
}

// dropTrimmed drops the frames a stream that has not started holds below
// its trim horizon (a Trimmed record read after them).
func (a *Assembler) dropTrimmed(st *assembly) {
	for !st.held.empty() {
		if lo, _ := st.held.lowest(); lo >= st.before() {
			break
		}
		if _, ok := a.pop(st); ok {
			st.oddStats().Trimmed++
		}
	}
	a.release(st)
}

// Streams returns the streams seen, in order of first appearance.
func (a *Assembler) Streams() []frames.StreamID {
	out := make([]frames.StreamID, len(a.order))
	for i, st := range a.order {
		out[i] = st.id
	}
	return out
}

// Stats returns the counters of stream s (zero if unseen).
func (a *Assembler) Stats(s frames.StreamID) StreamStats {
	if st := a.streams[s]; st != nil {
		return st.stats.full()
	}
	return StreamStats{}
}

// HeldBytes returns what the assembler holds back in memory across all
// streams, in bytes as AssemblerOptions.Memory counts them (payloads plus
// a per-frame overhead); it is at most Memory between calls, unless a
// spill failed ([Assembler.Err]).
func (a *Assembler) HeldBytes() int { return a.held }

// Holding reports whether stream s holds frames back, in memory or
// spilled: frames after a hole, or frames waiting for the stream's start.
func (a *Assembler) Holding(s frames.StreamID) bool {
	st := a.streams[s]
	return st != nil && !st.held.empty()
}

// Spilled returns how many frames and payload bytes were written to spill
// files so far.
func (a *Assembler) Spilled() (frames uint64, bytes int64) {
	return a.spill.frames, a.spill.bytes
}

// Err returns the first error of a spill file (creating, writing or
// reading one back), or nil. Frames that could not be spilled stay in
// memory; frames that could not be read back are lost, and this error
// is the only report of it: callers must check it when they are done.
func (a *Assembler) Err() error { return a.spill.err }

// Close releases the spill files. The Assembler must not be used after.
func (a *Assembler) Close() error {
	for _, st := range a.order {
		if st.held != nil {
			st.held.runs = nil
		}
	}
	return a.spill.close()
}

// The min-heap of held frames by (position, arrival).

func (hs *holding) push(x heldFrame) {
	hs.pending = append(hs.pending, x)
	switch {
	case hs.hashes != nil:
		if _, ok := hs.hashes[x.f.Position]; !ok { // the first copy's
			hs.hashes[x.f.Position] = x.hash
		}
	case len(hs.pending) > maxScannedHeld:
		hs.hashes = make(map[frames.Position]uint64, 2*len(hs.pending))
		for _, p := range hs.pending {
			if _, ok := hs.hashes[p.f.Position]; !ok {
				hs.hashes[p.f.Position] = p.hash
			}
		}
	}
	h := hs.pending
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h[i].less(&h[p]) {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func (hs *holding) popMemory() heldFrame {
	h := hs.pending
	x := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h[n] = heldFrame{}
	h = h[:n]
	for i := 0; ; {
		l := 2*i + 1
		if l >= n {
			break
		}
		if r := l + 1; r < n && h[r].less(&h[l]) {
			l = r
		}
		if !h[l].less(&h[i]) {
			break
		}
		h[i], h[l] = h[l], h[i]
		i = l
	}
	hs.pending = h
	if hs.hashes != nil {
		delete(hs.hashes, x.f.Position)
	}
	return x
}

// pop removes and returns the lowest frame st holds, from memory or from
// a spilled run; false when a run could not be read (a.spill.err).
func (a *Assembler) pop(st *assembly) (heldFrame, bool) {
	hs := st.held
	if len(hs.runs) > 0 && (len(hs.pending) == 0 || hs.runs[0].head.less(&hs.pending[0])) {
		return a.spill.pop(hs)
	}
	x := hs.popMemory()
	a.account(st, -heldCost(x.f.Payload))
	return x, true
}

package segments

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"math"
	"sort"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// Defaults of [AssemblerOptions].
const (
	// DefaultWindow is the reorder window of one stream, in bytes: the
	// most an [Assembler] holds back of a stream, waiting for a missing
	// position, before it declares the gap (8 MiB).
	DefaultWindow = 8 << 20
	// DefaultTotalWindow bounds what an [Assembler] holds back across all
	// streams, in bytes (16 MiB).
	DefaultTotalWindow = 16 << 20
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
	// maxRecent bounds the hashes of emitted frames kept per stream once
	// the stream has shown disorder (24 bytes each).
	maxRecent = 1024
	// Each stream may remember freeSpans runs and freeRecent hashes; what
	// streams remember beyond is bounded by maxHistory bytes in all: past
	// it, a stream forgets its oldest runs instead of adding one, and its
	// hashes do not grow.
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
	// by the producer but never arrived (spec §7.3).
	ItemGap
	// ItemConflict is a frame refused because another payload was already
	// stored for its position (first wins, spec §7.2; DESIGN.md §6 asks that
	// the conflict be reported). Frame holds the refused frame.
	ItemConflict
	// ItemLate is a frame that arrived after its stream had gone past its
	// position without it: its position had been declared part of a gap
	// (it trailed the others by more than the reorder window), or it lies
	// below the position the stream started at. It is shown where it
	// arrives.
	ItemLate
	// ItemStart says that the stream starts at Frame.Position (Frame has
	// no channel and no payload), and that the frames before it are not
	// in the input: the stream's first segment read is not its writer's
	// first (its header's sequence number is above 0), so the writer had
	// written earlier frames, which the input lacks (a capture whose head
	// was cut off, or a later file of a rotated capture). It is not a gap.
	// It comes right before the stream's first ItemFrame.
	ItemStart
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
	Frame  frames.Frame // ItemFrame, ItemConflict, ItemLate; ItemStart: Position only
	Gap    Gap          // ItemGap
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
	Gaps       uint64 // interior gaps declared
	Missing    uint64 // positions inside those gaps
	First      frames.Position
	Last       frames.Position
	// HeadMissing says that the stream's first segment read was not its
	// writer's first: it starts at First, and the frames before First are
	// not in the input (see ItemStart).
	HeadMissing bool
}

// AssemblerOptions configures an [Assembler]. The zero value is valid.
type AssemblerOptions struct {
	// Window is the most an Assembler holds back of one stream, in bytes
	// (payloads plus a per-frame overhead of a few hundred bytes): 0 means
	// DefaultWindow.
	Window int
	// TotalWindow is the most it holds back across all streams, in bytes:
	// 0 means the larger of DefaultTotalWindow and Window.
	TotalWindow int
}

// Assembler is streaming ingest (spec §7): it rebuilds each stream by
// position from deliveries in any order. Frames come out in position order
// per stream; duplicates collapse (first wins) and a different payload for
// a stored position is reported as a conflict; an interior hole comes out as
// a gap; a leading or trailing absence is not a gap (CONFORMANCE §3.4).
// Streams are keyed by (node, life) and never merge.
//
// # The reorder window
//
// A frame whose position is not the next one expected is held back (its
// payload copied) until the positions before it arrive. What is held is
// bounded in bytes: a held frame counts its payload plus a fixed overhead
// (a few hundred bytes) for its bookkeeping. When a stream holds more than
// Window, the gap before its lowest held frame is declared and frames flow
// again, as many as it takes to get back under Window. When all streams
// together hold more than TotalWindow, the stream holding the most is made
// to do the same, one held frame at a time, until the total is back under
// TotalWindow. A capture written by one writer is already in order and
// flows straight through, holding nothing. Within the window the result is
// exactly the store's (CONFORMANCE §3.1, §3.5).
//
// A stream starts at position 0 as soon as it arrives. A stream whose
// first segment read is not its writer's first (see [Assembler.Segment])
// starts at the first position that arrives, at once, after an [ItemStart].
// Otherwise a lower position may still arrive: the stream waits, holding
// its frames, until position 0 arrives, its window fills, or it is flushed,
// and then starts at the lowest position held.
//
// # Duplicates, conflicts and late frames
//
// A frame whose position the stream has gone past is classified by
// position. The assembler remembers which positions were emitted as
// ranges (the run since the last gap, and earlier runs): a position
// emitted before is a duplicate; any other position (one in a declared
// gap, one below where the stream started) is a late frame, emitted as
// [ItemLate] where it arrives and remembered as emitted. A stream
// remembers up to 1024 earlier runs (8 to 16 once the history budget
// below is spent): past that it forgets the oldest half, and a frame
// below what it remembers is shown late, even if it is in fact a copy of
// a frame emitted long ago.
//
// Telling a conflict from an identical copy needs the earlier payload. In
// order frames are not hashed; the assembler keeps, per stream:
//   - the length and the first and last 8 bytes of the last frame emitted
//     in order, so that a repeat of it with other content is a conflict
//     (payloads of up to 16 bytes are thus compared whole);
//   - the hash of every frame held back, so that copies of held frames are
//     compared;
//   - once the stream has shown disorder (a frame held back after the
//     stream started, or a repeat or a late frame), the hashes of the
//     frames it emits from then on, for up to the last 1024 positions
//     (the ring of hashes stops growing, at 16 or more, once the history
//     budget below is spent).
//
// A repeat of any other emitted position is counted as a duplicate in
// StreamStats.Duplicates and in StreamStats.Uncompared: if its payload
// differed, the conflict goes unseen. Hashes are 64-bit maphash values:
// two different payloads may collide, with probability 2⁻⁶⁴.
//
// # Memory
//
// An Assembler holds at most TotalWindow bytes of frames (as counted
// above), plus about 250 bytes per stream (its state, counters and the
// assembler's index of streams), plus what streams remember of their
// history: up to 8 runs (16 bytes each) and 16 hashes (24 bytes each) per
// stream that had gaps or disorder, and beyond that a history budget of
// 8 MiB for all streams together. The work per frame is O(log held), independent of position spans
// (CONFORMANCE §3.4: positions 0 and 2^64−1).
//
// An Assembler is not safe for concurrent use.
type Assembler struct {
	window  int // per stream, bytes
	total   int // all streams, bytes
	emit    func(Item)
	streams map[frames.StreamID]*assembly
	order   []*assembly
	last    *assembly // the stream of the previous Add, to skip the map lookup
	holders []*assembly
	held    int // bytes held across all streams
	history int // bytes of history beyond each stream's free allowance
	maxHist int // maxHistory (tests lower it)
	seed    maphash.Seed
}

// NewAssembler returns an assembler that calls emit for every item, in
// order, with a reorder window of window bytes per stream (0:
// DefaultWindow) and the default total window: it is [NewAssemblerWith]
// with AssemblerOptions{Window: window}.
func NewAssembler(window int, emit func(Item)) *Assembler {
	return NewAssemblerWith(AssemblerOptions{Window: window}, emit)
}

// NewAssemblerWith returns an assembler configured by opts that calls emit
// for every item, in order.
func NewAssemblerWith(opts AssemblerOptions, emit func(Item)) *Assembler {
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	if opts.TotalWindow <= 0 {
		opts.TotalWindow = max(DefaultTotalWindow, opts.Window)
	}
	return &Assembler{
		window: opts.Window, total: opts.TotalWindow, emit: emit, maxHist: maxHistory,
		streams: make(map[frames.StreamID]*assembly), seed: maphash.MakeSeed(),
	}
}

// Flags of an assembly.
const (
	started  uint8 = 1 << iota // next and run are set
	done                       // MaxUint64 was emitted: nothing follows
	resumed                    // start at the first position that arrives
	disorder                   // the stream has shown disorder: hash what it emits
)

// assembly is the state of one stream: about 180 bytes until it needs
// more (held, hist).
type assembly struct {
	id    frames.StreamID
	next  frames.Position // the next position expected, once started
	run   frames.Position // positions run..next-1 (..MaxUint64 when done) were emitted in order
	flags uint8
	hidx  int32 // index in Assembler.holders, -1 when holding nothing
	fp    fingerprint
	held  *holding // nil until a frame is held back
	hist  *history // nil until a gap, a late frame or disorder
	stats streamCounts
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

// fingerprint is what the assembler keeps of the last frame emitted in
// order (position stats.Last): its length and first and last 8 bytes; n
// is −1 when that frame came in a run ([Assembler.AddRun]).
type fingerprint struct {
	head, tail uint64
	n          int
}

func fingerprintOf(b []byte) fingerprint {
	fp := fingerprint{n: len(b)}
	if len(b) >= 8 {
		fp.head = binary.LittleEndian.Uint64(b)
		fp.tail = binary.LittleEndian.Uint64(b[len(b)-8:])
		return fp
	}
	var buf [8]byte
	copy(buf[:], b)
	fp.head = binary.LittleEndian.Uint64(buf[:])
	fp.tail = fp.head
	return fp
}

// holding is what a stream holds back: a min-heap of frames by position,
// with their payload hashes, indexed by position once there are more than
// a few, for duplicate detection.
type holding struct {
	pending []heldFrame
	hashes  map[frames.Position]uint64 // nil while len(pending) <= maxScannedHeld
	bytes   int                        // counted as payload + heldOverhead per frame
}

// maxScannedHeld is how many held frames are searched one by one for a
// copy; beyond, they are indexed.
const maxScannedHeld = 8

// hash returns the payload hash of the frame held at position p.
func (hs *holding) hash(p frames.Position) (uint64, bool) {
	if hs.hashes != nil {
		h, ok := hs.hashes[p]
		return h, ok
	}
	for i := range hs.pending {
		if hs.pending[i].f.Position == p {
			return hs.pending[i].hash, true
		}
	}
	return 0, false
}

type heldFrame struct {
	f    frames.Frame
	hash uint64
}

// history is what a stream remembers of what it emitted before its
// current run.
type history struct {
	spans  []posSpan       // runs of emitted positions below run-1: ascending, disjoint, not adjacent
	floor  frames.Position // positions below floor were forgotten
	recent []recent        // by position % len: hashes of frames emitted since disorder
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
		a.streams[s] = st
		a.order = append(a.order, st)
	}
	return st
}

// Segment tells the assembler that a segment of stream s starts, whose
// header carries sequence number seq. When it is the first the assembler
// sees of s and seq > 0, the writer had written earlier segments of s,
// which are not in the input: s then starts at the first position that
// arrives, at once, after an [ItemStart] (StreamStats.HeadMissing). Frames
// below that position that arrive later are late.
func (a *Assembler) Segment(s frames.StreamID, seq uint64) {
	if _, ok := a.streams[s]; ok {
		return
	}
	st := a.stream(s)
	if seq > 0 {
		st.flags |= resumed
	}
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
	switch {
	case st.flags&started != 0:
		if st.flags&done == 0 && f.Position == st.next {
			a.emitFrame(st, f, 0, false) // in order: the common case
			if st.held != nil && len(st.held.pending) > 0 {
				a.drain(st, false)
			}
			return
		}
		if st.flags&done != 0 || f.Position < st.next {
			a.past(st, f)
			return
		}
	case st.flags&resumed != 0:
		a.start(st, f.Position)
		a.emitFrame(st, f, 0, false)
		return
	case f.Position == 0 && (st.held == nil || len(st.held.pending) == 0):
		// Nothing precedes position 0: a stream seen from its start
		// flows straight through.
		a.start(st, 0)
		a.emitFrame(st, f, 0, false)
		return
	}
	if !a.hold(st, f) {
		return
	}
	if st.flags&started == 0 {
		// A lower position may still arrive: wait, unless the window is
		// full.
		lo := st.held.pending[0].f.Position
		if lo != 0 && st.held.bytes <= a.window {
			a.enforceTotal()
			return
		}
		a.start(st, lo)
	}
	a.drain(st, false)
	a.enforceTotal()
}

// AddRun ingests the frames at every position from first to last of
// stream s, in order, holding bytes payload bytes in all, without their
// payloads: a segment whose summary says it holds exactly that run. It is
// [Assembler.Add] of each of those frames, except that it emits no
// ItemFrame for them (the caller counts them from the summary) and keeps
// nothing to compare a later copy with (a repeat of one of them counts as
// a duplicate not compared). Gaps before the run, and ItemStart, are
// emitted as Add would.
//
// It reports false, and does nothing, when the run cannot simply be
// appended: frames of s are held back, the run does not lie after what s
// emitted, or s has not started and the run starts neither at 0 nor in a
// segment after the writer's first (a lower position may still come). The
// caller then adds the segment's frames one by one.
func (a *Assembler) AddRun(s frames.StreamID, first, last frames.Position, bytes uint64) bool {
	st := a.stream(s)
	if last < first || st.held != nil && len(st.held.pending) > 0 || st.flags&done != 0 {
		return false
	}
	switch {
	case st.flags&started != 0:
		if first < st.next {
			return false
		}
		if first > st.next {
			a.gap(st, first)
		}
	case first == 0 || st.flags&resumed != 0:
		a.start(st, first)
	default:
		return false
	}
	st.fp = fingerprint{n: -1} // nothing to compare with
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
	if st.flags&resumed != 0 {
		st.oddStats().HeadMissing = true
		a.emit(Item{Kind: ItemStart, Stream: st.id, Frame: frames.Frame{Position: pos}})
	}
}

// hold holds f back; it reports false if f was a copy of a held frame.
func (a *Assembler) hold(st *assembly, f frames.Frame) bool {
	h := maphash.Bytes(a.seed, f.Payload)
	if st.held == nil {
		st.held = &holding{}
	} else if hh, ok := st.held.hash(f.Position); ok {
		a.duplicate(st, f, hh == h, true)
		return false
	}
	if st.flags&started != 0 {
		st.flags |= disorder // not merely waiting for its start
	}
	f.Payload = bytes.Clone(f.Payload)
	st.held.push(heldFrame{f: f, hash: h})
	a.account(st, heldCost(f.Payload))
	return true
}

func heldCost(payload []byte) int { return len(payload) + heldOverhead }

// past handles a frame whose position the stream has gone past.
func (a *Assembler) past(st *assembly, f frames.Frame) {
	st.flags |= disorder
	p := f.Position
	if st.stats.Frames > 0 && p == st.stats.Last && st.fp.n >= 0 {
		fp := fingerprintOf(f.Payload)
		switch {
		case fp != st.fp:
			a.duplicate(st, f, false, true)
			return
		case fp.n <= 16:
			a.duplicate(st, f, true, true)
			return
		}
	}
	if r := st.recentOf(p); r != nil {
		a.duplicate(st, f, r.hash == maphash.Bytes(a.seed, f.Payload), true)
		return
	}
	if st.emitted(p) {
		a.duplicate(st, f, true, false)
		return
	}
	// Never emitted: in a declared gap, below the start, or forgotten.
	st.oddStats().Late++
	a.markEmitted(st, p)
	a.remember(st, p, maphash.Bytes(a.seed, f.Payload))
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

// drain emits held frames that are next in order. While the stream holds
// more than the window (or with force, while it holds anything) it
// declares the gap before its lowest held frame and goes on.
func (a *Assembler) drain(st *assembly, force bool) {
	for st.held != nil && len(st.held.pending) > 0 {
		if st.held.pending[0].f.Position != st.next && !force && st.held.bytes <= a.window {
			break
		}
		a.emitLowest(st)
	}
	a.release(st)
}

// emitLowest emits the lowest held frame of a started stream, after the
// gap before it, if any.
func (a *Assembler) emitLowest(st *assembly) {
	hs := st.held
	p := hs.pop()
	a.account(st, -heldCost(p.f.Payload))
	if st.flags&done != 0 {
		a.past(st, p.f) // unreachable: nothing is held above MaxUint64
		return
	}
	if p.f.Position != st.next {
		a.gap(st, p.f.Position)
	}
	a.emitFrame(st, p.f, p.hash, true)
}

// gap declares the gap from st.next to lo-1.
func (a *Assembler) gap(st *assembly, lo frames.Position) {
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
	if st.flags&disorder != 0 {
		if !hashed {
			hash = maphash.Bytes(a.seed, f.Payload)
		}
		a.remember(st, f.Position, hash)
	}
	st.fp = fingerprintOf(f.Payload)
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
// recent hashes with the frames emitted, up to maxRecent.
func (a *Assembler) remember(st *assembly, pos frames.Position, hash uint64) {
	h := st.history()
	h.puts++
	if n := max(4, 2*len(h.recent)); h.puts > len(h.recent) && n <= maxRecent && (n <= freeRecent || a.history+24*(n-len(h.recent)) <= a.maxHist) {
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
	c := 16*max(0, len(h.spans)-freeSpans) + 24*max(0, len(h.recent)-freeRecent)
	a.history += c - h.charge
	h.charge = c
}

// account adds delta bytes to what st holds.
func (a *Assembler) account(st *assembly, delta int) {
	st.held.bytes += delta
	a.held += delta
	switch {
	case st.held.bytes > 0 && st.hidx < 0:
		st.hidx = int32(len(a.holders))
		a.holders = append(a.holders, st)
		a.holderUp(int(st.hidx))
	case st.held.bytes > 0:
		if delta > 0 {
			a.holderUp(int(st.hidx))
		} else {
			a.holderDown(int(st.hidx))
		}
	case st.hidx >= 0:
		i, n := int(st.hidx), len(a.holders)-1
		a.holderSwap(i, n)
		a.holders[n] = nil
		a.holders = a.holders[:n]
		st.hidx = -1
		if i < n {
			a.holderDown(i)
			a.holderUp(i)
		}
	}
}

// enforceTotal makes the streams holding the most emit until all streams
// together hold at most the total window.
func (a *Assembler) enforceTotal() {
	for a.held > a.total && len(a.holders) > 0 {
		st := a.holders[0]
		if st.flags&started == 0 {
			a.start(st, st.held.pending[0].f.Position)
		}
		a.emitLowest(st)
		a.drain(st, false)
	}
}

// release drops the storage of a stream that holds nothing any more.
func (a *Assembler) release(st *assembly) {
	if st.held != nil && len(st.held.pending) == 0 {
		st.held = nil
	}
}

// Flush emits everything held for every stream, declaring the gaps that
// remain (call it at the end of input, or when a follower has been idle).
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
	if st.held == nil || len(st.held.pending) == 0 {
		return
	}
	if st.flags&started == 0 {
		a.start(st, st.held.pending[0].f.Position)
	}
	a.drain(st, true)
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

// HeldBytes returns what the assembler holds back across all streams, in
// bytes as the window counts them (payloads plus a per-frame overhead);
// it is at most the total window between calls.
func (a *Assembler) HeldBytes() int { return a.held }

// The min-heap of held frames by position.

func (hs *holding) push(x heldFrame) {
	hs.pending = append(hs.pending, x)
	switch {
	case hs.hashes != nil:
		hs.hashes[x.f.Position] = x.hash
	case len(hs.pending) > maxScannedHeld:
		hs.hashes = make(map[frames.Position]uint64, 2*len(hs.pending))
		for _, p := range hs.pending {
			hs.hashes[p.f.Position] = p.hash
		}
	}
	h := hs.pending
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if h[p].f.Position <= h[i].f.Position {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func (hs *holding) pop() heldFrame {
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
		if r := l + 1; r < n && h[r].f.Position < h[l].f.Position {
			l = r
		}
		if h[i].f.Position <= h[l].f.Position {
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

// The max-heap of holding streams by bytes held.

func (a *Assembler) holderSwap(i, j int) {
	h := a.holders
	h[i], h[j] = h[j], h[i]
	h[i].hidx, h[j].hidx = int32(i), int32(j)
}

func (a *Assembler) holderUp(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if a.holders[p].held.bytes >= a.holders[i].held.bytes {
			return
		}
		a.holderSwap(p, i)
		i = p
	}
}

func (a *Assembler) holderDown(i int) {
	h := a.holders
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		if r := l + 1; r < len(h) && h[r].held.bytes > h[l].held.bytes {
			l = r
		}
		if h[i].held.bytes >= h[l].held.bytes {
			return
		}
		a.holderSwap(i, l)
		i = l
	}
}

package views

import (
	"bytes"
	"container/heap"
	"hash/maphash"
	"math"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// DefaultWindow is the reorder window of an [Assembler] in frames per
// stream: how many out-of-order frames it holds back waiting for a missing
// position before it declares a gap.
const DefaultWindow = 1 << 16

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
	// ItemLate is a frame that arrived after its position had been declared
	// part of a gap, because it trailed the others by more than the reorder
	// window. It is shown where it arrives.
	ItemLate
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
	Frame  frames.Frame // ItemFrame, ItemConflict, ItemLate
	Gap    Gap          // ItemGap
}

// StreamStats counts what the assembler saw of one stream.
type StreamStats struct {
	Frames     uint64 // frames emitted in order
	Bytes      uint64 // payload bytes of those frames
	Duplicates uint64 // identical copies of a stored position, dropped
	Conflicts  uint64 // different payloads for a stored position, refused
	Late       uint64 // frames that arrived after their gap was declared
	Gaps       uint64 // interior gaps declared
	Missing    uint64 // positions inside those gaps
	First      frames.Position
	Last       frames.Position
}

// Assembler is streaming ingest (spec §7): it rebuilds each stream by
// position from deliveries in any order. Frames come out in position order
// per stream; duplicates collapse (first wins) and a different payload for
// a stored position is reported as a conflict; an interior hole comes out as
// a gap; a leading or trailing absence is not a gap (CONFORMANCE §3.4).
// Streams are keyed by (node, life) and never merge.
//
// Memory is bounded by the reorder window: at most window frames per stream
// are held back. A capture written by one writer is already in order and
// flows straight through. Within the window the result is exactly the
// store's (CONFORMANCE §3.1, §3.5); a frame that trails by more than the
// window is reported as [ItemLate] where it arrives. Duplicate and conflict
// detection covers the held-back frames and the last window emitted ones.
// The work per frame is O(log window), independent of position spans
// (CONFORMANCE §3.4: positions 0 and 2^64−1).
//
// An Assembler is not safe for concurrent use.
type Assembler struct {
	window  int
	emit    func(Item)
	streams map[frames.StreamID]*assembly
	order   []frames.StreamID
	last    *assembly // the stream of the previous Add, to skip the map lookup
	seed    maphash.Seed
}

// NewAssembler returns an assembler that calls emit for every item, in
// order. window ≤ 0 means DefaultWindow.
func NewAssembler(window int, emit func(Item)) *Assembler {
	if window <= 0 {
		window = DefaultWindow
	}
	return &Assembler{window: window, emit: emit, streams: make(map[frames.StreamID]*assembly), seed: maphash.MakeSeed()}
}

type recent struct {
	pos  frames.Position
	hash uint64
	ok   bool
}

type assembly struct {
	id      frames.StreamID
	started bool
	done    bool // the last emitted position was MaxUint64
	next    frames.Position
	pending frameHeap
	held    map[frames.Position]uint64 // held-back position → payload hash
	recent  []recent                   // ring by position % len
	gaps    []Gap                      // declared gaps, for late detection (bounded)
	stats   StreamStats
}

// Add ingests one frame of stream s. f.Payload need only be valid during
// the call: a frame emitted at once is passed on as it is, and a frame held
// back is copied.
func (a *Assembler) Add(s frames.StreamID, f frames.Frame) {
	st := a.last
	if st == nil || st.id != s {
		st = a.streams[s]
	}
	if st == nil {
		st = &assembly{id: s, held: make(map[frames.Position]uint64), recent: make([]recent, min(a.window, 1<<16))}
		a.streams[s] = st
		a.order = append(a.order, s)
	}
	a.last = st
	h := maphash.Bytes(a.seed, f.Payload)
	if st.started && (st.done || f.Position < st.next) {
		a.past(st, f, h)
		return
	}
	if st.started && f.Position == st.next && len(st.pending) == 0 {
		a.emitFrame(st, held{f: f, hash: h}) // in order: the common case
		return
	}
	if hh, ok := st.held[f.Position]; ok {
		a.duplicate(st, f, hh == h)
		return
	}
	st.held[f.Position] = h
	f.Payload = bytes.Clone(f.Payload)
	heap.Push(&st.pending, held{f: f, hash: h})
	if !st.started {
		// Nothing precedes position 0, so a stream whose first frame is
		// there (every capture from its start) flows straight through;
		// otherwise wait for the window to fill, since a lower position
		// may still arrive.
		if len(st.pending) <= a.window && st.pending[0].f.Position != 0 {
			return
		}
		st.started, st.next = true, st.pending[0].f.Position
		st.stats.First = st.next
	}
	a.drain(st, false)
}

// past handles a frame whose position is below the next expected one.
func (a *Assembler) past(st *assembly, f frames.Frame, h uint64) {
	r := st.recent[uint64(f.Position)%uint64(len(st.recent))]
	if r.ok && r.pos == f.Position {
		a.duplicate(st, f, r.hash == h)
		return
	}
	for _, g := range st.gaps {
		if f.Position >= g.From && f.Position <= g.To {
			st.stats.Late++
			a.emit(Item{Kind: ItemLate, Stream: st.id, Frame: f})
			return
		}
	}
	// Older than anything remembered: most likely a duplicate of a frame
	// long emitted. Count it; there is nothing left to compare it with.
	st.stats.Duplicates++
}

func (a *Assembler) duplicate(st *assembly, f frames.Frame, same bool) {
	if same {
		st.stats.Duplicates++
		return
	}
	st.stats.Conflicts++
	a.emit(Item{Kind: ItemConflict, Stream: st.id, Frame: f})
}

// drain emits held frames that are next in order; with force (or when more
// than window are held) it declares the gap before the lowest held frame.
func (a *Assembler) drain(st *assembly, force bool) {
	for len(st.pending) > 0 {
		lo := st.pending[0].f.Position
		if lo != st.next {
			if !force && len(st.pending) <= a.window {
				return
			}
			g := Gap{From: st.next, To: lo - 1, Count: uint64(lo - st.next)}
			st.stats.Gaps++
			st.stats.Missing += g.Count
			if len(st.gaps) < 1<<16 {
				st.gaps = append(st.gaps, g)
			}
			a.emit(Item{Kind: ItemGap, Stream: st.id, Gap: g})
		}
		p := heap.Pop(&st.pending).(held)
		delete(st.held, p.f.Position)
		a.emitFrame(st, p)
		if st.done {
			// Nothing can follow MaxUint64; anything still held is a duplicate.
			for len(st.pending) > 0 {
				q := heap.Pop(&st.pending).(held)
				delete(st.held, q.f.Position)
				a.past(st, q.f, q.hash)
			}
			return
		}
	}
}

func (a *Assembler) emitFrame(st *assembly, p held) {
	st.recent[uint64(p.f.Position)%uint64(len(st.recent))] = recent{pos: p.f.Position, hash: p.hash, ok: true}
	st.stats.Frames++
	st.stats.Bytes += uint64(len(p.f.Payload))
	st.stats.Last = p.f.Position
	if p.f.Position == math.MaxUint64 {
		st.done = true
	} else {
		st.next = p.f.Position + 1
	}
	a.emit(Item{Kind: ItemFrame, Stream: st.id, Frame: p.f})
}

// Flush emits everything held for every stream, declaring the gaps that
// remain (call it at the end of input, or when a follower has been idle).
func (a *Assembler) Flush() {
	for _, s := range a.order {
		a.FlushStream(s)
	}
}

// FlushStream is Flush for one stream.
func (a *Assembler) FlushStream(s frames.StreamID) {
	st := a.streams[s]
	if st == nil || len(st.pending) == 0 {
		return
	}
	if !st.started {
		st.started, st.next = true, st.pending[0].f.Position
		st.stats.First = st.next
	}
	a.drain(st, true)
}

// Streams returns the streams seen, in order of first appearance.
func (a *Assembler) Streams() []frames.StreamID { return a.order }

// Stats returns the counters of stream s (zero if unseen).
func (a *Assembler) Stats(s frames.StreamID) StreamStats {
	if st := a.streams[s]; st != nil {
		return st.stats
	}
	return StreamStats{}
}

type held struct {
	f    frames.Frame
	hash uint64
}

type frameHeap []held

func (h frameHeap) Len() int           { return len(h) }
func (h frameHeap) Less(i, j int) bool { return h[i].f.Position < h[j].f.Position }
func (h frameHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *frameHeap) Push(x any)        { *h = append(*h, x.(held)) }
func (h *frameHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = held{}
	*h = old[:len(old)-1]
	return x
}

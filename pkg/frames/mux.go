package frames

import (
	"sync"
	"sync/atomic"
)

// MaxMuxCapacity is the largest queue a [Mux] accepts; larger requests are
// clamped to it (ARCHITECTURE.md rule 4.4: "the queue capacity is bounded and clamped").
// 1 Mi pending frames at 100 bytes each is about 100 MiB of payload.
const MaxMuxCapacity = 1 << 20

// DefaultMuxCapacity is the queue capacity used when 0 is asked of an
// [Endpoint]. At a 100 ms tick it absorbs 655 360 frames/s without a drop.
const DefaultMuxCapacity = 1 << 16

type pending struct {
	channel ChannelID
	payload []byte
	// lossFrames and lossBytes count the submissions refused right after
	// this one (while it was the last in the queue): the place of a loss.
	lossFrames, lossBytes uint64
}

// Mux is one stream's single position authority (ARCHITECTURE.md rule 4.4). Producers
// [Mux.Submit] payloads into a bounded queue; [Mux.Drain] takes everything
// queued and stamps each frame with the next position of the stream's one
// counter, in queue order. A submit that finds the queue full is dropped
// before a position is taken, counted, and never blocks (ARCHITECTURE.md rule 4.5).
//
// A Mux is safe for any number of concurrent producers and drainers;
// concurrent drains are serialised, so each batch holds a contiguous run of
// positions and later batches hold higher positions.
type Mux struct {
	capacity int
	maxBytes int // 0: no byte limit

	mu    sync.Mutex
	queue []pending
	bytes int // capacity of the payloads queued (and held: see Hold); guarded by mu
	// hold: drained payloads count against maxBytes until Release.
	hold     bool
	inflight int    // capacity drained and not yet released; guarded by mu
	next     uint64 // next position to assign; guarded by mu
	closed   bool   // guarded by mu
	// headLoss counts refusals that found the queue empty (a closed mux,
	// or one whose bytes are all held: see Hold); they are placed at the
	// head of the next batch.
	headLoss pending
	// space is closed and replaced when room may have been made (a drain,
	// a Release), to wake SubmitWait.
	space chan struct{}

	drainMu sync.Mutex
	spare   []pending // guarded by drainMu
	// refusals handed to DrainHooks.Loss and their bytes; guarded by drainMu
	placed, placedBytes uint64

	assigned     atomic.Uint64
	dropped      atomic.Uint64
	droppedBytes atomic.Uint64
}

// NewMux returns a mux whose queue holds capacity frames, clamped to
// [1, MaxMuxCapacity] (ARCHITECTURE.md case 1.5: capacity 0 is treated as 1).
func NewMux(capacity int) *Mux {
	capacity = min(max(capacity, 1), MaxMuxCapacity)
	return &Mux{capacity: capacity}
}

// NewMuxBytes is NewMux with a second bound: the queue also refuses a
// submission that would take the memory of its payloads past maxBytes (a
// single payload larger than maxBytes is accepted into an empty queue, so
// that no size is refused for ever). A payload counts for its capacity,
// not its length: what it holds in memory (ds wrap hands over read buffers
// that may be up to twice their payload). maxBytes ≤ 0 means no byte
// bound. A bound in bytes is what keeps a producer of large frames (ds
// wrap's output frames of up to 256 KiB) from queueing gigabytes while a
// slow consumer catches up.
func NewMuxBytes(capacity, maxBytes int) *Mux {
	m := NewMux(capacity)
	m.maxBytes = max(maxBytes, 0)
	return m
}

// Capacity returns the clamped queue capacity.
func (m *Mux) Capacity() int { return m.capacity }

// Submit queues payload on channel ch. It returns true when the payload
// entered the queue and false when the queue was full; a false return has
// been counted in [Mux.Dropped] and consumed no position (ARCHITECTURE.md rule 4.5). Submit
// never blocks on a drain. The mux takes ownership of payload: the caller
// must not modify it afterwards. The payload is never inspected.
//
// The mux also remembers where each refusal happened: after which queued
// submission (see [DrainHooks.Loss]), so a drainer can account for the loss
// in place.
func (m *Mux) Submit(ch ChannelID, payload []byte) bool {
	return m.submit(ch, payload, false)
}

// submit queues payload unless the mux is closed or, when not reserved, the
// queue has no room; a refusal is counted and placed.
func (m *Mux) submit(ch ChannelID, payload []byte, reserved bool) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	queued, _ := m.offerLocked(ch, payload, reserved)
	if !queued {
		m.refuseLocked(len(payload))
	}
	return queued
}

// offerLocked queues payload if it may, and reports whether it did and,
// if not, whether only a full queue stood in the way (a closed mux refuses
// for good). It counts nothing. Called with m.mu held.
func (m *Mux) offerLocked(ch ChannelID, payload []byte, reserved bool) (queued, full bool) {
	if m.closed {
		return false, false
	}
	if !reserved && !m.roomLocked(cap(payload)) {
		return false, true
	}
	m.queue = append(m.queue, pending{channel: ch, payload: payload})
	m.bytes += cap(payload)
	return true, false
}

// roomLocked reports whether the queue takes a payload of n bytes: it
// holds fewer than capacity frames, and the bytes stay within maxBytes (an
// empty queue, with nothing held, takes any size, so that no payload is
// refused for ever).
func (m *Mux) roomLocked(n int) bool {
	return len(m.queue) < m.capacity && (m.maxBytes <= 0 || m.bytes == 0 || m.bytes+n <= m.maxBytes)
}

// SubmitReserved queues payload on ch whatever the queue holds: it is the
// reserved lane for a producer's few records of its own (process lifecycle,
// self-health, clock), which must never be lost to the data they describe,
// as catalog declarations never are (ARCHITECTURE.md case 2.12). It keeps queue
// order with Submit, so a record submitted after some data is drained after
// it. It refuses (false, counted) only after [Mux.Close]. A caller must
// bound its own rate: nothing else does.
func (m *Mux) SubmitReserved(ch ChannelID, payload []byte) bool {
	return m.submit(ch, payload, true)
}

// SubmitWait is Submit that waits for room instead of dropping when the
// queue is full: the back-pressure a pipe or tee(1) puts on a writer
// (ds wrap --backpressure). It returns false, without queueing, when the
// mux is closed or done is closed first; the refusal is then counted as
// Submit's would be. The mux itself still never blocks: only this caller
// waits, for the next drain.
func (m *Mux) SubmitWait(ch ChannelID, payload []byte, done <-chan struct{}) bool {
	for {
		m.mu.Lock()
		queued, full := m.offerLocked(ch, payload, false)
		if queued || !full {
			if !queued {
				m.refuseLocked(len(payload))
			}
			m.mu.Unlock()
			return queued
		}
		if m.space == nil {
			m.space = make(chan struct{})
		}
		space := m.space
		m.mu.Unlock()
		select {
		case <-space:
		case <-done:
			m.mu.Lock()
			m.refuseLocked(len(payload))
			m.mu.Unlock()
			return false
		}
	}
}

// refuseLocked counts one refused submission of n bytes at the tail of the
// queue. Called with m.mu held.
func (m *Mux) refuseLocked(n int) {
	m.dropped.Add(1)
	m.droppedBytes.Add(uint64(n))
	t := &m.headLoss
	if len(m.queue) > 0 {
		t = &m.queue[len(m.queue)-1]
	}
	t.lossFrames++
	t.lossBytes += uint64(n)
}

// Close makes every later Submit fail (counted as dropped, no position).
// Submissions accepted before Close are still drained. Close is idempotent.
func (m *Mux) Close() {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
}

// Pending returns how many submissions wait for the next drain.
func (m *Mux) Pending() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.queue)
}

// PendingBytes returns the memory (capacity) of the payloads waiting for
// the next drain.
func (m *Mux) PendingBytes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bytes
}

// Hold makes drained payloads count against the byte bound until the
// drainer hands them back with [Mux.Release]: the bound then covers the
// payloads queued and the ones the drainer still holds (ds wrap: the batch
// it is writing), so that it bounds memory, not just the queue. Call it
// before any submission.
func (m *Mux) Hold() {
	m.mu.Lock()
	m.hold = true
	m.mu.Unlock()
}

// Release hands back n bytes of drained payload capacity (see Hold). More
// than is held is clamped: records a drain adds (DrainHooks) were never
// counted, so releasing them is harmless.
func (m *Mux) Release(n int) {
	m.mu.Lock()
	n = min(n, m.inflight)
	m.inflight -= n
	m.bytes -= n
	if n > 0 {
		m.wakeLocked()
	}
	m.mu.Unlock()
}

// wakeLocked wakes every SubmitWait: room may have been made. Called with
// m.mu held.
func (m *Mux) wakeLocked() {
	if m.space != nil {
		close(m.space)
		m.space = nil
	}
}

// MaxBytes returns the queue's bound in payload bytes; 0 means none.
func (m *Mux) MaxBytes() int { return m.maxBytes }

// Drain takes every queued submission, assigns positions in queue order and
// returns the frames (ARCHITECTURE.md rule 4.4 step 4). It is DrainInto(nil).
func (m *Mux) Drain() []Frame { return m.DrainInto(nil) }

// DrainInto is Drain appending to dst, so a caller can reuse one batch slice
// between ticks. A drain with nothing queued returns dst unchanged and
// changes no counter (ARCHITECTURE.md case 1.5).
func (m *Mux) DrainInto(dst []Frame) []Frame { return m.DrainWith(dst, DrainHooks{}) }

// DrainHooks let the drainer add records of its own to a batch at drain
// time, when positions are assigned: the only moment at which a record can
// be placed exactly before or between queued frames. A zero field adds
// nothing. Payloads returned are owned by the mux's caller like any frame.
type DrainHooks struct {
	// Head, when the batch is not empty (or Tail adds a record), is called
	// once, after the batch was taken from the queue, and its record gets
	// the batch's first position: a clock reading taken then is an upper bound on the
	// submission time of every frame the batch holds (ARCHITECTURE.md §4).
	Head func() (ChannelID, []byte)
	// Loss is called for each place where submissions were refused; its
	// record gets the position right after the frame they followed, so the
	// loss is accounted in place (ARCHITECTURE.md rule 4.5: the refused submissions
	// themselves never had a position).
	Loss func(LossMark) (ChannelID, []byte)
	// Tail, when set, is called once per drain, even one with nothing
	// queued, and its record gets the position after every other record of
	// the batch; LossMark.Frames and Bytes are 0. A self-health record made
	// there counts exactly the positions and the placed losses before it.
	Tail func(LossMark) (ChannelID, []byte)
}

// LossMark is one place of loss handed to [DrainHooks.Loss].
type LossMark struct {
	// Position is the position the loss record gets: the refused
	// submissions came after the frame at Position-1 (if any) and before
	// every frame at a higher position.
	Position Position
	// Frames and Bytes count the refused submissions and their payload
	// bytes.
	Frames, Bytes uint64
	// Total and TotalBytes count every refusal handed to DrainHooks.Loss
	// by this mux so far, and their payload bytes, these included.
	Total, TotalBytes uint64
}

// DrainWith is DrainInto with hooks; see [DrainHooks]. Losses are placed
// only when h.Loss is set; otherwise they are forgotten (still counted in
// [Mux.Dropped]).
func (m *Mux) DrainWith(dst []Frame, h DrainHooks) []Frame {
	m.drainMu.Lock()
	defer m.drainMu.Unlock()
	m.mu.Lock()
	batch := m.queue
	head := m.headLoss
	m.headLoss = pending{}
	m.queue = m.spare[:0]
	if m.hold {
		m.inflight = m.bytes // everything queued is now held by the drainer
	} else {
		m.bytes = 0
	}
	m.wakeLocked()
	// Positions are assigned in this critical section only, so later
	// drains get higher ones; the extra records are counted in first.
	n := uint64(len(batch))
	if h.Tail != nil {
		n++
	}
	if h.Loss != nil {
		if head.lossFrames > 0 {
			n++
		}
		for i := range batch {
			if batch[i].lossFrames > 0 {
				n++
			}
		}
	}
	withHead := h.Head != nil && n > 0
	if withHead {
		n++
	}
	base := m.next
	m.next += n
	m.mu.Unlock()
	pos := base
	add := func(ch ChannelID, payload []byte) {
		dst = append(dst, Frame{Channel: ch, Position: Position(pos), Payload: payload})
		pos++
	}
	if withHead {
		add(h.Head())
	}
	if h.Loss != nil && head.lossFrames > 0 {
		m.placed += head.lossFrames
		m.placedBytes += head.lossBytes
		add(h.Loss(LossMark{Position(pos), head.lossFrames, head.lossBytes, m.placed, m.placedBytes}))
	}
	for i, p := range batch {
		add(p.channel, p.payload)
		if h.Loss != nil && p.lossFrames > 0 {
			m.placed += p.lossFrames
			m.placedBytes += p.lossBytes
			add(h.Loss(LossMark{Position(pos), p.lossFrames, p.lossBytes, m.placed, m.placedBytes}))
		}
		batch[i] = pending{} // drop the payload reference for the GC
	}
	if h.Tail != nil {
		add(h.Tail(LossMark{Position: Position(pos), Total: m.placed, TotalBytes: m.placedBytes}))
	}
	m.assigned.Add(n)
	m.spare = batch[:0]
	return dst
}

// Assigned returns how many positions have been handed out. It changes only
// at drain time: queued submissions have no position yet (ARCHITECTURE.md case 1.1).
func (m *Mux) Assigned() uint64 { return m.assigned.Load() }

// Dropped returns how many submissions were refused because the queue was
// full (in frames or bytes) or the mux was closed. Dropped submissions never had a position.
func (m *Mux) Dropped() uint64 { return m.dropped.Load() }

// DroppedBytes returns the payload bytes of the submissions counted by
// [Mux.Dropped].
func (m *Mux) DroppedBytes() uint64 { return m.droppedBytes.Load() }

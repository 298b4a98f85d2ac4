package frames

import (
	"sync"
	"sync/atomic"
)

// MaxMuxCapacity is the largest queue a [Mux] accepts; larger requests are
// clamped to it (spec §4.4: "the queue capacity is bounded and clamped").
// 1 Mi pending frames at 100 bytes each is about 100 MiB of payload.
const MaxMuxCapacity = 1 << 20

// DefaultMuxCapacity is the queue capacity used when 0 is asked of an
// [Endpoint]. At a 100 ms tick it absorbs 655 360 frames/s without a drop.
const DefaultMuxCapacity = 1 << 16

type pending struct {
	channel ChannelID
	payload []byte
}

// Mux is one stream's single position authority (spec §4.4). Producers
// [Mux.Submit] payloads into a bounded queue; [Mux.Drain] takes everything
// queued and stamps each frame with the next position of the stream's one
// counter, in queue order. A submit that finds the queue full is dropped
// before a position is taken, counted, and never blocks (spec §4.5).
//
// A Mux is safe for any number of concurrent producers and drainers;
// concurrent drains are serialised, so each batch holds a contiguous run of
// positions and later batches hold higher positions.
type Mux struct {
	capacity int
	maxBytes int // 0: no byte limit

	mu     sync.Mutex
	queue  []pending
	bytes  int    // payload bytes queued; guarded by mu
	next   uint64 // next position to assign; guarded by mu
	closed bool   // guarded by mu

	drainMu sync.Mutex
	spare   []pending // guarded by drainMu

	assigned atomic.Uint64
	dropped  atomic.Uint64
}

// NewMux returns a mux whose queue holds capacity frames, clamped to
// [1, MaxMuxCapacity] (CONFORMANCE §1.5: capacity 0 is treated as 1).
func NewMux(capacity int) *Mux {
	capacity = min(max(capacity, 1), MaxMuxCapacity)
	return &Mux{capacity: capacity}
}

// NewMuxBytes is NewMux with a second bound: the queue also refuses a
// submission that would take its payload bytes past maxBytes (a single
// payload larger than maxBytes is accepted into an empty queue, so that no
// size is refused for ever). maxBytes ≤ 0 means no byte bound. A bound in
// bytes is what keeps a producer of large frames (ds wrap's 64 KiB output
// frames) from queueing gigabytes while a slow consumer catches up.
func NewMuxBytes(capacity, maxBytes int) *Mux {
	m := NewMux(capacity)
	m.maxBytes = max(maxBytes, 0)
	return m
}

// Capacity returns the clamped queue capacity.
func (m *Mux) Capacity() int { return m.capacity }

// Submit queues payload on channel ch. It returns true when the payload
// entered the queue and false when the queue was full; a false return has
// been counted in [Mux.Dropped] and consumed no position (spec §4.5). Submit
// never blocks on a drain. The mux takes ownership of payload: the caller
// must not modify it afterwards. The payload is never inspected.
func (m *Mux) Submit(ch ChannelID, payload []byte) bool {
	m.mu.Lock()
	if len(m.queue) >= m.capacity || m.closed ||
		(m.maxBytes > 0 && len(m.queue) > 0 && m.bytes+len(payload) > m.maxBytes) {
		m.mu.Unlock()
		m.dropped.Add(1)
		return false
	}
	m.queue = append(m.queue, pending{channel: ch, payload: payload})
	m.bytes += len(payload)
	m.mu.Unlock()
	return true
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

// Drain takes every queued submission, assigns positions in queue order and
// returns the frames (spec §4.4 step 4). It is DrainInto(nil).
func (m *Mux) Drain() []Frame { return m.DrainInto(nil) }

// DrainInto is Drain appending to dst, so a caller can reuse one batch slice
// between ticks. A drain with nothing queued returns dst unchanged and
// changes no counter (CONFORMANCE §1.5).
func (m *Mux) DrainInto(dst []Frame) []Frame {
	m.drainMu.Lock()
	defer m.drainMu.Unlock()
	m.mu.Lock()
	batch := m.queue
	base := m.next
	m.next += uint64(len(batch))
	m.queue = m.spare[:0]
	m.bytes = 0
	m.mu.Unlock()
	for i, p := range batch {
		dst = append(dst, Frame{Channel: p.channel, Position: Position(base + uint64(i)), Payload: p.payload})
		batch[i] = pending{} // drop the payload reference for the GC
	}
	m.assigned.Add(uint64(len(batch)))
	m.spare = batch[:0]
	return dst
}

// Assigned returns how many positions have been handed out. It changes only
// at drain time: queued submissions have no position yet (CONFORMANCE §1.1).
func (m *Mux) Assigned() uint64 { return m.assigned.Load() }

// Dropped returns how many submissions were refused because the queue was
// full (in frames or bytes) or the mux was closed. Dropped submissions never had a position.
func (m *Mux) Dropped() uint64 { return m.dropped.Load() }

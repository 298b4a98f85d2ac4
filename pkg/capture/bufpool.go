package capture

import (
	"math/bits"
	"sync"
)

// Payload buffers of the capture path are recycled: a producer (package
// proc, a LineFramer) builds each frame in a buffer from AllocPayload,
// and the capture loop hands it back to the pool once the frame is
// written (segments.Writer copies it). Allocating a fresh buffer per frame
// costs more than the rest of the capture path together on machines where
// page faults are slow. Buffers come in power-of-two size classes from
// 512 B to 256 KiB (proc's largest frame, and its read buffer), so a short
// line does not pin a large buffer while it waits for a tick.
const (
	minPoolShift = 9  // 512 B
	maxPoolShift = 18 // 256 KiB
)

var payloadPools [maxPoolShift - minPoolShift + 1]sync.Pool

// AllocPayload returns an empty slice with capacity for at least n bytes,
// from a pool when n is at most 256 KiB. A payload submitted to a
// capture's endpoint is handed back to the pool once written, so it must
// share memory with nothing else. It is safe for concurrent use (it fits
// proc.Options.Alloc).
func AllocPayload(n int) []byte {
	shift := max(minPoolShift, bits.Len(uint(max(n, 1)-1)))
	if shift > maxPoolShift {
		return make([]byte, 0, n)
	}
	if p, ok := payloadPools[shift-minPoolShift].Get().(*[]byte); ok {
		return (*p)[:0]
	}
	return make([]byte, 0, 1<<shift)
}

// releasePayload returns b to its pool if it came from one; b must not be
// used afterwards.
func releasePayload(b []byte) {
	c := cap(b)
	if c < 1<<minPoolShift || c > 1<<maxPoolShift || c&(c-1) != 0 {
		return
	}
	b = b[:0]
	payloadPools[bits.Len(uint(c))-1-minPoolShift].Put(&b)
}

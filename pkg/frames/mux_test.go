package frames

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// ARCHITECTURE.md case 1.1
func TestMuxDrainAssignsPositions(t *testing.T) {
	m := NewMux(1024)
	for i := range 64 {
		if !m.Submit(1, []byte(fmt.Sprint(i))) {
			t.Fatalf("submit %d refused", i)
		}
	}
	if m.Assigned() != 0 || m.Dropped() != 0 {
		t.Fatalf("before drain: assigned %d dropped %d, want 0 0", m.Assigned(), m.Dropped())
	}
	got := m.Drain()
	if len(got) != 64 {
		t.Fatalf("drained %d frames, want 64", len(got))
	}
	for i, f := range got {
		if f.Position != Position(i) || f.Channel != 1 || string(f.Payload) != fmt.Sprint(i) {
			t.Fatalf("frame %d = %+v", i, f)
		}
	}
	if m.Assigned() != 64 {
		t.Fatalf("assigned %d, want 64", m.Assigned())
	}
}

// ARCHITECTURE.md case 1.2
func TestMuxConcurrentProducersKeepOwnOrder(t *testing.T) {
	m := NewMux(1024)
	var wg sync.WaitGroup
	for p := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := range 32 {
				if !m.Submit(1, []byte{byte(p), byte(seq)}) {
					t.Errorf("producer %d seq %d refused", p, seq)
				}
			}
		}()
	}
	wg.Wait()
	if m.Assigned() != 0 {
		t.Fatalf("assigned %d before drain", m.Assigned())
	}
	got := m.Drain()
	if len(got) != 128 {
		t.Fatalf("drained %d, want 128", len(got))
	}
	last := map[byte]int{0: -1, 1: -1, 2: -1, 3: -1}
	for i, f := range got {
		if f.Position != Position(i) {
			t.Fatalf("frame %d has position %d", i, f.Position)
		}
		p, seq := f.Payload[0], int(f.Payload[1])
		if seq != last[p]+1 {
			t.Fatalf("producer %d: seq %d after %d", p, seq, last[p])
		}
		last[p] = seq
	}
}

// ARCHITECTURE.md case 1.3
func TestMuxFullQueueDropsBeforePosition(t *testing.T) {
	m := NewMux(1)
	if !m.Submit(2, []byte("first")) {
		t.Fatal("first refused")
	}
	if m.Submit(2, []byte("second")) {
		t.Fatal("second accepted by a full queue")
	}
	if m.Dropped() != 1 || m.Assigned() != 0 {
		t.Fatalf("dropped %d assigned %d, want 1 0", m.Dropped(), m.Assigned())
	}
	got := m.Drain()
	want := []Frame{{Channel: 2, Position: 0, Payload: []byte("first")}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("drain = %v, want %v", got, want)
	}
	if m.Assigned() != 1 {
		t.Fatalf("assigned %d, want 1", m.Assigned())
	}
	// The refused submit consumed no position: the next frame is 1.
	m.Submit(2, []byte("third"))
	if f := m.Drain(); f[0].Position != 1 {
		t.Fatalf("next position %d, want 1", f[0].Position)
	}
}

// ARCHITECTURE.md case 1.4, §1.5
func TestMuxEdgeCases(t *testing.T) {
	m := NewMux(0)
	if m.Capacity() != 1 {
		t.Fatalf("capacity 0 clamped to %d, want 1", m.Capacity())
	}
	if NewMux(MaxMuxCapacity*4).Capacity() != MaxMuxCapacity {
		t.Fatal("capacity not clamped to MaxMuxCapacity")
	}
	if got := m.Drain(); len(got) != 0 || m.Assigned() != 0 || m.Dropped() != 0 {
		t.Fatalf("empty drain changed something: %v %d %d", got, m.Assigned(), m.Dropped())
	}
	m.Submit(1, []byte{0xFF, 0x00})
	got := m.Drain()
	if len(got) != 1 || !bytes.Equal(got[0].Payload, []byte{0xFF, 0x00}) {
		t.Fatalf("one submit, one drain = %v", got)
	}
	if again := m.Drain(); len(again) != 0 {
		t.Fatalf("second drain yielded %v", again)
	}
}

// Property (ARCHITECTURE.md §6: drain-time positions, pre-position drops, no
// back-pressure): under random interleavings of producers and drainers,
// positions are exactly 0..assigned-1 with no gap and no reuse, each
// producer's accepted payloads keep their order, accepted + dropped =
// submitted, and a drain never interleaves out of order.
func TestMuxPropertyRandomInterleavings(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 99))
		capacity := 1 + rng.IntN(64)
		producers := 1 + rng.IntN(6)
		perProducer := 50 + rng.IntN(400)
		m := NewMux(capacity)

		var mu sync.Mutex
		var batches [][]Frame
		accepted := make([]int, producers)
		stop := make(chan struct{})
		var drainers sync.WaitGroup
		for range 1 + rng.IntN(3) {
			drainers.Add(1)
			go func() {
				defer drainers.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					// Hold the lock across the drain so that batches are
					// recorded in the order their positions were assigned.
					mu.Lock()
					if b := m.Drain(); len(b) > 0 {
						batches = append(batches, b)
					}
					mu.Unlock()
				}
			}()
		}
		var wg sync.WaitGroup
		for p := range producers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for seq := range perProducer {
					if m.Submit(ChannelID(p+1), []byte{byte(p), byte(seq >> 8), byte(seq)}) {
						accepted[p]++
					}
				}
			}()
		}
		wg.Wait()
		close(stop)
		drainers.Wait()
		if b := m.Drain(); len(b) > 0 {
			batches = append(batches, b)
		}

		var all []Frame
		for _, b := range batches {
			all = append(all, b...)
		}
		total := 0
		for _, a := range accepted {
			total += a
		}
		if len(all) != total || m.Assigned() != uint64(total) {
			t.Fatalf("seed %d: drained %d, assigned %d, accepted %d", seed, len(all), m.Assigned(), total)
		}
		if uint64(total)+m.Dropped() != uint64(producers*perProducer) {
			t.Fatalf("seed %d: accepted %d + dropped %d != submitted %d", seed, total, m.Dropped(), producers*perProducer)
		}
		last := make([]int, producers)
		for i := range last {
			last[i] = -1
		}
		for i, f := range all {
			if f.Position != Position(i) {
				t.Fatalf("seed %d: frame %d has position %d (gap, reuse or out-of-order batch)", seed, i, f.Position)
			}
			p := int(f.Payload[0])
			seq := int(f.Payload[1])<<8 | int(f.Payload[2])
			if seq <= last[p] || f.Channel != ChannelID(p+1) {
				t.Fatalf("seed %d: producer %d seq %d after %d", seed, p, seq, last[p])
			}
			last[p] = seq
		}
	}
}

// No back-pressure: a producer never blocks even when nobody drains.
func TestMuxSubmitNeverBlocks(t *testing.T) {
	m := NewMux(8)
	done := make(chan struct{})
	go func() {
		for range 100000 {
			m.Submit(1, nil)
		}
		close(done)
	}()
	<-done // a blocking Submit would hang here and the test would time out
	if m.Dropped() != 100000-8 {
		t.Fatalf("dropped %d, want %d", m.Dropped(), 100000-8)
	}
}

// A byte bound refuses submissions that would pass it, before a position.
func TestMuxByteBound(t *testing.T) {
	m := NewMuxBytes(100, 10)
	if !m.Submit(1, make([]byte, 6)) || !m.Submit(1, make([]byte, 4)) {
		t.Fatal("submissions within the bound refused")
	}
	if m.Submit(1, make([]byte, 1)) {
		t.Fatal("submission past the byte bound accepted")
	}
	if got := m.Drain(); len(got) != 2 || got[1].Position != 1 {
		t.Fatalf("drain = %v", got)
	}
	if !m.Submit(1, make([]byte, 50)) {
		t.Fatal("an oversized payload must enter an empty queue")
	}
	if m.Submit(1, []byte{1}) {
		t.Fatal("queue over its byte bound accepted more")
	}
	if m.Dropped() != 2 {
		t.Fatalf("dropped %d", m.Dropped())
	}
}

// lossRecord is what the tests' DrainHooks.Loss makes: "loss:F:B:T".
func lossHooks() DrainHooks {
	return DrainHooks{Loss: func(m LossMark) (ChannelID, []byte) {
		return 99, fmt.Appendf(nil, "loss:%d:%d:%d", m.Frames, m.Bytes, m.Total)
	}}
}

// TestMuxLossInPlace: refused submissions are accounted where they
// happened, after the frame they followed, and take no position of their
// own (ARCHITECTURE.md rule 4.5); the frames around them keep their order.
func TestMuxLossInPlace(t *testing.T) {
	m := NewMux(2)
	m.Submit(1, []byte("a"))
	m.Submit(1, []byte("b"))
	m.Submit(1, []byte("xx")) // refused after b
	m.Submit(1, []byte("yyy"))
	got := m.DrainWith(nil, lossHooks())
	m.Submit(1, []byte("c"))
	got = m.DrainWith(got, lossHooks())
	var lines []string
	for _, f := range got {
		lines = append(lines, fmt.Sprintf("%d/%d:%s", f.Position, f.Channel, f.Payload))
	}
	want := []string{"0/1:a", "1/1:b", "2/99:loss:2:5:2", "3/1:c"}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Fatalf("batch (-want +got):\n%s", diff)
	}
	if m.Dropped() != 2 || m.Assigned() != 4 {
		t.Fatalf("dropped %d assigned %d, want 2 and 4", m.Dropped(), m.Assigned())
	}
}

// TestMuxReservedLane: the reserved lane is never refused for a full queue
// and keeps queue order with Submit; only Close refuses it.
func TestMuxReservedLane(t *testing.T) {
	m := NewMuxBytes(1, 1)
	m.Submit(1, []byte("data"))
	if m.Submit(1, []byte("more")) {
		t.Fatal("full queue accepted a submission")
	}
	if !m.SubmitReserved(2, []byte("exited")) {
		t.Fatal("reserved lane refused")
	}
	got := m.DrainWith(nil, lossHooks())
	var lines []string
	for _, f := range got {
		lines = append(lines, fmt.Sprintf("%d:%s", f.Position, f.Payload))
	}
	if diff := cmp.Diff([]string{"0:data", "1:loss:1:4:1", "2:exited"}, lines); diff != "" {
		t.Fatalf("batch (-want +got):\n%s", diff)
	}
	m.Close()
	if m.SubmitReserved(2, nil) {
		t.Fatal("reserved lane accepted after Close")
	}
}

// TestMuxDrainHead: a head record takes the first position of a non-empty
// batch only.
func TestMuxDrainHead(t *testing.T) {
	m := NewMux(8)
	calls := 0
	h := DrainHooks{Head: func() (ChannelID, []byte) { calls++; return 7, []byte("clock") }}
	if got := m.DrainWith(nil, h); len(got) != 0 || calls != 0 {
		t.Fatalf("empty drain gave %v, %d head calls", got, calls)
	}
	m.Submit(1, []byte("a"))
	got := m.DrainWith(nil, h)
	if len(got) != 2 || got[0].Channel != 7 || got[0].Position != 0 || string(got[1].Payload) != "a" || got[1].Position != 1 {
		t.Fatalf("batch %+v", got)
	}
}

// TestMuxSubmitWait: a waiting submitter gets in after the next drain, in
// order, and nothing is dropped; done releases it with a counted refusal.
func TestMuxSubmitWait(t *testing.T) {
	m := NewMux(1)
	m.Submit(1, []byte("a"))
	in := make(chan bool)
	go func() { in <- m.SubmitWait(1, []byte("b"), nil) }()
	select {
	case <-in:
		t.Fatal("SubmitWait returned while the queue was full")
	case <-time.After(20 * time.Millisecond):
	}
	first := m.Drain()
	if !<-in {
		t.Fatal("SubmitWait refused after a drain made room")
	}
	second := m.Drain()
	if len(first) != 1 || len(second) != 1 || string(second[0].Payload) != "b" || m.Dropped() != 0 {
		t.Fatalf("first %v second %v dropped %d", first, second, m.Dropped())
	}
	m.Submit(1, []byte("c"))
	done := make(chan struct{})
	close(done)
	if m.SubmitWait(1, []byte("d"), done) || m.Dropped() != 1 {
		t.Fatalf("done must refuse and count: dropped %d", m.Dropped())
	}
}

// TestEndpointQueueFill: the fill is the larger of frames and bytes.
func TestEndpointQueueFill(t *testing.T) {
	e := NewEndpoint(StreamDescriptor{Stream: StreamID{Node: "n", Life: 1}}, EndpointOptions{MuxCapacity: 4, MuxMaxBytes: 100})
	ch, err := e.RegisterChannel("x", TextStream())
	if err != nil {
		t.Fatal(err)
	}
	if f := e.QueueFill(); f != 0 {
		t.Fatalf("empty queue: fill %v", f)
	}
	e.Producer().SubmitBytes(ch, make([]byte, 10))
	if f := e.QueueFill(); f != 0.25 {
		t.Fatalf("1 of 4 frames, 10 of 100 bytes: fill %v, want 0.25", f)
	}
	e.Producer().SubmitBytes(ch, make([]byte, 70))
	if f := e.QueueFill(); f != 0.8 {
		t.Fatalf("2 of 4 frames, 80 of 100 bytes: fill %v, want 0.8", f)
	}
	e.Tick()
	if f := e.QueueFill(); f != 0 {
		t.Fatalf("after a tick: fill %v", f)
	}
}

// TestMuxHoldRelease: with Hold, drained payloads count against the byte
// bound until released, so the bound covers what the drainer still holds;
// a waiting submitter gets in when memory is released, not at the drain.
func TestMuxHoldRelease(t *testing.T) {
	m := NewMuxBytes(100, 10)
	m.Hold()
	if !m.Submit(1, make([]byte, 8)) {
		t.Fatal("first submission refused")
	}
	batch := m.Drain()
	if m.Submit(1, make([]byte, 4)) {
		t.Fatal("accepted past the bound while 8 bytes are held")
	}
	in := make(chan bool)
	go func() { in <- m.SubmitWait(1, make([]byte, 4), nil) }()
	m.Drain() // nothing queued: releases nothing
	select {
	case <-in:
		t.Fatal("SubmitWait got in before anything was released")
	case <-time.After(20 * time.Millisecond):
	}
	m.Release(cap(batch[0].Payload))
	if !<-in {
		t.Fatal("SubmitWait refused after the release")
	}
	m.Release(1000) // more than held: clamped
	if got := m.PendingBytes(); got != 4 {
		t.Fatalf("pending bytes %d, want 4 (the queued payload)", got)
	}
}

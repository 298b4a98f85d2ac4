package frames

import (
	"sync"
	"testing"
)

// BenchmarkMux measures submit+drain of 100-byte frames with a drain every
// 1024 submits, one op = one frame. The payload is preallocated: the
// benchmark measures the mux, not the producer's allocation.
func BenchmarkMux(b *testing.B) {
	payload := make([]byte, 100)
	b.Run("producers=1", func(b *testing.B) {
		m := NewMux(4096)
		var batch []Frame
		b.ReportAllocs()
		b.SetBytes(100)
		for i := 0; b.Loop(); i++ {
			m.Submit(1, payload)
			if i&1023 == 1023 {
				batch = m.DrainInto(batch[:0])
			}
		}
		m.Drain()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "frames/s")
	})
	b.Run("producers=4", func(b *testing.B) {
		m := NewMux(1 << 16)
		stop := make(chan struct{})
		var drained sync.WaitGroup
		drained.Add(1)
		go func() {
			defer drained.Done()
			var batch []Frame
			for {
				select {
				case <-stop:
					return
				default:
					batch = m.DrainInto(batch[:0])
				}
			}
		}()
		b.ReportAllocs()
		b.SetBytes(100)
		b.SetParallelism(2) // 2 × GOMAXPROCS(2) = 4 producer goroutines here
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				m.Submit(1, payload)
			}
		})
		close(stop)
		drained.Wait()
		accepted := float64(b.N) - float64(m.Dropped())
		b.ReportMetric(accepted/b.Elapsed().Seconds(), "accepted-frames/s")
		b.ReportMetric(float64(m.Dropped())/float64(b.N), "dropped/op")
	})
}

// BenchmarkEndpointTick measures a producer submitting through an endpoint
// with one subscriber that empties its queue after every tick, the shape of
// ds wrap's capture loop. One op = one frame.
func BenchmarkEndpointTick(b *testing.B) {
	e := NewEndpoint(StreamDescriptor{Stream: endpointStream}, EndpointOptions{MuxCapacity: 4096})
	ch, _ := e.RegisterChannel("x", TextStream())
	s := e.Subscribe(SubscriptionRequest{}, SubscriberOptions{Capacity: 4096})
	p := e.Producer()
	payload := make([]byte, 100)
	var evs []Event
	b.ReportAllocs()
	b.SetBytes(100)
	for i := 0; b.Loop(); i++ {
		p.SubmitBytes(ch, payload)
		if i&1023 == 1023 {
			e.Tick()
			evs = s.DrainInto(evs[:0])
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "frames/s")
}

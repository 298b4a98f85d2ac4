package fleet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// BenchmarkFleet measures the throughput: 4 publishers, each a
// stream of benchFrames 100-byte text frames drained in ticks of 4096
// frames (as ds wrap's capture loop drains a fast child), to one ingester
// storing them in a store, until the store holds every frame; and, as the
// baseline in the same run, the same 4 streams written to 4 local capture
// files (zstd, as ds wrap writes them). Each reports frames/s and MB/s
// (payload bytes).
//
//	go test ./pkg/fleet -run '^$' -bench Fleet -benchtime 3x
func BenchmarkFleet(b *testing.B) {
	const streams = 4
	line := []byte(fmt.Sprintf("%-99s\n", "2026-12-01T12:00:00Z build step compiling package github.com/ds-telemetry/ds"))
	total := streams * benchFrames
	report := func(b *testing.B, d time.Duration) {
		s := d.Seconds() / float64(b.N)
		b.ReportMetric(float64(total)/s, "frames/s")
		b.ReportMetric(float64(total*len(line))/s/1e6, "MB/s")
	}
	b.Run("nats", func(b *testing.B) {
		srv := testServer(b, "")
		nc, tg := connect(b, srv.ClientURL())
		initStream(b, nc, tg.Prefix, StreamOptions{})
		var elapsed time.Duration
		for i := 0; i < b.N; i++ {
			st := tempStore(b)
			start := time.Now()
			ctx, cancel := context.WithCancel(context.Background())
			var ing sync.WaitGroup
			ing.Add(1)
			var ierr error
			go func() {
				defer ing.Done()
				_, ierr = Ingest(ctx, nc, tg, st, IngestOptions{Durable: fmt.Sprintf("bench%d", i), Stored: func(s IngestStats) {
					if s.Frames >= uint64(total) {
						cancel()
					}
				}})
			}()
			var wg sync.WaitGroup
			for s := 0; s < streams; s++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					e := frames.NewEndpoint(frames.StreamDescriptor{Stream: frames.StreamID{Node: frames.NodeID(fmt.Sprintf("bench-%d-%d", i, s)), Life: 1}}, frames.EndpointOptions{})
					p, err := NewPublisher(e, nc, tg, PublisherOptions{Compression: segments.CompressZstd, Buffer: 256 << 20})
					if err != nil {
						b.Error(err)
						return
					}
					benchWrite(e, line, func() { p.Take(true) })
					e.End()
					p.Take(true)
					c, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					if rep := p.Close(c); rep.LostFrames != 0 {
						b.Errorf("lost %d frames", rep.LostFrames)
					}
				}()
			}
			wg.Wait()
			ing.Wait()
			elapsed += time.Since(start)
			if ierr != nil {
				b.Fatal(ierr)
			}
		}
		report(b, elapsed)
	})
	b.Run("file", func(b *testing.B) {
		dir := b.TempDir()
		var elapsed time.Duration
		for i := 0; i < b.N; i++ {
			start := time.Now()
			var wg sync.WaitGroup
			for s := 0; s < streams; s++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%d-%d.dss", i, s)))
					if err != nil {
						b.Error(err)
						return
					}
					defer f.Close()
					desc := frames.StreamDescriptor{Stream: frames.StreamID{Node: frames.NodeID(fmt.Sprintf("bench-%d-%d", i, s)), Life: 1}}
					e := frames.NewEndpoint(desc, frames.EndpointOptions{})
					sub := e.Subscribe(frames.SubscriptionRequest{}, frames.SubscriberOptions{Name: "file", Capacity: frames.MaxSubscriberCapacity})
					w, err := segments.NewWriter(f, desc, nil, segments.WriterOptions{Compression: segments.CompressZstd})
					if err != nil {
						b.Error(err)
						return
					}
					var evs []frames.Event
					drain := func() {
						evs = sub.DrainInto(evs[:0])
						for _, ev := range evs {
							switch ev.Kind {
							case frames.EventChannelDeclared:
								_ = w.DeclareChannel(*ev.Channel)
							case frames.EventFrame:
								_ = w.WriteFrame(frames.Frame{Channel: ev.Frame.Channel.Channel, Position: ev.Frame.Position, Payload: ev.Frame.Payload})
							}
						}
						_ = w.Flush()
					}
					benchWrite(e, line, drain)
					e.End()
					drain()
					if err := w.Close(); err != nil {
						b.Error(err)
					}
					if err := f.Sync(); err != nil {
						b.Error(err)
					}
				}()
			}
			wg.Wait()
			elapsed += time.Since(start)
		}
		report(b, elapsed)
	})
}

// benchFrames is the frames of one benchmark stream: 25 MB of lines.
const benchFrames = 250_000

// benchWrite submits benchFrames copies of line on a text channel of e,
// ticking every 4096 frames and calling take after each tick.
func benchWrite(e *frames.Endpoint, line []byte, take func()) {
	ch, _ := e.RegisterChannel("proc.bench.stdout", frames.TextStream())
	p := e.Producer()
	for n := 0; n < benchFrames; n++ {
		p.SubmitBytes(ch, line)
		if n%4096 == 4095 {
			e.Tick()
			take()
		}
	}
	e.Tick()
	take()
}

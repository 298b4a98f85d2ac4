package hostprobe

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// BenchmarkSampleRealProc is one tick of ds host on this machine's /proc
// and /sys: the CPU, memory and network reads and the encoding of their
// records (what --interval 100ms pays ten times a second, before the
// capture writes it). Its sub-benchmarks pair the sampler's encoder
// (append) against json.Marshal, which it replaced.
func BenchmarkSampleRealProc(b *testing.B) {
	if _, err := os.Stat("/proc/stat"); err != nil {
		b.Skip("no /proc/stat here")
	}
	var e recordEncoder
	for _, enc := range []struct {
		name string
		fn   func(any) ([]byte, error)
	}{{"append", e.encode}, {"json.Marshal", json.Marshal}} {
		b.Run(enc.name, func(b *testing.B) {
			p := &Prober{}
			now := time.Now()
			p.ReadCPU(now)
			p.ReadMem(now)
			p.ReadNet(now)
			b.ReportAllocs()
			for b.Loop() {
				now = now.Add(100 * time.Millisecond)
				c, err := p.ReadCPU(now)
				if err != nil {
					b.Fatal(err)
				}
				m, err := p.ReadMem(now)
				if err != nil {
					b.Fatal(err)
				}
				n, err := p.ReadNet(now)
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range []any{c, m, n} {
					if _, err := enc.fn(r); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// discardSubmitter takes every record and keeps none.
type discardSubmitter struct{ n frames.ChannelID }

func (d *discardSubmitter) RegisterChannel(string, frames.ChannelContent) (frames.ChannelID, error) {
	d.n++
	return d.n, nil
}

func (d *discardSubmitter) SubmitBytes(frames.ChannelID, []byte) bool { return true }

// BenchmarkSamplerTick is one tick of a Sampler of host.cpu, host.mem and
// host.net on this machine's /proc and /sys, as ds host takes it: the
// reads, the records, their encoding and their submission (to a stream
// that keeps nothing). ns/op and allocs/op are per tick (three records).
func BenchmarkSamplerTick(b *testing.B) {
	if _, err := os.Stat("/proc/stat"); err != nil {
		b.Skip("no /proc/stat here")
	}
	s, err := NewSampler(&Prober{}, &discardSubmitter{}, SamplerOptions{Interval: 100 * time.Millisecond, Channels: Channels{CPU: true, Mem: true, Net: true}})
	if err != nil {
		b.Fatal(err)
	}
	s.sampleFast(0) // the priming read
	b.ReportAllocs()
	for b.Loop() {
		s.sampleFast(0)
	}
}

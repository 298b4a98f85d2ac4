package hostprobe

import (
	"encoding/json"
	"os"
	"testing"
	"time"
)

// BenchmarkSampleRealProc is one tick of ds host on this machine's /proc
// and /sys: the CPU, memory and network reads and the encoding of their
// records (what --interval 100ms pays ten times a second, before the
// capture writes it).
func BenchmarkSampleRealProc(b *testing.B) {
	if _, err := os.Stat("/proc/stat"); err != nil {
		b.Skip("no /proc/stat here")
	}
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
			if _, err := json.Marshal(r); err != nil {
				b.Fatal(err)
			}
		}
	}
}

package segments

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// heapObjects returns the bytes of heap objects, live or not yet swept.
func heapObjects() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// heapPeak samples the heap while f runs and returns its peak above what
// was live before, in bytes, as the memory tests of package views do: the
// collector runs at GOGC=25 meanwhile, so that the peak is close to what f
// keeps live.
func heapPeak(f func()) int64 {
	old := debug.SetGCPercent(25)
	defer debug.SetGCPercent(old)
	runtime.GC()
	runtime.GC()
	base := heapObjects()
	var peak int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(100 * time.Microsecond)
		defer tick.Stop()
		for {
			peak = max(peak, heapObjects())
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	f()
	close(stop)
	wg.Wait()
	return max(peak, heapObjects()) - base
}

// TestReaderMemoryLargeHeader reads captures whose header is as large as
// the format allows (16 MiB), one of a long writer identity, one of a
// catalog of 140 000 channels, from a file, and measures the reader's
// peak heap, the decoded header included, which the caller keeps:
// ds-format(5) "SIZE LIMITS" gives this figure. It used to be 40 to 48 MiB
// (the buffer grew from 16 to 17 MiB holding both, and the catalog's slice
// grew by append), then 33 to 42 MiB (the buffer grew by doubling, 8.5
// then 17 MiB); from a file that holds the header's bytes it grows to
// them at once: 32 to 35 MiB.
func TestReaderMemoryLargeHeader(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("writes and reads 32 MiB of headers")
	}
	const limit = 40 << 20
	writer := &wireformat.Header{Writer: strings.Repeat("w", wireformat.MaxHeaderSize-200), Stream: descS}
	catalog := &wireformat.Header{Writer: "ds test", Stream: descS}
	size := 0
	for i := 1; ; i++ {
		d := frames.ChannelDescriptor{Stream: streamS, ID: frames.ChannelID(i), Name: fmt.Sprintf("proc.job-%d.stdout", i), Content: frames.TextStream()}
		size += len(mustChannelBody(t, d)) + 1
		if size >= wireformat.MaxHeaderSize-200 {
			break
		}
		catalog.Channels = append(catalog.Channels, d)
	}
	paths := map[string]string{}
	for name, h := range map[string]*wireformat.Header{"writer identity": writer, "catalog": catalog} {
		h.SegmentID = [8]byte{1}
		b, err := wireformat.AppendHeader(nil, h)
		if err != nil {
			t.Fatal(err)
		}
		if b, err = wireformat.AppendFrame(b, h.Seed(), frames.Frame{Channel: 1, Payload: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		paths[name] = filepath.Join(t.TempDir(), "big.dss")
		if err := os.WriteFile(paths[name], b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writer, catalog = nil, nil
	for name, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		var kept *wireformat.Header
		peak := heapPeak(func() {
			r := NewReader(f, ReaderOptions{})
			for {
				e, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Error(err)
					break
				}
				if e.Kind == EntrySegment {
					kept = e.Header
				}
			}
		})
		f.Close()
		t.Logf("16 MiB header (%s, %d channels): peak heap %.1f MiB", name, len(kept.Channels), float64(peak)/(1<<20))
		if peak > limit {
			t.Errorf("16 MiB header (%s): peak heap %.1f MiB, want at most %d", name, float64(peak)/(1<<20), limit>>20)
		}
		runtime.KeepAlive(kept)
	}
}

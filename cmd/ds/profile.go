//go:build dsprofile

package main

// A build of ds for finding where its time and memory go, not for users:
//
//	go build -tags dsprofile -o /tmp/ds-prof ./cmd/ds
//	DS_CPUPROFILE=cpu.pprof DS_HEAPPROFILE=heap.pprof /tmp/ds-prof log big.dss >/dev/null
//	go tool pprof -sample_index=inuse_space -top /tmp/ds-prof heap.pprof
//
// DS_CPUPROFILE names a file for the CPU profile of the whole run.
// DS_HEAPPROFILE names a file for a heap profile taken at the run's peak:
// the heap is watched every 5 ms, and each time it has grown by 1 MiB past
// its highest, the collector runs (so that the profile's in-use figures are
// of that moment) and the profile is written again. The collections slow
// the run; its peak is a little lower than without them.

import (
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

func init() {
	if name := os.Getenv("DS_CPUPROFILE"); name != "" {
		f, err := os.Create(name)
		if err != nil {
			panic(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			panic(err)
		}
		atExit = append(atExit, pprof.StopCPUProfile)
	}
	if name := os.Getenv("DS_HEAPPROFILE"); name != "" {
		runtime.MemProfileRate = 4096
		go watchHeap(name)
	}
}

// watchHeap writes the heap profile to name at each new peak.
func watchHeap(name string) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak uint64
	for range time.Tick(5 * time.Millisecond) {
		metrics.Read(s)
		if v := s[0].Value.Uint64(); v > peak+1<<20 {
			peak = v
			runtime.GC()
			// Written aside, then renamed: the run may end while it is
			// being written.
			f, err := os.Create(name + ".tmp")
			if err != nil {
				continue
			}
			if pprof.Lookup("heap").WriteTo(f, 0) == nil && f.Close() == nil {
				os.Rename(name+".tmp", name)
			}
		}
	}
}

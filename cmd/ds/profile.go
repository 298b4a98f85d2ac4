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
// DS_LIVEPROFILE names a file for the heap profile of the collection that
// found the most live heap (no collection of its own: what was live at
// the run's live peak). DS_MEMCLASSES names a file for the runtime's
// memory classes at the peak of the resident set (heap objects, free
// spans not yet returned, metadata): where a peak RSS above the live heap
// comes from.

import (
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
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

func init() {
	if name := os.Getenv("DS_MEMCLASSES"); name != "" {
		go watchClasses(name)
	}
}

// watchClasses writes to name, at each new peak of the resident set
// (every 2 ms), the runtime's memory classes: where the peak's pages are
// (heap objects, free heap spans not returned, stacks, the runtime's own).
func watchClasses(name string) {
	var s []metrics.Sample
	for _, d := range metrics.All() {
		if strings.HasPrefix(d.Name, "/memory/classes/") || d.Name == "/gc/heap/goal:bytes" {
			s = append(s, metrics.Sample{Name: d.Name})
		}
	}
	var peak int64
	statm := make([]byte, 128)
	for range time.Tick(2 * time.Millisecond) {
		f, err := os.Open("/proc/self/statm")
		if err != nil {
			return
		}
		n, _ := f.Read(statm)
		f.Close()
		fields := strings.Fields(string(statm[:n]))
		if len(fields) < 2 {
			return
		}
		rss, _ := strconv.ParseInt(fields[1], 10, 64)
		rss *= int64(os.Getpagesize())
		if rss <= peak {
			continue
		}
		peak = rss
		metrics.Read(s)
		var b strings.Builder
		fmt.Fprintf(&b, "rss %.1f MiB\n", float64(rss)/(1<<20))
		for _, x := range s {
			fmt.Fprintf(&b, "%-50s %.1f MiB\n", x.Name, float64(x.Value.Uint64())/(1<<20))
		}
		os.WriteFile(name, []byte(b.String()), 0o644)
	}
}

func init() {
	if name := os.Getenv("DS_LIVEPROFILE"); name != "" {
		runtime.MemProfileRate = 4096
		go watchLive(name)
	}
}

// watchLive writes the heap profile to name each time a collection has
// found more live heap than any before (every 2 ms, no collection of its
// own): the profile's in-use figures are of that collection.
func watchLive(name string) {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var peak uint64
	for range time.Tick(2 * time.Millisecond) {
		metrics.Read(s)
		if v := s[0].Value.Uint64(); v > peak {
			peak = v
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

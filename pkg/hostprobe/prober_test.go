package hostprobe

import (
	"bytes"
	"os"
	"testing"
	"time"
)

// The real procfs files are read through descriptors kept open: each read
// gives the file's content now, and no more than maxOpenProcFiles stay
// open, the least recently read closed first.
func TestProcFilesKeptOpen(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here")
	}
	// /proc/uptime counts in 10 ms: read it twice 50 ms apart.
	a, err := readFile("/proc/uptime")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	c, err := readFile("/proc/uptime")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a, c) {
		t.Errorf("/proc/uptime read twice seconds apart 50 ms apart gave %q both times: a kept descriptor must read the file anew", a)
	}
	// Many files: the map never holds more than its bound, and every
	// read still succeeds.
	entries, err := os.ReadDir("/proc/self")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if e.Type().IsRegular() && n < 3*maxOpenProcFiles {
			if _, err := readFile("/proc/self/" + e.Name()); err == nil {
				n++
			}
		}
	}
	procFiles.mu.Lock()
	open := len(procFiles.fds)
	procFiles.mu.Unlock()
	if open > maxOpenProcFiles {
		t.Errorf("%d descriptors kept open, want at most %d", open, maxOpenProcFiles)
	}
	if _, err := readFile("/proc/uptime"); err != nil {
		t.Errorf("after %d other files: %v", n, err)
	}
}

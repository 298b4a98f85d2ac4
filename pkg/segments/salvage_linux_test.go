package segments

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// TestFullTmpfs is TestFullFileSystem on a real file system: a 200 KiB
// tmpfs, half filled, and a capture file opened as ds wrap opens one
// (O_APPEND). It needs the right to mount (root in a namespace that
// allows it) and skips otherwise.
func TestFullTmpfs(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=200k"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, 0) })
	if err := os.WriteFile(filepath.Join(dir, "fill"), make([]byte, 100000), 0o644); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dir, "c.dss")
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := logFrames(40000)
	w, err := NewWriter(f, descS, catalogS, WriterOptions{Compression: CompressZstd, Rand: detRand(4)})
	if err != nil {
		t.Fatal(err)
	}
	var werr error
	for i, fr := range want {
		if werr = w.WriteFrame(fr); werr != nil {
			break
		}
		if i%5000 == 4999 {
			if werr = w.Flush(); werr != nil {
				break
			}
		}
	}
	if werr == nil {
		werr = w.Close()
	}
	if !errors.Is(werr, syscall.ENOSPC) {
		t.Fatalf("error %v, want ENOSPC (40000 frames do not fit in 100 KiB)", werr)
	}
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	res := readAll(t, data, ReaderOptions{})
	if len(res.corrupt) > 0 || res.err != io.EOF {
		t.Fatalf("%d bytes: damage %v, end %v", len(data), res.corrupt, res.err)
	}
	n := 0
	for _, e := range res.entries {
		if e.Kind == EntryFrame {
			if e.Frame.Position != frames.Position(n) || string(e.Frame.Payload) != string(want[n].Payload) {
				t.Fatalf("frame %d read back as position %d", n, e.Frame.Position)
			}
			n++
		}
	}
	// 100 KiB of room, less the file system's own: most of it holds frames.
	if len(data) < 90000 || n < 1000 {
		t.Fatalf("the capture kept %d bytes, %d frames, of about 100 KiB of room: %v", len(data), n, werr)
	}
	t.Logf("%d bytes, %d frames: %v", len(data), n, werr)
}

package segments

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"syscall"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// A fullFile is a file on a file system with room for size bytes: a
// write beyond it writes what fits and fails with ENOSPC, as write(2)
// on a full tmpfs does.
type fullFile struct {
	data   []byte
	size   int
	writes int
}

func (f *fullFile) Write(p []byte) (int, error) {
	f.writes++
	room := f.size - len(f.data)
	if len(p) <= room {
		f.data = append(f.data, p...)
		return len(p), nil
	}
	f.data = append(f.data, p[:max(room, 0)]...)
	return max(room, 0), &fs.PathError{Op: "write", Path: "full.dss", Err: syscall.ENOSPC}
}

func (f *fullFile) Truncate(n int64) error {
	if n > int64(len(f.data)) {
		return errors.New("fullFile: truncate grows the file")
	}
	f.data = f.data[:n]
	return nil
}

func (f *fullFile) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekEnd:
		return int64(len(f.data)) + off, nil
	case io.SeekStart:
		if off != int64(len(f.data)) {
			return 0, errors.New("fullFile: writes append; seek only to the end")
		}
		return off, nil
	}
	return 0, errors.New("fullFile: unsupported seek")
}

// TestFullFileSystem: a capture written to a file system that fills up
// keeps, under their CRCs, every frame that fit (issue 21 item 9): the
// file ends at a record boundary, holds positions 0…k-1 with nothing
// damaged, and the next frame would not have fit in the room left.
func TestFullFileSystem(t *testing.T) {
	want := logFrames(4000)
	for _, comp := range []Compression{CompressZstd, CompressNone} {
		for _, size := range []int{0, 10, 100, 300, 1000, 4000, 20000, 65536, 100000, 200000, 330000} {
			t.Run(fmt.Sprintf("%v/%d", comp, size), func(t *testing.T) {
				f := &fullFile{size: size}
				w, err := NewWriter(f, descS, catalogS, WriterOptions{Compression: comp, Rand: detRand(3)})
				if err != nil {
					t.Fatal(err)
				}
				var werr error
				for i, f := range want {
					if werr = w.WriteFrame(f); werr != nil {
						break
					}
					if i%500 == 499 { // a drain tick
						if werr = w.Flush(); werr != nil {
							break
						}
					}
				}
				if werr == nil {
					werr = w.Close()
				}
				res := readAll(t, f.data, ReaderOptions{})
				if len(res.corrupt) > 0 || res.err != io.EOF {
					t.Fatalf("%d bytes of %d: damage %v, end %v", len(f.data), size, res.corrupt, res.err)
				}
				var got []frames.Frame
				for _, e := range res.entries {
					if e.Kind == EntryFrame {
						got = append(got, e.Frame)
					}
				}
				for i, g := range got {
					if g.Position != want[i].Position || string(g.Payload) != string(want[i].Payload) {
						t.Fatalf("frame %d read back as %d %q, want %d %q", i, g.Position, g.Payload, want[i].Position, want[i].Payload)
					}
				}
				if werr == nil {
					if len(got) != len(want) {
						t.Fatalf("no error, yet %d of %d frames", len(got), len(want))
					}
					return
				}
				if !errors.Is(werr, syscall.ENOSPC) {
					t.Fatalf("error %v, want ENOSPC", werr)
				}
				if len(got) == len(want) {
					return // every frame fit; the stream's end did not
				}
				if len(f.data) == 0 {
					if size >= 2000 {
						t.Fatalf("room for %d bytes, and not even the header was kept", size)
					}
					return
				}
				h, _, err := wireformat.ParseHeader(f.data)
				if err != nil {
					t.Fatal(err)
				}
				next, _ := wireformat.AppendFrame(nil, h.Seed(), want[len(got)])
				if room := size - len(f.data); room >= len(next) {
					t.Fatalf("%d frames kept, %d bytes of room left, and frame %d needed only %d: %v", len(got), room, len(got), len(next), werr)
				}
				t.Logf("%d bytes of %d: %d frames, %d writes: %v", len(f.data), size, len(got), f.writes, werr)
			})
		}
	}
}

// TestFullPipe: an output that cannot be cut back (a pipe) keeps the
// write error as it is, and salvages nothing.
func TestFullPipe(t *testing.T) {
	f := &fullFile{size: 1000}
	w, err := NewWriter(struct{ io.Writer }{f}, descS, catalogS, WriterOptions{Compression: CompressZstd, Rand: detRand(3)})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range logFrames(100) {
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	err = w.Flush()
	if !errors.Is(err, syscall.ENOSPC) || f.writes != 1 {
		t.Fatalf("Flush: %v after %d writes, want ENOSPC after 1", err, f.writes)
	}
}

// logFrames returns the frames of logEvents(streamS, n).
func logFrames(n int) []frames.Frame {
	var fs []frames.Frame
	for _, ev := range logEvents(streamS, n) {
		if ev.Kind == frames.EventFrame {
			fs = append(fs, frames.Frame{Channel: ev.Frame.Channel.Channel, Position: ev.Frame.Position, Payload: ev.Frame.Payload})
		}
	}
	return fs
}

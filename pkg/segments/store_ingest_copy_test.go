package segments

import (
	"bytes"
	"cmp"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// storeBlockBodies returns the stored bodies of the Block records of the
// captures at paths, and the frames read, in order.
func storeBlockBodies(t *testing.T, paths ...string) (map[string]bool, []frames.Frame) {
	t.Helper()
	bodies := make(map[string]bool)
	var frs []frames.Frame
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		r := NewReader(bytes.NewReader(data), ReaderOptions{SkipSummaries: true})
		for {
			e, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if body, _, ok := r.Block(); ok {
				bodies[string(body)] = true
			}
			if e.Kind == EntryFrame {
				frs = append(frs, e.Frame)
			}
		}
	}
	return bodies, frs
}

// TestStoreIngestCopiesBlocks checks that Ingest stores the blocks of a
// zstd capture unchanged (issue 23 item 3: not compressed again), and
// that a block whose frames are not all new (one is stored already, with
// another payload: a conflict) is written from the frames kept instead.
// blockCapture writes n frames of benchLines on channel 2 of stream S in
// zstd blocks of 16 KiB.
func blockCapture(t *testing.T, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, descS, []frames.ChannelDescriptor{c2}, WriterOptions{Compression: CompressZstd, BlockSize: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := w.WriteFrame(frames.Frame{Channel: 2, Position: frames.Position(i), Payload: benchLines[i%len(benchLines)]}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestStoreIngestCopiesBlocks(t *testing.T) {
	const n = 3000
	dir := t.TempDir()
	in := filepath.Join(dir, "in.dss")
	if err := os.WriteFile(in, blockCapture(t, n), 0o644); err != nil {
		t.Fatal(err)
	}
	inBodies, inFrames := storeBlockBodies(t, in)
	if len(inBodies) < 10 {
		t.Fatalf("the input has %d blocks, want >= 10", len(inBodies))
	}

	// A store that holds frame 1500 with another payload already.
	s, err := CreateStore(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var first bytes.Buffer
	w, err := NewWriter(&first, descS, []frames.ChannelDescriptor{c2}, WriterOptions{Compression: CompressZstd})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFrame(frames.Frame{Channel: 2, Position: 1500, Payload: []byte("stored first\n")}); err != nil {
		t.Fatal(err)
	}
	if err := w.EndSegment(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Ingest(context.Background(), "first.dss", bytes.NewReader(first.Bytes()), IngestOptions{}); err != nil {
		t.Fatal(err)
	}
	var conflicts int
	rep, err := s.Ingest(context.Background(), "in.dss", bytes.NewReader(blockCapture(t, n)), IngestOptions{Warn: func(error) { conflicts++ }})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Frames != n-1 || rep.Conflicts != 1 || conflicts != 1 {
		t.Fatalf("report %+v, %d warnings; want %d frames, 1 conflict", rep, conflicts, n-1)
	}
	chunks, err := filepath.Glob(filepath.Join(s.Dir(), storeStreams, "*", streamChunks, "*"))
	if err != nil || len(chunks) != 2 {
		t.Fatalf("chunks %v (%v), want 2", chunks, err)
	}
	outBodies, _ := storeBlockBodies(t, chunks...)
	copied, recompressed := 0, 0
	for b := range outBodies {
		if inBodies[b] {
			copied++
		} else {
			recompressed++
		}
	}
	// Every block but the one holding position 1500 is copied (the first
	// store's one frame is a plain record).
	if copied != len(inBodies)-1 || recompressed != 1 {
		t.Errorf("%d of the input's %d blocks copied, %d written anew; want %d and 1", copied, len(inBodies), recompressed, len(inBodies)-1)
	}

	// The store holds the input's frames but the conflicting one.
	rc, err := s.OpenStream(descS.Stream)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	var got []frames.Frame
	for _, e := range readAll(t, data, ReaderOptions{}).entries {
		if e.Kind == EntryFrame {
			got = append(got, e.Frame)
		}
	}
	// The read-out gives the chunks in name order, not by position.
	slices.SortFunc(got, func(a, b frames.Frame) int { return cmp.Compare(a.Position, b.Position) })
	if len(got) != n {
		t.Fatalf("store holds %d frames, want %d", len(got), n)
	}
	for i, f := range got {
		want := inFrames[i]
		if i == 1500 {
			want.Payload = []byte("stored first\n")
		}
		if f.Position != want.Position || f.Channel != want.Channel || !bytes.Equal(f.Payload, want.Payload) {
			t.Fatalf("frame %d: got %d ch %d %q, want %d ch %d %q", i, f.Position, f.Channel, f.Payload, want.Position, want.Channel, want.Payload)
		}
	}
}

// TestStoreIngestCommitsAtBlockEnds: a commit due by CommitBytes waits for
// the end of the input block being read, so that no block is split between
// two chunks and compressed again: with commits every few blocks, every
// block of the input is still copied unchanged, and nothing is lost.
func TestStoreIngestCommitsAtBlockEnds(t *testing.T) {
	const n = 4000
	dir := t.TempDir()
	in := filepath.Join(dir, "in.dss")
	if err := os.WriteFile(in, blockCapture(t, n), 0o644); err != nil {
		t.Fatal(err)
	}
	inBodies, inFrames := storeBlockBodies(t, in)
	s, err := CreateStore(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// 40 KiB: a commit every two or three blocks of 16 KiB, due inside one.
	rep, err := s.Ingest(context.Background(), "in.dss", bytes.NewReader(blockCapture(t, n)), IngestOptions{CommitBytes: 40 << 10, CommitInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Frames != n || rep.Commits < 5 {
		t.Fatalf("report %+v: want %d frames in 5 commits or more", rep, n)
	}
	chunks, err := filepath.Glob(filepath.Join(s.Dir(), storeStreams, "*", streamChunks, "*"))
	if err != nil {
		t.Fatal(err)
	}
	outBodies, outFrames := storeBlockBodies(t, chunks...)
	for b := range outBodies {
		if !inBodies[b] {
			t.Errorf("a block of the chunks (%d bytes) is not one of the input's", len(b))
		}
	}
	if len(outBodies) != len(inBodies) {
		t.Errorf("%d blocks in the chunks, %d in the input", len(outBodies), len(inBodies))
	}
	slices.SortFunc(outFrames, func(a, b frames.Frame) int { return cmp.Compare(a.Position, b.Position) })
	if len(outFrames) != len(inFrames) {
		t.Fatalf("%d frames stored, want %d", len(outFrames), len(inFrames))
	}
	for i := range outFrames {
		if outFrames[i].Position != inFrames[i].Position || !bytes.Equal(outFrames[i].Payload, inFrames[i].Payload) {
			t.Fatalf("frame %d differs", i)
		}
	}
}

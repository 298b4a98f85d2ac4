package segments

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strconv"
	"testing"
)

// BenchmarkStoreIngest measures Store.Ingest of a zstd capture of 200 000
// 100-byte frames (ARCHITECTURE.md §7's frame size) into a fresh store,
// beside Merge of the same capture to a zstd output: the paired baseline
// of issue 23 item 3 (ingest should cost about what merge does, both
// copying the input's blocks unchanged). One op is one whole run; ns/frame
// is the figure to compare.
func BenchmarkStoreIngest(b *testing.B) {
	const n = 200_000
	data := benchCapture(b, CompressZstd, n)
	b.Run("ingest", func(b *testing.B) {
		dir := b.TempDir()
		i := 0
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			s, err := CreateStore(filepath.Join(dir, strconv.Itoa(i)))
			if err != nil {
				b.Fatal(err)
			}
			i++
			rep, err := s.Ingest(context.Background(), "bench.dss", bytes.NewReader(data), IngestOptions{})
			if cerr := s.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				b.Fatal(err)
			}
			if rep.Frames != n {
				b.Fatalf("stored %d frames, want %d", rep.Frames, n)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/frame")
	})
	b.Run("merge", func(b *testing.B) {
		in := []MergeInput{{Name: "bench.dss", Open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }}}
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			rep, err := Merge(in, io.Discard, MergeOptions{Compression: CompressZstd})
			if err != nil {
				b.Fatal(err)
			}
			if rep.Frames != n {
				b.Fatalf("merged %d frames, want %d", rep.Frames, n)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/frame")
	})
}

package segments

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// benchLines are 100-byte log lines (ARCHITECTURE.md §7's frame size), varied
// enough that zstd does not see one line repeated.
var benchLines = func() [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	levels := []string{"INFO ", "INFO ", "INFO ", "WARN ", "DEBUG"}
	paths := []string{"/api/v1/items", "/api/v1/users", "/healthz", "/api/v2/orders", "/static/app.js"}
	lines := make([][]byte, 4096)
	for i := range lines {
		l := fmt.Sprintf("2026-11-30T08:%02d:%02d.%06dZ %s req=%08x %s %s status=%d ms=%d",
			i/60%60, i%60, rng.IntN(1e6), levels[rng.IntN(len(levels))], rng.Uint32(),
			[]string{"GET", "POST"}[rng.IntN(2)], paths[rng.IntN(len(paths))], []int{200, 200, 204, 404, 500}[rng.IntN(5)], rng.IntN(900))
		l = (l + " " + string(bytes.Repeat([]byte{'.'}, 100)))[:99] + "\n"
		lines[i] = []byte(l)
	}
	return lines
}()

// benchTick is the number of frames per Flush: one 100 ms drain tick at
// 1 M frames/s.
const benchTick = 100_000

func BenchmarkWriteFrame(b *testing.B) {
	for _, comp := range []Compression{CompressNone, CompressZstd} {
		b.Run(comp.String(), func(b *testing.B) {
			var out countWriter
			w, err := NewWriter(&out, descS, []frames.ChannelDescriptor{c2}, WriterOptions{Compression: comp})
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(100)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := w.WriteFrame(frames.Frame{Channel: 2, Position: frames.Position(i), Payload: benchLines[i%len(benchLines)]}); err != nil {
					b.Fatal(err)
				}
				if i++; i%benchTick == 0 {
					if err := w.Flush(); err != nil {
						b.Fatal(err)
					}
				}
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "frames/s")
			b.ReportMetric(float64(out.n)/float64(i), "B/frame")
		})
	}
}

type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

// benchCapture returns a capture of n 100-byte frames.
func benchCapture(b *testing.B, comp Compression, n int) []byte {
	return writeBenchCapture(b, comp, n, func(_ []byte, i int) []byte { return benchLines[i%len(benchLines)] })
}

// writeBenchCapture returns a capture of n frames of channel 2, frame i's
// payload what payload returns (it may append to dst, the previous
// payload's storage), flushed every benchTick frames as ds wrap's drain
// ticks do.
func writeBenchCapture(tb testing.TB, comp Compression, n int, payload func(dst []byte, i int) []byte) []byte {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, descS, []frames.ChannelDescriptor{c2}, WriterOptions{Compression: comp})
	if err != nil {
		tb.Fatal(err)
	}
	var p []byte
	for i := range n {
		p = payload(p, i)
		if err := w.WriteFrame(frames.Frame{Channel: 2, Position: frames.Position(i), Payload: p}); err != nil {
			tb.Fatal(err)
		}
		if i%benchTick == benchTick-1 {
			if err := w.Flush(); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func BenchmarkReaderNext(b *testing.B) {
	for _, comp := range []Compression{CompressNone, CompressZstd} {
		for _, into := range []bool{false, true} {
			name := comp.String()
			if into {
				name += "/NextInto"
			}
			b.Run(name, func(b *testing.B) {
				data := benchCapture(b, comp, 200_000)
				r := NewReader(bytes.NewReader(data), ReaderOptions{})
				var e Entry
				n := 0
				b.SetBytes(100)
				b.ReportAllocs()
				for b.Loop() {
					for {
						var err error
						if into {
							err = r.NextInto(&e)
						} else {
							e, err = r.Next()
						}
						if err == io.EOF {
							r = NewReader(bytes.NewReader(data), ReaderOptions{})
							continue
						}
						if err != nil {
							b.Fatal(err)
						}
						if e.Kind == EntryFrame {
							break
						}
					}
					n++
				}
				b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "frames/s")
			})
		}
	}
}

// seqCapture returns a zstd capture of n one-line frames "1\n", "2\n", …,
// as `ds wrap -- seq N` writes them when every line is a write: the
// per-frame read cost (issue 23 item 1) with almost no payload.
func seqCapture(b testing.TB, n int) []byte {
	return writeBenchCapture(b, CompressZstd, n, func(dst []byte, i int) []byte { return fmt.Appendf(dst[:0], "%d\n", i+1) })
}

// BenchmarkReaderNextViewSeq is the reader's part of the per-frame read
// path (block decode, inner record parse, CRC, frame decode) on one-line
// frames, as ds log reads them (NextView): ns/op is per frame.
func BenchmarkReaderNextViewSeq(b *testing.B) {
	data := seqCapture(b, 1_000_000)
	r := NewReader(bytes.NewReader(data), ReaderOptions{SkipSummaries: true})
	var e Entry
	b.ReportAllocs()
	for b.Loop() {
		for {
			err := r.NextView(&e)
			if err == io.EOF {
				r = NewReader(bytes.NewReader(data), ReaderOptions{SkipSummaries: true})
				continue
			}
			if err != nil {
				b.Fatal(err)
			}
			if e.Kind == EntryFrame {
				break
			}
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "frames/s")
}

// frameCounter is a Sink that counts frames and their bytes.
type frameCounter struct{ frames, bytes, damage int }

func (c *frameCounter) Header(SegmentHeader)             {}
func (c *frameCounter) Channel(frames.ChannelDescriptor) {}
func (c *frameCounter) Frame(_ frames.StreamID, f frames.Frame) {
	c.frames++
	c.bytes += len(f.Payload)
}
func (c *frameCounter) Ended(frames.StreamID)                          {}
func (c *frameCounter) Damage(int64, int64, bool, error)               { c.damage++ }
func (c *frameCounter) Trimmed(frames.StreamID, frames.Position, bool) {}

// BenchmarkScanSeq is Scan of a capture of one-line frames: the reader
// goroutine, the batches handed to the sink and the sink calls, as ds log
// reads a file. ns/frame is the per-frame cost; allocs/op is per capture
// of 1 M frames (per frame it must stay 0).
func BenchmarkScanSeq(b *testing.B) {
	const n = 1_000_000
	data := seqCapture(b, n)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var c frameCounter
		if err := Scan(context.Background(), bytes.NewReader(data), ScanOptions{}, &c); err != nil {
			b.Fatal(err)
		}
		if c.frames != n || c.damage != 0 {
			b.Fatalf("%d frames, %d damaged ranges, want %d frames", c.frames, c.damage, n)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N)/n, "ns/frame")
}

// TestScanAllocsPerFrame checks that Scan allocates nothing per frame
// (issue 23 item 1; an errors.As target in the reader's loop once cost one
// allocation a frame): a capture of 100 000 one-line frames costs a
// bounded number of allocations, the batches, buffers and goroutines.
func TestScanAllocsPerFrame(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	const n = 100_000
	data := seqCapture(t, n)
	var c frameCounter
	allocs := testing.AllocsPerRun(3, func() {
		c = frameCounter{}
		if err := Scan(context.Background(), bytes.NewReader(data), ScanOptions{}, &c); err != nil {
			t.Fatal(err)
		}
	})
	if c.frames != n || c.damage != 0 {
		t.Fatalf("%d frames, %d damaged ranges, want %d frames", c.frames, c.damage, n)
	}
	if allocs > n/100 {
		t.Errorf("Scan of %d frames: %.0f allocations, want at most %d (none a frame)", n, allocs, n/100)
	}
}

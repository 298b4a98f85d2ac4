package segments

import (
	"bytes"
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
	var buf bytes.Buffer
	w, err := NewWriter(&buf, descS, []frames.ChannelDescriptor{c2}, WriterOptions{Compression: comp})
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		if err := w.WriteFrame(frames.Frame{Channel: 2, Position: frames.Position(i), Payload: benchLines[i%len(benchLines)]}); err != nil {
			b.Fatal(err)
		}
		if i%benchTick == benchTick-1 {
			if err := w.Flush(); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
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

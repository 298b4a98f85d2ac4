package wireformat

import (
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// benchPayload is a 100-byte log line, the frame size of ARCHITECTURE.md §7.
var benchPayload = []byte("2026-11-30T08:00:00.123Z INFO  http request served method=GET path=/api/v1/items/42 status=200 ms=3\n")

func BenchmarkAppendFrame(b *testing.B) {
	f := frames.Frame{Channel: 1, Position: 1 << 20, Payload: benchPayload}
	buf := make([]byte, 0, 64<<10)
	b.SetBytes(int64(len(benchPayload)))
	b.ReportAllocs()
	for b.Loop() {
		if len(buf) > 60<<10 {
			buf = buf[:0]
		}
		var err error
		if buf, err = AppendFrame(buf, testSeed, f); err != nil {
			b.Fatal(err)
		}
		f.Position++
	}
}

func BenchmarkParseFrameRecord(b *testing.B) {
	rec, err := AppendFrame(nil, testSeed, frames.Frame{Channel: 1, Position: 1 << 20, Payload: benchPayload})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(benchPayload)))
	b.ReportAllocs()
	for b.Loop() {
		r, _, err := ParseRecord(rec, testSeed, 0)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ParseFrameBody(r.Body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendBlock(b *testing.B) {
	content := blockContent(DefaultBlockSize / 80)
	buf := make([]byte, 0, len(content))
	b.SetBytes(int64(len(content)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = AppendBlock(buf[:0], testSeed, content); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeBlock(b *testing.B) {
	content := blockContent(DefaultBlockSize / 80)
	rec, err := AppendBlock(nil, testSeed, content)
	if err != nil {
		b.Fatal(err)
	}
	body := rec[5 : len(rec)-4]
	dst := make([]byte, 0, len(content))
	b.SetBytes(int64(len(content)))
	b.ReportAllocs()
	for b.Loop() {
		if dst, err = DecodeBlock(dst[:0], body); err != nil {
			b.Fatal(err)
		}
	}
}

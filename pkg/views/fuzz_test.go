package views

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// FuzzInfoRender reads arbitrary bytes as a capture into an Info and into
// a LogSink printing each format: no panic, and every line of --json
// output (and the info --json document) is valid JSON.
func FuzzInfoRender(f *testing.F) {
	for _, seed := range fuzzCaptures(f) {
		f.Add(seed)
	}
	f.Fuzz(checkCapture)
}

// checkCapture is FuzzInfoRender's check of one input.
func checkCapture(t *testing.T, in []byte) {
	{
		ctx := context.Background()
		info := NewInfo(1 << 12)
		info.File("fuzz")
		if err := segments.Scan(ctx, bytes.NewReader(in), segments.ScanOptions{}, info); err != nil {
			t.Fatal(err)
		}
		info.FileSize(int64(len(in)))
		files, streams := info.Summary()
		var doc bytes.Buffer
		if err := WriteInfoJSON(&doc, files, streams); err != nil {
			t.Fatal(err)
		}
		if !json.Valid(doc.Bytes()) {
			t.Fatalf("info --json: invalid JSON:\n%s", doc.Bytes())
		}
		if err := WriteInfoText(io.Discard, files, streams); err != nil {
			t.Fatal(err)
		}
		for _, format := range []LogFormat{FormatText, FormatCat, FormatJSON} {
			var out bytes.Buffer
			p := NewPrinter(&out, LogOptions{Format: format, All: format == FormatJSON})
			sink := NewLogSink(p, 1<<12)
			sink.File = "fuzz"
			if err := segments.Scan(ctx, bytes.NewReader(in), segments.ScanOptions{}, sink); err != nil {
				t.Fatal(err)
			}
			sink.A.Flush()
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			if format != FormatJSON {
				continue
			}
			sc := bufio.NewScanner(&out)
			sc.Buffer(nil, 64<<20)
			for sc.Scan() {
				if !json.Valid(sc.Bytes()) {
					t.Fatalf("log --json: invalid line %q", sc.Bytes())
				}
			}
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// fuzzCaptures returns small real captures to seed FuzzInfoRender: the
// view fixtures, and a two-stream capture written in two segments per
// stream, whole, with its segments reordered, cut, and damaged.
func fuzzCaptures(f *testing.F) [][]byte {
	var seeds [][]byte
	paths, _ := filepath.Glob(filepath.Join("testdata", "*.dss"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	write := func(s frames.StreamID, from, to int) []byte {
		var buf bytes.Buffer
		catalog := []frames.ChannelDescriptor{
			{Stream: s, ID: 1, Name: "proc.j.stdout", Content: frames.TextStream()},
			{Stream: s, ID: 2, Name: "proc.j.lifecycle", Content: frames.JSONRecord("")},
			{Stream: s, ID: 3, Name: "datastream.health", Content: frames.JSONRecord("")},
			{Stream: s, ID: 4, Name: "datastream.clock", Content: frames.JSONRecord("")},
		}
		w, err := segments.NewWriter(&buf, frames.StreamDescriptor{Stream: s}, catalog, segments.WriterOptions{SegmentSize: 700, Rand: rand.NewChaCha8([32]byte{byte(from)})})
		if err != nil {
			f.Fatal(err)
		}
		for i := from; i < to; i++ {
			var p string
			var ch frames.ChannelID = 1
			switch i % 5 {
			case 0:
				p = fmt.Sprintf("line %d\n", i)
			case 1:
				p = fmt.Sprintf("part of %d ", i)
			case 2:
				ch, p = 4, fmt.Sprintf(`{"unix_ns":%d,"mono_ns":%d}`, 1732953600000000000+i*1e6, i*1e6)
			case 3:
				ch, p = 3, fmt.Sprintf(`{"mux_dropped":%d,"subscriber_dropped":0,"loss":{"frames":1,"bytes":10,"reason":"queue full"}}`, i)
			case 4:
				ch, p = 2, `{"event":"exited","status":{"kind":"code","value":3}}`
			}
			if err := w.WriteFrame(frames.Frame{Channel: ch, Position: frames.Position(i), Payload: []byte(p)}); err != nil {
				f.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			f.Fatal(err)
		}
		return buf.Bytes()
	}
	a := write(frames.StreamID{Node: "n", Life: 1}, 0, 7)
	b := write(frames.StreamID{Node: "n", Life: 2}, 0, 3)
	whole := append(append([]byte(nil), a...), b...)
	seeds = append(seeds, whole, append(append([]byte(nil), b...), a[len(a)/2:]...), a[:len(a)-7])
	damaged := bytes.Clone(whole)
	damaged[len(a)/3] ^= 0x40
	seeds = append(seeds, damaged, []byte{}, []byte("\x89DSS\r\n\x1a\n"))
	return seeds
}

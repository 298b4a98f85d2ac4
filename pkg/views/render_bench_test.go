package views

import (
	"fmt"
	"io"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// The printer benchmarks feed [Printer.Item] directly, in position order,
// as the assembler does for a capture written by one writer, and write to
// io.Discard: they measure rendering alone. ns/op is per frame and MB/s
// counts payload bytes.

// benchLines are one-line text frames of the kind a training job prints.
var benchLines = []string{
	"step 12345/100000 loss=0.4321 lr=3.0e-04 grad_norm=1.234 tokens/s=182734\n",
	"epoch 3 batch 812 took 0.214s\n",
	"[rank 0] saving checkpoint to /scratch/run-42/ckpt-000123.pt\n",
	"WARNING: gradient overflow, skipping step, scale=32768.0\n",
}

// benchRecords are JSON records of about 100 bytes, as written (not
// compact), as a resource sampler writes them.
var benchRecords = []string{
	`{"cpu_pct": 12.5, "mem_mb": 1024, "gpu": [{"util_pct": 97, "temp_c": 71}], "load": [1.5, 1.2, 0.9]}`,
	`{"cpu_pct":3.25,"mem_mb":20480,"rx_bytes":123456789,"tx_bytes":98765432,"note":"<ok> & \"fine\""}`,
}

// benchPrinter returns a printer on io.Discard with the channels of
// printItems (1 host.resource, 2 proc.trainer.stdout, 3 datastream.clock)
// declared on S (and on the streams given) and its columns fixed, and a
// clock reading given when clock is set.
func benchPrinter(b *testing.B, opts LogOptions, clock bool, more ...frames.StreamID) *Printer {
	b.Helper()
	p := NewPrinter(io.Discard, opts)
	for _, s := range append([]frames.StreamID{S}, more...) {
		p.Stream(frames.StreamDescriptor{Stream: s})
		p.Channel(frames.ChannelDescriptor{Stream: s, ID: 1, Name: "host.resource", Content: frames.JSONRecord("host.resource")})
		p.Channel(frames.ChannelDescriptor{Stream: s, ID: 2, Name: "proc.trainer.stdout", Content: frames.TextStream()})
		p.Channel(frames.ChannelDescriptor{Stream: s, ID: 3, Name: "datastream.clock", Content: frames.JSONRecord("datastream.clock")})
		if clock {
			p.Item(segments.Item{Kind: segments.ItemFrame, Stream: s, Frame: on(3, 0, `{"unix_ns":1732953600123456789,"mono_ns":5000}`)})
		}
	}
	if err := p.Flush(); err != nil {
		b.Fatal(err)
	}
	return p
}

// benchFrames feeds b.N frames of channel ch, cycling through payloads
// (a power of two of them), at positions 1, 2, 3, …, on stream S, or on
// the streams given in turn.
func benchFrames(b *testing.B, p *Printer, ch frames.ChannelID, payloads []string, streams ...frames.StreamID) {
	b.Helper()
	if len(payloads)&(len(payloads)-1) != 0 {
		b.Fatal("benchFrames wants a power of two of payloads")
	}
	if len(streams) == 0 {
		streams = []frames.StreamID{S}
	}
	items := make([]segments.Item, len(payloads))
	size := 0
	for i, s := range payloads {
		items[i] = segments.Item{Kind: segments.ItemFrame, Stream: streams[i%len(streams)], Frame: frames.Frame{Channel: ch, Payload: []byte(s)}}
		size += len(s)
	}
	b.SetBytes(int64(size / len(payloads)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		it := &items[i&(len(items)-1)]
		it.Frame.Position = frames.Position(i + 1)
		p.Item(*it)
	}
	if err := p.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPrinterText is ds log: one-line text frames (line), JSON records
// (record), lines split across two frames (split), and one-line text frames
// of two streams in turn (streams).
func BenchmarkPrinterText(b *testing.B) {
	b.Run("line", func(b *testing.B) {
		benchFrames(b, benchPrinter(b, LogOptions{}, true), 2, benchLines)
	})
	b.Run("record", func(b *testing.B) {
		benchFrames(b, benchPrinter(b, LogOptions{}, true), 1, benchRecords)
	})
	b.Run("split", func(b *testing.B) {
		var halves []string
		for _, l := range benchLines {
			halves = append(halves, l[:len(l)/2], l[len(l)/2:])
		}
		benchFrames(b, benchPrinter(b, LogOptions{}, true), 2, halves)
	})
	b.Run("streams", func(b *testing.B) {
		s2 := frames.StreamID{Node: "node-beta", Life: 2}
		benchFrames(b, benchPrinter(b, LogOptions{}, true, s2), 2, benchLines, S, s2)
	})
}

// BenchmarkPrinterCat is ds log --cat on one-line text frames.
func BenchmarkPrinterCat(b *testing.B) {
	benchFrames(b, benchPrinter(b, LogOptions{Format: FormatCat}, true), 2, benchLines)
}

// BenchmarkPrinterJSON is ds log --json on JSON records of about 100 bytes
// (record) and one-line text frames (text), with a clock reading; clock
// is the cost of a datastream.clock frame itself (hidden, only read).
func BenchmarkPrinterJSON(b *testing.B) {
	b.Run("record", func(b *testing.B) {
		benchFrames(b, benchPrinter(b, LogOptions{Format: FormatJSON}, true), 1, benchRecords)
	})
	b.Run("text", func(b *testing.B) {
		benchFrames(b, benchPrinter(b, LogOptions{Format: FormatJSON}, true), 2, benchLines)
	})
	b.Run("clock", func(b *testing.B) {
		var clocks []string
		for i := range 16 {
			clocks = append(clocks, fmt.Sprintf(`{"unix_ns":%d,"mono_ns":%d}`, 1732953600123456789+i*1000003, i*1000003))
		}
		benchFrames(b, benchPrinter(b, LogOptions{Format: FormatJSON}, true), 3, clocks)
	})
}

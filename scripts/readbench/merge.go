package main

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"

	"github.com/foxglove/mcap/go/mcap"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// mergeWorkload writes the inputs of scripts/bench_merge.sh: k captures
// PREFIX0.dss … of n messages each, capture j being stream bench-j#1
// (three JsonRecord channels bench.w0-2, positions 0..n-1, zstd, written
// as ds wrap writes: WriterOptions defaults), and with withMCAP the same
// messages as PREFIX0.mcap …: topics bench-j/bench.w0-2, message encoding
// "json", zstd chunks of 1 MiB with CRCs, log times 1 µs apart from the
// same start in every file (so that mcap merge interleaves them, as ds
// merge interleaves nothing: each stream is written whole). Capture j's
// messages come from its own random source, so the files are the same
// whatever the number of goroutines that write them.
func mergeWorkload(dir string, k, n int, withMCAP bool, prefix string) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for j := range k {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			mergeCapture(dir, j, n, withMCAP, prefix)
		}()
	}
	wg.Wait()
	for j := range k {
		report(filepath.Join(dir, fmt.Sprintf("%s%d.dss", prefix, j)), fmt.Sprintf("%d frames of stream bench-%d#1, 3 JsonRecord channels, zstd", n, j))
		if withMCAP {
			report(filepath.Join(dir, fmt.Sprintf("%s%d.mcap", prefix, j)), fmt.Sprintf("the same %d messages, 3 json channels, zstd chunks", n))
		}
	}
}

func mergeCapture(dir string, j, n int, withMCAP bool, prefix string) {
	r := rand.New(rand.NewPCG(2026, uint64(j)))
	s := frames.StreamID{Node: frames.NodeID(fmt.Sprintf("bench-%d", j)), Life: 1}
	d := createDSS(filepath.Join(dir, fmt.Sprintf("%s%d.dss", prefix, j)), nil, catalog(s, frames.JSONRecord("")), segments.WriterOptions{Compression: segments.CompressZstd})
	var mf *os.File
	var mbw *bufio.Writer
	var mw *mcap.Writer
	if withMCAP {
		var err error
		mf, err = os.Create(filepath.Join(dir, fmt.Sprintf("%s%d.mcap", prefix, j)))
		check(err)
		mbw = bufio.NewWriterSize(mf, 1<<20)
		mw, err = mcap.NewWriter(mbw, &mcap.WriterOptions{Chunked: true, ChunkSize: 1 << 20, Compression: mcap.CompressionZSTD, IncludeCRC: true})
		check(err)
		check(mw.WriteHeader(&mcap.Header{Profile: "", Library: "readbench"}))
		for c := range channels {
			check(mw.WriteChannel(&mcap.Channel{ID: uint16(c + 1), SchemaID: 0, Topic: fmt.Sprintf("bench-%d/bench.w%d", j, c), MessageEncoding: "json", Metadata: map[string]string{}}))
		}
	}
	const t0 = 1764489600000000000
	var buf []byte
	for i := range n {
		buf = messageFrom(r, buf[:0], i)
		check(d.w.WriteFrame(frames.Frame{Channel: frames.ChannelID(i%channels + 1), Position: frames.Position(i), Payload: buf}))
		if withMCAP {
			t := uint64(t0 + i*1000)
			check(mw.WriteMessage(&mcap.Message{ChannelID: uint16(i%channels + 1), Sequence: uint32(i), LogTime: t, PublishTime: t, Data: buf}))
		}
	}
	d.close()
	if withMCAP {
		check(mw.Close())
		check(mbw.Flush())
		check(mf.Close())
	}
}

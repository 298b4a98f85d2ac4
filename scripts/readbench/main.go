// Command readbench writes the inputs of scripts/bench_read.sh and
// scripts/mem_read.sh: one message mix written by ds's own writer, by the
// MCAP library and as plain text, so that ds's readers can be timed against
// `cat` and the mcap tool on the same data, and damaged or unusual captures
// for measuring the readers' peak memory.
//
// It is its own module (go.mod here) so that the MCAP library stays out of
// ds's module: the root's `go test ./...` does not see it.
//
//	go run . -o DIR [-n 2000000]                      # -mode read
//	go run . -mode mem -o DIR [-mib 1024] [-small 100000] [-bad 3000000] [-compress none]
//	go run . -mode peak [-timeout 10m] -- COMMAND [ARG…]
//	go run . -mode merge -o DIR [-k 8] [-n 1000000] [-mcap=false] [-prefix in]
//	go run . -mode wide -o DIR [-n 100000]
//
// The messages: N JSON objects of exactly 100 bytes and a newline,
// {"seq":…,"worker":…,"msg":"handled request ID in MS ms …"} with a
// random 64-bit request id (zstd -3 makes about 19 bytes of each), round
// robin over three channels bench.w0, bench.w1, bench.w2 (worker 0, 1, 2),
// at positions (MCAP: sequence numbers) 0..N-1; MCAP log times advance
// 1 µs a message.
//
// -mode read writes, in DIR:
//
//	raw.txt    the payloads, one a line (the cat baseline)
//	json.dss   the three channels as JsonRecord (zstd, WriterOptions defaults)
//	text.dss   the same frames on three TextStream channels: one line a frame
//	x.mcap     the same messages, schema-less channels, message encoding
//	           "json", zstd chunks of 1 MiB (the library's default) with CRCs
//
// -mode mem writes, in DIR:
//
//	big.dss    about MIB MiB of the message mix on three TextStream channels
//	           (-compress, default none: plain records, so that the file
//	           holds MIB MiB of frames and frame 3 sits at a known offset)
//	cut.dss    big.dss without its first 1,000,000 bytes (tail -c +1000001)
//	flip.dss   big.dss with one byte flipped in the 3rd frame (position 2;
//	           with zstd: 200 bytes after the first header, in the first block)
//	many.dss   SMALL tiny one-stream captures back to back (what cat of
//	           SMALL files gives), each of its own node and life: 3 short
//	           frames in a zstd block, then what Close writes
//	bad.dss    a valid segment header, then BAD back-to-back 9-byte records
//	           (StreamEnded: tag 03, length 0) whose CRC is wrong (0)
//
// -mode wide writes, in DIR, the inputs of scripts/mem_wide.sh: captures
// whose segment headers are as large as the format allows (16 MiB), each
// declaring as many channels proc.job-K.stdout as fit (about 140 000):
//
//	wide.dss   N messages of the mix on the first 100 of those channels,
//	           zstd blocks, a segment every 1 MiB of records (the default
//	           N of 30 000 makes 2 segments, each repeating the header)
//	wide2.dss  the same on a second stream (another life of the node), for
//	           ds merge and ds diff of two inputs
//
// Each mode prints one line per file: name, bytes, and what it holds.
//
// -mode merge writes the inputs of scripts/bench_merge.sh in DIR: K
// captures PREFIXj.dss of N messages each, capture j being the stream
// bench-j#1, and unless -mcap=false the same messages as PREFIXj.mcap
// (see mergeWorkload).
//
// -mode peak -- COMMAND [ARG…] runs COMMAND with its output thrown away
// (stdout to /dev/null, stderr to readbench's stderr) and prints its peak
// resident memory in KiB (the kernel's ru_maxrss, what /usr/bin/time -v
// calls "Maximum resident set size"), its wall seconds and its exit status
// ("timeout" when -timeout killed it, "signal-N" for another signal).
// The peak cannot read below readbench's own (about 6 MiB): the child
// shares its memory until it execs.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/foxglove/mcap/go/mcap"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// msgLen is the size of one message without its newline.
const msgLen = 100

// channels is the number of channels the messages are spread over.
const channels = 3

func main() {
	out := flag.String("o", "", "output directory (must exist)")
	mode := flag.String("mode", "read", "read: the read workload; merge: the merge workload; mem: the memory-probe inputs")
	n := flag.Int("n", 2_000_000, "read: number of messages")
	mib := flag.Int("mib", 1024, "mem: size of big.dss in MiB")
	small := flag.Int("small", 100_000, "mem: number of tiny captures in many.dss")
	bad := flag.Int("bad", 3_000_000, "mem: number of bad records in bad.dss")
	comp := flag.String("compress", "none", "mem: compression of big.dss, none or zstd")
	timeout := flag.Duration("timeout", 10*time.Minute, "peak: kill the command after this long")
	k := flag.Int("k", 8, "merge: number of captures")
	withMCAP := flag.Bool("mcap", true, "merge: also write the messages as MCAP files")
	prefix := flag.String("prefix", "in", "merge: file name prefix")
	flag.Parse()
	if *mode == "peak" {
		peak(flag.Args(), *timeout)
		return
	}
	if *out == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: readbench -o DIR [-mode read] [-n N]\n       readbench -o DIR -mode merge [-k K] [-n N] [-mcap=false] [-prefix P]\n       readbench -o DIR -mode mem [-mib MIB] [-small N] [-bad N] [-compress none|zstd]\n       readbench -o DIR -mode wide [-n N]\n       readbench -mode peak [-timeout D] -- COMMAND [ARG...]")
		os.Exit(2)
	}
	switch *mode {
	case "read":
		readWorkload(*out, *n)
	case "merge":
		if !isFlagSet("n") {
			*n = 1_000_000
		}
		mergeWorkload(*out, *k, *n, *withMCAP, *prefix)
	case "wide":
		if !isFlagSet("n") {
			*n = 30_000
		}
		memWide(filepath.Join(*out, "wide.dss"), streamOf, *n)
		memWide(filepath.Join(*out, "wide2.dss"), frames.StreamID{Node: streamOf.Node, Life: streamOf.Life + 1}, *n)
	case "mem":
		c, err := segments.ParseCompression(*comp)
		check(err)
		memBig(*out, int64(*mib)<<20, c)
		memMany(filepath.Join(*out, "many.dss"), *small)
		memBad(filepath.Join(*out, "bad.dss"), *bad)
	default:
		fmt.Fprintf(os.Stderr, "readbench: unknown mode %q (want read, merge, mem, wide or peak)\n", *mode)
		os.Exit(2)
	}
}

// isFlagSet reports whether flag name was given.
func isFlagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "readbench:", err)
		os.Exit(1)
	}
}

// rng makes the request ids and latencies: without them the messages
// would compress far better than real logs do.
var rng = rand.New(rand.NewPCG(2026, 9))

// message appends message i and its newline to dst. Messages are made in
// order 0, 1, 2, … (they draw from rng).
func message(dst []byte, i int) []byte { return messageFrom(rng, dst, i) }

// messageFrom is message drawing from r. It appends with strconv, not
// fmt (the merge workload makes tens of millions), and makes the bytes
// fmt.Sprintf would: {"seq":I,"worker":I%3,"msg":"handled request %016x
// in %d ms path=/api/items/%d status=%d"}, the msg space-padded or cut to
// make 100 bytes.
func messageFrom(r *rand.Rand, dst []byte, i int) []byte {
	start := len(dst)
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendInt(dst, int64(i), 10)
	dst = append(dst, `,"worker":`...)
	dst = strconv.AppendInt(dst, int64(i%channels), 10)
	dst = append(dst, `,"msg":"`...)
	status := int64(200)
	if i%50 == 0 {
		status = 500
	}
	room := msgLen - (len(dst) - start) - len(`"}`)
	m := len(dst)
	dst = append(dst, "handled request "...)
	id := r.Uint64()
	for shift := 60; shift >= 0; shift -= 4 {
		dst = append(dst, "0123456789abcdef"[id>>uint(shift)&0xf])
	}
	dst = append(dst, " in "...)
	dst = strconv.AppendInt(dst, int64(r.ExpFloat64()*20), 10)
	dst = append(dst, " ms path=/api/items/"...)
	dst = strconv.AppendInt(dst, int64(i%10007), 10)
	dst = append(dst, " status="...)
	dst = strconv.AppendInt(dst, status, 10)
	if n := len(dst) - m; n > room {
		dst = dst[:m+room]
	} else {
		for ; n < room; n++ {
			dst = append(dst, ' ')
		}
	}
	return append(dst, '"', '}', '\n')
}

// messageFmt is messageFrom as fmt writes it (the reference of
// TestMessage).
func messageFmt(r *rand.Rand, dst []byte, i int) []byte {
	start := len(dst)
	dst = fmt.Appendf(dst, `{"seq":%d,"worker":%d,"msg":"`, i, i%channels)
	status := 200
	if i%50 == 0 {
		status = 500
	}
	msg := fmt.Sprintf("handled request %016x in %d ms path=/api/items/%d status=%d", r.Uint64(), int(r.ExpFloat64()*20), i%10007, status)
	room := msgLen - (len(dst) - start) - len(`"}`)
	dst = fmt.Appendf(dst, "%-*.*s", room, room, msg)
	return append(dst, '"', '}', '\n')
}

// streamOf is the stream of the read workload and big.dss.
var streamOf = frames.StreamID{Node: "bench-host", Life: 1764489600000000000}

// catalog returns the three channels of stream s with content c.
func catalog(s frames.StreamID, c frames.ChannelContent) []frames.ChannelDescriptor {
	var cat []frames.ChannelDescriptor
	for k := range channels {
		cat = append(cat, frames.ChannelDescriptor{Stream: s, ID: frames.ChannelID(k + 1), Name: fmt.Sprintf("bench.w%d", k), Content: c})
	}
	return cat
}

// dssFile is a capture being written to a file.
type dssFile struct {
	f  *os.File
	bw *bufio.Writer
	w  *segments.Writer
}

func createDSS(name string, to io.Writer, cat []frames.ChannelDescriptor, opts segments.WriterOptions) *dssFile {
	d := &dssFile{}
	if to == nil {
		f, err := os.Create(name)
		check(err)
		d.f, d.bw = f, bufio.NewWriterSize(f, 1<<20)
		to = d.bw
	}
	w, err := segments.NewWriter(to, frames.StreamDescriptor{Stream: cat[0].Stream}, cat, opts)
	check(err)
	d.w = w
	return d
}

func (d *dssFile) close() {
	check(d.w.Close())
	if d.f != nil {
		check(d.bw.Flush())
		check(d.f.Close())
	}
}

func report(name, what string) {
	fi, err := os.Stat(name)
	check(err)
	fmt.Printf("%s %d %s\n", filepath.Base(name), fi.Size(), what)
}

func readWorkload(dir string, n int) {
	raw, err := os.Create(filepath.Join(dir, "raw.txt"))
	check(err)
	rawW := bufio.NewWriterSize(raw, 1<<20)
	js := createDSS(filepath.Join(dir, "json.dss"), nil, catalog(streamOf, frames.JSONRecord("")), segments.WriterOptions{Compression: segments.CompressZstd})
	text := createDSS(filepath.Join(dir, "text.dss"), nil, catalog(streamOf, frames.TextStream()), segments.WriterOptions{Compression: segments.CompressZstd})
	mf, err := os.Create(filepath.Join(dir, "x.mcap"))
	check(err)
	mbw := bufio.NewWriterSize(mf, 1<<20)
	mw, err := mcap.NewWriter(mbw, &mcap.WriterOptions{Chunked: true, ChunkSize: 1 << 20, Compression: mcap.CompressionZSTD, IncludeCRC: true})
	check(err)
	check(mw.WriteHeader(&mcap.Header{Profile: "", Library: "readbench"}))
	for k := range channels {
		check(mw.WriteChannel(&mcap.Channel{ID: uint16(k + 1), SchemaID: 0, Topic: fmt.Sprintf("bench.w%d", k), MessageEncoding: "json", Metadata: map[string]string{}}))
	}
	const t0 = 1764489600000000000
	var buf []byte
	for i := range n {
		buf = message(buf[:0], i)
		_, err = rawW.Write(buf)
		check(err)
		f := frames.Frame{Channel: frames.ChannelID(i%channels + 1), Position: frames.Position(i), Payload: buf}
		check(js.w.WriteFrame(f))
		check(text.w.WriteFrame(f))
		t := uint64(t0 + i*1000)
		check(mw.WriteMessage(&mcap.Message{ChannelID: uint16(i%channels + 1), Sequence: uint32(i), LogTime: t, PublishTime: t, Data: buf}))
	}
	check(rawW.Flush())
	check(raw.Close())
	js.close()
	text.close()
	check(mw.Close())
	check(mbw.Flush())
	check(mf.Close())
	report(raw.Name(), fmt.Sprintf("%d lines", n))
	report(filepath.Join(dir, "json.dss"), fmt.Sprintf("%d frames, 3 JsonRecord channels, zstd", n))
	report(filepath.Join(dir, "text.dss"), fmt.Sprintf("%d frames, 3 TextStream channels, zstd", n))
	report(mf.Name(), fmt.Sprintf("%d messages, 3 json channels, zstd chunks", n))
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// flipWriter writes to w with the byte at offset at inverted.
type flipWriter struct {
	w   io.Writer
	off int64
	at  int64
	tmp []byte
}

func (f *flipWriter) Write(p []byte) (int, error) {
	if f.at >= f.off && f.at < f.off+int64(len(p)) {
		f.tmp = append(f.tmp[:0], p...)
		f.tmp[f.at-f.off] ^= 0xff
		p = f.tmp
	}
	n, err := f.w.Write(p)
	f.off += int64(n)
	return n, err
}

// skipWriter writes to w all but the first skip bytes.
type skipWriter struct {
	w    io.Writer
	skip int64
}

func (s *skipWriter) Write(p []byte) (int, error) {
	n := len(p)
	if s.skip > 0 {
		k := min(s.skip, int64(len(p)))
		s.skip -= k
		p = p[k:]
	}
	if _, err := s.w.Write(p); err != nil {
		return 0, err
	}
	return n, nil
}

// memBig writes big.dss, cut.dss and flip.dss in one pass.
func memBig(dir string, size int64, c segments.Compression) {
	names := []string{"big.dss", "cut.dss", "flip.dss"}
	var files []*os.File
	var bufs []*bufio.Writer
	for _, n := range names {
		f, err := os.Create(filepath.Join(dir, n))
		check(err)
		files = append(files, f)
		bufs = append(bufs, bufio.NewWriterSize(f, 1<<20))
	}
	// The header is written at the first flush: flush before any frame to
	// learn its size, then place the flip. Frame records of the first
	// segment are plain (none) and never escaped (the messages hold no
	// 0x89): tag, length, uvarint channel, uvarint position, payload, CRC.
	var hdr bytesCounter
	cat := catalog(streamOf, frames.TextStream())
	probe := createDSS("", &hdr, cat, segments.WriterOptions{Compression: c})
	check(probe.w.Flush())
	h := hdr.n
	var flipAt int64
	var msgs []byte
	if c == segments.CompressNone {
		flipAt = h
		for i := range 2 {
			msgs = message(msgs[:0], i)
			flipAt += int64(5 + 1 + 1 + len(msgs) + 4)
		}
		flipAt += 5 + 1 + 1 + msgLen/2 // the middle of frame 3's payload
	} else {
		flipAt = h + 200
	}
	flip := &flipWriter{w: bufs[2], at: flipAt}
	cw := &countingWriter{w: io.MultiWriter(bufs[0], &skipWriter{w: bufs[1], skip: 1_000_000}, flip)}
	d := createDSS("", cw, cat, segments.WriterOptions{Compression: c})
	var buf []byte
	i := 0
	for ; cw.n < size; i++ {
		buf = message(buf[:0], i)
		check(d.w.WriteFrame(frames.Frame{Channel: frames.ChannelID(i%channels + 1), Position: frames.Position(i), Payload: buf}))
	}
	d.close()
	for k, f := range files {
		check(bufs[k].Flush())
		check(f.Close())
	}
	report(files[0].Name(), fmt.Sprintf("%d frames, %s, header %d bytes", i, c, h))
	report(files[1].Name(), "big.dss without its first 1000000 bytes")
	report(files[2].Name(), fmt.Sprintf("big.dss with byte %d inverted", flipAt))
}

// bytesCounter is an io.Writer that only counts.
type bytesCounter struct{ n int64 }

func (b *bytesCounter) Write(p []byte) (int, error) { b.n += int64(len(p)); return len(p), nil }

// wideCatalog returns the channels proc.job-1.stdout, proc.job-2.stdout, …
// of stream s, as many as a 16 MiB header holds.
func wideCatalog(s frames.StreamID) []frames.ChannelDescriptor {
	h := wireformat.Header{Writer: segments.DefaultWriterID, Stream: frames.StreamDescriptor{Stream: s}}
	for n := 1_000; ; n += 1_000 {
		for i := len(h.Channels) + 1; i <= n; i++ {
			h.Channels = append(h.Channels, frames.ChannelDescriptor{Stream: s, ID: frames.ChannelID(i), Name: fmt.Sprintf("proc.job-%d.stdout", i), Content: frames.TextStream()})
		}
		if _, err := wireformat.AppendHeader(nil, &h); err != nil {
			// The writer's own headers carry a segment summary's worth
			// more: keep a margin of 2000 channels.
			return h.Channels[:n-2_000]
		}
	}
}

// memWide writes n messages of the mix to a capture of stream s whose
// header declares wideCatalog's channels, round robin over its first 100.
func memWide(name string, s frames.StreamID, n int) {
	cat := wideCatalog(s)
	d := createDSS(name, nil, cat, segments.WriterOptions{Compression: segments.CompressZstd, SegmentContent: 1 << 20})
	var buf []byte
	for i := range n {
		buf = message(buf[:0], i)
		check(d.w.WriteFrame(frames.Frame{Channel: frames.ChannelID(i%100 + 1), Position: frames.Position(i), Payload: buf}))
	}
	d.close()
	report(name, fmt.Sprintf("%d frames on 100 of %d channels, zstd, 16 MiB headers", n, len(cat)))
}

// memMany writes k tiny captures back to back.
func memMany(name string, k int) {
	f, err := os.Create(name)
	check(err)
	bw := bufio.NewWriterSize(f, 1<<20)
	var buf []byte
	for j := range k {
		s := frames.StreamID{Node: frames.NodeID(fmt.Sprintf("node-%d", j)), Life: frames.Life(1764489600000000000 + j)}
		cat := []frames.ChannelDescriptor{{Stream: s, ID: 1, Name: "proc.job.stdout", Content: frames.TextStream()}}
		// A block of 3 short frames is closed by Close whatever the block
		// size: 4 KiB writes the same bytes as the default 1 MiB and spares
		// the writer a 1 MiB buffer per capture.
		d := createDSS("", bw, cat, segments.WriterOptions{Compression: segments.CompressZstd, BlockSize: 4 << 10})
		for i := range 3 {
			buf = fmt.Appendf(buf[:0], "capture %d line %d\n", j, i)
			check(d.w.WriteFrame(frames.Frame{Channel: 1, Position: frames.Position(i), Payload: buf}))
		}
		d.close()
	}
	check(bw.Flush())
	check(f.Close())
	report(name, fmt.Sprintf("%d captures of 3 frames, each its own stream", k))
}

// memBad writes a segment header and k bad 9-byte records.
func memBad(name string, k int) {
	s := streamOf
	h := wireformat.Header{SegmentID: [8]byte{'r', 'e', 'a', 'd', 'b', 'e', 'n', 'c'}, Writer: "readbench", Stream: frames.StreamDescriptor{Stream: s}, Channels: catalog(s, frames.TextStream())}
	b, err := wireformat.AppendHeader(nil, &h)
	check(err)
	rec := []byte{byte(wireformat.TypeStreamEnded), 0, 0, 0, 0, 0, 0, 0, 0}
	if crc32.Update(h.Seed(), crc32.MakeTable(crc32.Castagnoli), rec[:5]) == 0 {
		check(errors.New("a zero CRC would be right: change the segment id"))
	}
	f, err := os.Create(name)
	check(err)
	bw := bufio.NewWriterSize(f, 1<<20)
	_, err = bw.Write(b)
	check(err)
	for range k {
		_, err = bw.Write(rec)
		check(err)
	}
	check(bw.Flush())
	check(f.Close())
	report(name, fmt.Sprintf("a segment header and %d StreamEnded records with a wrong CRC", k))
}

// peak runs argv and prints its peak RSS in KiB, wall seconds and exit
// status.
func peak(argv []string, timeout time.Duration) {
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "usage: readbench -mode peak [-timeout D] -- COMMAND [ARG...]")
		os.Exit(2)
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	check(err)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = devnull, os.Stderr
	start := time.Now()
	check(cmd.Start())
	timer := time.AfterFunc(timeout, func() { cmd.Process.Kill() })
	err = cmd.Wait()
	timedOut := !timer.Stop()
	wall := time.Since(start).Seconds()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		check(err)
	}
	status := fmt.Sprint(cmd.ProcessState.ExitCode())
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		status = fmt.Sprintf("signal-%d", int(ws.Signal()))
	}
	if timedOut {
		status = "timeout"
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	fmt.Printf("%d %.3f %s\n", ru.Maxrss, wall, status)
}

package segments

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// This file builds captures the way ds wrap does and measures their size
// (against zstd -3 of the raw text, ARCHITECTURE.md §7) and the Writer's speed.

// wrapFrameSize is the largest text frame of ds wrap (proc.DefaultMaxFrameSize).
const wrapFrameSize = 64 << 10

// cClock is the datastream.clock channel of wrap captures.
var cClock = frames.ChannelDescriptor{Stream: streamS, ID: 4, Name: "datastream.clock", Content: frames.JSONRecord("datastream.clock")}

// textFrames cuts text as ds wrap's framer does: each read of the child's
// output, of readSize() bytes at most (and of wrapFrameSize), ends a frame
// at its last newline, and the rest of the read starts the next frame. The
// frames alias text.
func textFrames(text []byte, readSize func() int) [][]byte {
	var out [][]byte
	for len(text) > 0 {
		n := min(len(text), readSize(), wrapFrameSize)
		if n < len(text) {
			if i := bytes.LastIndexByte(text[:n], '\n'); i >= 0 {
				n = i + 1
			}
		}
		out = append(out, text[:n])
		text = text[n:]
	}
	return out
}

// Read sizes for textFrames.
var (
	// fullReads are the reads of a child that writes faster than ds wrap
	// reads: every read fills a frame.
	fullReads = func() int { return wrapFrameSize }
	// smallReads returns sizes from 1 KiB to 12 KiB, 6.5 KiB on average:
	// the frames of ds wrap of the awk child of scripts/bench_wrap.sh
	// averaged 6.4 KB, as wrap reads what the child's stdio wrote so far.
	smallReads = func() func() int {
		rng := rand.New(rand.NewPCG(7, 8))
		return func() int { return 1<<10 + rng.IntN(11<<10) }
	}
)

// A wrapSim feeds a Writer as ds wrap's capture loop does: text frames on
// channel 2 and, every tickBytes of text (one drain tick), a clock record
// on channel 4 and a Flush.
type wrapSim struct {
	w         *Writer
	tickBytes int
	pos       frames.Position
	sinceTick int
	monoNS    int64
	clock     []byte
}

func newWrapSim(w *Writer, tickBytes int) *wrapSim {
	return &wrapSim{w: w, tickBytes: tickBytes, pos: 1}
}

func (s *wrapSim) frame(p []byte) error {
	if err := s.w.WriteFrame(frames.Frame{Channel: 2, Position: s.pos, Payload: p}); err != nil {
		return err
	}
	s.pos++
	if s.sinceTick += len(p); s.sinceTick >= s.tickBytes {
		return s.tick()
	}
	return nil
}

func (s *wrapSim) tick() error {
	s.monoNS += 10_000_000 + int64(s.pos%997)*1000
	s.clock = fmt.Appendf(s.clock[:0], `{"unix_ns":%d,"mono_ns":%d}`, 1764576000_000_000_000+s.monoNS, s.monoNS)
	if err := s.w.WriteFrame(frames.Frame{Channel: 4, Position: s.pos, Payload: s.clock}); err != nil {
		return err
	}
	s.pos++
	s.sinceTick = 0
	return s.w.Flush()
}

// wrapCapture returns the capture ds wrap would write of text, read in
// reads of readSize() bytes.
func wrapCapture(tb testing.TB, text []byte, readSize func() int, opts WriterOptions, tickBytes int) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if opts.Rand == nil {
		opts.Rand = detRand(7)
	}
	w, err := NewWriter(&buf, descS, []frames.ChannelDescriptor{c2, cClock}, opts)
	if err != nil {
		tb.Fatal(err)
	}
	s := newWrapSim(w, tickBytes)
	for _, p := range textFrames(text, readSize) {
		if err := s.frame(p); err != nil {
			tb.Fatal(err)
		}
	}
	if err := s.tick(); err != nil {
		tb.Fatal(err)
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// Sample texts, generated deterministically.

// awkText returns n bytes of the lines of scripts/bench_wrap.sh: 99
// characters and a newline.
func awkText(n int) []byte {
	b := make([]byte, 0, n+128)
	for i := 0; len(b) < n; i++ {
		st := 200
		if i%50 == 0 {
			st = 500
		}
		l := len(b)
		b = fmt.Appendf(b, "%08d INFO worker-%d handled request %d in %d ms path=/api/items/%d status=%d ", i, i%8, i*7, i%250, i%10007, st)
		for len(b)-l < 99 {
			b = append(b, ' ')
		}
		b = append(b[:l+99], '\n')
	}
	return b[:n]
}

// seqText returns n bytes of the output of seq 1 N.
func seqText(n int) []byte {
	b := make([]byte, 0, n+32)
	for i := 1; len(b) < n; i++ {
		b = fmt.Appendf(b, "%d\n", i)
	}
	return b[:n]
}

// serviceLogText returns n bytes of service log lines with random request
// ids, users and latencies: text that compresses about 4.5 times.
func serviceLogText(n int) []byte {
	rng := rand.New(rand.NewPCG(3, 4))
	levels := []string{"INFO ", "INFO ", "INFO ", "WARN ", "DEBUG", "ERROR"}
	paths := []string{"/api/v1/items", "/api/v1/users", "/healthz", "/api/v2/orders", "/static/app.js", "/api/v1/items/search"}
	b := make([]byte, 0, n+256)
	us := 0
	for len(b) < n {
		us += rng.IntN(3000)
		method, status := "GET", 200
		if rng.IntN(10) < 3 {
			method = "POST"
		}
		if rng.IntN(10) == 0 {
			status = []int{404, 500}[rng.IntN(2)]
		}
		b = fmt.Appendf(b, "2026-11-30T08:%02d:%02d.%06dZ %s req=%08x %s %s status=%d ms=%d user=u%d\n",
			us/60e6%60, us/1e6%60, us%1e6, levels[rng.IntN(len(levels))], rng.Uint32(), method,
			paths[rng.IntN(len(paths))], status, rng.IntN(900), rng.IntN(5000))
	}
	return b[:n]
}

// buildLogText returns n bytes shaped like the output of go build -v -x: a
// package name, then the commands that build it, with build ids and work
// directories, and now and then a compiler diagnostic.
func buildLogText(n int) []byte {
	rng := rand.New(rand.NewPCG(5, 6))
	dirs := []string{"internal", "cmd", "net", "crypto", "encoding", "go", "runtime", "vendor/golang.org/x", "github.com/ds-telemetry/ds/pkg", "golang.org/x/tools/internal"}
	words := []string{"abi", "bytealg", "sys", "cpu", "http", "tls", "json", "xml", "types", "ast", "parser", "printer", "sha256", "ecdsa", "frames", "segments", "wireformat", "views", "trace", "pprof", "poll", "syscall", "unix", "textproto", "mime", "multipart"}
	id := func() string {
		const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"
		var s [20]byte
		for i := range s {
			s[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(s[:])
	}
	b := make([]byte, 0, n+4096)
	for k := 1; len(b) < n; k++ {
		pkg := dirs[rng.IntN(len(dirs))] + "/" + words[rng.IntN(len(words))]
		if rng.IntN(2) == 0 {
			pkg += "/" + words[rng.IntN(len(words))]
		}
		work := fmt.Sprintf("$WORK/b%03d", k)
		b = fmt.Appendf(b, "%s\nmkdir -p %s/\ncat >%s/importcfg << 'EOF' # internal\n# import config\n", pkg, work, work)
		for range rng.IntN(12) {
			dep := dirs[rng.IntN(len(dirs))] + "/" + words[rng.IntN(len(words))]
			b = fmt.Appendf(b, "packagefile %s=/root/.cache/go-build/%02x/%064x-d\n", dep, rng.IntN(256), rng.Uint64())
		}
		b = fmt.Appendf(b, "EOF\ncd /work/main\n/usr/local/go/pkg/tool/linux_amd64/compile -o %s/_pkg_.a -trimpath \"%s=>\" -p %s -lang=go1.26 -complete -buildid %s/%s -goversion go1.26.8 -c=2 -nolocalimports -importcfg %s/importcfg -pack ./%s.go ./%s_linux.go\n",
			work, work, pkg, id(), id(), work, words[rng.IntN(len(words))], words[rng.IntN(len(words))])
		if rng.IntN(8) == 0 {
			b = fmt.Appendf(b, "# %s\n%s/%s.go:%d:%d: declared and not used: %s\n", pkg, pkg, words[rng.IntN(len(words))], 1+rng.IntN(900), 1+rng.IntN(60), words[rng.IntN(len(words))])
		}
		b = fmt.Appendf(b, "/usr/local/go/pkg/tool/linux_amd64/buildid -w %s/_pkg_.a # internal\ncp %s/_pkg_.a /root/.cache/go-build/%02x/%064x-d # internal\n", work, work, rng.IntN(256), rng.Uint64())
	}
	return b[:n]
}

// sampleTexts are the texts the size and speed benchmarks use, 64 MiB each
// (built once). DS_BENCH_TEXT adds files, separated by commas.
var sampleTexts = sync.OnceValue(func() []sampleText {
	const n = 64 << 20
	texts := []sampleText{
		{"awk", awkText(n)},
		{"seq", seqText(n)},
		{"servicelog", serviceLogText(n)},
		{"buildlog", buildLogText(n)},
	}
	for _, name := range strings.Split(os.Getenv("DS_BENCH_TEXT"), ",") {
		if name == "" {
			continue
		}
		b, err := os.ReadFile(name)
		if err != nil {
			panic(err)
		}
		texts = append(texts, sampleText{filepath.Base(name), b})
	}
	return texts
})

type sampleText struct {
	name string
	text []byte
}

// TestWrapCapture reads back captures built as ds wrap builds them, with
// the default block size and with the 256 KiB blocks of older writers.
func TestWrapCapture(t *testing.T) {
	text := append(awkText(3<<20), serviceLogText(2<<20)...)
	for _, blockSize := range []int{0, 256 << 10} {
		t.Run(fmt.Sprint(blockSize), func(t *testing.T) {
			data := wrapCapture(t, text, smallReads(), WriterOptions{Compression: CompressZstd, BlockSize: blockSize}, 1<<20)
			res := readAll(t, data, ReaderOptions{})
			if len(res.corrupt) > 0 || res.err != io.EOF {
				t.Fatalf("corrupt %v, err %v", res.corrupt, res.err)
			}
			var got []byte
			for _, e := range res.entries {
				if e.Kind == EntryFrame && e.Frame.Channel == 2 {
					got = append(got, e.Frame.Payload...)
				}
			}
			if !bytes.Equal(got, text) {
				t.Fatalf("read back %d bytes of text, want %d", len(got), len(text))
			}
			wantBlock := blockSize
			if wantBlock == 0 {
				wantBlock = wireformat.DefaultBlockSize
			}
			largest := 0
			var seed uint32
			for _, sp := range spans(t, data) {
				if sp.header {
					h, _, err := wireformat.ParseHeader(data[sp.start:sp.end])
					if err != nil {
						t.Fatal(err)
					}
					seed = h.Seed()
					continue
				}
				rec, _, err := wireformat.ParseRecord(data[sp.start:sp.end], seed, 0)
				if err != nil {
					t.Fatal(err)
				}
				if rec.Type != wireformat.TypeBlock {
					continue
				}
				content, err := wireformat.DecodeBlock(nil, rec.Body)
				if err != nil {
					t.Fatal(err)
				}
				largest = max(largest, len(content))
			}
			if largest > wantBlock || largest < wantBlock-wrapFrameSize-64 {
				t.Errorf("largest block holds %d bytes, want close to %d", largest, wantBlock)
			}
		})
	}
}

// BenchmarkCaptureSize reports the size of a zstd capture of each sample
// text, as ds wrap writes it, as a multiple of zstd -3 of the raw text
// (x-zstd3; the target is 1.1, ARCHITECTURE.md §7), and the Writer's speed at
// building it, for full 64 KiB frames and for the smaller frames of a
// child that writes a little at a time. It runs zstd(1), and skips
// without it.
func BenchmarkCaptureSize(b *testing.B) {
	zstdPath, err := exec.LookPath("zstd")
	if err != nil {
		b.Skip("no zstd in PATH")
	}
	for _, st := range sampleTexts() {
		ref, err := zstdSize(zstdPath, st.text)
		if err != nil {
			b.Fatal(err)
		}
		reads := []struct {
			name string
			size func() func() int
		}{
			{"full", func() func() int { return fullReads }},
			{"small", smallReads},
		}
		for _, rd := range reads {
			// A 1 MiB tick: ds wrap drains every 10 ms while the child
			// writes, so at 100 MB/s.
			b.Run(st.name+"/reads="+rd.name, func(b *testing.B) {
				var size int
				b.SetBytes(int64(len(st.text)))
				for b.Loop() {
					size = len(wrapCapture(b, st.text, rd.size(), WriterOptions{Compression: CompressZstd}, 1<<20))
				}
				b.ReportMetric(float64(size)/float64(ref), "x-zstd3")
				b.ReportMetric(float64(len(st.text))/float64(size), "ratio")
			})
		}
	}
}

// zstdSize returns the size of zstd -3 of text.
func zstdSize(zstdPath string, text []byte) (int, error) {
	cmd := exec.Command(zstdPath, "-3", "-c", "-q")
	cmd.Stdin = bytes.NewReader(text)
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("zstd -3: %w", err)
	}
	return len(out), nil
}

// BenchmarkWrapWriter measures the Writer on ds wrap's path: 64 KiB text
// frames of the sample texts, a clock record and a Flush every 10 MiB (a
// 10 ms drain tick at 1 GB/s), to a writer that discards. MB/s is of
// payload; MB/cpu-s is payload per second of CPU time of the process, which
// other load on the machine disturbs less.
func BenchmarkWrapWriter(b *testing.B) {
	for _, comp := range []Compression{CompressNone, CompressZstd} {
		for _, st := range sampleTexts() {
			if st.name == "buildlog" || st.name == "seq" {
				continue // awk and servicelog bracket the speeds
			}
			b.Run(comp.String()+"/"+st.name, func(b *testing.B) {
				fr := textFrames(st.text, fullReads)
				var out countWriter
				w, err := NewWriter(&out, descS, []frames.ChannelDescriptor{c2, cClock}, WriterOptions{Compression: comp})
				if err != nil {
					b.Fatal(err)
				}
				s := newWrapSim(w, 10<<20)
				var payload int64
				b.ReportAllocs()
				i := 0
				cpu0 := processCPU()
				for b.Loop() {
					p := fr[i%len(fr)]
					if err := s.frame(p); err != nil {
						b.Fatal(err)
					}
					payload += int64(len(p))
					i++
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(payload)/1e6/b.Elapsed().Seconds(), "MB/s")
				if cpu := processCPU() - cpu0; cpu > 0 {
					// Payload per CPU second: what the writer needs of the
					// machine, whatever else runs on it.
					b.ReportMetric(float64(payload)/1e6/cpu.Seconds(), "MB/cpu-s")
				}
				b.ReportMetric(float64(payload)/float64(out.n), "ratio")
			})
		}
	}
}

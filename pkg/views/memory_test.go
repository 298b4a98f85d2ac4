package views

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// The tests of this file check that reading stays within bounded memory on
// the inputs that used not to (issue 9): a capture whose head was cut off,
// one with a hole near its start, many small captures concatenated, and
// runs of bad records. They build their inputs in-process and measure the
// heap with a probe. Under the race detector, and with -short, the inputs
// are smaller.

var raceEnabled = func() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" && s.Value == "true" {
			return true
		}
	}
	return false
}()

// scaled returns n, or small under -short or the race detector.
func scaled(n, small int) int {
	if testing.Short() || raceEnabled {
		return small
	}
	return n
}

const MiB = 1 << 20

// heapObjects returns the bytes of heap objects, live or not yet swept.
func heapObjects() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// liveHeap returns the live heap bytes, after two collections (the
// second frees what sync.Pools dropped in the first).
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	return heapObjects()
}

// probe samples the heap while f runs and returns its peak above what was
// live before, in bytes. The collector runs at GOGC=25 meanwhile, so that
// the peak is close to what f keeps live (garbage adds at most a quarter).
func probe(t *testing.T, f func()) int64 {
	t.Helper()
	old := debug.SetGCPercent(25)
	defer debug.SetGCPercent(old)
	base := liveHeap()
	var peak int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(200 * time.Microsecond)
		defer tick.Stop()
		for {
			peak = max(peak, heapMarked())
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	f()
	close(stop)
	wg.Wait()
	peak = max(peak, heapMarked())
	return peak - base
}

// heapMarked returns the heap that the last collection found live, and
// what was allocated since, up to a quarter more (GOGC=25 in probe): the
// bytes of objects not yet swept overstate it when the collector runs
// behind on a loaded machine (TestMemoryHeadCutOff once saw 24.3 MiB
// where a quiet run sees 15).
func heapMarked() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	live, objects := int64(s[0].Value.Uint64()), int64(s[1].Value.Uint64())
	return min(objects, live+live/4)
}

var memStream = frames.StreamID{Node: "mem", Life: 1}

// writeBigCapture writes a capture of about size bytes to a file: frames
// of 4 KiB on one text channel, in segments of 4 MiB, plain records. The
// payload of frame i starts with "frame-%08d|". It returns the path and
// the number of frames.
func writeBigCapture(t *testing.T, size int) (string, int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), fmt.Sprintf("big-%d.dss", size))
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	catalog := []frames.ChannelDescriptor{{Stream: memStream, ID: 1, Name: "proc.job.stdout", Content: frames.TextStream()}}
	w, err := segments.NewWriter(f, frames.StreamDescriptor{Stream: memStream}, catalog, segments.WriterOptions{Rand: rand.NewChaCha8([32]byte{1})})
	if err != nil {
		t.Fatal(err)
	}
	payload := bytes.Repeat([]byte("0123456789abcdef"), 256)
	payload[len(payload)-1] = '\n'
	n := size / len(payload)
	for i := range n {
		copy(payload, fmt.Sprintf("frame-%08d|", i))
		if err := w.WriteFrame(frames.Frame{Channel: 1, Position: frames.Position(i), Payload: payload}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path, n
}

// openAt opens path and skips its first skip bytes; flip, if ≥ 0, is the
// offset (in the file) of a byte to invert.
func openAt(t *testing.T, path string, skip, flip int64) io.Reader {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if _, err := f.Seek(skip, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	return &flipReader{r: f, off: skip, flip: flip}
}

type flipReader struct {
	r         io.Reader
	off, flip int64
}

func (f *flipReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if f.flip >= f.off && f.flip < f.off+int64(n) {
		p[f.flip-f.off] ^= 0xff
	}
	f.off += int64(n)
	return n, err
}

// frameOffset returns the file offset of the payload of frame i.
func frameOffset(t *testing.T, path string, i int) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	k := bytes.Index(b, fmt.Appendf(nil, "frame-%08d|", i))
	if k < 0 {
		t.Fatalf("frame %d not found", i)
	}
	return int64(k)
}

// scanInfo scans r into a new Info and returns it with the peak heap.
func scanInfo(t *testing.T, r io.Reader) (*Info, int64) {
	t.Helper()
	in := NewInfo(0)
	peak := probe(t, func() {
		if err := segments.Scan(context.Background(), r, segments.ScanOptions{}, in); err != nil {
			t.Fatal(err)
		}
		in.Summary()
	})
	return in, peak
}

// scanCat scans r into a LogSink printing --cat output to io.Discard and
// returns it with the peak heap.
func scanCat(t *testing.T, r io.Reader) (*LogSink, int64) {
	t.Helper()
	p := NewPrinter(io.Discard, LogOptions{Format: FormatCat})
	sink := NewLogSink(p, 0)
	peak := probe(t, func() {
		if err := segments.Scan(context.Background(), r, segments.ScanOptions{}, sink); err != nil {
			t.Fatal(err)
		}
		sink.A.Flush()
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	})
	return sink, peak
}

func streamSummary(t *testing.T, in *Info) StreamSummary {
	t.Helper()
	_, streams := in.Summary()
	if len(streams) != 1 {
		t.Fatalf("%d streams", len(streams))
	}
	return streams[0]
}

// bigSizes are the capture sizes compared: what is held must not grow with
// the input.
func bigSizes() [2]int {
	return [2]int{16 * MiB, scaled(64*MiB, 32*MiB)}
}

// A capture whose first 1 MB is missing (a cut-off download) starts at its
// first whole segment, a later one of its writer, and says that earlier
// frames are missing. ds info, eager, starts the stream there at once and
// holds nothing; ds log holds its frames until the end of input, in case
// the missing head comes (from another input, or later in this one: a
// concatenation), spilling past DefaultMemory: the heap stays bounded.
func TestMemoryHeadCutOff(t *testing.T) {
	var peaks [2][2]int64
	for k, size := range bigSizes() {
		path, n := writeBigCapture(t, size)
		in, peak := scanInfo(t, openAt(t, path, 1e6, -1))
		peaks[k][0] = peak
		s := streamSummary(t, in)
		if !s.HeadMissing || s.FirstSegment == 0 || s.FirstPosition == nil || *s.FirstPosition == 0 || *s.LastPosition != uint64(n-1) {
			t.Fatalf("%d MiB: head_missing %v, first segment %d, positions %v–%v", size/MiB, s.HeadMissing, s.FirstSegment, s.FirstPosition, s.LastPosition)
		}
		if s.GapCount != 0 || s.LateFrames != 0 || s.Frames != uint64(n)-*s.FirstPosition {
			t.Fatalf("%d MiB: %+v", size/MiB, s)
		}
		files, _ := in.Summary()
		if len(files) != 1 || files[0].DamageCount != 1 || files[0].Damage[0].Offset != 0 {
			t.Fatalf("damage %+v", files)
		}
		sink, peak := scanCat(t, openAt(t, path, 1e6, -1))
		peaks[k][1] = peak
		if l := sink.P.Losses(); l.Gaps != 0 {
			t.Fatalf("losses %+v", l)
		}
		t.Logf("%d MiB capture, first 1 MB cut: peak heap %.1f MiB (info), %.1f MiB (log --cat)", size/MiB, float64(peaks[k][0])/MiB, float64(peaks[k][1])/MiB)
	}
	checkPeaks(t, peaks, segments.DefaultMemory+16*MiB)
}

// One flipped byte in the 3rd frame of a capture: the frames after it are
// held to the end, spilled past DefaultMemory, then the gap is declared
// and they come out.
func TestMemoryEarlyHole(t *testing.T) {
	var peaks [2][2]int64
	for k, size := range bigSizes() {
		path, n := writeBigCapture(t, size)
		flip := frameOffset(t, path, 2) + 100
		in, peak := scanInfo(t, openAt(t, path, 0, flip))
		peaks[k][0] = peak
		s := streamSummary(t, in)
		if s.GapCount != 1 || s.MissingFrames != 1 || s.Gaps[0].From != 2 || s.Frames != uint64(n-1) || s.LateFrames != 0 || s.HeadMissing {
			t.Fatalf("%d MiB: %+v", size/MiB, s)
		}
		sink, peak := scanCat(t, openAt(t, path, 0, flip))
		peaks[k][1] = peak
		if l := sink.P.Losses(); l.Gaps != 1 || l.MissingFrames != 1 {
			t.Fatalf("losses %+v", l)
		}
		t.Logf("%d MiB capture, byte flipped in frame 2: peak heap %.1f MiB (info), %.1f MiB (log --cat)", size/MiB, float64(peaks[k][0])/MiB, float64(peaks[k][1])/MiB)
	}
	checkPeaks(t, peaks, segments.DefaultMemory+16*MiB)
}

// checkPeaks checks the peaks of two input sizes (by size, then info and
// log): each under limit, and the larger input's no more than 2 MiB above
// the smaller's.
func checkPeaks(t *testing.T, peaks [2][2]int64, limit int64) {
	t.Helper()
	for k := range peaks {
		for j, what := range []string{"info", "log --cat"} {
			if peaks[k][j] > limit {
				t.Errorf("%s: peak heap %.1f MiB, want at most %.1f", what, float64(peaks[k][j])/MiB, float64(limit)/MiB)
			}
			// The peak is sampled, garbage included: spilling makes some
			// between collections. The live heap of a spilling assembler
			// does not grow (segments.TestAssemblerSpillHeapFlat).
			if k == 1 && peaks[1][j] > peaks[0][j]+8*MiB {
				t.Errorf("%s: peak heap grows with the input: %.1f MiB, then %.1f MiB", what, float64(peaks[0][j])/MiB, float64(peaks[1][j])/MiB)
			}
		}
	}
}

// smallCaptures returns the concatenation of n one-frame captures, each of
// its own stream (node "c", life i), with one channel.
func smallCaptures(t *testing.T, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	opts := segments.WriterOptions{Rand: rand.NewChaCha8([32]byte{2})}
	for i := range n {
		s := frames.StreamID{Node: "c", Life: frames.Life(i + 1)}
		catalog := []frames.ChannelDescriptor{{Stream: s, ID: 1, Name: "proc.job.stdout", Content: frames.TextStream()}}
		w, err := segments.NewWriter(&buf, frames.StreamDescriptor{Stream: s}, catalog, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WriteFrame(frames.Frame{Channel: 1, Position: 0, Payload: []byte("hello\n")}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// `cat` of many small captures: each stream costs a few hundred bytes.
func TestMemoryManyCaptures(t *testing.T) {
	n := scaled(100_000, 10_000)
	input := smallCaptures(t, n)
	old := debug.SetGCPercent(25)
	defer debug.SetGCPercent(old)

	infoPer, info := retained(n, func() any {
		in := NewInfo(0)
		if err := segments.Scan(context.Background(), bytes.NewReader(input), segments.ScanOptions{}, in); err != nil {
			t.Fatal(err)
		}
		return in
	})
	logPer, _ := retained(n, func() any {
		sink := NewLogSink(NewPrinter(io.Discard, LogOptions{Format: FormatCat}), 0)
		if err := segments.Scan(context.Background(), bytes.NewReader(input), segments.ScanOptions{}, sink); err != nil {
			t.Fatal(err)
		}
		return sink
	})
	asmPer, _ := retained(n, func() any {
		a := segments.NewAssembler(0, func(segments.Item) {})
		for i := range n {
			s := frames.StreamID{Node: "c", Life: frames.Life(i + 1)}
			a.Segment(s, 0)
			a.Add(s, frames.Frame{Channel: 1, Payload: []byte("hello\n")})
		}
		return a
	})
	t.Logf("%d one-frame captures: %d bytes per stream in an Info, %d in a LogSink; %d of each in their Assembler", n, infoPer, logPer, asmPer)
	if asmPer > 320 {
		t.Errorf("an assembler keeps %d bytes per stream, want at most 320", asmPer)
	}
	if infoPer > 1024 {
		t.Errorf("an Info keeps %d bytes per stream, want at most 1 KiB", infoPer)
	}
	if logPer > 4096 {
		t.Errorf("a LogSink keeps %d bytes per stream, want at most 4 KiB", logPer)
	}

	runtime.KeepAlive(input) // or it is freed while a measurement runs
	files, streams := info.(*Info).Summary()
	if len(streams) != n || files[0].Segments != n || files[0].DamageCount != 0 || streams[n-1].Frames != 1 || !streams[n-1].Ended {
		t.Fatalf("%d streams, %+v", len(streams), files)
	}
}

// retained returns what f returns and the heap bytes it keeps, per
// stream of n.
func retained(n int, f func() any) (int64, any) {
	base := liveHeap()
	v := f()
	return (liveHeap() - base) / int64(n), v
}

// badRecords returns a segment header followed by n Frame records whose
// CRC is right but whose body is not a frame (a bad varint), each 20
// bytes; with good set, a good frame follows each bad record. The input is
// made as it is read, so that it takes no memory.
func badRecords(t *testing.T, n int, good bool) io.Reader {
	t.Helper()
	h := &wireformat.Header{SegmentID: [8]byte{1}, Writer: "ds test", Stream: frames.StreamDescriptor{Stream: memStream},
		Channels: []frames.ChannelDescriptor{{Stream: memStream, ID: 1, Name: "proc.job.stdout", Content: frames.TextStream()}}}
	head, err := wireformat.AppendHeader(nil, h)
	if err != nil {
		t.Fatal(err)
	}
	bad, err := wireformat.AppendRecord(nil, h.Seed(), wireformat.Record{Type: wireformat.TypeFrame, Body: bytes.Repeat([]byte{0xff}, 11)})
	if err != nil || len(bad) != 20 {
		t.Fatal(len(bad), err)
	}
	i := 0
	return &genReader{buf: head, next: func(b []byte) []byte {
		if i == n {
			return b
		}
		b = append(b, bad...)
		if good {
			if b, err = wireformat.AppendFrame(b, h.Seed(), frames.Frame{Channel: 1, Position: frames.Position(i), Payload: []byte("ok\n")}); err != nil {
				t.Error(err)
			}
		}
		i++
		return b
	}}
}

// genReader reads what next appends, until it appends nothing.
type genReader struct {
	buf  []byte
	next func([]byte) []byte
}

func (g *genReader) Read(p []byte) (int, error) {
	for len(g.buf) < len(p) {
		n := len(g.buf)
		if g.buf = g.next(g.buf); len(g.buf) == n {
			break
		}
	}
	if len(g.buf) == 0 {
		return 0, io.EOF
	}
	k := copy(p, g.buf)
	g.buf = append(g.buf[:0], g.buf[k:]...)
	return k, nil
}

// A run of bad records is one damaged range; many separate ones are
// counted, and the first 100 listed.
func TestMemoryBadRecords(t *testing.T) {
	n := scaled(1_000_000, 100_000)
	for _, good := range []bool{false, true} {
		in, peak := scanInfo(t, badRecords(t, n, good))
		files, streams := in.Summary()
		f := files[0]
		var ranges uint64 = 1
		if good {
			ranges = uint64(n)
			if len(streams) != 1 || streams[0].Frames != uint64(n) {
				t.Fatalf("streams %+v", streams)
			}
		} else if want := fmt.Sprintf("and %d more damaged records", n-1); !strings.Contains(f.Damage[0].Error, want) {
			t.Errorf("damage error %q, want it to say %q", f.Damage[0].Error, want)
		}
		if f.DamageCount != ranges || len(f.Damage) != int(min(ranges, maxListedDamage)) || f.DamagedBytes != int64(n)*20 {
			t.Fatalf("good frames %v: %d damaged ranges (%d listed), %d bytes", good, f.DamageCount, len(f.Damage), f.DamagedBytes)
		}
		_, catPeak := scanCat(t, badRecords(t, n, good))
		t.Logf("%d bad records (good frames between them: %v): %d damaged ranges, peak heap %.1f MiB (info), %.1f MiB (log --cat)", n, good, f.DamageCount, float64(peak)/MiB, float64(catPeak)/MiB)
		// Scan's reading goroutine keeps up to three batches of entries
		// (and the errors it made for them) ahead of the sink: a few MiB
		// whatever n is (100,000 and 1,000,000 records peak alike).
		if peak > 12*MiB || catPeak > 12*MiB {
			t.Errorf("peak heap %.1f MiB (info), %.1f MiB (log --cat), want at most 12", float64(peak)/MiB, float64(catPeak)/MiB)
		}
	}
}

// Scan reports adjacent damaged ranges as one, and a torn tail on its own.
func TestScanMergesDamage(t *testing.T) {
	input, err := io.ReadAll(badRecords(t, 5, false))
	if err != nil {
		t.Fatal(err)
	}
	hdr := len(input) - 5*20
	run1 := len(input)
	seed := wireformat.Seed([8]byte{1})
	input, _ = wireformat.AppendFrame(input, seed, frames.Frame{Channel: 1, Position: 0, Payload: []byte("ok\n")})
	run2 := len(input)
	input = append(input, input[hdr:hdr+3*20]...)
	torn := len(input)
	input, _ = wireformat.AppendFrame(input, seed, frames.Frame{Channel: 1, Position: 1, Payload: []byte("cut short\n")})
	input = input[:len(input)-3]
	var got []string
	var errs []error
	sink := &damageSink{Info: NewInfo(0), f: func(offset, end int64, torn bool, err error) {
		got = append(got, fmt.Sprintf("%d-%d torn=%v", offset, end, torn))
		errs = append(errs, err)
	}}
	if err := segments.Scan(context.Background(), bytes.NewReader(input), segments.ScanOptions{}, sink); err != nil {
		t.Fatal(err)
	}
	want := []string{
		fmt.Sprintf("%d-%d torn=false", hdr, run1),
		fmt.Sprintf("%d-%d torn=false", run2, torn),
		fmt.Sprintf("%d-%d torn=true", torn, len(input)),
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	var re *segments.RunError
	if !errors.As(errs[0], &re) || re.Records != 5 || !errors.Is(errs[0], wireformat.ErrBadBody) || !errors.Is(errs[2], io.ErrUnexpectedEOF) {
		t.Fatalf("errors %v", errs)
	}
	if _, streams := sink.Summary(); streams[0].Frames != 1 {
		t.Fatalf("%+v", streams)
	}
}

type damageSink struct {
	*Info
	f func(offset, end int64, torn bool, err error)
}

func (d *damageSink) Damage(offset, end int64, torn bool, err error) { d.f(offset, end, torn, err) }

// A million small streams through an Assembler: a few hundred bytes each.
func TestMemoryMillionStreams(t *testing.T) {
	n := scaled(1_000_000, 100_000)
	ids := make([]frames.StreamID, n)
	for i := range ids {
		ids[i] = frames.StreamID{Node: "n", Life: frames.Life(i)}
	}
	base := liveHeap()
	a := segments.NewAssembler(0, func(segments.Item) {})
	for i, s := range ids {
		a.Segment(s, 0)
		a.Add(s, frames.Frame{Channel: 1, Position: frames.Position(i % 3), Payload: []byte("x")}) // some wait for position 0
	}
	per := (liveHeap() - base) / int64(n)
	runtime.KeepAlive(ids)
	t.Logf("%d streams: %d bytes each, %.1f MiB held", n, per, float64(a.HeldBytes())/MiB)
	if a.HeldBytes() > segments.DefaultMemory {
		t.Errorf("held %d", a.HeldBytes())
	}
	if per > 400 {
		t.Errorf("%d bytes per stream, want at most 400", per)
	}
	runtime.KeepAlive(a)
}

// TestMemoryLatestWideCatalog gives ds latest's view (and ds series's,
// which shares its catalog) a header of 100 000 channels of which three
// have frames: it keeps the header's descriptors as they came and makes
// state only for the three, so it holds next to nothing beyond the
// catalog its caller already holds. It used to make a channel's state for
// each declared channel (about 220 bytes each: 22 MB here, 27 MB of the
// 88 MiB that ds latest took on a 16 MiB header).
func TestMemoryLatestWideCatalog(t *testing.T) {
	s := frames.StreamID{Node: "wide", Life: 1}
	n := scaled(100_000, 10_000)
	cat := wideTextCatalog(s, n)
	base := liveHeap()
	l := NewLatest(LatestOptions{})
	l.Header(segments.SegmentHeader{Stream: frames.StreamDescriptor{Stream: s}, Channels: cat})
	for i := range 30 {
		l.Frame(s, frames.Frame{Channel: frames.ChannelID(1 + i%3), Position: frames.Position(i), Payload: fmt.Appendf(nil, "line %d\n", i)})
	}
	l.Flush()
	held := liveHeap() - base
	entries := l.Entries()
	runtime.KeepAlive(cat)
	t.Logf("%d declared channels, 3 with frames: %d bytes held beyond the catalog", n, held)
	if len(entries) != 3 || entries[0].Channel.Name != "proc.job-1.stdout" || entries[2].Position != 29 {
		t.Fatalf("entries: %+v", entries)
	}
	if held > int64(n)*8 {
		t.Errorf("%d bytes held for %d declared channels (%d each), want at most 8 each", held, n, held/int64(n))
	}
}

// TestMemoryPrinterWideCatalog gives ds log's printer (text and --json) a
// header of 100 000 channels, twice (as a capture repeats it in each
// segment), of which three have frames: it keeps the header's descriptors
// as they came and makes a channel's state at its first frame, so it holds
// next to nothing beyond the catalog its caller already holds. It used to
// make that state for each declared channel (64 bytes, and for --json a
// string of 70 more: 8 to 16 MB of ds log's 62 to 77 MiB on a 16 MiB
// header).
func TestMemoryPrinterWideCatalog(t *testing.T) {
	s := frames.StreamID{Node: "wide", Life: 1}
	n := scaled(100_000, 10_000)
	cat := wideTextCatalog(s, n)
	// held is what a printer holds, its output aside, after two headers
	// of cat and 30 frames on its first three channels.
	held := func(format LogFormat, cat []frames.ChannelDescriptor) int64 {
		var out bytes.Buffer
		base := liveHeap()
		sink := NewLogSink(NewPrinter(&out, LogOptions{Format: format}), 0)
		for seq := range uint64(2) {
			sink.Header(segments.SegmentHeader{Stream: frames.StreamDescriptor{Stream: s}, Channels: cat, Seq: seq})
		}
		for i := range 30 {
			sink.Frame(s, frames.Frame{Channel: frames.ChannelID(1 + i%3), Position: frames.Position(i), Payload: fmt.Appendf(nil, "line %d\n", i)})
		}
		h := liveHeap() - base - int64(out.Cap())
		if err := sink.P.Close(); err != nil {
			t.Fatal(err)
		}
		runtime.KeepAlive(sink)
		if lines := strings.Count(out.String(), "\n"); lines != 30 || !strings.Contains(out.String(), "proc.job-3.stdout") {
			t.Fatalf("%d lines:\n%s", lines, out.String())
		}
		return h
	}
	for name, format := range map[string]LogFormat{"text": FormatText, "json": FormatJSON} {
		// The printer's own buffers, the same for any catalog, are
		// measured with the three channels that have frames alone.
		fixed, wide := held(format, cat[:3]), held(format, cat)
		t.Logf("%s: %d declared channels, 3 with frames: %d bytes held beyond the catalog (%d with 3 declared)", name, n, wide, fixed)
		if per := (wide - fixed) / int64(n); per > 8 {
			t.Errorf("%s: %d bytes held for %d declared channels (%d each), want at most 8 each", name, wide-fixed, n, per)
		}
	}
	runtime.KeepAlive(cat)
}

// TestLazyChannelStateKept: a channel's state, made at its first frame,
// is found again whichever order its channels first write in. Channel
// 1000 writes first while few states exist (kept aside, its id far past
// them), then 300 others and 1001 (the slice of states grows past 1000):
// its held partial line must still be its own, continued by its next
// frame. It was lost, and the line shown as new, when the states were
// made lazily (found by review).
func TestLazyChannelStateKept(t *testing.T) {
	var out bytes.Buffer
	p := NewPrinter(&out, LogOptions{Format: FormatJSON})
	p.Stream(frames.StreamDescriptor{Stream: S})
	for id := 1; id <= 2000; id++ {
		p.Channel(frames.ChannelDescriptor{Stream: S, ID: frames.ChannelID(id), Name: fmt.Sprintf("c%d", id), Content: frames.TextStream()})
	}
	a := segments.NewAssembler(0, p.Item)
	pos := uint64(0)
	add := func(ch int, s string) { a.Add(S, on(frames.ChannelID(ch), pos, s)); pos++ }
	add(1000, "abc")
	for ch := 1; ch < 300; ch++ {
		add(ch, "x\n")
	}
	add(1001, "y\n")
	add(1000, "def\n")
	a.Flush()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	var c1000 []string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.Contains(l, `"channel":"c1000"`) {
			c1000 = append(c1000, l)
		}
	}
	if len(c1000) != 2 || !strings.Contains(c1000[1], `"continues":true`) {
		t.Fatalf("channel c1000's lines:\n%s\nwant two, the second continuing the first", strings.Join(c1000, "\n"))
	}
}

// wideTextCatalog returns n text channels of stream s, ids 1 to n, named
// proc.job-ID.stdout.
func wideTextCatalog(s frames.StreamID, n int) []frames.ChannelDescriptor {
	cat := make([]frames.ChannelDescriptor, n)
	for i := range cat {
		cat[i] = frames.ChannelDescriptor{Stream: s, ID: frames.ChannelID(i + 1), Name: fmt.Sprintf("proc.job-%d.stdout", i+1), Content: frames.TextStream()}
	}
	return cat
}

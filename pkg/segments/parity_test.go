package segments

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// parityCapture returns a capture of two segments of stream S, each under
// a header too large for a HeaderCopy (38 000 channels, about 4.6 MB),
// with frames on a few of its channels, and the first header's size.
func parityCapture(t *testing.T) ([]byte, int) {
	t.Helper()
	cat := make([]frames.ChannelDescriptor, 38_000)
	for i := range cat {
		cat[i] = frames.ChannelDescriptor{Stream: streamS, ID: frames.ChannelID(i + 1), Name: fmt.Sprintf("proc.job-%05d.stdout", i+1), Content: frames.TextStream()}
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, descS, cat, WriterOptions{WriterID: "ds parity", Rand: detRand(5), SegmentSize: 2 << 10, BlockSize: 512})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 120 {
		if err := w.WriteFrame(frames.Frame{Channel: frames.ChannelID(i%7*5000 + 1), Position: frames.Position(i), Payload: fmt.Appendf(nil, "line %03d of job %d\n", i, i%7)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, n, err := wireformat.ParseHeader(buf.Bytes())
	if err != nil || n <= wireformat.DefaultMaxRecordSize {
		t.Fatalf("first header: %d bytes, %v (want over %d)", n, err, wireformat.DefaultMaxRecordSize)
	}
	return buf.Bytes(), n
}

// TestFlipLargeHeader checks ds-format(5)'s "one flipped bit costs at most
// one block" for headers too large for a HeaderCopy: each is followed by
// its parity copy, and a bit flipped in any of its shards, its length
// field, version, magic or CRC, costs no frame (the segment is read on,
// its channels named), as does one in the parity copy itself; from a file
// too (the piecewise header read falls back). Damage to two shards loses
// that segment only, reported.
func TestFlipLargeHeader(t *testing.T) {
	skipUnderRace(t)
	data, hsize := parityCapture(t)
	want, offs := readFlipFrames(t, data)
	if len(want) != 120 {
		t.Fatalf("%d frames read, want 120", len(want))
	}
	sp := spans(t, data)
	var headers []int
	for i, s := range sp {
		if !s.header {
			continue
		}
		rec, _, err := wireformat.ParseRecord(data[sp[i+1].start:], headerSeed(t, data, s), 0)
		if err != nil || rec.Type != wireformat.TypeHeaderCopy || !wireformat.IsHeaderParity(rec.Body) {
			t.Fatalf("the header at %d is not followed by its parity copy: %v %v", s.start, rec.Type, err)
		}
		headers = append(headers, i)
	}
	if len(headers) < 2 {
		t.Fatalf("%d headers, want 2 or more", len(headers))
	}
	rng := rand.New(rand.NewPCG(11, 3))
	var flips []int64 // bit numbers
	for _, i := range headers[:2] {
		s := sp[i]
		bit := func(off int64) int64 { return 8*off + rng.Int64N(8) }
		// The fixed fields: magic (a bit), major and minor, bits of the
		// length field (every one of its four bytes, low and high), and
		// the CRC.
		flips = append(flips, bit(s.start+3), bit(s.start+8), bit(s.start+9))
		for b := int64(0); b < 32; b += 3 {
			flips = append(flips, 8*(s.start+10)+b)
		}
		flips = append(flips, bit(s.end-1), bit(s.end-4))
		// A bit in every shard of the body, its first and last bytes.
		body := s.start + wireformat.HeaderPrefixSize
		for at := body; at < s.end-4; at += wireformat.ParityShardSize {
			flips = append(flips, bit(at+rng.Int64N(min(wireformat.ParityShardSize, s.end-4-at))))
		}
		flips = append(flips, bit(body), bit(s.end-5))
		// The parity copy: its head, CRCs and parity.
		c := sp[i+1]
		flips = append(flips, bit(c.start+7), bit(c.start+30), bit(c.start+(c.end-c.start)/2), bit(c.end-1))
	}
	for _, f := range flips {
		checkFlip(t, data, want, offs, sp, f/8, uint(f%8))
	}

	// From a file, a flipped catalog bit: the piecewise read refuses
	// the header, the buffered one repairs it.
	b := bytes.Clone(data)
	b[hsize/2] ^= 2
	path := filepath.Join(t.TempDir(), "flipped.dss")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := readFrom(t, NewReader(f, ReaderOptions{}), len(b))
	frameCount, damage := 0, 0
	for _, o := range got.order {
		switch o := o.(type) {
		case Entry:
			if o.Kind == EntryFrame {
				frameCount++
			}
		case *CorruptError:
			damage++
			if o.Offset != 0 || o.End != int64(hsize) {
				t.Errorf("from a file: damage %d-%d, want the header's 0-%d", o.Offset, o.End, hsize)
			}
		}
	}
	if frameCount != len(want) || damage != 1 {
		t.Errorf("from a file, a catalog bit flipped: %d frames, %d damaged ranges; want %d and 1", frameCount, damage, len(want))
	}

	// Two shards damaged: the first segment is lost, reported; the rest
	// is read.
	b = bytes.Clone(data)
	b[wireformat.HeaderPrefixSize+10] ^= 1
	b[wireformat.HeaderPrefixSize+3*wireformat.ParityShardSize] ^= 1
	second := sp[headers[1]].start
	r := NewReader(bytes.NewReader(b), ReaderOptions{})
	var ce *CorruptError
	frameCount = 0
	for {
		e, err := r.Next()
		if errors.As(err, &ce) {
			if ce.Offset != 0 || ce.End != second {
				t.Errorf("two shards damaged: damage %d-%d, want 0-%d (up to the second segment)", ce.Offset, ce.End, second)
			}
			continue
		}
		if err != nil {
			break
		}
		if e.Kind == EntryFrame {
			if e.Offset < second {
				t.Errorf("two shards damaged: a frame at %d, in the lost segment", e.Offset)
			}
			frameCount++
		}
	}
	if ce == nil || frameCount == 0 {
		t.Errorf("two shards damaged: damage %v, %d frames after it", ce, frameCount)
	}
	t.Logf("%d bytes, headers of %d bytes: %d bits flipped one at a time", len(data), hsize, len(flips))
}

// TestLargeHeaderAfterJunk checks ds-format(5)'s "read from the middle"
// for a first header too large to hold within Detect's window: 8 MiB of
// bytes that are no capture (the rest of a segment) before a 4.6 MB
// header is a DSS capture (Detect checks the header's start), one whose
// stream descriptor is damaged there is not; read from a file, directly
// or as a section (the views), every frame is read after one damaged
// range, and the scan checks the header from the file, a piece at a
// time, rather than reading it whole into its buffer.
func TestLargeHeaderAfterJunk(t *testing.T) {
	data, hsize := parityCapture(t)
	junk := bytes.Repeat([]byte("the rest of a record\n"), (8<<20)/21)
	in := slices.Concat(junk, data)
	if len(junk)+hsize <= DetectWindow+importBufferSize {
		t.Fatalf("the header ends at %d, within Detect's %d bytes", len(junk)+hsize, DetectWindow+importBufferSize)
	}
	if got, err := Detect(bytes.NewReader(in)); err != nil || got != InputDSS {
		t.Fatalf("Detect = %v, %v; want a DSS capture", got, err)
	}
	bad := bytes.Clone(in)
	i := bytes.Index(bad[len(junk):], []byte(`{"stream"`))
	if i < 0 {
		t.Fatal("no stream descriptor in the header")
	}
	bad[len(junk)+i] = 'x'
	if got, err := Detect(bytes.NewReader(bad)); !errors.Is(err, ErrNotCapture) {
		t.Errorf("stream descriptor damaged: Detect = %v, %v; want ErrNotCapture", got, err)
	}

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	want := readFrom(t, NewReader(bytes.NewReader(in), ReaderOptions{}), len(in))
	runtime.ReadMemStats(&after)
	inMemory := largeAllocated(&before, &after)
	if len(want.corrupt) != 1 || want.corrupt[0].Offset != 0 || want.corrupt[0].End != int64(len(junk)) {
		t.Fatalf("in memory: damage %v, want [0, %d)", want.corrupt, len(junk))
	}
	path := filepath.Join(t.TempDir(), "junk.dss")
	if err := os.WriteFile(path, in, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, section := range []bool{false, true} {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		var src io.Reader = f
		if section {
			src = &CountingReader{R: io.NewSectionReader(f, 0, int64(len(in)))}
		}
		runtime.GC()
		runtime.ReadMemStats(&before)
		got := readFrom(t, NewReader(src, ReaderOptions{}), len(in))
		runtime.ReadMemStats(&after)
		f.Close()
		if diff := cmp.Diff(summarize(want), summarize(got)); diff != "" {
			t.Errorf("section %v: (-in memory +from the file):\n%s", section, diff)
		}
		// Each header's descriptors and 3 MiB (a piece to check it, one
		// to decode it, the Reader's buffer): no buffer of a header's
		// size (the scan once read each candidate header whole to check
		// it: 17.8 MB, 22.7 as a section).
		limit := 2 * (38_000*uint64(unsafe.Sizeof(frames.ChannelDescriptor{})) + 3<<20)
		if large := largeAllocated(&before, &after); large > limit {
			t.Errorf("section %v: %d bytes allocated in large objects (in memory: %d), want at most %d", section, large, inMemory, limit)
		}
	}
}

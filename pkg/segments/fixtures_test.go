package segments

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// The fixtures under the repository's testdata/ are made by this file and
// never edited by hand: `DS_UPDATE=1 go test ./pkg/segments` rewrites them
// and their golden dumps (review the diff). Without DS_UPDATE the test
// checks that the files on disk are what the generator makes and that
// reading each one gives its golden dump.
//
//	testdata/capture/*.dss   valid captures
//	testdata/corrupt/*.dss   damaged captures, named by their defect
//	*.golden                 each fixture read back, one line per entry or
//	                         damaged range (offset, then what)
const fixtureRoot = "../../testdata"

var update = os.Getenv("DS_UPDATE") != ""

// smallEvents is a multi-channel capture of S: JSON records, two text
// channels, one declared midway, and the end of the stream.
func smallEvents() []frames.Event {
	res := func(t int) []byte {
		return []byte(fmt.Sprintf(`{"cpu_pct":%.1f,"mem_mb":%d}`, 12.5+float64(t), 1024+t))
	}
	ev := func(ch frames.ChannelID, pos frames.Position, p []byte) frames.Event {
		return frameEvent(streamS, frames.Frame{Channel: ch, Position: pos, Payload: p})
	}
	return []frames.Event{
		ev(1, 0, res(0)),
		ev(2, 1, []byte("epoch 1 loss=0.93\n")),
		ev(2, 2, []byte("epoch 2 loss=0.71\n")),
		frames.ChannelDeclaredEvent(channel(streamS, 3)),
		ev(3, 3, []byte("peer moved\n")),
		ev(1, 4, res(4)),
		ev(2, 5, []byte("bye\n")),
		frames.StreamEndedEvent(streamS),
	}
}

// logEvents returns n frames of log lines on channel 2 of stream s.
func logEvents(s frames.StreamID, n int) []frames.Event {
	var evs []frames.Event
	for i := range n {
		line := fmt.Sprintf("2026-11-30T08:%02d:%02d.%03dZ INFO  worker-%d handled request id=%06d status=200\n", i/3600%60, i/60%60, i%1000, i%4, i*7919%1000000)
		evs = append(evs, frameEvent(s, frames.Frame{Channel: 2, Position: frames.Position(i), Payload: []byte(line)}))
	}
	return append(evs, frames.StreamEndedEvent(s))
}

var catalogS = []frames.ChannelDescriptor{channel(streamS, 1), channel(streamS, 2)}

// fixtures returns every fixture by path relative to testdata/.
func fixtures(t testing.TB) map[string][]byte {
	t.Helper()
	small := writeEvents(t, descS, catalogS, WriterOptions{WriterID: "ds fixture", Rand: detRand(10)}, smallEvents())
	second := writeEvents(t, descT, []frames.ChannelDescriptor{channel(streamT, 2)}, WriterOptions{WriterID: "ds fixture", Rand: detRand(11)}, logEvents(streamT, 5))
	// The segment sizes leave out the header and its HeaderCopy (731
	// bytes here), which SegmentSize once counted: 1 KiB and 8 KiB
	// segments, whole, as the fixtures were first made.
	const head = 731
	rotated := writeEvents(t, descS, catalogS, WriterOptions{WriterID: "ds fixture", SegmentSize: 1024 - head, Rand: detRand(12)}, logEvents(streamS, 40))
	compressed := writeEvents(t, descS, catalogS, WriterOptions{WriterID: "ds fixture", Compression: CompressZstd, BlockSize: 4 << 10, SegmentSize: 8<<10 - head, Rand: detRand(13)}, logEvents(streamS, 400))
	// s2: compressed's frames with every block in S2 (codec 02, format
	// 1.2), as a live capture writes them when zstd falls behind.
	orig := compressBlock
	compressBlock = func(dst, content []byte, _ wireformat.BlockCodec) ([]byte, error) {
		return orig(dst, content, wireformat.BlockS2)
	}
	s2 := writeEvents(t, descS, catalogS, WriterOptions{WriterID: "ds fixture", Compression: CompressZstd, BlockSize: 4 << 10, SegmentSize: 8<<10 - head, Rand: detRand(14)}, logEvents(streamS, 400))
	compressBlock = orig
	sp := spans(t, small)
	// sp[0] is the header; without its HeaderCopy, rec(1) is the first
	// frame.
	sp = slices.Delete(sp, 1, 2)
	rec := func(i int) span { return sp[i] }

	out := map[string][]byte{
		"capture/small.dss":       small,
		"capture/two-streams.dss": slices.Concat(small, second),
		"capture/rotated.dss":     rotated,
		"capture/compressed.dss":  compressed,
		"capture/s2.dss":          s2,
	}

	// bad-magic: the first segment's magic is damaged (a text-mode
	// transfer turned its CR LF into LF); the second segment is read.
	twoSeg := slices.Concat(small, second)
	out["corrupt/bad-magic.dss"] = slices.Concat(bytes.Replace(twoSeg[:8], []byte("\r\n"), []byte("\n"), 1), twoSeg[8:])

	// crc-mismatch: one byte of the second frame's payload flipped.
	b := bytes.Clone(small)
	b[rec(2).end-6] ^= 0x20
	out["corrupt/crc-mismatch.dss"] = b

	// torn-tail: the writer died in the middle of its last frame.
	out["corrupt/torn-tail.dss"] = small[:rec(len(sp)-2).start+7]

	// len-exceeds-max: the third frame's length field claims 16 MiB − 16.
	b = bytes.Clone(small)
	binary.LittleEndian.PutUint32(b[rec(3).start+1:], wireformat.MaxRecordSize-15)
	out["corrupt/len-exceeds-max.dss"] = b

	// tag-unknown: a reserved record (reported), an experimental one
	// (skipped silently) and a block of an unknown codec (reported).
	h, _, err := wireformat.ParseHeader(small)
	if err != nil {
		t.Fatal(err)
	}
	var extra []byte
	extra, _ = wireformat.AppendRecord(extra, h.Seed(), wireformat.Record{Type: 0x08, Body: []byte("a record of a future minor version")})
	extra, _ = wireformat.AppendRecord(extra, h.Seed(), wireformat.Record{Type: 0x40, Body: []byte("private")})
	extra, _ = wireformat.AppendRecord(extra, h.Seed(), wireformat.Record{Type: wireformat.TypeBlock, Body: []byte{0x03, 3, 'l', 'z', '4'}})
	out["corrupt/tag-unknown.dss"] = slices.Concat(small[:rec(2).start], extra, small[rec(2).start:])

	// header-truncated: a writer died while writing its first header; a
	// restarted writer appended a whole capture.
	out["corrupt/header-truncated.dss"] = slices.Concat(second[:40], small)

	// dss-in-payload: frames that carry a whole capture (escaped records),
	// one of them damaged so that the reader resynchronises across DSS
	// bytes of another segment.
	c := newBuilder(t)
	c.header(descS, channel(streamS, 2))
	c.frame(2, 0, string(small))
	bad := c.frame(2, 1, string(small))
	c.flip(bad + 40)
	c.frame(2, 2, "after the damaged frame\n")
	c.frame(2, 3, string(rotated))
	out["corrupt/dss-in-payload.dss"] = c.b

	// version-newer: a segment of major version 2 before a v1 segment.
	v2 := slices.Concat([]byte(wireformat.Magic), []byte{2, 0}, []byte(" a segment whose layout this version does not know"))
	out["corrupt/version-newer.dss"] = slices.Concat(v2, small)

	// zero-fill: a hole of zero bytes in the middle (a crashed file
	// system), then the rest of the capture.
	out["corrupt/zero-fill.dss"] = slices.Concat(small[:rec(3).start], make([]byte, 4096), small[rec(3).start:])
	return out
}

func TestFixtures(t *testing.T) {
	want := fixtures(t)
	for _, name := range slices.Sorted(maps.Keys(want)) {
		path := filepath.Join(fixtureRoot, name)
		if update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, want[name], 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%v (DS_UPDATE=1 go test ./pkg/segments makes it)", err)
			continue
		}
		if !bytes.Equal(got, want[name]) {
			t.Errorf("%s differs from what the generator makes; regenerate with DS_UPDATE=1 and review", path)
		}
	}
	// Every fixture on disk has a golden dump of its reading.
	paths, _ := filepath.Glob(filepath.Join(fixtureRoot, "*", "*.dss"))
	for _, path := range paths {
		name, _ := filepath.Rel(fixtureRoot, path)
		if _, ok := want[filepath.ToSlash(name)]; !ok {
			t.Errorf("%s is not made by the generator; remove it or add it to fixtures()", path)
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		got := dump(readAll(t, data, ReaderOptions{}))
		golden := path[:len(path)-len(".dss")] + ".golden"
		if update {
			if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		wantDump, err := os.ReadFile(golden)
		if err != nil {
			t.Errorf("%v (DS_UPDATE=1 go test ./pkg/segments makes it)", err)
			continue
		}
		if diff := cmp.Diff(string(wantDump), got); diff != "" {
			t.Errorf("%s (-golden +read):\n%s", golden, diff)
		}
	}
}

// TestFixturesReencode reads each valid fixture, writes its events again
// and reads those back: the same events (pprof's re-encode test).
func TestFixturesReencode(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join(fixtureRoot, "capture", "*.dss"))
	if len(paths) == 0 && !update {
		t.Fatal("no fixtures under testdata/capture")
	}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		res := readAll(t, data, ReaderOptions{})
		if res.err != io.EOF || len(res.corrupt) > 0 {
			t.Fatalf("%s: %v, %v", path, res.corrupt, res.err)
		}
		// Split the entries by stream, as writers each write one stream.
		var again []byte
		writers := map[frames.StreamID]*Writer{}
		var buf []*bytes.Buffer
		for _, e := range res.entries {
			w := writers[e.Stream]
			if e.Kind == EntrySegment && w == nil {
				b := &bytes.Buffer{}
				buf = append(buf, b)
				if w, err = NewWriter(b, e.Header.Stream, e.Header.Channels, WriterOptions{Rand: detRand(1)}); err != nil {
					t.Fatal(err)
				}
				writers[e.Stream] = w
			}
			var err error
			switch e.Kind {
			case EntrySegment:
				for _, d := range e.Header.Channels {
					if err == nil {
						err = w.DeclareChannel(d)
					}
				}
			case EntryChannel:
				err = w.DeclareChannel(*e.Channel)
			case EntryFrame:
				err = w.WriteFrame(e.Frame)
			case EntryStreamEnded:
				err = w.Close()
			}
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
		}
		for _, w := range writers {
			if err := w.Flush(); err != nil && err != ErrClosed {
				t.Fatal(err)
			}
		}
		for _, b := range buf {
			again = append(again, b.Bytes()...)
		}
		res2 := readAll(t, again, ReaderOptions{})
		if diff := diffEvents(toEvents(res.entries), toEvents(res2.entries)); diff != "" {
			t.Errorf("%s re-encoded (-first +second):\n%s", path, diff)
		}
	}
}

// TestCompatFixtures reads the captures of testdata/compat/vM.N/, the
// fixtures as ds wrote them in format version M.N (kept, never
// regenerated), and checks that each reads as its fixture of today does:
// the same entries at the same offsets, but the header's version.
// Version 1.1's are the fixtures before 1.2 added the S2 block codec;
// 1.2's, before 1.3 added the parity copy (the fixtures' headers are
// small: the same bytes but the version and CRCs).
func TestCompatFixtures(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join(fixtureRoot, "compat", "v*", "*.dss"))
	if len(paths) == 0 {
		t.Fatal("no captures under testdata/compat")
	}
	cur := fmt.Sprintf(" v%d.%d ", wireformat.MajorVersion, wireformat.MinorVersion)
	for _, path := range paths {
		version := filepath.Base(filepath.Dir(path)) // "v1.1"
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		golden, err := os.ReadFile(filepath.Join(fixtureRoot, "capture", strings.TrimSuffix(filepath.Base(path), ".dss")+".golden"))
		if err != nil {
			t.Fatal(err)
		}
		got := dump(readAll(t, data, ReaderOptions{}))
		want := strings.ReplaceAll(string(golden), cur, " "+version+" ")
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-today's golden +read):\n%s", path, diff)
		}
	}
}

// TestS2Fixture: testdata/capture/s2.dss holds S2 blocks (codec 02) and
// no zstd one, and reads back as compressed.dss, the same frames in zstd
// blocks.
func TestS2Fixture(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(fixtureRoot, "capture", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	s2, zstd := read("s2.dss"), read("compressed.dss")
	// A block that compression would not make smaller (one frame
	// before a flush) is written plain.
	codecs, plain := blockCodecs(t, s2)
	if len(codecs) < 50 || plain > 2 || bytes.ContainsFunc(codecs, func(r rune) bool { return r != wireformat.CodecS2 }) {
		t.Fatalf("s2.dss: codecs %v, %d plain frames; want S2 blocks only", codecs, plain)
	}
	frs := func(data []byte) []frames.Frame {
		res := readAll(t, data, ReaderOptions{})
		if len(res.corrupt) != 0 {
			t.Fatalf("damage %v", res.corrupt)
		}
		var out []frames.Frame
		for _, e := range res.entries {
			if e.Kind == EntryFrame {
				out = append(out, e.Frame)
			}
		}
		return out
	}
	if diff := cmp.Diff(frs(zstd), frs(s2)); diff != "" || len(frs(s2)) != 400 {
		t.Errorf("s2.dss frames differ from compressed.dss's (-zstd +s2):\n%s", diff)
	}
}

package segments

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// The tests of this file check the promise of ds-format(5) "One flipped
// bit": whichever bit of a capture is flipped, every frame outside the
// record (or block) that holds it is still read, named by its channel, in
// its stream. A damaged segment header costs only itself: the reader
// recovers the segment from the HeaderCopy record after it (for a header
// too large for one, from its parity copy: parity_test.go).

// flipFrame is a frame as a reader of a damaged capture must still give
// it: its stream, the name its channel has there, position and payload.
type flipFrame struct {
	stream  frames.StreamID
	channel string
	pos     frames.Position
	payload string
}

// flipFrames is the number of frames of each stream of a flipCapture.
const flipFrames = 24

// flipCapture writes a small capture of two streams, a few segments of a
// few records or blocks each, one channel declared midway (a new
// segment).
func flipCapture(t testing.TB, comp Compression) []byte {
	t.Helper()
	var out []byte
	for k, desc := range []frames.StreamDescriptor{descS, descT} {
		opts := WriterOptions{WriterID: "ds flip", Compression: comp, SegmentSize: 1000, BlockSize: 256, Rand: detRand(uint64(20 + k))}
		catalog := []frames.ChannelDescriptor{channel(desc.Stream, 2)}
		var evs []frames.Event
		for i := range flipFrames {
			ch := frames.ChannelID(2)
			if i == flipFrames/2 {
				evs = append(evs, frames.ChannelDeclaredEvent(channel(desc.Stream, 3)))
			}
			if i >= flipFrames/2 && i%3 == 0 {
				ch = 3
			}
			line := fmt.Sprintf("%s line %02d of channel %d: status=ok\n", desc.Stream.Node, i, ch)
			evs = append(evs, frameEvent(desc.Stream, frames.Frame{Channel: ch, Position: frames.Position(i), Payload: []byte(line)}))
		}
		evs = append(evs, frames.StreamEndedEvent(desc.Stream))
		out = append(out, writeEvents(t, desc, catalog, opts, evs)...)
	}
	return out
}

// readFlipFrames reads data to its end and returns its frames, each named
// by the catalog its reader knew at that point, with the offset of the
// record (or block) each came from.
func readFlipFrames(t testing.TB, data []byte) ([]flipFrame, []int64) {
	t.Helper()
	r := NewReader(bytes.NewReader(data), ReaderOptions{SkipSummaries: true})
	names := map[frames.StreamID]map[frames.ChannelID]string{}
	var got []flipFrame
	var offs []int64
	for calls := 0; ; calls++ {
		if calls > 2*len(data)+100 {
			t.Fatalf("reader makes no progress after %d calls", calls)
		}
		e, err := r.Next()
		var ce *CorruptError
		if errors.As(err, &ce) {
			if ce.End <= ce.Offset {
				t.Fatalf("empty damaged range [%d, %d)", ce.Offset, ce.End)
			}
			continue
		}
		if err == io.EOF {
			return got, offs
		}
		if err != nil {
			t.Fatal(err)
		}
		switch e.Kind {
		case EntrySegment:
			m := map[frames.ChannelID]string{}
			for _, d := range e.Header.Channels {
				m[d.ID] = d.Name
			}
			names[e.Stream] = m
		case EntryChannel:
			names[e.Stream][e.Channel.ID] = e.Channel.Name
		case EntryFrame:
			name, ok := names[e.Stream][e.Frame.Channel]
			if !ok {
				name = fmt.Sprintf("unnamed channel %d", e.Frame.Channel)
			}
			got = append(got, flipFrame{e.Stream, name, e.Frame.Position, string(e.Frame.Payload)})
			offs = append(offs, e.Offset)
		}
	}
}

// checkFlip flips bit (of byte off) of data and checks that every frame
// of want, but those of the record or block spanning off, is read, named
// as before, and that nothing else is.
func checkFlip(t *testing.T, data []byte, want []flipFrame, offs []int64, sp []span, off int64, bit uint) {
	t.Helper()
	damaged := int64(-1)
	for _, s := range sp {
		if s.start <= off && off < s.end {
			damaged = s.start
		}
	}
	b := bytes.Clone(data)
	b[off] ^= 1 << bit
	got, _ := readFlipFrames(t, b)
	seen := map[flipFrame]bool{}
	for _, f := range got {
		seen[f] = true
	}
	valid := map[flipFrame]bool{}
	for i, f := range want {
		valid[f] = true
		if !seen[f] && offs[i] != damaged {
			t.Fatalf("bit %d of byte %d (the %s at %d) flipped: lost %s frame %d on %q, from the record at %d",
				bit, off, spanKind(data, sp, damaged), damaged, f.stream, f.pos, f.channel, offs[i])
		}
	}
	for _, f := range got {
		if !valid[f] {
			t.Fatalf("bit %d of byte %d flipped: read %s frame %d on %q (%q), not in the capture", bit, off, f.stream, f.pos, f.channel, f.payload)
		}
	}
}

// spanKind names the header or record type of the span at start.
func spanKind(data []byte, sp []span, start int64) string {
	for i, s := range sp {
		if s.start != start {
			continue
		}
		if s.header {
			return "header"
		}
		for j := i; j >= 0; j-- {
			if sp[j].header {
				h, _, _ := wireformat.ParseHeader(data[sp[j].start:])
				rec, _, _ := wireformat.ParseRecord(data[s.start:], h.Seed(), 0)
				return rec.Type.String() + " record"
			}
		}
	}
	return "?"
}

// TestFlipEveryHeaderBit flips, one at a time, every bit of segment
// headers and of their HeaderCopy records in small captures (plain and
// zstd), and a sample of the bits of everything else: each costs at most
// the record or block that holds it. It covers the first and the last
// header of each capture (with -short, the first only, and fewer other
// bits); DS_FLIP_ALL=1 covers every header.
func TestFlipEveryHeaderBit(t *testing.T) {
	skipUnderRace(t)
	for _, comp := range []Compression{CompressNone, CompressZstd} {
		t.Run(comp.String(), func(t *testing.T) {
			t.Parallel()
			data := flipCapture(t, comp)
			want, offs := readFlipFrames(t, data)
			sp := spans(t, data)
			var headers []int
			for i, s := range sp {
				if s.header {
					if rec, _, err := wireformat.ParseRecord(data[sp[i+1].start:], headerSeed(t, data, s), 0); err != nil || rec.Type != wireformat.TypeHeaderCopy {
						t.Fatalf("the header at %d is not followed by its HeaderCopy", s.start)
					}
					headers = append(headers, i)
				}
			}
			if len(headers) < 4 || len(want) != 2*flipFrames {
				t.Fatalf("%d headers, %d frames: want a capture of several segments and %d frames", len(headers), len(want), 2*flipFrames)
			}
			every := map[int]bool{} // spans whose every bit is flipped
			for k, i := range headers {
				if k == 0 || k == len(headers)-1 && !testing.Short() || os.Getenv("DS_FLIP_ALL") != "" {
					every[i], every[i+1] = true, true
				}
			}
			sample := 8
			if testing.Short() {
				sample = 32
			}
			rng := rand.New(rand.NewPCG(7, uint64(comp)))
			flips, whole := 0, 0
			for i, s := range sp {
				for off := s.start; off < s.end; off++ {
					if every[i] {
						for bit := range uint(8) {
							checkFlip(t, data, want, offs, sp, off, bit)
						}
						flips += 8
					} else if rng.IntN(sample) == 0 {
						checkFlip(t, data, want, offs, sp, off, uint(rng.IntN(8)))
						flips++
					}
				}
				if every[i] {
					whole++
				}
			}
			t.Logf("%d bytes, %d headers, %d frames: %d bits flipped one at a time, every bit of %d headers and copies", len(data), len(headers), len(want), flips, whole)
		})
	}
}

// headerSeed returns the record seed of the valid header at s.
func headerSeed(t testing.TB, data []byte, s span) uint32 {
	t.Helper()
	h, _, err := wireformat.ParseHeader(data[s.start:])
	if err != nil {
		t.Fatal(err)
	}
	return h.Seed()
}

// growing is a file another process appends to: it reads what data holds
// so far, then io.EOF.
type growing struct {
	mu   sync.Mutex
	data []byte
	off  int
}

func (g *growing) Read(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.off == len(g.data) {
		return 0, io.EOF
	}
	n := copy(p, g.data[g.off:])
	g.off += n
	return n, nil
}

// TestHeaderRecovery reads captures whose header is damaged in each of
// its fields: the damage reported is the header's byte range, and the
// segment is read on from its HeaderCopy.
func TestHeaderRecovery(t *testing.T) {
	data := writeEvents(t, descS, catalogS, WriterOptions{WriterID: "ds test", Rand: detRand(3)}, logEvents(streamS, 3))
	sp := spans(t, data)
	hdr, cp := sp[0], sp[1]
	clean := readAll(t, data, ReaderOptions{})
	tests := []struct {
		name    string
		off     int64 // the byte damaged
		mask    byte
		wantErr error
	}{
		{"magic, first byte", 0, 0x01, wireformat.ErrBadMagic},
		{"magic, last byte", 7, 0x80, wireformat.ErrBadMagic},
		{"major version", 8, 0x02, wireformat.ErrUnknownVersion},
		{"minor version", 9, 0x01, wireformat.ErrChecksum},
		{"length: a byte more", 10, 0x01, wireformat.ErrChecksum},
		{"length: past the end of input", 12, 0x40, wireformat.ErrTooLarge},
		{"length: over the limit", 13, 0x10, wireformat.ErrTooLarge},
		{"segment id", 17, 0x04, wireformat.ErrChecksum},
		{"catalog", hdr.end - 30, 0x20, wireformat.ErrChecksum},
		{"checksum", hdr.end - 1, 0x01, wireformat.ErrChecksum},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := bytes.Clone(data)
			b[tt.off] ^= tt.mask
			res := readAll(t, b, ReaderOptions{})
			if len(res.corrupt) != 1 {
				t.Fatalf("damage %v, want the header's", res.corrupt)
			}
			ce := res.corrupt[0]
			if ce.Offset != hdr.start || ce.End != cp.start || !errors.Is(ce.Err, tt.wantErr) {
				t.Errorf("damage [%d, %d) %v, want [%d, %d) %v", ce.Offset, ce.End, ce.Err, hdr.start, cp.start, tt.wantErr)
			}
			if errors.Is(ce.Err, io.ErrUnexpectedEOF) {
				t.Errorf("a recovered header is reported as a torn tail: %v", ce.Err)
			}
			if len(res.entries) != len(clean.entries) || res.entries[0].Offset != cp.start {
				t.Fatalf("%d entries, the first at %d; want %d, the segment at %d", len(res.entries), res.entries[0].Offset, len(clean.entries), cp.start)
			}
			want := clean.entries[0].Header
			if got := res.entries[0].Header; got.SegmentID != want.SegmentID || got.Seq != want.Seq || got.Writer != want.Writer ||
				got.Major != want.Major || got.Minor != want.Minor || len(got.Channels) != len(want.Channels) || got.Stream.Stream != want.Stream.Stream {
				t.Errorf("recovered header %+v, want %+v", got, want)
			}
			if diff := diffEvents(toEvents(clean.entries), toEvents(res.entries)); diff != "" {
				t.Errorf("recovered capture (-clean +damaged):\n%s", diff)
			}
		})
	}
	t.Run("the copy is damaged too", func(t *testing.T) {
		b := bytes.Clone(data)
		b[20] ^= 1
		b[cp.start+30] ^= 1
		res := readAll(t, b, ReaderOptions{})
		if len(res.corrupt) != 1 || res.corrupt[0].Offset != 0 || res.corrupt[0].End != int64(len(b)) || len(res.entries) != 0 {
			t.Fatalf("damage %v, %d entries: want the segment lost, as without a copy", res.corrupt, len(res.entries))
		}
	})
	t.Run("a copy of another segment", func(t *testing.T) {
		// The copy checks under its own id, but that id is not the
		// damaged header's: no recovery.
		other := writeEvents(t, descS, catalogS, WriterOptions{WriterID: "ds test", Rand: detRand(4)}, logEvents(streamS, 3))
		osp := spans(t, other)
		b := append(bytes.Clone(data[:cp.start]), other[osp[1].start:osp[1].end]...)
		b = append(b, data[cp.end:]...)
		b[9] ^= 1
		res := readAll(t, b, ReaderOptions{})
		if len(res.corrupt) != 1 || len(res.entries) != 0 {
			t.Fatalf("damage %v, %d entries: want the segment lost", res.corrupt, len(res.entries))
		}
	})
	t.Run("follow mode waits for the copy", func(t *testing.T) {
		b := bytes.Clone(data)
		b[9] ^= 1
		g := &growing{data: b[:cp.start+10]}
		r := NewReader(g, ReaderOptions{Follow: true, PollInterval: time.Millisecond})
		go func() {
			time.Sleep(20 * time.Millisecond)
			g.mu.Lock()
			g.data = b
			g.mu.Unlock()
		}()
		_, err := r.Next()
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.Offset != 0 || ce.End != cp.start {
			t.Fatalf("first result %v, want the header's damage", err)
		}
		if e, err := r.Next(); err != nil || e.Kind != EntrySegment {
			t.Fatalf("then %v %v, want the recovered segment", e.Kind, err)
		}
	})
}

// FuzzDamagedHeader reads a capture whose second segment's header is the
// fuzzer's input, followed by that segment's HeaderCopy and records: the
// reader keeps FuzzReader's invariants whatever the header holds, and a
// header within one bit of the real one costs nothing but itself. Fuzz it
// with `go test -run='^$' -fuzz=FuzzDamagedHeader -fuzztime=2m ./pkg/segments`.
func FuzzDamagedHeader(f *testing.F) {
	first := writeEvents(f, descT, []frames.ChannelDescriptor{channel(streamT, 2)}, WriterOptions{WriterID: "ds fuzz", Rand: detRand(30)}, logEvents(streamT, 2))
	seg := writeEvents(f, descS, catalogS, WriterOptions{WriterID: "ds fuzz", Rand: detRand(31)}, logEvents(streamS, 3))
	hdr := seg[:spans(f, seg)[0].end]
	clean := toEvents(readAll(f, slices.Concat(first, seg), ReaderOptions{}).entries)
	f.Add(hdr)
	for _, off := range []int{0, 8, 11, 13, 16, len(hdr) - 40, len(hdr) - 2} {
		b := bytes.Clone(hdr)
		b[off] ^= 0x10
		f.Add(b)
	}
	f.Add(hdr[:30])
	f.Add([]byte(wireformat.Magic + "\x01\x00\xff\xff\xff\x00"))
	f.Fuzz(func(t *testing.T, h []byte) {
		data := slices.Concat(first, h, seg[len(hdr):])
		checkReader(t, data)
		if len(h) != len(hdr) {
			return
		}
		diff := 0
		for i := range h {
			diff += bits.OnesCount8(h[i] ^ hdr[i])
		}
		if diff > 1 {
			return
		}
		res := readAll(t, data, ReaderOptions{})
		if got := toEvents(res.entries); !sameEvents(clean, got) {
			t.Fatalf("a header %d bit(s) off (-clean +read):\n%s", diff, cmp.Diff(clean, got, eventCmp))
		}
	})
}

// FuzzDamagedHeaderParity is FuzzDamagedHeader for a header followed by a
// parity copy (as one of over 4 MiB is; here of one shard) instead of a
// whole HeaderCopy: any bytes in its place never break the reader, and a
// header one bit off reads as the clean capture does.
func FuzzDamagedHeaderParity(f *testing.F) {
	first := writeEvents(f, descT, []frames.ChannelDescriptor{channel(streamT, 2)}, WriterOptions{WriterID: "ds fuzz", Rand: detRand(30)}, logEvents(streamT, 2))
	whole := writeEvents(f, descS, catalogS, WriterOptions{WriterID: "ds fuzz", Rand: detRand(31)}, logEvents(streamS, 3))
	sp := spans(f, whole)
	hdr := whole[:sp[0].end]
	par, err := wireformat.AppendHeaderParity(nil, hdr)
	if err != nil {
		f.Fatal(err)
	}
	if rec, _, err := wireformat.ParseRecord(whole[sp[1].start:], headerSeed(f, whole, sp[0]), 0); err != nil || rec.Type != wireformat.TypeHeaderCopy {
		f.Fatalf("the record after the header: %v, %v; want its HeaderCopy", rec.Type, err)
	}
	rest := slices.Concat(par, whole[sp[1].end:]) // the parity copy for the whole copy
	clean := toEvents(readAll(f, slices.Concat(first, hdr, rest), ReaderOptions{}).entries)
	f.Add(hdr)
	for _, off := range []int{0, 8, 9, 11, 13, 16, len(hdr) / 2, len(hdr) - 40, len(hdr) - 2} {
		b := bytes.Clone(hdr)
		b[off] ^= 0x04
		f.Add(b)
	}
	f.Add(hdr[:len(hdr)-1])
	f.Fuzz(func(t *testing.T, h []byte) {
		data := slices.Concat(first, h, rest)
		checkReader(t, data)
		if len(h) != len(hdr) {
			return
		}
		diff := 0
		for i := range h {
			diff += bits.OnesCount8(h[i] ^ hdr[i])
		}
		if diff > 1 {
			return
		}
		res := readAll(t, data, ReaderOptions{})
		if got := toEvents(res.entries); !sameEvents(clean, got) {
			t.Fatalf("a header %d bit(s) off (-clean +read):\n%s", diff, cmp.Diff(clean, got, eventCmp))
		}
	})
}

package segments

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// randomStream returns a random stream capture plan: an initial catalog and
// a sequence of events (new channel declarations, frames on declared and
// undeclared channels with payloads that include DSS bytes, optionally the
// stream's end).
func randomStream(rng *rand.Rand, s frames.StreamID) (catalog []frames.ChannelDescriptor, evs []frames.Event) {
	next := frames.ChannelID(1)
	for range rng.IntN(4) {
		catalog = append(catalog, channel(s, next))
		next++
	}
	pos := frames.Position(rng.Uint64N(1 << 40))
	for range rng.IntN(120) {
		switch k := rng.IntN(20); {
		case k == 0:
			evs = append(evs, frames.ChannelDeclaredEvent(channel(s, next)))
			next++
		default:
			ch := frames.ChannelID(1 + rng.IntN(int(next)+1)) // sometimes undeclared
			if rng.IntN(3) == 0 {
				pos += frames.Position(rng.IntN(5)) // gaps and repeats
			} else {
				pos++
			}
			evs = append(evs, frameEvent(s, frames.Frame{Channel: ch, Position: pos, Payload: randomPayload(rng)}))
		}
	}
	if rng.IntN(2) == 0 {
		evs = append(evs, frames.StreamEndedEvent(s))
	}
	return catalog, evs
}

// randomPayload returns a payload of 0 to a few KiB (rarely one larger than
// a block), mixing text, random bytes and pieces of DSS: the magic, whole
// records, 0x89 bytes.
func randomPayload(rng *rand.Rand) []byte {
	pieces := [][]byte{
		[]byte("INFO request served path=/x status=200\n"),
		[]byte(wireformat.Magic), []byte(wireformat.Magic[:3]), {0x89}, {0x89, 0x00}, {0},
		{2, 4, 0, 0, 0, 1, 0, 'h', 'i'},
	}
	var p []byte
	switch rng.IntN(40) {
	case 0:
		return nil
	case 1:
		p = make([]byte, 40<<10+rng.IntN(8<<10)) // larger than the test block size
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		return p
	}
	for range rng.IntN(8) {
		if rng.IntN(4) == 0 {
			p = append(p, byte(rng.Uint32()))
		} else {
			p = append(p, pieces[rng.IntN(len(pieces))]...)
		}
	}
	return p
}

// writerConfigs are the writer settings every round trip runs under.
var writerConfigs = []struct {
	name string
	opts WriterOptions
}{
	{"plain", WriterOptions{}},
	{"plain-rotating", WriterOptions{SegmentSize: 700}},
	{"zstd", WriterOptions{Compression: CompressZstd, BlockSize: 8 << 10}},
	{"zstd-rotating", WriterOptions{Compression: CompressZstd, BlockSize: 2 << 10, SegmentSize: 1500}},
}

// eventCmp compares payloads as bytes (nil equals empty), fast.
var eventCmp = cmp.Options{cmp.Comparer(bytes.Equal)}

// TestRoundTrip writes random event sequences and reads them back
// identically, uncompressed and compressed, across rotations, and through
// concatenation of captures of several streams (`cat a b > c`).
func TestRoundTrip(t *testing.T) {
	iters := 150
	if testing.Short() || raceEnabled {
		iters = 30
	}
	for _, cfg := range writerConfigs {
		t.Run(cfg.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(len(cfg.name)), 7))
			for i := range iters {
				var all []byte
				var want []frames.Event
				for k, desc := range []frames.StreamDescriptor{descS, descT}[:1+rng.IntN(2)] {
					catalog, evs := randomStream(rng, desc.Stream)
					opts := cfg.opts
					opts.Rand = detRand(uint64(i*2 + k))
					data := writeEvents(t, desc, catalog, opts, evs)
					res := readAll(t, data, ReaderOptions{})
					single := append(headerEvents(desc, catalog), evs...)
					if res.err != io.EOF || len(res.corrupt) > 0 {
						t.Fatalf("iteration %d: reading back: %v, %v", i, res.corrupt, res.err)
					}
					if diff := diffEvents(single, toEvents(res.entries)); diff != "" {
						t.Fatalf("iteration %d: events (-written +read):\n%s", i, diff)
					}
					checkSelfDescribing(t, res.entries)
					all = append(all, data...)
					want = append(want, single...)
				}
				res := readAll(t, all, ReaderOptions{})
				if res.err != io.EOF || len(res.corrupt) > 0 {
					t.Fatalf("iteration %d: reading the concatenation: %v, %v", i, res.corrupt, res.err)
				}
				if diff := diffEvents(want, toEvents(res.entries)); diff != "" {
					t.Fatalf("iteration %d: concatenation (-written +read):\n%s", i, diff)
				}
			}
		})
	}
}

// diffEvents compares what was written with what was read back. A
// channel declaration may be read earlier than it was written (a writer
// puts every channel declared before its header goes out into the
// header), never later than a frame it was written before: the other
// events are compared in order, the declarations as a set, and each frame
// must follow the declarations that preceded it when written.
func diffEvents(written, read []frames.Event) string {
	split := func(evs []frames.Event) (rest []frames.Event, decls map[frames.ChannelRef]frames.ChannelDescriptor) {
		decls = map[frames.ChannelRef]frames.ChannelDescriptor{}
		for _, ev := range evs {
			if ev.Kind == frames.EventChannelDeclared {
				decls[frames.ChannelRef{Stream: ev.Channel.Stream, Channel: ev.Channel.ID}] = *ev.Channel
				continue
			}
			rest = append(rest, ev)
		}
		return rest, decls
	}
	wr, wd := split(written)
	rr, rd := split(read)
	if diff := cmp.Diff(wr, rr, eventCmp); diff != "" {
		return diff
	}
	if diff := cmp.Diff(wd, rd); diff != "" {
		return "declarations: " + diff
	}
	declaredAt := map[frames.ChannelRef]int{}
	for i, ev := range written {
		if ev.Kind == frames.EventChannelDeclared {
			declaredAt[frames.ChannelRef{Stream: ev.Channel.Stream, Channel: ev.Channel.ID}] = i
		}
	}
	seen := map[frames.ChannelRef]bool{}
	frame := 0
	for _, ev := range read {
		switch ev.Kind {
		case frames.EventChannelDeclared:
			seen[frames.ChannelRef{Stream: ev.Channel.Stream, Channel: ev.Channel.ID}] = true
		case frames.EventFrame:
			frame++
			if _, ok := declaredAt[ev.Frame.Channel]; ok && !seen[ev.Frame.Channel] {
				// Declared somewhere: it must have been declared after this
				// frame was written, then.
				n := 0
				for i, w := range written {
					if w.Kind == frames.EventFrame {
						n++
					}
					if n == frame {
						if declaredAt[ev.Frame.Channel] < i {
							return fmt.Sprintf("frame %d of channel %v read before its declaration", frame, ev.Frame.Channel)
						}
						break
					}
				}
			}
		}
	}
	return ""
}

// checkSelfDescribing checks that every segment names its frames without
// help from an earlier segment: each frame's channel, if it was declared
// anywhere before the frame, is declared in its own segment's header or by
// a ChannelDeclared record of that segment before it.
func checkSelfDescribing(t *testing.T, entries []Entry) {
	t.Helper()
	everywhere := map[frames.ChannelID]bool{}
	var local map[frames.ChannelID]bool
	seq := uint64(0)
	for i, e := range entries {
		switch e.Kind {
		case EntrySegment:
			if e.Header.Seq != seq {
				t.Fatalf("segment %d has sequence number %d", seq, e.Header.Seq)
			}
			seq++
			local = map[frames.ChannelID]bool{}
			for _, d := range e.Header.Channels {
				local[d.ID], everywhere[d.ID] = true, true
			}
		case EntryChannel:
			local[e.Channel.ID], everywhere[e.Channel.ID] = true, true
		case EntryFrame:
			if everywhere[e.Frame.Channel] && !local[e.Frame.Channel] {
				t.Fatalf("entry %d: frame on channel %d, which its segment does not declare", i, e.Frame.Channel)
			}
		}
	}
}

// TestReadEmptyAndClean covers the edges of a clean capture.
func TestReadEmptyAndClean(t *testing.T) {
	if res := readAll(t, nil, ReaderOptions{}); res.err != io.EOF || len(res.entries)+len(res.corrupt) != 0 {
		t.Errorf("empty input: %+v", res)
	}
	// A writer closed without events: one segment, StreamEnded.
	data := writeEvents(t, descS, nil, WriterOptions{}, nil)
	var buf bytes.Buffer
	w, err := NewWriter(&buf, descS, nil, WriterOptions{Rand: detRand(1)})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	res := readAll(t, buf.Bytes(), ReaderOptions{})
	kinds := []EntryKind{}
	for _, e := range res.entries {
		kinds = append(kinds, e.Kind)
	}
	if !slices.Equal(kinds, []EntryKind{EntrySegment, EntryStreamEnded, EntrySummary}) || res.err != io.EOF {
		t.Errorf("closed writer: kinds %v, %v", kinds, res.err)
	}
	// A writer flushed but never closed: a valid capture without
	// StreamEnded (a crashed writer, or a stream still running).
	res = readAll(t, data, ReaderOptions{})
	if len(res.entries) != 1 || res.entries[0].Kind != EntrySegment || res.err != io.EOF {
		t.Errorf("flushed writer: %v, %v", res.entries, res.err)
	}
}

func TestNextIntoReusesPayload(t *testing.T) {
	var evs []frames.Event
	for i := range 100 {
		evs = append(evs, frameEvent(streamS, frames.Frame{Channel: 2, Position: frames.Position(i), Payload: []byte(fmt.Sprintf("line %d\n", i))}))
	}
	for _, cfg := range writerConfigs {
		for _, view := range []bool{false, true} {
			data := writeEvents(t, descS, nil, cfg.opts, evs)
			// A small buffer makes NextView's aliased payloads move under it.
			r := NewReader(iotest.HalfReader(bytes.NewReader(data)), ReaderOptions{})
			var e Entry
			var got []frames.Event
			for {
				next := r.NextInto
				if view {
					next = r.NextView
				}
				if err := next(&e); err != nil {
					break
				}
				if e.Kind == EntryFrame {
					got = append(got, frameEvent(e.Stream, frames.Frame{Channel: e.Frame.Channel, Position: e.Frame.Position, Payload: bytes.Clone(e.Frame.Payload)}))
				}
			}
			if diff := cmp.Diff(evs, got, eventCmp); diff != "" {
				t.Errorf("%s (NextView %v): frames (-want +got):\n%s", cfg.name, view, diff)
			}
		}
	}
}

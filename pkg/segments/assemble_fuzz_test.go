package segments

import (
	"bytes"
	"math"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// FuzzAssembler feeds an Assembler arbitrary sequences of operations on
// three streams and checks its invariants: per stream, frames come out in
// strictly increasing positions, each position is emitted at most once
// (as a frame or late), the first copy added is the one emitted, gaps
// never cover an emitted position and no frame is emitted inside a
// declared gap (late ones excepted), every frame added is counted once,
// and what is held in memory stays within its bound (the rest spills).
//
// The input is a memory byte, a mode byte (bit 0: Eager), then operations: an op byte
// (kind = op%8, stream = op/8%3) and its operands:
//
//	0–4  Add: a position byte (0–199 itself; 200–255: near 2^64), a length
//	     byte (0–15) and that many payload bytes
//	5    Segment: a sequence number byte
//	6    FlushStream
//	7    Flush
func FuzzAssembler(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 1, 'a', 0, 2, 1, 'b', 0, 1, 1, 'c', 7})
	f.Add([]byte{3, 1, 0, 5, 1, 'x', 0, 3, 1, 'y', 8, 0, 0, 0, 0, 0, 'a', 0, 0, 1, 'b', 7})
	f.Add([]byte{1, 2, 5, 3, 0, 100, 2, 'h', 'i', 0, 50, 0, 0, 50, 1, 'x', 0, 255, 0, 0, 0, 0, 7})
	f.Add([]byte{255, 255, 0, 0, 0, 0, 254, 1, 'z', 0, 0, 0, 0, 0, 0, 6, 7})
	f.Add([]byte{0, 0, 0, 9, 1, 'a', 0, 8, 1, 'a', 0, 7, 1, 'a', 0, 6, 1, 'a', 0, 5, 1, 'a', 0, 4, 1, 'a', 0, 3, 1, 'a',
		0, 2, 1, 'a', 0, 1, 1, 'a', 0, 0, 1, 'a', 0, 9, 1, 'b', 0, 4, 1, 'a', 7})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 2 {
			return
		}
		opts := AssemblerOptions{Memory: heldOverhead*(1+int(in[0]%8)) + int(in[0]), Eager: in[1]&1 != 0, TempDir: t.TempDir()}
		in = in[2:]
		c := newChecker(t, opts)
		ids := [3]frames.StreamID{{Node: "a", Life: 1}, {Node: "a", Life: 2}, {Node: "b", Life: 1}}
		for ops := 0; len(in) > 0 && ops < 1000; ops++ {
			op := in[0]
			in = in[1:]
			s := ids[op/8%3]
			switch op % 8 {
			case 5:
				if len(in) < 1 {
					return
				}
				c.a.Segment(s, uint64(in[0]))
				in = in[1:]
			case 6:
				c.a.FlushStream(s)
			case 7:
				c.a.Flush()
			default:
				if len(in) < 2 {
					return
				}
				pos := uint64(in[0])
				if pos >= 200 {
					pos = math.MaxUint64 - (pos - 200)
				}
				n := int(in[1] % 16)
				in = in[2:]
				if len(in) < n {
					return
				}
				c.add(s, frames.Frame{Channel: 1, Position: frames.Position(pos), Payload: in[:n:n]})
				in = in[n:]
			}
		}
		c.a.Flush()
		c.finish()
		if err := c.a.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// checker checks what an Assembler emits against what it was given.
type checker struct {
	t       *testing.T
	opts    AssemblerOptions
	a       *Assembler
	streams map[frames.StreamID]*checked
}

type checked struct {
	added    map[frames.Position][]byte // first payload added per position
	adds     uint64
	emitted  map[frames.Position]bool // as frames or late
	last     frames.Position          // of the last ItemFrame
	frames   bool                     // an ItemFrame was emitted
	gaps     []Gap
	start    *frames.Position // from ItemStart, until the frame comes
	startSet bool
}

func newChecker(t *testing.T, opts AssemblerOptions) *checker {
	c := &checker{t: t, opts: opts, streams: make(map[frames.StreamID]*checked)}
	c.a = NewAssemblerWith(opts, c.item)
	return c
}

func (c *checker) stream(s frames.StreamID) *checked {
	st := c.streams[s]
	if st == nil {
		st = &checked{added: make(map[frames.Position][]byte), emitted: make(map[frames.Position]bool)}
		c.streams[s] = st
	}
	return st
}

func (c *checker) add(s frames.StreamID, f frames.Frame) {
	st := c.stream(s)
	st.adds++
	if _, ok := st.added[f.Position]; !ok {
		st.added[f.Position] = bytes.Clone(f.Payload)
	}
	f.Payload = bytes.Clone(f.Payload)
	c.a.Add(s, f)
	clear(f.Payload) // the assembler must not keep what it was lent
	if h := c.a.HeldBytes(); h > c.opts.Memory {
		c.t.Fatalf("holding %d bytes in memory, bound %d", h, c.opts.Memory)
	}
	if err := c.a.Err(); err != nil {
		c.t.Fatal(err)
	}
}

func (c *checker) item(it Item) {
	t := c.t
	st := c.stream(it.Stream)
	p := it.Frame.Position
	if st.start != nil && it.Kind != ItemConflict {
		if it.Kind != ItemFrame || p != *st.start {
			t.Fatalf("%s: ItemStart at %d followed by %v at %d", it.Stream, *st.start, it.Kind, p)
		}
		st.start = nil
	}
	switch it.Kind {
	case ItemStart:
		if st.startSet || st.frames {
			t.Fatalf("%s: ItemStart at %d after the start", it.Stream, p)
		}
		st.start, st.startSet = &p, true
	case ItemFrame, ItemLate:
		if st.emitted[p] {
			t.Fatalf("%s: position %d emitted twice", it.Stream, p)
		}
		if want, ok := st.added[p]; !ok || !bytes.Equal(want, it.Frame.Payload) {
			t.Fatalf("%s: position %d emitted with %q, first added %q (%v)", it.Stream, p, it.Frame.Payload, want, ok)
		}
		st.emitted[p] = true
		if it.Kind == ItemLate {
			if !st.frames || p >= st.last {
				t.Fatalf("%s: late frame %d, stream at %d (%v)", it.Stream, p, st.last, st.frames)
			}
			return
		}
		if st.frames && p <= st.last {
			t.Fatalf("%s: frame %d after %d", it.Stream, p, st.last)
		}
		for _, g := range st.gaps {
			if p >= g.From && p <= g.To {
				t.Fatalf("%s: frame %d inside gap %+v", it.Stream, p, g)
			}
		}
		st.last, st.frames = p, true
	case ItemGap:
		g := it.Gap
		if g.To < g.From || g.Count != uint64(g.To-g.From)+1 || !st.frames || g.From <= st.last {
			t.Fatalf("%s: gap %+v, stream at %d", it.Stream, g, st.last)
		}
		for q := range st.emitted {
			if q >= g.From && q <= g.To {
				t.Fatalf("%s: gap %+v covers emitted position %d", it.Stream, g, q)
			}
		}
		st.gaps = append(st.gaps, g)
	case ItemConflict:
		if want, ok := st.added[p]; !ok || bytes.Equal(want, it.Frame.Payload) {
			t.Fatalf("%s: conflict at %d with %q, first added %q", it.Stream, p, it.Frame.Payload, want)
		}
	default:
		t.Fatalf("item kind %d", it.Kind)
	}
}

func (c *checker) finish() {
	t := c.t
	if h := c.a.HeldBytes(); h != 0 {
		t.Fatalf("holding %d bytes after Flush", h)
	}
	for s, st := range c.streams {
		stats := c.a.Stats(s)
		if n := stats.Frames + stats.Late + stats.Duplicates + stats.Conflicts; n != st.adds {
			t.Fatalf("%s: %d frames added, %d counted: %+v", s, st.adds, n, stats)
		}
		if stats.Uncompared > stats.Duplicates || uint64(len(st.gaps)) != stats.Gaps {
			t.Fatalf("%s: %+v, %d gaps seen", s, stats, len(st.gaps))
		}
		for p := range st.added {
			if !st.emitted[p] {
				t.Fatalf("%s: position %d added, never emitted", s, p)
			}
		}
		if st.start != nil {
			t.Fatalf("%s: ItemStart at %d, no frame", s, *st.start)
		}
	}
}

package faults_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/segments/internal/faults"
	"github.com/ds-telemetry/ds/pkg/wireformat"
)

func TestReverseWindows(t *testing.T) {
	for _, tc := range []struct {
		n, k int
		want []int
	}{
		{8, 3, []int{2, 1, 0, 5, 4, 3, 7, 6}},
		{4, 1, []int{0, 1, 2, 3}},
		{4, 9, []int{3, 2, 1, 0}},
		{0, 2, []int{}},
	} {
		tr := faults.New(1, tc.n)
		tr.Reverse(tc.k)
		if got := tr.Order(); !slices.Equal(got, tc.want) {
			t.Errorf("Reverse(%d) of %d = %v, want %v", tc.k, tc.n, got, tc.want)
		}
	}
}

// ARCHITECTURE.md case 3.5: drop 4..7 of 0..15 and deliver in reversed
// windows of 3.
func TestDropThenReverse(t *testing.T) {
	tr := faults.New(1, 16)
	tr.DropIDs(4, 5, 6, 7)
	tr.Reverse(3)
	want := []int{2, 1, 0, 9, 8, 3, 12, 11, 10, 15, 14, 13}
	if got := tr.Order(); !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	s := tr.Script()
	if got := s.Replay(); !slices.Equal(got, want) {
		t.Fatalf("replay %v, want %v", got, want)
	}
	if got, want := s.String(), "seed 1, 16 pieces: drop [4 5 6 7]; reverse k=3"; got != want {
		t.Fatalf("script %q, want %q", got, want)
	}
}

func TestApply(t *testing.T) {
	got := faults.Apply([]int{2, 0, 2}, []string{"a", "b", "c"})
	if want := []string{"c", "a", "c"}; !slices.Equal(got, want) {
		t.Fatalf("Apply = %v, want %v", got, want)
	}
}

// run applies a random script of a few operations, drops included.
func run(seed uint64, n int) *faults.Transport {
	tr := faults.New(seed, n)
	tr.Random(1+tr.Rand().IntN(5), true)
	return tr
}

func TestDeterministic(t *testing.T) {
	differ := 0
	for seed := range uint64(200) {
		a, b := run(seed, 30), run(seed, 30)
		if !slices.Equal(a.Order(), b.Order()) || a.Script().String() != b.Script().String() {
			t.Fatalf("seed %d: two runs differ:\n%v\n%v", seed, a.Script(), b.Script())
		}
		if got := a.Script().Replay(); !slices.Equal(got, a.Order()) {
			t.Fatalf("seed %d: replay %v, order %v (%v)", seed, got, a.Order(), a.Script())
		}
		if !slices.Equal(a.Order(), run(seed+1000, 30).Order()) {
			differ++
		}
	}
	if differ < 150 {
		t.Fatalf("only %d of 200 seeds gave another order than seed+1000", differ)
	}
}

// count returns how many times each identity is delivered.
func count(order []int, n int) []int {
	c := make([]int, n)
	for _, id := range order {
		c[id]++
	}
	return c
}

func TestPermutations(t *testing.T) {
	const n = 40
	for seed := range uint64(300) {
		for name, op := range map[string]func(*faults.Transport){
			"reverse":         func(tr *faults.Transport) { tr.Reverse(1 + int(seed)%n) },
			"shuffle-windows": func(tr *faults.Transport) { tr.ShuffleWindows(1 + int(seed)%7) },
			"shuffle":         func(tr *faults.Transport) { tr.Shuffle() },
			"delay":           func(tr *faults.Transport) { tr.Delay(0.5, 1+int(seed)%5) },
		} {
			tr := faults.New(seed, n)
			op(tr)
			for id, c := range count(tr.Order(), n) {
				if c != 1 {
					t.Fatalf("%s, seed %d: piece %d delivered %d times: %v", name, seed, id, c, tr.Order())
				}
			}
		}
	}
}

func TestShuffleWindowsStaysInWindow(t *testing.T) {
	for seed := range uint64(100) {
		tr := faults.New(seed, 50)
		tr.ShuffleWindows(7)
		for i, id := range tr.Order() {
			if i/7 != id/7 {
				t.Fatalf("seed %d: piece %d delivered at %d, outside its window", seed, id, i)
			}
		}
	}
}

// A delayed piece arrives after at most d of the pieces that followed it;
// a piece that was not delayed passes none of those that followed it.
func TestDelayBound(t *testing.T) {
	const n, d = 40, 4
	for seed := range uint64(300) {
		tr := faults.New(seed, n)
		moved := tr.Delay(0.3, d)
		order := tr.Order()
		at := make([]int, n)
		for i, id := range order {
			at[id] = i
		}
		for id := range n {
			passed := 0
			for later := id + 1; later < n; later++ {
				if at[later] < at[id] {
					passed++
				}
			}
			limit := 0
			if slices.Contains(moved, id) {
				limit = d
			}
			if passed > limit {
				t.Fatalf("seed %d: piece %d arrives after %d later pieces (at most %d): %v", seed, id, passed, limit, order)
			}
		}
		if len(moved) > 0 && slices.IsSorted(order) {
			t.Fatalf("seed %d: %v moved, order unchanged", seed, moved)
		}
	}
}

func TestDropAndDuplicate(t *testing.T) {
	const n = 30
	dropped, copied := 0, 0
	for seed := range uint64(300) {
		tr := faults.New(seed, n)
		lost := tr.Drop(0.2)
		order := tr.Order()
		if !slices.IsSorted(order) {
			t.Fatalf("seed %d: drop reordered: %v", seed, order)
		}
		for id, c := range count(order, n) {
			if want := 1 - boolInt(slices.Contains(lost, id)); c != want {
				t.Fatalf("seed %d: piece %d delivered %d times, want %d", seed, id, c, want)
			}
		}
		dropped += len(lost)

		tr = faults.New(seed, n)
		dup := tr.Duplicate(0.2)
		order = tr.Order()
		for id, c := range count(order, n) {
			if want := 1 + boolInt(slices.Contains(dup, id)); c != want {
				t.Fatalf("seed %d: piece %d delivered %d times, want %d", seed, id, c, want)
			}
		}
		// Without the copies (the second delivery of each), the order is
		// the original one.
		seen := map[int]bool{}
		var firsts []int
		for _, id := range order {
			if !seen[id] {
				firsts = append(firsts, id)
				seen[id] = true
			}
		}
		if !slices.IsSorted(firsts) {
			t.Fatalf("seed %d: first deliveries out of order: %v", seed, order)
		}
		copied += len(dup)
	}
	if dropped == 0 || copied == 0 {
		t.Fatalf("nothing dropped (%d) or copied (%d) in 300 seeds", dropped, copied)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestBadArguments(t *testing.T) {
	for name, f := range map[string]func(){
		"p>1":       func() { faults.New(1, 3).Drop(1.5) },
		"p<0":       func() { faults.New(1, 3).Duplicate(-0.1) },
		"NaN":       func() { faults.New(1, 3).Delay(zero()/zero(), 2) },
		"window 0":  func() { faults.New(1, 3).Reverse(0) },
		"windows 0": func() { faults.New(1, 3).ShuffleWindows(0) },
		"delay 0":   func() { faults.New(1, 3).Delay(0.5, 0) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

func zero() float64 { return 0 }

// capture writes a stream of n frames as a DSS capture of small segments,
// ended.
func capture(t testing.TB, n int, compression segments.Compression) []byte {
	t.Helper()
	s := frames.StreamID{Node: "n", Life: 1}
	var buf bytes.Buffer
	w, err := segments.NewWriter(&buf, frames.StreamDescriptor{Stream: s}, []frames.ChannelDescriptor{
		{Stream: s, ID: 1, Name: "out", Content: frames.TextStream()},
	}, segments.WriterOptions{SegmentSize: 150, Compression: compression, BlockSize: 200, Rand: bytes.NewReader(make([]byte, 8*1024))})
	if err != nil {
		t.Fatal(err)
	}
	for p := range n {
		if err := w.WriteFrame(frames.Frame{Channel: 1, Position: frames.Position(p), Payload: fmt.Appendf(nil, "line %d\n", p)}); err != nil {
			t.Fatal(err)
		}
		if p%5 == 4 {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestPlacesAndSegments(t *testing.T) {
	for _, c := range []segments.Compression{segments.CompressNone, segments.CompressZstd} {
		data := capture(t, 60, c)
		places, err := faults.Places(data)
		if err != nil {
			t.Fatal(err)
		}
		var prev int64
		headers := 0
		for _, p := range places {
			if p.Offset != prev || p.End <= p.Offset {
				t.Fatalf("%v: place %+v after %d", c, p, prev)
			}
			prev = p.End
			if p.Kind == faults.PlaceHeader {
				headers++
			}
		}
		if prev != int64(len(data)) {
			t.Fatalf("%v: places end at %d of %d", c, prev, len(data))
		}
		if headers < 3 {
			t.Fatalf("%v: %d segments, want several", c, headers)
		}
		last := places[len(places)-2:]
		if last[0].Kind != faults.PlaceStreamEnded || last[1].Kind != faults.PlaceSummary {
			t.Fatalf("%v: capture ends with %v, %v", c, last[0].Kind, last[1].Kind)
		}
		segs, err := faults.Segments(data)
		if err != nil {
			t.Fatal(err)
		}
		if len(segs) != headers || !bytes.Equal(bytes.Join(segs, nil), data) {
			t.Fatalf("%v: %d segments that do not make up the capture", c, len(segs))
		}
		for i, s := range segs {
			if !strings.HasPrefix(string(s), wireformat.Magic) {
				t.Fatalf("%v: segment %d does not start with the magic", c, i)
			}
		}
	}
}

func TestPlacesStopsAtDamage(t *testing.T) {
	data := capture(t, 20, segments.CompressNone)
	places, _ := faults.Places(data)
	bad := bytes.Clone(data)
	at := places[3].Offset + 6
	bad[at] ^= 0xFF
	got, err := faults.Places(bad)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprint(places[3].Offset)) {
		t.Fatalf("error %v, want one naming offset %d", err, places[3].Offset)
	}
	if len(got) != 3 {
		t.Fatalf("%d places before the damage, want 3", len(got))
	}
	if _, err := faults.Places([]byte("not a capture")); err == nil {
		t.Fatal("no error for text")
	}
	if _, err := faults.Segments(bad); err == nil {
		t.Fatal("Segments: no error for damage")
	}
}

func TestCut(t *testing.T) {
	data := capture(t, 40, segments.CompressNone)
	places, err := faults.Places(data)
	if err != nil {
		t.Fatal(err)
	}
	inHeader, atEnded := 0, 0
	for seed := range uint64(300) {
		tr := faults.New(seed, 0)
		files := tr.Cut(data, places, 1+int(seed%6))
		if !bytes.Equal(bytes.Join(files, nil), data) {
			t.Fatalf("seed %d: pieces do not make up the capture", seed)
		}
		s := tr.Script()
		offs := s.Ops[len(s.Ops)-1].Offsets
		if len(files) != len(offs)+1 {
			t.Fatalf("seed %d: %d files for %d cuts", seed, len(files), len(offs))
		}
		for _, off := range offs {
			for _, p := range places {
				if p.Kind == faults.PlaceHeader && off > p.Offset && off < p.End {
					inHeader++
				}
				if p.Kind == faults.PlaceStreamEnded && (off == p.Offset || off == p.End) {
					atEnded++
				}
			}
		}
		if !strings.Contains(s.String(), "cut at [") {
			t.Fatalf("seed %d: script %q", seed, s)
		}
	}
	if inHeader == 0 || atEnded == 0 {
		t.Fatalf("300 seeds cut inside a header %d times, next to StreamEnded %d times", inHeader, atEnded)
	}
	// Bytes of any kind, and inputs too short to cut.
	tr := faults.New(7, 0)
	if got := tr.Cut([]byte("abcdef"), nil, 3); !bytes.Equal(bytes.Join(got, nil), []byte("abcdef")) {
		t.Fatalf("cut of text: %q", got)
	}
	if got := tr.Cut([]byte("a"), nil, 3); len(got) != 1 {
		t.Fatalf("cut of one byte: %q", got)
	}
}

func TestOpString(t *testing.T) {
	tr := faults.New(3, 40)
	tr.Shuffle()
	tr.Delay(1, 2)
	s := tr.Script().String()
	for _, want := range []string{"seed 3, 40 pieces: shuffle → [", "…+24]", "; delay d≤2 p=1 ["} {
		if !strings.Contains(s, want) {
			t.Errorf("script %q lacks %q", s, want)
		}
	}
	if got := faults.New(1, 2).Script().String(); got != "seed 1, 2 pieces: delivered as they are" {
		t.Errorf("empty script %q", got)
	}
	if got := faults.OpKind(99).String(); got != "OpKind(99)" {
		t.Errorf("OpKind(99) = %q", got)
	}
}

// FuzzPlaces: Places never panics, and the places it returns are
// contiguous from offset 0, each a header or a record of a segment.
func FuzzPlaces(f *testing.F) {
	data := capture(f, 20, segments.CompressZstd)
	f.Add(data)
	f.Add(data[:len(data)/2])
	f.Add([]byte("not a capture"))
	f.Fuzz(func(t *testing.T, data []byte) {
		places, err := faults.Places(data)
		var prev int64
		for _, p := range places {
			if p.Offset != prev || p.End <= p.Offset || p.End > int64(len(data)) {
				t.Fatalf("place %+v after %d", p, prev)
			}
			prev = p.End
		}
		if err == nil && prev != int64(len(data)) {
			t.Fatalf("no error, but places end at %d of %d", prev, len(data))
		}
	})
}

package segments

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ds-telemetry/ds/pkg/frames"
)

var S = frames.StreamID{Node: "node-alpha", Life: 1} // ARCHITECTURE.md §8 notation

// run feeds frames in the given order and returns the items, flushed.
func run(window int, fs ...frames.Frame) []Item {
	var got []Item
	a := NewAssembler(window, func(it Item) { got = append(got, keep(it)) })
	for _, f := range fs {
		a.Add(S, f)
	}
	a.Flush()
	return got
}

func fr(pos uint64, payload string) frames.Frame {
	return frames.Frame{Channel: 1, Position: frames.Position(pos), Payload: []byte(payload)}
}

// summary renders items as "3", "gap1-2", "conflict0", "late4", "start5".
func summary(items []Item) []string {
	var out []string
	for _, it := range items {
		switch it.Kind {
		case ItemFrame:
			out = append(out, fmt.Sprint(it.Frame.Position))
		case ItemGap:
			out = append(out, fmt.Sprintf("gap%d-%d", it.Gap.From, it.Gap.To))
		case ItemConflict:
			out = append(out, fmt.Sprintf("conflict%d", it.Frame.Position))
		case ItemLate:
			out = append(out, fmt.Sprintf("late%d", it.Frame.Position))
		case ItemStart:
			out = append(out, fmt.Sprintf("start%d", it.Frame.Position))
		case ItemTrimmed:
			out = append(out, fmt.Sprintf("trimmed%d-%d", it.Gap.From, it.Gap.To))
		}
	}
	return out
}

func seq(from, to uint64) []frames.Frame {
	var fs []frames.Frame
	for i := from; i <= to; i++ {
		fs = append(fs, fr(i, fmt.Sprint(i)))
	}
	return fs
}

func reversed(fs []frames.Frame) []frames.Frame {
	out := append([]frames.Frame(nil), fs...)
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

func TestAssemblerConformance(t *testing.T) {
	tests := []struct {
		name string
		in   []frames.Frame
		want []string
	}{
		// ARCHITECTURE.md case 3.1: drop position 1, reverse the rest.
		{"drop and reverse", []frames.Frame{fr(3, "bye"), fr(2, "peer moved"), fr(0, "res0")}, []string{"0", "gap1-1", "2", "3"}},
		// §3.4
		{"only position 3: no leading gap", []frames.Frame{fr(3, "x")}, []string{"3"}},
		{"0,1 of 0..5: no trailing gap", []frames.Frame{fr(0, "a"), fr(1, "b")}, []string{"0", "1"}},
		{"0 and 5", []frames.Frame{fr(0, "a"), fr(5, "b")}, []string{"0", "gap1-4", "5"}},
		{"0 and 2^64-1", []frames.Frame{fr(math.MaxUint64, "z"), fr(0, "a")}, []string{"0", fmt.Sprintf("gap1-%d", uint64(math.MaxUint64-1)), fmt.Sprint(uint64(math.MaxUint64))}},
		// §3.5
		{"evens then odds", append(evens(0, 9), odds(0, 9)...), []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}},
		{"full reversal", reversed(seq(0, 9)), []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}},
		// §3.2: first wins; a different payload is reported.
		{"duplicate collapses", []frames.Frame{fr(0, "a"), fr(0, "a"), fr(1, "b")}, []string{"0", "1"}},
		{"conflict reported", []frames.Frame{fr(0, "a"), fr(0, "b")}, []string{"0", "conflict0"}},
		{"conflict while held", []frames.Frame{fr(2, "a"), fr(2, "b"), fr(1, "x")}, []string{"conflict2", "1", "2"}},
		// §3.10
		{"empty", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := run(0, tt.in...)
			if diff := cmp.Diff(tt.want, summary(got)); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
	got := run(0, fr(0, "a"), fr(math.MaxUint64, "z"))
	if g := got[1].Gap; g.Count != math.MaxUint64-1 {
		t.Fatalf("gap count %d", g.Count)
	}
}

func evens(from, to uint64) (fs []frames.Frame) {
	for i := from; i <= to; i += 2 {
		fs = append(fs, fr(i, fmt.Sprint(i)))
	}
	return fs
}

func odds(from, to uint64) (fs []frames.Frame) {
	for i := from + 1; i <= to; i += 2 {
		fs = append(fs, fr(i, fmt.Sprint(i)))
	}
	return fs
}

// ARCHITECTURE.md case 3.5: drop 4..7 of 0..15, deliver in reversed windows of 3.
func TestAssemblerReversedWindows(t *testing.T) {
	var kept []frames.Frame
	for _, f := range seq(0, 15) {
		if f.Position < 4 || f.Position > 7 {
			kept = append(kept, f)
		}
	}
	var in []frames.Frame
	for i := 0; i < len(kept); i += 3 {
		in = append(in, reversed(kept[i:min(i+3, len(kept))])...)
	}
	want := []string{"0", "1", "2", "3", "gap4-7", "8", "9", "10", "11", "12", "13", "14", "15"}
	if diff := cmp.Diff(want, summary(run(0, in...))); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// ARCHITECTURE.md case 3.3: incarnations never merge.
func TestAssemblerLivesNeverMerge(t *testing.T) {
	var got []Item
	a := NewAssembler(0, func(it Item) { got = append(got, keep(it)) })
	a.Add(frames.StreamID{Node: "n", Life: 1}, fr(0, "a"))
	a.Add(frames.StreamID{Node: "n", Life: 2}, fr(0, "b"))
	a.Flush()
	if len(got) != 2 || got[0].Stream == got[1].Stream || len(a.Streams()) != 2 {
		t.Fatalf("got %+v", got)
	}
}

// A frame trailing by more than memory holds is not guessed lost: the
// frames after it spill, and it comes out in its place.
func TestAssemblerSpillsInsteadOfGuessing(t *testing.T) {
	in := append(seq(0, 1), seq(3, 8)...)
	in = append(in, fr(2, "late"))
	a, got := collectItems(AssemblerOptions{Memory: 2 * (1 + heldOverhead), TempDir: t.TempDir()})
	for _, f := range in {
		a.Add(S, f)
		if a.HeldBytes() > 2*(1+heldOverhead) {
			t.Fatalf("holding %d bytes in memory", a.HeldBytes())
		}
	}
	a.Flush()
	want := []string{"0", "1", "2", "3", "4", "5", "6", "7", "8"}
	if diff := cmp.Diff(want, summary(*got)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	for _, it := range *got {
		if w := fmt.Sprint(it.Frame.Position); it.Frame.Position != 2 && string(it.Frame.Payload) != w {
			t.Fatalf("position %d came back with payload %q", it.Frame.Position, it.Frame.Payload)
		}
	}
	if n, _ := a.Spilled(); n == 0 {
		t.Fatal("nothing spilled")
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
}

// A live input that goes quiet is flushed: the gap is declared, and the
// frame arriving after it is late, shown, not dropped.
func TestAssemblerLateFrame(t *testing.T) {
	a, got := collectItems(AssemblerOptions{})
	for _, f := range append(seq(0, 1), seq(3, 5)...) {
		a.Add(S, f)
	}
	if diff := cmp.Diff([]string{"0", "1"}, summary(*got)); diff != "" {
		t.Fatalf("before the flush (-want +got):\n%s", diff)
	}
	a.Flush()
	a.Add(S, fr(2, "late"))
	a.Add(S, fr(2, "late"))
	want := []string{"0", "1", "gap2-2", "3", "4", "5", "late2"}
	if diff := cmp.Diff(want, summary(*got)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if st := a.Stats(S); st.Late != 1 || st.Duplicates != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// Property (ARCHITECTURE.md §6: order independence, idempotent ingest): any
// permutation with duplicates, within the window, yields the same frames
// and gaps as in-order delivery.
func TestAssemblerPropertyOrderIndependence(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 1))
		n := 1 + rng.IntN(200)
		var stored []frames.Frame
		for i := range n {
			if rng.IntN(5) != 0 {
				stored = append(stored, fr(uint64(i), fmt.Sprint(i)))
			}
		}
		want := summary(run(0, stored...))
		in := append([]frames.Frame(nil), stored...)
		for range rng.IntN(20) {
			if len(stored) > 0 {
				in = append(in, stored[rng.IntN(len(stored))])
			}
		}
		rng.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
		if diff := cmp.Diff(want, summary(run(0, in...))); diff != "" {
			t.Fatalf("seed %d (-in order +shuffled):\n%s", seed, diff)
		}
	}
}

func TestAssemblerStats(t *testing.T) {
	a := NewAssembler(0, func(Item) {})
	for _, f := range []frames.Frame{fr(0, "ab"), fr(0, "ab"), fr(3, "c"), fr(3, "d")} {
		a.Add(S, f)
	}
	a.Flush()
	want := StreamStats{Frames: 2, Bytes: 3, Duplicates: 1, Conflicts: 1, Gaps: 1, Missing: 2, First: 0, Last: 3}
	if diff := cmp.Diff(want, a.Stats(S)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

func BenchmarkAssemblerInOrder(b *testing.B) {
	a := NewAssembler(0, func(Item) {})
	payload := make([]byte, 100)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		a.Add(S, frames.Frame{Channel: 1, Position: frames.Position(i), Payload: payload})
	}
}

// collect returns an assembler configured by opts and the items it emits.
func collectItems(opts AssemblerOptions) (*Assembler, *[]Item) {
	var got []Item
	return NewAssemblerWith(opts, func(it Item) { got = append(got, keep(it)) }), &got
}

// A stream whose first segment read is not its writer's first starts at
// once, at the first position that arrives, and says so; what arrives
// below it later is late, and a copy of that is a duplicate.
func TestAssemblerHeadMissing(t *testing.T) {
	a, got := collectItems(AssemblerOptions{Eager: true})
	a.Segment(S, 3)
	a.Segment(S, 4) // not the first: no effect
	for _, f := range []frames.Frame{fr(100, "a"), fr(101, "b"), fr(50, "old"), fr(50, "old"), fr(50, "other"), fr(102, "c")} {
		a.Add(S, f)
	}
	a.Flush()
	want := []string{"start100", "100", "101", "late50", "conflict50", "102"}
	if diff := cmp.Diff(want, summary(*got)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	st := a.Stats(S)
	if !st.HeadMissing || st.First != 100 || st.Late != 1 || st.Duplicates != 1 || st.Conflicts != 1 || st.Frames != 3 {
		t.Fatalf("stats %+v", st)
	}

	// Sequence number 0 first: the stream waits for lower positions.
	a, got = collectItems(AssemblerOptions{})
	a.Segment(S, 0)
	a.Segment(S, 7)
	a.Add(S, fr(5, "x"))
	a.Add(S, fr(4, "y"))
	a.Flush()
	if diff := cmp.Diff([]string{"4", "5"}, summary(*got)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if a.Stats(S).HeadMissing {
		t.Fatal("HeadMissing without a later segment first")
	}

	// Not eager: the stream waits for lower positions until the end, and
	// a segment with sequence number 0 read before the start clears the
	// missing head.
	a, got = collectItems(AssemblerOptions{})
	a.Segment(S, 3)
	for _, f := range []frames.Frame{fr(100, "a"), fr(101, "b"), fr(50, "old"), fr(50, "old"), fr(50, "other"), fr(102, "c")} {
		a.Add(S, f)
	}
	a.Flush()
	want = []string{"conflict50", "start50", "50", "gap51-99", "100", "101", "102"}
	if diff := cmp.Diff(want, summary(*got)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	a, got = collectItems(AssemblerOptions{})
	a.Segment(S, 3)
	a.Add(S, fr(7, "b"))
	a.Segment(S, 0)
	a.Add(S, fr(6, "a"))
	a.Flush()
	if diff := cmp.Diff([]string{"6", "7"}, summary(*got)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// Memory is bounded in bytes: a hole early in a long stream holds what
// follows it on disk past the bound; at the end the gap is declared and
// everything comes out, in order, with its payload.
func TestAssemblerMemoryBound(t *testing.T) {
	const memory = 64 << 10
	a, got := collectItems(AssemblerOptions{Memory: memory, TempDir: t.TempDir()})
	B := frames.StreamID{Node: "node-beta", Life: 1}
	payload := func(s frames.StreamID, i uint64) []byte {
		return fmt.Appendf(make([]byte, 0, 1000), "%s %d %0990d", s.Node, i, i)
	}
	maxHeld := 0
	for i := range uint64(1000) {
		for _, s := range []frames.StreamID{S, B} {
			if i == 2 || s == B && i == 500 {
				continue
			}
			a.Add(s, frames.Frame{Channel: 1, Position: frames.Position(i), Payload: payload(s, i)})
			maxHeld = max(maxHeld, a.HeldBytes())
		}
	}
	if maxHeld > memory {
		t.Fatalf("held %d bytes, bound %d", maxHeld, memory)
	}
	if len(*got) != 4 {
		t.Fatalf("%d items before the end: a gap was guessed", len(*got))
	}
	a.Flush()
	if err := a.Err(); err != nil {
		t.Fatal(err)
	}
	next := map[frames.StreamID]uint64{}
	for _, it := range *got {
		switch it.Kind {
		case ItemFrame:
			if p := uint64(it.Frame.Position); p < next[it.Stream] || !bytes.Equal(it.Frame.Payload, payload(it.Stream, p)) {
				t.Fatalf("%s: position %d out of order or with payload %.20q", it.Stream, p, it.Frame.Payload)
			}
			next[it.Stream] = uint64(it.Frame.Position) + 1
		case ItemGap:
			if it.Gap.Count != 1 {
				t.Fatalf("gap %+v", it.Gap)
			}
		default:
			t.Fatalf("item %+v", it)
		}
	}
	if st := a.Stats(S); st.Frames != 999 || st.Gaps != 1 || st.Missing != 1 {
		t.Fatalf("stats %+v", st)
	}
	if st := a.Stats(B); st.Frames != 998 || st.Gaps != 2 {
		t.Fatalf("stats %+v", st)
	}
	if n, _ := a.Spilled(); n == 0 {
		t.Fatal("nothing spilled")
	}
	// The missing frame arrives at last: late, not a duplicate.
	a.Add(S, frames.Frame{Channel: 1, Position: 2, Payload: payload(S, 2)})
	if k := (*got)[len(*got)-1]; k.Kind != ItemLate || a.Stats(S).Late != 1 {
		t.Fatalf("last item %+v, stats %+v", k, a.Stats(S))
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
}

// The first copy wins even when it was spilled and the second arrives in
// order; copies are compared across spill files.
func TestAssemblerFirstCopyWinsAcrossSpill(t *testing.T) {
	a, got := collectItems(AssemblerOptions{Memory: 1, TempDir: t.TempDir()})
	a.Add(S, fr(0, "0"))
	a.Add(S, fr(2, "first"))  // held, spilled
	a.Add(S, fr(2, "second")) // held in memory: compared at the end
	a.Add(S, fr(2, "first"))  // identical
	a.Add(S, fr(1, "1"))
	want := []string{"0", "1", "2", "conflict2"}
	if diff := cmp.Diff(want, summary(*got)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if p := string((*got)[2].Frame.Payload); p != "first" {
		t.Fatalf("position 2 is %q", p)
	}
	if st := a.Stats(S); st.Duplicates != 1 || st.Conflicts != 1 || st.Frames != 3 {
		t.Fatalf("stats %+v", st)
	}
}

// The issue 10 case: two overlapping copies of one stream, a = 0–103 and
// b = 54–163 (b's first segment is not its writer's first), give the same
// frames whichever is read first.
func TestAssemblerOverlappingCopies(t *testing.T) {
	read := func(first, second []frames.Frame, firstSeq, secondSeq uint64) []string {
		a, got := collectItems(AssemblerOptions{})
		a.Segment(S, firstSeq)
		for _, f := range first {
			a.Add(S, f)
		}
		a.Segment(S, secondSeq)
		for _, f := range second {
			a.Add(S, f)
		}
		a.Flush()
		return summary(*got)
	}
	ca, cb := seq(0, 103), seq(54, 163)
	ab, ba := read(ca, cb, 0, 1), read(cb, ca, 1, 0)
	if diff := cmp.Diff(ab, ba); diff != "" {
		t.Fatalf("(-a b +b a):\n%s", diff)
	}
	if diff := cmp.Diff(summary(run(0, seq(0, 163)...)), ab); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// A stream cut anywhere into pieces read in any order, with copies, gives
// what it gives in order (ARCHITECTURE.md §6 invariant 11).
func TestAssemblerCutAnywhere(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 7))
		n := 1 + rng.IntN(300)
		all := seq(0, uint64(n-1))
		var kept []frames.Frame
		for _, f := range all {
			if rng.IntN(10) != 0 {
				kept = append(kept, f)
			}
		}
		want := summary(run(0, kept...))
		type piece struct {
			fs  []frames.Frame
			seq uint64
		}
		var pieces []piece
		for i := 0; i < len(kept); {
			j := min(len(kept), i+1+rng.IntN(40))
			pieces = append(pieces, piece{kept[i:j], uint64(len(pieces))})
			if rng.IntN(4) == 0 && i > 0 {
				i -= rng.IntN(i) // an overlapping copy
			}
			i = j
		}
		rng.Shuffle(len(pieces), func(i, j int) { pieces[i], pieces[j] = pieces[j], pieces[i] })
		a, got := collectItems(AssemblerOptions{Memory: 1 + rng.IntN(20)*heldOverhead, TempDir: t.TempDir()})
		for _, p := range pieces {
			a.Segment(S, p.seq)
			for _, f := range p.fs {
				a.Add(S, f)
			}
		}
		a.Flush()
		g := summary(*got)
		if len(g) > 0 && g[0] == "start0" {
			g = g[1:]
		}
		if diff := cmp.Diff(want, g); diff != "" {
			t.Fatalf("seed %d (-in order +pieces):\n%s", seed, diff)
		}
		a.Close()
	}
}

// TrimCapture: a capture's Trimmed record hides nothing. Its frames below
// the horizon are shown (counted in Shown), positions below it that are
// absent are trimmed (at the head, and where an interior gap would be),
// and the stream starts at the horizon as at 0.
func TestAssemblerTrimCapture(t *testing.T) {
	for _, tc := range []struct {
		name  string
		trim  int // index of in before which TrimCapture(S, 5) is called
		in    []frames.Frame
		want  []string
		shown uint64
		gaps  uint64
	}{
		{"record first, every frame below", 0, seq(0, 9), []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}, 5, 0},
		{"record last", 10, seq(0, 9), []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}, 5, 0},
		{"record in the middle", 3, seq(0, 9), []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}, 5, 0},
		{"a merged trimmed store: absent below", 0, seq(5, 9), []string{"trimmed0-4", "5", "6", "7", "8", "9"}, 0, 0},
		{"holes below and above the horizon", 0, []frames.Frame{fr(0, "0"), fr(2, "2"), fr(7, "7")}, []string{"0", "trimmed1-1", "2", "trimmed3-4", "gap5-6", "7"}, 2, 1},
		{"head absent, frames below", 0, []frames.Frame{fr(3, "3"), fr(4, "4"), fr(6, "6")}, []string{"trimmed0-2", "3", "4", "gap5-5", "6"}, 2, 1},
		{"frames below after the start at the horizon", 0, []frames.Frame{fr(5, "5"), fr(6, "6"), fr(1, "1")}, []string{"trimmed0-4", "5", "6", "late1"}, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, got := collectItems(AssemblerOptions{})
			for i, f := range tc.in {
				if i == tc.trim {
					a.TrimCapture(S, 5)
				}
				a.Add(S, f)
			}
			if tc.trim >= len(tc.in) {
				a.TrimCapture(S, 5)
			}
			a.Flush()
			if diff := cmp.Diff(tc.want, summary(*got)); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
			st := a.Stats(S)
			if st.Shown != tc.shown || st.Trimmed != 0 || st.CaptureBefore != 5 || st.Before != 0 || st.Gaps != tc.gaps {
				t.Fatalf("stats %+v", st)
			}
		})
	}
	// A store's horizon over a capture's: the store's hides, the capture's
	// adds nothing below it.
	a, got := collectItems(AssemblerOptions{})
	a.Trim(S, 5)
	a.TrimCapture(S, 3)
	for _, f := range seq(0, 6) {
		a.Add(S, f)
	}
	a.Flush()
	if diff := cmp.Diff([]string{"trimmed0-4", "5", "6"}, summary(*got)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if st := a.Stats(S); st.Shown != 0 || st.Trimmed != 5 {
		t.Fatalf("stats %+v", st)
	}
}

// Trim: frames below the horizon are dropped wherever they arrive, the
// stream starts at the horizon, and the trimmed range is said once.
func TestAssemblerTrim(t *testing.T) {
	a, got := collectItems(AssemblerOptions{})
	a.Trim(S, 5)
	for _, f := range []frames.Frame{fr(3, "x"), fr(6, "6"), fr(5, "5"), fr(4, "x"), fr(7, "7")} {
		a.Add(S, f)
	}
	a.Flush()
	want := []string{"trimmed0-4", "5", "6", "7"}
	if diff := cmp.Diff(want, summary(*got)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if st := a.Stats(S); st.Trimmed != 2 || st.Before != 5 || st.Gaps != 0 {
		t.Fatalf("stats %+v", st)
	}
	// A trim read after the stream started: no gap up to the horizon.
	a, got = collectItems(AssemblerOptions{})
	a.Add(S, fr(0, "0"))
	a.Trim(S, 3)
	a.Add(S, fr(4, "4"))
	a.Add(S, fr(3, "3"))
	a.Trim(S, 2) // lower: nothing
	a.Flush()
	want = []string{"0", "trimmed0-2", "3", "4"}
	if diff := cmp.Diff(want, summary(*got)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// A frame below where a stream started (it waited for its window, then
// was flushed, then started at its lowest held position) is late, not a duplicate: it was
// never emitted.
func TestAssemblerBelowStart(t *testing.T) {
	a, got := collectItems(AssemblerOptions{})
	for _, f := range seq(10, 14) {
		a.Add(S, f)
	}
	a.Flush() // a live input gone quiet: the stream starts at 10
	for _, f := range []frames.Frame{fr(5, "5"), fr(5, "5"), fr(12, "12"), fr(6, "x"), fr(6, "y")} {
		a.Add(S, f)
	}
	a.Flush()
	want := []string{"10", "11", "12", "13", "14", "late5", "late6", "conflict6"}
	if diff := cmp.Diff(want, summary(*got)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	st := a.Stats(S)
	if st.Late != 2 || st.Duplicates != 2 || st.Conflicts != 1 || st.First != 10 {
		t.Fatalf("stats %+v", st)
	}
}

// Identity is by position: copies of emitted positions are duplicates,
// positions in a declared gap are late (once), whatever their distance.
func TestAssemblerIdentityByPosition(t *testing.T) {
	a, got := collectItems(AssemblerOptions{})
	in := []frames.Frame{fr(0, "0"), fr(1, "1"), fr(3, "3"), fr(4, "4"), fr(8, "8"),
		fr(1, "1"), fr(3, "3"), fr(2, "2"), fr(2, "2"), fr(6, "6"), fr(5, "5"), fr(7, "7"), fr(5, "5"), fr(0, "0"), fr(8, "8")}
	for i, f := range in {
		a.Add(S, f)
		if i == 4 {
			a.Flush() // gone quiet: gaps declared
		}
	}
	a.Flush()
	want := []string{"0", "1", "gap2-2", "3", "4", "gap5-7", "8", "late2", "late6", "late5", "late7"}
	if diff := cmp.Diff(want, summary(*got)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	st := a.Stats(S)
	if st.Late != 4 || st.Duplicates != 6 || st.Conflicts != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// What is compared when, as the Assembler doc says.
func TestAssemblerConflicts(t *testing.T) {
	long := func(mid byte) string { return "0123456789" + string(mid) + "abcdefghij" } // 21 bytes
	tests := []struct {
		name                    string
		in                      []frames.Frame
		dups, uncompared, confl uint64
	}{
		{"last frame, short, same", frameList{{0, "a"}, {0, "a"}}.frames(), 1, 0, 0},
		{"last frame, short, other", frameList{{0, "a"}, {0, "b"}}.frames(), 0, 0, 1},
		{"last frame, long, other end", frameList{{0, long('x')}, {0, long('x') + "!"}}.frames(), 0, 0, 1},
		{"last frame, long, other middle", frameList{{0, long('x')}, {0, long('y')}}.frames(), 0, 0, 1},
		{"older frame in order: compared", frameList{{0, "a"}, {1, "b"}, {0, "c"}, {0, "a"}}.frames(), 1, 0, 1},
		{"older frame after disorder", frameList{{0, "a"}, {2, "c"}, {1, "b"}, {3, "d"}, {1, "b"}, {2, "x"}, {1, "y"}}.frames(), 1, 0, 2},
		{"after a repeat, emitted frames are hashed", frameList{{0, "a"}, {0, "a"}, {1, "b"}, {2, "c"}, {1, "x"}, {1, "b"}}.frames(), 2, 0, 1},
		{"held copies", frameList{{2, "a"}, {2, "a"}, {2, "b"}}.frames(), 1, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := collectItems(AssemblerOptions{})
			for _, f := range tt.in {
				a.Add(S, f)
			}
			a.Flush()
			st := a.Stats(S)
			if st.Duplicates != tt.dups || st.Uncompared != tt.uncompared || st.Conflicts != tt.confl {
				t.Fatalf("duplicates %d (uncompared %d), conflicts %d; want %d (%d), %d", st.Duplicates, st.Uncompared, st.Conflicts, tt.dups, tt.uncompared, tt.confl)
			}
		})
	}
}

// Two copies of a stream read one after the other (two inputs): the
// second's copies are compared with the first's frames, all emitted
// before they arrive (issue 22), up to the hashes kept; past the history
// budget a stream in order keeps only its last frame's hash, and its
// copies are counted not compared, never conflicts silently lost.
func TestAssemblerComparesSecondInput(t *testing.T) {
	const n = 100
	add := func(a *Assembler) {
		for i := range n {
			a.Add(S, fr(uint64(i), fmt.Sprint("one ", i)))
		}
		for i := range n {
			p := fmt.Sprint("one ", i)
			if i%10 == 3 {
				p = fmt.Sprint("two ", i)
			}
			a.Add(S, fr(uint64(i), p))
		}
		a.Flush()
	}
	a, items := collectItems(AssemblerOptions{})
	add(a)
	st := a.Stats(S)
	if st.Conflicts != 10 || st.Duplicates != n-10 || st.Uncompared != 0 {
		t.Fatalf("stats %+v", st)
	}
	confl := 0
	for _, it := range *items {
		if it.Kind == ItemConflict {
			confl++
		}
	}
	if confl != 10 {
		t.Fatalf("%d ItemConflict, want 10", confl)
	}

	// The budget spent: nothing kept but the last frame's hash.
	a, _ = collectItems(AssemblerOptions{})
	a.maxHist = 0
	add(a)
	st = a.Stats(S)
	if st.Conflicts != 0 || st.Duplicates != n || st.Uncompared != n-1 {
		t.Fatalf("no budget: stats %+v", st)
	}
	if a.history != 0 {
		t.Fatalf("history %d bytes past a budget of 0", a.history)
	}

	// A ring smaller than the stream: the copies of positions it forgot
	// are not compared.
	a, _ = collectItems(AssemblerOptions{Compare: 16})
	add(a)
	st = a.Stats(S)
	if st.Conflicts+st.Duplicates != n || st.Uncompared != n-17 || st.Conflicts != 2 {
		t.Fatalf("Compare 16: stats %+v", st)
	}
}

type frame struct {
	pos     uint64
	payload string
}

type frameList []frame

func (l frameList) frames() []frames.Frame {
	var out []frames.Frame
	for _, f := range l {
		out = append(out, fr(f.pos, f.payload))
	}
	return out
}

// A stream with more gaps than the assembler remembers forgets the oldest
// runs: a frame below what it remembers is shown late.
func TestAssemblerForgets(t *testing.T) {
	a, got := collectItems(AssemblerOptions{})
	const n = maxSpans + 10
	for i := range uint64(n) {
		a.Add(S, fr(2*i, "x")) // a gap before each
		a.Flush()
	}
	h := a.streams[S].hist
	if len(h.spans) > maxSpans || h.floor == 0 {
		t.Fatalf("%d spans, floor %d", len(h.spans), h.floor)
	}
	*got = nil
	a.Add(S, fr(2*(n-5), "x")) // remembered: a duplicate
	a.Add(S, fr(2*(n-5)+1, "x"))
	a.Add(S, fr(0, "x")) // forgotten
	if diff := cmp.Diff([]string{fmt.Sprintf("late%d", 2*(n-5)+1), "late0"}, summary(*got)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if st := a.Stats(S); st.Duplicates != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// What streams remember beyond a small allowance each is bounded in all:
// past it they forget their oldest runs, and their recent hashes stop
// growing.
func TestAssemblerHistoryBudget(t *testing.T) {
	a, got := collectItems(AssemblerOptions{})
	a.maxHist = 100 * 16
	for k := range 50 {
		s := frames.StreamID{Node: "n", Life: frames.Life(k)}
		for i := range uint64(40) {
			a.Add(s, fr(2*i, "x")) // a gap before each but the first
			a.Flush()
		}
		a.Add(s, fr(1, "late")) // disorder: recent hashes from now on
		for i := range uint64(100) {
			a.Add(s, fr(80+i, "y"))
			a.Flush()
		}
		if a.history > a.maxHist {
			t.Fatalf("stream %d: history %d bytes, budget %d", k, a.history, a.maxHist)
		}
	}
	sum := 0
	for _, st := range a.order {
		h := st.hist
		sum += 16*max(0, len(h.spans)-freeSpans) + 24*max(0, len(h.recent)-freeRecent)
	}
	if sum != a.history {
		t.Fatalf("history counted %d, streams hold %d", a.history, sum)
	}
	last := a.order[len(a.order)-1].hist
	if len(last.spans) > 2*freeSpans || len(last.recent) > freeRecent || last.floor == 0 {
		t.Fatalf("the last stream remembers %d runs (floor %d), %d hashes", len(last.spans), last.floor, len(last.recent))
	}
	*got = nil
	s := frames.StreamID{Node: "n", Life: 49}
	a.Add(s, fr(0, "x")) // forgotten: shown late
	a.Add(s, fr(78, "x"))
	if diff := cmp.Diff([]string{"late0"}, summary(*got)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

func BenchmarkAssemblerInOrder1K(b *testing.B) {
	a := NewAssembler(0, func(Item) {})
	payload := make([]byte, 1000)
	b.ReportAllocs()
	b.SetBytes(1000)
	for i := 0; b.Loop(); i++ {
		a.Add(S, frames.Frame{Channel: 1, Position: frames.Position(i), Payload: payload})
	}
}

// Every second frame arrives one place late: the stream holds one frame
// at a time.
func BenchmarkAssemblerSwapped(b *testing.B) {
	a := NewAssembler(0, func(Item) {})
	payload := make([]byte, 100)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		a.Add(S, frames.Frame{Channel: 1, Position: frames.Position(i ^ 1), Payload: payload})
	}
}

// keep copies an item's payload, which is valid only during the emit call.
func keep(it Item) Item {
	it.Frame.Payload = bytes.Clone(it.Frame.Payload)
	return it
}

// What an Assembler keeps alive while it spills does not grow with what it
// spilled: a hole at position 0 holds everything after it, and the live
// heap is the same for 100 000 frames held as for 400 000.
func TestAssemblerSpillHeapFlat(t *testing.T) {
	heap := func() float64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return float64(m.HeapAlloc) / (1 << 20)
	}
	var live [2]float64
	for k, n := range []int{100_000, 400_000} {
		a := NewAssemblerWith(AssemblerOptions{TempDir: t.TempDir()}, func(Item) {})
		payload := make([]byte, 64)
		base := heap()
		for i := 1; i < n; i++ {
			a.Add(S, frames.Frame{Channel: 1, Position: frames.Position(i), Payload: payload})
		}
		live[k] = heap() - base
		if spilled, _ := a.Spilled(); spilled < uint64(n/2) {
			t.Fatalf("%d frames held, %d spilled", n, spilled)
		}
		emitted := 0
		a.emit = func(Item) { emitted++ }
		a.Add(S, frames.Frame{Channel: 1, Position: 0, Payload: payload})
		if emitted != n || a.Err() != nil {
			t.Fatalf("%d frames emitted of %d (%v)", emitted, n, a.Err())
		}
		a.Close()
		runtime.KeepAlive(a)
	}
	t.Logf("live heap holding 100 000 frames: %.1f MiB; 400 000: %.1f MiB", live[0], live[1])
	if live[1] > live[0]+1 || live[1] > float64(DefaultMemory)/(1<<20)+4 {
		t.Errorf("live heap %.1f MiB, then %.1f MiB", live[0], live[1])
	}
}

// However often it spills, an Assembler keeps few spill files open:
// spillFanIn files of a level are merged into one of the next, so each
// frame is rewritten once per level (O(log n)), not at every merge.
func TestAssemblerSpillFilesBounded(t *testing.T) {
	a, got := collectItems(AssemblerOptions{Memory: 1, TempDir: t.TempDir()}) // a spill per frame held
	B := frames.StreamID{Node: "node-beta", Life: 1}
	const n = 500
	for i := n; i >= 1; i-- { // reversed: everything is held
		for _, s := range []frames.StreamID{S, B} {
			a.Add(s, fr(uint64(i), fmt.Sprint(i)))
			if k := len(a.spill.files); k > 4*spillFanIn {
				t.Fatalf("%d spill files open", k)
			}
		}
	}
	a.Add(B, fr(0, "0"))
	a.Add(S, fr(0, "0"))
	if a.Err() != nil {
		t.Fatal(a.Err())
	}
	want := map[frames.StreamID]uint64{}
	for _, it := range *got {
		p := uint64(it.Frame.Position)
		if it.Kind != ItemFrame || p != want[it.Stream] || string(it.Frame.Payload) != fmt.Sprint(p) {
			t.Fatalf("%s: item %+v, want position %d", it.Stream, it, want[it.Stream])
		}
		want[it.Stream]++
	}
	if want[S] != n+1 || want[B] != n+1 || len(a.spill.files) != 0 {
		t.Fatalf("emitted %v, %d files open", want, len(a.spill.files))
	}
}

// A Trimmed record read after frames were held drops those below it and
// declares no gap across the trimmed positions (review of issue 10).
func TestAssemblerTrimAfterHeld(t *testing.T) {
	a, got := collectItems(AssemblerOptions{})
	a.Segment(S, 0)
	a.Add(S, fr(3, "3"))
	a.Add(S, fr(5, "5"))
	a.Trim(S, 4)
	a.Flush()
	if diff := cmp.Diff([]string{"trimmed0-3", "5"}, summary(*got)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if st := a.Stats(S); st.First != 5 || st.Trimmed != 1 || st.Gaps != 0 {
		t.Fatalf("stats %+v", st)
	}
	// The horizon's frame already held: the stream starts at once.
	a, got = collectItems(AssemblerOptions{})
	a.Add(S, fr(4, "4"))
	a.Add(S, fr(2, "2"))
	a.Trim(S, 4)
	if diff := cmp.Diff([]string{"trimmed0-3", "4"}, summary(*got)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// A copy is the same channel and payload: the same bytes on another
// channel at a stored position are a conflict, as the store says.
func TestAssemblerChannelIsIdentity(t *testing.T) {
	for _, held := range []bool{false, true} {
		a, got := collectItems(AssemblerOptions{})
		if held {
			a.Add(S, frames.Frame{Channel: 1, Position: 1, Payload: []byte("x")})
			a.Add(S, frames.Frame{Channel: 2, Position: 1, Payload: []byte("x")})
			a.Add(S, fr(0, "0"))
		} else {
			a.Add(S, frames.Frame{Channel: 1, Position: 0, Payload: []byte("x")})
			a.Add(S, frames.Frame{Channel: 2, Position: 0, Payload: []byte("x")})
		}
		a.Flush()
		if st := a.Stats(S); st.Conflicts != 1 || st.Duplicates != 0 {
			t.Fatalf("held %v: stats %+v, items %v", held, st, summary(*got))
		}
	}
}

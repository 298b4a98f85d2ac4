package segments

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ds-telemetry/ds/pkg/frames"
)

var S = frames.StreamID{Node: "node-alpha", Life: 1} // CONFORMANCE.md notation

// run feeds frames in the given order and returns the items, flushed.
func run(window int, fs ...frames.Frame) []Item {
	var got []Item
	a := NewAssembler(window, func(it Item) { got = append(got, it) })
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
		// CONFORMANCE §3.1: drop position 1, reverse the rest.
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

// CONFORMANCE §3.5: drop 4..7 of 0..15, deliver in reversed windows of 3.
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

// CONFORMANCE §3.3: incarnations never merge.
func TestAssemblerLivesNeverMerge(t *testing.T) {
	var got []Item
	a := NewAssembler(0, func(it Item) { got = append(got, it) })
	a.Add(frames.StreamID{Node: "n", Life: 1}, fr(0, "a"))
	a.Add(frames.StreamID{Node: "n", Life: 2}, fr(0, "b"))
	a.Flush()
	if len(got) != 2 || got[0].Stream == got[1].Stream || len(a.Streams()) != 2 {
		t.Fatalf("got %+v", got)
	}
}

// A frame trailing by more than the window is reported late, not lost.
func TestAssemblerLateFrame(t *testing.T) {
	in := append(seq(0, 1), seq(3, 8)...)
	in = append(in, fr(2, "late"))
	// The window is in bytes: room for 4 held frames of 1-byte payloads,
	// so the gap is declared once 5 are held.
	got := summary(run(4*(1+heldOverhead), in...))
	want := []string{"0", "1", "gap2-2", "3", "4", "5", "6", "7", "8", "late2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// Property (DESIGN.md §6: order independence, idempotent ingest): any
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
	return NewAssemblerWith(opts, func(it Item) { got = append(got, it) }), &got
}

// A stream whose first segment read is not its writer's first starts at
// once, at the first position that arrives, and says so; what arrives
// below it later is late, and a copy of that is a duplicate.
func TestAssemblerHeadMissing(t *testing.T) {
	a, got := collectItems(AssemblerOptions{})
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
}

// The window is bounded in bytes: a hole early in a long stream costs at
// most the window, then the gap is declared and frames flow.
func TestAssemblerByteWindow(t *testing.T) {
	const window = 64 << 10
	a, got := collectItems(AssemblerOptions{Window: window})
	payload := make([]byte, 1000)
	maxHeld := 0
	for i := range uint64(1000) {
		if i == 2 {
			continue
		}
		a.Add(S, frames.Frame{Channel: 1, Position: frames.Position(i), Payload: payload})
		maxHeld = max(maxHeld, a.HeldBytes())
	}
	if maxHeld > window {
		t.Fatalf("held %d bytes, window %d", maxHeld, window)
	}
	if h := a.HeldBytes(); h != 0 {
		t.Fatalf("still holding %d bytes of an in-order stream", h)
	}
	s := summary(*got)
	if len(s) != 1000 || s[2] != "gap2-2" || s[999] != "999" {
		t.Fatalf("got %d items: %v…", len(s), s[:min(len(s), 5)])
	}
	st := a.Stats(S)
	if st.Frames != 999 || st.Gaps != 1 || st.Missing != 1 {
		t.Fatalf("stats %+v", st)
	}
	// The missing frame arrives at last: late, not a duplicate.
	a.Add(S, frames.Frame{Channel: 1, Position: 2, Payload: payload})
	if k := (*got)[len(*got)-1]; k.Kind != ItemLate || a.Stats(S).Late != 1 {
		t.Fatalf("last item %+v, stats %+v", k, a.Stats(S))
	}
}

// Across streams the total is bounded: the stream holding the most is made
// to emit, declaring its gap; the others keep their window.
func TestAssemblerTotalWindow(t *testing.T) {
	const total = 10 * (100 + heldOverhead)
	a, got := collectItems(AssemblerOptions{Window: 1 << 20, TotalWindow: total})
	B := frames.StreamID{Node: "node-beta", Life: 1}
	p := make([]byte, 100)
	add := func(s frames.StreamID, pos uint64) {
		t.Helper()
		a.Add(s, frames.Frame{Channel: 1, Position: frames.Position(pos), Payload: p})
		if a.HeldBytes() > total {
			t.Fatalf("held %d > %d", a.HeldBytes(), total)
		}
	}
	add(S, 0)
	add(B, 0)
	for i := range uint64(6) {
		add(S, 10+i) // S holds 6
	}
	for i := range uint64(4) {
		add(B, 5+i) // B holds 4: 10 in all
	}
	if n := len(*got); n != 2 {
		t.Fatalf("emitted %d items before the total was reached", n)
	}
	add(B, 9) // 11 held: S, holding the most, gives one up
	var items []string
	for _, it := range (*got)[2:] {
		items = append(items, string(it.Stream.Node)+":"+summary([]Item{it})[0])
	}
	want := []string{"node-alpha:gap1-9", "node-alpha:10", "node-alpha:11", "node-alpha:12", "node-alpha:13", "node-alpha:14", "node-alpha:15"}
	if diff := cmp.Diff(want, items); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if h := a.HeldBytes(); h != 5*(100+heldOverhead) {
		t.Fatalf("held %d, want B's 5 frames", h)
	}
}

// A frame below where a stream started (it waited for its window, then
// started at its lowest held position) is late, not a duplicate: it was
// never emitted.
func TestAssemblerBelowStart(t *testing.T) {
	a, got := collectItems(AssemblerOptions{Window: 3 * (1 + heldOverhead)})
	for _, f := range append(seq(10, 14), fr(5, "5"), fr(5, "5"), fr(12, "12"), fr(6, "x"), fr(6, "y")) {
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
	a, got := collectItems(AssemblerOptions{Window: 1})
	in := []frames.Frame{fr(0, "0"), fr(1, "1"), fr(3, "3"), fr(4, "4"), fr(8, "8"),
		fr(1, "1"), fr(3, "3"), fr(2, "2"), fr(2, "2"), fr(6, "6"), fr(5, "5"), fr(7, "7"), fr(5, "5"), fr(0, "0"), fr(8, "8")}
	for _, f := range in {
		a.Add(S, f)
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
		{"last frame, long, other middle: not seen", frameList{{0, long('x')}, {0, long('y')}}.frames(), 1, 1, 0},
		{"older frame before disorder: not compared", frameList{{0, "a"}, {1, "b"}, {0, "c"}}.frames(), 1, 1, 0},
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
	a, got := collectItems(AssemblerOptions{Window: 1})
	const n = maxSpans + 10
	for i := range uint64(n) {
		a.Add(S, fr(2*i, "x")) // a gap before each
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
	a, got := collectItems(AssemblerOptions{Window: 1})
	a.maxHist = 100 * 16
	for k := range 50 {
		s := frames.StreamID{Node: "n", Life: frames.Life(k)}
		for i := range uint64(40) {
			a.Add(s, fr(2*i, "x")) // a gap before each but the first
		}
		a.Add(s, fr(1, "late")) // disorder: recent hashes from now on
		for i := range uint64(100) {
			a.Add(s, fr(80+i, "y"))
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

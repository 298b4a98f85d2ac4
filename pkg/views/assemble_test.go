package views

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ds-telemetry/ds/pkg/frames"
)

var S = frames.StreamID{Node: "node-alpha", Life: 1}

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

// summary renders items as "3", "gap1-2", "conflict0", "late4".
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
	got := summary(run(4, in...))
	want := []string{"0", "1", "gap2-2", "3", "4", "5", "6", "7", "8", "late2"}
	// With a window of 4 the gap is declared once 5 frames are held.
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

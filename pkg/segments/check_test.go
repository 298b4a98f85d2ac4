package segments

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// checkPositions against a map, on random positions: runs, gaps and
// duplicates; past MaxCheckRuns runs it stops counting gaps, never
// panics, and still knows first and last.
func TestCheckPositions(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 3))
		var ps checkPositions
		seen := map[frames.Position]bool{}
		span := 1 + rng.IntN(300)
		for range rng.IntN(400) {
			p := frames.Position(rng.IntN(span))
			if rng.IntN(10) == 0 {
				p = 1<<64 - 1 - frames.Position(rng.IntN(3))
			}
			if dup := ps.add(p); dup != seen[p] {
				t.Fatalf("seed %d: add(%d) = %v, seen %v", seed, p, dup, seen[p])
			}
			seen[p] = true
		}
		var want []PositionRun
		keys := make([]frames.Position, 0, len(seen))
		for p := range seen {
			keys = append(keys, p)
		}
		slices.Sort(keys)
		for _, p := range keys {
			if n := len(want); n > 0 && want[n-1].To+1 == p {
				want[n-1].To = p
			} else {
				want = append(want, PositionRun{p, p})
			}
		}
		if !slices.Equal(ps.spans, want) {
			t.Fatalf("seed %d: runs %v, want %v", seed, ps.spans, want)
		}
		var missing uint64
		for i := 1; i < len(want); i++ {
			missing += uint64(want[i].From - want[i-1].To - 1)
		}
		if n, m := ps.gaps(); n != uint64(max(len(want)-1, 0)) || m != missing {
			t.Fatalf("seed %d: gaps %d, %d; want %d, %d", seed, n, m, len(want)-1, missing)
		}
	}
	var ps checkPositions
	for p := range frames.Position(2*MaxCheckRuns + 10) {
		ps.add(2 * p)
	}
	if !ps.overflow || len(ps.spans) != MaxCheckRuns || ps.spans[len(ps.spans)-1] != (PositionRun{2*MaxCheckRuns - 2, 4*MaxCheckRuns + 18}) {
		t.Fatalf("overflow %v, %d runs, %v…%v", ps.overflow, len(ps.spans), ps.spans[0], ps.spans[len(ps.spans)-1])
	}
	ps.add(1) // joins the first two runs
	if len(ps.spans) != MaxCheckRuns-1 || ps.spans[0] != (PositionRun{0, 2}) {
		t.Fatalf("overflow %v, %d runs, %v…%v", ps.overflow, len(ps.spans), ps.spans[0], ps.spans[len(ps.spans)-1])
	}
	if n := ps.clip(4*MaxCheckRuns + 18); n == 0 || len(ps.spans) != 1 {
		t.Fatalf("clip: %d hidden, %d runs left", n, len(ps.spans))
	}
}

// checkAll checks inputs in order with one Checker, and returns each
// input's findings and report.
func checkAll(t *testing.T, opts CheckOptions, inputs ...[]byte) ([][]Finding, []*CheckReport) {
	t.Helper()
	c := NewChecker()
	var found [][]Finding
	var reps []*CheckReport
	for i, in := range inputs {
		var fs []Finding
		o := opts
		o.Finding = func(f Finding) { fs = append(fs, f) }
		rep, err := c.Check(context.Background(), bytes.NewReader(in), fmt.Sprint("in", i), o)
		if err != nil {
			t.Fatalf("input %d: %v", i, err)
		}
		found, reps = append(found, fs), append(reps, rep)
	}
	return found, reps
}

// Check returns what it finds as data: nothing for a good capture, a
// torn tail (or, live, a live tail), damage, and a channel declared two
// ways across inputs, with the first input's place.
func TestCheck(t *testing.T) {
	good := writeEvents(t, descS, catalogS, WriterOptions{Rand: detRand(1)}, smallEvents())
	fs, reps := checkAll(t, CheckOptions{Format: InputDSS}, good)
	rep := reps[0]
	if len(fs[0]) != 0 || rep.Problems != 0 || rep.Format != InputDSS || rep.Bytes != int64(len(good)) || rep.Frames != 6 || len(rep.Streams) != 1 {
		t.Fatalf("good: findings %v, report %+v", fs[0], rep)
	}
	if st := rep.Streams[0]; st.Stream != streamS || !st.Ended || st.Gaps != 0 || !slices.Equal(st.Runs, []PositionRun{{0, 5}}) {
		t.Errorf("good: stream %+v", st)
	}

	torn := good[:len(good)-1]
	fs, reps = checkAll(t, CheckOptions{Sniff: true}, torn)
	if n := len(fs[0]); n == 0 || reps[0].Problems != 1 {
		t.Fatalf("torn: findings %v, %d problems", fs[0], reps[0].Problems)
	}
	if tt, ok := fs[0][len(fs[0])-1].(*TornTail); !ok || tt.End != int64(len(torn)) || !errors.Is(tt.Err, io.ErrUnexpectedEOF) {
		t.Errorf("torn: last finding %#v", fs[0][len(fs[0])-1])
	}
	fs, reps = checkAll(t, CheckOptions{Format: InputDSS, Live: true}, torn)
	if _, ok := fs[0][len(fs[0])-1].(*LiveTail); !ok || reps[0].Problems != 0 {
		t.Errorf("live: findings %v, %d problems", fs[0], reps[0].Problems)
	}

	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 0x40
	fs, reps = checkAll(t, CheckOptions{Format: InputDSS}, flipped)
	if len(fs[0]) == 0 || reps[0].Problems == 0 {
		t.Fatalf("flipped: findings %v", fs[0])
	}
	if _, ok := fs[0][0].(*DamagedRange); !ok {
		t.Errorf("flipped: first finding %#v", fs[0][0])
	}

	// A flipped header bit: the header is recovered from its HeaderCopy,
	// the damage is the only finding (its summary's length counts from
	// the damaged header, not from the copy the reader returns).
	hdrFlip := bytes.Clone(good)
	hdrFlip[40] ^= 0x04
	fs, reps = checkAll(t, CheckOptions{Format: InputDSS}, hdrFlip)
	if len(fs[0]) != 1 || reps[0].Problems != 1 || reps[0].Frames != 6 {
		t.Fatalf("header bit: findings %v, %d problems, %d frames; want the damage only, 6 frames", fs[0], reps[0].Problems, reps[0].Frames)
	}
	if d, ok := fs[0][0].(*DamagedRange); !ok || d.Offset != 0 {
		t.Errorf("header bit: finding %#v", fs[0][0])
	}

	other := channel(streamS, 2)
	other.Name = "proc.other.stdout"
	renamed := writeEvents(t, descS, []frames.ChannelDescriptor{channel(streamS, 1), other}, WriterOptions{Rand: detRand(2)}, smallEvents())
	fs, reps = checkAll(t, CheckOptions{Format: InputDSS}, good, renamed)
	if len(fs[1]) != 1 || reps[1].Problems != 1 {
		t.Fatalf("conflict: findings %v", fs[1])
	}
	cc, ok := fs[1][0].(*ChannelConflict)
	if !ok || cc.First.Input != "in0" || cc.Second.Input != "in1" || cc.First.Channel.Name != "proc.trainer.stdout" || cc.Second.Channel.Name != other.Name {
		t.Errorf("conflict: %#v", fs[1][0])
	}
}

// TestCheckTrimmedFrames: frames below a Trimmed record are a problem in a
// capture file (a TrimmedFrames finding), which a store's read-out
// (CheckOptions.Store) is not: there they are the store's hidden frames.
func TestCheckTrimmedFrames(t *testing.T) {
	spec := capSpec{desc: descS, catalog: catS(), trim: 5, frames: textFramesAt(0, 9)}
	in := spec.build(t)
	fs, reps := checkAll(t, CheckOptions{Format: InputDSS}, in)
	if len(fs[0]) != 1 || reps[0].Problems != 1 {
		t.Fatalf("capture: findings %v, %d problems", fs[0], reps[0].Problems)
	}
	if tf, ok := fs[0][0].(*TrimmedFrames); !ok || *tf != (TrimmedFrames{Stream: streamS, Before: 5, Frames: 5}) {
		t.Errorf("capture: finding %#v", fs[0][0])
	}
	fs, reps = checkAll(t, CheckOptions{Format: InputDSS, Store: true}, in)
	if len(fs[0]) != 0 || reps[0].Problems != 0 || reps[0].Streams[0].Hidden != 5 {
		t.Errorf("store: findings %v, report %+v", fs[0], reps[0])
	}
	// The horizon and nothing below it (a merged trimmed store): clean.
	spec.frames = textFramesAt(5, 9)
	if fs, reps = checkAll(t, CheckOptions{Format: InputDSS}, spec.build(t)); len(fs[0]) != 0 || reps[0].Problems != 0 {
		t.Errorf("nothing below: findings %v, %d problems", fs[0], reps[0].Problems)
	}
}

// TestCheckerWideCatalogOnce checks a capture of three segments whose
// headers each declare the same 60 000 channels (a 6.6 MB catalog): the
// checker keeps the first header's decoded catalog as the channels' first
// declarations and compares the others with it, without a map entry a
// channel (about 150 bytes each, against 90 in the decoded catalog: 19 MB
// of the 75 MiB ds check took on a 16 MiB header, measured by
// scripts/mem_wide.sh); a channel declared two ways is still found.
func TestCheckerWideCatalogOnce(t *testing.T) {
	cat := make([]frames.ChannelDescriptor, 60_000)
	for i := range cat {
		cat[i] = frames.ChannelDescriptor{Stream: streamS, ID: frames.ChannelID(i + 1), Name: fmt.Sprintf("proc.job-%d.stdout", i+1), Content: frames.TextStream()}
	}
	var evs []frames.Event
	for i := range 3000 {
		evs = append(evs, frameEvent(streamS, frames.Frame{Channel: frames.ChannelID(i%100 + 1), Position: frames.Position(i), Payload: []byte(strings.Repeat("x", 99) + "\n")}))
	}
	data := writeEvents(t, descS, cat, WriterOptions{SegmentContent: 100 << 10, Rand: detRand(5)}, evs)
	if n := countHeaders(spans(t, data)); n < 3 {
		t.Fatalf("%d segments, want 3", n)
	}
	c := NewChecker()
	rep, err := c.Check(t.Context(), bytes.NewReader(data), "wide.dss", CheckOptions{Format: InputDSS})
	if err != nil || rep.Problems != 0 || rep.Frames != 3000 {
		t.Fatalf("check: %v, %+v", err, rep)
	}
	if sd := c.chans[streamS]; sd == nil || len(sd.base) != len(cat) || len(sd.more) != 0 {
		t.Fatalf("declarations: %+v", sd)
	}
	// A second input renames channel 7: one conflict, naming both places.
	cat[6].Name = "proc.renamed.stdout"
	other := writeEvents(t, descS, cat, WriterOptions{Rand: detRand(6)}, evs[:10])
	var fs []Finding
	if _, err := c.Check(t.Context(), bytes.NewReader(other), "other.dss", CheckOptions{Format: InputDSS, Finding: func(f Finding) { fs = append(fs, f) }}); err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 {
		t.Fatalf("findings %v, want one conflict", fs)
	}
	if cc, ok := fs[0].(*ChannelConflict); !ok || cc.First.Input != "wide.dss" || cc.First.Offset != 0 || cc.First.Channel.Name != "proc.job-7.stdout" || cc.Second.Channel.Name != "proc.renamed.stdout" {
		t.Errorf("finding %#v", fs[0])
	}
}

package views

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/textfmt"
)

var (
	gapsA = frames.StreamID{Node: "a", Life: 7}
	gapsB = frames.StreamID{Node: "b", Life: 1}
)

// gapsCatalog is the catalog of the streams of the Gaps tests: 1 stdout,
// 2 datastream.health.
func gapsCatalog(s frames.StreamID) []frames.ChannelDescriptor {
	return []frames.ChannelDescriptor{
		{Stream: s, ID: 1, Name: "proc.job.stdout", Content: frames.TextStream()},
		{Stream: s, ID: 2, Name: frames.HealthChannel, Content: frames.JSONRecord(frames.HealthChannel)},
	}
}

// gapsOp is one call on a Gaps.
type gapsOp func(g *Gaps)

func gHdr(s frames.StreamID, seq uint64) gapsOp {
	return func(g *Gaps) {
		g.Header(segments.SegmentHeader{Stream: frames.StreamDescriptor{Stream: s}, Channels: gapsCatalog(s), Seq: seq})
	}
}

// lines adds stdout frames at the given positions.
func gLines(s frames.StreamID, positions ...uint64) gapsOp {
	return func(g *Gaps) {
		for _, p := range positions {
			g.Frame(s, frames.Frame{Channel: 1, Position: frames.Position(p), Payload: fmt.Appendf(nil, "line %d\n", p)})
		}
	}
}

func gFrame(s frames.StreamID, pos uint64, ch frames.ChannelID, payload string) gapsOp {
	return func(g *Gaps) {
		g.Frame(s, frames.Frame{Channel: ch, Position: frames.Position(pos), Payload: []byte(payload)})
	}
}

func gHealth(s frames.StreamID, pos uint64, payload string) gapsOp {
	return gFrame(s, pos, 2, payload)
}

func gEnded(s frames.StreamID) gapsOp { return func(g *Gaps) { g.Ended(s) } }

func gFile(name string, live bool) gapsOp { return func(g *Gaps) { g.Input(name, live) } }

func gDamage(offset, end int64, torn bool) gapsOp {
	return func(g *Gaps) { g.Damage(offset, end, torn, errors.New("segments: bad")) }
}

func gU64(n uint64) *uint64 { return &n }

// findings runs ops on a new Gaps and returns what it lists and counts.
func gapsFindings(t *testing.T, window int, ops ...gapsOp) ([]Finding, LossTotals) {
	t.Helper()
	g := NewGaps(window)
	for _, op := range ops {
		op(g)
	}
	var out []Finding
	if err := g.Each(func(f Finding) error { out = append(out, f); return nil }); err != nil {
		t.Fatal(err)
	}
	return out, g.Totals()
}

func TestGapsFindings(t *testing.T) {
	tests := []struct {
		name   string
		window int
		ops    []gapsOp
		want   []Finding
		totals LossTotals
	}{{
		name: "clean",
		ops:  []gapsOp{gFile("x.dss", false), gHdr(gapsA, 0), gLines(gapsA, 0, 1, 2, 3), gEnded(gapsA)},
	}, {
		name:   "interior gap",
		ops:    []gapsOp{gHdr(gapsA, 0), gLines(gapsA, 0, 1, 4, 5, 7), gEnded(gapsA)},
		want:   []Finding{{Kind: FindingGap, Stream: gapsA, Gap: segments.Gap{From: 2, To: 3, Count: 2}}, {Kind: FindingGap, Stream: gapsA, Gap: segments.Gap{From: 6, To: 6, Count: 1}}},
		totals: LossTotals{Gaps: 2, Missing: 3},
	}, {
		name: "drop in place",
		ops: []gapsOp{gHdr(gapsA, 0), gLines(gapsA, 0, 1),
			gHealth(gapsA, 2, `{"mux_dropped":4,"mux_dropped_bytes":512,"subscriber_dropped":0,"loss":{"frames":4,"bytes":512,"reason":"queue full"}}`),
			gLines(gapsA, 3), gEnded(gapsA)},
		want:   []Finding{{Kind: FindingDrop, Stream: gapsA, Drop: Drop{Before: 2, Frames: 4, Bytes: gU64(512), Reason: "queue full"}}},
		totals: LossTotals{Drops: 1, Dropped: 4},
	}, {
		name: "older writer: counters only, and a subscriber",
		ops: []gapsOp{gHdr(gapsA, 0), gLines(gapsA, 0),
			gHealth(gapsA, 1, `{"mux_dropped":0,"subscriber_dropped":0,"subscribers":[{"name":"file","dropped":0}]}`),
			gLines(gapsA, 2),
			gHealth(gapsA, 3, `{"mux_dropped":7,"subscriber_dropped":3,"subscribers":[{"name":"file","dropped":1},{"name":"tail","dropped":2}]}`),
			gHealth(gapsA, 4, `{"mux_dropped":7,"subscriber_dropped":3,"subscribers":[{"name":"file","dropped":1},{"name":"tail","dropped":2}]}`),
			gEnded(gapsA)},
		want: []Finding{
			{Kind: FindingDrop, Stream: gapsA, Drop: Drop{Before: 3, Frames: 7, Reason: "queue full"}},
			{Kind: FindingSubscriberDrop, Stream: gapsA, From: 3, Position: 3, Frames: 3, Subscribers: []SubscriberLoss{{"file", 1}, {"tail", 2}}},
		},
		totals: LossTotals{Drops: 1, Dropped: 7, SubDrops: 1, SubDropped: 3},
	}, {
		name: "subscriber counters read from part-way are a baseline",
		ops: []gapsOp{gHdr(gapsA, 1), gLines(gapsA, 10),
			gHealth(gapsA, 11, `{"subscriber_dropped":5,"subscribers":[{"name":"tail","dropped":5}]}`),
			gHealth(gapsA, 12, `{"subscriber_dropped":6,"subscribers":[{"name":"tail","dropped":5},{"name":"new","dropped":1}]}`),
			gEnded(gapsA)},
		want: []Finding{
			{Kind: FindingStart, Stream: gapsA, Position: 10, Segment: 1},
			{Kind: FindingSubscriberDrop, Stream: gapsA, From: 12, Position: 12, Frames: 1, Subscribers: []SubscriberLoss{{"new", 1}}},
		},
		totals: LossTotals{Starts: 1, SubDrops: 1, SubDropped: 1},
	}, {
		// Disorder makes the assembler keep the hashes of what it emits,
		// so that a copy of position 2 is compared.
		name:   "conflict, listed by position",
		window: 1,
		ops: []gapsOp{gHdr(gapsA, 0), gLines(gapsA, 0, 2, 5),
			gFrame(gapsA, 2, 1, "other\n"), gEnded(gapsA)},
		want: []Finding{
			{Kind: FindingGap, Stream: gapsA, Gap: segments.Gap{From: 1, To: 1, Count: 1}},
			{Kind: FindingConflict, Stream: gapsA, Position: 2, ChannelID: 1, Channel: "proc.job.stdout"},
			{Kind: FindingGap, Stream: gapsA, Gap: segments.Gap{From: 3, To: 4, Count: 2}},
		},
		totals: LossTotals{Conflicts: 1, Gaps: 2, Missing: 3},
	}, {
		name:   "head cut off: a later segment first",
		ops:    []gapsOp{gHdr(gapsA, 3), gLines(gapsA, 100, 101), gEnded(gapsA)},
		want:   []Finding{{Kind: FindingStart, Stream: gapsA, Position: 100, Segment: 3}},
		totals: LossTotals{Starts: 1},
	}, {
		name:   "first frames lost: the writer's first segment starts above 0",
		ops:    []gapsOp{gHdr(gapsA, 0), gLines(gapsA, 3, 4), gEnded(gapsA)},
		want:   []Finding{{Kind: FindingStart, Stream: gapsA, Position: 3}},
		totals: LossTotals{Starts: 1},
	}, {
		name:   "never ended",
		ops:    []gapsOp{gHdr(gapsA, 0), gLines(gapsA, 0, 1, 2)},
		want:   []Finding{{Kind: FindingUnended, Stream: gapsA, Position: 2, Frames: 3}},
		totals: LossTotals{Unended: 1},
	}, {
		name:   "never ended, no frame",
		ops:    []gapsOp{gHdr(gapsA, 0)},
		want:   []Finding{{Kind: FindingUnended, Stream: gapsA}},
		totals: LossTotals{Unended: 1},
	}, {
		name:   "live: a note, the end not a loss",
		ops:    []gapsOp{gFile("live.dss", true), gHdr(gapsA, 0), gLines(gapsA, 0, 1)},
		want:   []Finding{{Kind: FindingLive, File: "live.dss"}},
		totals: LossTotals{Live: 1},
	}, {
		name: "a stream whose latest segment is in a live input is live",
		ops: []gapsOp{gFile("old.dss", false), gHdr(gapsA, 0), gLines(gapsA, 0), gHdr(gapsB, 0), gLines(gapsB, 0),
			gFile("new.dss", true), gHdr(gapsA, 1), gLines(gapsA, 1)},
		want:   []Finding{{Kind: FindingLive, File: "new.dss"}, {Kind: FindingUnended, Stream: gapsB, Frames: 1}},
		totals: LossTotals{Live: 1, Unended: 1},
	}, {
		name: "damage and torn tail, by input",
		ops: []gapsOp{gFile("x.dss", false), gDamage(10, 20, false), gHdr(gapsA, 0), gLines(gapsA, 0), gEnded(gapsA),
			gFile("y.dss", false), gDamage(30, 35, true)},
		want: []Finding{
			{Kind: FindingDamage, File: "x.dss", Offset: 10, End: 20, Err: "segments: bad"},
			{Kind: FindingTorn, File: "y.dss", Offset: 30, End: 35, Err: "segments: bad"},
		},
		totals: LossTotals{Damaged: 1, DamagedBytes: 10, Torn: 1},
	}, {
		name: "streams sorted by node and life",
		ops: []gapsOp{gHdr(gapsB, 0), gLines(gapsB, 0, 2), gEnded(gapsB),
			gHdr(gapsA, 0), gLines(gapsA, 0, 5), gEnded(gapsA)},
		want: []Finding{
			{Kind: FindingGap, Stream: gapsA, Gap: segments.Gap{From: 1, To: 4, Count: 4}},
			{Kind: FindingGap, Stream: gapsB, Gap: segments.Gap{From: 1, To: 1, Count: 1}},
		},
		totals: LossTotals{Gaps: 2, Missing: 5},
	}, {
		// A window smaller than one held frame: every hole is declared a
		// gap at once, and the frames that arrive later fill it.
		name:   "late frames fill their gap",
		window: 1,
		ops:    []gapsOp{gHdr(gapsA, 0), gLines(gapsA, 0, 10, 3, 1, 9, 5), gEnded(gapsA)},
		want: []Finding{
			{Kind: FindingGap, Stream: gapsA, Gap: segments.Gap{From: 2, To: 2, Count: 1}},
			{Kind: FindingGap, Stream: gapsA, Gap: segments.Gap{From: 4, To: 4, Count: 1}},
			{Kind: FindingGap, Stream: gapsA, Gap: segments.Gap{From: 6, To: 8, Count: 3}},
		},
		totals: LossTotals{Gaps: 3, Missing: 5},
	}, {
		name:   "a late frame can fill a whole gap",
		window: 1,
		ops:    []gapsOp{gHdr(gapsA, 0), gLines(gapsA, 0, 2, 1), gEnded(gapsA)},
		totals: LossTotals{},
	}, {
		name:   "a late frame below the start moves the start",
		window: 1,
		ops:    []gapsOp{gHdr(gapsA, 2), gLines(gapsA, 5, 6, 4), gEnded(gapsA)},
		want:   []Finding{{Kind: FindingStart, Stream: gapsA, Position: 4, Segment: 2}},
		totals: LossTotals{Starts: 1},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, totals := gapsFindings(t, tt.window, tt.ops...)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
			if totals != tt.totals {
				t.Errorf("totals %+v, want %+v", totals, tt.totals)
			}
		})
	}
}

func TestGapsListBound(t *testing.T) {
	g := NewGaps(0)
	g.Input("x.dss", false)
	g.Header(segments.SegmentHeader{Stream: frames.StreamDescriptor{Stream: gapsA}, Channels: gapsCatalog(gapsA)})
	n := MaxListedFindings + 5
	for i := range n + 1 {
		g.Frame(gapsA, frames.Frame{Channel: 1, Position: frames.Position(2 * i), Payload: []byte("x")})
	}
	g.Ended(gapsA)
	var gaps, more uint64
	g.Each(func(f Finding) error {
		switch f.Kind {
		case FindingGap:
			gaps++
		case FindingMore:
			more = f.Count
		}
		return nil
	})
	if gaps != MaxListedFindings || more != 5 {
		t.Errorf("%d gaps listed and %d more, want %d and 5", gaps, more, MaxListedFindings)
	}
	if tot := g.Totals(); tot.Gaps != uint64(n) || tot.Missing != uint64(n) || tot.Losses() != uint64(n) {
		t.Errorf("totals %+v, want %d gaps", tot, n)
	}
	var out bytes.Buffer
	if err := g.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out.String(), "a#7  more        5 more not listed (at most 10000 are)\n") {
		t.Errorf("text ends with %q", out.String()[max(0, out.Len()-100):])
	}
}

// gapsAll feeds one of every finding.
func gapsAll() []gapsOp {
	s := frames.StreamID{Node: "ci\x01odd", Life: 3}
	return []gapsOp{
		gFile("live.dss", true),
		gFile("x.dss", false), gDamage(10, 20, false), gDamage(40, 45, true),
		gHdr(gapsA, 2), gLines(gapsA, 5, 6),
		gHealth(gapsA, 7, `{"mux_dropped":4,"subscriber_dropped":2,"loss":{"frames":4,"bytes":512,"reason":"queue full"}}`),
		gLines(gapsA, 9),
		gHealth(gapsA, 10, `{"mux_dropped":9,"subscriber_dropped":3,"subscribers":[{"name":"tail","dropped":1}]}`),
		gFrame(gapsA, 10, 9, "?"),
		gHdr(s, 0), gLines(s, 0),
	}
}

func TestGapsText(t *testing.T) {
	g := NewGaps(0)
	for _, op := range gapsAll() {
		op(g)
	}
	var out bytes.Buffer
	if err := g.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	want := `live.dss       live        being written (a writer holds it): its end is not known yet; not a loss
x.dss          damage      bytes 10–19 unreadable (10 bytes): segments: bad
x.dss          torn        torn tail at byte 40: the input ends inside a record (its writer stopped mid-record): segments: bad
a#7            start       starts at position 5: earlier frames not in the input (it starts at the writer's segment 2)
a#7            dropped     4 frames (512 bytes) refused before position 7 (queue full)
a#7            gap         position 8 missing (1 frame)
a#7            dropped     5 frames refused before position 10 (queue full)
a#7            subscriber  1 frame copy lost by subscribers before position 10 (tail: 1)
a#7            conflict    position 10 of channel 9: a different payload, refused (the first is kept)
a#7            unended     no StreamEnded record after position 10: its writer did not finish, what followed is unknown
"ci\x01odd#3"  unended     no StreamEnded record after position 0: its writer did not finish, what followed is unknown
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("text (-want +got):\n%s", diff)
	}
	tot := g.Totals()
	const sum = "8 losses: 1 damaged range (10 bytes), 1 torn tail, 1 stream without its start, 1 gap (1 frame missing), 2 drops (9 frames refused), 2 streams not ended; 1 problem: 1 conflict; noted: 1 subscriber drop (1 frame copy lost by subscribers)"
	if tot.String() != sum {
		t.Errorf("totals say %q, want %q", tot.String(), sum)
	}
	if !tot.IsDamaged() || (LossTotals{Live: 1}).Losses() != 0 || (LossTotals{}).String() != "no loss" {
		t.Error("IsDamaged or Losses wrong")
	}
}

func TestGapsJSON(t *testing.T) {
	g := NewGaps(0)
	for _, op := range gapsAll() {
		op(g)
	}
	var out bytes.Buffer
	if err := g.WriteJSON(&out); err != nil {
		t.Fatal(err)
	}
	want := `{"live":{"file":"live.dss"}}
{"damage":{"file":"x.dss","offset":10,"end":20,"torn_tail":false,"error":"segments: bad"}}
{"damage":{"file":"x.dss","offset":40,"end":45,"torn_tail":true,"error":"segments: bad"}}
{"stream":"a#7","node":"a","life":7,"start":{"position":5,"segment":2}}
{"stream":"a#7","node":"a","life":7,"dropped":{"before":7,"frames":4,"bytes":512,"reason":"queue full"}}
{"stream":"a#7","node":"a","life":7,"gap":{"from":8,"to":8,"count":1}}
{"stream":"a#7","node":"a","life":7,"dropped":{"before":10,"frames":5,"bytes":null,"reason":"queue full"}}
{"stream":"a#7","node":"a","life":7,"subscriber_dropped":{"before":10,"frames":1,"subscribers":[{"name":"tail","frames":1}]}}
{"stream":"a#7","node":"a","life":7,"conflict":{"position":10,"channel":null,"channel_id":9}}
{"stream":"a#7","node":"a","life":7,"unended":{"last_position":10}}
{"stream":"ci\u0001odd#3","node":"ci\u0001odd","life":3,"unended":{"last_position":0}}
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("json (-want +got):\n%s", diff)
	}
	g = NewGaps(0)
	gHdr(gapsA, 0)(g)
	out.Reset()
	if err := g.WriteJSON(&out); err != nil {
		t.Fatal(err)
	}
	if want := `{"stream":"a#7","node":"a","life":7,"unended":{"last_position":null}}` + "\n"; out.String() != want {
		t.Errorf("json %q, want %q", out.String(), want)
	}
}

// TestGapsScan reads captures made by segments.Writer: clean, gapped,
// cut at a record boundary (never ended), torn and damaged.
func TestGapsScan(t *testing.T) {
	write := func(closeIt bool, positions ...uint64) []byte {
		var buf bytes.Buffer
		w, err := segments.NewWriter(&buf, frames.StreamDescriptor{Stream: gapsA}, gapsCatalog(gapsA), segments.WriterOptions{Rand: rand.NewChaCha8([32]byte{})})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range positions {
			payload := fmt.Appendf(nil, "line %d\n", p)
			ch := frames.ChannelID(1)
			if p == 3 {
				ch, payload = 2, []byte(`{"mux_dropped":2,"loss":{"frames":2,"bytes":20,"reason":"queue full"}}`)
			}
			if err := w.WriteFrame(frames.Frame{Channel: ch, Position: frames.Position(p), Payload: payload}); err != nil {
				t.Fatal(err)
			}
		}
		if closeIt {
			err = w.Close()
		} else {
			err = w.Flush()
		}
		if err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	var g *Gaps
	scan := func(data []byte) ([]Finding, LossTotals) {
		g = NewGaps(0)
		g.Input("in.dss", false)
		if err := segments.Scan(context.Background(), bytes.NewReader(data), segments.ScanOptions{}, g); err != nil {
			t.Fatal(err)
		}
		var out []Finding
		g.Each(func(f Finding) error { out = append(out, f); return nil })
		return out, g.Totals()
	}
	kinds := func(fs []Finding) string {
		var k []string
		for _, f := range fs {
			k = append(k, f.Kind.String())
		}
		return strings.Join(k, " ")
	}

	if got, tot := scan(write(true, 0, 1, 2, 4, 5)); len(got) != 1 || got[0].Kind != FindingGap || tot.Losses() != 1 {
		t.Errorf("capture with a gap at 3: %v, %+v", got, tot)
	}
	if got, tot := scan(write(true, 0, 1, 2)); len(got) != 0 || tot.Losses() != 0 {
		t.Errorf("clean capture: %v, %+v", got, tot)
	}
	got, tot := scan(write(true, 0, 1, 3, 6))
	want := []Finding{
		{Kind: FindingGap, Stream: gapsA, Gap: segments.Gap{From: 2, To: 2, Count: 1}},
		{Kind: FindingDrop, Stream: gapsA, Drop: Drop{Before: 3, Frames: 2, Bytes: gU64(20), Reason: "queue full"}},
		{Kind: FindingGap, Stream: gapsA, Gap: segments.Gap{From: 4, To: 5, Count: 2}},
	}
	if diff := cmp.Diff(want, got); diff != "" || tot.Losses() != 3 {
		t.Errorf("gapped capture (-want +got):\n%s%+v", diff, tot)
	}
	if got, _ := scan(write(false, 0, 1)); kinds(got) != "unended" || got[0].Position != 1 {
		t.Errorf("capture never closed: %+v", got)
	}

	// Every cut shows: damage, or a stream that did not end, or (a cut
	// after the StreamEnded record, in the summary) nothing.
	whole := write(true, 0, 1, 2)
	for cut := 1; cut < len(whole); cut++ {
		got, tot := scan(whole[:cut])
		ended := g.streams[gapsA] != nil && g.streams[gapsA].ended
		if tot.Torn+tot.Damaged == 0 && !strings.Contains(kinds(got), "unended") && !ended {
			t.Fatalf("cut at %d of %d: %q, neither damage nor unended", cut, len(whole), kinds(got))
		}
	}
	got, tot = scan(whole[:len(whole)-2])
	if !strings.HasPrefix(kinds(got), "torn") || tot.Torn != 1 {
		t.Errorf("torn capture: %q", kinds(got))
	}
	flipped := bytes.Clone(whole)
	flipped[len(flipped)/2] ^= 0xFF
	got, tot = scan(flipped)
	if !strings.HasPrefix(kinds(got), "damage") || tot.Damaged == 0 || !tot.IsDamaged() {
		t.Errorf("damaged capture: %q", kinds(got))
	}
}

func TestNouns(t *testing.T) {
	for _, tt := range []struct {
		n    uint64
		what string
		want string
	}{{1, "frame", "1 frame"}, {0, "frame", "0 frames"}, {2, "frame copy", "2 frame copies"}, {3, "loss", "3 losses"}, {1, "loss", "1 loss"}} {
		if got := textfmt.Nouns(tt.n, tt.what); got != tt.want {
			t.Errorf("textfmt.Nouns(%d, %q) = %q, want %q", tt.n, tt.what, got, tt.want)
		}
	}
}

// FuzzGaps reads arbitrary bytes as a capture into a Gaps: no panic, every
// --json line is valid JSON, and when nothing is left unlisted the totals
// count exactly what is listed.
func FuzzGaps(f *testing.F) {
	for _, seed := range fuzzCaptures(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		g := NewGaps(1 << 12)
		g.Input("fuzz", false)
		if err := segments.Scan(context.Background(), bytes.NewReader(in), segments.ScanOptions{}, g); err != nil {
			t.Fatal(err)
		}
		var count LossTotals
		more := false
		g.Each(func(f Finding) error {
			switch f.Kind {
			case FindingDamage:
				count.Damaged++
				count.DamagedBytes += f.End - f.Offset
			case FindingTorn:
				count.Torn++
			case FindingStart:
				count.Starts++
			case FindingGap:
				count.Gaps++
				count.Missing += f.Gap.Count
			case FindingDrop:
				count.Drops++
				count.Dropped += f.Drop.Frames
			case FindingSubscriberDrop:
				count.SubDrops++
				count.SubDropped += f.Frames
			case FindingConflict:
				count.Conflicts++
			case FindingUnended:
				count.Unended++
			case FindingTransport:
				count.Transport++
				count.Undelivered += f.Transport.Frames
			case FindingClockStep:
				count.ClockSteps++
			case FindingMore:
				more = true
			}
			return nil
		})
		if tot := g.Totals(); !more && tot != count {
			t.Fatalf("totals %+v, listed %+v", tot, count)
		}
		var out bytes.Buffer
		if err := g.WriteJSON(&out); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(&out)
		for sc.Scan() {
			if !json.Valid(sc.Bytes()) {
				t.Fatalf("invalid JSON line %q", sc.Bytes())
			}
		}
		if err := g.WriteText(io.Discard); err != nil {
			t.Fatal(err)
		}
	})
}

// TestGapsInputsInterleaved feeds two inputs' Sinks in turn, as Merge
// does: damage goes to its own input, liveness follows each stream's
// latest header.
func TestGapsInputsInterleaved(t *testing.T) {
	g := NewGaps(0)
	a, b := g.Input("a.dss", false), g.Input("b.dss", true)
	a.Header(segments.SegmentHeader{Stream: frames.StreamDescriptor{Stream: gapsA}, Channels: gapsCatalog(gapsA)})
	b.Header(segments.SegmentHeader{Stream: frames.StreamDescriptor{Stream: gapsB}, Channels: gapsCatalog(gapsB)})
	b.Damage(5, 9, false, errors.New("bad b"))
	a.Frame(gapsA, frames.Frame{Channel: 1, Position: 0})
	a.Damage(7, 8, true, errors.New("torn a"))
	b.Frame(gapsB, frames.Frame{Channel: 1, Position: 0})
	var got []Finding
	g.Each(func(f Finding) error { got = append(got, f); return nil })
	want := []Finding{
		{Kind: FindingTorn, File: "a.dss", Offset: 7, End: 8, Err: "torn a"},
		{Kind: FindingLive, File: "b.dss"},
		{Kind: FindingDamage, File: "b.dss", Offset: 5, End: 9, Err: "bad b"},
		{Kind: FindingUnended, Stream: gapsA, Frames: 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}

// subHealth returns a health record of counters only: subscribers lost
// total frame copies, each of subs ("name:dropped") its part.
func subHealth(total uint64, subs ...string) string {
	var parts []string
	for _, s := range subs {
		i := strings.LastIndexByte(s, ':')
		name, n := s[:i], s[i+1:]
		parts = append(parts, fmt.Sprintf(`{"name":%q,"dropped":%s}`, name, n))
	}
	return fmt.Sprintf(`{"mux_dropped":0,"subscriber_dropped":%d,"subscribers":[%s]}`, total, strings.Join(parts, ","))
}

// subDrop is a FindingSubscriberDrop of gapsA counted by the health
// records at from..to.
func subDrop(from, to, n uint64, by ...SubscriberLoss) Finding {
	return Finding{Kind: FindingSubscriberDrop, Stream: gapsA, From: frames.Position(from), Position: frames.Position(to), Frames: n, Subscribers: by}
}

// Consecutive health records that show subscriber drops of the same
// subscribers, with nothing of the stream listed between them, are one
// finding: one outage of an output is one line, not one per record.
func TestGapsSubscriberRuns(t *testing.T) {
	const nats = "nats://127.0.0.1:4222/ds"
	tests := []struct {
		name   string
		ops    []gapsOp
		want   []Finding
		totals LossTotals
	}{{
		name: "an outage's records are one finding",
		ops: []gapsOp{gtHdr(gapsA), gLines(gapsA, 0),
			gHealth(gapsA, 1, subHealth(0, "capture:0", nats+":0")), gLines(gapsA, 2),
			gHealth(gapsA, 3, subHealth(2, "capture:0", nats+":2")), gLines(gapsA, 4),
			gHealth(gapsA, 5, subHealth(3, "capture:0", nats+":3")),
			gHealth(gapsA, 6, subHealth(7, "capture:0", nats+":7")), gLines(gapsA, 7),
			gHealth(gapsA, 8, subHealth(7, "capture:0", nats+":7")), // no growth: no finding, no break
			gHealth(gapsA, 9, subHealth(8, "capture:0", nats+":8")), gEnded(gapsA)},
		want:   []Finding{subDrop(3, 9, 8, SubscriberLoss{nats, 8})},
		totals: LossTotals{SubDrops: 1, SubDropped: 8},
	}, {
		name: "a gap between records ends the run",
		ops: []gapsOp{gtHdr(gapsA), gLines(gapsA, 0),
			gHealth(gapsA, 1, subHealth(1, "tail:1")), gHealth(gapsA, 2, subHealth(2, "tail:2")),
			gHealth(gapsA, 4, subHealth(3, "tail:3")), gHealth(gapsA, 5, subHealth(5, "tail:5")), gEnded(gapsA)},
		want: []Finding{
			subDrop(1, 2, 2, SubscriberLoss{"tail", 2}),
			{Kind: FindingGap, Stream: gapsA, Gap: segments.Gap{From: 3, To: 3, Count: 1}},
			subDrop(4, 5, 3, SubscriberLoss{"tail", 3}),
		},
		totals: LossTotals{Gaps: 1, Missing: 1, SubDrops: 2, SubDropped: 5},
	}, {
		name: "a drop at a record ends the run",
		ops: []gapsOp{gtHdr(gapsA), gLines(gapsA, 0),
			gHealth(gapsA, 1, subHealth(1, "tail:1")),
			gHealth(gapsA, 2, `{"mux_dropped":4,"subscriber_dropped":2,"subscribers":[{"name":"tail","dropped":2}],"loss":{"frames":4,"bytes":40,"reason":"queue full"}}`),
			gEnded(gapsA)},
		want: []Finding{
			subDrop(1, 1, 1, SubscriberLoss{"tail", 1}),
			{Kind: FindingDrop, Stream: gapsA, Drop: Drop{Before: 2, Frames: 4, Bytes: gU64(40), Reason: "queue full"}},
			subDrop(2, 2, 1, SubscriberLoss{"tail", 1}),
		},
		totals: LossTotals{Drops: 1, Dropped: 4, SubDrops: 2, SubDropped: 2},
	}, {
		name: "other subscribers start a new finding; the same ones in another order do not",
		ops: []gapsOp{gtHdr(gapsA), gLines(gapsA, 0),
			gHealth(gapsA, 1, subHealth(0, "a:0", "b:0")),
			gHealth(gapsA, 2, subHealth(1, "a:1", "b:0")),
			gHealth(gapsA, 3, subHealth(3, "a:2", "b:1")),
			gHealth(gapsA, 4, subHealth(6, "b:3", "a:3")),
			gEnded(gapsA)},
		want: []Finding{
			subDrop(2, 2, 1, SubscriberLoss{"a", 1}),
			subDrop(3, 4, 5, SubscriberLoss{"a", 2}, SubscriberLoss{"b", 3}),
		},
		totals: LossTotals{SubDrops: 2, SubDropped: 6},
	}, {
		name: "records that name no subscriber merge",
		ops: []gapsOp{gtHdr(gapsA), gLines(gapsA, 0),
			gHealth(gapsA, 1, `{"subscriber_dropped":1}`), gHealth(gapsA, 2, `{"subscriber_dropped":4}`), gEnded(gapsA)},
		want:   []Finding{subDrop(1, 2, 4)},
		totals: LossTotals{SubDrops: 1, SubDropped: 4},
	}, {
		// The file copy of an outage: the transport record follows the
		// range it names, and is listed at the range's start, before the
		// run; a record naming a range that starts inside the run is
		// listed inside it, so it ends the run.
		name: "a transport loss ends the run only when listed inside it",
		ops: []gapsOp{gtHdr(gapsA), gLines(gapsA, 0),
			gHealth(gapsA, 1, subHealth(0, nats+":0")), gLines(gapsA, 2),
			gHealth(gapsA, 3, subHealth(1, nats+":1")), gHealth(gapsA, 4, subHealth(2, nats+":2")),
			gLost(gapsA, 5, 2, 4, 3, unreachable),
			gHealth(gapsA, 6, subHealth(3, nats+":3")),
			gLost(gapsA, 7, 5, 5, 1, unreachable),
			gHealth(gapsA, 8, subHealth(4, nats+":4")), gEnded(gapsA)},
		want: []Finding{
			{Kind: FindingTransport, Stream: gapsA, Position: 5, Transport: lostLoss(2, 4, 3, unreachable)},
			subDrop(3, 6, 3, SubscriberLoss{nats, 3}),
			{Kind: FindingTransport, Stream: gapsA, Position: 7, Transport: lostLoss(5, 5, 1, unreachable)},
			subDrop(8, 8, 1, SubscriberLoss{nats, 1}),
		},
		totals: LossTotals{SubDrops: 2, SubDropped: 4, Transport: 2, Undelivered: 4},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, totals := gapsFindings(t, 0, tt.ops...)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.totals, totals); diff != "" {
				t.Errorf("totals (-want +got):\n%s", diff)
			}
			if totals.Losses() != totals.Gaps+totals.Drops {
				t.Errorf("%d losses: subscriber drops or transport losses counted", totals.Losses())
			}
		})
	}
}

// A long outage takes one finding, whatever the number of its health
// records: it neither grows memory nor uses up the listing bound, so a
// later gap is still listed.
func TestGapsSubscriberRunBound(t *testing.T) {
	g := NewGaps(0)
	gHdr(gapsA, 0)(g)
	gLines(gapsA, 0)(g)
	n := uint64(MaxListedFindings + 10)
	for i := uint64(1); i <= n; i++ {
		gHealth(gapsA, i, subHealth(i, fmt.Sprintf("nats:%d", i)))(g)
	}
	gLines(gapsA, n+2)(g)
	gEnded(gapsA)(g)
	var got []Finding
	g.Each(func(f Finding) error { got = append(got, f); return nil })
	want := []Finding{
		subDrop(1, n, n, SubscriberLoss{"nats", n}),
		{Kind: FindingGap, Stream: gapsA, Gap: segments.Gap{From: frames.Position(n + 1), To: frames.Position(n + 1), Count: 1}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	if len(g.order[0].found) != 1 {
		t.Errorf("%d findings kept", len(g.order[0].found))
	}
}

// A merged subscriber drop says the range of its records, in text and
// in JSON ("from"); one of a single record keeps the shape it had.
func TestGapsSubscriberRunOutput(t *testing.T) {
	g := NewGaps(0)
	for _, op := range []gapsOp{gHdr(gapsA, 0), gLines(gapsA, 0),
		gHealth(gapsA, 1, subHealth(0, "file:0", "nats://h:4222/ds:0")),
		gHealth(gapsA, 2, subHealth(3, "file:0", "nats://h:4222/ds:3")),
		gHealth(gapsA, 3, subHealth(5, "file:0", "nats://h:4222/ds:5")),
		gHealth(gapsA, 5, subHealth(6, "file:1", "nats://h:4222/ds:5")),
		gEnded(gapsA)} {
		op(g)
	}
	var out bytes.Buffer
	if err := g.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	want := `a#7  subscriber  5 frame copies lost by subscribers between positions 2 and 3 (nats://h:4222/ds: 5)
a#7  gap         position 4 missing (1 frame)
a#7  subscriber  1 frame copy lost by subscribers before position 5 (file: 1)
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("text (-want +got):\n%s", diff)
	}
	out.Reset()
	if err := g.WriteJSON(&out); err != nil {
		t.Fatal(err)
	}
	want = `{"stream":"a#7","node":"a","life":7,"subscriber_dropped":{"from":2,"before":3,"frames":5,"subscribers":[{"name":"nats://h:4222/ds","frames":5}]}}
{"stream":"a#7","node":"a","life":7,"gap":{"from":4,"to":4,"count":1}}
{"stream":"a#7","node":"a","life":7,"subscriber_dropped":{"before":5,"frames":1,"subscribers":[{"name":"file","frames":1}]}}
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("json (-want +got):\n%s", diff)
	}
	const sum = "1 loss: 1 gap (1 frame missing); noted: 2 subscriber drops (6 frame copies lost by subscribers)"
	if s := g.Totals().String(); s != sum {
		t.Errorf("totals say %q, want %q", s, sum)
	}
}

// Subscriber drops and transport losses are notes: the totals line gives
// them after the losses, and neither Losses nor ds gaps --check counts
// them; live inputs and trimmed streams are notes said by their lines.
func TestLossTotalsNotes(t *testing.T) {
	tests := []struct {
		totals LossTotals
		want   string
		losses uint64
		noted  uint64
	}{
		{LossTotals{}, "no loss", 0, 0},
		{LossTotals{Live: 1, Trimmed: 2}, "no loss", 0, 0},
		{LossTotals{Gaps: 1, Missing: 4}, "1 loss: 1 gap (4 frames missing)", 1, 0},
		{LossTotals{SubDrops: 29, SubDropped: 304, Transport: 4, Undelivered: 304},
			"no loss; noted: 29 subscriber drops (304 frame copies lost by subscribers), 4 transport losses (304 frames not delivered by an output)", 0, 33},
		{LossTotals{Gaps: 1, Missing: 4, Transport: 1, Undelivered: 4},
			"1 loss: 1 gap (4 frames missing); noted: 1 transport loss (4 frames not delivered by an output)", 1, 1},
		{LossTotals{Drops: 2, Dropped: 9, SubDrops: 1, SubDropped: 1},
			"2 losses: 2 drops (9 frames refused); noted: 1 subscriber drop (1 frame copy lost by subscribers)", 2, 1},
	}
	for _, tt := range tests {
		if got := tt.totals.String(); got != tt.want {
			t.Errorf("%+v: String() = %q, want %q", tt.totals, got, tt.want)
		}
		if got := tt.totals.Losses(); got != tt.losses {
			t.Errorf("%+v: Losses() = %d, want %d", tt.totals, got, tt.losses)
		}
		if got := tt.totals.Noted(); got != tt.noted {
			t.Errorf("%+v: Noted() = %d, want %d", tt.totals, got, tt.noted)
		}
	}
	notes := map[FindingKind]bool{FindingLive: true, FindingTrimmed: true, FindingSubscriberDrop: true, FindingTransport: true}
	for k := FindingDamage; k <= FindingTransport; k++ {
		if k.IsLoss() == notes[k] {
			t.Errorf("%s: IsLoss() = %v", k, k.IsLoss())
		}
	}
}

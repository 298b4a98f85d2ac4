package views

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

const natsOut = "nats://127.0.0.1:4222/ds"

// lostRecord returns a datastream.transport record naming from..to.
func lostRecord(from, to, n uint64, reason string) string {
	return fmt.Sprintf(`{"output":%q,"lost":{"from":%d,"to":%d,"frames":%d,"reason":%q,"since_unix_ms":1764612000000,"until_unix_ms":1764612008000}}`, natsOut, from, to, n, reason)
}

// lostLoss is what decodeTransport makes of lostRecord(from, to, n, reason).
func lostLoss(from, to, n uint64, reason string) *TransportLoss {
	return &TransportLoss{Output: natsOut, From: frames.Position(from), To: frames.Position(to), Frames: n, Reason: reason, SinceUnixMs: 1764612000000, UntilUnixMs: 1764612008000}
}

const unreachable = "server unreachable: nats: connection closed"

func TestDecodeTransport(t *testing.T) {
	huge := strings.Repeat("é", 1000)
	tests := []struct {
		name    string
		payload string
		want    TransportLoss
		ok      bool
	}{
		{"a loss", lostRecord(120, 340, 221, unreachable), *lostLoss(120, 340, 221, unreachable), true},
		{"times unknown", `{"output":"o","lost":{"from":5,"to":5,"frames":1,"reason":"r"}}`, TransportLoss{Output: "o", From: 5, To: 5, Frames: 1, Reason: "r"}, true},
		{"no reason, no output", `{"lost":{"from":1,"to":2,"frames":2}}`, TransportLoss{From: 1, To: 2, Frames: 2}, true},
		{"unknown fields ignored", `{"output":"o","x":[1],"lost":{"from":1,"to":1,"frames":1,"y":{}}}`, TransportLoss{Output: "o", From: 1, To: 1, Frames: 1}, true},
		{"no loss named", `{"output":"o"}`, TransportLoss{}, false},
		{"lost null", `{"output":"o","lost":null}`, TransportLoss{}, false},
		{"from above to", `{"output":"o","lost":{"from":9,"to":3,"frames":7}}`, TransportLoss{}, false},
		{"no frame lost", `{"output":"o","lost":{"from":3,"to":9,"frames":0}}`, TransportLoss{}, false},
		{"not JSON", `{"output":`, TransportLoss{}, false},
		{"wrong types", `{"output":1,"lost":{"from":"a"}}`, TransportLoss{}, false},
		{"negative position", `{"lost":{"from":-1,"to":3,"frames":1}}`, TransportLoss{}, false},
		{"empty", ``, TransportLoss{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := decodeTransport([]byte(tt.payload))
			if ok != tt.ok || got != tt.want {
				t.Errorf("decodeTransport = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}

	// Strings from input are bounded, and stay UTF-8 when cut.
	got, ok := decodeTransport([]byte(fmt.Sprintf(`{"output":%q,"lost":{"from":1,"to":1,"frames":1,"reason":%q}}`, huge, huge)))
	if !ok {
		t.Fatal("a huge reason does not decode")
	}
	for _, s := range []string{got.Output, got.Reason} {
		if len(s) > maxTransportText+len("…") || !strings.HasSuffix(s, "…") || !utf8.ValidString(s) {
			t.Errorf("huge string cut to %d bytes: %q", len(s), s)
		}
	}
}

// transportCatalog is gapsCatalog plus 3 datastream.transport.
func transportCatalog(s frames.StreamID) []frames.ChannelDescriptor {
	return append(gapsCatalog(s), frames.ChannelDescriptor{Stream: s, ID: 3, Name: frames.TransportChannel, Content: frames.JSONRecord(frames.TransportChannel)})
}

func gtHdr(s frames.StreamID) gapsOp {
	return func(g *Gaps) {
		g.Header(segments.SegmentHeader{Stream: frames.StreamDescriptor{Stream: s}, Channels: transportCatalog(s)})
	}
}

func gLost(s frames.StreamID, pos, from, to, n uint64, reason string) gapsOp {
	return gFrame(s, pos, 3, lostRecord(from, to, n, reason))
}

// span returns the positions from..to.
func span(from, to uint64) []uint64 {
	var ps []uint64
	for p := from; p <= to; p++ {
		ps = append(ps, p)
	}
	return ps
}

func TestGapsTransport(t *testing.T) {
	gap := func(from, to uint64, lost *TransportLoss) Finding {
		return Finding{Kind: FindingGap, Stream: gapsA, Gap: segments.Gap{From: frames.Position(from), To: frames.Position(to), Count: to - from + 1}, Transport: lost}
	}
	transport := func(at uint64, lost *TransportLoss) Finding {
		return Finding{Kind: FindingTransport, Stream: gapsA, Position: frames.Position(at), Transport: lost}
	}
	l120 := lostLoss(120, 340, 221, unreachable)
	tests := []struct {
		name   string
		window int
		ops    []gapsOp
		want   []Finding
		totals LossTotals
	}{{
		name: "network copy: the record after the gap explains it",
		ops: []gapsOp{gtHdr(gapsA), gLines(gapsA, span(0, 119)...), gLines(gapsA, 341),
			gLost(gapsA, 342, 120, 340, 221, unreachable), gLines(gapsA, 343), gEnded(gapsA)},
		want:   []Finding{gap(120, 340, l120), transport(342, l120)},
		totals: LossTotals{Gaps: 1, Missing: 221, Transport: 1, Undelivered: 221},
	}, {
		name: "file copy: every position, the record alone",
		ops: []gapsOp{gtHdr(gapsA), gLines(gapsA, span(0, 341)...),
			gLost(gapsA, 342, 120, 340, 221, unreachable), gEnded(gapsA)},
		want:   []Finding{transport(342, l120)},
		totals: LossTotals{Transport: 1, Undelivered: 221},
	}, {
		// A record placed before the range it names (not what a writer
		// does): the gap gets the reason all the same.
		name: "record before the gap",
		ops: []gapsOp{gtHdr(gapsA), gLines(gapsA, 0),
			gLost(gapsA, 1, 3, 4, 2, "r"), gLines(gapsA, 2, 5), gEnded(gapsA)},
		want:   []Finding{gap(3, 4, lostLoss(3, 4, 2, "r")), transport(1, lostLoss(3, 4, 2, "r"))},
		totals: LossTotals{Gaps: 1, Missing: 2, Transport: 1, Undelivered: 2},
	}, {
		name:   "the record read before the frames around the gap",
		ops:    []gapsOp{gtHdr(gapsA), gLost(gapsA, 6, 2, 4, 3, "r"), gLines(gapsA, 5, 1, 0), gEnded(gapsA)},
		want:   []Finding{gap(2, 4, lostLoss(2, 4, 3, "r")), transport(6, lostLoss(2, 4, 3, "r"))},
		totals: LossTotals{Gaps: 1, Missing: 3, Transport: 1, Undelivered: 3},
	}, {
		// A window smaller than one frame: the gap is declared at once,
		// and the record comes late, out of order.
		name:   "late record",
		window: 1,
		ops: []gapsOp{gtHdr(gapsA), gLines(gapsA, 0, 1, 8, 9),
			gLost(gapsA, 5, 2, 4, 3, "r"), gEnded(gapsA)},
		want: []Finding{
			gap(2, 4, lostLoss(2, 4, 3, "r")),
			transport(5, lostLoss(2, 4, 3, "r")),
			gap(6, 7, nil),
		},
		totals: LossTotals{Gaps: 2, Missing: 5, Transport: 1, Undelivered: 3},
	}, {
		name: "one range over several gaps, one gap beside it",
		ops: []gapsOp{gtHdr(gapsA), gLines(gapsA, 0, 1, 4, 6, 7, 11, 13),
			gLost(gapsA, 14, 1, 9, 5, "r"), gEnded(gapsA)},
		want: []Finding{
			transport(14, lostLoss(1, 9, 5, "r")),
			gap(2, 3, lostLoss(1, 9, 5, "r")),
			gap(5, 5, lostLoss(1, 9, 5, "r")),
			gap(8, 10, lostLoss(1, 9, 5, "r")), // overlaps
			gap(12, 12, nil),
		},
		totals: LossTotals{Gaps: 4, Missing: 7, Transport: 1, Undelivered: 5},
	}, {
		name: "one gap over several ranges: the first explains it",
		ops: []gapsOp{gtHdr(gapsA), gLines(gapsA, 0, 9),
			gLost(gapsA, 10, 5, 8, 4, "second"), gLost(gapsA, 11, 1, 4, 4, "first"),
			gLost(gapsA, 12, 20, 30, 11, "beyond"), gEnded(gapsA)},
		want: []Finding{
			gap(1, 8, lostLoss(1, 4, 4, "first")),
			transport(11, lostLoss(1, 4, 4, "first")),
			transport(10, lostLoss(5, 8, 4, "second")),
			transport(12, lostLoss(20, 30, 11, "beyond")),
		},
		totals: LossTotals{Gaps: 1, Missing: 8, Transport: 3, Undelivered: 19},
	}, {
		name: "nested ranges: the outer one starts first",
		ops: []gapsOp{gtHdr(gapsA), gLines(gapsA, 0, 2, 9, 11),
			gLost(gapsA, 12, 1, 10, 10, "outer"), gLost(gapsA, 13, 3, 4, 2, "inner"), gEnded(gapsA)},
		want: []Finding{
			gap(1, 1, lostLoss(1, 10, 10, "outer")),
			transport(12, lostLoss(1, 10, 10, "outer")),
			gap(3, 8, lostLoss(1, 10, 10, "outer")),
			transport(13, lostLoss(3, 4, 2, "inner")),
			gap(10, 10, lostLoss(1, 10, 10, "outer")),
		},
		totals: LossTotals{Gaps: 3, Missing: 8, Transport: 2, Undelivered: 12},
	}, {
		name: "garbage records are no loss",
		ops: []gapsOp{gtHdr(gapsA), gLines(gapsA, 0, 3),
			gFrame(gapsA, 4, 3, "{not json"), gFrame(gapsA, 5, 3, `{"output":"o"}`),
			gFrame(gapsA, 6, 3, `{"output":"o","lost":{"from":9,"to":1,"frames":3}}`), gEnded(gapsA)},
		want:   []Finding{gap(1, 2, nil)},
		totals: LossTotals{Gaps: 1, Missing: 2},
	}, {
		name: "an undeclared channel is not read",
		ops: []gapsOp{gHdr(gapsA, 0), gLines(gapsA, 0),
			gFrame(gapsA, 1, 3, lostRecord(0, 0, 1, "r")), gEnded(gapsA)},
	}, {
		name: "another stream's loss explains nothing here",
		ops: []gapsOp{gtHdr(gapsA), gLines(gapsA, 0, 3), gEnded(gapsA),
			gtHdr(gapsB), gLines(gapsB, 0), gFrame(gapsB, 1, 3, lostRecord(1, 2, 2, "r")), gEnded(gapsB)},
		want:   []Finding{gap(1, 2, nil), {Kind: FindingTransport, Stream: gapsB, Position: 1, Transport: lostLoss(1, 2, 2, "r")}},
		totals: LossTotals{Gaps: 1, Missing: 2, Transport: 1, Undelivered: 2},
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

func TestGapsTransportOutput(t *testing.T) {
	g := NewGaps(0)
	for _, op := range []gapsOp{
		gtHdr(gapsA), gLines(gapsA, 0, 1, 3, 4),
		gLost(gapsA, 5, 2, 2, 1, unreachable),
		gFrame(gapsA, 6, 3, `{"output":"nats://h\u001b[31m/x","lost":{"from":0,"to":1,"frames":2,"reason":"bad\nline"}}`),
		gFrame(gapsA, 7, 3, `{"lost":{"from":7,"to":9,"frames":3}}`),
		gEnded(gapsA),
	} {
		op(g)
	}
	var out bytes.Buffer
	if err := g.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	want := `a#7  transport   positions 0–1 (2 frames) not delivered by "nats://h\x1b[31m/x": "bad\nline"
a#7  gap         position 2 missing (1 frame): not delivered by nats://127.0.0.1:4222/ds: server unreachable: nats: connection closed
a#7  transport   position 2 (1 frame) not delivered by nats://127.0.0.1:4222/ds: server unreachable: nats: connection closed
a#7  transport   positions 7–9 (3 frames) not delivered by an output
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("text (-want +got):\n%s", diff)
	}
	out.Reset()
	if err := g.WriteJSON(&out); err != nil {
		t.Fatal(err)
	}
	want = `{"stream":"a#7","node":"a","life":7,"transport":{"output":"nats://h\u001b[31m/x","from":0,"to":1,"frames":2,"reason":"bad\nline","since_unix_ms":0,"until_unix_ms":0}}
{"stream":"a#7","node":"a","life":7,"gap":{"from":2,"to":2,"count":1,"reason":"not delivered by nats://127.0.0.1:4222/ds: server unreachable: nats: connection closed"}}
{"stream":"a#7","node":"a","life":7,"transport":{"output":"nats://127.0.0.1:4222/ds","from":2,"to":2,"frames":1,"reason":"server unreachable: nats: connection closed","since_unix_ms":1764612000000,"until_unix_ms":1764612008000}}
{"stream":"a#7","node":"a","life":7,"transport":{"output":"","from":7,"to":9,"frames":3,"reason":"","since_unix_ms":0,"until_unix_ms":0}}
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("json (-want +got):\n%s", diff)
	}
	const sum = "1 loss: 1 gap (1 frame missing); noted: 3 transport losses (6 frames not delivered by an output)"
	if tot := g.Totals(); tot.String() != sum {
		t.Errorf("totals say %q, want %q", tot.String(), sum)
	}
}

// TestGapsTransportBound: a stream of more records than a Gaps lists
// lists MaxListedFindings of them, counts the rest, and keeps each one's
// strings cut.
func TestGapsTransportBound(t *testing.T) {
	g := NewGaps(0)
	gtHdr(gapsA)(g)
	n := MaxListedFindings + 3
	reason := strings.Repeat("r", 10000)
	for i := range n {
		// Position 2i lost, 2i+1 the record that says so.
		g.Frame(gapsA, on(3, uint64(2*i+1), lostRecord(uint64(2*i), uint64(2*i), 1, reason)))
	}
	g.Ended(gapsA)
	var listed, gaps, explained, more, long uint64
	g.Each(func(f Finding) error {
		switch f.Kind {
		case FindingTransport:
			listed++
			if len(f.Transport.Reason) > maxTransportText+len("…") {
				long++
			}
		case FindingGap:
			gaps++
			if f.Transport != nil {
				explained++
			}
		case FindingMore:
			more = f.Count
		}
		return nil
	})
	// Each record but the first leaves a gap (position 2i, from i = 1),
	// listed in position order, each before the record that explains it:
	// the last gap listed is explained by a record that is not.
	if listed+gaps != MaxListedFindings || more != uint64(2*n-1-MaxListedFindings) || long != 0 {
		t.Errorf("%d transport losses and %d gaps listed, %d more, %d with a long reason", listed, gaps, more, long)
	}
	if explained != gaps-1 {
		t.Errorf("%d of %d gaps explained, want all but the last", explained, gaps)
	}
	if tot := g.Totals(); tot.Transport != uint64(n) || tot.Undelivered != uint64(n) || tot.Gaps != uint64(n-1) {
		t.Errorf("totals %+v, want %d transport losses", tot, n)
	}
}

// printTransport renders fs (frames of S on jobChannels and 6
// datastream.transport) and returns the output and the printer's loss
// counts.
func printTransport(t *testing.T, opts LogOptions, window int, fs ...frames.Frame) (string, Losses) {
	t.Helper()
	var out bytes.Buffer
	p := NewPrinter(&out, opts)
	sink := NewLogSink(p, window)
	catalog := append(append([]frames.ChannelDescriptor(nil), jobChannels...),
		frames.ChannelDescriptor{Stream: S, ID: 6, Name: frames.TransportChannel, Content: frames.JSONRecord(frames.TransportChannel)})
	sink.Segment(frames.StreamDescriptor{Stream: S}, catalog)
	for _, f := range fs {
		sink.Frame(S, f)
	}
	sink.Ended(S)
	sink.A.Flush()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	return out.String(), p.Losses()
}

// A datastream.transport record shows, in place at its position, the
// positions an output did not deliver, whatever the channel filter; the
// record itself stays hidden unless --all.
func TestLogTransportInPlace(t *testing.T) {
	rec := lostRecord(1, 3, 3, unreachable)
	fs := []frames.Frame{
		on(1, 0, "one"), // a line held open across the loss
		on(1, 4, " and more\n"),
		on(6, 5, rec),
		on(2, 6, "err\n"),
	}
	got, losses := printTransport(t, LogOptions{}, 0, fs...)
	want := "" +
		"     0  proc.job.stdout   one…\n" +
		"     ~  gap               positions 1–3 missing (3 frames)\n" +
		"     4  proc.job.stdout   … and more\n" +
		"     ~  lost              positions 1–3 (3 frames) not delivered by nats://127.0.0.1:4222/ds: server unreachable: nats: connection closed\n" +
		"     6  proc.job.stderr   err\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if want := (Losses{Gaps: 1, MissingFrames: 3, Transport: 1, UndeliveredFrames: 3}); losses != want {
		t.Errorf("losses = %+v, want %+v", losses, want)
	}

	// -c naming another channel: the loss concerns the whole stream.
	got, _ = printTransport(t, LogOptions{Channels: []frames.ChannelFilter{frames.NameChannel("proc.job.stderr")}}, 0, fs...)
	want = "" +
		"     ~  gap               positions 1–3 missing (3 frames)\n" +
		"     ~  lost              positions 1–3 (3 frames) not delivered by nats://127.0.0.1:4222/ds: server unreachable: nats: connection closed\n" +
		"     6  proc.job.stderr   err\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("-c proc.job.stderr (-want +got):\n%s", diff)
	}

	// --all: the lost line comes before the record that carries it.
	got, _ = printTransport(t, LogOptions{All: true}, 0, fs[2:]...)
	want = "" +
		"     ~  lost                  positions 1–3 (3 frames) not delivered by nats://127.0.0.1:4222/ds: server unreachable: nats: connection closed\n" +
		"     5  datastream.transport  " + rec + "\n" +
		"     6  proc.job.stderr       err\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("--all (-want +got):\n%s", diff)
	}

	got, _ = printTransport(t, LogOptions{Format: FormatJSON, Channels: []frames.ChannelFilter{frames.NameChannel("none")}}, 0, fs...)
	want = "" +
		`{"stream":"node-alpha#1","node":"node-alpha","life":1,"gap":{"from":1,"to":3,"count":3},"text":"positions 1–3 missing (3 frames)"}` + "\n" +
		`{"stream":"node-alpha#1","node":"node-alpha","life":1,"transport_loss":{"output":"nats://127.0.0.1:4222/ds","from":1,"to":3,"frames":3,"reason":"server unreachable: nats: connection closed","since_unix_ms":1764612000000,"until_unix_ms":1764612008000},"text":"positions 1–3 (3 frames) not delivered by nats://127.0.0.1:4222/ds: server unreachable: nats: connection closed"}` + "\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("--json (-want +got):\n%s", diff)
	}
	got, _ = printTransport(t, LogOptions{Format: FormatJSON, JSONFrames: true, Channels: []frames.ChannelFilter{frames.NameChannel("none")}}, 0, fs[2:]...)
	want = `{"stream":"node-alpha#1","node":"node-alpha","life":1,"transport_loss":{"output":"nats://127.0.0.1:4222/ds","from":1,"to":3,"frames":3,"reason":"server unreachable: nats: connection closed","since_unix_ms":1764612000000,"until_unix_ms":1764612008000}}` + "\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("--json=frames (-want +got):\n%s", diff)
	}

	got, losses = printTransport(t, LogOptions{Format: FormatCat}, 0, fs...)
	if got != "one and more\nerr\n" {
		t.Fatalf("--cat = %q, want the payload bytes only", got)
	}
	if losses.Transport != 1 || losses.UndeliveredFrames != 3 {
		t.Errorf("--cat losses = %+v: the transport loss must still be counted", losses)
	}
}

// Records that name no loss are records, shown only with --all; names
// from input are escaped; a single position reads as one.
func TestLogTransportOddRecords(t *testing.T) {
	tests := []struct {
		name   string
		opts   LogOptions
		in     []frames.Frame
		want   string
		losses Losses
	}{{
		name: "garbage is a record, no loss",
		opts: LogOptions{All: true},
		in:   []frames.Frame{on(6, 0, "{not json"), on(6, 1, `{"output":"o"}`), on(6, 2, `{"output":"o","lost":{"from":5,"to":1,"frames":1}}`)},
		want: "" +
			"     0  datastream.transport  {not json\n" +
			"     1  datastream.transport  {\"output\":\"o\"}\n" +
			"     2  datastream.transport  {\"output\":\"o\",\"lost\":{\"from\":5,\"to\":1,\"frames\":1}}\n",
	}, {
		name: "garbage hidden without --all",
		in:   []frames.Frame{on(1, 0, "x\n"), on(6, 1, "\xff\x00")},
		want: "     0  proc.job.stdout   x\n",
	}, {
		name: "escaped output and reason, one position",
		in:   []frames.Frame{on(6, 0, `{"output":"o\u001b]0;t\u0007","lost":{"from":0,"to":0,"frames":1,"reason":"a\tb"}}`)},
		want: "     ~  lost              position 0 (1 frame) not delivered by o\\x1b]0;t\\x07: a\\x09b\n",
		// The record is at position 0; the range is its own position:
		// no gap, a loss all the same.
		losses: Losses{Transport: 1, UndeliveredFrames: 1},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, losses := printTransport(t, tt.opts, 0, tt.in...)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
			if losses != tt.losses {
				t.Errorf("losses = %+v, want %+v", losses, tt.losses)
			}
		})
	}
}

// A record delivered out of order, after the gap it explains was shown
// (input disordered beyond the reorder window), is shown where it
// arrives, as a late health record's drop is.
func TestLogTransportLate(t *testing.T) {
	var out bytes.Buffer
	p := NewPrinter(&out, LogOptions{All: true})
	p.Stream(frames.StreamDescriptor{Stream: S})
	p.Channel(frames.ChannelDescriptor{Stream: S, ID: 1, Name: "proc.job.stdout", Content: frames.TextStream()})
	p.Channel(frames.ChannelDescriptor{Stream: S, ID: 6, Name: frames.TransportChannel, Content: frames.JSONRecord("")})
	rec := lostRecord(1, 1, 1, "r")
	for _, it := range []segments.Item{
		{Kind: segments.ItemFrame, Stream: S, Frame: on(1, 0, "a\n")},
		{Kind: segments.ItemGap, Stream: S, Gap: segments.Gap{From: 1, To: 2, Count: 2}},
		{Kind: segments.ItemFrame, Stream: S, Frame: on(1, 3, "b\n")},
		{Kind: segments.ItemLate, Stream: S, Frame: on(6, 2, rec)},
		{Kind: segments.ItemConflict, Stream: S, Frame: on(6, 2, lostRecord(1, 1, 1, "other"))},
	} {
		p.Item(it)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"     0  proc.job.stdout       a\n" +
		"     ~  gap                   positions 1–2 missing (2 frames)\n" +
		"     3  proc.job.stdout       b\n" +
		"     ~  lost                  position 1 (1 frame) not delivered by nats://127.0.0.1:4222/ds: r\n" +
		"     2  datastream.transport  [late] " + rec + "\n" +
		"     2  datastream.transport  [conflict: another payload was stored first] " + lostRecord(1, 1, 1, "other") + "\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if l := p.Losses(); l.Transport != 1 {
		t.Errorf("losses %+v: a conflicting copy is no second loss", l)
	}
}

// The fixtures of runs whose NATS output lost positions (4–7, and 4–9 in
// a longer outage): the network copy and the capture file, read by ds
// gaps.
func TestTransportFixtures(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	gaps := func(data []byte) string {
		g := NewGaps(0)
		g.Input("in.dss", false)
		if err := segments.Scan(context.Background(), bytes.NewReader(data), segments.ScanOptions{}, g); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := g.WriteText(&out); err != nil {
			t.Fatal(err)
		}
		return out.String() + g.Totals().String() + "\n"
	}
	const why = "not delivered by nats://127.0.0.1:4222/ds: server unreachable: nats: connection closed"
	want := "" +
		"edge-3#1732953600123456789  gap         positions 4–7 missing (4 frames): " + why + "\n" +
		"edge-3#1732953600123456789  transport   positions 4–7 (4 frames) " + why + "\n" +
		"1 loss: 1 gap (4 frames missing); noted: 1 transport loss (4 frames not delivered by an output)\n"
	if diff := cmp.Diff(want, gaps(read("transport.dss"))); diff != "" {
		t.Errorf("network copy (-want +got):\n%s", diff)
	}
	want = "" +
		"edge-3#1732953600123456789  transport   positions 4–7 (4 frames) " + why + "\n" +
		"no loss; noted: 1 transport loss (4 frames not delivered by an output)\n"
	if diff := cmp.Diff(want, gaps(read("transport-file.dss"))); diff != "" {
		t.Errorf("file copy (-want +got):\n%s", diff)
	}

	// A longer outage: the file copy's health records each count copies
	// the NATS subscriber lost, one finding in all, and nothing is
	// missing from it; the network copy lacks 4–9, with the reason.
	const out = "nats://127.0.0.1:4222/ds"
	want = "" +
		"edge-4#1732953600123456789  gap         positions 4–9 missing (6 frames): " + why + "\n" +
		"edge-4#1732953600123456789  transport   positions 4–9 (6 frames) " + why + "\n" +
		"edge-4#1732953600123456789  subscriber  6 frame copies lost by subscribers before position 11 (" + out + ": 6)\n" +
		"1 loss: 1 gap (6 frames missing); noted: 1 subscriber drop (6 frame copies lost by subscribers), 1 transport loss (6 frames not delivered by an output)\n"
	if diff := cmp.Diff(want, gaps(read("outage.dss"))); diff != "" {
		t.Errorf("network copy of the outage (-want +got):\n%s", diff)
	}
	want = "" +
		"edge-4#1732953600123456789  transport   positions 4–9 (6 frames) " + why + "\n" +
		"edge-4#1732953600123456789  subscriber  6 frame copies lost by subscribers between positions 5 and 11 (" + out + ": 6)\n" +
		"no loss; noted: 1 subscriber drop (6 frame copies lost by subscribers), 1 transport loss (6 frames not delivered by an output)\n"
	if diff := cmp.Diff(want, gaps(read("outage-file.dss"))); diff != "" {
		t.Errorf("file copy of the outage (-want +got):\n%s", diff)
	}
}

// FuzzDecodeTransport: any payload decodes to a valid loss or none, its
// strings bounded, and ds log's JSON of it is what encoding/json writes.
func FuzzDecodeTransport(f *testing.F) {
	f.Add([]byte(lostRecord(120, 340, 221, unreachable)))
	f.Add([]byte(`{"output":"a<b>&\u2028","lost":{"from":0,"to":0,"frames":1,"reason":"\xff"}}`))
	f.Add([]byte(`{"lost":{"from":18446744073709551615,"to":18446744073709551615,"frames":18446744073709551615,"since_unix_ms":-1}}`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		l, ok := decodeTransport(payload)
		if !ok {
			return
		}
		if l.From > l.To || l.Frames == 0 || len(l.Output) > maxTransportText+len("…") || len(l.Reason) > maxTransportText+len("…") {
			t.Fatalf("decoded %+v", l)
		}
		want, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendTransportJSON(nil, &l); !bytes.Equal(got, want) {
			t.Fatalf("appendTransportJSON = %s, json.Marshal = %s", got, want)
		}
		msg := appendTransportMsg(nil, &l)
		if !utf8.Valid(msg) || bytes.ContainsAny(msg, "\x1b\n\r\x00") {
			t.Fatalf("message %q reaches the terminal raw", msg)
		}
	})
}

// ds info counts transport losses per stream, record by record and from
// segment summaries alike: a summary that does not keep the transport
// records of its segment is not used.
func TestInfoTransport(t *testing.T) {
	s := frames.StreamID{Node: "info", Life: 3}
	catalog := []frames.ChannelDescriptor{
		{Stream: s, ID: 1, Name: "proc.job.stdout", Content: frames.TextStream()},
		{Stream: s, ID: 2, Name: frames.TransportChannel, Content: frames.JSONRecord(frames.TransportChannel)},
	}
	capture := func(keep func(frames.ChannelID, []byte) segments.Keep) []byte {
		var buf bytes.Buffer
		w, err := segments.NewWriter(&buf, frames.StreamDescriptor{Stream: s}, catalog, segments.WriterOptions{SegmentSize: 4 << 10, Keep: keep})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2000 {
			f := frames.Frame{Channel: 1, Position: frames.Position(i), Payload: fmt.Appendf(nil, "line %d\n", i)}
			if i%500 == 499 {
				f.Channel, f.Payload = 2, []byte(lostRecord(uint64(i-100), uint64(i-1), 100, unreachable))
			}
			if i == 1000 {
				f.Channel, f.Payload = 2, []byte("{garbage")
			}
			if err := w.WriteFrame(f); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	for name, keep := range map[string]func(frames.ChannelID, []byte) segments.Keep{
		"kept":     func(ch frames.ChannelID, _ []byte) segments.Keep { return segments.Keep(ch-1) * segments.KeepFrame },
		"not kept": func(frames.ChannelID, []byte) segments.Keep { return segments.KeepNone },
	} {
		scan, fromEnd, n := infoBoth(t, capture(keep))
		if diff := cmp.Diff(scan, fromEnd); diff != "" {
			t.Errorf("%s: (-scanned +from the end)\n%s", name, diff)
		}
		if got := scan[0]; got.TransportLosses != 4 || got.UndeliveredFrames != 400 {
			t.Errorf("%s: %d transport losses, %d frames; want 4, 400", name, got.TransportLosses, got.UndeliveredFrames)
		}
		if name == "kept" && n == 0 {
			t.Errorf("%s: no summary used", name)
		}
	}

	// A late record counts too; the text says it.
	in := NewInfo(0)
	in.Segment(frames.StreamDescriptor{Stream: s}, catalog)
	in.item(segments.Item{Kind: segments.ItemFrame, Stream: s, Frame: on(1, 0, "a\n")})
	in.item(segments.Item{Kind: segments.ItemLate, Stream: s, Frame: on(2, 0, lostRecord(5, 5, 1, "r"))})
	files, streams := in.Summary()
	if streams[0].TransportLosses != 1 || streams[0].UndeliveredFrames != 1 {
		t.Errorf("late record: %+v", streams[0])
	}
	var text bytes.Buffer
	if err := WriteInfoText(&text, files, streams); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "\n  transport      1 frame not delivered by an output in 1 range (gaps show what this input lacks; ds gaps notes them)\n") {
		t.Errorf("info text:\n%s", text.String())
	}
}

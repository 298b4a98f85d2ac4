package views

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// entryView is what TestEntriesAreTheJSONObjects compares of an Entry
// and of a --json object: kind, position, text, time.
type entryView struct {
	Kind string
	Pos  uint64
	Text string
	Time string
}

// TestEntriesAreTheJSONObjects checks that LogOptions.Entries hands over
// exactly the objects ds log --json prints, in its order, with the same
// positions, text and time: lines joined across frames, records, bytes,
// gaps, drops and damage.
func TestEntriesAreTheJSONObjects(t *testing.T) {
	clock := func(pos uint64, ns int64) frames.Frame {
		return on(3, pos, `{"unix_ns":`+itoa(ns)+`,"mono_ns":1}`)
	}
	fs := []frames.Frame{
		clock(0, 1_700_000_000_000_000_000),
		on(2, 1, "hel"), on(2, 2, "lo\nsecond\n"),
		on(1, 3, res0), on(1, 4, "not json"),
		clock(5, 1_700_000_001_500_000_000),
		on(2, 7, "after the gap\nunfinished"),
	}
	feed := func(out *bytes.Buffer, opts LogOptions) {
		p := NewPrinter(out, opts)
		p.Stream(frames.StreamDescriptor{Stream: S})
		p.Channel(frames.ChannelDescriptor{Stream: S, ID: 1, Name: "host.resource", Content: frames.JSONRecord("host.resource")})
		p.Channel(frames.ChannelDescriptor{Stream: S, ID: 2, Name: "proc.trainer.stdout", Content: frames.TextStream()})
		p.Channel(frames.ChannelDescriptor{Stream: S, ID: 3, Name: "datastream.clock", Content: frames.JSONRecord("datastream.clock")})
		a := segments.NewAssembler(0, p.Item)
		for _, f := range fs {
			a.Add(S, f)
		}
		a.Flush()
		p.Damage("in.dss", 100, 140, false, errors.New("segments: bad checksum"))
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// The JSON objects.
	var jsonOut bytes.Buffer
	feed(&jsonOut, LogOptions{Format: FormatJSON, All: true})
	var want []entryView
	for _, line := range strings.Split(strings.TrimSpace(jsonOut.String()), "\n") {
		var o map[string]any
		if err := json.Unmarshal([]byte(line), &o); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		v := entryView{Text: o["text"].(string)}
		if tm, ok := o["time"].(string); ok {
			v.Time = tm
		}
		if p, ok := o["position"].(float64); ok {
			v.Pos = uint64(p)
		}
		switch {
		case o["gap"] != nil:
			v.Kind, v.Pos = "gap", uint64(o["gap"].(map[string]any)["from"].(float64))
		case o["damage"] != nil:
			v.Kind = "damage"
		case o["record"] != nil:
			v.Kind = "record"
		case o["bytes_b64"] != nil:
			v.Kind = "bytes"
		default:
			v.Kind = "line"
		}
		want = append(want, v)
	}

	var got []entryView
	var none bytes.Buffer
	feed(&none, LogOptions{All: true, Entries: func(e *Entry) {
		v := entryView{Pos: uint64(e.Position)}
		if e.TimeNS != 0 && e.Kind != EntryDamage {
			v.Time = time.Unix(0, e.TimeNS).UTC().Format(time.RFC3339Nano)
		}
		switch e.Kind {
		case EntryLine:
			v.Kind, v.Text = "line", string(e.Payload)
			if !e.Partial {
				v.Text += "\n"
			}
		case EntryRecord:
			var c bytes.Buffer
			if err := json.Compact(&c, e.Payload); err != nil {
				t.Fatal(err)
			}
			v.Kind, v.Text = "record", c.String()
		case EntryBytes:
			v.Kind, v.Text = "bytes", string(e.Payload) // printable here
		case EntryGap:
			// A note has a time (to place it), which --json does not print.
			v.Kind, v.Text, v.Time = "gap", string(e.Message), ""
			if e.TimeNS != 1_700_000_001_500_000_000 {
				t.Errorf("gap time %d, want the clock reading before it", e.TimeNS)
			}
			if e.Range.From != 6 || e.Range.Count != 1 {
				t.Errorf("gap range %+v, want position 6", e.Range)
			}
		case EntryDamage:
			v.Kind, v.Text = "damage", string(e.Message)
			if e.File != "in.dss" || e.Offset != 100 || e.End != 140 || e.Torn || e.Err != "segments: bad checksum" {
				t.Errorf("damage entry %+v", e)
			}
		default:
			t.Errorf("unexpected entry kind %d", e.Kind)
		}
		got = append(got, v)
	}})
	if none.Len() > 0 {
		t.Errorf("a printer with Entries wrote %q", none.String())
	}
	if len(want) < 9 {
		t.Fatalf("only %d JSON objects: the fixture does not cover what it should:\n%s", len(want), jsonOut.String())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("entries differ from the --json objects (-json +entries):\n%s", diff)
	}
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestEntriesFramesAndSteadyTime checks LogOptions.JSONFrames with
// Entries (one EntryBytes per frame of a text channel, unjoined, as
// --json=frames prints them) and Entry.SteadyNS: the wall clock less its
// steps, so that a clock set back 5 s does not make time run backwards.
func TestEntriesFramesAndSteadyTime(t *testing.T) {
	const t0 = int64(1_700_000_000_000_000_000)
	clock := func(pos uint64, unix, mono int64) frames.Frame {
		return on(3, pos, `{"unix_ns":`+itoa(unix)+`,"mono_ns":`+itoa(mono)+`}`)
	}
	fs := []frames.Frame{
		clock(0, t0, 1e9),
		on(2, 1, "hel"), on(2, 2, "lo\n"),
		clock(3, t0+1e9, 2e9),
		on(2, 4, "a"),
		clock(5, t0-4e9, 3e9), // the wall clock set back 5 s while 1 s passed
		on(2, 6, "b\n"),
	}
	type view struct {
		Kind             EntryKind
		Pos              frames.Position
		Text             string
		TimeNS, SteadyNS int64
	}
	var got []view
	p := NewPrinter(&bytes.Buffer{}, LogOptions{JSONFrames: true, Entries: func(e *Entry) {
		got = append(got, view{e.Kind, e.Position, string(e.Payload), e.TimeNS, e.SteadyNS})
	}})
	p.Stream(frames.StreamDescriptor{Stream: S})
	p.Channel(frames.ChannelDescriptor{Stream: S, ID: 2, Name: "proc.x.stdout", Content: frames.TextStream()})
	p.Channel(frames.ChannelDescriptor{Stream: S, ID: 3, Name: "datastream.clock", Content: frames.JSONRecord("datastream.clock")})
	a := segments.NewAssembler(0, p.Item)
	for _, f := range fs {
		a.Add(S, f)
	}
	a.Flush()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	want := []view{
		{EntryBytes, 1, "hel", t0, t0},
		{EntryBytes, 2, "lo\n", t0, t0},
		{EntryBytes, 4, "a", t0 + 1e9, t0 + 1e9},
		{EntryBytes, 6, "b\n", t0 - 4e9, t0 + 2e9},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("entries (-want +got):\n%s", diff)
	}
}

// TestEntriesReused checks that LogOptions.Entries costs no allocation a
// line: the printer hands over one Entry of its own, reused (ds report
// reads tens of millions of lines through it).
func TestEntriesReused(t *testing.T) {
	var seen *Entry
	lines := 0
	p := NewPrinter(io.Discard, LogOptions{All: true, Entries: func(e *Entry) {
		if seen != nil && e != seen {
			t.Fatal("a new Entry for a line")
		}
		seen = e
		lines++
	}})
	p.Stream(frames.StreamDescriptor{Stream: S})
	p.Channel(frames.ChannelDescriptor{Stream: S, ID: 2, Name: "proc.trainer.stdout", Content: frames.TextStream()})
	a := segments.NewAssembler(0, p.Item)
	fs := make([]frames.Frame, 1001) // AllocsPerRun runs it once more
	for i := range fs {
		fs[i] = on(2, uint64(i), "a line of output\n")
	}
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		a.Add(S, fs[i])
		i++
	})
	a.Flush()
	if lines < 1000 {
		t.Fatalf("%d lines handed over, want 1000 or more", lines)
	}
	if allocs > 0.01 {
		t.Errorf("%.2f allocations a line, want none", allocs)
	}
}

package views

import (
	"bytes"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// jobChannels are the channels of the captures below: two text channels,
// the writer's own clock and health records, and a record channel.
var jobChannels = []frames.ChannelDescriptor{
	{Stream: S, ID: 1, Name: "proc.job.stdout", Content: frames.TextStream()},
	{Stream: S, ID: 2, Name: "proc.job.stderr", Content: frames.TextStream()},
	{Stream: S, ID: 3, Name: "datastream.clock", Content: frames.JSONRecord("datastream.clock")},
	{Stream: S, ID: 4, Name: "datastream.health", Content: frames.JSONRecord("datastream.health")},
	{Stream: S, ID: 5, Name: "host.resource", Content: frames.JSONRecord("host.resource")},
}

// printJob renders fs (frames of S on jobChannels, in order) and returns
// the output and the printer's loss counts.
func printJob(t *testing.T, opts LogOptions, fs ...frames.Frame) (string, Losses) {
	t.Helper()
	var out bytes.Buffer
	p := NewPrinter(&out, opts)
	sink := NewLogSink(p, 0)
	sink.Segment(frames.StreamDescriptor{Stream: S}, jobChannels)
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

const (
	health0        = `{"assigned":2,"drained":2,"mux_dropped":0,"subscriber_dropped":0,"subscribers":[]}`
	healthWithLoss = `{"assigned":3,"drained":3,"mux_dropped":4,"subscriber_dropped":0,"subscribers":[],"loss":{"frames":4,"bytes":512,"reason":"queue full"}}`
	healthOld5     = `{"assigned":7,"drained":7,"mux_dropped":5,"subscriber_dropped":2,"subscribers":[{"name":"file","dropped":2}]}`
)

// A health record carrying "loss" shows the refused submissions in place,
// before the record's position, whatever the channel filter; the health
// channel itself stays hidden.
func TestLogDropsInPlace(t *testing.T) {
	fs := []frames.Frame{
		on(1, 0, "one\n"),
		on(4, 1, healthWithLoss),
		on(1, 2, "two\n"),
		on(4, 3, `{"mux_dropped":5,"loss":{"frames":1,"bytes":10,"reason":"ended"}}`),
	}
	got, losses := printJob(t, LogOptions{}, fs...)
	want := "" +
		"     0  proc.job.stdout   one\n" +
		"     ~  dropped           4 frames before position 1 (queue full)\n" +
		"     2  proc.job.stdout   two\n" +
		"     ~  dropped           1 frame before position 3 (ended)\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if want := (Losses{Drops: 2, DroppedFrames: 5}); losses != want {
		t.Errorf("losses = %+v, want %+v", losses, want)
	}

	// -c naming another channel: the loss concerns the whole stream.
	got, _ = printJob(t, LogOptions{Channels: []frames.ChannelFilter{frames.NameChannel("proc.job.stderr")}}, fs...)
	want = "" +
		"     ~  dropped           4 frames before position 1 (queue full)\n" +
		"     ~  dropped           1 frame before position 3 (ended)\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("-c proc.job.stderr (-want +got):\n%s", diff)
	}

	// --all: the drop line comes before the record that carries it.
	got, _ = printJob(t, LogOptions{All: true}, fs[:2]...)
	want = "" +
		"     0  proc.job.stdout    one\n" +
		"     ~  dropped            4 frames before position 1 (queue full)\n" +
		"     1  datastream.health  " + healthWithLoss + "\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("--all (-want +got):\n%s", diff)
	}

	got, _ = printJob(t, LogOptions{Format: FormatJSON, Channels: []frames.ChannelFilter{frames.NameChannel("proc.job.stdout")}}, fs...)
	want = "" +
		`{"stream":"node-alpha#1","node":"node-alpha","life":1,"position":0,"last_position":0,"channel":"proc.job.stdout","channel_id":1,"content":"TextStream","text":"one\n"}` + "\n" +
		`{"stream":"node-alpha#1","node":"node-alpha","life":1,"dropped":{"before":1,"frames":4,"bytes":512,"reason":"queue full"},"text":"4 frames before position 1 (queue full)"}` + "\n" +
		`{"stream":"node-alpha#1","node":"node-alpha","life":1,"position":2,"last_position":2,"channel":"proc.job.stdout","channel_id":1,"content":"TextStream","text":"two\n"}` + "\n" +
		`{"stream":"node-alpha#1","node":"node-alpha","life":1,"dropped":{"before":3,"frames":1,"bytes":10,"reason":"ended"},"text":"1 frame before position 3 (ended)"}` + "\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("--json (-want +got):\n%s", diff)
	}

	got, losses = printJob(t, LogOptions{Format: FormatCat}, fs...)
	if got != "one\ntwo\n" {
		t.Fatalf("--cat = %q, want the payload bytes only", got)
	}
	if losses.Drops != 2 {
		t.Errorf("--cat losses = %+v: the drops must still be counted", losses)
	}
}

// Older writers put no "loss" in their health records: an increase of the
// cumulative mux_dropped counter is shown at the record that shows it, with
// the byte count unknown.
func TestLogDropsFromCounters(t *testing.T) {
	fs := []frames.Frame{
		on(1, 0, "one\n"),
		on(4, 1, health0),
		on(1, 2, "two\n"),
		on(1, 4, "three\n"),
		on(4, 5, healthOld5),
		on(4, 6, healthOld5), // no change: nothing to show
	}
	got, losses := printJob(t, LogOptions{}, fs...)
	want := "" +
		"     0  proc.job.stdout   one\n" +
		"     2  proc.job.stdout   two\n" +
		"     ~  gap               position 3 missing (1 frame)\n" +
		"     4  proc.job.stdout   three\n" +
		"     ~  dropped           5 frames before position 5 (queue full)\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if want := (Losses{Gaps: 1, MissingFrames: 1, Drops: 1, DroppedFrames: 5}); losses != want {
		t.Errorf("losses = %+v, want %+v", losses, want)
	}
	got, _ = printJob(t, LogOptions{Format: FormatJSON, Channels: []frames.ChannelFilter{frames.NameChannel("none")}}, fs...)
	want = "" +
		`{"stream":"node-alpha#1","node":"node-alpha","life":1,"gap":{"from":3,"to":3,"count":1},"text":"position 3 missing (1 frame)"}` + "\n" +
		`{"stream":"node-alpha#1","node":"node-alpha","life":1,"dropped":{"before":5,"frames":5,"bytes":null,"reason":"queue full"},"text":"5 frames before position 5 (queue full)"}` + "\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("--json (-want +got):\n%s", diff)
	}

	// A capture that does not start at position 0 has no baseline for its
	// first health record: what it counts may predate the capture.
	var out bytes.Buffer
	p := NewPrinter(&out, LogOptions{Format: FormatJSON, Channels: []frames.ChannelFilter{frames.NameChannel("none")}})
	sink := NewLogSink(p, 0)
	sink.Segment(frames.StreamDescriptor{Stream: S}, jobChannels)
	sink.Frame(S, on(4, 5, healthOld5))
	sink.Frame(S, on(4, 6, `{"mux_dropped":6}`))
	sink.Ended(S)
	sink.A.Flush() // the end of input: the stream, waiting for lower positions, starts
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	want = `{"stream":"node-alpha#1","node":"node-alpha","life":1,"dropped":{"before":6,"frames":1,"bytes":null,"reason":"queue full"},"text":"1 frame before position 6 (queue full)"}` + "\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Fatalf("capture from position 5 (-want +got):\n%s", diff)
	}
}

// Joining a text line split across frames must not reorder lines across
// the channels of a stream: a held partial line is printed, unfinished,
// before a line of another channel that comes after it. A line printed
// before its newline ends with "…", the row that continues it starts with
// "…".
func TestLogPartialLineOrder(t *testing.T) {
	tests := []struct {
		name string
		in   []frames.Frame
		want string
	}{
		{"progress then failure", []frames.Frame{
			on(1, 0, "\rprogress 3/3"),
			on(2, 1, "FAIL: x\n"),
			on(1, 2, "\n"),
		}, "" +
			"     0  proc.job.stdout   progress 3/3…\n" +
			"     1  proc.job.stderr   FAIL: x\n"},
		{"the rest of a cut line is its own line", []frames.Frame{
			on(1, 0, "compil"),
			on(2, 1, "warning\n"),
			on(1, 2, "ing done\nnext\n"),
		}, "" +
			"     0  proc.job.stdout   compil…\n" +
			"     1  proc.job.stderr   warning\n" +
			"     2  proc.job.stdout   …ing done\n" +
			"     2  proc.job.stdout   next\n"},
		{"a record cuts a held line", []frames.Frame{
			on(1, 0, "50%"),
			on(5, 1, `{"a":1}`),
			on(1, 2, "\r\n"),
		}, "" +
			"     0  proc.job.stdout   50%…\n" +
			"     1  host.resource     {\"a\":1}\n"},
		{"lines that start later wait", []frames.Frame{
			on(1, 0, "a"),
			on(2, 1, "b"),
			on(1, 2, "c\n"),
			on(2, 3, "d\n"),
		}, "" +
			"     0  proc.job.stdout   ac\n" +
			"     1  proc.job.stderr   bd\n"},
		{"hidden channels cut nothing", []frames.Frame{
			on(1, 0, "tick"),
			on(3, 1, `{"unix_ns":1,"mono_ns":0}`),
			on(4, 2, health0),
			on(1, 3, " tock\n"),
		}, "     0  proc.job.stdout   tick tock\n"},
		{"a gap cuts a held line", []frames.Frame{
			on(1, 0, "before"),
			on(1, 2, " after\n"),
		}, "" +
			"     0  proc.job.stdout   before…\n" +
			"     ~  gap               position 1 missing (1 frame)\n" +
			"     2  proc.job.stdout   … after\n"},
		{"unfinished at the end, in position order", []frames.Frame{
			on(2, 0, "err"),
			on(1, 1, "out"),
		}, "" +
			"     0  proc.job.stderr   err…\n" +
			"     1  proc.job.stdout   out…\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := printJob(t, LogOptions{}, tt.in...)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestInfoDrops(t *testing.T) {
	feed := func(fs ...frames.Frame) StreamSummary {
		t.Helper()
		in := NewInfo(0)
		in.Segment(frames.StreamDescriptor{Stream: S}, jobChannels)
		for _, f := range fs {
			in.Frame(S, f)
		}
		_, streams := in.Summary()
		if len(streams) != 1 {
			t.Fatalf("%d streams", len(streams))
		}
		return streams[0]
	}
	u := func(n uint64) *uint64 { return &n }

	s := feed(on(1, 0, "one\n"), on(4, 1, healthWithLoss), on(4, 2, `{"mux_dropped":5,"subscriber_dropped":3,"loss":{"frames":1,"bytes":10,"reason":"ended"}}`))
	want := []Drop{{Before: 1, Frames: 4, Bytes: u(512), Reason: "queue full"}, {Before: 2, Frames: 1, Bytes: u(10), Reason: "ended"}}
	if diff := cmp.Diff(want, s.Drops); diff != "" {
		t.Errorf("drops (-want +got):\n%s", diff)
	}
	if s.DropCount != 2 || s.DroppedFrames != 5 || s.DroppedBytes == nil || *s.DroppedBytes != 522 {
		t.Errorf("drop_count %d, dropped_frames %d, dropped_bytes %v", s.DropCount, s.DroppedFrames, s.DroppedBytes)
	}
	if s.MuxDropped == nil || *s.MuxDropped != 5 || s.SubscriberDropped == nil || *s.SubscriberDropped != 3 {
		t.Errorf("mux_dropped %v, subscriber_dropped %v", s.MuxDropped, s.SubscriberDropped)
	}

	s = feed(on(1, 0, "one\n"), on(4, 1, health0), on(4, 2, healthOld5))
	if diff := cmp.Diff([]Drop{{Before: 2, Frames: 5, Reason: "queue full"}}, s.Drops); diff != "" {
		t.Errorf("old-style drops (-want +got):\n%s", diff)
	}
	if s.DropCount != 1 || s.DroppedFrames != 5 || s.DroppedBytes != nil {
		t.Errorf("old style: drop_count %d, dropped_frames %d, dropped_bytes %v (want unknown)", s.DropCount, s.DroppedFrames, s.DroppedBytes)
	}

	// A record carrying "loss" lost in a gap: the next record's counters
	// show it, with its bytes when the writer counts them.
	s = feed(on(4, 0, `{"mux_dropped":0,"mux_dropped_bytes":0}`), on(4, 2, `{"mux_dropped":3,"mux_dropped_bytes":30}`))
	if diff := cmp.Diff([]Drop{{Before: 2, Frames: 3, Bytes: u(30), Reason: "queue full"}}, s.Drops); diff != "" {
		t.Errorf("counters with bytes (-want +got):\n%s", diff)
	}

	// Any health record means the drops are known, even an unreadable one
	// after a readable one.
	var text bytes.Buffer
	s = feed(on(4, 0, health0), on(4, 1, "{not json"))
	if err := WriteInfoText(&text, nil, []StreamSummary{s}); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(text.Bytes(), []byte("unknown")) || !regexp.MustCompile(`\n  dropped +0 at the mux, 0 by subscribers\n`).Match(text.Bytes()) {
		t.Errorf("info text:\n%s", text.String())
	}
}

// TestDropTrackerCounterBelowBaseline: a health record whose counter is
// below one already seen (its reading was taken before a loss placed ahead
// of it, as ds wrap wrote before its health records were made at drain
// time) must not make the next rise count that loss a second time.
func TestDropTrackerCounterBelowBaseline(t *testing.T) {
	var tr dropTracker
	var got []Drop
	for i, rec := range []string{
		`{"mux_dropped":0,"mux_dropped_bytes":0}`,
		`{"mux_dropped":89,"mux_dropped_bytes":900,"loss":{"frames":89,"bytes":900,"reason":"queue full"}}`,
		`{"mux_dropped":88,"mux_dropped_bytes":890}`,
		`{"mux_dropped":89,"mux_dropped_bytes":900}`,
		`{"mux_dropped":95,"mux_dropped_bytes":960}`,
	} {
		if d, ok := tr.health(frames.Position(i*10), []byte(rec), true, false); ok {
			got = append(got, d)
		}
	}
	if len(got) != 2 || got[0].Frames != 89 || got[1].Frames != 6 || got[1].Before != 40 || got[1].Bytes == nil || *got[1].Bytes != 60 {
		t.Fatalf("drops %+v, want 89 at 10 and 6 (60 bytes) at 40", got)
	}
}

package views

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// The ARCHITECTURE.md §8 notation: S = node-alpha#1 (srA), C1 host.resource (JSON),
// C2 proc.trainer.stdout (text), C3 membership (text); ds adds the
// writer's clock (C4) and health (C5) channels.
var (
	srA = frames.StreamID{Node: "node-alpha", Life: 1}
	srB = frames.StreamID{Node: "node-alpha", Life: 2}
)

func seriesCatalog(s frames.StreamID) []frames.ChannelDescriptor {
	return []frames.ChannelDescriptor{
		{Stream: s, ID: 1, Name: "host.resource", Content: frames.JSONRecord("host.resource")},
		{Stream: s, ID: 2, Name: "proc.trainer.stdout", Content: frames.TextStream()},
		{Stream: s, ID: 3, Name: "membership", Content: frames.TextStream()},
		{Stream: s, ID: 4, Name: frames.ClockChannel, Content: frames.JSONRecord(frames.ClockChannel)},
		{Stream: s, ID: 5, Name: frames.HealthChannel, Content: frames.JSONRecord(frames.HealthChannel)},
		{Stream: s, ID: 6, Name: "host.net", Content: frames.JSONRecord("host.net")},
		{Stream: s, ID: 7, Name: "blob", Content: frames.Bytes()},
	}
}

// srRes is CONFORMANCE's res(t).
func srRes(t int) string { return fmt.Sprintf(`{"cpu_pct":%g,"mem_mb":%d}`, 12.5+float64(t), 1024+t) }

// srClock is a datastream.clock record ms milliseconds after t0.
func srClock(ms int64) string {
	return fmt.Sprintf(`{"unix_ns":%d,"mono_ns":%d}`, srT0NS+ms*1e6, ms*1e6)
}

const srT0NS = 1732953600000000000 // 2024-11-30T08:00:00Z

// srEv is one frame of a test: stream, channel, position, payload.
type srEv struct {
	s   frames.StreamID
	ch  frames.ChannelID
	pos uint64
	p   string
}

// srFeed gives sink the catalog of every stream of evs, then the frames.
// srQuiet, as an event's channel, stands for a live input going quiet:
// the sink's Idle(true), or its Flush.
const srQuiet = ^frames.ChannelID(0)

func srFeed(sink segments.Sink, evs []srEv) {
	seen := map[frames.StreamID]bool{}
	for _, e := range evs {
		if e.ch == srQuiet {
			if i, ok := sink.(segments.Idler); ok {
				i.Idle(true)
			} else if f, ok := sink.(interface{ Flush() }); ok {
				f.Flush()
			}
			continue
		}
		if !seen[e.s] {
			seen[e.s] = true
			sink.Header(segments.SegmentHeader{Stream: frames.StreamDescriptor{Stream: e.s}, Channels: seriesCatalog(e.s)})
		}
		sink.Frame(e.s, frames.Frame{Channel: e.ch, Position: frames.Position(e.pos), Payload: []byte(e.p)})
	}
}

func runSeries(t *testing.T, opts SeriesOptions, evs []srEv) (string, SeriesStats) {
	t.Helper()
	var out bytes.Buffer
	s, err := NewSeries(&out, opts)
	if err != nil {
		t.Fatal(err)
	}
	srFeed(s, evs)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return out.String(), s.Stats()
}

func srChan(p string) []frames.ChannelFilter {
	return []frames.ChannelFilter{frames.ParseChannelPattern(p)}
}

// srJSONRows parses NDJSON rows, checking that each is valid JSON.
func srJSONRows(t *testing.T, out string) []map[string]any {
	t.Helper()
	var rows []map[string]any
	for line := range strings.Lines(out) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("row %q is not JSON: %v", line, err)
		}
		rows = append(rows, m)
	}
	return rows
}

// ARCHITECTURE.md case 3.8: a series never picks frames from other channels.
func TestSeriesConformanceOtherChannels(t *testing.T) {
	evs := []srEv{{srA, 1, 0, srRes(0)}, {srA, 2, 1, "log"}, {srA, 1, 2, srRes(2)}}
	out, st := runSeries(t, SeriesOptions{Channels: srChan("host.resource")}, evs)
	want := `{"stream":"node-alpha#1","node":"node-alpha","life":1,"position":0,"channel":"host.resource","time":null,"time_unix_ns":null,"record":{"cpu_pct":12.5,"mem_mb":1024}}
{"stream":"node-alpha#1","node":"node-alpha","life":1,"position":2,"channel":"host.resource","time":null,"time_unix_ns":null,"record":{"cpu_pct":14.5,"mem_mb":1026}}
`
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	if st.Rows != 2 || len(st.Skipped) != 0 || len(st.Unmatched) != 0 {
		t.Errorf("stats = %+v", st)
	}
}

// ARCHITECTURE.md case 3.9: missing fields have no value, extra fields are ignored.
func TestSeriesConformanceVersionSkew(t *testing.T) {
	evs := []srEv{{srA, 1, 0, `{"cpu_pct":42.0,"new_field":{"x":1}}`}}
	out, _ := runSeries(t, SeriesOptions{Channels: srChan("host.resource"), Fields: []string{"cpu_pct", "mem_mb"}}, evs)
	rows := srJSONRows(t, out)
	if len(rows) != 1 {
		t.Fatalf("rows = %q", out)
	}
	want := map[string]any{"cpu_pct": 42.0, "mem_mb": nil}
	if diff := cmp.Diff(want, rows[0]["values"]); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	out, _ = runSeries(t, SeriesOptions{Channels: srChan("host.resource"), Fields: []string{"cpu_pct", "mem_mb"}, Format: SeriesCSV}, evs)
	if want := "stream,position,channel,time,cpu_pct,mem_mb\nnode-alpha#1,0,host.resource,,42.0,\n"; out != want {
		t.Errorf("csv = %q, want %q", out, want)
	}
}

// ARCHITECTURE.md case 3.10: an empty stream has an empty series. Its
// channel pattern matched nothing (ds series fails): no CSV or TSV header
// either (issue 22 item 8). A channel declared without a record gives the
// header alone.
func TestSeriesEmpty(t *testing.T) {
	for _, f := range []struct {
		format SeriesFormat
		want   string
	}{{SeriesJSON, ""}, {SeriesCSV, "stream,position,channel,time,a\n"}, {SeriesTSV, "stream\tposition\tchannel\ttime\ta\n"}} {
		out, st := runSeries(t, SeriesOptions{Channels: srChan("host.resource"), Fields: []string{"a"}, Format: f.format}, nil)
		if out != "" {
			t.Errorf("format %d, no channel: %q, want nothing", f.format, out)
		}
		if st.Rows != 0 || len(st.Unmatched) != 1 || st.Unmatched[0] != "host.resource" {
			t.Errorf("stats = %+v", st)
		}
		out, st = runSeries(t, SeriesOptions{Channels: srChan("host.resource"), Fields: []string{"a"}, Format: f.format}, []srEv{{srA, 2, 0, "log"}})
		if out != f.want {
			t.Errorf("format %d, no record: %q, want %q", f.format, out, f.want)
		}
		if st.Rows != 0 || len(st.Unmatched) != 0 {
			t.Errorf("stats = %+v", st)
		}
	}
}

func TestSeriesTimeAndOrder(t *testing.T) {
	evs := []srEv{
		{srA, 1, 0, srRes(0)}, // before any clock reading
		{srA, 4, 1, srClock(0)},
		{srA, 1, 3, srRes(3)}, // delivered before position 2
		{srA, 1, 2, srRes(2)},
		{srA, 4, 4, srClock(100)},
		{srA, 1, 5, srRes(5)},
		{srA, 1, 5, srRes(5)}, // a duplicate collapses
	}
	out, _ := runSeries(t, SeriesOptions{Channels: srChan("host.resource"), Fields: []string{"cpu_pct"}, Format: SeriesCSV}, evs)
	want := `stream,position,channel,time,cpu_pct
node-alpha#1,0,host.resource,,12.5
node-alpha#1,2,host.resource,2024-11-30T08:00:00Z,14.5
node-alpha#1,3,host.resource,2024-11-30T08:00:00Z,15.5
node-alpha#1,5,host.resource,2024-11-30T08:00:00.1Z,17.5
`
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	out, _ = runSeries(t, SeriesOptions{Channels: srChan("host.resource"), Fields: []string{"cpu_pct"}}, evs[4:6])
	want = `{"stream":"node-alpha#1","node":"node-alpha","life":1,"position":5,"channel":"host.resource","time":"2024-11-30T08:00:00.1Z","time_unix_ns":1732953600100000000,"values":{"cpu_pct":17.5}}` + "\n"
	if out != want {
		t.Errorf("json = %q, want %q", out, want)
	}
}

func TestSeriesPaths(t *testing.T) {
	net := `{"schema":"host.net.v1","interfaces":[{"name":"lo","rx_bytes":100},{"name":"eth0","rx_bytes":123456,"tags":["a","b"]}],"host":{"total_percent":3.25},"note":"a, \"quoted\"\tcell"}`
	evs := []srEv{{srA, 6, 0, net}}
	tests := []struct {
		path, json, cell string
	}{
		{"host.total_percent", `3.25`, `3.25`},
		{"interfaces.#.rx_bytes", `[100,123456]`, `[100,123456]`},
		{`interfaces.#(name=="eth0").rx_bytes`, `123456`, `123456`},
		{`interfaces.#(name=="eth0")`, `{"name":"eth0","rx_bytes":123456,"tags":["a","b"]}`, `{"name":"eth0","rx_bytes":123456,"tags":["a","b"]}`},
		{"interfaces.1.name", `"eth0"`, `eth0`},
		{"interfaces.#", `2`, `2`},
		{"note", `"a, \"quoted\"\tcell"`, "a, \"quoted\"\tcell"},
		{"missing.path", `null`, ``},
		{`interfaces.#(name=="wlan0").rx_bytes`, `null`, ``},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			out, _ := runSeries(t, SeriesOptions{Channels: srChan("host.net"), Fields: []string{tt.path}}, evs)
			rows := srJSONRows(t, out)
			got, err := json.Marshal(rows[0]["values"].(map[string]any)[tt.path])
			if err != nil {
				t.Fatal(err)
			}
			var want any
			if err := json.Unmarshal([]byte(tt.json), &want); err != nil {
				t.Fatal(err)
			}
			wantJSON, _ := json.Marshal(want)
			if string(got) != string(wantJSON) {
				t.Errorf("json value = %s, want %s", got, wantJSON)
			}
			out, _ = runSeries(t, SeriesOptions{Channels: srChan("host.net"), Fields: []string{tt.path}, Format: SeriesCSV}, evs)
			recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
			if err != nil {
				t.Fatalf("csv %q: %v", out, err)
			}
			if len(recs) != 2 || recs[0][4] != tt.path || recs[1][4] != tt.cell {
				t.Errorf("csv = %q, want cell %q", recs, tt.cell)
			}
		})
	}
}

func TestSeriesCSVQuotingAndTSV(t *testing.T) {
	evs := []srEv{{srA, 1, 0, `{"s":"x,\"y\"\nz\\w\tv","a":[1,"two"],"n":null,"b":true}`}}
	fields := []string{"s", "a", "n", "b", "with,comma"}
	out, _ := runSeries(t, SeriesOptions{Channels: srChan("host.resource"), Fields: fields, Format: SeriesCSV}, evs)
	want := "stream,position,channel,time,s,a,n,b,\"with,comma\"\n" +
		"node-alpha#1,0,host.resource,,\"x,\"\"y\"\"\nz\\w\tv\",\"[1,\"\"two\"\"]\",,true,\n"
	if out != want {
		t.Errorf("csv:\n%q\nwant\n%q", out, want)
	}
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || recs[1][4] != "x,\"y\"\nz\\w\tv" || recs[1][5] != `[1,"two"]` {
		t.Errorf("csv reads back as %q, %v", recs, err)
	}
	out, _ = runSeries(t, SeriesOptions{Channels: srChan("host.resource"), Fields: fields, Format: SeriesTSV}, evs)
	want = "stream\tposition\tchannel\ttime\ts\ta\tn\tb\twith,comma\n" +
		"node-alpha#1\t0\thost.resource\t\tx,\"y\"\\nz\\\\w\\tv\t[1,\"two\"]\t\ttrue\t\n"
	if out != want {
		t.Errorf("tsv:\n%q\nwant\n%q", out, want)
	}
	// Without fields, the record is one cell.
	out, _ = runSeries(t, SeriesOptions{Channels: srChan("host.resource"), Format: SeriesCSV}, []srEv{{srA, 1, 0, `{ "a" : [1, 2] }`}})
	if want := "stream,position,channel,time,record\nnode-alpha#1,0,host.resource,,\"{\"\"a\"\":[1,2]}\"\n"; out != want {
		t.Errorf("csv record = %q, want %q", out, want)
	}
}

func TestSeriesSkipsNonJSON(t *testing.T) {
	evs := []srEv{
		{srA, 1, 0, srRes(0)},
		{srA, 1, 1, "not-json{oops"},
		{srA, 1, 2, ""},
		{srA, 2, 3, "42\n"}, // a text channel whose payload is JSON
		{srA, 2, 4, "hello\n"},
		{srB, 1, 0, "\xff"},
	}
	out, st := runSeries(t, SeriesOptions{Channels: []frames.ChannelFilter{frames.NameChannel("host.resource"), frames.NameChannel("proc.trainer.stdout")}}, evs)
	rows := srJSONRows(t, out)
	if len(rows) != 2 || rows[0]["position"] != 0.0 || rows[1]["record"] != 42.0 {
		t.Errorf("rows = %q", out)
	}
	want := []SkippedFrames{{"host.resource", 3}, {"proc.trainer.stdout", 1}}
	if diff := cmp.Diff(want, st.Skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
}

func TestSeriesMatching(t *testing.T) {
	evs := []srEv{{srA, 1, 0, srRes(0)}, {srA, 6, 1, `{"rx":1}`}, {srA, 4, 2, srClock(0)}}
	out, st := runSeries(t, SeriesOptions{Channels: srChan("host.*")}, evs)
	if rows := srJSONRows(t, out); len(rows) != 2 || rows[0]["channel"] != "host.resource" || rows[1]["channel"] != "host.net" {
		t.Errorf("host.* rows = %q", out)
	}
	if len(st.Unmatched) != 0 {
		t.Errorf("unmatched = %q", st.Unmatched)
	}
	_, st = runSeries(t, SeriesOptions{Channels: srChan("host.resourcex")}, evs)
	if diff := cmp.Diff([]string{"host.resourcex"}, st.Unmatched); diff != "" {
		t.Errorf("unmatched (-want +got):\n%s", diff)
	}
	wantNames := []string{"blob", "datastream.clock", "datastream.health", "host.net", "host.resource", "membership", "proc.trainer.stdout"}
	if diff := cmp.Diff(wantNames, st.Channels); diff != "" || st.ChannelsMore {
		t.Errorf("channels (-want +got):\n%s", diff)
	}
	// A frame of a channel without a descriptor never matches.
	var out2 bytes.Buffer
	s, _ := NewSeries(&out2, SeriesOptions{Channels: srChan("*")})
	s.Frame(srA, frames.Frame{Channel: 99, Position: 0, Payload: []byte(`{}`)})
	s.Close()
	if out2.Len() != 0 {
		t.Errorf("undeclared channel printed %q", out2.String())
	}
}

func TestNewSeriesErrors(t *testing.T) {
	for _, opts := range []SeriesOptions{
		{},
		{Channels: srChan("a"), Fields: []string{""}},
		{Channels: srChan("a"), Fields: []string{"x", "x"}},
		{Channels: srChan("a"), Rate: true},
	} {
		if _, err := NewSeries(&bytes.Buffer{}, opts); err == nil {
			t.Errorf("NewSeries(%+v) = nil error", opts)
		}
	}
	if _, err := ParseSeriesFormat("xml"); err == nil {
		t.Error("ParseSeriesFormat(xml) = nil error")
	}
}

// TestSeriesRate checks the rules of --rate: each case's frames are on
// host.resource (C1) unless said, the rates are those of field "v".
func TestSeriesRate(t *testing.T) {
	v := func(n string) string { return `{"v":` + n + `}` }
	tests := []struct {
		name string
		evs  []srEv
		want []string // the rate of each row, as JSON
	}{
		{"counter", []srEv{
			{srA, 4, 0, srClock(0)}, {srA, 1, 1, v("100")},
			{srA, 4, 2, srClock(2000)}, {srA, 1, 3, v("500")},
			{srA, 4, 4, srClock(2500)}, {srA, 1, 5, v("500")},
		}, []string{"null", "200", "0"}},
		{"counter reset", []srEv{
			{srA, 4, 0, srClock(0)}, {srA, 1, 1, v("100")},
			{srA, 4, 2, srClock(1000)}, {srA, 1, 3, v("5")},
			{srA, 4, 4, srClock(2000)}, {srA, 1, 5, v("15")},
		}, []string{"null", "null", "10"}},
		{"two lives", []srEv{
			{srA, 4, 0, srClock(0)}, {srA, 1, 1, v("100")},
			{srB, 4, 0, srClock(1000)}, {srB, 1, 1, v("200")},
			{srB, 4, 2, srClock(2000)}, {srB, 1, 3, v("300")},
		}, []string{"null", "null", "100"}},
		{"gap before the sample", []srEv{
			{srA, 4, 0, srClock(0)}, {srA, 1, 1, v("100")},
			{srA, 4, 2, srClock(1000)}, {srA, 1, 4, v("200")}, // position 3 lost
			{srA, 4, 5, srClock(2000)}, {srA, 1, 6, v("250")},
		}, []string{"null", "null", "50"}},
		{"previous frame lacks the field", []srEv{
			{srA, 4, 0, srClock(0)}, {srA, 1, 1, v("100")},
			{srA, 4, 2, srClock(1000)}, {srA, 1, 3, `{"w":1}`},
			{srA, 4, 4, srClock(2000)}, {srA, 1, 5, v("300")},
			{srA, 4, 6, srClock(3000)}, {srA, 1, 7, v("400")},
		}, []string{"null", "null", "null", "100"}},
		{"previous frame not JSON", []srEv{
			{srA, 4, 0, srClock(0)}, {srA, 1, 1, v("100")},
			{srA, 4, 2, srClock(1000)}, {srA, 1, 3, `{oops`},
			{srA, 4, 4, srClock(2000)}, {srA, 1, 5, v("300")},
		}, []string{"null", "null"}},
		{"zero time delta", []srEv{
			{srA, 4, 0, srClock(0)}, {srA, 1, 1, v("100")}, {srA, 1, 2, v("200")},
		}, []string{"null", "null"}},
		{"time going back", []srEv{
			{srA, 4, 0, srClock(1000)}, {srA, 1, 1, v("100")},
			{srA, 4, 2, srClock(500)}, {srA, 1, 3, v("200")},
		}, []string{"null", "null"}},
		{"no clock", []srEv{{srA, 1, 0, v("100")}, {srA, 1, 1, v("200")}}, []string{"null", "null"}},
		{"not a number", []srEv{
			{srA, 4, 0, srClock(0)}, {srA, 1, 1, v(`"100"`)},
			{srA, 4, 2, srClock(1000)}, {srA, 1, 3, v("200")},
			{srA, 4, 4, srClock(2000)}, {srA, 1, 5, v("true")},
			{srA, 4, 6, srClock(3000)}, {srA, 1, 7, v(`{"x":1}`)},
		}, []string{"null", "null", "null", "null"}},
		{"fractions", []srEv{
			{srA, 4, 0, srClock(0)}, {srA, 1, 1, v("0.5")},
			{srA, 4, 2, srClock(250)}, {srA, 1, 3, v("1.25")},
			{srA, 4, 4, srClock(500)}, {srA, 1, 5, v("2.5e0")},
		}, []string{"null", "3", "5"}},
		{"exact big integers", []srEv{
			{srA, 4, 0, srClock(0)}, {srA, 1, 1, v("18446744073709551000")},
			{srA, 4, 2, srClock(1000)}, {srA, 1, 3, v("18446744073709551615")},
			{srA, 4, 4, srClock(2000)}, {srA, 1, 5, v("18446744073709551616")}, // past uint64: as float64, equal
		}, []string{"null", "615", "0"}},
		{"drop before the sample", []srEv{
			{srA, 4, 0, srClock(0)}, {srA, 1, 1, v("100")},
			{srA, 4, 2, srClock(1000)},
			{srA, 5, 3, `{"assigned":3,"mux_dropped":2,"loss":{"frames":2,"bytes":20,"reason":"queue full"}}`},
			{srA, 1, 4, v("200")},
			{srA, 4, 5, srClock(2000)}, {srA, 1, 6, v("300")},
		}, []string{"null", "null", "100"}},
		{"other channels do not break a series", []srEv{
			{srA, 4, 0, srClock(0)}, {srA, 1, 1, v("100")}, {srA, 2, 2, "x\n"}, {srA, 6, 3, v("7")},
			{srA, 4, 4, srClock(1000)}, {srA, 1, 5, v("200")},
		}, []string{"null", "100"}},
		{"arrays element by element", []srEv{
			{srA, 4, 0, srClock(0)}, {srA, 1, 1, v("[10,20,30]")},
			{srA, 4, 2, srClock(1000)}, {srA, 1, 3, v(`[15,10,"x"]`)},
			{srA, 4, 4, srClock(2000)}, {srA, 1, 5, v(`[20,20,1]`)},
			{srA, 4, 6, srClock(3000)}, {srA, 1, 7, v(`[30,30]`)},
			{srA, 4, 8, srClock(4000)}, {srA, 1, 9, v(`7`)},
		}, []string{"[null,null,null]", "[5,null,null]", "[5,10,null]", "[null,null]", "null"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _ := runSeries(t, SeriesOptions{Channels: srChan("host.resource"), Fields: []string{"v"}, Rate: true}, tt.evs)
			var got []string
			for _, row := range srJSONRows(t, out) {
				b, _ := json.Marshal(row["values"].(map[string]any)["v"])
				got = append(got, string(b))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("rates (-want +got):\n%s\n%s", diff, out)
			}
			// The same in CSV: null is an empty cell.
			out, _ = runSeries(t, SeriesOptions{Channels: srChan("host.resource"), Fields: []string{"v"}, Rate: true, Format: SeriesCSV}, tt.evs)
			recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range recs[1:] {
				want := tt.want[i]
				if want == "null" {
					want = ""
				}
				if r[4] != want {
					t.Errorf("csv row %d: rate %q, want %q", i, r[4], want)
				}
			}
		})
	}
}

func TestSeriesRateLateFrame(t *testing.T) {
	// A live input goes quiet with position 1 missing: the gap is
	// declared, then position 1 arrives late.
	evs := []srEv{
		{srA, 4, 0, srClock(0)},
		{srA, 1, 2, `{"v":100}`},
		{srA, 4, 3, srClock(1000)},
		{srA, 1, 4, `{"v":200}`},
		{srA, srQuiet, 0, ""},
		{srA, 1, 1, `{"v":50}`},
		{srA, 4, 5, srClock(2000)},
		{srA, 1, 6, `{"v":300}`},
	}
	var out bytes.Buffer
	s, err := NewSeries(&out, SeriesOptions{Channels: srChan("host.resource"), Fields: []string{"v"}, Rate: true})
	if err != nil {
		t.Fatal(err)
	}
	srFeed(s, evs)
	s.Close()
	var got []string
	for _, row := range srJSONRows(t, out.String()) {
		b, _ := json.Marshal(row["values"])
		got = append(got, fmt.Sprintf("%v %v %s", row["position"], row["late"], b))
	}
	want := []string{
		`2 <nil> {"v":null}`, // after the gap at 1
		`4 <nil> {"v":100}`,
		`1 true {"v":null}`,
		`6 <nil> {"v":100}`, // the late frame is not the previous sample
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s\n%s", diff, out.String())
	}
}

// seriesFixture is pkg/views/testdata/series.dss, which the cmd/ds
// scripts series_*.txtar and latest_*.txtar read: two lives of node
// "edge", each with a clock, host.cpu records with cumulative counters
// (and one that is not JSON), host.net records, a text channel, and a gap
// in the first life. `DS_UPDATE=1 go test ./pkg/views -run
// TestSeriesFixture` rewrites it.
func seriesFixture(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	write := func(s frames.StreamID, seed byte, payloads ...string) {
		catalog := []frames.ChannelDescriptor{
			{Stream: s, ID: 1, Name: frames.ClockChannel, Content: frames.JSONRecord(frames.ClockChannel)},
			{Stream: s, ID: 2, Name: "host.cpu", Content: frames.JSONRecord("host.cpu")},
			{Stream: s, ID: 3, Name: "host.net", Content: frames.JSONRecord("host.net")},
			{Stream: s, ID: 4, Name: "proc.job.stdout", Content: frames.TextStream()},
		}
		w, err := segments.NewWriter(&buf, frames.StreamDescriptor{Stream: s}, catalog, segments.WriterOptions{WriterID: "ds fixture", Rand: rand.NewChaCha8([32]byte{0: seed})})
		if err != nil {
			t.Fatal(err)
		}
		for pos, p := range payloads {
			if p == "" {
				continue // lost: a gap
			}
			ch, payload, _ := strings.Cut(p, " ")
			id := map[string]frames.ChannelID{"clock": 1, "cpu": 2, "net": 3, "out": 4}[ch]
			if err := w.WriteFrame(frames.Frame{Channel: id, Position: frames.Position(pos), Payload: []byte(payload)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	cpu := func(busy, total int, pct float64) string {
		return fmt.Sprintf(`cpu {"schema":"host.cpu.v1","host":{"total_percent":%g,"busy_ticks":%d,"total_ticks":%d}}`, pct, busy, total)
	}
	net := func(lo, eth int) string {
		return fmt.Sprintf(`net {"interfaces":[{"name":"lo","rx_bytes":%d},{"name":"eth0","rx_bytes":%d}]}`, lo, eth)
	}
	write(frames.StreamID{Node: "edge", Life: 1}, 1,
		cpu(0, 0, 0), // before the first clock reading
		"clock "+srClock(0),
		cpu(100, 400, 25),
		net(1000, 5000),
		"out starting\n",
		"clock "+srClock(1000),
		cpu(300, 800, 50),
		net(1500, 9000),
		"cpu {not json",
		"clock "+srClock(2000),
		"", // lost
		cpu(500, 1200, 50),
		net(2000, 13000),
		"clock "+srClock(3000),
		cpu(600, 1600, 25),
		net(2100, 14000),
		"out done\n",
	)
	write(frames.StreamID{Node: "edge", Life: 2}, 2,
		"clock "+srClock(10000),
		cpu(10, 40, 25),
		net(10, 20),
		"clock "+srClock(10500),
		cpu(30, 80, 50),
		net(30, 520),
	)
	return buf.Bytes()
}

func TestSeriesFixture(t *testing.T) {
	want := seriesFixture(t)
	path := filepath.Join("testdata", "series.dss")
	if os.Getenv("DS_UPDATE") != "" {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (DS_UPDATE=1 go test ./pkg/views -run TestSeriesFixture makes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what the generator makes; regenerate with DS_UPDATE=1 and review", path)
	}
}

// FuzzSeries feeds arbitrary payloads and paths through a series in every
// format, with and without rates, and through the gauge view ([Latest]):
// nothing panics, every JSON row is valid JSON and every CSV output reads
// back.
func FuzzSeries(f *testing.F) {
	f.Add([]byte(srRes(0)), []byte(`{"cpu_pct":"x"}`), "cpu_pct", uint8(0))
	f.Add([]byte(`{"a":[1,2,{"b":3}]}`), []byte(`{"a":[2,3]}`), "a.#", uint8(1))
	f.Add([]byte(`{"i":[{"n":"e","x":1e400}]}`), []byte(`not json`), `i.#(n=="e").x`, uint8(2))
	f.Add([]byte(`{"s":"\u2028\ud800"}`), []byte("{\"s\":\"\xff\"}"), "s|@reverse", uint8(3))
	f.Fuzz(func(t *testing.T, p1, p2 []byte, path string, mode uint8) {
		if path == "" {
			path = "x"
		}
		format := SeriesFormat(mode % 3)
		var out bytes.Buffer
		s, err := NewSeries(&out, SeriesOptions{Channels: srChan("host.resource"), Fields: []string{path}, Format: format, Rate: mode&4 != 0})
		if err != nil {
			t.Fatal(err)
		}
		evs := []srEv{{srA, 4, 0, srClock(0)}, {srA, 1, 1, string(p1)}, {srA, 4, 2, srClock(1000)}, {srA, 1, 3, string(p2)}, {srA, 2, 4, string(p2)}, {srA, 7, 5, string(p1)}}
		srFeed(s, evs)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		// The gauge of the same frames: valid JSON, whatever the payloads.
		l := NewLatest(LatestOptions{})
		srFeed(l, evs)
		l.Flush()
		var lj bytes.Buffer
		if err := WriteLatestJSON(&lj, l.Entries()); err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(lj.String()) {
			if !json.Valid([]byte(line)) {
				t.Fatalf("latest: not JSON: %q", line)
			}
		}
		if err := WriteLatestText(io.Discard, l.Entries()); err != nil {
			t.Fatal(err)
		}
		switch format {
		case SeriesJSON:
			for line := range strings.Lines(out.String()) {
				if !json.Valid([]byte(line)) {
					t.Fatalf("row is not JSON: %q", line)
				}
			}
		case SeriesCSV:
			if _, err := csv.NewReader(&out).ReadAll(); err != nil {
				t.Fatalf("csv does not read back: %v\n%q", err, out.String())
			}
		}
	})
}

// SeriesOptions.Points gets each row as numbers instead of printing it:
// the same rows, times, nulls and rates as the printed series.
func TestSeriesPoints(t *testing.T) {
	evs := []srEv{
		{srA, 1, 0, `{"v":1,"a":[1,"x",3]}`}, // no time yet
		{srA, 4, 1, srClock(1000)},
		{srA, 1, 2, `{"v":"str","a":[2,2,2]}`},
		{srA, 2, 3, "not json\n"},
		{srA, 4, 4, srClock(2000)},
		{srA, 1, 5, `{"v":3.5}`},
	}
	var got []SeriesPoint
	out, st := runSeries(t, SeriesOptions{Channels: srChan("host.resource"), Fields: []string{"v", "a"}, Points: func(p SeriesPoint) { got = append(got, p) }}, evs)
	if out != "" {
		t.Errorf("output %q, want none", out)
	}
	want := []SeriesPoint{
		{Stream: srA, Channel: "host.resource", Position: 0, Values: []SeriesValue{{Num: 1, OK: true}, {IsArray: true, Elems: []SeriesValue{{Num: 1, OK: true}, {}, {Num: 3, OK: true}}}}},
		{Stream: srA, Channel: "host.resource", Position: 2, TimeNS: srT0NS + 1e9, Values: []SeriesValue{{}, {IsArray: true, Elems: []SeriesValue{{Num: 2, OK: true}, {Num: 2, OK: true}, {Num: 2, OK: true}}}}},
		{Stream: srA, Channel: "host.resource", Position: 5, TimeNS: srT0NS + 2e9, Values: []SeriesValue{{Num: 3.5, OK: true}, {}}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("points (-want +got):\n%s", d)
	}
	if st.Rows != 3 {
		t.Errorf("rows %d, want 3", st.Rows)
	}

	// With Rate, the rates.
	got = nil
	runSeries(t, SeriesOptions{Channels: srChan("host.resource"), Fields: []string{"mem_mb"}, Rate: true, Points: func(p SeriesPoint) { got = append(got, p) }}, []srEv{
		{srA, 4, 0, srClock(0)}, {srA, 1, 1, `{"mem_mb":100}`},
		{srA, 4, 2, srClock(2000)}, {srA, 1, 3, `{"mem_mb":500}`},
	})
	if len(got) != 2 || got[0].Values[0].OK || !got[1].Values[0].OK || got[1].Values[0].Num != 200 {
		t.Errorf("rate points %+v, want null then 200", got)
	}

	// A gap before a row: Resumed.
	got = nil
	runSeries(t, SeriesOptions{Channels: srChan("host.resource"), Fields: []string{"v"}, Points: func(p SeriesPoint) { got = append(got, p) }}, []srEv{
		{srA, 1, 0, `{"v":1}`}, {srA, 1, 1, `{"v":2}`}, {srA, 1, 3, `{"v":3}`}, {srA, 1, 4, `{"v":4}`},
	})
	var resumed []bool
	for _, p := range got {
		resumed = append(resumed, p.Resumed)
	}
	if d := cmp.Diff([]bool{false, false, true, false}, resumed); d != "" {
		t.Errorf("Resumed (-want +got):\n%s", d)
	}

	if _, err := NewSeries(io.Discard, SeriesOptions{Channels: srChan("x"), Points: func(SeriesPoint) {}}); err == nil {
		t.Error("Points without fields: no error")
	}
}

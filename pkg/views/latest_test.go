package views

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

func runLatest(t *testing.T, opts LatestOptions, evs []srEv) *Latest {
	t.Helper()
	l := NewLatest(opts)
	srFeed(l, evs)
	l.Flush()
	return l
}

func latestSummary(entries []LatestEntry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, e.Stream.String()+" "+e.Channel.Name+" "+strconv.FormatUint(uint64(e.Position), 10)+" "+string(e.Payload))
	}
	return out
}

func TestLatest(t *testing.T) {
	evs := []srEv{
		{srB, 1, 0, srRes(10)},
		{srA, 4, 0, srClock(0)},
		{srA, 1, 1, srRes(1)},
		{srA, 2, 2, "first\n"},
		{srA, 1, 4, srRes(4)}, // held until 3 arrives
		{srA, 1, 3, srRes(3)},
		{srA, 1, 4, srRes(4)}, // a duplicate
		{srA, 4, 5, srClock(100)},
		{srA, 2, 6, "last\n"},
		{srA, 5, 7, `{"assigned":8}`},
	}
	tests := []struct {
		name     string
		channels []string
		want     []string
	}{
		{"every channel but the writer's", nil, []string{
			"node-alpha#1 host.resource 4 " + srRes(4),
			"node-alpha#1 proc.trainer.stdout 6 last\n",
			"node-alpha#2 host.resource 0 " + srRes(10),
		}},
		{"one channel", []string{"host.resource"}, []string{
			"node-alpha#1 host.resource 4 " + srRes(4),
			"node-alpha#2 host.resource 0 " + srRes(10),
		}},
		{"a prefix naming the writer's channels", []string{"datastream.*"}, []string{
			"node-alpha#1 datastream.clock 5 " + srClock(100),
			"node-alpha#1 datastream.health 7 " + `{"assigned":8}`,
		}},
		{"ARCHITECTURE.md case 3.10: nothing there", []string{"membership"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var fs []frames.ChannelFilter
			for _, c := range tt.channels {
				fs = append(fs, frames.ParseChannelPattern(c))
			}
			l := runLatest(t, LatestOptions{Channels: fs}, evs)
			if diff := cmp.Diff(tt.want, latestSummary(l.Entries())); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	l := runLatest(t, LatestOptions{Channels: []frames.ChannelFilter{frames.NameChannel("host.resource"), frames.NameChannel("nope"), frames.PrefixChannels("gpu.")}}, evs)
	if diff := cmp.Diff([]string{"nope", "gpu.*"}, l.Unmatched()); diff != "" {
		t.Errorf("unmatched (-want +got):\n%s", diff)
	}
	if names, more := l.Channels(); len(names) != 7 || more {
		t.Errorf("channels = %q, %v", names, more)
	}
}

func TestLatestWrite(t *testing.T) {
	evs := []srEv{
		{srA, 1, 0, srRes(0)}, // before any clock reading
		{srA, 4, 1, srClock(0)},
		{srA, 2, 2, "tab\there \x1b[31mred\r\n"},
		{srA, 3, 3, "\xff\xfe"},
		{srA, 4, 4, srClock(1500)},
		{srA, 6, 5, `{ "interfaces" : [ ] }`},
		{srA, 7, 6, "\x00\x01ab"},
		{srA, 6, 7, `not-json{oops`},
		{srB, 1, 12, srRes(12)},
	}
	l := runLatest(t, LatestOptions{}, evs)
	var text bytes.Buffer
	if err := WriteLatestText(&text, l.Entries()); err != nil {
		t.Fatal(err)
	}
	want := `node-alpha#1  blob                  6  2024-11-30T08:00:01.5Z  \x00\x01ab
node-alpha#1  host.net              7  2024-11-30T08:00:01.5Z  not-json{oops
node-alpha#1  host.resource         0  -                       {"cpu_pct":12.5,"mem_mb":1024}
node-alpha#1  membership            3  2024-11-30T08:00:00Z    \xff\xfe
node-alpha#1  proc.trainer.stdout   2  2024-11-30T08:00:00Z    tab	here \x1b[31mred
node-alpha#2  host.resource        12  -                       {"cpu_pct":24.5,"mem_mb":1036}
`
	if diff := cmp.Diff(want, text.String()); diff != "" {
		t.Errorf("text (-want +got):\n%s", diff)
	}
	var js bytes.Buffer
	if err := WriteLatestJSON(&js, l.Entries()); err != nil {
		t.Fatal(err)
	}
	want = `{"stream":"node-alpha#1","node":"node-alpha","life":1,"channel":"blob","content":"Bytes","position":6,"time":"2024-11-30T08:00:01.5Z","time_unix_ns":1732953601500000000,"bytes_b64":"AAFhYg=="}
{"stream":"node-alpha#1","node":"node-alpha","life":1,"channel":"host.net","content":"JsonRecord","position":7,"time":"2024-11-30T08:00:01.5Z","time_unix_ns":1732953601500000000,"bytes_b64":"bm90LWpzb257b29wcw==","invalid_json":true}
{"stream":"node-alpha#1","node":"node-alpha","life":1,"channel":"host.resource","content":"JsonRecord","position":0,"time":null,"time_unix_ns":null,"record":{"cpu_pct":12.5,"mem_mb":1024}}
{"stream":"node-alpha#1","node":"node-alpha","life":1,"channel":"membership","content":"TextStream","position":3,"time":"2024-11-30T08:00:00Z","time_unix_ns":1732953600000000000,"text":"\ufffd\ufffd","bytes_b64":"//4=","utf8":false}
{"stream":"node-alpha#1","node":"node-alpha","life":1,"channel":"proc.trainer.stdout","content":"TextStream","position":2,"time":"2024-11-30T08:00:00Z","time_unix_ns":1732953600000000000,"text":"tab\there \u001b[31mred\r\n"}
{"stream":"node-alpha#2","node":"node-alpha","life":2,"channel":"host.resource","content":"JsonRecord","position":12,"time":null,"time_unix_ns":null,"record":{"cpu_pct":24.5,"mem_mb":1036}}
`
	if diff := cmp.Diff(want, js.String()); diff != "" {
		t.Errorf("json (-want +got):\n%s", diff)
	}
	for line := range strings.Lines(js.String()) {
		if !json.Valid([]byte(line)) {
			t.Errorf("not JSON: %q", line)
		}
	}
	// Nothing to write: nothing written.
	var empty bytes.Buffer
	if err := WriteLatestText(&empty, nil); err != nil || empty.Len() != 0 {
		t.Errorf("empty: %q, %v", empty.String(), err)
	}
}

func TestLatestLateFrame(t *testing.T) {
	// A live input goes quiet with position 2 missing: it is declared
	// lost, and arrives late; it is not above what is kept, so it is not
	// the latest.
	evs := []srEv{{srA, 4, 0, srClock(0)}, {srA, 1, 1, srRes(1)}, {srA, 1, 3, srRes(3)}, {srA, srQuiet, 0, ""}, {srA, 1, 2, srRes(2)}}
	l := runLatest(t, LatestOptions{}, evs)
	if diff := cmp.Diff([]string{"node-alpha#1 host.resource 3 " + srRes(3)}, latestSummary(l.Entries())); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// A late frame above the kept one (another channel went past it) is
	// taken, without a time.
	evs = []srEv{{srA, 4, 0, srClock(0)}, {srA, 1, 1, srRes(1)}, {srA, 2, 3, "x\n"}, {srA, srQuiet, 0, ""}, {srA, 1, 2, srRes(2)}}
	l = runLatest(t, LatestOptions{}, evs)
	e := l.Entries()
	if len(e) != 2 || e[0].Position != 2 || e[0].TimeNS != 0 {
		t.Errorf("entries = %+v", e)
	}
}

// TestLatestFixture reads the capture the cmd/ds scripts read through Scan.
func TestLatestFixture(t *testing.T) {
	l := NewLatest(LatestOptions{Channels: []frames.ChannelFilter{frames.PrefixChannels("host.")}})
	if err := segments.Scan(context.Background(), bytes.NewReader(seriesFixture(t)), segments.ScanOptions{}, l); err != nil {
		t.Fatal(err)
	}
	l.Flush()
	var got []string
	for _, e := range l.Entries() {
		got = append(got, e.Stream.String()+" "+e.Channel.Name+" "+formatTime(e.TimeNS))
	}
	want := []string{
		"edge#1 host.cpu 2024-11-30T08:00:03Z",
		"edge#1 host.net 2024-11-30T08:00:03Z",
		"edge#2 host.cpu 2024-11-30T08:00:10.5Z",
		"edge#2 host.net 2024-11-30T08:00:10.5Z",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

package frames

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func ptr(s string) *string { return &s }

// ARCHITECTURE.md §2: JSON spellings follow the seed system exactly.
func TestJSONSpellings(t *testing.T) {
	n1 := StreamID{Node: "n1", Life: 7}
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"stream descriptor", StreamDescriptor{Stream: n1}, `{"stream":{"node":"n1","life":7},"label":null,"origin":"RemoteNode"}`},
		{"labelled bootstrap", StreamDescriptor{Stream: n1, Label: ptr("boot"), Origin: OriginBootstrap}, `{"stream":{"node":"n1","life":7},"label":"boot","origin":"Bootstrap"}`},
		{"bytes", Bytes(), `"Bytes"`},
		{"text", TextStream(), `"TextStream"`},
		{"record", JSONRecord("host.cpu"), `{"JsonRecord":{"schema":"host.cpu"}}`},
		{"record without schema", JSONRecord(""), `{"JsonRecord":{"schema":null}}`},
		{"channel descriptor", ChannelDescriptor{Stream: n1, ID: 2, Name: "proc.make.stdout", Content: TextStream()}, `{"stream":{"node":"n1","life":7},"id":2,"name":"proc.make.stdout","label":null,"content":"TextStream"}`},
		{"frame event", FrameEvent(FrameDelivery{Channel: ChannelRef{n1, 3}, Position: 2, Payload: []byte("hi")}), `{"Frame":{"channel":{"stream":{"node":"n1","life":7},"channel":3},"position":2,"payload":[104,105]}}`},
		{"frame", Frame{Channel: 3, Position: 2, Payload: []byte("hi")}, `{"channel":3,"position":2,"payload":[104,105]}`},
		{"delivery", Delivery{Stream: n1, Frame: Frame{Channel: 1, Payload: []byte{}}}, `{"stream":{"node":"n1","life":7},"frame":{"channel":1,"position":0,"payload":[]}}`},
		{"ended event", StreamEndedEvent(n1), `{"StreamEnded":{"node":"n1","life":7}}`},
		{"stream declared", StreamDeclaredEvent(StreamDescriptor{Stream: n1, Origin: OriginOrchestrator}), `{"StreamDeclared":{"stream":{"node":"n1","life":7},"label":null,"origin":"Orchestrator"}}`},
		{"channel declared", ChannelDeclaredEvent(ChannelDescriptor{Stream: n1, ID: 1, Name: "host.cpu", Content: JSONRecord("host.cpu")}), `{"ChannelDeclared":{"stream":{"node":"n1","life":7},"id":1,"name":"host.cpu","label":null,"content":{"JsonRecord":{"schema":"host.cpu"}}}}`},
		{"request all", SubscriptionRequest{}, `{"sources":"All","channels":"All"}`},
		{"request node prefix", SubscriptionRequest{Sources: NodeSource("X"), Channels: PrefixChannels("proc.trainer.")}, `{"sources":{"Node":"X"},"channels":{"Prefix":"proc.trainer."}}`},
		{"request stream name", SubscriptionRequest{Sources: StreamSource(n1), Channels: NameChannel("host.cpu")}, `{"sources":{"Stream":{"node":"n1","life":7}},"channels":{"Name":"host.cpu"}}`},
		{"request origin content", SubscriptionRequest{Sources: OriginSource(OriginBootstrap), Channels: ContentChannels(KindJSONRecord)}, `{"sources":{"Origin":"Bootstrap"},"channels":{"Content":"JsonRecord"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Fatalf("got  %s\nwant %s", b, tt.want)
			}
			// Round trip into a fresh value of the same type.
			var back any
			switch tt.v.(type) {
			case StreamDescriptor:
				var v StreamDescriptor
				err, back = json.Unmarshal(b, &v), v
			case ChannelContent:
				var v ChannelContent
				err, back = json.Unmarshal(b, &v), v
			case ChannelDescriptor:
				var v ChannelDescriptor
				err, back = json.Unmarshal(b, &v), v
			case Event:
				var v Event
				err, back = json.Unmarshal(b, &v), v
			case SubscriptionRequest:
				var v SubscriptionRequest
				err, back = json.Unmarshal(b, &v), v
			case Frame:
				var v Frame
				err, back = json.Unmarshal(b, &v), v
			case Delivery:
				var v Delivery
				err, back = json.Unmarshal(b, &v), v
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.v, back); diff != "" {
				t.Fatalf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

// ARCHITECTURE.md rule 5.6: missing fields default, unknown fields are ignored.
func TestJSONVersionSkew(t *testing.T) {
	var d ChannelDescriptor
	if err := json.Unmarshal([]byte(`{"stream":{"node":"n","life":1},"id":4,"name":"x","future":{"a":1}}`), &d); err != nil {
		t.Fatal(err)
	}
	want := ChannelDescriptor{Stream: StreamID{"n", 1}, ID: 4, Name: "x", Content: Bytes()}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	var s StreamDescriptor
	if err := json.Unmarshal([]byte(`{"stream":{"node":"n","life":1}}`), &s); err != nil || s.Origin != OriginRemoteNode {
		t.Fatalf("missing origin: %+v %v", s, err)
	}
	var c ChannelContent
	if err := json.Unmarshal([]byte(`{"JsonRecord":{}}`), &c); err != nil || c.Kind != KindJSONRecord || c.Schema != nil {
		t.Fatalf("record without schema key: %+v %v", c, err)
	}
}

func TestJSONErrors(t *testing.T) {
	bad := []struct {
		name string
		into any
		in   string
	}{
		{"unknown origin", new(StreamOrigin), `"Satellite"`},
		{"unknown content", new(ChannelContent), `"Video"`},
		{"two-key content", new(ChannelContent), `{"JsonRecord":{},"Bytes":{}}`},
		{"unknown event", new(Event), `{"Frobbed":{}}`},
		{"event with two keys", new(Event), `{"Frame":{},"StreamEnded":{}}`},
		{"payload as base64", new(Frame), `{"channel":1,"position":0,"payload":"aGk="}`},
		{"payload out of range", new(Event), `{"Frame":{"channel":{"stream":{"node":"n","life":1},"channel":1},"position":0,"payload":[256]}}`},
		{"unknown source", new(SourceFilter), `{"Planet":"x"}`},
		{"unknown channel filter", new(ChannelFilter), `{"Regex":"x"}`},
	}
	for _, tt := range bad {
		if err := json.Unmarshal([]byte(tt.in), tt.into); err == nil {
			t.Errorf("%s: no error", tt.name)
		} else if tt.name != "payload out of range" && !errors.Is(err, ErrBadJSON) {
			t.Errorf("%s: %v does not wrap ErrBadJSON", tt.name, err)
		}
	}
}

func TestStreamIDText(t *testing.T) {
	s := StreamID{Node: "ci#7", Life: 1732953600123456789}
	if s.String() != "ci#7#1732953600123456789" {
		t.Fatal(s.String())
	}
	back, err := ParseStreamID(s.String())
	if err != nil || back != s {
		t.Fatalf("parse = %+v %v", back, err)
	}
	for _, bad := range []string{"", "node", "node#", "node#x", "node#-1", "n#18446744073709551616"} {
		if _, err := ParseStreamID(bad); !errors.Is(err, ErrBadStreamID) {
			t.Errorf("ParseStreamID(%q) = %v", bad, err)
		}
	}
}

func TestFilters(t *testing.T) {
	s := StreamDescriptor{Stream: StreamID{"X", 2}, Origin: OriginBootstrap}
	c := ChannelDescriptor{Stream: s.Stream, ID: 1, Name: "proc.trainer.stdout", Content: TextStream()}
	tests := []struct {
		req  SubscriptionRequest
		want bool
	}{
		{SubscriptionRequest{}, true},
		{SubscriptionRequest{Sources: NodeSource("X"), Channels: PrefixChannels("proc.trainer.")}, true},
		{SubscriptionRequest{Sources: NodeSource("Y")}, false},
		{SubscriptionRequest{Sources: StreamSource(StreamID{"X", 2}), Channels: NameChannel("proc.trainer.stdout")}, true},
		{SubscriptionRequest{Sources: StreamSource(StreamID{"X", 3})}, false},
		{SubscriptionRequest{Sources: OriginSource(OriginBootstrap), Channels: ContentChannels(KindJSONRecord)}, false},
		{SubscriptionRequest{Sources: OriginSource(OriginBootstrap), Channels: ContentChannels(KindTextStream)}, true},
		{SubscriptionRequest{Channels: ParseChannelPattern("proc.*")}, true},
		{SubscriptionRequest{Channels: ParseChannelPattern("proc")}, false},
		{SubscriptionRequest{Channels: ParseChannelPattern("proc.*.stdout")}, true},
		{SubscriptionRequest{Channels: ParseChannelPattern("proc.*.stderr")}, false},
	}
	for i, tt := range tests {
		if got := tt.req.Match(s, c); got != tt.want {
			t.Errorf("%d: %+v match = %v, want %v", i, tt.req, got, tt.want)
		}
	}
}

// TestParseChannelPattern checks the CLI spellings of -c and what each
// matches: a trailing * a prefix, a * elsewhere a glob whose * matches
// any run of characters, dots included.
func TestParseChannelPattern(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		kind    ChannelFilterKind
		match   []string
		miss    []string
	}{
		{"proc.build.stdout", ChannelsName, []string{"proc.build.stdout"}, []string{"proc.build.stdout2", "proc.build"}},
		{"proc.*", ChannelsPrefix, []string{"proc.", "proc.a.stdout"}, []string{"proc", "host.cpu"}},
		{"proc.*.stdout", ChannelsGlob, []string{"proc.a.stdout", "proc.a.b.stdout", "proc..stdout"}, []string{"proc.stdout", "proc.a.stderr", "xproc.a.stdout", "proc.a.stdout.x"}},
		{"*.stdout", ChannelsGlob, []string{"proc.a.stdout", ".stdout"}, []string{"stdout", "proc.a.stderr"}},
		{"*cpu*", ChannelsGlob, []string{"host.cpu", "cpu", "a.cpu.b"}, []string{"host.mem", "cp"}},
		{"a*b*b", ChannelsGlob, []string{"abb", "axbyb", "abbb"}, []string{"ab", "abx"}},
		{"**", ChannelsGlob, []string{"", "anything"}, nil},
		{"*", ChannelsPrefix, []string{"", "x"}, nil},
	} {
		f := ParseChannelPattern(tc.pattern)
		if f.Kind != tc.kind {
			t.Errorf("%q: kind %d, want %d", tc.pattern, f.Kind, tc.kind)
		}
		for _, n := range tc.match {
			if !f.Match(ChannelDescriptor{Name: n}) {
				t.Errorf("%q does not match %q", tc.pattern, n)
			}
		}
		for _, n := range tc.miss {
			if f.Match(ChannelDescriptor{Name: n}) {
				t.Errorf("%q matches %q", tc.pattern, n)
			}
		}
		b, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		var back ChannelFilter
		if err := json.Unmarshal(b, &back); err != nil || back != f {
			t.Errorf("%q: JSON %s decodes as %+v, %v", tc.pattern, b, back, err)
		}
	}
}

// ARCHITECTURE.md case 3.9: version skew for records.
func TestDecodeRecordDefaults(t *testing.T) {
	type resource struct {
		CPUPct float64 `json:"cpu_pct"`
		MemMB  int     `json:"mem_mb"`
	}
	got, err := DecodeRecord([]byte(`{"cpu_pct":42.0,"disk":"extra"}`), resource{MemMB: -1})
	if err != nil {
		t.Fatal(err)
	}
	if got != (resource{CPUPct: 42, MemMB: -1}) {
		t.Fatalf("got %+v", got)
	}
	if _, err := DecodeRecord([]byte(`not-json{oops`), resource{}); err == nil {
		t.Fatal("bad JSON decoded")
	}
}

func TestRegistryClassify(t *testing.T) {
	r := new(Registry).Typed("host.resource").Text("membership").TextPrefix("proc.")
	tests := map[string]ChannelKind{
		"host.resource":       Typed,
		"membership":          Text,
		"proc.trainer.stdout": Text,
		"proc":                Opaque,
		"never.heard.of":      Opaque,
	}
	for name, want := range tests {
		if got := r.Classify(name); got != want {
			t.Errorf("Classify(%q) = %v, want %v", name, got, want)
		}
	}
	if new(Registry).Classify("x") != Opaque {
		t.Error("zero registry must classify as Opaque")
	}
}

// The datastream.transport record's JSON spelling (ds-format(5) LOSSES):
// "lost" is left out when nil, the outage bounds when unknown.
func TestTransportRecordJSON(t *testing.T) {
	for _, tc := range []struct {
		rec  TransportRecord
		want string
	}{
		{TransportRecord{Output: "nats://h:4222/ds"}, `{"output":"nats://h:4222/ds"}`},
		{
			TransportRecord{Output: "nats://h:4222/ds", Lost: &TransportLoss{From: 120, To: 340, Frames: 221, Reason: "server unreachable", SinceUnixMs: 1, UntilUnixMs: 2}},
			`{"output":"nats://h:4222/ds","lost":{"from":120,"to":340,"frames":221,"reason":"server unreachable","since_unix_ms":1,"until_unix_ms":2}}`,
		},
		{
			TransportRecord{Output: "o", Lost: &TransportLoss{From: 5, To: 5, Frames: 1, Reason: "r"}},
			`{"output":"o","lost":{"from":5,"to":5,"frames":1,"reason":"r"}}`,
		},
	} {
		b, err := json.Marshal(tc.rec)
		if err != nil || string(b) != tc.want {
			t.Errorf("marshal %+v = %s, %v; want %s", tc.rec, b, err, tc.want)
		}
		var back TransportRecord
		if err := json.Unmarshal(b, &back); err != nil || !cmp.Equal(back, tc.rec) {
			t.Errorf("round trip %s = %+v, %v", b, back, err)
		}
	}
}

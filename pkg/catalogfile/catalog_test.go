package catalogfile

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// The notation of ARCHITECTURE.md §8: stream S = node-alpha#1 and its channels.
var (
	sID   = frames.StreamID{Node: "node-alpha", Life: 1}
	s2ID  = frames.StreamID{Node: "node-alpha", Life: 2}
	bID   = frames.StreamID{Node: "node-beta", Life: 1}
	sDesc = frames.StreamDescriptor{Stream: sID, Label: strPtr("trainer"), Origin: frames.OriginBootstrap}
	c1    = frames.ChannelDescriptor{Stream: sID, ID: 1, Name: "host.resource", Content: frames.JSONRecord("host.resource")}
	c2    = frames.ChannelDescriptor{Stream: sID, ID: 2, Name: "proc.trainer.stdout", Content: frames.TextStream()}
	c3    = frames.ChannelDescriptor{Stream: sID, ID: 3, Name: "membership", Label: strPtr("peers"), Content: frames.TextStream()}
)

func strPtr(s string) *string { return &s }

// with returns d changed by f.
func with[T any](d T, f func(*T)) T {
	f(&d)
	return d
}

// mustAdd builds a catalog from descriptors, all from source.
func mustAdd(t *testing.T, source string, descs ...any) *Catalog {
	t.Helper()
	c := New()
	for _, d := range descs {
		var err error
		switch d := d.(type) {
		case frames.StreamDescriptor:
			err = c.AddStream(d, source)
		case frames.ChannelDescriptor:
			err = c.AddChannel(d, source)
		default:
			t.Fatalf("not a descriptor: %T", d)
		}
		if err != nil {
			t.Fatalf("add %v: %v", d, err)
		}
	}
	return c
}

// contents flattens a catalog for comparison.
type contents struct {
	Streams  []StreamEntry
	Channels map[frames.StreamID][]ChannelEntry
}

func dump(c *Catalog) contents {
	out := contents{Streams: c.Streams(), Channels: map[frames.StreamID][]ChannelEntry{}}
	for _, s := range out.Streams {
		out.Channels[s.Descriptor.Stream] = c.Channels(s.Descriptor.Stream)
	}
	return out
}

func TestAddAndLookup(t *testing.T) {
	c := mustAdd(t, "a.dss", c2, sDesc, c1, c3)
	if err := c.AddChannel(c1, "b.dss"); err != nil {
		t.Fatalf("adding an identical descriptor: %v", err)
	}
	if err := c.AddStream(sDesc, "b.dss"); err != nil {
		t.Fatalf("adding an identical stream: %v", err)
	}
	got, ok := c.Lookup(sID, 1)
	if !ok {
		t.Fatal("Lookup(S, 1) not found")
	}
	if diff := cmp.Diff(ChannelEntry{Descriptor: c1, Source: "a.dss"}, got); diff != "" {
		t.Errorf("Lookup(S, 1): identical re-add changed the entry (-want +got):\n%s", diff)
	}
	if got, ok := c.LookupName(sID, "membership"); !ok || got.Descriptor.ID != 3 {
		t.Errorf("LookupName(S, membership) = %v, %v; want id 3", got, ok)
	}
	for _, miss := range []struct {
		stream frames.StreamID
		id     frames.ChannelID
	}{{sID, 99}, {s2ID, 1}} {
		if _, ok := c.Lookup(miss.stream, miss.id); ok {
			t.Errorf("Lookup(%s, %d) found a channel", miss.stream, miss.id)
		}
	}
	if _, ok := c.LookupName(sID, "membership.x"); ok {
		t.Errorf("LookupName matched a non-exact name")
	}
	want := contents{
		Streams: []StreamEntry{{Descriptor: sDesc, Declared: true, Source: "a.dss"}},
		Channels: map[frames.StreamID][]ChannelEntry{sID: {
			{Descriptor: c1, Source: "a.dss"}, {Descriptor: c2, Source: "a.dss"}, {Descriptor: c3, Source: "a.dss"},
		}},
	}
	if diff := cmp.Diff(want, dump(c)); diff != "" {
		t.Errorf("catalog (-want +got):\n%s", diff)
	}
}

func TestSortedOutput(t *testing.T) {
	c := mustAdd(t, "x",
		frames.StreamDescriptor{Stream: bID},
		frames.StreamDescriptor{Stream: s2ID},
		frames.StreamDescriptor{Stream: sID},
		with(c1, func(d *frames.ChannelDescriptor) { d.ID = 10 }), c2,
	)
	var ids []frames.StreamID
	for _, s := range c.Streams() {
		ids = append(ids, s.Descriptor.Stream)
	}
	if diff := cmp.Diff([]frames.StreamID{sID, s2ID, bID}, ids); diff != "" {
		t.Errorf("stream order (-want +got):\n%s", diff)
	}
	chs := c.Channels(sID)
	if len(chs) != 2 || chs[0].Descriptor.ID != 2 || chs[1].Descriptor.ID != 10 {
		t.Errorf("channel order: %v", chs)
	}
	if got := c.Channels(bID); got != nil {
		t.Errorf("Channels of a stream without channels = %v, want nil", got)
	}
}

func TestUndeclaredStream(t *testing.T) {
	c := mustAdd(t, "a.dss", c1)
	s, ok := c.Stream(sID)
	if !ok || s.Declared || s.Descriptor.Stream != sID || s.Source != "" {
		t.Fatalf("Stream(S) = %+v, %v; want known and undeclared", s, ok)
	}
	if err := c.AddStream(sDesc, "b.dss"); err != nil {
		t.Fatalf("declaring the stream: %v", err)
	}
	s, _ = c.Stream(sID)
	if diff := cmp.Diff(StreamEntry{Descriptor: sDesc, Declared: true, Source: "b.dss"}, s); diff != "" {
		t.Errorf("declared stream (-want +got):\n%s", diff)
	}
	if _, ok := c.Stream(bID); ok {
		t.Errorf("Stream(unknown) found")
	}
}

func TestConflicts(t *testing.T) {
	tests := []struct {
		name     string
		existing []any
		add      any
		want     ConflictError
		wantMsg  string
	}{
		{
			name:     "same stream and id, different name",
			existing: []any{c1},
			add:      with(c1, func(d *frames.ChannelDescriptor) { d.Name = "host.cpu" }),
			want: ConflictError{Stream: sID, OldChannel: &c1,
				NewChannel: ptr(with(c1, func(d *frames.ChannelDescriptor) { d.Name = "host.cpu" })),
				OldSource:  "a.dss", NewSource: "b.dss"},
			wantMsg: `catalogfile: conflicting descriptors for channel 1 of stream node-alpha#1: ` +
				`{"stream":{"node":"node-alpha","life":1},"id":1,"name":"host.resource","label":null,"content":{"JsonRecord":{"schema":"host.resource"}}} from "a.dss", ` +
				`{"stream":{"node":"node-alpha","life":1},"id":1,"name":"host.cpu","label":null,"content":{"JsonRecord":{"schema":"host.resource"}}} from "b.dss"`,
		},
		{
			name:     "same stream and id, different content",
			existing: []any{c2},
			add:      with(c2, func(d *frames.ChannelDescriptor) { d.Content = frames.JSONRecord("stdout.json") }),
			want: ConflictError{Stream: sID, OldChannel: &c2,
				NewChannel: ptr(with(c2, func(d *frames.ChannelDescriptor) { d.Content = frames.JSONRecord("stdout.json") })),
				OldSource:  "a.dss", NewSource: "b.dss"},
		},
		{
			name:     "same stream and id, different schema",
			existing: []any{c1},
			add:      with(c1, func(d *frames.ChannelDescriptor) { d.Content = frames.JSONRecord("") }),
			want: ConflictError{Stream: sID, OldChannel: &c1,
				NewChannel: ptr(with(c1, func(d *frames.ChannelDescriptor) { d.Content = frames.JSONRecord("") })),
				OldSource:  "a.dss", NewSource: "b.dss"},
		},
		{
			name:     "same stream and id, different label",
			existing: []any{c3},
			add:      with(c3, func(d *frames.ChannelDescriptor) { d.Label = nil }),
			want: ConflictError{Stream: sID, OldChannel: &c3,
				NewChannel: ptr(with(c3, func(d *frames.ChannelDescriptor) { d.Label = nil })),
				OldSource:  "a.dss", NewSource: "b.dss"},
		},
		{
			name:     "same name, different id",
			existing: []any{c2},
			add:      with(c2, func(d *frames.ChannelDescriptor) { d.ID = 7 }),
			want: ConflictError{Stream: sID, OldChannel: &c2,
				NewChannel: ptr(with(c2, func(d *frames.ChannelDescriptor) { d.ID = 7 })),
				OldSource:  "a.dss", NewSource: "b.dss"},
			wantMsg: `catalogfile: channel name "proc.trainer.stdout" of stream node-alpha#1 is id 2 in "a.dss" and id 7 in "b.dss"`,
		},
		{
			name:     "stream with another origin",
			existing: []any{sDesc},
			add:      with(sDesc, func(d *frames.StreamDescriptor) { d.Origin = frames.OriginRemoteNode }),
			want: ConflictError{Stream: sID, OldStream: &sDesc,
				NewStream: ptr(with(sDesc, func(d *frames.StreamDescriptor) { d.Origin = frames.OriginRemoteNode })),
				OldSource: "a.dss", NewSource: "b.dss"},
			wantMsg: `catalogfile: conflicting descriptors for stream node-alpha#1: ` +
				`{"stream":{"node":"node-alpha","life":1},"label":"trainer","origin":"Bootstrap"} from "a.dss", ` +
				`{"stream":{"node":"node-alpha","life":1},"label":"trainer","origin":"RemoteNode"} from "b.dss"`,
		},
		{
			name:     "stream with another label",
			existing: []any{sDesc},
			add:      with(sDesc, func(d *frames.StreamDescriptor) { d.Label = strPtr("other") }),
			want: ConflictError{Stream: sID, OldStream: &sDesc,
				NewStream: ptr(with(sDesc, func(d *frames.StreamDescriptor) { d.Label = strPtr("other") })),
				OldSource: "a.dss", NewSource: "b.dss"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustAdd(t, "a.dss", tt.existing...)
			before := dump(c)
			var err error
			switch d := tt.add.(type) {
			case frames.StreamDescriptor:
				err = c.AddStream(d, "b.dss")
			case frames.ChannelDescriptor:
				err = c.AddChannel(d, "b.dss")
			}
			if !errors.Is(err, ErrConflict) {
				t.Fatalf("error = %v, want ErrConflict", err)
			}
			var ce *ConflictError
			if !errors.As(err, &ce) {
				t.Fatalf("error %T is not a *ConflictError", err)
			}
			if diff := cmp.Diff(tt.want, *ce); diff != "" {
				t.Errorf("ConflictError (-want +got):\n%s", diff)
			}
			if tt.wantMsg != "" && err.Error() != tt.wantMsg {
				t.Errorf("message\n%s\nwant\n%s", err, tt.wantMsg)
			}
			if diff := cmp.Diff(before, dump(c)); diff != "" {
				t.Errorf("a refused add changed the catalog (-before +after):\n%s", diff)
			}
		})
	}
}

// TestSameIDOtherStreams checks that channel ids and names are stream-local.
func TestSameIDOtherStreams(t *testing.T) {
	mustAdd(t, "a.dss", c1,
		with(c1, func(d *frames.ChannelDescriptor) { d.Stream = s2ID; d.Name = "other" }),
		with(c1, func(d *frames.ChannelDescriptor) { d.Stream = bID; d.ID = 5 }),
	)
}

func TestInvalid(t *testing.T) {
	tests := []struct {
		name string
		add  func(c *Catalog) error
	}{
		{"channel id 0", func(c *Catalog) error {
			return c.AddChannel(with(c1, func(d *frames.ChannelDescriptor) { d.ID = 0 }), "x")
		}},
		{"empty name", func(c *Catalog) error {
			return c.AddChannel(with(c1, func(d *frames.ChannelDescriptor) { d.Name = "" }), "x")
		}},
		{"unknown content kind", func(c *Catalog) error {
			return c.AddChannel(with(c1, func(d *frames.ChannelDescriptor) { d.Content.Kind = 9 }), "x")
		}},
		{"unknown origin", func(c *Catalog) error {
			return c.AddStream(with(sDesc, func(d *frames.StreamDescriptor) { d.Origin = 9 }), "x")
		}},
		{"StreamDeclared without descriptor", func(c *Catalog) error {
			return c.AddEvent(frames.Event{Kind: frames.EventStreamDeclared}, "x")
		}},
		{"ChannelDeclared without descriptor", func(c *Catalog) error {
			return c.AddEvent(frames.Event{Kind: frames.EventChannelDeclared}, "x")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New()
			if err := tt.add(c); !errors.Is(err, ErrInvalid) {
				t.Errorf("error = %v, want ErrInvalid", err)
			}
			if len(c.Streams()) != 0 {
				t.Errorf("a refused add left %v", c.Streams())
			}
		})
	}
}

func TestAddEvent(t *testing.T) {
	c := New()
	evs := []frames.Event{
		frames.ChannelDeclaredEvent(c1),
		frames.FrameEvent(frames.FrameDelivery{Channel: frames.ChannelRef{Stream: sID, Channel: 1}}),
		frames.StreamDeclaredEvent(sDesc),
		frames.StreamEndedEvent(sID),
	}
	for _, ev := range evs {
		if err := c.AddEvent(ev, "live"); err != nil {
			t.Fatalf("AddEvent(%v): %v", ev.Kind, err)
		}
	}
	want := mustAdd(t, "live", sDesc, c1)
	if diff := cmp.Diff(dump(want), dump(c)); diff != "" {
		t.Errorf("catalog (-want +got):\n%s", diff)
	}
	err := c.AddEvent(frames.ChannelDeclaredEvent(with(c1, func(d *frames.ChannelDescriptor) { d.Name = "x" })), "live")
	if !errors.Is(err, ErrConflict) {
		t.Errorf("conflicting event: error = %v, want ErrConflict", err)
	}
}

func TestMerge(t *testing.T) {
	a := mustAdd(t, "a.dss", sDesc, c1, c2)
	b := mustAdd(t, "b.dss", c1, c3, frames.StreamDescriptor{Stream: bID})
	bBefore := dump(b)
	if err := a.Merge(b); err != nil {
		t.Fatal(err)
	}
	want := contents{
		Streams: []StreamEntry{
			{Descriptor: sDesc, Declared: true, Source: "a.dss"},
			{Descriptor: frames.StreamDescriptor{Stream: bID}, Declared: true, Source: "b.dss"},
		},
		Channels: map[frames.StreamID][]ChannelEntry{
			sID: {{Descriptor: c1, Source: "a.dss"}, {Descriptor: c2, Source: "a.dss"}, {Descriptor: c3, Source: "b.dss"}},
			bID: nil,
		},
	}
	if diff := cmp.Diff(want, dump(a)); diff != "" {
		t.Errorf("merged (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(bBefore, dump(b)); diff != "" {
		t.Errorf("Merge changed its argument (-before +after):\n%s", diff)
	}
	if err := a.Merge(a); err != nil {
		t.Errorf("merging a catalog into itself: %v", err)
	}
	if err := a.Merge(nil); err != nil {
		t.Errorf("merging nil: %v", err)
	}
	if diff := cmp.Diff(want, dump(a)); diff != "" {
		t.Errorf("self/nil merge changed the catalog (-want +got):\n%s", diff)
	}

	// An undeclared stream merges into a declared one and vice versa.
	u := mustAdd(t, "u.dss", with(c1, func(d *frames.ChannelDescriptor) { d.Stream = s2ID }))
	d := mustAdd(t, "d.dss", frames.StreamDescriptor{Stream: s2ID})
	if err := d.Merge(u); err != nil {
		t.Fatal(err)
	}
	if s, _ := d.Stream(s2ID); !s.Declared || len(d.Channels(s2ID)) != 1 {
		t.Errorf("declared ← undeclared: %+v, %v", s, d.Channels(s2ID))
	}
	if err := u.Merge(mustAdd(t, "d.dss", frames.StreamDescriptor{Stream: s2ID})); err != nil {
		t.Fatal(err)
	}
	if s, _ := u.Stream(s2ID); !s.Declared || s.Source != "d.dss" {
		t.Errorf("undeclared ← declared: %+v", s)
	}
}

// TestMergeConflictIsAllOrNothing checks that a merge with conflicts reports
// every one of them and changes nothing.
func TestMergeConflictIsAllOrNothing(t *testing.T) {
	a := mustAdd(t, "a.dss", sDesc, c1, c2)
	b := mustAdd(t, "b.dss",
		with(sDesc, func(d *frames.StreamDescriptor) { d.Label = nil }),
		with(c1, func(d *frames.ChannelDescriptor) { d.Content = frames.Bytes() }),
		c3, // would merge cleanly on its own
		with(c2, func(d *frames.ChannelDescriptor) { d.ID = 4 }),
	)
	before := dump(a)
	err := a.Merge(b)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("error = %v, want ErrConflict", err)
	}
	if n := strings.Count(err.Error(), "catalogfile: "); n != 3 {
		t.Errorf("want 3 conflicts reported, got %d:\n%v", n, err)
	}
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.NewStream == nil {
		t.Errorf("first conflict is not the stream's: %v", ce)
	}
	if diff := cmp.Diff(before, dump(a)); diff != "" {
		t.Errorf("a failed merge changed the catalog (-before +after):\n%s", diff)
	}
}

// TestReturnedDescriptorsAreCopies checks that callers cannot change the
// catalog through a returned or an added descriptor.
func TestReturnedDescriptorsAreCopies(t *testing.T) {
	label := "peers"
	desc := with(c3, func(d *frames.ChannelDescriptor) { d.Label = &label })
	c := mustAdd(t, "a.dss", desc, sDesc)
	label = "changed after add"
	e, _ := c.Lookup(sID, 3)
	*e.Descriptor.Label = "changed through Lookup"
	s, _ := c.Stream(sID)
	*s.Descriptor.Label = "changed through Stream"
	e, _ = c.Lookup(sID, 3)
	s, _ = c.Stream(sID)
	if *e.Descriptor.Label != "peers" || *s.Descriptor.Label != "trainer" {
		t.Errorf("labels now %q and %q", *e.Descriptor.Label, *s.Descriptor.Label)
	}
}

func TestZeroCatalog(t *testing.T) {
	var c Catalog
	if len(c.Streams()) != 0 || c.Channels(sID) != nil {
		t.Error("zero catalog not empty")
	}
	if _, ok := c.Lookup(sID, 1); ok {
		t.Error("zero catalog found a channel")
	}
	if err := c.AddChannel(c1, "x"); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Lookup(sID, 1); !ok {
		t.Error("zero catalog did not keep a channel")
	}
}

package catalogfile

import (
	"fmt"
	"hash/maphash"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// TestAdoptChannels: adopting a header's catalog makes the catalog that
// adding each descriptor makes, with the same result and error; a valid
// catalog of a stream with no channels yet becomes the catalog's storage
// itself, anything else is added a descriptor at a time.
func TestAdoptChannels(t *testing.T) {
	many := func(n int) []frames.ChannelDescriptor {
		out := make([]frames.ChannelDescriptor, n)
		for i := range out {
			out[i] = frames.ChannelDescriptor{Stream: sID, ID: frames.ChannelID(2*i + 1), Name: fmt.Sprintf("c%d", i), Content: frames.TextStream()}
		}
		return out
	}
	edit := func(d []frames.ChannelDescriptor, f func([]frames.ChannelDescriptor)) []frames.ChannelDescriptor {
		d = slices.Clone(d)
		f(d)
		return d
	}
	for _, c := range []struct {
		name   string
		before []any // what the catalog holds first
		descs  []frames.ChannelDescriptor
		adopt  bool
	}{
		{"new stream", []any{sDesc}, many(100), true},
		{"none", []any{sDesc}, nil, true},
		{"one of each content", []any{sDesc}, []frames.ChannelDescriptor{c1, c2, c3}, true},
		{"undeclared stream", nil, many(3), false},
		{"channels held", []any{sDesc, c1}, []frames.ChannelDescriptor{c1, c2, c3}, false},
		{"out of order", []any{sDesc}, edit(many(5), func(d []frames.ChannelDescriptor) { d[1], d[2] = d[2], d[1] }), false},
		{"an id twice", []any{sDesc}, edit(many(5), func(d []frames.ChannelDescriptor) { d[2].ID = d[1].ID; d[2].Name = "x" }), false},
		{"a name twice", []any{sDesc}, edit(many(5), func(d []frames.ChannelDescriptor) { d[3].Name = d[1].Name }), false},
		{"id 0", []any{sDesc}, edit(many(5), func(d []frames.ChannelDescriptor) { d[0].ID = 0 }), false},
		{"no name", []any{sDesc}, edit(many(5), func(d []frames.ChannelDescriptor) { d[4].Name = "" }), false},
		{"other stream", []any{sDesc}, edit(many(5), func(d []frames.ChannelDescriptor) { d[2].Stream = bID }), false},
		{"bad content", []any{sDesc}, edit(many(5), func(d []frames.ChannelDescriptor) { d[2].Content.Kind = 99 }), false},
		{"a schema outside JsonRecord", []any{sDesc}, edit(many(5), func(d []frames.ChannelDescriptor) { d[2].Content.Schema = strPtr("s") }), false},
	} {
		want := mustAdd(t, "x", c.before...)
		wantChanged, wantErr := false, error(nil)
		for _, d := range c.descs {
			ch, err := want.addChannel(d, "h.dss")
			if err != nil {
				wantErr = err
				break
			}
			wantChanged = wantChanged || ch
		}
		got := mustAdd(t, "x", c.before...)
		descs := slices.Clone(c.descs)
		changed, err := got.AdoptChannels(sID, descs, "h.dss")
		if changed != wantChanged || fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Errorf("%s: %v, %v; AddChannel: %v, %v", c.name, changed, err, wantChanged, wantErr)
		}
		if diff := cmp.Diff(dump(want), dump(got)); diff != "" {
			t.Errorf("%s: (-AddChannel +AdoptChannels)\n%s", c.name, diff)
		}
		held := got.Descriptors(sID)
		if adopted := len(descs) > 0 && len(held) > 0 && &held[0] == &descs[0]; adopted != (c.adopt && len(descs) > 0) {
			t.Errorf("%s: adopted %v, want %v", c.name, adopted, c.adopt)
		}
		// The adopted catalog goes on as any other.
		if err := got.AddChannel(frames.ChannelDescriptor{Stream: sID, ID: 1000, Name: "c1", Content: frames.Bytes()}, "y"); c.name == "new stream" && err == nil {
			t.Errorf("%s: a name of the adopted catalog under another id was taken", c.name)
		}
		if e, ok := got.LookupName(sID, "c0"); c.adopt && len(descs) > 0 && c.name == "new stream" && (!ok || e.Descriptor.ID != 1) {
			t.Errorf("%s: LookupName c0: %v %v", c.name, e, ok)
		}
	}
}

// TestDescriptorsShared: Descriptors hands out the catalog's own slice
// (no copy), and what the catalog learns later does not change what it
// handed out, whether the new channel goes at the end or in the middle.
func TestDescriptorsShared(t *testing.T) {
	c := mustAdd(t, "x", sDesc, c1, c3)
	if n := testing.AllocsPerRun(10, func() { c.Descriptors(sID) }); n != 0 {
		t.Errorf("Descriptors allocated %v times", n)
	}
	d := c.Descriptors(sID)
	was := slices.Clone(d)
	for _, add := range []frames.ChannelDescriptor{
		{Stream: sID, ID: 9, Name: "end", Content: frames.Bytes()},
		c2, // between 1 and 3
	} {
		if err := c.AddChannel(add, "y"); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(was, d); diff != "" {
			t.Errorf("after adding %d, what Descriptors returned changed:\n%s", add.ID, diff)
		}
	}
	var ids []frames.ChannelID
	for _, e := range c.Descriptors(sID) {
		ids = append(ids, e.ID)
	}
	if !slices.Equal(ids, []frames.ChannelID{1, 2, 3, 9}) {
		t.Errorf("now %v", ids)
	}
}

// TestNameIndexCollision: a name whose hash another name took first is
// found through the index's own map, and a name the index does not hold
// is not found under another's hash.
func TestNameIndexCollision(t *testing.T) {
	names := map[frames.ChannelID]string{1: "a", 2: "b"}
	nameOf := func(id frames.ChannelID) string { return names[id] }
	x := nameIndex{seed: maphash.MakeSeed(), ids: map[uint64]frames.ChannelID{}}
	x.put("a", 1)
	// As if "b" hashed to "a"'s key: put finds the key taken.
	x.ids[maphash.String(x.seed, "b")] = 1
	x.put("b", 2)
	for _, c := range []struct {
		name string
		id   frames.ChannelID
		ok   bool
	}{{"a", 1, true}, {"b", 2, true}, {"c", 0, false}} {
		if id, ok := x.get(c.name, nameOf); id != c.id || ok != c.ok {
			t.Errorf("get %q: %d %v, want %d %v", c.name, id, ok, c.id, c.ok)
		}
	}
}

// TestGrow: room made for a header's catalog, the descriptors go in
// without the slices growing again; nothing the catalog holds changes,
// and an unknown stream is left unknown.
func TestGrow(t *testing.T) {
	c := mustAdd(t, "x", sDesc, c1)
	c.Grow(sID, 1000)
	c.Grow(bID, 1000)
	if len(c.Streams()) != 1 || c.Len(sID) != 1 {
		t.Fatalf("Grow changed the catalog: %v, %d channels", c.Streams(), c.Len(sID))
	}
	st := c.streams[sID]
	first := &st.descs[:1][0]
	for i := 2; i <= 1000; i++ {
		if err := c.AddChannel(frames.ChannelDescriptor{Stream: sID, ID: frames.ChannelID(i), Name: fmt.Sprint("c", i), Content: frames.Bytes()}, "x"); err != nil {
			t.Fatal(err)
		}
	}
	if &st.descs[0] != first {
		t.Error("the slice grew again")
	}
}

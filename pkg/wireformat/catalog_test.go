package wireformat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/google/go-cmp/cmp"
)

// TestFastCatalog: the fast catalog decoder answers for what ds writers
// write, equal to encoding/json's decoding, and gives up on anything else.
func TestFastCatalog(t *testing.T) {
	s := frames.StreamID{Node: "ci-7", Life: 1<<64 - 1}
	schema, label := "host.cpu", "peers é"
	good := []frames.ChannelDescriptor{
		{Stream: s, ID: 1, Name: "host.cpu", Content: frames.ChannelContent{Kind: frames.KindJSONRecord, Schema: &schema}},
		{Stream: s, ID: 4294967295, Name: "proc.x.stdout", Label: &label, Content: frames.TextStream()},
		{Stream: s, ID: 0, Name: "", Content: frames.Bytes()},
		{Stream: s, ID: 7, Name: "j", Content: frames.ChannelContent{Kind: frames.KindJSONRecord}},
	}
	for _, cat := range [][]frames.ChannelDescriptor{nil, {}, good, good[1:2]} {
		b, err := json.Marshal(cat)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := fastCatalog(nil, b, s)
		if !ok {
			t.Fatalf("%s: the fast path gave up on a writer's catalog", b)
		}
		var want []frames.ChannelDescriptor
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: (-json +fast)\n%s", b, diff)
		}
	}
	c := `{"stream":{"node":"ci-7","life":18446744073709551615},"id":1,"name":"%s","label":null,"content":"Bytes"}`
	for _, in := range []string{
		"", " []", "[ ]", "[", "[]x", "nul",
		"[" + fmt.Sprintf(c, `a\"b`) + "]",   // an escape
		"[" + fmt.Sprintf(c, "a\x01b") + "]", // a control character
		"[" + fmt.Sprintf(c, "a\xffb") + "]", // invalid UTF-8
		"[" + fmt.Sprintf(c, "a") + ",]",     // a trailing comma
		"[" + fmt.Sprintf(c, "a") + " ]",     // a space
		`[{"stream":{"node":"other","life":18446744073709551615},"id":1,"name":"a","label":null,"content":"Bytes"}]`,
		`[{"stream":{"node":"ci-7","life":18446744073709551616},"id":1,"name":"a","label":null,"content":"Bytes"}]`,
		`[{"stream":{"node":"ci-7","life":18446744073709551615},"id":4294967296,"name":"a","label":null,"content":"Bytes"}]`,
		`[{"stream":{"node":"ci-7","life":18446744073709551615},"id":01,"name":"a","label":null,"content":"Bytes"}]`,
		`[{"stream":{"node":"ci-7","life":18446744073709551615},"id":1.0,"name":"a","label":null,"content":"Bytes"}]`,
		`[{"stream":{"node":"ci-7","life":18446744073709551615},"name":"a","id":1,"label":null,"content":"Bytes"}]`,
		`[{"stream":{"node":"ci-7","life":18446744073709551615},"id":1,"name":"a","label":null,"content":"Other"}]`,
		`[{"stream":{"node":"ci-7","life":18446744073709551615},"id":1,"name":"a","label":null,"content":"Bytes","x":1}]`,
	} {
		if _, ok := fastCatalog(nil, []byte(in), s); ok {
			t.Errorf("%q: the fast path answered", in)
		}
	}
}

// FuzzFastCatalog: wherever the fast path answers, encoding/json decodes
// the same catalog to the same descriptors.
func FuzzFastCatalog(f *testing.F) {
	s := frames.StreamID{Node: "n", Life: 3}
	f.Add([]byte(`[{"stream":{"node":"n","life":3},"id":1,"name":"a","label":"b","content":{"JsonRecord":{"schema":"c"}}}]`))
	f.Add([]byte(`[{"stream":{"node":"n","life":3},"id":1,"name":"a","label":null,"content":"TextStream"},{"stream":{"node":"n","life":3},"id":2,"name":"é","label":null,"content":"Bytes"}]`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := fastCatalog(nil, b, s)
		if !ok {
			return
		}
		var want []frames.ChannelDescriptor
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("%q: the fast path answered, encoding/json: %v", b, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%q: (-json +fast)\n%s", b, diff)
		}
	})
}

// TestCatalogDecoderPieces: a catalog fed in two pieces, cut at every
// byte, decodes as it does whole, and what is not canonical is refused
// wherever it is cut.
func TestCatalogDecoderPieces(t *testing.T) {
	s := frames.StreamID{Node: "ci-7", Life: 1<<64 - 1}
	good, err := json.Marshal(plainCatalog(s, 6))
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Replace(bytes.Clone(good), []byte(`"id":8`), []byte(`"id":08`), 1)
	for _, c := range []struct {
		in []byte
		ok bool
	}{{good, true}, {[]byte("[]"), true}, {[]byte("null"), true}, {bad, false}, {good[:len(good)-1], false}, {append(bytes.Clone(good), ' '), false}} {
		want, wantOK := fastCatalog(nil, c.in, s)
		if wantOK != c.ok {
			t.Fatalf("%s: fastCatalog %v", c.in, wantOK)
		}
		for cut := range len(c.in) + 1 {
			d := catalogDecoder{stream: s}
			used, ok := d.feed(c.in[:cut], false)
			if ok {
				rest := c.in[used:]
				used, ok = d.feed(rest, true)
				ok = ok && used == len(rest) && d.state == catDone
			}
			if ok != c.ok {
				t.Fatalf("%s cut at %d: answered %v", c.in, cut, ok)
			}
			if ok {
				if diff := cmp.Diff(want, d.dst); diff != "" {
					t.Fatalf("%s cut at %d: (-whole +pieces)\n%s", c.in, cut, diff)
				}
			}
		}
	}
}

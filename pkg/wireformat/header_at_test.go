package wireformat

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/google/go-cmp/cmp"
)

// plainCatalog returns n descriptors of s as ds writers spell them
// without an escape (what the fast path decodes): names and labels of
// several lengths, UTF-8 included, every content class.
func plainCatalog(s frames.StreamID, n int) []frames.ChannelDescriptor {
	label, schema := "peers é", "host.cpu.v1"
	contents := []frames.ChannelContent{frames.Bytes(), frames.TextStream(), {Kind: frames.KindJSONRecord}, {Kind: frames.KindJSONRecord, Schema: &schema}}
	cat := make([]frames.ChannelDescriptor, n)
	for i := range cat {
		cat[i] = frames.ChannelDescriptor{Stream: s, ID: frames.ChannelID(i*7 + 1), Name: fmt.Sprintf("proc.job-%d.%s", i, strings.Repeat("ü", i%9)), Content: contents[i%len(contents)]}
		if i%3 == 1 {
			cat[i].Label = &label
		}
	}
	return cat
}

// TestParseHeaderAt: read a piece at a time, a header decodes to what
// ParseHeaderRepeats makes of the same bytes with the same memo (repeated
// catalogs included), for pieces of every size from one that holds only
// the fields before the catalog to one that holds the whole header; what
// it cannot decode that way (an escape in the catalog, damage) it refuses,
// leaving the memo as it was.
func TestParseHeaderAt(t *testing.T) {
	s1, s2 := frames.StreamID{Node: "n1", Life: 7}, frames.StreamID{Node: "n2", Life: 1<<64 - 1}
	header := func(s frames.StreamID, cat []frames.ChannelDescriptor, seq uint64) []byte {
		h := Header{SegmentID: [8]byte{byte(seq), 1}, Seq: seq, Writer: "ds test", Stream: frames.StreamDescriptor{Stream: s}, Channels: cat}
		b, err := AppendHeader(nil, &h)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	big := plainCatalog(s1, 3000) // about 250 KB: remembered by a memo
	seq := []struct {
		name   string
		b      []byte
		answer bool
	}{
		{"empty", header(s1, []frames.ChannelDescriptor{}, 0), true},
		{"nil", header(s1, nil, 1), true},
		{"one", header(s1, plainCatalog(s1, 1), 2), true},
		{"small", header(s2, plainCatalog(s2, 50), 3), true},
		{"big", header(s1, big, 4), true},
		{"big repeated", header(s1, big, 5), true},
		{"big, other stream", header(s2, plainCatalog(s2, 3000), 6), true},
		{"big again", header(s1, big, 7), true},
		{"big, one more", header(s1, append(big[:len(big):len(big)], plainCatalog(s1, 3001)[3000]), 8), true},
		{"escapes", header(s1, wideCatalog(s1, 3000), 9), false},
		{"big after escapes", header(s1, big, 10), true},
	}
	for _, piece := range []int{128, 129, 131, 200, 1000, 4096, 65536, HeaderPiece} {
		var mAt, mWhole CatalogMemo
		for _, c := range seq {
			before := mAt
			got, ok := parseHeaderAt(bytes.NewReader(c.b), 0, len(c.b), &mAt, piece)
			want, n, err := ParseHeaderRepeats(c.b, &mWhole)
			if err != nil || n != len(c.b) {
				t.Fatalf("%s: ParseHeaderRepeats: %v", c.name, err)
			}
			if !ok {
				if c.answer {
					t.Errorf("piece %d, %s: not answered", piece, c.name)
				}
				if mAt != before {
					t.Errorf("piece %d, %s: refused, but the memo changed", piece, c.name)
				}
				// The caller's fallback, on its memo.
				if got, _, err = ParseHeaderRepeats(c.b, &mAt); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("piece %d, %s: (-ParseHeaderRepeats +ParseHeaderAt):\n%s", piece, c.name, diff)
			}
		}
	}

	// At an offset of a larger input, and refused where the bytes are
	// not a whole, sound header.
	b := header(s2, plainCatalog(s2, 100), 11)
	in := append(append([]byte("leading bytes"), b...), "and a record"...)
	want, _, _ := ParseHeader(b)
	if got, ok := parseHeaderAt(bytes.NewReader(in), 13, len(b), nil, 256); !ok || !cmp.Equal(want, got) {
		t.Errorf("at offset 13: %v, %v", ok, cmp.Diff(want, got))
	}
	for _, c := range []struct {
		name string
		in   []byte
		off  int64
		n    int
	}{
		{"length too long", in, 13, len(b) + 1},
		{"length too short", in, 13, len(b) - 1},
		{"cut off", b[:len(b)-1], 0, len(b)},
		{"not at a header", in, 12, len(b)},
		{"CRC", append(bytes.Clone(b[:len(b)-4]), 0, 0, 0, 0), 0, len(b)},
	} {
		if _, ok := parseHeaderAt(bytes.NewReader(c.in), c.off, c.n, nil, 256); ok {
			t.Errorf("%s: answered", c.name)
		}
	}
	// Every byte changed, and the CRC made right again (damage a CRC
	// does not see, as a fuzzer would make): refused, or the answer of
	// ParseHeader.
	for i := HeaderPrefixSize; i < len(b)-4; i++ {
		d := bytes.Clone(b)
		d[i] ^= 0x20
		d = withHeaderCRC(d)
		want, n, err := ParseHeader(d)
		got, ok := parseHeaderAt(bytes.NewReader(d), 0, len(d), nil, 200)
		if ok && (err != nil || n != len(d) || !cmp.Equal(want, got)) {
			t.Fatalf("byte %d changed: ParseHeaderAt answered %v, ParseHeader: %v", i, got, err)
		}
	}
}

// TestParseHeaderAtMemory: a header of 8 MiB is decoded holding its
// descriptors and a piece or two, not the header's bytes.
func TestParseHeaderAtMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("100 000 descriptors")
	}
	s := frames.StreamID{Node: "wide", Life: 1}
	h := Header{Writer: "w", Stream: frames.StreamDescriptor{Stream: s}, Channels: plainCatalog(s, 100_000)}
	b, err := AppendHeader(nil, &h)
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got, ok := ParseHeaderAt(bytes.NewReader(b), 0, len(b), &CatalogMemo{})
	runtime.ReadMemStats(&after)
	if !ok || len(got.Channels) != len(h.Channels) {
		t.Fatalf("answered %v, %d channels", ok, len(got.Channels))
	}
	descriptors := uint64(len(got.Channels)) * uint64(unsafe.Sizeof(frames.ChannelDescriptor{}))
	large := largeAllocated(&before, &after)
	t.Logf("header of %d bytes: %d bytes in objects over 32 KiB (descriptors %d)", len(b), large, descriptors)
	if limit := descriptors + 2*HeaderPiece; large > limit {
		t.Errorf("%d bytes allocated in large objects, want at most the descriptors' slice and two pieces (%d)", large, limit)
	}
}

package wireformat

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// rawHeader builds a header with any version and body, and a correct CRC.
func rawHeader(major, minor byte, body []byte) []byte {
	b := append([]byte(Magic), major, minor)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(body)))
	b = append(b, body...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// headerBody builds a header body from raw fields.
func headerBody(id [8]byte, seq uint64, writer, stream, catalog string, extra ...byte) []byte {
	b := append([]byte(nil), id[:]...)
	b = binary.AppendUvarint(b, seq)
	b = appendString(b, writer)
	b = appendString(b, stream)
	b = appendString(b, catalog)
	return append(b, extra...)
}

const exStreamJSON = `{"stream":{"node":"n1","life":7},"label":null,"origin":"RemoteNode"}`

func TestParseHeader(t *testing.T) {
	label := "build"
	full := Header{
		Major: 1, Minor: MinorVersion, SegmentID: [8]byte{9, 8, 7, 6, 5, 4, 3, 2}, Seq: 300, Writer: "ds test",
		Stream: frames.StreamDescriptor{Stream: exStream, Label: &label, Origin: frames.OriginOrchestrator},
		Channels: []frames.ChannelDescriptor{
			exChannel,
			{Stream: exStream, ID: 2, Name: "host.cpu", Content: frames.JSONRecord("host.cpu")},
		},
	}
	fullBytes, err := AppendHeader(nil, &full)
	if err != nil {
		t.Fatal(err)
	}
	id := exHeader.SegmentID
	tests := []struct {
		name    string
		in      []byte
		want    Header
		wantN   int
		wantErr error
		wantMsg string
	}{
		{name: "full", in: fullBytes, want: full, wantN: len(fullBytes)},
		{name: "trailing input ignored", in: append(bytes.Clone(fullBytes), 1, 2, 3), want: full, wantN: len(fullBytes)},
		{
			name:  "newer minor with extra body fields",
			in:    rawHeader(1, 7, headerBody(id, 0, "ds 9", exStreamJSON, "[]", 0xAA, 0xBB)),
			want:  Header{Major: 1, Minor: 7, SegmentID: id, Writer: "ds 9", Stream: exHeader.Stream, Channels: []frames.ChannelDescriptor{}},
			wantN: HeaderOverhead + len(headerBody(id, 0, "ds 9", exStreamJSON, "[]", 0xAA, 0xBB)),
		},
		{
			name:  "null catalog",
			in:    rawHeader(1, 0, headerBody(id, 0, "", exStreamJSON, "null")),
			want:  Header{Major: 1, SegmentID: id, Stream: exHeader.Stream},
			wantN: HeaderOverhead + len(headerBody(id, 0, "", exStreamJSON, "null")),
		},
		{name: "empty input", in: nil, wantN: HeaderOverhead, wantErr: io.ErrUnexpectedEOF},
		{name: "magic prefix", in: []byte(Magic[:5]), wantN: HeaderOverhead, wantErr: io.ErrUnexpectedEOF},
		{name: "prefix without length", in: fullBytes[:12], wantN: HeaderOverhead, wantErr: io.ErrUnexpectedEOF},
		{name: "body cut", in: fullBytes[:40], wantN: len(fullBytes), wantErr: io.ErrUnexpectedEOF},
		{name: "crc cut", in: fullBytes[:len(fullBytes)-1], wantN: len(fullBytes), wantErr: io.ErrUnexpectedEOF},
		{name: "not dss", in: []byte("hello, world\n"), wantErr: ErrBadMagic},
		{name: "text-mode CRLF mangled", in: bytes.Replace(fullBytes, []byte("\r\n"), []byte("\n"), 1), wantErr: ErrBadMagic},
		{name: "high bit stripped", in: append([]byte{0x09}, fullBytes[1:]...), wantErr: ErrBadMagic},
		{name: "short non-magic", in: []byte{0x89, 'D', 'X'}, wantErr: ErrBadMagic},
		{name: "newer major", in: rawHeader(2, 0, []byte("whatever a v2 header holds")), wantErr: ErrUnknownVersion, wantMsg: "newer major version 2; upgrade ds"},
		{name: "newer major, short", in: []byte(Magic + "\x03"), wantErr: ErrUnknownVersion},
		{name: "major zero", in: rawHeader(0, 0, nil), wantErr: ErrUnknownVersion, wantMsg: "major version 0"},
		{name: "length over max", in: append([]byte(Magic), 1, 0, 0, 0, 0, 1), wantErr: ErrTooLarge},
		{name: "crc mismatch", in: flipByte(fullBytes, 30), wantErr: ErrChecksum},
		{name: "crc itself damaged", in: flipByte(fullBytes, len(fullBytes)-2), wantErr: ErrChecksum},
		{name: "no segment id", in: rawHeader(1, 0, []byte{1, 2, 3}), wantErr: ErrBadBody},
		{name: "bad sequence varint", in: rawHeader(1, 0, append(id[:], 0xFF, 0xFF)), wantErr: ErrBadBody},
		{name: "writer length past body", in: rawHeader(1, 0, append(id[:], 0, 50, 'x')), wantErr: ErrBadBody},
		{name: "missing stream", in: rawHeader(1, 0, append(id[:], 0, 0)), wantErr: ErrBadBody},
		{name: "bad stream json", in: rawHeader(1, 0, headerBody(id, 0, "", "{", "[]")), wantErr: ErrBadBody},
		{name: "missing catalog", in: rawHeader(1, 0, headerBody(id, 0, "", exStreamJSON, "")[:8+1+1+1+len(exStreamJSON)]), wantErr: ErrBadBody},
		{name: "bad catalog json", in: rawHeader(1, 0, headerBody(id, 0, "", exStreamJSON, `[{"id":"x"}]`)), wantErr: ErrBadBody},
		{
			name:    "catalog of another stream",
			in:      rawHeader(1, 0, headerBody(id, 0, "", exStreamJSON, `[{"stream":{"node":"n2","life":7},"id":1,"name":"x","label":null,"content":"Bytes"}]`)),
			wantErr: ErrWrongStream,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, n, err := ParseHeader(tt.in)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.wantMsg != "" && !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("err = %q, want it to say %q", err, tt.wantMsg)
			}
			if n != tt.wantN {
				t.Errorf("n = %d, want %d", n, tt.wantN)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("header (-want +got):\n%s", diff)
			}
		})
	}
}

func flipByte(b []byte, i int) []byte {
	b = bytes.Clone(b)
	b[i] ^= 0x40
	return b
}

func TestParseHeaderEveryPrefix(t *testing.T) {
	b, err := AppendHeader(nil, &exHeader)
	if err != nil {
		t.Fatal(err)
	}
	for i := range len(b) {
		_, n, err := ParseHeader(b[:i])
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("prefix %d: err = %v, want io.ErrUnexpectedEOF", i, err)
		}
		if n <= i {
			t.Fatalf("prefix %d: n = %d does not ask for more", i, n)
		}
		if i >= HeaderPrefixSize && n != len(b) {
			t.Fatalf("prefix %d: n = %d, want %d", i, n, len(b))
		}
	}
}

func TestAppendHeaderErrors(t *testing.T) {
	other := frames.StreamID{Node: "n2", Life: 7}
	tests := []struct {
		name    string
		h       Header
		wantErr error
	}{
		{name: "magic as segment id", h: Header{SegmentID: [8]byte([]byte(Magic)), Stream: exHeader.Stream}, wantErr: ErrMagicInHeader},
		{name: "channel of another stream", h: Header{Stream: exHeader.Stream, Channels: []frames.ChannelDescriptor{{Stream: other, ID: 1}}}, wantErr: ErrWrongStream},
		{name: "control character in writer", h: Header{Writer: "ds\r\n", Stream: exHeader.Stream}},
		{name: "writer not UTF-8", h: Header{Writer: "ds\xff", Stream: exHeader.Stream}},
		{name: "header too large", h: Header{Writer: strings.Repeat("w", MaxHeaderSize), Stream: exHeader.Stream}, wantErr: ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []byte("keep")
			got, err := AppendHeader(dst, &tt.h)
			if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if string(got) != "keep" {
				t.Errorf("dst changed to %q", got)
			}
			// CheckHeader finds the same, but the magic (it draws no id).
			err = CheckHeader(&tt.h)
			if errors.Is(tt.wantErr, ErrMagicInHeader) {
				if err != nil {
					t.Errorf("CheckHeader: %v, want nil", err)
				}
			} else if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Errorf("CheckHeader: %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// wideCatalog returns n descriptors of stream s spelled every way a
// catalog can be: JSON escapes, HTML characters, labels, schemas.
func wideCatalog(s frames.StreamID, n int) []frames.ChannelDescriptor {
	label, schema, odd := "a <b> & \"c\"", "host.cpu.v1", "line\u2028sep\x00\u00e9\U0001F600"
	contents := []frames.ChannelContent{frames.Bytes(), frames.TextStream(), {Kind: frames.KindJSONRecord}, {Kind: frames.KindJSONRecord, Schema: &schema}}
	cat := make([]frames.ChannelDescriptor, n)
	for i := range cat {
		cat[i] = frames.ChannelDescriptor{Stream: s, ID: frames.ChannelID(i + 1), Name: fmt.Sprintf("proc.job-%d.stdout", i), Content: contents[i%len(contents)]}
		switch i % 5 {
		case 1:
			cat[i].Label = &label
		case 2:
			cat[i].Name = odd
		}
	}
	return cat
}

// TestAppendHeaderSpelling: the catalog, encoded a descriptor at a time
// in place, is byte for byte what json.Marshal of the whole slice spells
// (as ds wrote it before), for catalogs empty, nil, small and wide, with
// the length prefix at each of its sizes (1 to 4 bytes).
func TestAppendHeaderSpelling(t *testing.T) {
	s := frames.StreamID{Node: "n<1>", Life: 7}
	for _, n := range []int{0, 1, 2, 5, 100, 1000, 20_000} {
		for _, nilCat := range []bool{false, true} {
			if nilCat && n > 0 {
				continue
			}
			h := Header{SegmentID: [8]byte{1, 2, 3}, Seq: 3, Writer: "ds test", Stream: frames.StreamDescriptor{Stream: s}, Channels: wideCatalog(s, n)}
			if nilCat {
				h.Channels = nil
			}
			got, err := AppendHeader([]byte("prefix"), &h)
			if err != nil {
				t.Fatalf("%d channels: %v", n, err)
			}
			want := oldAppendHeader(t, []byte("prefix"), &h)
			if !bytes.Equal(got, want) {
				t.Fatalf("%d channels (nil %v): %d bytes, want %d as json.Marshal spells them", n, nilCat, len(got), len(want))
			}
			back, size, err := ParseHeader(got[len("prefix"):])
			if err != nil || size != len(got)-len("prefix") || len(back.Channels) != n {
				t.Fatalf("%d channels: parsed back %d channels, size %d, %v", n, len(back.Channels), size, err)
			}
			if n > 0 && !cmp.Equal(back.Channels, h.Channels) {
				t.Fatalf("%d channels: parsed back other descriptors", n)
			}
			if err := CheckHeader(&h); err != nil {
				t.Fatalf("CheckHeader: %v", err)
			}
		}
	}
}

// oldAppendHeader is AppendHeader as it was, the catalog marshaled whole.
func oldAppendHeader(t *testing.T, dst []byte, h *Header) []byte {
	t.Helper()
	stream, err := json.Marshal(h.Stream)
	if err != nil {
		t.Fatal(err)
	}
	channels := h.Channels
	if channels == nil {
		channels = []frames.ChannelDescriptor{}
	}
	catalog, err := json.Marshal(channels)
	if err != nil {
		t.Fatal(err)
	}
	return append(dst, rawHeader(MajorVersion, MinorVersion, headerBody(h.SegmentID, h.Seq, h.Writer, string(stream), string(catalog)))...)
}

// TestAppendHeaderTooLargeAtTheEdge: a catalog whose body is just at
// MaxHeaderSize encodes; one byte more is ErrTooLarge, for AppendHeader
// and CheckHeader alike.
func TestAppendHeaderTooLargeAtTheEdge(t *testing.T) {
	s := frames.StreamID{Node: "n1", Life: 7}
	h := Header{Writer: "w", Stream: frames.StreamDescriptor{Stream: s}, Channels: []frames.ChannelDescriptor{{Stream: s, ID: 1, Content: frames.Bytes()}}}
	b, err := AppendHeader(nil, &h)
	if err != nil {
		t.Fatal(err)
	}
	body := len(b) - HeaderOverhead
	// A name that makes the body MaxHeaderSize: the catalog's length
	// prefix grows from 1 byte to 4 on the way.
	h.Channels[0].Name = strings.Repeat("x", MaxHeaderSize-body-3)
	if b, err = AppendHeader(nil, &h); err != nil {
		t.Fatal(err)
	}
	if got := len(b) - HeaderOverhead; got != MaxHeaderSize {
		t.Fatalf("body of %d bytes, want %d", got, MaxHeaderSize)
	}
	if err := CheckHeader(&h); err != nil {
		t.Fatalf("CheckHeader at the limit: %v", err)
	}
	h.Channels[0].Name += "x"
	if _, err := AppendHeader(nil, &h); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("one byte over: %v, want ErrTooLarge", err)
	}
	if err := CheckHeader(&h); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("CheckHeader one byte over: %v, want ErrTooLarge", err)
	}
}

// TestAppendHeaderMemory: encoding a catalog of 100 000 descriptors
// allocates about the header once (it marshaled the catalog whole, then
// copied it twice: 4× the header, 64 MB for a 16 MiB one), and checking
// it allocates next to nothing that lives.
func TestAppendHeaderMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("100 000 descriptors")
	}
	s := frames.StreamID{Node: "wide", Life: 1}
	h := Header{Writer: "w", Stream: frames.StreamDescriptor{Stream: s}, Channels: wideCatalog(s, 100_000)}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b, err := AppendHeader(nil, &h)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	size := len(b)
	// Every descriptor's json.Marshal allocates a small result, garbage
	// at once: only objects over 32 KiB count.
	large := largeAllocated(&before, &after)
	t.Logf("header of %d bytes: %d bytes allocated in objects over 32 KiB", size, large)
	if large > uint64(size)*5/4 {
		t.Errorf("%d bytes allocated in large objects for a header of %d, want at most 1.25×", large, size)
	}
}

// TestHeaderMagicOnlyAtStart checks the writer-side invariant for headers
// over many random ids: either the magic appears only at offset 0 or
// AppendHeader refuses.
func TestHeaderMagicOnlyAtStart(t *testing.T) {
	h := exHeader
	h.Channels = []frames.ChannelDescriptor{exChannel}
	for i := range 2000 {
		binary.LittleEndian.PutUint64(h.SegmentID[:], uint64(i)*0x9E3779B97F4A7C15)
		b, err := AppendHeader(nil, &h)
		if errors.Is(err, ErrMagicInHeader) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b[1:], []byte(Magic)) {
			t.Fatalf("id % x: magic inside header", h.SegmentID)
		}
	}
}

// TestParseHeaderRepeats: a large catalog that repeats, byte for byte and
// of the same stream, the last one decoded with the memo is not decoded
// again (CatalogRepeated, Channels nil); another catalog, another stream,
// a small catalog or a nil memo decode as ParseHeader does, and a catalog
// that fails to decode is not remembered.
func TestParseHeaderRepeats(t *testing.T) {
	s1, s2 := frames.StreamID{Node: "n1", Life: 7}, frames.StreamID{Node: "n2", Life: 7}
	label := "build"
	var origin frames.StreamOrigin // the next header's, and its label
	var labeled *string
	header := func(s frames.StreamID, channels int, seq uint64) []byte {
		h := Header{SegmentID: [8]byte{byte(seq)}, Seq: seq, Writer: "w", Stream: frames.StreamDescriptor{Stream: s, Origin: origin, Label: labeled}}
		for i := range channels {
			h.Channels = append(h.Channels, frames.ChannelDescriptor{Stream: s, ID: frames.ChannelID(i + 1), Name: strings.Repeat("c", 20) + string(rune('a'+i%26)), Content: frames.TextStream()})
		}
		b, err := AppendHeader(nil, &h)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var m CatalogMemo
	parse := func(b []byte, memo *CatalogMemo) Header {
		t.Helper()
		h, n, err := ParseHeaderRepeats(b, memo)
		if err != nil || n != len(b) {
			t.Fatalf("%v, %d of %d bytes", err, n, len(b))
		}
		return h
	}
	big, small := 2000, 10 // about 160 KB and 800 bytes of catalog
	for _, c := range []struct {
		name     string
		b        []byte
		memo     *CatalogMemo
		repeated bool
	}{
		{"first", header(s1, big, 0), &m, false},
		{"repeated", header(s1, big, 1), &m, true},
		{"again", header(s1, big, 2), &m, true},
		{"no memo", header(s1, big, 3), nil, false},
		{"other stream", header(s2, big, 4), &m, false},
		{"back to the first", header(s1, big, 5), &m, false},
		{"one channel more", header(s1, big+1, 6), &m, false},
		{"small", header(s1, small, 7), &m, false},
		{"small again", header(s1, small, 8), &m, false},
		{"big again", header(s1, big, 9), &m, false},
		{"big repeated", header(s1, big, 10), &m, true},
		// The same catalog under another descriptor of the stream (a
		// conflict, or what a view selects by) is decoded.
		{"labeled", func() []byte { labeled = &label; return header(s1, big, 11) }(), &m, false},
		{"labeled repeated", header(s1, big, 12), &m, true},
		{"other origin", func() []byte { origin = frames.StreamOrigin(1); return header(s1, big, 13) }(), &m, false},
		{"other origin repeated", header(s1, big, 14), &m, true},
	} {
		h := parse(c.b, c.memo)
		want, _, _ := ParseHeader(c.b)
		if h.CatalogRepeated != c.repeated {
			t.Errorf("%s: CatalogRepeated %v, want %v", c.name, h.CatalogRepeated, c.repeated)
		}
		if c.repeated {
			want.Channels, want.CatalogRepeated = nil, true
		}
		if diff := cmp.Diff(want, h); diff != "" {
			t.Errorf("%s: (-ParseHeader +ParseHeaderRepeats):\n%s", c.name, diff)
		}
	}
	// A catalog that does not decode is not remembered: the same bytes
	// again fail again, never pass as repeated.
	var bad CatalogMemo
	catalog := "[" + strings.Repeat(`{"stream":{"node":"n1","life":7},"id":1,"name":"x","label":null,"content":{"kind":"TextStream"}},`, 1000) + `{"id":}]`
	b := rawHeader(MajorVersion, MinorVersion, headerBody([8]byte{9}, 0, "w", exStreamJSON, catalog))
	for i := range 2 {
		if _, _, err := ParseHeaderRepeats(b, &bad); !errors.Is(err, ErrBadBody) {
			t.Errorf("bad catalog, try %d: %v, want ErrBadBody", i, err)
		}
	}
}

// largeAllocated returns the bytes allocated between two MemStats in
// objects larger than the largest size class (32 KiB).
func largeAllocated(before, after *runtime.MemStats) uint64 {
	small := uint64(0)
	for i := range after.BySize {
		small += uint64(after.BySize[i].Size) * (after.BySize[i].Mallocs - before.BySize[i].Mallocs)
	}
	return after.TotalAlloc - before.TotalAlloc - small
}

// TestWriteHeader: WriteHeader writes what AppendHeader appends, byte for
// byte, for catalogs of every size and for many segment ids (ErrMagicInHeader
// for the same ids, with nothing written), in pieces of about 64 KiB;
// its errors are AppendHeader's, and a writer's error is returned with the
// bytes that reached it.
func TestWriteHeader(t *testing.T) {
	s := frames.StreamID{Node: "n<1>", Life: 7}
	for _, n := range []int{0, 1, 7, 1000, 20_000} {
		h := Header{SegmentID: [8]byte{9, 8, 7}, Seq: 300, Writer: "ds test", Stream: frames.StreamDescriptor{Stream: s}, Channels: wideCatalog(s, n)}
		want, err := AppendHeader(nil, &h)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		pieces := 0
		w := writerFunc(func(p []byte) (int, error) {
			pieces++
			if len(p) > 128<<10 {
				t.Errorf("%d channels: a piece of %d bytes", n, len(p))
			}
			return out.Write(p)
		})
		written, _, err := WriteHeader(w, &h, nil)
		if err != nil || written != int64(len(want)) || !bytes.Equal(out.Bytes(), want) {
			t.Fatalf("%d channels: %d bytes (%v), want AppendHeader's %d", n, written, err, len(want))
		}
		t.Logf("%d channels: %d bytes in %d pieces", n, written, pieces)
	}
	// The magic: the same verdict as AppendHeader for 2000 ids.
	h := exHeader
	h.Channels = []frames.ChannelDescriptor{exChannel}
	refused := 0
	for i := range 2000 {
		binary.LittleEndian.PutUint64(h.SegmentID[:], uint64(i)*0x9E3779B97F4A7C15)
		h.Seq = uint64(i) * 0x1A0A
		want, werr := AppendHeader(nil, &h)
		var out bytes.Buffer
		n, _, err := WriteHeader(&out, &h, nil)
		if !errors.Is(err, werr) && (err != nil || werr != nil) {
			t.Fatalf("id % x: WriteHeader %v, AppendHeader %v", h.SegmentID, err, werr)
		}
		if werr != nil {
			refused++
			if n != 0 || out.Len() != 0 {
				t.Fatalf("id % x: refused after writing %d bytes", h.SegmentID, n)
			}
		} else if !bytes.Equal(out.Bytes(), want) {
			t.Fatalf("id % x: bytes differ", h.SegmentID)
		}
	}
	t.Logf("%d of 2000 ids refused for the magic", refused)
	// An id that spells the magic is refused by both.
	h.SegmentID = [8]byte([]byte(Magic))
	if _, _, err := WriteHeader(io.Discard, &h, nil); !errors.Is(err, ErrMagicInHeader) {
		t.Errorf("magic as segment id: %v", err)
	}
	// Errors found before writing, as AppendHeader's.
	for _, bad := range []Header{
		{Writer: "ds\n", Stream: exHeader.Stream},
		{Stream: exHeader.Stream, Channels: []frames.ChannelDescriptor{{Stream: frames.StreamID{Node: "other"}, ID: 1}}},
		{Writer: "w", Stream: exHeader.Stream, Channels: []frames.ChannelDescriptor{{Stream: exHeader.Stream.Stream, ID: 1, Name: strings.Repeat("x", MaxHeaderSize)}}},
	} {
		var out bytes.Buffer
		_, aerr := AppendHeader(nil, &bad)
		n, _, err := WriteHeader(&out, &bad, nil)
		if err == nil || aerr == nil || n != 0 || out.Len() != 0 {
			t.Errorf("%q: WriteHeader %v after %d bytes, AppendHeader %v", bad.Writer, err, n, aerr)
		}
	}
	// A writer that fails midway: its error, and what reached it.
	h = Header{Writer: "w", Stream: frames.StreamDescriptor{Stream: s}, Channels: wideCatalog(s, 5000)}
	fail := errors.New("disk on fire")
	got := 0
	n, _, err := WriteHeader(writerFunc(func(p []byte) (int, error) {
		if got+len(p) > 100_000 {
			k := 100_000 - got
			got += k
			return k, fail
		}
		got += len(p)
		return len(p), nil
	}), &h, nil)
	if !errors.Is(err, fail) || n != 100_000 {
		t.Errorf("failing writer: %d bytes, %v; want 100000 and its error", n, err)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestCheckHeaderStart: the start of a header, cut anywhere from its
// catalog's first byte on, checks, with the body length; cut before,
// it is io.ErrUnexpectedEOF; a damaged magic, version, length, writer
// identity, stream descriptor or catalog length does not check.
func TestCheckHeaderStart(t *testing.T) {
	s := frames.StreamID{Node: "n1", Life: 3}
	h := Header{SegmentID: [8]byte{1}, Seq: 2, Writer: "ds test", Stream: frames.StreamDescriptor{Stream: s}, Channels: wideCatalog(s, 20)}
	b, err := AppendHeader(nil, &h)
	if err != nil {
		t.Fatal(err)
	}
	catalog := bytes.IndexByte(b, '[')
	for n := range len(b) + 1 {
		size, err := CheckHeaderStart(b[:n])
		switch {
		case n > catalog && (err != nil || size != len(b)-HeaderOverhead):
			t.Fatalf("cut to %d bytes (catalog at %d): %d, %v", n, catalog, size, err)
		case n <= catalog && err != io.ErrUnexpectedEOF:
			t.Fatalf("cut to %d bytes, before the catalog at %d: %v, want io.ErrUnexpectedEOF", n, catalog, err)
		}
	}
	stream := bytes.Index(b, []byte(`{"stream"`))
	for _, tc := range []struct {
		name string
		at   int
		to   byte
	}{
		{"magic", 1, 'X'},
		{"version", 8, 2},
		{"length", 13, 0x7F},
		{"writer identity", bytes.Index(b, []byte("ds test")), 0x07},
		{"stream descriptor", stream, 'x'},
		{"catalog length", catalog - 1, 0x7F},
		{"catalog", catalog, '{'},
	} {
		d := bytes.Clone(b)
		d[tc.at] = tc.to
		if _, err := CheckHeaderStart(d[:catalog+10]); err == nil || err == io.ErrUnexpectedEOF {
			t.Errorf("%s damaged: %v, want an error of the header", tc.name, err)
		}
	}
}

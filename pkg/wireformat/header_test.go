package wireformat

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
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
		})
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

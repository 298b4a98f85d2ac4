package wireformat

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ds-telemetry/ds/pkg/frames"
)

const testSeed = 0x46891F81 // Seed of exHeader

// rawRecord builds a record with any tag and stored body, and a correct CRC
// under seed.
func rawRecord(seed uint32, tag byte, stored []byte) []byte {
	b := []byte{tag, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(b[1:], uint32(len(stored)))
	b = append(b, stored...)
	return binary.LittleEndian.AppendUint32(b, crc32.Update(seed, castagnoli, b))
}

func TestRecordTypeClasses(t *testing.T) {
	for i := range 256 {
		typ := RecordType(i)
		valid := typ.Valid()
		classes := 0
		for _, c := range []bool{typ.Known(), typ.Reserved(), typ.Experimental()} {
			if c {
				classes++
			}
		}
		switch {
		case valid && classes != 1:
			t.Errorf("%v: valid type in %d classes", typ, classes)
		case !valid && (typ.Known() || typ.Reserved()):
			t.Errorf("%v: invalid type is known or reserved", typ)
		}
		wantValid := i != 0 && i < 0x80 && i != 0x09 && i != 0x0A && i != 0x0D && i != 0x1A
		if valid != wantValid {
			t.Errorf("%v.Valid() = %v, want %v", typ, valid, wantValid)
		}
	}
	for typ, want := range map[RecordType]string{TypeFrame: "Frame", TypeTrimmed: "Trimmed", TypeHeaderCopy: "HeaderCopy", 0x08: "Reserved(0x08)", TypeSummary: "SegmentSummary", 0x40: "Experimental(0x40)", 0x89: "RecordType(0x89)", 0x0A: "RecordType(0x0a)"} {
		if got := typ.String(); got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
}

func TestRecordRoundTrip(t *testing.T) {
	tests := []struct {
		name        string
		rec         Record
		wantEscaped bool
	}{
		{name: "empty stream ended", rec: Record{Type: TypeStreamEnded}},
		{name: "frame body", rec: Record{Type: TypeFrame, Body: AppendFrameBody(nil, exFrame)}},
		{name: "lone 0x89 bytes are not escaped", rec: Record{Type: TypeFrame, Body: []byte{1, 2, 0x89, 0x89, 'D', 'S', 'S', 0x89}}},
		{name: "magic in body", rec: Record{Type: TypeFrame, Body: append([]byte{1, 2}, Magic...)}, wantEscaped: true},
		{name: "magic twice and 89 at end", rec: Record{Type: TypeFrame, Body: []byte{1, 2, 0x89, 0x00, 0x89, 'D', 'S', 'S', '\r', '\n', 0x1A, '\n', 0x89, 'D', 'S', 'S', '\r', '\n', 0x1A, '\n', 0x89}}, wantEscaped: true},
		{name: "reserved", rec: Record{Type: 0x06, Body: []byte("future")}},
		{name: "experimental with magic", rec: Record{Type: 0x7F, Body: []byte("x" + Magic)}, wantEscaped: true},
		{name: "stream ended with extra body", rec: Record{Type: TypeStreamEnded, Body: []byte{1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := AppendRecord([]byte("prefix"), testSeed, tt.rec)
			if err != nil {
				t.Fatal(err)
			}
			if string(b[:6]) != "prefix" {
				t.Fatalf("AppendRecord overwrote dst")
			}
			b = b[6:]
			if i := bytes.Index(b, []byte(Magic)); i >= 0 {
				t.Errorf("encoded record holds the magic at %d: % X", i, b)
			}
			got, n, err := ParseRecord(append(b, "trailing"...), testSeed, 0)
			if err != nil {
				t.Fatal(err)
			}
			if n != len(b) {
				t.Errorf("n = %d, want %d", n, len(b))
			}
			want := tt.rec
			want.Escaped = tt.wantEscaped
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("record (-want +got):\n%s", diff)
			}
			if _, _, err := ParseRecord(b, testSeed+1, 0); !errors.Is(err, ErrChecksum) {
				t.Errorf("under another seed: err = %v, want ErrChecksum", err)
			}
		})
	}
}

func TestParseRecordErrors(t *testing.T) {
	frame, err := AppendFrame(nil, testSeed, exFrame)
	if err != nil {
		t.Fatal(err)
	}
	big := []byte{byte(TypeFrame), 0, 0, 0x50, 0} // 5 MiB
	tests := []struct {
		name    string
		in      []byte
		max     int
		wantN   int
		wantErr error
	}{
		{name: "empty", in: nil, wantN: RecordOverhead, wantErr: io.ErrUnexpectedEOF},
		{name: "tag only", in: frame[:1], wantN: RecordOverhead, wantErr: io.ErrUnexpectedEOF},
		{name: "length cut", in: frame[:4], wantN: RecordOverhead, wantErr: io.ErrUnexpectedEOF},
		{name: "body cut", in: frame[:7], wantN: len(frame), wantErr: io.ErrUnexpectedEOF},
		{name: "crc cut", in: frame[:len(frame)-1], wantN: len(frame), wantErr: io.ErrUnexpectedEOF},
		{name: "zero fill", in: make([]byte, 32), wantErr: ErrBadTag},
		{name: "escaped type zero", in: rawRecord(testSeed, 0x80, nil), wantErr: ErrBadTag},
		{name: "type 09 (tag 89)", in: rawRecord(testSeed, 0x89, nil), wantErr: ErrBadTag},
		{name: "type 0A", in: rawRecord(testSeed, 0x0A, nil), wantErr: ErrBadTag},
		{name: "type 0D", in: rawRecord(testSeed, 0x0D, nil), wantErr: ErrBadTag},
		{name: "type 1A escaped", in: rawRecord(testSeed, 0x9A, nil), wantErr: ErrBadTag},
		{name: "over default max, before reading body", in: big, wantErr: ErrTooLarge},
		{name: "over max option", in: frame, max: 3, wantErr: ErrTooLarge},
		{name: "top length byte set", in: []byte{byte(TypeFrame), 0, 0, 0, 1}, max: math.MaxInt, wantErr: ErrTooLarge},
		{name: "crc mismatch", in: flipByte(frame, 7), wantErr: ErrChecksum},
		{name: "tag changed", in: append([]byte{byte(TypeStreamEnded)}, frame[1:]...), wantErr: ErrChecksum},
		{name: "escape followed by other byte", in: rawRecord(testSeed, 0x82, []byte{1, 0, 0x89, 0x01}), wantN: 13, wantErr: ErrBadEscape},
		{name: "escape at end of body", in: rawRecord(testSeed, 0x82, []byte{1, 0, 0x89}), wantN: 12, wantErr: ErrBadEscape},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, n, err := ParseRecord(tt.in, testSeed, tt.max)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if n != tt.wantN {
				t.Errorf("n = %d, want %d", n, tt.wantN)
			}
		})
	}
}

func TestAppendRecordErrors(t *testing.T) {
	tests := []struct {
		name    string
		rec     Record
		wantErr error
	}{
		{name: "type zero", rec: Record{}, wantErr: ErrBadTag},
		{name: "type 0x0D", rec: Record{Type: 0x0D}, wantErr: ErrBadTag},
		{name: "type with bit 7", rec: Record{Type: 0x82}, wantErr: ErrBadTag},
		{name: "body over max", rec: Record{Type: 0x40, Body: make([]byte, DefaultMaxRecordSize+1)}, wantErr: ErrTooLarge},
		{name: "escaped body over max", rec: Record{Type: 0x40, Body: bytes.Repeat([]byte(Magic), DefaultMaxRecordSize/8)}, wantErr: ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := AppendRecord([]byte("keep"), testSeed, tt.rec)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if string(got) != "keep" {
				t.Errorf("dst = %.20q, want it unchanged", got)
			}
		})
	}
	if _, err := AppendFrame(nil, testSeed, frames.Frame{Payload: make([]byte, MaxPayloadSize+1)}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("AppendFrame of a payload over MaxPayloadSize: err = %v, want ErrTooLarge", err)
	}
	if _, err := AppendFrame(nil, testSeed, frames.Frame{Payload: bytes.Repeat([]byte{0x89}, MaxPayloadSize)}); err != nil {
		t.Errorf("AppendFrame of MaxPayloadSize bytes of 0x89: %v", err)
	}
}

func TestFrameBody(t *testing.T) {
	tests := []struct {
		name    string
		in      []byte
		want    frames.Frame
		wantErr error
	}{
		{name: "minimal", in: []byte{0, 0}, want: frames.Frame{Payload: []byte{}}},
		{name: "large ids", in: AppendFrameBody(nil, frames.Frame{Channel: math.MaxUint32, Position: math.MaxUint64, Payload: []byte("p")}), want: frames.Frame{Channel: math.MaxUint32, Position: math.MaxUint64, Payload: []byte("p")}},
		{name: "empty", in: nil, wantErr: ErrBadBody},
		{name: "no position", in: []byte{1}, wantErr: ErrBadBody},
		{name: "channel over u32", in: binary.AppendUvarint(nil, math.MaxUint32+1), wantErr: ErrBadBody},
		{name: "varint overflow", in: bytes.Repeat([]byte{0xFF}, 11), wantErr: ErrBadBody},
		{name: "position varint cut", in: []byte{1, 0x80}, wantErr: ErrBadBody},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseFrameBody(tt.in)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("frame (-want +got):\n%s", diff)
			}
		})
	}
}

func TestChannelBody(t *testing.T) {
	schema := "host.cpu"
	d := frames.ChannelDescriptor{Stream: exStream, ID: 9, Name: "host.cpu", Label: &schema, Content: frames.JSONRecord(schema)}
	b, err := AppendChannelBody(nil, &d)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseChannelBody(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(d, got); diff != "" {
		t.Errorf("descriptor (-want +got):\n%s", diff)
	}
	// Version skew: unknown fields are ignored, missing ones defaulted.
	got, err = ParseChannelBody([]byte(`{"id":3,"name":"x","future":true}`))
	if err != nil || got.ID != 3 || got.Name != "x" || got.Content.Kind != frames.KindBytes {
		t.Errorf("skewed descriptor = %+v, %v", got, err)
	}
	if _, err := ParseChannelBody([]byte(`{"id":`)); !errors.Is(err, ErrBadBody) {
		t.Errorf("bad JSON: err = %v, want ErrBadBody", err)
	}
}

// TestMagicOnlyAtHeaderStarts checks the escaping invariant of
// ds-format(5) on random captures built from magic fragments: concatenated
// headers and records contain the magic only where a header starts.
func TestMagicOnlyAtHeaderStarts(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := [][]byte{
		[]byte(Magic), []byte(Magic[:1]), []byte(Magic[:2]), []byte(Magic[:3]), []byte(Magic[:5]),
		[]byte(Magic[1:]), []byte(Magic[4:]), []byte(Magic[5:]), {0x89, 0x00}, {0}, {0x0D}, {0x0A}, {0x1A},
	}
	randomBody := func() []byte {
		var b []byte
		for range rng.IntN(6) {
			if rng.IntN(3) == 0 {
				b = append(b, byte(rng.Uint32()))
			} else {
				b = append(b, pieces[rng.IntN(len(pieces))]...)
			}
		}
		return b
	}
	types := []RecordType{TypeChannelDeclared, TypeFrame, TypeStreamEnded, TypeSummary, 0x06, 0x3F, 0x40, 0x44, 0x53, 0x7F}
	iters := 20000
	if testing.Short() {
		iters = 2000
	}
	for i := range iters {
		var capture []byte
		var starts []int
		for range 1 + rng.IntN(3) {
			h := exHeader
			binary.LittleEndian.PutUint64(h.SegmentID[:], rng.Uint64())
			starts = append(starts, len(capture))
			var err error
			if capture, err = AppendHeader(capture, &h); err != nil {
				t.Fatal(err) // ErrMagicInHeader: 2^-50 per try
			}
			for range rng.IntN(5) {
				rec := Record{Type: types[rng.IntN(len(types))], Body: randomBody()}
				if capture, err = AppendRecord(capture, h.Seed(), rec); err != nil {
					t.Fatal(err)
				}
			}
			if rng.IntN(4) == 0 {
				capture = capture[:len(capture)-rng.IntN(10)] // a torn tail, then the next segment
			}
		}
		var found []int
		for off := 0; ; off++ {
			j := bytes.Index(capture[off:], []byte(Magic))
			if j < 0 {
				break
			}
			off += j
			found = append(found, off)
		}
		if diff := cmp.Diff(starts, found); diff != "" {
			t.Fatalf("iteration %d: magic offsets (-header starts +found):\n%s\n% X", i, diff, capture)
		}
	}
}

package wireformat

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// unhex decodes space-separated hex bytes, as ARCHITECTURE.md §8 writes them.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// legacyExample is the worked example of ARCHITECTURE.md cases 4: stream n1#7,
// position 2, channel 3, payload "hi".
const legacyExample = "02 00 00 00 6E 31 07 00 00 00 00 00 00 00 02 00 00 00 00 00 00 00 03 00 00 00 02 00 00 00 68 69"

var legacyExampleDelivery = frames.Delivery{
	Stream: frames.StreamID{Node: "n1", Life: 7},
	Frame:  frames.Frame{Channel: 3, Position: 2, Payload: []byte("hi")},
}

func TestAppendLegacyDeliveryExample(t *testing.T) {
	want := unhex(t, legacyExample)
	if len(want) != 32 {
		t.Fatalf("example is %d bytes, want 32", len(want))
	}
	got := AppendLegacyDelivery(nil, legacyExampleDelivery)
	if !bytes.Equal(got, want) {
		t.Errorf("AppendLegacyDelivery =\n% x\nwant\n% x", got, want)
	}
	prefix := []byte("keep")
	got = AppendLegacyDelivery(prefix, legacyExampleDelivery)
	if !bytes.Equal(got, append([]byte("keep"), want...)) {
		t.Errorf("AppendLegacyDelivery does not append after dst: % x", got)
	}
}

func TestDecodeLegacyDelivery(t *testing.T) {
	example := unhex(t, legacyExample)
	tests := []struct {
		name    string
		in      []byte
		want    frames.Delivery
		wantErr error
	}{
		{name: "worked example", in: example, want: legacyExampleDelivery},
		{
			name: "empty node and payload, max integers",
			in:   unhex(t, "00000000 ffffffffffffffff ffffffffffffffff ffffffff 00000000"),
			want: frames.Delivery{
				Stream: frames.StreamID{Node: "", Life: 1<<64 - 1},
				Frame:  frames.Frame{Channel: 1<<32 - 1, Position: 1<<64 - 1, Payload: []byte{}},
			},
		},
		{
			name: "payload bytes are never validated",
			in:   AppendLegacyDelivery(nil, frames.Delivery{Stream: frames.StreamID{Node: "n"}, Frame: frames.Frame{Payload: []byte{0xff, 0xfe, 0xc3, 0x28, 0x00}}}),
			want: frames.Delivery{Stream: frames.StreamID{Node: "n"}, Frame: frames.Frame{Payload: []byte{0xff, 0xfe, 0xc3, 0x28, 0x00}}},
		},
		{
			name: "multi-byte UTF-8 node",
			in:   AppendLegacyDelivery(nil, frames.Delivery{Stream: frames.StreamID{Node: "nœud-ü#1", Life: 3}}),
			want: frames.Delivery{Stream: frames.StreamID{Node: "nœud-ü#1", Life: 3}, Frame: frames.Frame{Payload: []byte{}}},
		},
		{name: "empty input", in: nil, wantErr: io.ErrUnexpectedEOF},
		{name: "node length FF FF FF FF alone", in: unhex(t, "FF FF FF FF"), wantErr: io.ErrUnexpectedEOF},
		{name: "node length past the end", in: append(unhex(t, "FF FF FF 7F"), example[4:]...), wantErr: io.ErrUnexpectedEOF},
		{name: "payload length past the end", in: append(example[:26:26], 0x03, 0x00, 0x00, 0x00, 0x68, 0x69), wantErr: io.ErrUnexpectedEOF},
		{name: "trailing byte", in: append(example[:32:32], 0x00), wantErr: ErrLegacyTrailingBytes},
		{name: "node C3 28 is not UTF-8", in: append(unhex(t, "02 00 00 00 C3 28"), example[6:]...), wantErr: ErrLegacyNodeUTF8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeLegacyDelivery(tt.in)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("DecodeLegacyDelivery(% x) error = %v, want %v", tt.in, err, tt.wantErr)
			}
			if tt.wantErr != nil {
				if !strings.HasPrefix(err.Error(), "wireformat: ") {
					t.Errorf("error %q lacks the package prefix", err)
				}
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("DecodeLegacyDelivery mismatch (-want +got):\n%s", diff)
			}
			if re := AppendLegacyDelivery(nil, got); !bytes.Equal(re, tt.in) {
				t.Errorf("re-encoded\n% x\nwant\n% x", re, tt.in)
			}
		})
	}
}

// TestDecodeLegacyDeliveryTruncated checks that every proper prefix of the
// worked example is reported as truncated (ARCHITECTURE.md cases 4).
func TestDecodeLegacyDeliveryTruncated(t *testing.T) {
	example := unhex(t, legacyExample)
	for i := range len(example) {
		_, err := DecodeLegacyDelivery(example[:i])
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("prefix of %d bytes: error = %v, want io.ErrUnexpectedEOF", i, err)
		}
	}
}

func TestDecodeLegacyDeliveryDoesNotAlias(t *testing.T) {
	in := unhex(t, legacyExample)
	d, err := DecodeLegacyDelivery(in)
	if err != nil {
		t.Fatal(err)
	}
	in[len(in)-1] = 'X'
	if string(d.Frame.Payload) != "hi" {
		t.Errorf("payload changed with the input: %q", d.Frame.Payload)
	}
}

func FuzzLegacyDelivery(f *testing.F) {
	f.Add(unhex(f, legacyExample))
	f.Add(unhex(f, "FF FF FF FF"))
	f.Add(unhex(f, "02 00 00 00 C3 28"))
	f.Add(append(unhex(f, legacyExample), 0))
	f.Add(AppendLegacyDelivery(nil, frames.Delivery{}))
	f.Fuzz(func(t *testing.T, in []byte) {
		d, err := DecodeLegacyDelivery(in)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "wireformat: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
			return
		}
		// The envelope has exactly one encoding of each delivery.
		re := AppendLegacyDelivery(nil, d)
		if !bytes.Equal(re, in) {
			t.Fatalf("re-encoded\n% x\nwant\n% x", re, in)
		}
		d2, err := DecodeLegacyDelivery(re)
		if err != nil {
			t.Fatalf("re-encoded delivery does not decode: %v", err)
		}
		if diff := cmp.Diff(d, d2, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("re-decoded delivery differs (-first +second):\n%s", diff)
		}
	})
}

func BenchmarkDecodeLegacyDelivery(b *testing.B) {
	in := AppendLegacyDelivery(nil, frames.Delivery{
		Stream: frames.StreamID{Node: "node-alpha", Life: 1},
		Frame:  frames.Frame{Channel: 2, Position: 99, Payload: bytes.Repeat([]byte("x"), 100)},
	})
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if _, err := DecodeLegacyDelivery(in); err != nil {
			b.Fatal(err)
		}
	}
}

package wireformat

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// The notation of ARCHITECTURE.md §8: stream S = node-alpha#1 and its channels.
var (
	dsq1S      = frames.StreamID{Node: "node-alpha", Life: 1}
	dsq1Flow   = [16]byte{0: 0xf1, 15: 0x0f}
	dsq1Token  = []byte("tok")
	dsq1Stream = frames.StreamDescriptor{Stream: dsq1S, Origin: frames.OriginBootstrap}
	dsq1C1     = frames.ChannelDescriptor{Stream: dsq1S, ID: 1, Name: "host.resource", Content: frames.JSONRecord("host.resource")}
	dsq1C2     = frames.ChannelDescriptor{Stream: dsq1S, ID: 2, Name: "proc.trainer.stdout", Content: frames.TextStream()}
)

// dsq1AlphaRecord is the worked example of ARCHITECTURE.md cases 4: the frame
// (channel 1, position 0, "alpha").
const dsq1AlphaRecord = "16 00 00 00 02 01 00 00 00 00 00 00 00 00 00 00 00 05 00 00 00 61 6C 70 68 61"

func dsq1Frame(ch frames.ChannelID, pos frames.Position, payload string) frames.Event {
	return frames.FrameEvent(frames.FrameDelivery{
		Channel:  frames.ChannelRef{Stream: dsq1S, Channel: ch},
		Position: pos,
		Payload:  []byte(payload),
	})
}

// dsq1Header returns the header of S with channel C1 declared.
func dsq1Header(t testing.TB) []byte {
	t.Helper()
	b, err := AppendDSQ1Header(nil, dsq1Flow, dsq1Token, dsq1Stream, []frames.ChannelDescriptor{dsq1C1})
	if err != nil {
		t.Fatalf("AppendDSQ1Header: %v", err)
	}
	return b
}

// dsq1Records encodes events as records.
func dsq1Records(t testing.TB, evs ...frames.Event) []byte {
	t.Helper()
	var b []byte
	for _, ev := range evs {
		var err error
		if b, err = AppendDSQ1Record(b, ev); err != nil {
			t.Fatalf("AppendDSQ1Record(%v): %v", ev.Kind, err)
		}
	}
	return b
}

// concat joins byte slices into a new one.
func concat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// le32 is a u32 length prefix.
func le32(n uint32) []byte { return binary.LittleEndian.AppendUint32(nil, n) }

// prefixed is s after its u32 length.
func prefixed(s string) []byte { return append(le32(uint32(len(s))), s...) }

// readAllDSQ1 decodes a whole stream: the reader (nil if the header failed),
// every event before the first error, and that error (io.EOF at a clean end).
func readAllDSQ1(in []byte) (*DSQ1Reader, []frames.Event, error) {
	r, err := NewDSQ1Reader(bytes.NewReader(in))
	if err != nil {
		return nil, nil, err
	}
	var evs []frames.Event
	for {
		ev, err := r.Next()
		if err != nil {
			return r, evs, err
		}
		evs = append(evs, ev)
	}
}

func TestAppendDSQ1RecordExample(t *testing.T) {
	want := unhex(t, dsq1AlphaRecord)
	got, err := AppendDSQ1Record(nil, dsq1Frame(1, 0, "alpha"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("AppendDSQ1Record =\n% x\nwant\n% x", got, want)
	}
}

func TestDSQ1Header(t *testing.T) {
	hdr := dsq1Header(t)
	if !bytes.HasPrefix(hdr, unhex(t, "44 53 51 31 f1 00 00 00 00 00 00 00 00 00 00 00 00 00 00 0f 03 00 74 6f 6b")) {
		t.Fatalf("header starts % x", hdr[:min(len(hdr), 25)])
	}
	// The JSON documents are the seed spellings, each after a u32 length.
	wantStream := `{"stream":{"node":"node-alpha","life":1},"label":null,"origin":"Bootstrap"}`
	wantChannels := `[{"stream":{"node":"node-alpha","life":1},"id":1,"name":"host.resource","label":null,"content":{"JsonRecord":{"schema":"host.resource"}}}]`
	rest := hdr[25:]
	for _, want := range []string{wantStream, wantChannels} {
		n := binary.LittleEndian.Uint32(rest)
		if got := string(rest[4 : 4+n]); got != want {
			t.Errorf("header JSON = %s, want %s", got, want)
		}
		rest = rest[4+n:]
	}
	if len(rest) != 0 {
		t.Errorf("%d bytes after the header", len(rest))
	}

	r, err := NewDSQ1Reader(bytes.NewReader(hdr))
	if err != nil {
		t.Fatal(err)
	}
	if r.FlowID != dsq1Flow || string(r.Token) != "tok" {
		t.Errorf("flow id % x token %q", r.FlowID, r.Token)
	}
	if diff := cmp.Diff(dsq1Stream, r.Stream); diff != "" {
		t.Errorf("Stream (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]frames.ChannelDescriptor{dsq1C1}, r.Channels); diff != "" {
		t.Errorf("Channels (-want +got):\n%s", diff)
	}
	wantEvents := []frames.Event{frames.StreamDeclaredEvent(dsq1Stream), frames.ChannelDeclaredEvent(dsq1C1)}
	if diff := cmp.Diff(wantEvents, r.HeaderEvents()); diff != "" {
		t.Errorf("HeaderEvents (-want +got):\n%s", diff)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("Next after a bare header = %v, want io.EOF", err)
	}
}

func TestDSQ1HeaderEmptyTokenNoChannels(t *testing.T) {
	hdr, err := AppendDSQ1Header(nil, [16]byte{}, nil, frames.StreamDescriptor{Stream: dsq1S}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(hdr, []byte("\x02\x00\x00\x00[]")) {
		t.Errorf("nil channels not written as []: % x", hdr)
	}
	r, err := NewDSQ1Reader(bytes.NewReader(hdr))
	if err != nil {
		t.Fatal(err)
	}
	if r.Token == nil || len(r.Token) != 0 || len(r.Channels) != 0 {
		t.Errorf("token %#v channels %#v", r.Token, r.Channels)
	}
}

// TestDSQ1Reader covers every case of ARCHITECTURE.md cases 4 for the DSQ1 stream,
// plus ds's stricter rules.
func TestDSQ1Reader(t *testing.T) {
	hdr := dsq1Header(t)
	alpha := unhex(t, dsq1AlphaRecord)
	declC2 := dsq1Records(t, frames.ChannelDeclaredEvent(dsq1C2))
	ended := dsq1Records(t, frames.StreamEndedEvent(dsq1S))
	// A header whose stream JSON or channel JSON claims 16 MiB + 1 bytes.
	hdrStart := hdr[:4+16+2+len(dsq1Token)]
	tooLarge := le32(MaxDSQ1JSONSize + 1)
	const streamJSON = `{"stream":{"node":"node-alpha","life":1}}`
	otherStream := frames.StreamID{Node: "node-beta", Life: 1}

	tests := []struct {
		name       string
		in         []byte
		want       []frames.Event
		wantErr    error // from Next after want, or from NewDSQ1Reader; io.EOF for a clean end
		wantHdrErr bool  // the error comes from NewDSQ1Reader
	}{
		{name: "header only", in: hdr, wantErr: io.EOF},
		{name: "worked example frame", in: concat(hdr, alpha), want: []frames.Event{dsq1Frame(1, 0, "alpha")}, wantErr: io.EOF},
		{
			name: "declare, frames, end",
			in: concat(hdr, declC2, alpha, dsq1Records(t,
				dsq1Frame(2, 1, "hello\n"), dsq1Frame(3, 2, "peer moved"), dsq1Frame(99, 3, ""),
				frames.StreamDeclaredEvent(dsq1Stream), // writes nothing, as in the original
			), ended),
			want: []frames.Event{
				frames.ChannelDeclaredEvent(dsq1C2), dsq1Frame(1, 0, "alpha"),
				dsq1Frame(2, 1, "hello\n"), dsq1Frame(3, 2, "peer moved"), dsq1Frame(99, 3, ""),
				frames.StreamEndedEvent(dsq1S),
			},
			wantErr: io.EOF,
		},
		{
			name:    "records after StreamEnded are returned",
			in:      concat(hdr, ended, alpha),
			want:    []frames.Event{frames.StreamEndedEvent(dsq1S), dsq1Frame(1, 0, "alpha")},
			wantErr: io.EOF,
		},
		{
			name:    "descriptor JSON: unknown fields ignored, missing fields defaulted",
			in:      concat(hdr, prefixed("\x01"+`{"stream":{"node":"node-alpha","life":1},"id":7,"x":1}`)),
			want:    []frames.Event{frames.ChannelDeclaredEvent(frames.ChannelDescriptor{Stream: dsq1S, ID: 7})},
			wantErr: io.EOF,
		},

		// Header errors.
		{name: "empty input", in: nil, wantErr: io.ErrUnexpectedEOF, wantHdrErr: true},
		{name: "wrong magic", in: concat([]byte("DSQ2"), hdr[4:]), wantErr: ErrDSQ1Magic, wantHdrErr: true},
		{name: "DSS magic", in: []byte("DSS\x00\x01 not dsq1"), wantErr: ErrDSQ1Magic, wantHdrErr: true},
		{name: "wrong partial magic", in: []byte("DX"), wantErr: ErrDSQ1Magic, wantHdrErr: true},
		{name: "partial magic", in: []byte("DS"), wantErr: io.ErrUnexpectedEOF, wantHdrErr: true},
		{name: "stream JSON over 16 MiB", in: concat(hdrStart, tooLarge), wantErr: ErrDSQ1TooLarge, wantHdrErr: true},
		{
			name:    "channel JSON over 16 MiB",
			in:      concat(hdrStart, prefixed(streamJSON), tooLarge),
			wantErr: ErrDSQ1TooLarge, wantHdrErr: true,
		},
		{name: "stream JSON not JSON", in: concat(hdrStart, prefixed("{x}")), wantErr: ErrDSQ1Descriptor, wantHdrErr: true},
		{
			name:    "stream JSON with unknown origin",
			in:      concat(hdrStart, prefixed(`{"origin":"x"}`)),
			wantErr: ErrDSQ1Descriptor, wantHdrErr: true,
		},
		{
			name:    "channel JSON not an array",
			in:      concat(hdrStart, prefixed(streamJSON), prefixed("{}")),
			wantErr: ErrDSQ1Descriptor, wantHdrErr: true,
		},
		{
			name:    "header channel of another stream",
			in:      concat(hdrStart, prefixed(streamJSON), prefixed(`[{"stream":{"node":"node-beta","life":1}}]`)),
			wantErr: ErrDSQ1StreamMismatch, wantHdrErr: true,
		},

		// Record errors.
		{name: "record length 0", in: concat(hdr, alpha, le32(0), ended), want: []frames.Event{dsq1Frame(1, 0, "alpha")}, wantErr: ErrDSQ1EmptyRecord},
		{name: "frame body of 16 bytes", in: concat(hdr, le32(16), alpha[4:20]), wantErr: ErrDSQ1ShortRecord},
		{name: "frame body of 1 byte", in: concat(hdr, le32(1), []byte{2}), wantErr: ErrDSQ1ShortRecord},
		{name: "frame payload longer than body", in: concat(hdr, le32(21), alpha[4:]), wantErr: ErrDSQ1ShortRecord},
		{name: "frame body longer than payload", in: concat(hdr, le32(23), alpha[4:], []byte{0}), wantErr: ErrDSQ1TrailingBytes},
		{name: "StreamEnded with a trailing byte", in: concat(hdr, le32(2), []byte{3, 0}), wantErr: ErrDSQ1TrailingBytes},
		{name: "unknown tag 04", in: concat(hdr, le32(1), []byte{4}, alpha), wantErr: ErrDSQ1Tag},
		{name: "tag 00", in: concat(hdr, le32(1), []byte{0}), wantErr: ErrDSQ1Tag},
		{name: "record over 64 MiB", in: concat(hdr, le32(MaxDSQ1RecordSize+1), []byte{2}), wantErr: ErrDSQ1TooLarge},
		{name: "ChannelDeclared JSON over 16 MiB", in: concat(hdr, le32(MaxDSQ1JSONSize+2), []byte{1}), wantErr: ErrDSQ1TooLarge},
		{name: "ChannelDeclared not JSON", in: concat(hdr, prefixed("\x01{x")), wantErr: ErrDSQ1Descriptor},
		{name: "ChannelDeclared with bad content", in: concat(hdr, prefixed("\x01"+`{"content":"x"}`)), wantErr: ErrDSQ1Descriptor},
		{
			name:    "ChannelDeclared of another stream",
			in:      concat(hdr, dsq1Records(t, frames.ChannelDeclaredEvent(frames.ChannelDescriptor{Stream: otherStream, ID: 1, Name: "x"}))),
			wantErr: ErrDSQ1StreamMismatch,
		},

		// Truncation: ds reports it, where the original saw a clean end.
		{name: "stops after 1 byte of a length prefix", in: concat(hdr, alpha, alpha[:1]), want: []frames.Event{dsq1Frame(1, 0, "alpha")}, wantErr: io.ErrUnexpectedEOF},
		{name: "stops after 3 bytes of a length prefix", in: concat(hdr, alpha[:3]), wantErr: io.ErrUnexpectedEOF},
		{name: "stops before the tag", in: concat(hdr, alpha[:4]), wantErr: io.ErrUnexpectedEOF},
		{name: "stops inside a frame header", in: concat(hdr, alpha[:10]), wantErr: io.ErrUnexpectedEOF},
		{name: "stops inside a payload", in: concat(hdr, alpha[:len(alpha)-1]), wantErr: io.ErrUnexpectedEOF},
		{name: "stops inside a ChannelDeclared", in: concat(hdr, declC2[:len(declC2)-1]), wantErr: io.ErrUnexpectedEOF},
		{name: "record of 64 MiB holding a 5-byte payload", in: concat(hdr, le32(MaxDSQ1RecordSize), alpha[4:21], []byte("ab")), wantErr: ErrDSQ1TrailingBytes},
		{name: "payload of 64 MiB − 17, few bytes", in: concat(hdr, le32(MaxDSQ1RecordSize), alpha[4:17], le32(MaxDSQ1RecordSize-17), []byte("ab")), wantErr: io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, got, err := readAllDSQ1(tt.in)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			}
			if (r == nil) != tt.wantHdrErr {
				t.Fatalf("header error = %v, want one: %v", r == nil, tt.wantHdrErr)
			}
			if err != io.EOF && !strings.HasPrefix(err.Error(), "wireformat: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
			if errors.Is(err, io.ErrUnexpectedEOF) && err == io.ErrUnexpectedEOF {
				t.Errorf("truncation error carries no context")
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if r == nil {
				return
			}
			// Errors are sticky.
			if _, err2 := r.Next(); err2 != err && !(err == io.EOF && err2 == io.EOF) {
				t.Errorf("second Next = %v, want the same %v", err2, err)
			}
		})
	}
}

// TestDSQ1ReaderErrorOffset checks that a bad record names its offset.
func TestDSQ1ReaderErrorOffset(t *testing.T) {
	hdr := dsq1Header(t)
	alpha := unhex(t, dsq1AlphaRecord)
	_, _, err := readAllDSQ1(concat(hdr, alpha, le32(1), []byte{4}))
	want := fmt.Sprintf("wireformat: unknown dsq1 record tag 0x04 (record at offset %d)", len(hdr)+len(alpha))
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %s", err, want)
	}
	_, _, err = readAllDSQ1(concat(hdr, alpha[:7]))
	want = fmt.Sprintf("wireformat: dsq1 record at offset %d: frame header: unexpected EOF", len(hdr))
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %s", err, want)
	}
}

// TestDSQ1ReaderTruncated reads every prefix of a valid stream: a cut inside
// the header fails NewDSQ1Reader, a cut at a record boundary is a clean end
// after the records before it, and any other cut yields io.ErrUnexpectedEOF
// after those same records.
func TestDSQ1ReaderTruncated(t *testing.T) {
	hdr := dsq1Header(t)
	all := []frames.Event{
		frames.ChannelDeclaredEvent(dsq1C2), dsq1Frame(1, 0, "alpha"), dsq1Frame(2, 1, ""),
		dsq1Frame(2, 2, "hello\n"), frames.StreamEndedEvent(dsq1S),
	}
	in := hdr
	bounds := map[int]int{len(in): 0} // stream length → complete records
	for i, ev := range all {
		rec := dsq1Records(t, ev)
		in = concat(in, rec)
		bounds[len(in)] = i + 1
	}
	for cut := range len(in) + 1 {
		r, got, err := readAllDSQ1(in[:cut])
		if cut < len(hdr) {
			if r != nil || !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("cut %d in header: error = %v, want io.ErrUnexpectedEOF from NewDSQ1Reader", cut, err)
			}
			continue
		}
		n, atBoundary := bounds[cut]
		if atBoundary {
			if err != io.EOF {
				t.Errorf("cut %d at a record boundary: error = %v, want io.EOF", cut, err)
			}
		} else {
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("cut %d inside a record: error = %v, want io.ErrUnexpectedEOF", cut, err)
			}
			for b, k := range bounds {
				if b < cut && k > n {
					n = k
				}
			}
		}
		if diff := cmp.Diff(all[:n], got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("cut %d: events (-want +got):\n%s", cut, diff)
		}
	}
}

// TestDSQ1ReaderSlowAndFailingInput reads through a reader that returns one
// byte at a time, and one that fails.
func TestDSQ1ReaderSlowAndFailingInput(t *testing.T) {
	in := concat(dsq1Header(t), unhex(t, dsq1AlphaRecord))
	r, err := NewDSQ1Reader(iotest.DataErrReader(iotest.OneByteReader(bytes.NewReader(in))))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(dsq1Frame(1, 0, "alpha"), ev); diff != "" {
		t.Errorf("event (-want +got):\n%s", diff)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("Next at the end = %v, want io.EOF", err)
	}

	boom := errors.New("boom")
	if _, err := NewDSQ1Reader(iotest.ErrReader(boom)); !errors.Is(err, boom) {
		t.Errorf("NewDSQ1Reader on a failing reader = %v, want %v", err, boom)
	}
	r, err = NewDSQ1Reader(io.MultiReader(bytes.NewReader(in[:len(in)-3]), iotest.ErrReader(boom)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); !errors.Is(err, boom) {
		t.Errorf("Next on a failing reader = %v, want %v", err, boom)
	}
}

// TestDSQ1ReaderBoundedMemory checks that a record length promising 64 MiB
// costs memory in proportion to the bytes that actually arrive.
func TestDSQ1ReaderBoundedMemory(t *testing.T) {
	in := concat(dsq1Header(t), le32(MaxDSQ1RecordSize), []byte{2}, le32(1), make([]byte, 8), le32(MaxDSQ1RecordSize-17), []byte("ab"))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, err := readAllDSQ1(in)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("error = %v, want io.ErrUnexpectedEOF", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
		t.Errorf("allocated %d bytes for a 64 MiB claim backed by 2 bytes", got)
	}
}

// TestDSQ1JSONLimitIsInclusive checks that a header JSON document of exactly
// MaxDSQ1JSONSize bytes is accepted and one byte more is refused.
func TestDSQ1JSONLimitIsInclusive(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 32 MiB")
	}
	base, _ := frames.StreamDescriptor{Stream: dsq1S, Label: new(string)}.MarshalJSON()
	label := strings.Repeat("x", MaxDSQ1JSONSize-len(base))
	desc := frames.StreamDescriptor{Stream: dsq1S, Label: &label}
	hdr, err := AppendDSQ1Header(nil, dsq1Flow, nil, desc, nil)
	if err != nil {
		t.Fatalf("AppendDSQ1Header at the limit: %v", err)
	}
	r, err := NewDSQ1Reader(bytes.NewReader(hdr))
	if err != nil {
		t.Fatalf("NewDSQ1Reader at the limit: %v", err)
	}
	if *r.Stream.Label != label {
		t.Errorf("label of %d bytes came back as %d", len(label), len(*r.Stream.Label))
	}
	label += "x"
	if _, err := AppendDSQ1Header(nil, dsq1Flow, nil, desc, nil); !errors.Is(err, ErrDSQ1TooLarge) {
		t.Errorf("AppendDSQ1Header over the limit = %v, want ErrDSQ1TooLarge", err)
	}
}

func TestAppendDSQ1Errors(t *testing.T) {
	dst := []byte("keep")
	other := frames.ChannelDescriptor{Stream: frames.StreamID{Node: "node-beta", Life: 1}, ID: 1}
	tests := []struct {
		name    string
		append  func() ([]byte, error)
		wantErr error
	}{
		{"token over 65535 bytes", func() ([]byte, error) {
			return AppendDSQ1Header(dst, dsq1Flow, make([]byte, 1<<16), dsq1Stream, nil)
		}, ErrDSQ1TooLarge},
		{"header channel of another stream", func() ([]byte, error) {
			return AppendDSQ1Header(dst, dsq1Flow, nil, dsq1Stream, []frames.ChannelDescriptor{dsq1C1, other})
		}, ErrDSQ1StreamMismatch},
		{"unencodable origin", func() ([]byte, error) {
			return AppendDSQ1Header(dst, dsq1Flow, nil, frames.StreamDescriptor{Origin: 9}, nil)
		}, frames.ErrBadJSON},
		{"zero event", func() ([]byte, error) { return AppendDSQ1Record(dst, frames.Event{}) }, ErrDSQ1Event},
		{"ChannelDeclared without descriptor", func() ([]byte, error) {
			return AppendDSQ1Record(dst, frames.Event{Kind: frames.EventChannelDeclared})
		}, ErrDSQ1Event},
		{"unencodable content", func() ([]byte, error) {
			return AppendDSQ1Record(dst, frames.ChannelDeclaredEvent(frames.ChannelDescriptor{Content: frames.ChannelContent{Kind: 9}}))
		}, frames.ErrBadJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.append()
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("error = %v, want %v", err, tt.wantErr)
			}
			if string(got) != "keep" {
				t.Errorf("dst changed to %q", got)
			}
		})
	}
}

func TestAppendDSQ1RecordStreamDeclaredWritesNothing(t *testing.T) {
	got, err := AppendDSQ1Record([]byte("keep"), frames.StreamDeclaredEvent(dsq1Stream))
	if err != nil || string(got) != "keep" {
		t.Errorf("AppendDSQ1Record(StreamDeclared) = %q, %v; want dst unchanged, nil", got, err)
	}
}

func FuzzDSQ1Reader(f *testing.F) {
	hdr := dsq1Header(f)
	alpha := unhex(f, dsq1AlphaRecord)
	f.Add(hdr)
	f.Add(concat(hdr, alpha))
	f.Add(concat(hdr, dsq1Records(f, frames.ChannelDeclaredEvent(dsq1C2), dsq1Frame(2, 1, "hello\n"),
		dsq1Frame(99, 2, "\xff\xfe"), frames.StreamEndedEvent(dsq1S))))
	f.Add(concat(hdr, le32(0)))
	f.Add(concat(hdr, le32(16), alpha[4:20]))
	f.Add(concat(hdr, le32(1), []byte{4}))
	f.Add(concat(hdr, alpha[:2]))
	f.Add([]byte("DSQ2"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r, evs, err := readAllDSQ1(in)
		if err != io.EOF && !strings.HasPrefix(err.Error(), "wireformat: ") {
			t.Errorf("error %q lacks the package prefix", err)
		}
		if r == nil {
			return
		}
		// Whatever decoded re-encodes to a stream that decodes the same way.
		re, err := AppendDSQ1Header(nil, r.FlowID, r.Token, r.Stream, r.Channels)
		if err != nil {
			t.Fatalf("re-encode header: %v", err)
		}
		for _, ev := range evs {
			if re, err = AppendDSQ1Record(re, ev); err != nil {
				t.Fatalf("re-encode %v: %v", ev.Kind, err)
			}
		}
		r2, evs2, err := readAllDSQ1(re)
		if err != io.EOF {
			t.Fatalf("re-encoded stream: %v", err)
		}
		opt := cmpopts.EquateEmpty()
		if r2.FlowID != r.FlowID || !bytes.Equal(r2.Token, r.Token) ||
			!cmp.Equal(r2.Stream, r.Stream, opt) || !cmp.Equal(r2.Channels, r.Channels, opt) {
			t.Fatalf("re-decoded header differs: %+v vs %+v", r2, r)
		}
		if diff := cmp.Diff(evs, evs2, opt); diff != "" {
			t.Fatalf("re-decoded events differ (-first +second):\n%s", diff)
		}
	})
}

func BenchmarkDSQ1ReaderNext(b *testing.B) {
	rec := dsq1Records(b, dsq1Frame(2, 1, strings.Repeat("x", 99)+"\n"))
	const n = 1000
	in := concat(dsq1Header(b), bytes.Repeat(rec, n))
	b.ReportAllocs()
	b.SetBytes(int64(len(rec)))
	br := bytes.NewReader(in)
	var r *DSQ1Reader
	left := 0
	for b.Loop() {
		if left == 0 {
			br.Reset(in)
			var err error
			if r, err = NewDSQ1Reader(br); err != nil {
				b.Fatal(err)
			}
			left = n
		}
		if _, err := r.Next(); err != nil {
			b.Fatal(err)
		}
		left--
	}
}

func BenchmarkAppendDSQ1Record(b *testing.B) {
	ev := dsq1Frame(2, 1, strings.Repeat("x", 99)+"\n")
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	b.SetBytes(int64(len(ev.Frame.Payload)) + 4 + dsq1FrameFixedSize)
	for b.Loop() {
		var err error
		if buf, err = AppendDSQ1Record(buf[:0], ev); err != nil {
			b.Fatal(err)
		}
	}
}

package segments

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// callLog is a sink that writes down every call, one string each.
type callLog struct {
	mu    sync.Mutex
	calls []string
}

func (c *callLog) add(format string, args ...any) {
	c.mu.Lock()
	c.calls = append(c.calls, fmt.Sprintf(format, args...))
	c.mu.Unlock()
}

func (c *callLog) Header(h SegmentHeader) {
	c.add("header %s seq=%d channels=%d writer=%q @%d", h.Stream.Stream, h.Seq, len(h.Channels), h.Writer, h.Offset)
}
func (c *callLog) Channel(d frames.ChannelDescriptor) { c.add("channel %d %s", d.ID, d.Name) }
func (c *callLog) Frame(s frames.StreamID, f frames.Frame) {
	c.add("frame %s %d ch%d %q", s, f.Position, f.Channel, f.Payload)
}
func (c *callLog) Ended(s frames.StreamID) { c.add("ended %s", s) }
func (c *callLog) Trimmed(s frames.StreamID, before frames.Position, store bool) {
	if store {
		c.add("trimmed %s below %d by its store", s, before)
		return
	}
	c.add("trimmed %s below %d", s, before)
}
func (c *callLog) Damage(offset, end int64, torn bool, err error) {
	c.add("damage %d-%d torn=%v", offset, end, torn)
}

func (c *callLog) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.calls, "\n")
}

var impStream = frames.StreamID{Node: "n1", Life: 7}

// dsq1Stream is a DSQ1 stream of impStream: a header declaring channel 1
// (text), then the records of evs.
func dsq1Stream(t testing.TB, evs ...frames.Event) []byte {
	t.Helper()
	b, err := wireformat.AppendDSQ1Header(nil, [16]byte{1}, []byte("tok"), frames.StreamDescriptor{Stream: impStream},
		[]frames.ChannelDescriptor{{Stream: impStream, ID: 1, Name: "proc.x.stdout", Content: frames.TextStream()}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if b, err = wireformat.AppendDSQ1Record(b, ev); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func dsq1Frame(ch frames.ChannelID, pos uint64, payload string) frames.Event {
	return frames.FrameEvent(frames.FrameDelivery{Channel: frames.ChannelRef{Stream: impStream, Channel: ch}, Position: frames.Position(pos), Payload: []byte(payload)})
}

// envelopes is legacy delivery envelopes back to back.
func envelopes(ds ...frames.Delivery) []byte {
	var b []byte
	for _, d := range ds {
		b = wireformat.AppendLegacyDelivery(b, d)
	}
	return b
}

func envelope(node string, life, pos uint64, ch frames.ChannelID, payload string) frames.Delivery {
	return frames.Delivery{Stream: frames.StreamID{Node: frames.NodeID(node), Life: frames.Life(life)}, Frame: frames.Frame{Channel: ch, Position: frames.Position(pos), Payload: []byte(payload)}}
}

// conformanceEnvelope is a worked legacy envelope: node "n1", life 7,
// position 2, channel 3, payload "hi".
var conformanceEnvelope = []byte{0x02, 0, 0, 0, 0x6E, 0x31, 0x07, 0, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0, 0, 0, 0, 0, 0x03, 0, 0, 0, 0x02, 0, 0, 0, 0x68, 0x69}

func TestDetect(t *testing.T) {
	big := envelopes(envelope("n1", 7, 0, 1, strings.Repeat("x", 100<<10)))
	for _, tc := range []struct {
		name string
		in   []byte
		want InputFormat
		err  error
	}{
		{"empty", nil, InputEmpty, nil},
		{"dss", []byte(wireformat.Magic + "rest"), InputDSS, nil},
		{"dss header cut in its magic", []byte(wireformat.Magic[:3]), InputDSS, nil},
		{"dsq1", dsq1Stream(t), InputDSQ1, nil},
		{"dsq1 magic cut", []byte("DS"), InputDSQ1, nil},
		{"legacy, worked envelope", conformanceEnvelope, InputLegacy, nil},
		{"legacy, two envelopes", envelopes(envelope("n1", 7, 0, 1, "a"), envelope("n1", 7, 1, 1, "b")), InputLegacy, nil},
		{"legacy, payload larger than the buffer", big, InputLegacy, nil},
		{"legacy, first envelope cut", conformanceEnvelope[:31], 0, ErrNotCapture},
		{"legacy, large first envelope cut", big[:len(big)-1], 0, ErrNotCapture},
		{"legacy, empty node", envelopes(envelope("", 7, 0, 1, "a")), 0, ErrNotCapture},
		{"legacy, node with a control character", envelopes(envelope("n\x01", 7, 0, 1, "a")), 0, ErrNotCapture},
		{"legacy, node not UTF-8", envelopes(envelope("\xc3\x28", 7, 0, 1, "a")), 0, ErrNotCapture},
		{"text", []byte("hello world\n"), 0, ErrNotCapture},
		{"short text", []byte("hi"), 0, ErrNotCapture},
		{"zeros", make([]byte, 64), 0, ErrNotCapture},
		{"ELF", []byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00"), 0, ErrNotCapture},
		{"gzip", []byte{0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 3}, 0, ErrNotCapture},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Detect(bytes.NewReader(tc.in))
			if !errors.Is(err, tc.err) || err == nil && got != tc.want {
				t.Errorf("Detect = %v, %v; want %v, %v", got, err, tc.want, tc.err)
			}
		})
	}
}

func TestScanAnyNotCapture(t *testing.T) {
	var c callLog
	err := ScanAny(context.Background(), strings.NewReader("hello world\n"), ScanOptions{}, &c)
	if !errors.Is(err, ErrNotCapture) || c.String() != "" {
		t.Errorf("ScanAny = %v, calls %q; want ErrNotCapture and none", err, c.String())
	}
	if err := ScanAny(context.Background(), strings.NewReader(""), ScanOptions{}, &c); err != nil || c.String() != "" {
		t.Errorf("empty input: ScanAny = %v, calls %q; want nil and none", err, c.String())
	}
}

// scanAnyLog returns the sink calls of ScanAny of in.
func scanAnyLog(t *testing.T, in []byte) string {
	t.Helper()
	var c callLog
	if err := ScanAny(context.Background(), bytes.NewReader(in), ScanOptions{}, &c); err != nil {
		t.Fatalf("ScanAny: %v", err)
	}
	return c.String()
}

func TestScanAnyDSQ1(t *testing.T) {
	in := dsq1Stream(t,
		frames.ChannelDeclaredEvent(frames.ChannelDescriptor{Stream: impStream, ID: 2, Name: "host.cpu", Content: frames.JSONRecord("host.cpu")}),
		dsq1Frame(1, 0, "alpha\n"),
		dsq1Frame(2, 1, `{"cpu":1}`),
		frames.StreamEndedEvent(impStream))
	want := `header n1#7 seq=0 channels=1 writer="DSQ1 stream" @0
channel 2 host.cpu
frame n1#7 0 ch1 "alpha\n"
frame n1#7 1 ch2 "{\"cpu\":1}"
ended n1#7`
	if got := scanAnyLog(t, in); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestScanAnyDSQ1Damage: a framed record that does not decode is damage
// (its exact range), and reading goes on at the next record; a framing
// that is lost makes the rest one damaged range; a stream that stops
// inside a record has a torn tail.
func TestScanAnyDSQ1Damage(t *testing.T) {
	head := dsq1Stream(t)
	h := int64(len(head))
	good := func(pos uint64, p string) []byte {
		b, _ := wireformat.AppendDSQ1Record(nil, dsq1Frame(1, pos, p))
		return b
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(append([][]byte{head}, parts...), nil) }
	unknownTag := []byte{1, 0, 0, 0, 0x04}
	shortFrame := append([]byte{16, 0, 0, 0, 0x02}, make([]byte, 15)...)
	badJSON := append([]byte{5, 0, 0, 0, 0x01}, "{oop"...)
	a, b := good(0, "a"), good(1, "b")
	n := func(bs ...[]byte) int64 {
		var s int64
		for _, x := range bs {
			s += int64(len(x))
		}
		return s
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"unknown tag between frames", cat(a, unknownTag, b), fmt.Sprintf(`frame n1#7 0 ch1 "a"
damage %d-%d torn=false
frame n1#7 1 ch1 "b"`, h+n(a), h+n(a, unknownTag))},
		{"two bad records in a row are one range", cat(a, shortFrame, badJSON, b), fmt.Sprintf(`frame n1#7 0 ch1 "a"
damage %d-%d torn=false
frame n1#7 1 ch1 "b"`, h+n(a), h+n(a, shortFrame, badJSON))},
		{"length 0: the rest is lost", cat(a, []byte{0, 0, 0, 0}, b), fmt.Sprintf(`frame n1#7 0 ch1 "a"
damage %d-%d torn=false`, h+n(a), h+n(a, []byte{0, 0, 0, 0}, b))},
		{"length over the maximum", cat(a, []byte{0xff, 0xff, 0xff, 0xff}, b), fmt.Sprintf(`frame n1#7 0 ch1 "a"
damage %d-%d torn=false`, h+n(a), h+n(a, []byte{0, 0, 0, 0}, b))},
		{"cut in a record", cat(a, b[:len(b)-2]), fmt.Sprintf(`frame n1#7 0 ch1 "a"
damage %d-%d torn=true`, h+n(a), h+n(a, b)-2)},
		{"cut in a length prefix", cat(a, b[:2]), fmt.Sprintf(`frame n1#7 0 ch1 "a"
damage %d-%d torn=true`, h+n(a), h+n(a)+2)},
		{"cut in the header", head[:len(head)-3], fmt.Sprintf(`damage 0-%d torn=true`, h-3)},
		{"magic only", []byte("DSQ1"), `damage 0-4 torn=true`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := scanAnyLog(t, tc.in)
			got = strings.TrimPrefix(got, `header n1#7 seq=0 channels=1 writer="DSQ1 stream" @0`+"\n")
			if got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// TestScanAnyDSQ1DamageCause: a damaged record is reported with the
// reader's cause, without the reader's own offset (which counts from
// where that reader started).
func TestScanAnyDSQ1DamageCause(t *testing.T) {
	in := dsq1Stream(t, dsq1Frame(1, 0, "a"))
	in = append(in, 1, 0, 0, 0, 0x04)
	in, _ = wireformat.AppendDSQ1Record(in, dsq1Frame(1, 1, "b"))
	in = append(in, 1, 0, 0, 0, 0x05)
	var errs []error
	sink := &damageOnly{f: func(_, _ int64, _ bool, err error) { errs = append(errs, err) }}
	if err := ScanAny(context.Background(), bytes.NewReader(in), ScanOptions{}, sink); err != nil {
		t.Fatal(err)
	}
	if len(errs) != 2 {
		t.Fatalf("%d damaged ranges, want 2", len(errs))
	}
	for _, err := range errs {
		if !errors.Is(err, wireformat.ErrDSQ1Tag) || strings.Contains(err.Error(), "offset") {
			t.Errorf("cause %q: want ErrDSQ1Tag without an offset", err)
		}
	}
}

func TestScanAnyLegacy(t *testing.T) {
	in := envelopes(envelope("n1", 7, 0, 3, "hi"), envelope("n2", 1, 5, 1, "x"), envelope("n1", 7, 1, 3, "there"))
	want := `header n1#7 seq=0 channels=0 writer="legacy delivery envelopes" @0
frame n1#7 0 ch3 "hi"
header n2#1 seq=0 channels=0 writer="legacy delivery envelopes" @32
frame n2#1 5 ch1 "x"
frame n1#7 1 ch3 "there"`
	if got := scanAnyLog(t, in); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got, want := scanAnyLog(t, conformanceEnvelope), `header n1#7 seq=0 channels=0 writer="legacy delivery envelopes" @0
frame n1#7 2 ch3 "hi"`; got != want {
		t.Errorf("worked envelope: got\n%s\nwant\n%s", got, want)
	}
}

func TestScanAnyLegacyDamage(t *testing.T) {
	first := envelopes(envelope("n1", 7, 0, 3, "hi"))
	second := envelopes(envelope("n1", 7, 1, 3, "there"))
	big := envelopes(envelope("n1", 7, 2, 3, strings.Repeat("y", 100<<10)))
	notUTF8 := envelopes(envelope("\xc3\x28", 7, 1, 3, "zz"))
	hugeNode := binary.LittleEndian.AppendUint32(nil, MaxLegacyNodeSize+1)
	f := int64(len(first))
	head := `header n1#7 seq=0 channels=0 writer="legacy delivery envelopes" @0
frame n1#7 0 ch3 "hi"`
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"torn tail", append(first, second[:len(second)-1]...), fmt.Sprintf("%s\ndamage %d-%d torn=true", head, f, f+int64(len(second))-1)},
		{"torn in the node length", append(first, 5, 0), fmt.Sprintf("%s\ndamage %d-%d torn=true", head, f, f+2)},
		{"large envelope torn", append(first, big[:len(big)-10]...), fmt.Sprintf("%s\ndamage %d-%d torn=true", head, f, f+int64(len(big))-10)},
		{"node not UTF-8 is skipped by its lengths", bytes.Join([][]byte{first, notUTF8, second}, nil),
			fmt.Sprintf("%s\ndamage %d-%d torn=false\nframe n1#7 1 ch3 \"there\"", head, f, f+int64(len(notUTF8)))},
		{"node too long: the rest is lost", bytes.Join([][]byte{first, hugeNode, second}, nil),
			fmt.Sprintf("%s\ndamage %d-%d torn=false", head, f, f+4+int64(len(second)))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := scanAnyLog(t, tc.in); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
	// A large envelope (over the read buffer) reads whole, first or not.
	got := scanAnyLog(t, append(big, first...))
	if !strings.Contains(got, "frame n1#7 2 ch3") || !strings.HasSuffix(got, `frame n1#7 0 ch3 "hi"`) {
		t.Errorf("large envelopes: got\n%.300s", got)
	}
}

// growingReader reads like a file another process appends to: io.EOF at
// its current end.
type growingReader struct {
	mu   sync.Mutex
	data []byte
	off  int
}

func (g *growingReader) Read(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.off == len(g.data) {
		return 0, io.EOF
	}
	n := copy(p, g.data[g.off:])
	g.off += n
	return n, nil
}

func (g *growingReader) append(b []byte) {
	g.mu.Lock()
	g.data = append(g.data, b...)
	g.mu.Unlock()
}

// TestScanAnyFollowEmpty: following an empty file waits for its first
// bytes (ds wrap creates its file before the header), then reads it.
func TestScanAnyFollowEmpty(t *testing.T) {
	capture := conformanceCapture(t, impStream, false, frames.Frame{Channel: 1, Position: 0, Payload: []byte("late\n")})
	g := &growingReader{}
	ctx, cancel := context.WithCancel(context.Background())
	sink := frameSignal{frames: make(chan frames.Frame, 1)}
	done := make(chan error, 1)
	go func() { done <- ScanAny(ctx, g, ScanOptions{Follow: true}, sink) }()
	time.Sleep(150 * time.Millisecond)
	g.append(capture)
	select {
	case f := <-sink.frames:
		if string(f.Payload) != "late\n" {
			t.Errorf("frame %q", f.Payload)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the frame appended to the followed file was not seen")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("ScanAny = %v, want context.Canceled", err)
	}
}

// FuzzScanAny: no input makes ScanAny panic, loop or misreport: it ends,
// and the damaged ranges it reports lie within the input, in order,
// without overlap.
func FuzzScanAny(f *testing.F) {
	f.Add(dsq1Stream(f, dsq1Frame(1, 0, "alpha"), frames.StreamEndedEvent(impStream)))
	f.Add(append(dsq1Stream(f, dsq1Frame(1, 0, "a")), 1, 0, 0, 0, 4, 0, 0, 0))
	f.Add(conformanceEnvelope)
	f.Add(envelopes(envelope("n1", 7, 0, 3, "hi"), envelope("n2", 1, 5, 1, "x")))
	f.Add(append(envelopes(envelope("n1", 7, 0, 3, "hi")), 0xff, 0, 0, 0))
	f.Add([]byte("DSQ1"))
	f.Add([]byte(wireformat.Magic))
	for _, c := range fixtures(f) {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var last int64
		sink := &damageOnly{f: func(offset, end int64, _ bool, _ error) {
			if offset < last || end <= offset || end > int64(len(in)) {
				t.Fatalf("damage %d–%d after %d, in %d bytes", offset, end, last, len(in))
			}
			last = end
		}}
		err := ScanAny(context.Background(), bytes.NewReader(in), ScanOptions{}, sink)
		if err != nil && !errors.Is(err, ErrNotCapture) {
			t.Fatalf("ScanAny = %v", err)
		}
	})
}

// damageOnly is a sink that passes damage to f and ignores the rest.
type damageOnly struct {
	discard
	f func(offset, end int64, torn bool, err error)
}

func (d *damageOnly) Damage(offset, end int64, torn bool, err error) { d.f(offset, end, torn, err) }

// A DSS magic with at most two bytes wrong starts like DSS (a flipped
// bit is damage); anything further off, or too short, does not.
func TestStartsLikeDSS(t *testing.T) {
	magic := []byte(Magic)
	flip := func(idx ...int) []byte {
		b := append([]byte(nil), magic...)
		for _, i := range idx {
			b[i] ^= 0x10
		}
		return b
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want bool
	}{
		{"magic", magic, true},
		{"magic and more", append(append([]byte(nil), magic...), "xyz"...), true},
		{"one byte wrong", flip(3), true},
		{"two bytes wrong", flip(0, 7), true},
		{"three bytes wrong", flip(0, 3, 7), false},
		{"text", []byte("hello world\n"), false},
		{"six bytes of it", magic[:6], true},
		{"five bytes of it", magic[:5], false},
		{"empty", nil, false},
	} {
		if got := StartsLikeDSS(tc.b); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// midCapture returns an uncompressed capture of impStream in segments of
// about 256 KiB (8 KiB frames "frame N" padded with dots), and the input
// offsets of its segment headers.
func midCapture(t *testing.T, nframes int) ([]byte, []int64) {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, frames.StreamDescriptor{Stream: impStream}, []frames.ChannelDescriptor{
		{Stream: impStream, ID: 1, Name: "proc.x.stdout", Content: frames.TextStream()},
	}, WriterOptions{Compression: CompressNone, SegmentSize: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for i := range nframes {
		p := fmt.Appendf(nil, "frame %d ", i)
		p = append(p, bytes.Repeat([]byte("."), 8<<10-len(p))...)
		if err := w.WriteFrame(frames.Frame{Channel: 1, Position: frames.Position(i), Payload: p}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var c callLog
	if err := Scan(context.Background(), bytes.NewReader(buf.Bytes()), ScanOptions{}, &c); err != nil {
		t.Fatal(err)
	}
	var heads []int64
	for _, l := range strings.Split(c.String(), "\n") {
		if at, ok := strings.CutPrefix(l, "header "); ok {
			var off int64
			fmt.Sscanf(at[strings.LastIndexByte(at, '@')+1:], "%d", &off)
			heads = append(heads, off)
		}
	}
	if len(heads) < 3 {
		t.Fatalf("%d segments, want 3 or more", len(heads))
	}
	return buf.Bytes(), heads
}

// TestDetectMidSegment: a capture read from the middle of a segment (its
// next header further than the 64 KiB peeked) is a DSS capture; bytes
// that hold no valid header within DetectWindow are not.
func TestDetectMidSegment(t *testing.T) {
	capture, heads := midCapture(t, 100)
	cut := heads[1] - 100<<10 // 100 KiB before the second header, inside a record
	if cut <= heads[0] {
		t.Fatalf("segments too small: headers at %v", heads)
	}
	if got, err := Detect(bytes.NewReader(capture[cut:])); err != nil || got != InputDSS {
		t.Errorf("from the middle: Detect = %v, %v; want DSS capture", got, err)
	}
	// From the middle of the last segment: no header follows, but the
	// capture ends with the segment's summary. A capture all damage.
	if got, err := Detect(bytes.NewReader(capture[(heads[len(heads)-1]+int64(len(capture)))/2:])); err != nil || got != InputDSS {
		t.Errorf("from the middle of the last segment: Detect = %v, %v; want DSS capture", got, err)
	}
	noise := make([]byte, 1<<20)
	for i := range noise {
		noise[i] = byte(i*2654435761>>13) | 1 // odd bytes: never the magic, whose 'D' is even
	}
	forged := append(append(append([]byte(nil), noise[:200<<10]...), wireformat.Magic...), noise[:100<<10]...)
	late := append(make([]byte, DetectWindow), capture...)
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"noise", noise},
		{"a magic without a valid header", forged},
		{"a header past DetectWindow", late},
	} {
		if got, err := Detect(bytes.NewReader(tc.in)); !errors.Is(err, ErrNotCapture) {
			t.Errorf("%s: Detect = %v, %v; want ErrNotCapture", tc.name, got, err)
		}
	}
}

// TestScanAnyMidSegment: read from the middle of a segment, a capture's
// bytes before the next header are one damaged range, and every frame
// from that header on is read, with offsets from the cut; so also when
// the input arrives a few bytes at a time (a pipe).
func TestScanAnyMidSegment(t *testing.T) {
	capture, heads := midCapture(t, 100)
	cut := heads[1] - 100<<10
	in := capture[cut:]
	for _, tc := range []struct {
		name string
		r    io.Reader
	}{
		{"file", bytes.NewReader(in)},
		{"pipe", iotestHalf{bytes.NewReader(in)}},
	} {
		var c callLog
		if err := ScanAny(context.Background(), tc.r, ScanOptions{}, &c); err != nil {
			t.Fatalf("%s: ScanAny: %v", tc.name, err)
		}
		calls := strings.Split(c.String(), "\n")
		if want := fmt.Sprintf("damage 0-%d torn=false", heads[1]-cut); calls[0] != want {
			t.Errorf("%s: first call %q, want %q", tc.name, calls[0], want)
		}
		if want := fmt.Sprintf("header n1#7 seq=1 channels=1 writer=%q @%d", DefaultWriterID, heads[1]-cut); len(calls) < 2 || calls[1] != want {
			t.Errorf("%s: second call %q, want %q", tc.name, calls[1], want)
		}
		var frames int
		for _, l := range calls {
			if strings.HasPrefix(l, "frame ") {
				frames++
			}
		}
		if frames == 0 {
			t.Fatalf("%s: no frames: %s", tc.name, c.String())
		}
		if last := calls[len(calls)-1]; !strings.HasPrefix(last, "ended") {
			t.Errorf("%s: last call %q, want the stream's end", tc.name, last)
		}
	}
}

// iotestHalf reads at most 1000 bytes a call, as a pipe hands them over.
type iotestHalf struct{ r io.Reader }

func (h iotestHalf) Read(p []byte) (int, error) { return h.r.Read(p[:min(len(p), 1000)]) }

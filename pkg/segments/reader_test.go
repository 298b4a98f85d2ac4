package segments

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// builder assembles captures byte by byte, including damaged ones, and
// remembers where each part starts.
type builder struct {
	t    testing.TB
	b    []byte
	seed uint32
	id   byte
}

func newBuilder(t testing.TB) *builder { return &builder{t: t} }

func (c *builder) off() int64 { return int64(len(c.b)) }

// header appends a segment header of desc with catalog; ids are 1, 2, …
func (c *builder) header(desc frames.StreamDescriptor, catalog ...frames.ChannelDescriptor) int64 {
	c.t.Helper()
	at := c.off()
	c.id++
	h := wireformat.Header{SegmentID: [8]byte{0xD5, c.id}, Writer: "ds test", Stream: desc, Channels: catalog}
	var err error
	if c.b, err = wireformat.AppendHeader(c.b, &h); err != nil {
		c.t.Fatal(err)
	}
	c.seed = h.Seed()
	return at
}

func (c *builder) frame(ch frames.ChannelID, pos frames.Position, payload string) int64 {
	c.t.Helper()
	at := c.off()
	var err error
	if c.b, err = wireformat.AppendFrame(c.b, c.seed, frames.Frame{Channel: ch, Position: pos, Payload: []byte(payload)}); err != nil {
		c.t.Fatal(err)
	}
	return at
}

func (c *builder) record(typ wireformat.RecordType, body []byte) int64 {
	c.t.Helper()
	at := c.off()
	var err error
	if c.b, err = wireformat.AppendRecord(c.b, c.seed, wireformat.Record{Type: typ, Body: body}); err != nil {
		c.t.Fatal(err)
	}
	return at
}

// rawRecord appends a record with any tag and stored body and a correct
// CRC under the current seed.
func (c *builder) rawRecord(tag byte, stored []byte) int64 {
	at := c.off()
	c.b = append(c.b, tag)
	c.b = binary.LittleEndian.AppendUint32(c.b, uint32(len(stored)))
	c.b = append(c.b, stored...)
	c.b = binary.LittleEndian.AppendUint32(c.b, crc32.Update(c.seed, castagnoli, c.b[at:]))
	return at
}

func (c *builder) block(content []byte) int64 {
	c.t.Helper()
	at := c.off()
	var err error
	if c.b, err = wireformat.AppendBlock(c.b, c.seed, content); err != nil {
		c.t.Fatal(err)
	}
	return at
}

func (c *builder) raw(b []byte) int64 {
	at := c.off()
	c.b = append(c.b, b...)
	return at
}

// flip damages the byte at off.
func (c *builder) flip(off int64) { c.b[off] ^= 0x5A }

// expect is one expected result of Next: an entry of Kind at Off, or a
// CorruptError [Off, End) matching Err.
type expect struct {
	Kind     EntryKind
	Off, End int64
	Err      error
}

func entryAt(k EntryKind, off int64) expect { return expect{Kind: k, Off: off} }

func corruptAt(off, end int64, err error) expect { return expect{Off: off, End: end, Err: err} }

func checkResults(t *testing.T, res readResult, want []expect) {
	t.Helper()
	var got []string
	for _, it := range res.order {
		switch it := it.(type) {
		case Entry:
			got = append(got, fmt.Sprintf("%v@%d", it.Kind, it.Offset))
		case *CorruptError:
			got = append(got, fmt.Sprintf("corrupt[%d,%d)", it.Offset, it.End))
		}
	}
	var wantS []string
	for _, w := range want {
		if w.Kind != 0 {
			wantS = append(wantS, fmt.Sprintf("%v@%d", w.Kind, w.Off))
		} else {
			wantS = append(wantS, fmt.Sprintf("corrupt[%d,%d)", w.Off, w.End))
		}
	}
	if strings.Join(got, " ") != strings.Join(wantS, " ") {
		t.Fatalf("got  %s\nwant %s\n%s", strings.Join(got, " "), strings.Join(wantS, " "), dump(res))
	}
	i := 0
	for _, it := range res.order {
		if ce, ok := it.(*CorruptError); ok {
			for want[i].Kind != 0 {
				i++
			}
			if !errors.Is(ce, want[i].Err) {
				t.Errorf("corrupt[%d,%d): %v, want %v", ce.Offset, ce.End, ce.Err, want[i].Err)
			}
			i++
		} else {
			i++
		}
	}
	if res.err != io.EOF {
		t.Errorf("final error %v, want io.EOF", res.err)
	}
}

var (
	c1 = channel(streamS, 1)
	c2 = channel(streamS, 2)
)

// TestReaderDamage reads crafted inputs, each with one defect, and checks
// every entry and damaged range the reader reports.
func TestReaderDamage(t *testing.T) {
	tests := []struct {
		name  string
		build func(c *builder) []expect
	}{
		{"bytes before the first magic", func(c *builder) []expect {
			c.raw([]byte("hello\n"))
			h := c.header(descS, c1)
			f := c.frame(1, 0, "a")
			return []expect{corruptAt(0, h, wireformat.ErrBadMagic), entryAt(EntrySegment, h), entryAt(EntryFrame, f)}
		}},
		{"not a capture at all", func(c *builder) []expect {
			c.raw([]byte("just some text\n"))
			return []expect{corruptAt(0, 15, wireformat.ErrBadMagic)}
		}},
		{"newer major version", func(c *builder) []expect {
			c.raw([]byte(wireformat.Magic + "\x02\x00 a future segment whose layout this reader does not know"))
			h := c.header(descS)
			f := c.frame(1, 0, "a")
			return []expect{corruptAt(0, h, wireformat.ErrUnknownVersion), entryAt(EntrySegment, h), entryAt(EntryFrame, f)}
		}},
		{"two newer segments in a row", func(c *builder) []expect {
			c.raw([]byte(wireformat.Magic + "\x03\x00 one"))
			n2 := c.raw([]byte(wireformat.Magic + "\x03\x00 two"))
			h := c.header(descS)
			return []expect{corruptAt(0, n2, wireformat.ErrUnknownVersion), corruptAt(n2, h, wireformat.ErrUnknownVersion), entryAt(EntrySegment, h)}
		}},
		{"header checksum", func(c *builder) []expect {
			h1 := c.header(descS, c1)
			c.frame(1, 0, "lost with its segment")
			h2 := c.header(descS, c1)
			f := c.frame(1, 1, "b")
			c.flip(h1 + 40)
			return []expect{corruptAt(h1, h2, wireformat.ErrChecksum), entryAt(EntrySegment, h2), entryAt(EntryFrame, f)}
		}},
		{"header truncated, then a new segment", func(c *builder) []expect {
			c.header(descS, c1)
			c.b = c.b[:30]
			h := c.header(descS, c1)
			f := c.frame(1, 0, "a")
			return []expect{corruptAt(0, h, wireformat.ErrChecksum), entryAt(EntrySegment, h), entryAt(EntryFrame, f)}
		}},
		{"header torn at the end", func(c *builder) []expect {
			h1 := c.header(descS)
			f := c.frame(1, 0, "a")
			h2 := c.header(descS)
			c.b = c.b[:h2+20]
			return []expect{entryAt(EntrySegment, h1), entryAt(EntryFrame, f), corruptAt(h2, h2+20, io.ErrUnexpectedEOF)}
		}},
		{"record length over the maximum", func(c *builder) []expect {
			h := c.header(descS)
			f1 := c.frame(1, 0, "a")
			bad := c.raw([]byte{byte(wireformat.TypeFrame), 0xFF, 0xFF, 0xFF, 0x00, 1, 2, 3, 4})
			f2 := c.frame(1, 1, "b")
			return []expect{entryAt(EntrySegment, h), entryAt(EntryFrame, f1), corruptAt(bad, f2, wireformat.ErrTooLarge), entryAt(EntryFrame, f2)}
		}},
		{"record length past the end", func(c *builder) []expect {
			h := c.header(descS)
			bad := c.raw([]byte{byte(wireformat.TypeFrame), 0x00, 0x10, 0x00, 0x00, 1, 0, 'x'})
			return []expect{entryAt(EntrySegment, h), corruptAt(bad, c.off(), io.ErrUnexpectedEOF)}
		}},
		{"length damaged to run into the next segment", func(c *builder) []expect {
			h := c.header(descS)
			bad := c.frame(1, 0, "a")
			c.b[bad+2] = 0x10 // 4 KiB: past the end of input
			h2 := c.header(descS)
			f := c.frame(1, 1, "b")
			return []expect{entryAt(EntrySegment, h), corruptAt(bad, h2, io.ErrUnexpectedEOF), entryAt(EntrySegment, h2), entryAt(EntryFrame, f)}
		}},
		{"checksum mismatch", func(c *builder) []expect {
			h := c.header(descS)
			bad := c.frame(1, 0, "flipped")
			c.flip(bad + 8)
			f := c.frame(1, 1, "b")
			return []expect{entryAt(EntrySegment, h), corruptAt(bad, f, wireformat.ErrChecksum), entryAt(EntryFrame, f)}
		}},
		{"record of another segment", func(c *builder) []expect {
			h := c.header(descS)
			seed := c.seed
			c.seed = wireformat.Seed([8]byte{9})
			bad := c.frame(1, 0, "alien")
			c.seed = seed
			f := c.frame(1, 1, "b")
			return []expect{entryAt(EntrySegment, h), corruptAt(bad, f, wireformat.ErrChecksum), entryAt(EntryFrame, f)}
		}},
		{"zero-filled hole", func(c *builder) []expect {
			h := c.header(descS)
			hole := c.raw(make([]byte, 5000))
			f := c.frame(1, 0, "after the hole")
			return []expect{entryAt(EntrySegment, h), corruptAt(hole, f, wireformat.ErrBadTag), entryAt(EntryFrame, f)}
		}},
		{"never-assigned tag", func(c *builder) []expect {
			h := c.header(descS)
			bad := c.rawRecord(0x0D, []byte("x"))
			f := c.frame(1, 0, "a")
			return []expect{entryAt(EntrySegment, h), corruptAt(bad, f, wireformat.ErrBadTag), entryAt(EntryFrame, f)}
		}},
		{"reserved and experimental records", func(c *builder) []expect {
			h := c.header(descS)
			r1 := c.record(0x08, []byte("a future record"))
			c.record(0x40, []byte("private"))
			r2 := c.record(0x3F, []byte("escaped "+wireformat.Magic))
			f := c.frame(1, 0, "a")
			return []expect{entryAt(EntrySegment, h), entryAt(EntryUnknown, r1), entryAt(EntryUnknown, r2), entryAt(EntryFrame, f)}
		}},
		{"bad escape under a valid CRC", func(c *builder) []expect {
			h := c.header(descS)
			bad := c.rawRecord(0x82, []byte{1, 0, 0x89, 0x44})
			f := c.frame(1, 0, "a")
			return []expect{entryAt(EntrySegment, h), corruptAt(bad, f, wireformat.ErrBadEscape), entryAt(EntryFrame, f)}
		}},
		{"bad frame body under a valid CRC", func(c *builder) []expect {
			h := c.header(descS)
			bad := c.record(wireformat.TypeFrame, []byte{0xFF, 0xFF})
			f := c.frame(1, 0, "a")
			return []expect{entryAt(EntrySegment, h), corruptAt(bad, f, wireformat.ErrBadBody), entryAt(EntryFrame, f)}
		}},
		{"channel of another stream", func(c *builder) []expect {
			h := c.header(descS)
			body, _ := wireformat.AppendChannelBody(nil, ptr(channel(streamT, 1)))
			bad := c.record(wireformat.TypeChannelDeclared, body)
			ok := c.record(wireformat.TypeChannelDeclared, mustChannelBody(t, c1))
			return []expect{entryAt(EntrySegment, h), corruptAt(bad, ok, wireformat.ErrWrongStream), entryAt(EntryChannel, ok)}
		}},
		{"block", func(c *builder) []expect {
			h := c.header(descS)
			content := wireformat.AppendInner(nil, wireformat.TypeChannelDeclared, mustChannelBody(t, c2))
			content = wireformat.AppendInnerFrame(content, frames.Frame{Channel: 2, Position: 0, Payload: []byte("x")}, 0)
			content = wireformat.AppendInner(content, 0x08, []byte("reserved"))
			content = wireformat.AppendInner(content, 0x41, []byte("experimental"))
			content = wireformat.AppendInner(content, wireformat.TypeStreamEnded, nil)
			b := c.block(content)
			return []expect{entryAt(EntrySegment, h), entryAt(EntryChannel, b), entryAt(EntryFrame, b), entryAt(EntryUnknown, b), entryAt(EntryStreamEnded, b)}
		}},
		{"block of an unknown codec", func(c *builder) []expect {
			h := c.header(descS)
			b := c.record(wireformat.TypeBlock, []byte{7, 3, 1, 2, 3})
			f := c.frame(1, 0, "a")
			return []expect{entryAt(EntrySegment, h), entryAt(EntryUnknown, b), entryAt(EntryFrame, f)}
		}},
		{"block that does not decompress", func(c *builder) []expect {
			h := c.header(descS)
			b := c.record(wireformat.TypeBlock, []byte{wireformat.CodecZstd, 5, 'h', 'e', 'l', 'l', 'o'})
			f := c.frame(1, 0, "a")
			return []expect{entryAt(EntrySegment, h), corruptAt(b, f, wireformat.ErrBadBody), entryAt(EntryFrame, f)}
		}},
		{"block with a bad inner record", func(c *builder) []expect {
			h := c.header(descS)
			content := wireformat.AppendInnerFrame(nil, frames.Frame{Channel: 2, Payload: []byte("returned only with its block")}, 0)
			content = append(content, 0, 0)
			b := c.block(content)
			f := c.frame(1, 0, "a")
			return []expect{entryAt(EntrySegment, h), corruptAt(b, f, wireformat.ErrBadTag), entryAt(EntryFrame, f)}
		}},
		{"block ending inside an inner record", func(c *builder) []expect {
			h := c.header(descS)
			content := wireformat.AppendInnerFrame(nil, frames.Frame{Channel: 2, Payload: []byte("abc")}, 0)
			b := c.block(content[:len(content)-1])
			return []expect{entryAt(EntrySegment, h), corruptAt(b, c.off(), wireformat.ErrBadBody)}
		}},
		{"tag damaged into the magic's first byte", func(c *builder) []expect {
			h := c.header(descS)
			bad := c.frame(1, 0, "a")
			c.b[bad] = 0x89
			f := c.frame(1, 1, "b")
			return []expect{entryAt(EntrySegment, h), corruptAt(bad, f, wireformat.ErrBadMagic), entryAt(EntryFrame, f)}
		}},
		{"records after StreamEnded", func(c *builder) []expect {
			h := c.header(descS)
			e := c.record(wireformat.TypeStreamEnded, nil)
			f := c.frame(1, 0, "late")
			return []expect{entryAt(EntrySegment, h), entryAt(EntryStreamEnded, e), entryAt(EntryFrame, f)}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newBuilder(t)
			want := tt.build(c)
			checkResults(t, readAll(t, c.b, ReaderOptions{}), want)
		})
	}
}

func mustChannelBody(t testing.TB, d frames.ChannelDescriptor) []byte {
	t.Helper()
	b, err := wireformat.AppendChannelBody(nil, &d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDSSInsidePayload captures a capture: payloads holding whole DSS files
// (and their records, valid under their own segments' seeds) come back
// byte for byte and are never taken for records, even when the reader
// resynchronises across them.
func TestDSSInsidePayload(t *testing.T) {
	inner := sweepCapture(t, WriterOptions{})
	c := newBuilder(t)
	h := c.header(descS, c2)
	f0 := c.frame(2, 0, string(inner))
	damaged := c.frame(2, 1, string(inner))
	c.flip(damaged + 20)
	f2 := c.frame(2, 2, string(inner[100:]))
	res := readAll(t, c.b, ReaderOptions{})
	checkResults(t, res, []expect{entryAt(EntrySegment, h), entryAt(EntryFrame, f0), corruptAt(damaged, f2, wireformat.ErrChecksum), entryAt(EntryFrame, f2)})
	if !bytes.Equal(res.entries[1].Frame.Payload, inner) || !bytes.Equal(res.entries[2].Frame.Payload, inner[100:]) {
		t.Errorf("payloads differ")
	}
}

// TestInterleavedStreams reads segments of two streams in turns: each
// record belongs to the stream of the header before it.
func TestInterleavedStreams(t *testing.T) {
	c := newBuilder(t)
	c.header(descS, c1)
	c.frame(1, 0, "s0")
	c.header(descT, channel(streamT, 1))
	c.frame(1, 0, "t0")
	c.header(descS, c1)
	c.frame(1, 1, "s1")
	c.record(wireformat.TypeStreamEnded, nil)
	res := readAll(t, c.b, ReaderOptions{})
	var got []string
	for _, e := range res.entries {
		if e.Kind == EntryFrame {
			got = append(got, fmt.Sprintf("%s:%s", e.Stream, e.Frame.Payload))
		}
		if e.Kind == EntryStreamEnded {
			got = append(got, fmt.Sprintf("%s:end", e.Stream))
		}
	}
	want := "node-alpha#1:s0 node-beta#1732953600123456789:t0 node-alpha#1:s1 node-alpha#1:end"
	if strings.Join(got, " ") != want {
		t.Errorf("got %s\nwant %s", strings.Join(got, " "), want)
	}
}

// TestReaderMemoryBounded feeds inputs whose lengths claim far more than
// they hold: the reader's buffer follows the bytes actually read.
func TestReaderMemoryBounded(t *testing.T) {
	c := newBuilder(t)
	c.header(descS)
	c.raw([]byte{byte(wireformat.TypeFrame), 0xFF, 0xFF, 0x3F, 0x00}) // claims 4 MiB
	hdr := []byte(wireformat.Magic + "\x01\x00\xff\xff\xff\x00")      // claims 16 MiB
	for _, in := range [][]byte{c.b, hdr, append(bytes.Repeat(hdr, 1000), c.b...)} {
		r := NewReader(bytes.NewReader(in), ReaderOptions{})
		readFrom(t, r, len(in))
		if cap(r.buf) > 2*len(in)+readBufferSize {
			t.Errorf("%d bytes of input grew the buffer to %d", len(in), cap(r.buf))
		}
	}
}

// TestResyncCostLinear builds damaged input in which every few bytes look
// like a record claiming megabytes: the scan must stay linear.
func TestResyncCostLinear(t *testing.T) {
	c := newBuilder(t)
	c.header(descS)
	unit := []byte{byte(wireformat.TypeFrame), 0xF0, 0xFF, 0x3F, 0x00, 1, 0, 'x'} // claims ~4 MiB each
	c.raw([]byte{0})                                                              // damage: a zero tag
	c.raw(bytes.Repeat(unit, (2<<20)/len(unit)))
	f := c.frame(1, 0, "found")
	res := readAll(t, c.b, ReaderOptions{})
	if len(res.corrupt) != 1 || res.entries[len(res.entries)-1].Offset != f {
		t.Fatalf("got %v, last entry %v", res.corrupt, res.entries[len(res.entries)-1])
	}
}

// TestRemaining: what the Reader's input holds beyond what was read, known
// for a regular file and through the wrappers of Scan and ScanAny, not
// for a pipe; the Reader grows its buffer to a header at once only when
// it is known to be there.
func TestRemaining(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(name, make([]byte, 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(100, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	cr := &CountingReader{R: f}
	br := bufferedReader{bufio.NewReaderSize(cr, 16), cr}
	if _, err := br.ReadByte(); err != nil { // 16 bytes read from f into the buffer, 1 taken
		t.Fatal(err)
	}
	pre := &prefixReader{pre: []byte("abc"), r: br}
	for _, c := range []struct {
		name string
		r    io.Reader
		want int64
	}{
		{"file", f, 884},
		{"counting", cr, 884},
		{"buffered", br, 899},
		{"prefix", pre, 902},
		{"feed", &batchFeed{r: pre}, 902},
		{"section", io.NewSectionReader(onlyReaderAt{f}, 200, 300), 300},
	} {
		if n, ok := remaining(c.r); !ok || n != c.want {
			t.Errorf("%s: remaining %d, %v; want %d, true", c.name, n, ok, c.want)
		}
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	for _, r := range []io.Reader{pr, &CountingReader{R: pr}, bytes.NewReader(nil)} {
		if n, ok := remaining(r); ok {
			t.Errorf("%T: remaining %d, true; want false", r, n)
		}
	}
}

// remaining returns what fileAt says src holds beyond its next byte.
func remaining(src io.Reader) (int64, bool) {
	_, next, end, ok := fileAt(src)
	return end - next, ok
}

package wireformat

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// The fuzz targets check the decoder entry points: no panic on any input,
// lengths and errors consistent, and whatever decodes re-encodes to
// something that decodes the same way. `go test` runs them on the seed
// corpus (the man page examples and the table cases); run one for longer
// with `go test -run='^$' -fuzz=FuzzRecord -fuzztime=2m ./pkg/wireformat`.

// withHeaderCRC returns b with the CRC of the header it starts with made
// right, if b holds one: a checksum would otherwise stop the fuzzer from
// reaching the body's decoding.
func withHeaderCRC(b []byte) []byte {
	if len(b) < HeaderPrefixSize {
		return b
	}
	n := HeaderPrefixSize + int(binary.LittleEndian.Uint32(b[10:]))
	if n < HeaderPrefixSize || n+4 > len(b) {
		return b
	}
	b = bytes.Clone(b)
	binary.LittleEndian.PutUint32(b[n:], crc32.Checksum(b[:n], castagnoli))
	return b
}

// withRecordCRC does the same for a record under seed.
func withRecordCRC(b []byte, seed uint32) []byte {
	if len(b) < 5 {
		return b
	}
	n := 5 + int(binary.LittleEndian.Uint32(b[1:]))
	if n < 5 || n+4 > len(b) {
		return b
	}
	b = bytes.Clone(b)
	binary.LittleEndian.PutUint32(b[n:], crc32.Update(seed, castagnoli, b[:n]))
	return b
}

func FuzzHeader(f *testing.F) {
	ex := specExamples(f)
	f.Add(ex["header"])
	f.Add(rawHeader(1, 3, headerBody(exHeader.SegmentID, 5, "w", exStreamJSON, "[]", 1, 2)))
	f.Add(rawHeader(2, 0, nil))
	f.Add([]byte(Magic))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkHeader(t, b)
		checkHeader(t, withHeaderCRC(b))
	})
}

func checkHeader(t *testing.T, b []byte) {
	t.Helper()
	h, n, err := ParseHeader(b)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		if n <= len(b) {
			t.Fatalf("short input of %d bytes, but n = %d", len(b), n)
		}
		return
	}
	if err != nil {
		return
	}
	if n < HeaderOverhead || n > len(b) {
		t.Fatalf("n = %d for %d bytes", n, len(b))
	}
	re, err := AppendHeader(nil, &h)
	if err != nil {
		return // e.g. a writer identity with control characters, or the magic inside
	}
	h2, n2, err := ParseHeader(re)
	if err != nil || n2 != len(re) {
		t.Fatalf("re-encoded header does not decode: %v", err)
	}
	h.Minor = MinorVersion
	if diff := cmp.Diff(h, h2, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("re-encoded header differs (-first +second):\n%s", diff)
	}
}

func FuzzRecord(f *testing.F) {
	ex := specExamples(f)
	for _, name := range []string{"channel-declared", "frame", "frame-escaped", "block", "stream-ended", "trimmed"} {
		f.Add(ex[name], uint32(testSeed), 0)
	}
	f.Add(rawRecord(7, byte(TypeTrimmed), []byte{0xFF, 0xFF}), uint32(7), 100)
	f.Add(rawRecord(7, 0x82, []byte{1, 0, 0x89, 0x01}), uint32(7), 100)
	f.Add(rawRecord(7, 0x45, []byte("reserved")), uint32(7), 100)
	f.Add([]byte{2, 0xFF, 0xFF, 0xFF, 0}, uint32(0), -1)
	f.Fuzz(func(t *testing.T, b []byte, seed uint32, max int) {
		checkRecord(t, b, seed, max)
		checkRecord(t, withRecordCRC(b, seed), seed, max)
	})
}

func checkRecord(t *testing.T, b []byte, seed uint32, max int) {
	t.Helper()
	rec, n, err := ParseRecord(b, seed, max)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		if n <= len(b) {
			t.Fatalf("short input of %d bytes, but n = %d", len(b), n)
		}
		return
	}
	if err != nil {
		return
	}
	if n < RecordOverhead || n > len(b) || (max > 0 && n > RecordOverhead+max) {
		t.Fatalf("n = %d for %d bytes, max %d", n, len(b), max)
	}
	if len(rec.Body) > n-RecordOverhead {
		t.Fatalf("body of %d bytes from a record of %d", len(rec.Body), n)
	}
	re, err := AppendRecord(nil, seed, rec)
	if err != nil {
		return // a body over DefaultMaxRecordSize
	}
	rec2, n2, err := ParseRecord(re, seed, MaxRecordSize)
	if err != nil || n2 != len(re) || rec2.Type != rec.Type || !bytes.Equal(rec2.Body, rec.Body) {
		t.Fatalf("re-encoded record decodes to %v %q, %v", rec2.Type, rec2.Body, err)
	}
	if bytes.Contains(re, []byte(Magic)) {
		t.Fatalf("re-encoded record holds the magic")
	}
	switch rec.Type {
	case TypeFrame:
		fr, err := ParseFrameBody(rec.Body)
		if err != nil {
			return
		}
		fr2, err := ParseFrameBody(AppendFrameBody(nil, fr))
		if err != nil || !cmp.Equal(fr, fr2, cmpopts.EquateEmpty()) {
			t.Fatalf("frame %+v re-decodes to %+v, %v", fr, fr2, err)
		}
	case TypeChannelDeclared:
		d, err := ParseChannelBody(rec.Body)
		if err != nil {
			return
		}
		body, err := AppendChannelBody(nil, &d)
		if err != nil {
			return
		}
		d2, err := ParseChannelBody(body)
		if err != nil || !cmp.Equal(d, d2) {
			t.Fatalf("descriptor %+v re-decodes to %+v, %v", d, d2, err)
		}
	case TypeTrimmed:
		h, err := ParseTrimmedBody(rec.Body)
		if err != nil {
			return
		}
		if h2, err := ParseTrimmedBody(AppendTrimmedBody(nil, h)); err != nil || h2 != h {
			t.Fatalf("horizon %d re-decodes to %d, %v", h, h2, err)
		}
	}
}

func FuzzBlock(f *testing.F) {
	ex := specExamples(f)
	rec, _, err := ParseRecord(ex["block"], testSeed, 0)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(rec.Body)
	big, err := AppendBlock(nil, 0, blockContent(200))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(big[5 : len(big)-4])
	f.Add([]byte{CodecZstd, 0})
	f.Add([]byte{9, 1, 2})
	for _, c := range []BlockCodec{BlockZstd, BlockS2} {
		body, err := AppendBlockBodyWith(nil, blockContent(50), c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(body)
	}
	f.Add([]byte{CodecS2, 0, 0})
	f.Fuzz(func(t *testing.T, body []byte) {
		content, err := DecodeBlock(nil, body)
		if err != nil {
			return
		}
		if len(content) > MaxBlockSize {
			t.Fatalf("block of %d bytes", len(content))
		}
		for b := content; len(b) > 0; {
			_, n, err := ParseInner(b)
			if err != nil {
				break
			}
			if n <= 0 || n > len(b) {
				t.Fatalf("inner record of %d bytes in %d", n, len(b))
			}
			b = b[n:]
		}
		re, err := AppendBlock(nil, 1, content)
		if err != nil {
			t.Fatal(err)
		}
		r, _, err := ParseRecord(re, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		content2, err := DecodeBlock(nil, r.Body)
		if err != nil || !bytes.Equal(content, content2) {
			t.Fatalf("re-encoded block decodes differently: %v", err)
		}
	})
}

// FuzzHeaderAt: wherever ParseHeaderAt answers, in pieces of any size,
// ParseHeaderRepeats decodes the same bytes, with the same memo, to the
// same header.
func FuzzHeaderAt(f *testing.F) {
	ex := specExamples(f)
	f.Add(ex["header"], uint16(128))
	s := frames.StreamID{Node: "n", Life: 3}
	h := Header{Writer: "w", Stream: frames.StreamDescriptor{Stream: s}, Channels: plainCatalog(s, 40)}
	b, err := AppendHeader(nil, &h)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b, uint16(150))
	f.Fuzz(func(t *testing.T, b []byte, piece uint16) {
		b = withHeaderCRC(b)
		var mAt, mWhole CatalogMemo
		for range 2 { // the second time, a repeated catalog (if large)
			got, ok := parseHeaderAt(bytes.NewReader(b), 0, len(b), &mAt, int(piece))
			want, n, err := ParseHeaderRepeats(b, &mWhole)
			if !ok {
				ParseHeaderRepeats(b, &mAt)
				continue
			}
			if err != nil || n != len(b) {
				t.Fatalf("ParseHeaderAt answered; ParseHeaderRepeats: %v, %d of %d bytes", err, n, len(b))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("(-ParseHeaderRepeats +ParseHeaderAt):\n%s", diff)
			}
		}
	})
}

// FuzzHeaderParity: a parity copy of any bytes, decoded or refused, never
// panics, and repairs a body of any bytes or refuses it; a body it
// repairs, it changes in at most one shard, to bytes whose shard CRC is
// the copy's.
func FuzzHeaderParity(f *testing.F) {
	s := frames.StreamID{Node: "n", Life: 3}
	h := Header{SegmentID: [8]byte{5}, Writer: "w", Stream: frames.StreamDescriptor{Stream: s}, Channels: plainCatalog(s, 12)}
	hdr, err := AppendHeader(nil, &h)
	if err != nil {
		f.Fatal(err)
	}
	body := hdr[HeaderPrefixSize : len(hdr)-4]
	b := newParityBuilder(100)
	b.Write(body)
	rec, err := b.appendRecord(nil, MinorVersion, h.SegmentID)
	if err != nil {
		f.Fatal(err)
	}
	parsed, _, err := ParseRecord(rec, h.Seed(), 0)
	if err != nil {
		f.Fatal(err)
	}
	damaged := bytes.Clone(body)
	damaged[150] ^= 8
	f.Add(parsed.Body, damaged)
	f.Add(parsed.Body, body)
	f.Fuzz(func(t *testing.T, copyBody, body []byte) {
		p, err := ParseHeaderParity(copyBody)
		if err != nil {
			return
		}
		before := bytes.Clone(body)
		_, bad, err := p.Recover(body)
		changed := 0
		for i := range p.CRCs {
			if i*p.ShardSize < len(body) && !bytes.Equal(p.shardOf(before, i), p.shardOf(body, i)) {
				changed++
				if i != bad {
					t.Fatalf("shard %d changed, shard %d said rebuilt", i, bad)
				}
				if crc32.Checksum(p.shardOf(body, i), castagnoli) != p.CRCs[i] {
					t.Fatalf("shard %d rebuilt to bytes that fail its CRC", i)
				}
			}
		}
		if changed > 1 || changed == 0 && bad >= 0 {
			t.Fatalf("%d shards changed, shard %d rebuilt, %v", changed, bad, err)
		}
	})
}

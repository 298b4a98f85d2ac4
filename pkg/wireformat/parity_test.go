package wireformat

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// parityOf returns the parity copy of the encoded header hdr with shards
// of shard bytes, decoded, and the record it was decoded from.
func parityOf(t *testing.T, hdr []byte, shard int) (HeaderParity, []byte) {
	t.Helper()
	body := hdr[HeaderPrefixSize : len(hdr)-4]
	b := newParityBuilder(shard)
	// In pieces of odd sizes, as HeaderPlan.Write feeds it.
	for rest := body; len(rest) > 0; {
		k := min(len(rest), 1+len(rest)%97)
		b.Write(rest[:k])
		rest = rest[k:]
	}
	rec, err := b.appendRecord(nil, hdr[9], [8]byte(body[:8]))
	if err != nil {
		t.Fatal(err)
	}
	parsed, n, err := ParseRecord(rec, Seed([8]byte(body[:8])), DefaultMaxRecordSize)
	if err != nil || n != len(rec) || parsed.Type != TypeHeaderCopy || !IsHeaderParity(parsed.Body) {
		t.Fatalf("parity copy record: %v, %d of %d bytes, type %v", err, n, len(rec), parsed.Type)
	}
	p, err := ParseHeaderParity(parsed.Body)
	if err != nil {
		t.Fatal(err)
	}
	return p, rec
}

// TestHeaderParityEveryBit: a header body with any one bit flipped (and
// any run of damage within one shard) is repaired by its parity copy to
// the header it was, for shard sizes that divide the body and that do
// not, and a single shard; damage to two shards is ErrChecksum and leaves
// the body as it was.
func TestHeaderParityEveryBit(t *testing.T) {
	s := frames.StreamID{Node: "n1", Life: 3}
	h := Header{SegmentID: [8]byte{1, 2, 3, 4, 5, 6, 7, 8}, Seq: 5, Writer: "ds test", Stream: frames.StreamDescriptor{Stream: s}, Channels: wideCatalog(s, 5)}
	hdr, err := AppendHeader(nil, &h)
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := ParseHeader(hdr)
	if err != nil {
		t.Fatal(err)
	}
	body := hdr[HeaderPrefixSize : len(hdr)-4]
	for _, shard := range []int{64, 100, len(body), 4 * len(body)} {
		p, _ := parityOf(t, hdr, shard)
		if p.BodyLen != len(body) || p.ShardSize != shard || p.SegmentID != h.SegmentID || p.Major != MajorVersion || p.Minor != MinorVersion {
			t.Fatalf("shard %d: parity copy %d bytes of shards of %d, id %x, v%d.%d", shard, p.BodyLen, p.ShardSize, p.SegmentID, p.Major, p.Minor)
		}
		sound := bytes.Clone(body)
		got, bad, err := p.Recover(sound)
		if err != nil || bad != -1 || !cmp.Equal(got, want) {
			t.Fatalf("shard %d: sound body: shard %d rebuilt, %v", shard, bad, err)
		}
		for bit := range 8 * len(body) {
			b := bytes.Clone(body)
			b[bit/8] ^= 1 << (bit % 8)
			got, bad, err := p.Recover(b)
			if err != nil || bad != bit/8/shard || !bytes.Equal(b, body) || bit%61 == 0 && !cmp.Equal(got, want) {
				t.Fatalf("shard %d, bit %d flipped: shard %d rebuilt (want %d), %v", shard, bit, bad, bit/8/shard, err)
			}
		}
		// A run of damage inside one shard, and one across two.
		if shard < len(body) {
			b := bytes.Clone(body)
			for i := shard + 3; i < min(2*shard-1, len(b)); i++ {
				b[i] = 0xFF
			}
			if _, bad, err := p.Recover(b); err != nil || bad != 1 || !bytes.Equal(b, body) {
				t.Fatalf("shard %d: a run in shard 1: shard %d rebuilt, %v", shard, bad, err)
			}
			b = bytes.Clone(body)
			b[shard-1] ^= 1
			b[shard] ^= 1
			damaged := bytes.Clone(b)
			if _, _, err := p.Recover(b); !errors.Is(err, ErrChecksum) || !bytes.Equal(b, damaged) {
				t.Fatalf("shard %d: two shards damaged: %v, body changed %v; want ErrChecksum, unchanged", shard, err, !bytes.Equal(b, damaged))
			}
		}
	}
}

// TestHeaderParityDamagedCopy: a parity copy whose CRC list or parity is
// wrong repairs nothing into the body; one whose fields do not add up does
// not decode.
func TestHeaderParityDamagedCopy(t *testing.T) {
	s := frames.StreamID{Node: "n1", Life: 3}
	h := Header{SegmentID: [8]byte{9}, Writer: "w", Stream: frames.StreamDescriptor{Stream: s}, Channels: wideCatalog(s, 8)}
	hdr, err := AppendHeader(nil, &h)
	if err != nil {
		t.Fatal(err)
	}
	body := hdr[HeaderPrefixSize : len(hdr)-4]
	p, rec := parityOf(t, hdr, 64)
	parsed, _, _ := ParseRecord(rec, Seed(h.SegmentID), 0)
	b := bytes.Clone(body)
	b[70] ^= 4
	damaged := bytes.Clone(b)
	wrong := p
	wrong.Parity = bytes.Clone(p.Parity)
	wrong.Parity[6] ^= 1 // rebuilds shard 1 wrong: its CRC says so
	if _, _, err := wrong.Recover(b); !errors.Is(err, ErrChecksum) || !bytes.Equal(b, damaged) {
		t.Fatalf("wrong parity: %v, want ErrChecksum and the body unchanged", err)
	}
	if _, _, err := p.Recover(b[:len(b)-1]); !errors.Is(err, ErrBadBody) {
		t.Fatalf("a body of another length: %v, want ErrBadBody", err)
	}
	sameShards := p
	sameShards.SegmentID[0] ^= 1
	if _, _, err := sameShards.Recover(bytes.Clone(body)); !errors.Is(err, ErrBadBody) {
		t.Fatalf("a copy of another segment id: %v, want ErrBadBody", err)
	}
	for n := range len(parsed.Body) {
		if _, err := ParseHeaderParity(parsed.Body[:n]); err == nil {
			t.Fatalf("a copy cut to %d of %d bytes decodes", n, len(parsed.Body))
		}
	}
	if _, err := ParseHeaderParity(append(bytes.Clone(parsed.Body), 0)); err == nil {
		t.Fatal("a copy with a byte more decodes")
	}
	v2 := bytes.Clone(parsed.Body)
	v2[0] = 0x82
	if _, err := ParseHeaderParity(v2); !errors.Is(err, ErrUnknownVersion) {
		t.Fatalf("a copy of major version 2: %v, want ErrUnknownVersion", err)
	}
	if _, err := ParseHeaderCopy(parsed.Body); err == nil {
		t.Fatal("ParseHeaderCopy decodes a parity copy as a whole one")
	}
}

// TestHeaderPlanParity: the parity copy HeaderPlan.Write computes as it
// streams a header is AppendHeaderParity's of the header it wrote, and
// repairs it; before a whole Write there is none.
func TestHeaderPlanParity(t *testing.T) {
	s := frames.StreamID{Node: "n1", Life: 3}
	h := Header{SegmentID: [8]byte{7, 7}, Seq: 1, Writer: "ds test", Stream: frames.StreamDescriptor{Stream: s}, Channels: wideCatalog(s, 9000)}
	plan, _, err := PlanHeader(&h, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plan.AppendParity(nil); !errors.Is(err, ErrBadBody) {
		t.Fatalf("AppendParity before Write: %v, want ErrBadBody", err)
	}
	var out bytes.Buffer
	if _, _, err := plan.Write(&out, nil); err != nil {
		t.Fatal(err)
	}
	got, err := plan.AppendParity(nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := AppendHeaderParity(nil, out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("streamed parity copy of %d bytes differs from AppendHeaderParity's %d", len(got), len(want))
	}
	hdr := out.Bytes()
	if len(hdr) < 2*ParityShardSize {
		t.Fatalf("header of %d bytes: want several shards", len(hdr))
	}
	parsed, _, err := ParseRecord(got, Seed(h.SegmentID), 0)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParseHeaderParity(parsed.Body)
	if err != nil {
		t.Fatal(err)
	}
	body := bytes.Clone(hdr[HeaderPrefixSize : len(hdr)-4])
	body[ParityShardSize+12345] ^= 0x10
	back, bad, err := p.Recover(body)
	if err != nil || bad != 1 || len(back.Channels) != len(h.Channels) || !cmp.Equal(back.Channels, h.Channels) {
		t.Fatalf("repair: shard %d, %d channels, %v", bad, len(back.Channels), err)
	}
}

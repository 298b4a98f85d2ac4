package wireformat

import (
	"crypto/subtle"
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// A header too large for a HeaderCopy (over 4 MiB: a catalog of tens of
// thousands of channels) is followed instead by a parity copy
// (ds-format(5) "HeaderCopy", parity form): a HeaderCopy record whose first
// body byte has bit 7 set ([ParityKind]), holding the CRC32C of each shard
// of [ParityShardSize] bytes of the header body and the XOR of all shards.
// A reader whose header fails its checks finds the one shard whose CRC is
// wrong and rebuilds it from the others and the parity: damage confined to
// one shard (one flipped bit anywhere in the header) costs nothing, for
// about 1.6 % of the header's size where a whole copy would double it.
// Readers of version 1.2 and before skip a parity copy as a HeaderCopy
// when the header checks, and fail to decode it when it does not.

// ParityKind is the first body byte of a parity copy: bit 7 set, the major
// version in the low bits. A whole HeaderCopy's first byte is the major
// version itself.
const ParityKind = 0x80 | MajorVersion

// ParityShardSize is the shard size ds writers use in parity copies, in
// bytes: 256 KiB, so that a 16 MiB header's copy is 256 KiB of parity and
// 256 CRCs (at most twice that stored, escaped), within the 1 MiB a
// reader's buffer holds beyond the header.
const ParityShardSize = 256 << 10

// HeaderParity is a decoded parity copy ([ParseHeaderParity]).
type HeaderParity struct {
	// Major and Minor are the header's version (Major from the kind byte).
	Major, Minor uint8
	// SegmentID is the header's segment id; the record's CRC is seeded
	// with it.
	SegmentID [8]byte
	// BodyLen is the header body's length L, bytes.
	BodyLen int
	// ShardSize is the shard size S, bytes: the body is shards of S bytes,
	// the last one shorter when S does not divide L.
	ShardSize int
	// CRCs holds the CRC32C (unseeded) of each shard, ceil(L/S) of them.
	CRCs []uint32
	// Parity is the XOR of all shards, each zero-padded to S: min(L, S)
	// bytes. It aliases the body parsed.
	Parity []byte
}

// parityBuilder accumulates a parity copy from a header body written
// through it in pieces of any size.
type parityBuilder struct {
	shard  int      // shard size S
	crcs   []uint32 // of the shards completed
	parity []byte   // S bytes
	pos    int      // bytes of the current shard so far
	crc    uint32   // of the current shard so far
	n      int      // body bytes so far
}

func newParityBuilder(shard int) *parityBuilder {
	return &parityBuilder{shard: shard, parity: make([]byte, shard)}
}

// Write adds b, the next bytes of the header body. It never fails.
func (p *parityBuilder) Write(b []byte) (int, error) {
	n := len(b)
	p.n += n
	for len(b) > 0 {
		k := min(len(b), p.shard-p.pos)
		dst := p.parity[p.pos : p.pos+k]
		subtle.XORBytes(dst, dst, b[:k])
		p.crc = crc32.Update(p.crc, castagnoli, b[:k])
		p.pos += k
		b = b[k:]
		if p.pos == p.shard {
			p.crcs = append(p.crcs, p.crc)
			p.pos, p.crc = 0, 0
		}
	}
	return n, nil
}

// appendRecord appends the parity copy of the body written so far, of a
// header of version major.minor and segment id id.
func (p *parityBuilder) appendRecord(dst []byte, minor byte, id [8]byte) ([]byte, error) {
	crcs := p.crcs
	if p.pos > 0 {
		crcs = append(crcs, p.crc)
	}
	start := len(dst)
	dst = append(dst, byte(TypeHeaderCopy), 0, 0, 0, 0)
	dst = append(dst, ParityKind, minor)
	dst = append(dst, id[:]...)
	dst = binary.AppendUvarint(dst, uint64(p.n))
	dst = binary.AppendUvarint(dst, uint64(p.shard))
	for _, c := range crcs {
		dst = binary.LittleEndian.AppendUint32(dst, c)
	}
	dst = append(dst, p.parity[:min(p.n, p.shard)]...)
	out, err := finishRecord(dst, start, Seed(id))
	if err != nil {
		return dst[:start], fmt.Errorf("wireformat: header parity copy: %w", err)
	}
	return out, nil
}

// AppendHeaderParity appends the parity copy (a HeaderCopy record of kind
// [ParityKind], shards of [ParityShardSize]) of the encoded segment header
// header, as [AppendHeader] made it, under the seed of its segment id.
// Writers put it right after a header too large for [AppendHeaderCopy]. It
// returns dst unchanged and an error wrapping [ErrBadBody] when header is
// too short to be a header.
func AppendHeaderParity(dst, header []byte) ([]byte, error) {
	if len(header) < HeaderOverhead+8 {
		return dst, fmt.Errorf("%w: segment header of %d bytes", ErrBadBody, len(header))
	}
	body := header[HeaderPrefixSize : len(header)-4]
	p := newParityBuilder(ParityShardSize)
	p.Write(body)
	return p.appendRecord(dst, header[len(Magic)+1], [8]byte(body[:8]))
}

// IsHeaderParity reports whether body, a HeaderCopy record's body as
// [ParseRecord] returns it, is a parity copy rather than a whole copy.
func IsHeaderParity(body []byte) bool { return len(body) > 0 && body[0]&0x80 != 0 }

// ParseHeaderParity decodes the body of a parity copy (a HeaderCopy record
// whose body [IsHeaderParity]; unescaped, as [ParseRecord] returns it). It
// returns an error wrapping [ErrUnknownVersion] for a copy of another
// major version and [ErrBadBody] for one whose fields do not add up: a
// body length over [MaxHeaderSize] or under 8, a shard size of 0, or a
// record of another length than its fields say. The CRC under the seed of
// SegmentID is the caller's to check. Parity aliases body.
func ParseHeaderParity(body []byte) (HeaderParity, error) {
	var p HeaderParity
	if len(body) < 10 || !IsHeaderParity(body) {
		return p, fmt.Errorf("%w: header parity copy of %d bytes", ErrBadBody, len(body))
	}
	if body[0]&^0x80 != MajorVersion {
		return p, versionError(body[0] &^ 0x80)
	}
	p.Major, p.Minor = body[0]&^0x80, body[1]
	copy(p.SegmentID[:], body[2:10])
	b := body[10:]
	l, k := binary.Uvarint(b)
	if k <= 0 || l < 8 || l > MaxHeaderSize {
		return p, fmt.Errorf("%w: header parity copy: body length", ErrBadBody)
	}
	b = b[k:]
	s, k := binary.Uvarint(b)
	if k <= 0 || s == 0 || s > MaxHeaderSize {
		return p, fmt.Errorf("%w: header parity copy: shard size", ErrBadBody)
	}
	b = b[k:]
	p.BodyLen, p.ShardSize = int(l), int(s)
	shards := (p.BodyLen + p.ShardSize - 1) / p.ShardSize
	plen := min(p.BodyLen, p.ShardSize)
	if len(b) != 4*shards+plen {
		return p, fmt.Errorf("%w: header parity copy of %d bytes for %d shards of %d", ErrBadBody, len(body), shards, p.ShardSize)
	}
	p.CRCs = make([]uint32, shards)
	for i := range p.CRCs {
		p.CRCs[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	p.Parity = b[4*shards:]
	return p, nil
}

// Recover repairs body, the header body of a damaged header (p.BodyLen
// bytes), in place from the parity copy p (body changes only when the
// repair checks), and decodes it as
// [ParseHeaderCopy] decodes a whole copy (Major and Minor from p). At most
// one shard may be damaged: it is rebuilt as the XOR of the parity and the
// other shards and must then check. It returns the header and the index
// of the shard rebuilt (-1 when every shard checked: the damage was
// outside the body, in its prefix or CRC; given too with the errors of a
// rebuilt body that then does not decode); an error wrapping
// [ErrChecksum] when two or more shards fail their CRC or the rebuilt one
// still does, [ErrBadBody] when body is not p.BodyLen bytes or its
// segment id is not p's, or the errors of [ParseHeader] for a body that
// does not decode.
func (p *HeaderParity) Recover(body []byte) (Header, int, error) {
	if len(body) != p.BodyLen {
		return Header{}, -1, fmt.Errorf("%w: header body of %d bytes, parity copy of %d", ErrBadBody, len(body), p.BodyLen)
	}
	bad := -1
	for i, want := range p.CRCs {
		if crc32.Checksum(p.shardOf(body, i), castagnoli) == want {
			continue
		}
		if bad >= 0 {
			return Header{}, -1, fmt.Errorf("%w: header shards %d and %d both damaged", ErrChecksum, bad, i)
		}
		bad = i
	}
	if bad >= 0 {
		// The shard is the parity XOR every other shard (zero-padded),
		// built aside: body changes only if it checks.
		shard := p.shardOf(body, bad)
		dst := make([]byte, len(shard))
		copy(dst, p.Parity)
		for i := range p.CRCs {
			if i != bad {
				src := p.shardOf(body, i)
				n := min(len(src), len(dst))
				subtle.XORBytes(dst[:n], dst[:n], src[:n])
			}
		}
		if crc32.Checksum(dst, castagnoli) != p.CRCs[bad] {
			return Header{}, -1, fmt.Errorf("%w: header shard %d rebuilt from its parity copy", ErrChecksum, bad)
		}
		copy(shard, dst)
	}
	if [8]byte(body[:8]) != p.SegmentID {
		return Header{}, bad, fmt.Errorf("%w: header segment id is not its parity copy's", ErrBadBody)
	}
	h, err := parseHeaderBody(body, false, nil)
	if err != nil {
		return Header{}, bad, err
	}
	h.Major, h.Minor = p.Major, p.Minor
	return h, bad, nil
}

// shardOf returns shard i of body.
func (p *HeaderParity) shardOf(body []byte, i int) []byte {
	return body[i*p.ShardSize : min((i+1)*p.ShardSize, len(body))]
}

package segments

import (
	"hash/crc32"
	"sync"
)

// Resynchronisation (ds-format(5) "Resynchronisation") checks candidate
// records and headers at many offsets of damaged input. Computing each
// candidate's CRC32C from scratch would cost its length, so a crafted input
// with a plausible candidate every few bytes, each claiming megabytes, would
// take quadratic time. Instead the reader keeps prefix CRCs every 64 bytes
// of the stretch it scans (a crcIndex) and derives the CRC of any range
// from two prefixes with CRC combination (zlib's crc32_combine): constant
// work per candidate, one CRC pass over the bytes passed.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// castagnoliPoly is the reflected CRC32C polynomial.
const castagnoliPoly = 0x82F63B78

// multModP returns a(x)·b(x) modulo the CRC32C polynomial, bit-reflected
// (zlib's multmodp).
func multModP(a, b uint32) uint32 {
	var p uint32
	for m := uint32(1) << 31; m != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
			if a&(m-1) == 0 {
				break
			}
		}
		if b&1 != 0 {
			b = b>>1 ^ castagnoliPoly
		} else {
			b >>= 1
		}
	}
	return p
}

// shiftTables[j][v] = x^(8·v·256^j) mod P: multiplying a CRC by it appends
// v·256^j zero bytes.
var shiftTables = sync.OnceValue(func() *[4][256]uint32 {
	var t [4][256]uint32
	// x8 = x^8 (appending one zero byte), in reflected form x^i is 1<<(31-i).
	step := uint32(1) << (31 - 8)
	for j := range t {
		t[j][0] = 1 << 31 // x^0
		for v := 1; v < 256; v++ {
			t[j][v] = multModP(t[j][v-1], step)
		}
		step = multModP(t[j][255], step) // x^(8·256^(j+1))
	}
	return &t
})

// crcShift returns the CRC of A followed by n zero bytes' worth of shift:
// crc32c(A‖B) = crcShift(crc32c(A), len(B)) ^ crc32c(B). n < 2^32.
func crcShift(crc uint32, n int) uint32 {
	t := shiftTables()
	for j := 0; n != 0; j++ {
		if v := n & 0xFF; v != 0 {
			crc = multModP(t[j][v], crc)
		}
		n >>= 8
	}
	return crc
}

// crcIndex holds prefix CRCs of the input from some origin o0, one per 64
// bytes: cps[k] = CRC32C(input[o0 : origin+64k]) where origin ≥ o0 is the
// offset of cps[0]. The reader keeps input from origin on in its buffer
// while the index is in use.
type crcIndex struct {
	origin int64
	cps    []uint32
}

const crcStride = 64

// reset starts the index afresh at offset pos.
func (x *crcIndex) reset(pos int64) {
	x.origin = pos
	x.cps = append(x.cps[:0], 0)
}

// trim drops checkpoints that no offset ≥ pos needs, or resets the index at
// pos if pos is past all of them.
func (x *crcIndex) trim(pos int64) {
	k := int((pos - x.origin) / crcStride)
	if k >= len(x.cps)-1 {
		x.reset(pos)
		return
	}
	x.cps = x.cps[k:]
	x.origin += int64(k) * crcStride
}

// prefix returns CRC32C(input[o0:p]) for origin ≤ p, given data(a, b) that
// returns input[a:b] (which must be buffered).
func (x *crcIndex) prefix(p int64, data func(a, b int64) []byte) uint32 {
	k := int((p - x.origin) / crcStride)
	for len(x.cps) <= k {
		last := len(x.cps) - 1
		a := x.origin + int64(last)*crcStride
		x.cps = append(x.cps, crc32.Update(x.cps[last], castagnoli, data(a, a+crcStride)))
	}
	a := x.origin + int64(k)*crcStride
	return crc32.Update(x.cps[k], castagnoli, data(a, p))
}

// rangeCRC returns CRC32C(seedPrefix ‖ input[a:b]) where seed is the
// CRC32C of seedPrefix (0 for none): the CRC a record or header at a ending
// at b must carry.
func (x *crcIndex) rangeCRC(seed uint32, a, b int64, data func(a, b int64) []byte) uint32 {
	pa := x.prefix(a, data)
	pb := x.prefix(b, data)
	return crcShift(seed^pa, int(b-a)) ^ pb
}

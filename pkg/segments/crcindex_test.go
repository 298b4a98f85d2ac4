package segments

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

func TestCRCShift(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		a := make([]byte, rng.IntN(300))
		b := make([]byte, rng.IntN(70000))
		for i := range a {
			a[i] = byte(rng.Uint32())
		}
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		whole := crc32.Checksum(append(append([]byte(nil), a...), b...), castagnoli)
		got := crcShift(crc32.Checksum(a, castagnoli), len(b)) ^ crc32.Checksum(b, castagnoli)
		if got != whole {
			t.Fatalf("combine(%d, %d bytes) = %08x, want %08x", len(a), len(b), got, whole)
		}
	}
}

func TestCRCIndexRanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	data := make([]byte, 20000)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	at := func(a, b int64) []byte { return data[a:b] }
	var x crcIndex
	x.reset(100)
	seed := crc32.Checksum([]byte("segment"), castagnoli)
	for pos := int64(100); pos < 19000; pos += int64(rng.IntN(300)) {
		x.trim(pos)
		for range 3 {
			a := pos + int64(rng.IntN(200))
			b := a + int64(rng.IntN(800))
			want := crc32.Update(seed, castagnoli, data[a:b])
			if got := x.rangeCRC(seed, a, b, at); got != want {
				t.Fatalf("rangeCRC(%d, %d) = %08x, want %08x", a, b, got, want)
			}
			if got, want := x.rangeCRC(0, a, b, at), crc32.Checksum(data[a:b], castagnoli); got != want {
				t.Fatalf("unseeded rangeCRC(%d, %d) = %08x, want %08x", a, b, got, want)
			}
		}
		if x.origin > pos || pos-x.origin >= crcStride {
			t.Fatalf("trim(%d) left origin %d", pos, x.origin)
		}
	}
}

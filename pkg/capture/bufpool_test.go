package capture

import "testing"

func TestPayloadPool(t *testing.T) {
	for _, n := range []int{0, 1, 511, 512, 513, 4096, 65535, 65536} {
		b := AllocPayload(n)
		if len(b) != 0 || cap(b) < n || cap(b) > max(2*n, 512) {
			t.Errorf("AllocPayload(%d): len %d cap %d", n, len(b), cap(b))
		}
		releasePayload(b)
	}
	if b := AllocPayload(70000); cap(b) < 70000 {
		t.Errorf("large: cap %d", cap(b))
	}
	releasePayload(make([]byte, 0, 1000)) // not a class size: ignored
}

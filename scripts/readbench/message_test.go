package main

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestMessage checks that the fast message maker makes fmt's bytes, so
// that the inputs of the benchmarks do not change with it.
func TestMessage(t *testing.T) {
	a, b := rand.New(rand.NewPCG(2026, 9)), rand.New(rand.NewPCG(2026, 9))
	for _, i := range []int{0, 1, 2, 49, 50, 999, 10006, 10007, 123456, 9999999, 123456789012} {
		for range 50 {
			got, want := messageFrom(a, nil, i), messageFmt(b, nil, i)
			if !bytes.Equal(got, want) {
				t.Fatalf("message %d:\n got %q\nwant %q", i, got, want)
			}
			if len(got) != msgLen+1 {
				t.Fatalf("message %d is %d bytes", i, len(got))
			}
		}
	}
}

package diff

import (
	"math/rand/v2"
	"testing"
)

// lcsLen is the length of a longest common subsequence, by dynamic
// programming: the reference for small inputs.
func lcsLen(a, b []uint64) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			switch {
			case a[i] == b[j]:
				cur[j+1] = prev[j] + 1
			case prev[j+1] >= cur[j]:
				cur[j+1] = prev[j+1]
			default:
				cur[j+1] = cur[j]
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// checkPairs fails unless pairs is a common subsequence of a and b.
func checkPairs(t *testing.T, a, b []uint64, pairs []Pair) {
	t.Helper()
	for k, p := range pairs {
		if p.A < 0 || p.A >= len(a) || p.B < 0 || p.B >= len(b) || a[p.A] != b[p.B] {
			t.Fatalf("pair %d %v does not match (a %v b %v)", k, p, a, b)
		}
		if k > 0 && (p.A <= pairs[k-1].A || p.B <= pairs[k-1].B) {
			t.Fatalf("pairs out of order at %d: %v after %v", k, p, pairs[k-1])
		}
	}
}

func randSeq(r *rand.Rand, n, alphabet int) []uint64 {
	s := make([]uint64, n)
	for i := range s {
		s[i] = uint64(r.IntN(alphabet))
	}
	return s
}

// TestMyersMinimal: Myers alone finds a longest common subsequence.
func TestMyersMinimal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		a, b := randSeq(r, r.IntN(40), 1+r.IntN(6)), randSeq(r, r.IntN(40), 1+r.IntN(6))
		d := &differ{a: a, b: b}
		if !d.bisect(0, len(a), 0, len(b), -1) {
			t.Fatal("unbounded bisect gave up")
		}
		checkPairs(t, a, b, d.out)
		if want := lcsLen(a, b); len(d.out) != want {
			t.Fatalf("a %v b %v: %d matches, want %d", a, b, len(d.out), want)
		}
	}
}

// TestMatchValid: Match gives a common subsequence, and a longest one
// when every line is unique (patience is then exact).
func TestMatchValid(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 2000; i++ {
		a, b := randSeq(r, r.IntN(60), 1+r.IntN(20)), randSeq(r, r.IntN(60), 1+r.IntN(20))
		pairs, approx := Match(a, b)
		if approx {
			t.Fatal("small input approximated")
		}
		checkPairs(t, a, b, pairs)
	}
	// A permutation's runs: every line unique.
	a := []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9}
	b := []uint64{1, 2, 10, 4, 5, 3, 7, 11, 9}
	pairs, _ := Match(a, b)
	if want := lcsLen(a, b); len(pairs) != want {
		t.Fatalf("%d matches, want %d: %v", len(pairs), want, pairs)
	}
}

func TestMatchCases(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b []uint64
		want []Pair
	}{
		{"empty", nil, nil, nil},
		{"a empty", nil, []uint64{1, 2}, nil},
		{"b empty", []uint64{1, 2}, nil, nil},
		{"same", []uint64{1, 2, 3}, []uint64{1, 2, 3}, []Pair{{0, 0}, {1, 1}, {2, 2}}},
		{"insert", []uint64{1, 3}, []uint64{1, 2, 3}, []Pair{{0, 0}, {1, 2}}},
		{"delete", []uint64{1, 2, 3}, []uint64{1, 3}, []Pair{{0, 0}, {2, 1}}},
		{"replace", []uint64{1, 2, 3}, []uint64{1, 9, 3}, []Pair{{0, 0}, {2, 2}}},
		{"disjoint", []uint64{1, 2}, []uint64{3, 4}, nil},
		// Patience keeps the unique lines (the braces) together: the
		// repeated blank lines do not pull the match off them.
		{"patience", []uint64{7, 0, 1, 0, 2}, []uint64{7, 0, 2, 0, 1, 0, 2}, []Pair{{0, 0}, {1, 1}, {2, 4}, {3, 5}, {4, 6}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, approx := Match(tc.a, tc.b)
			if approx {
				t.Fatal("approximate")
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}

// TestMatchLarge: a million lines a side, a few hundred changed, and
// lines repeated (what masked numbers make of a log), diff in bounded
// work; two sides with nothing in common are replaced whole, exactly.
func TestMatchLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("large")
	}
	const n = 1_000_000
	r := rand.New(rand.NewPCG(5, 6))
	a := make([]uint64, n)
	for i := range a {
		if i%10 == 0 {
			a[i] = 1 // a repeated line ("ok <N>")
		} else {
			a[i] = uint64(i) + 100
		}
	}
	b := append([]uint64(nil), a...)
	for k := 0; k < 300; k++ {
		b[r.IntN(n)] = uint64(n + 1000 + k)
	}
	pairs, approx := Match(a, b)
	checkPairs(t, a, b, pairs)
	if approx || len(pairs) < n-300 {
		t.Fatalf("%d matches (approx %v), want at least %d", len(pairs), approx, n-300)
	}
	c := make([]uint64, n)
	for i := range c {
		c[i] = uint64(3*n + i%7)
	}
	pairs, _ = Match(a, c)
	if len(pairs) != 0 {
		t.Fatalf("%d matches of sides with nothing in common", len(pairs))
	}
	// Both sides the same few lines in another order: no anchor, Myers
	// bounded.
	x, y := make([]uint64, n), make([]uint64, n)
	for i := range x {
		x[i], y[i] = uint64(i%3), uint64(i%5)
	}
	pairs, _ = Match(x, y)
	checkPairs(t, x, y, pairs)
}

package diff

import "sort"

// This file holds the line diff: which lines of one run match which
// lines of the other, in order (a common subsequence), found on the
// lines' keys (ints, see Matcher.Key), never on their text.
//
// The algorithm is patience diff (as git diff --patience) over Myers:
// the common prefix and suffix are matched first; then the lines that
// occur exactly once on each side of the region are matched where they
// keep their order (the longest increasing subsequence of them, the
// anchors), and the regions between anchors are diffed the same way,
// recursively; a region with no such line is diffed by Myers' O(ND)
// algorithm in linear space (E. Myers, "An O(ND) Difference Algorithm and
// Its Variations", 1986), which finds a longest common subsequence.
//
// Bounds: Myers costs (N+M)·D steps for a region of N and M lines that
// differ in D of them. A region is given at most maxMyersSteps steps: a
// region that needs more (large and very different, with no line unique
// to both sides to anchor on) is taken as replaced whole, and the result
// says it was approximate. The patience passes cost O(n log n) each, and
// all of them together at most maxPatienceWork line visits; past that,
// the regions left are diffed by Myers alone. So a diff of two runs of a
// million lines each takes seconds at most, in memory linear in the
// lines.

// maxMyersSteps bounds the work of Myers on one region (see above).
const maxMyersSteps = 200_000_000

// patienceWorkFactor bounds the lines visited by all the patience passes
// together, as a multiple of the lines compared.
const patienceWorkFactor = 32

// A Pair is a matched line: index A of the first sequence and B of the
// second.
type Pair struct{ A, B int }

// Match returns the matches of a and b (their lines' keys), in increasing
// order of both indices, and whether some region was too costly to diff
// exactly and taken as replaced (approx). See the file's comment for the
// algorithm and its bounds.
func Match(a, b []uint64) (pairs []Pair, approx bool) {
	d := &differ{a: a, b: b, patienceWork: patienceWorkFactor * (len(a) + len(b) + 64)}
	d.diff(0, len(a), 0, len(b))
	return d.out, d.approx
}

type differ struct {
	a, b         []uint64
	out          []Pair
	approx       bool
	patienceWork int              // line visits left to the patience passes
	v1, v2       []int            // Myers' V arrays, reused
	uniq         map[uint64]int32 // key → index in counts
	counts       []uniqueCount
}

// diff matches a[alo:ahi] with b[blo:bhi], appending to d.out in order.
func (d *differ) diff(alo, ahi, blo, bhi int) {
	for alo < ahi && blo < bhi && d.a[alo] == d.b[blo] {
		d.out = append(d.out, Pair{alo, blo})
		alo, blo = alo+1, blo+1
	}
	n := 0
	for ahi > alo && bhi > blo && d.a[ahi-1] == d.b[bhi-1] {
		ahi, bhi, n = ahi-1, bhi-1, n+1
	}
	if alo < ahi && blo < bhi {
		if anchors := d.anchors(alo, ahi, blo, bhi); len(anchors) > 0 {
			pa, pb := alo, blo
			for _, p := range anchors {
				d.diff(pa, p.A, pb, p.B)
				d.out = append(d.out, p)
				pa, pb = p.A+1, p.B+1
			}
			d.diff(pa, ahi, pb, bhi)
		} else {
			d.myers(alo, ahi, blo, bhi)
		}
	}
	for k := 0; k < n; k++ {
		d.out = append(d.out, Pair{ahi + k, bhi + k})
	}
}

type uniqueCount struct {
	na, nb int32
	ia, ib int
}

// anchors returns the lines of the region that occur once on each side,
// in the longest run that keeps their order on both; none when there is
// no such line or the patience passes' budget is spent.
func (d *differ) anchors(alo, ahi, blo, bhi int) []Pair {
	size := ahi - alo + bhi - blo
	if size < 4 || d.patienceWork < size {
		return nil
	}
	d.patienceWork -= size
	if d.uniq == nil {
		d.uniq = make(map[uint64]int32)
	}
	m := d.uniq
	clear(m)
	d.counts = d.counts[:0]
	for i := alo; i < ahi; i++ {
		k, ok := m[d.a[i]]
		if !ok {
			k = int32(len(d.counts))
			d.counts = append(d.counts, uniqueCount{})
			m[d.a[i]] = k
		}
		d.counts[k].na++
		d.counts[k].ia = i
	}
	for j := blo; j < bhi; j++ {
		if k, ok := m[d.b[j]]; ok {
			d.counts[k].nb++
			d.counts[k].ib = j
		}
	}
	var cand []Pair
	for i := alo; i < ahi; i++ {
		if u := &d.counts[m[d.a[i]]]; u.na == 1 && u.nb == 1 {
			cand = append(cand, Pair{i, u.ib})
		}
	}
	clear(m)
	return longestIncreasing(cand)
}

// longestIncreasing returns the longest subsequence of ps (in increasing
// order of A) whose B increase too (patience sorting, O(n log n)).
func longestIncreasing(ps []Pair) []Pair {
	if len(ps) == 0 {
		return nil
	}
	tails := []int{} // tails[k]: index in ps of the smallest B ending a run of k+1
	prev := make([]int, len(ps))
	for i, p := range ps {
		k := sort.Search(len(tails), func(k int) bool { return ps[tails[k]].B >= p.B })
		if k > 0 {
			prev[i] = tails[k-1]
		} else {
			prev[i] = -1
		}
		if k == len(tails) {
			tails = append(tails, i)
		} else {
			tails[k] = i
		}
	}
	out := make([]Pair, len(tails))
	for i, k := tails[len(tails)-1], len(tails)-1; k >= 0; i, k = prev[i], k-1 {
		out[k] = ps[i]
	}
	return out
}

// myers matches the region by Myers' algorithm, within maxMyersSteps;
// past that it matches nothing in it (replaced whole) and notes approx.
func (d *differ) myers(alo, ahi, blo, bhi int) {
	n, m := ahi-alo, bhi-blo
	maxD := maxMyersSteps / (n + m)
	if !d.bisect(alo, ahi, blo, bhi, maxD) {
		d.approx = true
	}
}

// bisect finds a point of an optimal path of the region (its middle
// snake) and diffs the two parts on either side of it, recursively
// (Myers' linear-space refinement; the bisection as in diff-match-patch).
// It gives up, matching nothing and returning false, when the region
// differs in more than maxD lines (maxD < 0: no bound).
func (d *differ) bisect(alo, ahi, blo, bhi, maxD int) bool {
	for alo < ahi && blo < bhi && d.a[alo] == d.b[blo] {
		d.out = append(d.out, Pair{alo, blo})
		alo, blo = alo+1, blo+1
	}
	tail := 0
	for ahi > alo && bhi > blo && d.a[ahi-1] == d.b[bhi-1] {
		ahi, bhi, tail = ahi-1, bhi-1, tail+1
	}
	defer func() {
		for k := 0; k < tail; k++ {
			d.out = append(d.out, Pair{ahi + k, bhi + k})
		}
	}()
	if alo == ahi || blo == bhi {
		return true
	}
	a, b := d.a[alo:ahi], d.b[blo:bhi]
	n, m := len(a), len(b)
	dmax := (n + m + 1) / 2
	capped := maxD >= 0 && dmax > maxD+1
	if capped {
		dmax = maxD + 1
	}
	off := dmax + 1
	size := 2*dmax + 3
	if cap(d.v1) < size {
		d.v1, d.v2 = make([]int, size), make([]int, size)
	}
	v1, v2 := d.v1[:size], d.v2[:size]
	for i := range v1 {
		v1[i], v2[i] = -1, -1
	}
	v1[off+1], v2[off+1] = 0, 0
	delta := n - m
	front := delta%2 != 0
	k1start, k1end, k2start, k2end := 0, 0, 0, 0
	for D := 0; D < dmax; D++ {
		for k1 := -D + k1start; k1 <= D-k1end; k1 += 2 {
			i := off + k1
			var x1 int
			if k1 == -D || k1 != D && v1[i-1] < v1[i+1] {
				x1 = v1[i+1]
			} else {
				x1 = v1[i-1] + 1
			}
			y1 := x1 - k1
			for x1 < n && y1 < m && a[x1] == b[y1] {
				x1, y1 = x1+1, y1+1
			}
			v1[i] = x1
			switch {
			case x1 > n:
				k1end += 2
			case y1 > m:
				k1start += 2
			case front:
				j := off + delta - k1
				if j >= 0 && j < size && v2[j] != -1 && x1 >= n-v2[j] {
					d.split(alo, ahi, blo, bhi, x1, y1)
					return true
				}
			}
		}
		for k2 := -D + k2start; k2 <= D-k2end; k2 += 2 {
			i := off + k2
			var x2 int
			if k2 == -D || k2 != D && v2[i-1] < v2[i+1] {
				x2 = v2[i+1]
			} else {
				x2 = v2[i-1] + 1
			}
			y2 := x2 - k2
			for x2 < n && y2 < m && a[n-x2-1] == b[m-y2-1] {
				x2, y2 = x2+1, y2+1
			}
			v2[i] = x2
			switch {
			case x2 > n:
				k2end += 2
			case y2 > m:
				k2start += 2
			case !front:
				j := off + delta - k2
				if j >= 0 && j < size && v1[j] != -1 {
					x1 := v1[j]
					y1 := off + x1 - j
					if x1 >= n-x2 {
						d.split(alo, ahi, blo, bhi, x1, y1)
						return true
					}
				}
			}
		}
	}
	// No path within dmax: past maxD, or nothing in common (D = N+M;
	// nothing to match, which is exact).
	return !capped
}

// split diffs the two parts of the region on either side of (x, y), an
// offset into it on an optimal path.
func (d *differ) split(alo, ahi, blo, bhi, x, y int) {
	d.bisect(alo, alo+x, blo, blo+y, -1)
	d.bisect(alo+x, ahi, blo+y, bhi, -1)
}

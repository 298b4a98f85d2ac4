// Package faults is a seeded fault-injection transport for tests of
// ingest: it does to a sequence of pieces (the encoded records or frames
// of captures, whole segments, or whole files) what the transports of
// ARCHITECTURE.md §1 may do on the way from a producer to a store — drop,
// duplicate, reorder, delay — and cuts captures into files at any byte
// offset, the way a copy, a rotation or a crash does.
//
// A [Transport] works on the identities of n pieces, 0 to n−1, and never
// on the pieces themselves: each operation changes its [Transport.Order]
// (the identities in delivery order, a copy appearing twice, a dropped
// piece not at all), and [Apply] then takes the pieces in that order.
// Every random choice is drawn from one *rand.Rand made from the seed, so
// the same seed and the same calls give the same deliveries; the
// [Script] records each operation with what it did (which pieces were
// dropped, copied or moved, and the order that resulted), so that a
// failing property prints a seed that reproduces it and a script a person
// can read, and [Script.Replay] redoes it without the seed.
//
// [Places] lists where the segments and records of a DSS capture lie, and
// [Transport.Cut] splits a capture into files at offsets drawn anywhere,
// inside segment headers and next to StreamEnded records included.
//
// The package is for tests: it is not used by ds itself, it allocates
// freely, and it panics on arguments a test cannot mean (a window below
// 1, a probability outside 0–1).
package faults

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// OpKind says what an [Op] did.
type OpKind uint8

const (
	// OpDrop lost pieces: Op.IDs are the identities dropped.
	OpDrop OpKind = iota + 1
	// OpDuplicate delivered pieces twice: Op.IDs are the identities
	// copied; each copy went to a later place.
	OpDuplicate
	// OpReverse reversed each window of Op.K consecutive pieces.
	OpReverse
	// OpShuffleWindows permuted the pieces at random within each window
	// of Op.K consecutive pieces.
	OpShuffleWindows
	// OpShuffle permuted all pieces at random.
	OpShuffle
	// OpDelay moved pieces later by up to Op.K places: Op.IDs are the
	// identities moved.
	OpDelay
	// OpCut split a capture into files at Op.Offsets.
	OpCut
)

var opNames = [...]string{"", "drop", "duplicate", "reverse", "shuffle-windows", "shuffle", "delay", "cut"}

// String returns the operation's name: "drop", "duplicate", "reverse",
// "shuffle-windows", "shuffle", "delay" or "cut".
func (k OpKind) String() string {
	if int(k) < len(opNames) && k > 0 {
		return opNames[k]
	}
	return fmt.Sprintf("OpKind(%d)", uint8(k))
}

// Op is one operation of a [Script], with what it did.
type Op struct {
	Kind OpKind
	// P is the probability each piece had of being affected (OpDrop,
	// OpDuplicate, OpDelay drawn at random); 0 when the pieces were named.
	P float64
	// K is the window (OpReverse, OpShuffleWindows) or the longest delay,
	// in places (OpDelay).
	K int
	// IDs are the identities of the pieces dropped, copied or delayed, in
	// the order the operation met them.
	IDs []int
	// Order is the delivery order after the operation, as indexes into the
	// order before it (an index twice for a copy, missing for a drop):
	// what [Script.Replay] applies. Nil for OpCut.
	Order []int
	// Offsets are the byte offsets of the cuts, ascending (OpCut).
	Offsets []int64
}

// String describes the operation briefly: its kind, parameters and the
// pieces it affected (the first 16).
func (o Op) String() string {
	var b strings.Builder
	b.WriteString(o.Kind.String())
	switch o.Kind {
	case OpReverse, OpShuffleWindows:
		fmt.Fprintf(&b, " k=%d", o.K)
	case OpDelay:
		fmt.Fprintf(&b, " d≤%d", o.K)
	}
	if o.P > 0 {
		fmt.Fprintf(&b, " p=%g", o.P)
	}
	switch o.Kind {
	case OpDrop, OpDuplicate, OpDelay:
		b.WriteString(" " + short(o.IDs))
	case OpShuffle, OpShuffleWindows:
		b.WriteString(" → " + short(o.Order))
	case OpCut:
		b.WriteString(" at " + short(o.Offsets))
	}
	return b.String()
}

// short prints up to 16 values of s, and how many more there are.
func short[T int | int64](s []T) string {
	const most = 16
	var b strings.Builder
	b.WriteByte('[')
	for i, v := range s {
		if i == most {
			fmt.Fprintf(&b, " …+%d", len(s)-most)
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprint(&b, v)
	}
	b.WriteByte(']')
	return b.String()
}

// Script is what a [Transport] did: its seed, the number of pieces it
// started with, and its operations in order.
type Script struct {
	Seed uint64
	N    int
	Ops  []Op
}

// String prints the script on one line: "seed S, N pieces: op; op; …".
func (s Script) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d, %d pieces:", s.Seed, s.N)
	if len(s.Ops) == 0 {
		b.WriteString(" delivered as they are")
	}
	for i, op := range s.Ops {
		if i > 0 {
			b.WriteByte(';')
		}
		b.WriteString(" " + op.String())
	}
	return b.String()
}

// Replay redoes the script's operations on the identities 0..s.N−1,
// without random draws, and returns the delivery order they gave (cuts
// are not part of it: see [Op].Offsets).
func (s Script) Replay() []int {
	order := identity(s.N)
	for _, op := range s.Ops {
		if op.Order == nil {
			continue
		}
		order = Apply(op.Order, order)
	}
	return order
}

// Transport is a seeded fault-injection transport over n pieces (see the
// package documentation). Its methods change the delivery order and
// record what they did; none may be called concurrently.
type Transport struct {
	rng    *rand.Rand
	order  []int
	script Script
}

// New returns a transport of n pieces, delivered in order until an
// operation says otherwise, whose random draws come from seed.
func New(seed uint64, n int) *Transport {
	return &Transport{
		rng:    rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		order:  identity(n),
		script: Script{Seed: seed, N: n},
	}
}

func identity(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// Rand returns the transport's source of random draws, for a test that
// draws more from the same seed (which stream to build, how long).
func (t *Transport) Rand() *rand.Rand { return t.rng }

// Order returns the identities of the pieces in delivery order. The slice
// is the caller's.
func (t *Transport) Order() []int { return slices.Clone(t.order) }

// Script returns what the transport did so far.
func (t *Transport) Script() Script {
	s := t.script
	s.Ops = slices.Clone(s.Ops)
	return s
}

// Apply returns pieces in the order given by order (identities, that is
// indexes into pieces): a copy for each repeat, nothing for an identity
// missing. The pieces themselves are not copied.
func Apply[T any](order []int, pieces []T) []T {
	out := make([]T, len(order))
	for i, id := range order {
		out[i] = pieces[id]
	}
	return out
}

// record applies the index mapping m to the order and records op with it.
func (t *Transport) record(op Op, m []int) {
	op.Order = m
	t.order = Apply(m, t.order)
	t.script.Ops = append(t.script.Ops, op)
}

func checkP(p float64) {
	if !(p >= 0 && p <= 1) {
		panic(fmt.Sprintf("faults: probability %v outside 0–1", p))
	}
}

func checkK(k int) {
	if k < 1 {
		panic(fmt.Sprintf("faults: window %d below 1", k))
	}
}

// Drop loses each piece with probability p, and returns the identities
// lost, in delivery order.
func (t *Transport) Drop(p float64) []int {
	checkP(p)
	var ids, m []int
	for i, id := range t.order {
		if t.rng.Float64() < p {
			ids = append(ids, id)
			continue
		}
		m = append(m, i)
	}
	t.record(Op{Kind: OpDrop, P: p, IDs: ids}, nonNil(m))
	return ids
}

// DropIDs loses every delivery of the pieces whose identities are given.
func (t *Transport) DropIDs(ids ...int) {
	lost := make(map[int]bool, len(ids))
	for _, id := range ids {
		lost[id] = true
	}
	var m []int
	for i, id := range t.order {
		if !lost[id] {
			m = append(m, i)
		}
	}
	t.record(Op{Kind: OpDrop, IDs: slices.Clone(ids)}, nonNil(m))
}

// Duplicate delivers each piece a second time with probability p: the
// copy goes to a place drawn at random after the original. It returns the
// identities copied.
func (t *Transport) Duplicate(p float64) []int {
	checkP(p)
	var ids []int
	m := identity(len(t.order))
	for i, id := range t.order {
		if t.rng.Float64() >= p {
			continue
		}
		ids = append(ids, id)
		// m holds the original at some index j; the copy goes after it.
		j := slices.Index(m, i)
		at := j + 1 + t.rng.IntN(len(m)-j)
		m = slices.Insert(m, at, i)
	}
	t.record(Op{Kind: OpDuplicate, P: p, IDs: ids}, m)
	return ids
}

// Reverse reverses each window of k consecutive pieces (the last window
// may be shorter): k = 3 delivers 0..7 as 2 1 0 5 4 3 7 6.
func (t *Transport) Reverse(k int) {
	checkK(k)
	m := identity(len(t.order))
	for lo := 0; lo < len(m); lo += k {
		slices.Reverse(m[lo:min(lo+k, len(m))])
	}
	t.record(Op{Kind: OpReverse, K: k}, m)
}

// ShuffleWindows permutes the pieces at random within each window of k
// consecutive pieces.
func (t *Transport) ShuffleWindows(k int) {
	checkK(k)
	m := identity(len(t.order))
	for lo := 0; lo < len(m); lo += k {
		w := m[lo:min(lo+k, len(m))]
		t.rng.Shuffle(len(w), func(i, j int) { w[i], w[j] = w[j], w[i] })
	}
	t.record(Op{Kind: OpShuffleWindows, K: k}, m)
}

// Shuffle permutes all pieces at random.
func (t *Transport) Shuffle() {
	m := identity(len(t.order))
	t.rng.Shuffle(len(m), func(i, j int) { m[i], m[j] = m[j], m[i] })
	t.record(Op{Kind: OpShuffle}, m)
}

// Delay moves each piece, with probability p, later by 1 to d places
// (fewer at the end): it then arrives after up to d of the pieces that
// followed it. It returns the identities moved, last first.
func (t *Transport) Delay(p float64, d int) []int {
	checkP(p)
	checkK(d)
	m := identity(len(t.order))
	var ids []int
	// From the end, so that a piece is moved once and passes only pieces
	// that followed it.
	for i := len(m) - 2; i >= 0; i-- {
		if t.rng.Float64() >= p {
			continue
		}
		to := min(i+1+t.rng.IntN(d), len(m)-1)
		ids = append(ids, t.order[m[i]])
		x := m[i]
		copy(m[i:to], m[i+1:to+1])
		m[to] = x
	}
	t.record(Op{Kind: OpDelay, P: p, K: d, IDs: ids}, m)
	return ids
}

// Random applies ops operations drawn at random, with random parameters:
// reversed windows, permutations within windows, a full permutation,
// delays and duplicates; drops only if drop is set (a test that wants
// every piece delivered at least once leaves it unset).
func (t *Transport) Random(ops int, drop bool) {
	for range ops {
		n := max(len(t.order), 1)
		switch c := t.rng.IntN(6); {
		case c == 0 && drop:
			t.Drop(t.rng.Float64() * 0.3)
		case c <= 1:
			t.Duplicate(t.rng.Float64() * 0.3)
		case c == 2:
			t.Reverse(1 + t.rng.IntN(n))
		case c == 3:
			t.ShuffleWindows(1 + t.rng.IntN(n))
		case c == 4:
			t.Shuffle()
		default:
			t.Delay(t.rng.Float64()*0.5, 1+t.rng.IntN(n))
		}
	}
}

// nonNil keeps an empty mapping from reading as "no mapping" (OpCut).
func nonNil(m []int) []int {
	if m == nil {
		return []int{}
	}
	return m
}

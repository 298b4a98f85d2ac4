package diff

import (
	"slices"
	"time"
)

// Process is what one process's lifecycle records (proc.LABEL.lifecycle)
// said: its command, how it ended and its resource use (null where no
// record said).
type Process struct {
	Stream string   `json:"stream"` // node#life
	Label  string   `json:"label"`
	PID    int      `json:"pid,omitempty"`
	Argv   []string `json:"argv"`
	Cwd    string   `json:"cwd,omitempty"`
	// Exit is how it ended: null when no exited record was read.
	Exit *Exit `json:"exit"`
	// WallNS, UserNS and SysNS are its wall-clock, user and system CPU
	// time in ns; MaxRSSBytes its peak resident set (wait4's rusage,
	// its waited-for descendants included).
	WallNS      *int64 `json:"wall_ns"`
	UserNS      *int64 `json:"user_ns"`
	SysNS       *int64 `json:"sys_ns"`
	MaxRSSBytes *int64 `json:"max_rss_bytes"`
}

// Exit is how a process ended: Kind "code" (Value: the exit code),
// "signal" (Value: the signal number), "spawn_failed" (it could not
// start: Error says why, Value is ds wrap's exit code) or "unknown".
type Exit struct {
	Kind  string `json:"kind"`
	Value int    `json:"value"`
	Error string `json:"error,omitempty"`
}

func (e *Exit) equal(o *Exit) bool {
	if e == nil || o == nil {
		return e == o
	}
	return e.Kind == o.Kind && e.Value == o.Value
}

// Summary is one side of a diff: its input, streams, processes, host
// peaks, time span, lines and losses.
type Summary struct {
	Input     string    `json:"input"`
	Streams   []string  `json:"streams"`
	Processes []Process `json:"processes"`
	Host      HostPeaks `json:"host"`
	// TimeStart is its first clock reading (RFC 3339), DurationNS the
	// time to its last (or to its last process's exit); null without
	// clock records.
	TimeStart  *string `json:"time_start"`
	DurationNS *int64  `json:"duration_ns"`
	// Lines is how many lines were selected; IgnoredLines how many of
	// them --ignore masked whole and left out.
	Lines        int    `json:"lines"`
	IgnoredLines int    `json:"ignored_lines"`
	Losses       Losses `json:"losses"`
}

// Result is a diff of two runs: A the first, B the second.
type Result struct {
	A, B Summary
	// Same is true when no line is in one run only and the processes
	// ended alike; timing and resource use never count.
	Same bool
	// ExitDiffers says the processes did not end alike (another exit
	// status, or another number of processes).
	ExitDiffers bool
	// Removed and Added count the lines only in A and only in B.
	Removed, Added int
	// Approximate says that a region too costly to diff exactly (large,
	// very different, no line unique to both sides) was taken as
	// replaced whole: its lines are all counted as removed and added.
	Approximate bool
	Hunks       []Hunk
	// Timings are the steps whose time changed most, the largest change
	// first: at most Options.Timing, each of at least
	// Options.TimingMinNS.
	Timings []Timing

	a, b      *Run
	timingOn  bool  // Options.Timing > 0
	timingMin int64 // Options.TimingMinNS
}

// Hunk is a run of changed lines with their context, as a unified diff
// hunk: AStart, ALines (BStart, BLines) the first line number and the
// count of A's (B's) lines in it; a start is the line before when the
// hunk has none of that side's lines.
type Hunk struct {
	AStart, ALines, BStart, BLines int
	Lines                          []HunkLine
}

// Op says what a line of a hunk is.
type Op byte

// The ops of [HunkLine], as unified diff marks them.
const (
	OpSame   Op = ' ' // in both runs (context)
	OpRemove Op = '-' // only in A
	OpAdd    Op = '+' // only in B
)

// HunkLine is a line of a hunk: A and B are its line numbers on each
// side (1-based, among the lines selected; 0 on the side it is not in).
type HunkLine struct {
	Op   Op
	A, B int
}

// Timing is one step of the runs: from a line both have to the next line
// both have (A, B its line numbers on each side and ANext, BNext the next
// one's; 0 for the start of the runs and their end), and how long it took
// on each side (ns), with the change BNS − ANS.
type Timing struct {
	A, B, ANext, BNext int
	ANS, BNS, ChangeNS int64
}

// Compare diffs runs a and b (see the package doc): the lines only in one
// of them in hunks with opts.Context lines of context, the steps whose
// time changed most, and both summaries.
func Compare(a, b *Run, opts Options) *Result {
	res := &Result{A: a.summary(), B: b.summary(), a: a, b: b, timingOn: opts.Timing > 0, timingMin: max(opts.TimingMinNS, 1)}
	ca, ka := a.compared()
	cb, kb := b.compared()
	pairs, approx := Match(ka, kb)
	res.Approximate = approx
	res.Removed, res.Added = len(ka)-len(pairs), len(kb)-len(pairs)
	res.Hunks = hunks(pairs, ca, cb, max(opts.Context, 0))
	if opts.Timing > 0 {
		res.Timings = timings(a, b, pairs, ca, cb, opts.Timing, opts.TimingMinNS)
	}
	pa, pb := a.procs, b.procs
	res.ExitDiffers = len(pa) != len(pb)
	for i := 0; i < len(pa) && i < len(pb); i++ {
		if !pa[i].p.Exit.equal(pb[i].p.Exit) {
			res.ExitDiffers = true
		}
	}
	res.Same = res.Removed == 0 && res.Added == 0 && !res.ExitDiffers
	return res
}

// compared returns the indices of the run's lines that are compared (not
// left out by --ignore) and their keys.
func (r *Run) compared() ([]int, []uint64) {
	idx := make([]int, 0, len(r.lines)-r.ignored)
	keys := make([]uint64, 0, len(r.lines)-r.ignored)
	for i := range r.lines {
		if !r.lines[i].ignored {
			idx = append(idx, i)
			keys = append(keys, r.lines[i].key)
		}
	}
	return idx, keys
}

// endNS is the end of the run: its last process's exit, or its last
// time.
func (r *Run) endNS() int64 {
	end := int64(0)
	for _, p := range r.procs {
		end = max(end, p.exitNS)
	}
	if end == 0 {
		end = r.t1
	}
	return end
}

func (r *Run) summary() Summary {
	s := Summary{Input: r.Name, Streams: []string{}, Processes: []Process{}, Host: r.host,
		Lines: len(r.lines), IgnoredLines: r.ignored, Losses: r.losses}
	for _, id := range r.streams {
		s.Streams = append(s.Streams, id.String())
	}
	for _, p := range r.procs {
		s.Processes = append(s.Processes, p.p)
	}
	if r.t0 != 0 {
		t := time.Unix(0, r.t0).UTC().Format(time.RFC3339Nano)
		d := r.endNS() - r.t0
		s.TimeStart, s.DurationNS = &t, &d
	}
	return s
}

// change is a block of lines only in one side or the other, between two
// matches: compared indices [a0, a1) of A and [b0, b1) of B.
type change struct{ a0, a1, b0, b1 int }

// hunks groups the changes between the pairs (indices into the compared
// lines ca, cb) into hunks with ctx lines of context, merging changes
// closer than 2·ctx.
func hunks(pairs []Pair, ca, cb []int, ctx int) []Hunk {
	var chs []change
	pa, pb := 0, 0
	for _, p := range append(pairs, Pair{len(ca), len(cb)}) {
		if p.A > pa || p.B > pb {
			chs = append(chs, change{pa, p.A, pb, p.B})
		}
		pa, pb = p.A+1, p.B+1
	}
	var out []Hunk
	for i := 0; i < len(chs); {
		j := i
		for j+1 < len(chs) && chs[j+1].a0-chs[j].a1 <= 2*ctx {
			j++
		}
		first, last := chs[i], chs[j]
		before := min(ctx, first.a0, first.b0)
		after := min(ctx, len(ca)-last.a1, len(cb)-last.b1)
		var h Hunk
		x, y := first.a0-before, first.b0-before
		same := func(to int) {
			for ; x < to; x, y = x+1, y+1 {
				h.Lines = append(h.Lines, HunkLine{OpSame, ca[x] + 1, cb[y] + 1})
			}
		}
		for _, c := range chs[i : j+1] {
			same(c.a0)
			for ; x < c.a1; x++ {
				h.Lines = append(h.Lines, HunkLine{OpRemove, ca[x] + 1, 0})
			}
			for ; y < c.b1; y++ {
				h.Lines = append(h.Lines, HunkLine{OpAdd, 0, cb[y] + 1})
			}
		}
		same(last.a1 + after)
		h.AStart, h.BStart = startLine(ca, first.a0-before, x), startLine(cb, first.b0-before, y)
		for _, l := range h.Lines {
			if l.A > 0 {
				h.ALines++
			}
			if l.B > 0 {
				h.BLines++
			}
		}
		out = append(out, h)
		i = j + 1
	}
	return out
}

// startLine is a hunk's start on one side: the line number of compared
// line from, or, when the hunk has none of that side's lines (from ==
// to), of the line before (0: none).
func startLine(c []int, from, to int) int {
	if from < to {
		return c[from] + 1
	}
	if from > 0 {
		return c[from-1] + 1
	}
	return 0
}

// timings returns the steps whose time changed most (see Timing), at
// most n, each of at least minNS, the largest change first.
func timings(a, b *Run, pairs []Pair, ca, cb []int, n int, minNS int64) []Timing {
	type anchor struct {
		a, b     int // line numbers, 0: the start or the end
		ans, bns int64
	}
	var top []Timing
	prev := anchor{0, 0, a.t0, b.t0}
	step := func(next anchor) {
		if prev.ans != 0 && prev.bns != 0 && next.ans != 0 && next.bns != 0 {
			t := Timing{A: prev.a, B: prev.b, ANext: next.a, BNext: next.b, ANS: next.ans - prev.ans, BNS: next.bns - prev.bns}
			t.ChangeNS = t.BNS - t.ANS
			if abs(t.ChangeNS) >= max(minNS, 1) && (len(top) < n || abs(t.ChangeNS) > abs(top[len(top)-1].ChangeNS)) {
				k, _ := slices.BinarySearchFunc(top, t, func(x, t Timing) int {
					// Largest change first; equal changes in order.
					if abs(x.ChangeNS) >= abs(t.ChangeNS) {
						return -1
					}
					return 1
				})
				top = slices.Insert(top, k, t)
				if len(top) > n {
					top = top[:n]
				}
			}
		}
		if next.ans != 0 && next.bns != 0 {
			prev = next
		}
	}
	for _, p := range pairs {
		i, j := ca[p.A], cb[p.B]
		step(anchor{i + 1, j + 1, a.lines[i].ns, b.lines[j].ns})
	}
	step(anchor{0, 0, a.endNS(), b.endNS()})
	return top
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

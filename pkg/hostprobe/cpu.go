package hostprobe

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"time"
)

// maxCPUs bounds CPU numbers, from /proc/stat rows and from sysfs CPU
// lists alike: Linux's NR_CPUS is at most 8192 today, and a number or a
// range past this bound is malformed input, not a reason to allocate.
const maxCPUs = 1 << 16

// Stat is the CPU part of one read of /proc/stat (proc(5)).
type Stat struct {
	// CPU is the aggregate "cpu" row: the sum over the CPUs.
	CPU CPUTicks
	// PerCPU are the "cpuN" rows in file order: one per online CPU.
	PerCPU []StatCPU
}

// StatCPU is one "cpuN" row of /proc/stat.
type StatCPU struct {
	// CPU is the CPU's number, N of "cpuN".
	CPU int
	// Ticks are the row's columns.
	Ticks CPUTicks
}

// ParseStat parses the CPU rows of /proc/stat (proc(5)): the aggregate
// "cpu" row and the "cpuN" rows, in file order. Other lines (intr, ctxt,
// btime, processes, …) are ignored. A row with fewer than the 10 columns
// of today's kernels (old kernels have 4 to 8) leaves the missing columns
// 0; columns past the tenth are checked and ignored. A cpu row with fewer
// than 4 columns, a column that is not a decimal uint64, a bad CPU number
// or a row listed twice is an error naming the line ("parse /proc/stat:
// line 3: …"), and so is a file without the "cpu" row.
func ParseStat(r io.Reader) (Stat, error) {
	b, err := readAllLimited(r)
	if err != nil {
		return Stat{}, fmt.Errorf("parse /proc/stat: %w", err)
	}
	var st Stat
	if err := parseStat(b, "/proc/stat", &st); err != nil {
		return Stat{}, err
	}
	return st, nil
}

// parseStat is ParseStat over bytes; it reuses st.PerCPU's array and
// names the file name in its errors.
func parseStat(b []byte, name string, st *Stat) error {
	st.CPU = CPUTicks{}
	st.PerCPU = st.PerCPU[:0]
	found := false
	last := -1
	for n := 1; len(b) > 0; n++ {
		var line []byte
		line, b = tokLine(b)
		f, rest := tokField(line)
		if !bytes.HasPrefix(f, []byte("cpu")) || len(f) > 3 && !isDigit(f[3]) {
			continue
		}
		var t CPUTicks
		if err := parseTicks(rest, &t); err != nil {
			return lineErr(name, n, "%s: %v", f, err)
		}
		if len(f) == 3 {
			if found {
				return lineErr(name, n, "second \"cpu\" row")
			}
			st.CPU, found = t, true
			continue
		}
		v, ok := tokUint(f[3:])
		if !ok || v >= maxCPUs {
			return lineErr(name, n, "bad CPU number %q", f)
		}
		cpu := int(v)
		if cpu <= last {
			for _, c := range st.PerCPU {
				if c.CPU == cpu {
					return lineErr(name, n, "%s listed twice", f)
				}
			}
		}
		last = max(last, cpu)
		st.PerCPU = append(st.PerCPU, StatCPU{CPU: cpu, Ticks: t})
	}
	if !found {
		return fmt.Errorf("parse %s: no \"cpu\" row", name)
	}
	return nil
}

// parseTicks parses the columns of one cpu row, after its name.
func parseTicks(b []byte, t *CPUTicks) error {
	cols := [...]*uint64{&t.User, &t.Nice, &t.System, &t.Idle, &t.Iowait, &t.IRQ, &t.SoftIRQ, &t.Steal, &t.Guest, &t.GuestNice}
	i := 0
	for ; ; i++ {
		var f []byte
		f, b = tokField(b)
		if len(f) == 0 {
			break
		}
		v, ok := tokUint(f)
		if !ok {
			return fmt.Errorf("column %d: invalid count %q", i+1, f)
		}
		if i < len(cols) {
			*cols[i] = v
		}
	}
	if i < 4 {
		return fmt.Errorf("%d columns, want at least 4", i)
	}
	return nil
}

// Loadavg is /proc/loadavg (proc(5)).
type Loadavg struct {
	// Load1, Load5 and Load15 are the load averages over 1, 5 and 15
	// minutes: runnable plus uninterruptible tasks.
	Load1, Load5, Load15 float64
	// Running and Total are the fourth field, "running/total": the
	// scheduling entities runnable now and in all (0 when absent).
	Running, Total int
	// LastPID is the fifth field: the PID most recently allocated (0
	// when absent).
	LastPID int
}

// ParseLoadavg parses /proc/loadavg, such as `1.25 0.75 0.50 1/234 5678`
// (ARCHITECTURE.md case 5.3). The three averages are required, finite and not
// negative; the fourth and fifth fields are parsed when present. Anything
// else is an error naming the line and field.
func ParseLoadavg(r io.Reader) (Loadavg, error) {
	b, err := readAllLimited(r)
	if err != nil {
		return Loadavg{}, fmt.Errorf("parse /proc/loadavg: %w", err)
	}
	return parseLoadavg(b, "/proc/loadavg")
}

func parseLoadavg(b []byte, name string) (Loadavg, error) {
	var la Loadavg
	line, rest := tokLine(b)
	if len(bytes.TrimSpace(rest)) > 0 {
		return Loadavg{}, lineErr(name, 2, "unexpected second line")
	}
	loads := [...]*float64{&la.Load1, &la.Load5, &la.Load15}
	for i, dst := range loads {
		var f []byte
		f, line = tokField(line)
		if len(f) == 0 {
			return Loadavg{}, lineErr(name, 1, "%d fields, want at least 3", i)
		}
		v, err := strconv.ParseFloat(string(f), 64)
		if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return Loadavg{}, lineErr(name, 1, "field %d: invalid load average %q", i+1, f)
		}
		*dst = v
	}
	f, line := tokField(line)
	if len(f) > 0 {
		run, tot, ok := bytes.Cut(f, []byte("/"))
		a, ok1 := tokInt(run)
		c, ok2 := tokInt(tot)
		if !ok || !ok1 || !ok2 {
			return Loadavg{}, lineErr(name, 1, "field 4: invalid running/total %q", f)
		}
		la.Running, la.Total = a, c
		f, line = tokField(line)
		if len(f) > 0 {
			pid, ok := tokInt(f)
			if !ok {
				return Loadavg{}, lineErr(name, 1, "field 5: invalid pid %q", f)
			}
			la.LastPID = pid
			if f, _ = tokField(line); len(f) > 0 {
				return Loadavg{}, lineErr(name, 1, "unexpected field %q", f)
			}
		}
	}
	return la, nil
}

// cpuState is ReadCPU's previous read.
type cpuState struct {
	primed bool
	time   time.Time // of the previous good read
	host   CPUTicks  // aggregate row of the previous good read
	gen    uint64    // counts good reads; cpuCore.gen is the last one with a row
	cores  []cpuCore // every CPU seen in this run, by CPU number
	stat   Stat      // parse buffer, reused
	cg     cgroupCPUState
}

// cpuCore is what ReadCPU knows of one CPU.
type cpuCore struct {
	cpu        int
	online     bool     // had a row at the previous good read
	seenOnline bool     // had a row at some read of this run
	gen        uint64   // the last read with a row
	row        int      // index of the row in that read
	ticks      CPUTicks // the row, when online
}

// ReadCPU reads ProcRoot/stat, ProcRoot/loadavg and the CPU controller of
// ds's cgroup (see ParseCgroup) into a host.cpu record whose percentages
// cover the interval since the previous good read (ARCHITECTURE.md case 5.1,
// §5.2). Shares are vmstat's: busy (total) is everything but idle and
// iowait, so steal counts as busy.
//
// Percentages are null, never 0 and never a since-boot average, when
// they cannot be known, and Reset says why: ResetFirst for the priming
// read (and a CPU first seen later); ResetNoTime when no tick passed;
// ResetBackwards when any column of the row went down by more than
// accounting jitter (suspend/resume, a counter reset), after which the
// baseline moves on, so that the next read is normal again (no spike,
// no stop: Telegraf once reported nothing after such a step until it was
// restarted). A column that stepped back by jitter only (iowait up to
// idleJitterTicks on NOHZ kernels, ResetIowaitBackwards; any other up to
// jitterTicks, ResetClamped) counts 0 for the interval instead, and the
// percentages stand. A CPU that goes offline is listed with Online false and
// null Ticks and percentages, never with its last values (node_exporter
// did), for as long as it stays offline; one that comes back starts with
// ResetNewLife. CPUs that were offline from the start are listed too,
// from SysRoot/devices/system/cpu/present (or possible) and online, when
// those files are there (read at the priming read and when the set of
// online CPUs changes, not at every read).
//
// When the set of online CPUs changed between the reads, the host's
// percentages are computed from the rows of the CPUs online at both
// (ResetCPUsChanged; null, with that reason, when there is none), not
// from the aggregate row. The kernel sums the aggregate over every
// possible CPU, offline ones included, but takes a CPU's idle and iowait
// from the NO_HZ idle-time counters while it is online and from the
// tick-based ones while it is offline (fs/proc/stat.c, get_idle_time):
// a CPU going or coming switches its share of the aggregate from one
// source to the other, so the aggregate's delta over that interval can
// jump, or go back. Percentages are rounded to 0.01 and lie in [0, 100].
//
// An unreadable or malformed loadavg leaves the load averages null and
// says why in LoadError. An unreadable or malformed stat is an error: no
// record, and the previous read stays the baseline of the next one.
//
// Cgroup is the smallest CPU quota (per period) on the way from ds's
// cgroup up to the hierarchy's mount, with the counters of the cgroup
// that has it. The quota files are read at every read (docker update
// changes them); which cgroups have one is found again every 10 s of
// now, or at once when one of their files cannot be read. A cgroup file
// that cannot be read or parsed gives a Cgroup with its Error, not no
// Cgroup.
func (p *Prober) ReadCPU(now time.Time) (*CPURecord, error) {
	s := &p.cpu
	name := p.procPath("stat")
	b, err := readFile(name)
	if err != nil {
		return nil, err
	}
	if err := parseStat(b, name, &s.stat); err != nil {
		return nil, err
	}
	rows := s.stat.PerCPU

	rec := &CPURecord{Sample: Sample{Schema: SchemaCPU}}
	var prevTime time.Time
	if s.primed {
		prevTime = s.time
	}
	rec.stamp(now, prevTime)
	rec.Host.LogicalCPUs = len(rows)
	rec.Host.Ticks = s.stat.CPU
	if la, err := p.readLoadavg(); err != nil {
		rec.Host.LoadError = err.Error()
	} else {
		lv := []float64{la.Load1, la.Load5, la.Load15}
		rec.Host.Load1, rec.Host.Load5, rec.Host.Load15 = &lv[0], &lv[1], &lv[2]
	}

	// One block for every percentage and every core's ticks of this
	// record: a few allocations per read, whatever the number of CPUs.
	vals := make([]float64, numPcts*(len(rows)+1))
	ticks := make([]CPUTicks, len(rows))
	pcts := make([]CPUPercents, len(rows))

	// Rows against the previous read; sums over the CPUs online at both.
	s.gen++
	changed := false
	both := 0 // CPUs online at both reads
	var sumPrev, sumCur CPUTicks
	for i, row := range rows {
		c := s.core(row.CPU)
		switch {
		case c.online:
			pcts[i] = cpuPercents(c.ticks, row.Ticks, vals[numPcts*i:])
			sumPrev.add(c.ticks)
			sumCur.add(row.Ticks)
			both++
		case c.seenOnline:
			pcts[i].Reset = ResetNewLife
			changed = true
		default:
			pcts[i].Reset = ResetFirst
			changed = true
		}
		c.online, c.seenOnline, c.gen, c.row, c.ticks = true, true, s.gen, i, row.Ticks
		ticks[i] = row.Ticks
	}
	for i := range s.cores {
		if c := &s.cores[i]; c.online && c.gen != s.gen {
			c.online, c.ticks = false, CPUTicks{}
			changed = true
		}
	}
	hostVals := vals[numPcts*len(rows):]
	switch {
	case !s.primed:
		rec.Host.Reset = ResetFirst
	case changed && both == 0:
		rec.Host.Reset = ResetCPUsChanged
	case changed:
		rec.Host.CPUPercents = cpuPercents(sumPrev, sumCur, hostVals)
		if rec.Host.Reset == "" {
			rec.Host.Reset = ResetCPUsChanged
		}
	default:
		rec.Host.CPUPercents = cpuPercents(s.host, s.stat.CPU, hostVals)
	}
	if !s.primed || changed {
		p.addSysCPUs()
	}

	rec.Cores = make([]CPUCore, len(s.cores))
	for i, c := range s.cores {
		rec.Cores[i].CPU = c.cpu
		if c.online {
			rec.Cores[i].Online = true
			rec.Cores[i].CPUPercents = pcts[c.row]
			rec.Cores[i].Ticks = &ticks[c.row]
		}
	}

	rec.Cgroup = p.cgroupCPURecord(now, prevTime)
	s.primed, s.time, s.host = true, now, s.stat.CPU
	return rec, nil
}

// readLoadavg reads and parses ProcRoot/loadavg; its errors name the
// file.
func (p *Prober) readLoadavg() (Loadavg, error) {
	name := p.procPath("loadavg")
	b, err := readFile(name)
	if err != nil {
		return Loadavg{}, err
	}
	return parseLoadavg(b, name)
}

// core returns the state of CPU cpu, adding it (offline, never seen
// online) in CPU order if it is new.
func (s *cpuState) core(cpu int) *cpuCore {
	i := sort.Search(len(s.cores), func(i int) bool { return s.cores[i].cpu >= cpu })
	if i == len(s.cores) || s.cores[i].cpu != cpu {
		s.cores = append(s.cores, cpuCore{})
		copy(s.cores[i+1:], s.cores[i:])
		s.cores[i] = cpuCore{cpu: cpu}
	}
	return &s.cores[i]
}

// addSysCPUs lists the CPUs of SysRoot/devices/system/cpu/present (or,
// without it, possible) and online that ReadCPU has not seen: CPUs
// offline from the start. "present" comes first because on virtual
// machines "possible" also counts hotplug slots that hold no CPU. Missing
// or malformed files are ignored.
func (p *Prober) addSysCPUs() {
	for _, names := range [][]string{{"present", "possible"}, {"online"}} {
		for _, n := range names {
			b, err := readFile(p.sysPath("devices", "system", "cpu", n))
			if err != nil {
				continue
			}
			cpus, err := parseCPUList(b)
			if err != nil {
				continue
			}
			for _, c := range cpus {
				p.cpu.core(c)
			}
			break
		}
	}
}

// parseCPUList parses a sysfs CPU list such as "0-3,5,7-8\n"
// (cpuset(7) "List format"); an empty list is none.
func parseCPUList(b []byte) ([]int, error) {
	b = bytes.TrimSpace(b)
	var cpus []int
	for len(b) > 0 {
		var part []byte
		part, b, _ = bytes.Cut(b, []byte(","))
		lo, hi, isRange := bytes.Cut(part, []byte("-"))
		a, ok := tokInt(lo)
		z := a
		if isRange {
			var ok2 bool
			z, ok2 = tokInt(hi)
			ok = ok && ok2
		}
		if !ok || z < a || z >= maxCPUs || len(cpus)+z-a >= maxCPUs {
			return nil, fmt.Errorf("bad CPU list element %q", part)
		}
		for c := a; c <= z; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// numPcts is the number of percentages in a CPUPercents.
const numPcts = 6

// cpuPercents returns the shares of the interval between the rows prev
// and cur, pointing into vals[:numPcts]; null with a reason when the
// interval cannot be known.
func cpuPercents(prev, cur CPUTicks, vals []float64) CPUPercents {
	// A column that stepped back by at most jitterTicks (accounting
	// jitter: a tick moved between columns, or read half-updated) counts
	// 0 for this interval and the others stand (ResetClamped), rather
	// than the whole sample going null, when what it lost is at most
	// 1/jitterShare of the interval. A larger fall is a reset: counting
	// such a column 0 would misstate the interval (idle: a busy spike).
	clamped, lost := false, uint64(0)
	for _, c := range [...]struct{ cur, prev *uint64 }{
		{&cur.User, &prev.User}, {&cur.Nice, &prev.Nice}, {&cur.System, &prev.System},
		{&cur.Idle, &prev.Idle}, {&cur.IRQ, &prev.IRQ}, {&cur.SoftIRQ, &prev.SoftIRQ},
		{&cur.Steal, &prev.Steal}, {&cur.Guest, &prev.Guest}, {&cur.GuestNice, &prev.GuestNice},
	} {
		if *c.cur >= *c.prev {
			continue
		}
		if *c.prev-*c.cur > jitterTicks {
			return CPUPercents{Reset: ResetBackwards}
		}
		lost += *c.prev - *c.cur
		*c.cur, clamped = *c.prev, true // cur is a copy
	}
	// Iowait may step back further on a NOHZ kernel (proc(5): "the
	// iowait field … can decrease"; the time moves to idle): up to
	// idleJitterTicks, it counts 0 for this interval and the other shares
	// stand, so that a busy series has no hole for it (sysstat does the
	// same).
	reset := ""
	if cur.Iowait < prev.Iowait {
		if prev.Iowait-cur.Iowait > idleJitterTicks {
			return CPUPercents{Reset: ResetBackwards}
		}
		cur.Iowait, reset = prev.Iowait, ResetIowaitBackwards
	}
	if clamped {
		reset = ResetClamped
	}
	// Column deltas, summed as floats: no sum of counters can overflow.
	user := float64(cur.User-prev.User) + float64(cur.Nice-prev.Nice)
	system := float64(cur.System-prev.System) + float64(cur.IRQ-prev.IRQ) + float64(cur.SoftIRQ-prev.SoftIRQ)
	steal := float64(cur.Steal - prev.Steal)
	idle := float64(cur.Idle - prev.Idle)
	iowait := float64(cur.Iowait - prev.Iowait)
	busy := user + system + steal
	total := busy + idle + iowait
	if clamped && float64(lost)*jitterShare > total {
		return CPUPercents{Reset: ResetBackwards} // too short an interval to clamp
	}
	if total == 0 {
		return CPUPercents{Reset: ResetNoTime}
	}
	vals = vals[:numPcts]
	for i, v := range [numPcts]float64{busy, user, system, idle, iowait, steal} {
		vals[i] = percent(v, total)
	}
	return CPUPercents{TotalPct: &vals[0], UserPct: &vals[1], SystemPct: &vals[2],
		IdlePct: &vals[3], IowaitPct: &vals[4], StealPct: &vals[5], Reset: reset}
}

// idleJitterTicks is the largest step back of iowait taken as NO_HZ
// accounting jitter rather than a reset (64 ticks: 0.64 s).
const idleJitterTicks = 64

// jitterTicks is the largest step back of any other column of a
// /proc/stat row taken as accounting jitter (clamped, ResetClamped)
// rather than a reset.
const jitterTicks = 2

// jitterShare: a clamped fall may be at most 1/jitterShare of the
// interval's ticks (a tick of a 1 s interval at 100 Hz, not one of 2).
const jitterShare = 32

// PercentsValued reports whether the percentages of two /proc/stat rows
// whose Reset is reset are there (no reset, or a marker that keeps them:
// ResetIowaitBackwards, ResetClamped) rather than null.
func PercentsValued(reset string) bool {
	switch reset {
	case "", ResetIowaitBackwards, ResetClamped:
		return true
	}
	return false
}

// percent is 100·part/whole rounded to 0.01 and clamped to [0, 100].
func percent(part, whole float64) float64 {
	return min(max(round2(100*part/whole), 0), 100)
}

// round2 rounds v to 0.01.
func round2(v float64) float64 { return math.Round(v*100) / 100 }

// add adds u to t column by column.
func (t *CPUTicks) add(u CPUTicks) {
	t.User += u.User
	t.Nice += u.Nice
	t.System += u.System
	t.Idle += u.Idle
	t.Iowait += u.Iowait
	t.IRQ += u.IRQ
	t.SoftIRQ += u.SoftIRQ
	t.Steal += u.Steal
	t.Guest += u.Guest
	t.GuestNice += u.GuestNice
}

// lineErr is a parse error naming the file and the line (from 1).
func lineErr(name string, line int, format string, args ...any) error {
	return fmt.Errorf("parse %s: line %d: %s", name, line, fmt.Sprintf(format, args...))
}

// readAllLimited reads r whole, refusing more than maxProcFile bytes,
// as readFile does for files.
func readAllLimited(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxProcFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxProcFile {
		return nil, errTooLarge
	}
	return b, nil
}

// tokLine returns b's first line, without its newline, and the rest.
func tokLine(b []byte) (line, rest []byte) {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[:i], b[i+1:]
	}
	return b, nil
}

// tokField returns b's first field, separated by spaces or tabs, and the
// rest after it; an empty field when there is none.
func tokField(b []byte) (field, rest []byte) {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	j := i
	for j < len(b) && b[j] != ' ' && b[j] != '\t' {
		j++
	}
	return b[i:j], b[j:]
}

// tokUint parses b as a decimal uint64: digits only, no sign.
func tokUint(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if !isDigit(c) {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

// tokInt parses b as a decimal int that is not negative.
func tokInt(b []byte) (int, bool) {
	v, ok := tokUint(b)
	if !ok || v > math.MaxInt32 {
		return 0, false
	}
	return int(v), true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

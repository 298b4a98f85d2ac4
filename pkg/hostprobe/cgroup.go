package hostprobe

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// CgroupPaths is /proc/self/cgroup (cgroups(7)): the cgroup of the
// process in each hierarchy, as paths relative to the hierarchy's mount.
// A path is "/" at the root of a cgroup namespace, and begins with "/.."
// for a cgroup outside it. An empty member means no such line.
type CgroupPaths struct {
	// Unified is the cgroup v2 path, from the line "0::/path".
	Unified string
	// CPU, CPUAcct and Memory are the cgroup v1 paths of those
	// controllers, from lines such as "4:cpu,cpuacct:/path".
	CPU, CPUAcct, Memory string
}

// ParseCgroup parses /proc/self/cgroup: lines "ID:controllers:path",
// where ID 0 with no controllers is the v2 hierarchy and the other lines
// are v1 hierarchies ("name=systemd" and controllers other than cpu,
// cpuacct and memory are ignored). The path is everything after the
// second colon, and must begin with "/". Empty lines are skipped; any
// other malformed line is an error naming the line.
func ParseCgroup(r io.Reader) (CgroupPaths, error) {
	b, err := readAllLimited(r)
	if err != nil {
		return CgroupPaths{}, fmt.Errorf("parse /proc/self/cgroup: %w", err)
	}
	return parseCgroup(b, "/proc/self/cgroup")
}

func parseCgroup(b []byte, name string) (CgroupPaths, error) {
	var cg CgroupPaths
	for n := 1; len(b) > 0; n++ {
		var line []byte
		line, b = tokLine(b)
		if len(line) == 0 {
			continue
		}
		id, rest, ok1 := bytes.Cut(line, []byte(":"))
		ctls, cgPath, ok2 := bytes.Cut(rest, []byte(":"))
		if _, ok := tokUint(id); !ok || !ok1 || !ok2 {
			return CgroupPaths{}, lineErr(name, n, "want \"ID:controllers:path\", have %q", line)
		}
		if len(cgPath) == 0 || cgPath[0] != '/' {
			return CgroupPaths{}, lineErr(name, n, "path %q does not begin with /", cgPath)
		}
		if len(ctls) == 0 {
			if string(id) == "0" {
				cg.Unified = string(cgPath)
			}
			continue
		}
		for len(ctls) > 0 {
			var c []byte
			c, ctls, _ = bytes.Cut(ctls, []byte(","))
			switch string(c) {
			case "cpu":
				cg.CPU = string(cgPath)
			case "cpuacct":
				cg.CPUAcct = string(cgPath)
			case "memory":
				cg.Memory = string(cgPath)
			}
		}
	}
	return cg, nil
}

// ParseCPUMax parses cgroup v2 cpu.max, "$MAX $PERIOD" in µs: the cgroup
// may use quotaUS of CPU time per periodUS. quotaUS is -1 for "max" (no
// quota). A missing period is the kernel's default, 100000. A quota or
// period of 0 is an error (the kernel refuses less than 1000 µs), so
// that quotaUS/periodUS is always a number.
func ParseCPUMax(r io.Reader) (quotaUS, periodUS int64, err error) {
	b, err := readAllLimited(r)
	if err != nil {
		return 0, 0, fmt.Errorf("parse cpu.max: %w", err)
	}
	return parseCPUMax(b, "cpu.max")
}

func parseCPUMax(b []byte, name string) (quotaUS, periodUS int64, err error) {
	line, rest := tokLine(b)
	if len(bytes.TrimSpace(rest)) > 0 {
		return 0, 0, lineErr(name, 2, "unexpected second line")
	}
	q, line := tokField(line)
	p, line := tokField(line)
	if extra, _ := tokField(line); len(extra) > 0 || len(q) == 0 {
		return 0, 0, lineErr(name, 1, "want \"$MAX $PERIOD\", have %q", bytes.TrimSpace(b))
	}
	quotaUS, periodUS = -1, 100000
	if string(q) != "max" {
		v, ok := tokUint(q)
		if !ok || v == 0 || v > 1<<53 {
			return 0, 0, lineErr(name, 1, "invalid quota %q", q)
		}
		quotaUS = int64(v)
	}
	if len(p) > 0 {
		v, ok := tokUint(p)
		if !ok || v == 0 || v > 1<<53 {
			return 0, 0, lineErr(name, 1, "invalid period %q", p)
		}
		periodUS = int64(v)
	}
	return quotaUS, periodUS, nil
}

// CgroupCPUStat is a cgroup's cpu.stat: cumulative counters, in µs where
// they are times.
type CgroupCPUStat struct {
	// UsageUS, UserUS and SystemUS are v2's usage_usec, user_usec and
	// system_usec (v1's cpu.stat has none: see cpuacct.usage).
	UsageUS, UserUS, SystemUS uint64
	// HasUsage says whether usage_usec was there.
	HasUsage bool
	// NrPeriods and NrThrottled count the enforcement periods in which
	// the cgroup was runnable, and those in which it was throttled.
	NrPeriods, NrThrottled uint64
	// ThrottledUS is the time throttled: v2's throttled_usec, or v1's
	// throttled_time (ns) / 1000.
	ThrottledUS uint64
}

// ParseCgroupCPUStat parses a cgroup's cpu.stat, v2 or v1: lines "key
// value". The keys above are read, others ignored; a line without a
// value, or a read key whose value is not a decimal uint64, is an error
// naming the line.
func ParseCgroupCPUStat(r io.Reader) (CgroupCPUStat, error) {
	b, err := readAllLimited(r)
	if err != nil {
		return CgroupCPUStat{}, fmt.Errorf("parse cpu.stat: %w", err)
	}
	return parseCgroupCPUStat(b, "cpu.stat")
}

func parseCgroupCPUStat(b []byte, name string) (CgroupCPUStat, error) {
	var st CgroupCPUStat
	for n := 1; len(b) > 0; n++ {
		var line []byte
		line, b = tokLine(b)
		k, rest := tokField(line)
		if len(k) == 0 {
			continue
		}
		f, rest := tokField(rest)
		if extra, _ := tokField(rest); len(f) == 0 || len(extra) > 0 {
			return CgroupCPUStat{}, lineErr(name, n, "want \"key value\", have %q", line)
		}
		var dst *uint64
		switch string(k) {
		case "usage_usec":
			dst, st.HasUsage = &st.UsageUS, true
		case "user_usec":
			dst = &st.UserUS
		case "system_usec":
			dst = &st.SystemUS
		case "nr_periods":
			dst = &st.NrPeriods
		case "nr_throttled":
			dst = &st.NrThrottled
		case "throttled_usec", "throttled_time":
			dst = &st.ThrottledUS
		default:
			continue
		}
		v, ok := tokUint(f)
		if !ok {
			return CgroupCPUStat{}, lineErr(name, n, "%s: invalid value %q", k, f)
		}
		if string(k) == "throttled_time" {
			v /= 1000
		}
		*dst = v
	}
	return st, nil
}

// ParseCgroupValue parses a cgroup file of one value: memory.current,
// memory.max, cpuacct.usage, cpu.cfs_quota_us, cpu.cfs_period_us,
// memory.limit_in_bytes, memory.usage_in_bytes. "max" (v2) and "-1" (v1
// cpu.cfs_quota_us) are unlimited; anything but a decimal uint64 is an
// error.
func ParseCgroupValue(r io.Reader) (v uint64, unlimited bool, err error) {
	b, err := readAllLimited(r)
	if err != nil {
		return 0, false, fmt.Errorf("parse cgroup value: %w", err)
	}
	return parseCgroupValue(b, "cgroup value")
}

func parseCgroupValue(b []byte, name string) (v uint64, unlimited bool, err error) {
	line, rest := tokLine(b)
	if len(bytes.TrimSpace(rest)) > 0 {
		return 0, false, lineErr(name, 2, "unexpected second line")
	}
	line = bytes.TrimSpace(line)
	switch string(line) {
	case "max", "-1":
		return 0, true, nil
	}
	v, ok := tokUint(line)
	if !ok {
		return 0, false, lineErr(name, 1, "invalid value %q", line)
	}
	return v, false, nil
}

// v1Unlimited is where cgroup v1 limits mean "no limit": the kernel
// writes PAGE_COUNTER_MAX pages, 0x7FFFFFFFFFFFF000 bytes on 4 KiB pages;
// any value of 2^62 or more is taken as unlimited.
const v1Unlimited = 1 << 62

// cgroupResolveEvery is how long ReadCPU and ReadMem keep what they found
// of ds's cgroups (/proc/self/cgroup read, the directories from ds's
// cgroup up to the hierarchy's mount, which of them have a limit file)
// before they look again: at --interval 100ms, doing it at every sample
// would cost more syscalls than the samples themselves. The limits are
// still read at every sample (docker update changes them), and a kept
// file that cannot be read makes them look again at once; a cgroup move,
// or a controller enabled later, shows within this time.
const cgroupResolveEvery = 10 * time.Second

// resolveDue says whether a resolution made at (resolved: there is one)
// is due again at now; a clock that went back makes it due.
func resolveDue(resolved bool, at, now time.Time) bool {
	return !resolved || now.Sub(at) >= cgroupResolveEvery || now.Before(at)
}

// readCgroupPaths reads ProcRoot/self/cgroup. A file that is not there
// (not Linux, a fixture without one) is no cgroup: the zero CgroupPaths
// and no error.
func (p *Prober) readCgroupPaths() (CgroupPaths, error) {
	name := p.procPath("self", "cgroup")
	b, err := readFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return CgroupPaths{}, nil
	}
	if err != nil {
		return CgroupPaths{}, err
	}
	return parseCgroup(b, name)
}

// cgroupLevel is one cgroup on the way from ds's up to its hierarchy's
// mount.
type cgroupLevel struct {
	dir  string // its directory, under SysRoot/fs/cgroup
	path string // its path as /proc/self/cgroup writes paths
}

// cgroupLevels returns the cgroups from the one at cgPath (a path of
// /proc/self/cgroup) up to the mount of its hierarchy, ds's first. The
// mount is SysRoot/fs/cgroup/m for the first of mounts that is a
// directory ("" for v2's; v1's "cpu" is "cpu,cpuacct" on many systems);
// nil when none is.
//
// On a host, and inside a cgroup namespace, cgPath is below the mount.
// A container without a namespace (docker on v1) has its own cgroup
// mounted there while /proc/self/cgroup gives the host's path
// (/docker/<id>/sub): the mount stands for the head of the path, and
// the longest tail of it that is a directory below the mount is ds's
// cgroup (sub); when no tail is, the mount is. A path outside the
// namespace ("/../…") cannot be reached: the mount alone.
func (p *Prober) cgroupLevels(cgPath string, mounts ...string) []cgroupLevel {
	for _, m := range mounts {
		root := p.sysPath("fs", "cgroup", m)
		if !isDir(root) {
			continue
		}
		if !strings.HasPrefix(cgPath, "/") || strings.Contains(cgPath+"/", "/../") {
			return []cgroupLevel{{dir: root, path: cgPath}}
		}
		cgPath = path.Clean(cgPath)
		tail := cgPath
		for tail != "/" && !isDir(filepath.Join(root, tail)) {
			if i := strings.IndexByte(tail[1:], '/'); i >= 0 {
				tail = tail[1+i:]
			} else {
				tail = "/"
			}
		}
		head := strings.TrimSuffix(cgPath, tail) // what the mount stands for; "" for "/"
		var levels []cgroupLevel
		for dir := tail; ; dir = path.Dir(dir) {
			lp := head + dir
			if dir == "/" && head != "" {
				lp = head
			}
			levels = append(levels, cgroupLevel{dir: filepath.Join(root, dir), path: lp})
			if dir == "/" {
				return levels
			}
		}
	}
	return nil
}

// isDir says whether name is a directory.
func isDir(name string) bool {
	fi, err := os.Stat(name)
	return err == nil && fi.IsDir()
}

// exists says whether name is there: a file that cannot be looked at
// (permission denied) is, so that reading it says why it cannot be read.
func exists(name string) bool {
	_, err := os.Stat(name)
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}

// v1Levels drops, from the levels of a v1 hierarchy, its root: the
// kernel refuses a CPU quota or a memory limit there (EINVAL), so its
// files always say unlimited, and reading them at every sample is waste.
// The root is the mount when it has cgroup.sane_behavior, a file only
// the root of a v1 hierarchy has: not a container's own cgroup mounted
// there, nor the root of a cgroup namespace.
func v1Levels(levels []cgroupLevel) []cgroupLevel {
	if n := len(levels); n > 0 && isFile(filepath.Join(levels[n-1].dir, "cgroup.sane_behavior")) {
		return levels[:n-1]
	}
	return levels
}

// isFile says whether name is there and not a directory.
func isFile(name string) bool {
	fi, err := os.Stat(name)
	return err == nil && !fi.IsDir()
}

// readKept reads a file of a kept resolution; a failure to read it sets
// *failed (the resolution may be stale: the cgroup moved, a controller
// was disabled).
func readKept(name string, failed *bool) ([]byte, error) {
	b, err := readFile(name)
	if err != nil {
		*failed = true
	}
	return b, err
}

// cgroupErrs collects the errors of one read of a cgroup controller:
// the path of the cgroup of the first, and their texts.
type cgroupErrs struct {
	path string
	errs []string
}

func (e *cgroupErrs) add(cgPath string, err error) {
	if len(e.errs) == 0 {
		e.path = cgPath
	}
	e.errs = append(e.errs, err.Error())
}

func (e *cgroupErrs) String() string { return strings.Join(e.errs, "; ") }

// cgroupCPUFiles are the CPU controller's files of one cgroup that has a
// quota file.
type cgroupCPUFiles struct {
	path          string // the cgroup's path (CgroupCPU.Path)
	quota, period string // v2: cpu.max and ""; v1: cpu.cfs_quota_us and cpu.cfs_period_us
	stat          string // cpu.stat
	usage         string // v1: cpuacct.usage of the same cgroup; "" on v2 or without a cpuacct hierarchy
}

// cgroupCPUState is what ReadCPU keeps of ds's cgroup: where the CPU
// controller's files are, and the previous read of its counters.
type cgroupCPUState struct {
	resolved bool
	at       time.Time        // of the resolution
	version  int              // of levels; 0 when none
	levels   []cgroupCPUFiles // ds's cgroup and its ancestors with a quota file, ds's first
	pathsErr string           // why /proc/self/cgroup could not be read or parsed

	base cgroupCPUBase
}

// cgroupCPUBase is the previous read of the cgroup's CPU counters.
type cgroupCPUBase struct {
	ok                   bool // a baseline: the previous read had a quota
	version              int
	path                 string
	usageOK, statOK      bool
	usage                uint64
	periods, nrThrottled uint64
}

// cgroupCPU is one read of the cgroup's CPU controller.
type cgroupCPU struct {
	rec             CgroupCPU
	usageOK, statOK bool
}

// resolveCgroupCPU finds ds's cgroup and its ancestors that have a CPU
// quota file: v2's cpu.max if any has one, else v1's cpu.cfs_quota_us
// (a controller is in one hierarchy only; the root of v2 has no
// cpu.max, and v1's is left out: see v1Levels).
func (p *Prober) resolveCgroupCPU(now time.Time) {
	s := &p.cpu.cg
	s.resolved, s.at, s.version, s.levels, s.pathsErr = true, now, 0, s.levels[:0], ""
	paths, err := p.readCgroupPaths()
	if err != nil {
		s.pathsErr = err.Error()
		return
	}
	if paths.Unified != "" {
		for _, l := range p.cgroupLevels(paths.Unified, "") {
			if f := filepath.Join(l.dir, "cpu.max"); exists(f) {
				s.levels = append(s.levels, cgroupCPUFiles{path: l.path, quota: f, stat: filepath.Join(l.dir, "cpu.stat")})
			}
		}
		if len(s.levels) > 0 {
			s.version = 2
			return
		}
	}
	if paths.CPU == "" {
		return
	}
	acctPath := paths.CPUAcct
	if acctPath == "" {
		acctPath = paths.CPU
	}
	acct := p.cgroupLevels(acctPath, "cpuacct", "cpu,cpuacct", "cpuacct,cpu")
	for _, l := range v1Levels(p.cgroupLevels(paths.CPU, "cpu", "cpu,cpuacct", "cpuacct,cpu")) {
		q := filepath.Join(l.dir, "cpu.cfs_quota_us")
		if !exists(q) {
			continue
		}
		f := cgroupCPUFiles{path: l.path, quota: q,
			period: filepath.Join(l.dir, "cpu.cfs_period_us"), stat: filepath.Join(l.dir, "cpu.stat")}
		for _, a := range acct {
			if a.path == l.path {
				f.usage = filepath.Join(a.dir, "cpuacct.usage")
			}
		}
		s.levels = append(s.levels, f)
	}
	if len(s.levels) > 0 {
		s.version = 1
	}
}

// readQuota reads the quota of one level: -1 for none.
func (s *cgroupCPUState) readQuota(l *cgroupCPUFiles, failed *bool) (quotaUS, periodUS int64, err error) {
	b, err := readKept(l.quota, failed)
	if err != nil {
		return 0, 0, err
	}
	if s.version == 2 {
		return parseCPUMax(b, l.quota)
	}
	q, unlimited, err := parseCgroupValue(b, l.quota)
	if err != nil {
		return 0, 0, err
	}
	if unlimited {
		return -1, 0, nil
	}
	if q == 0 || q > 1<<53 {
		return 0, 0, lineErr(l.quota, 1, "invalid quota %d", q)
	}
	if b, err = readKept(l.period, failed); err != nil {
		return 0, 0, err
	}
	per, unlimited, err := parseCgroupValue(b, l.period)
	if err != nil {
		return 0, 0, err
	}
	if unlimited || per == 0 || per > 1<<53 {
		return 0, 0, lineErr(l.period, 1, "invalid period %q", bytes.TrimSpace(b))
	}
	return int64(q), int64(per), nil
}

// read reads the quota of every kept level and, at the level with the
// smallest (quota/period), its counters: cpu.stat, and v1's
// cpuacct.usage. nil when no level has a quota and nothing failed; a
// file that cannot be read or parsed is named in the Error of the
// record, which is there even without a quota. failed: a kept file
// could not be read.
func (s *cgroupCPUState) read() (cg *cgroupCPU, failed bool) {
	if s.pathsErr != "" {
		return &cgroupCPU{rec: CgroupCPU{Error: s.pathsErr}}, false
	}
	var errs cgroupErrs
	best := -1
	var bestQ, bestP int64
	for i := range s.levels {
		l := &s.levels[i]
		q, per, err := s.readQuota(l, &failed)
		if err != nil {
			errs.add(l.path, err)
			continue
		}
		if q > 0 && (best < 0 || float64(q)/float64(per) < float64(bestQ)/float64(bestP)) {
			best, bestQ, bestP = i, q, per
		}
	}
	if best < 0 {
		if len(errs.errs) == 0 {
			return nil, failed
		}
		return &cgroupCPU{rec: CgroupCPU{Version: s.version, Path: errs.path, Error: errs.String()}}, failed
	}
	l := &s.levels[best]
	cg = &cgroupCPU{rec: CgroupCPU{Version: s.version, Path: l.path, QuotaUS: bestQ, PeriodUS: bestP}}
	r := &cg.rec
	b, err := readKept(l.stat, &failed)
	var st CgroupCPUStat
	if err == nil {
		st, err = parseCgroupCPUStat(b, l.stat)
	}
	if err != nil {
		errs.add(l.path, err)
	} else {
		cg.statOK = true
		r.NrPeriods, r.NrThrottled, r.ThrottledUS = st.NrPeriods, st.NrThrottled, st.ThrottledUS
		if s.version == 2 {
			cg.usageOK, r.UsageUS = st.HasUsage, st.UsageUS
		}
	}
	if l.usage != "" {
		b, err := readKept(l.usage, &failed)
		var ns uint64
		var unlimited bool
		if err == nil {
			ns, unlimited, err = parseCgroupValue(b, l.usage)
		}
		if err == nil && unlimited {
			err = lineErr(l.usage, 1, "invalid value %q", bytes.TrimSpace(b))
		}
		if err != nil {
			errs.add(l.path, err)
		} else {
			cg.usageOK, r.UsageUS = true, ns/1000
		}
	}
	r.Error = errs.String()
	return cg, failed
}

// cgroupCPURecord reads the cgroup's CPU controller at now and derives
// its members over the interval since prev, the previous good ReadCPU;
// it moves the baseline on. The cgroups are found again when
// cgroupResolveEvery has passed, or when a kept file cannot be read.
func (p *Prober) cgroupCPURecord(now, prev time.Time) *CgroupCPU {
	s := &p.cpu.cg
	fresh := resolveDue(s.resolved, s.at, now)
	if fresh {
		p.resolveCgroupCPU(now)
	}
	cg, failed := s.read()
	if failed && !fresh {
		p.resolveCgroupCPU(now)
		cg, _ = s.read()
	}
	if cg == nil || cg.rec.PeriodUS <= 0 {
		s.base = cgroupCPUBase{}
		if cg == nil {
			return nil
		}
		return &cg.rec
	}
	b := &s.base
	r := &cg.rec
	r.QuotaCPUs = float64(r.QuotaUS) / float64(r.PeriodUS)
	intervalUS := float64(now.Sub(prev)) / float64(time.Microsecond)
	if b.ok && b.version == r.Version && b.path == r.Path && !prev.IsZero() && intervalUS > 0 {
		if b.usageOK && cg.usageOK && r.UsageUS >= b.usage {
			used := float64(r.UsageUS-b.usage) / intervalUS
			ofQuota := max(round2(100*used/r.QuotaCPUs), 0)
			used = round3(used)
			r.UsageCPUs, r.UsageOfQuotaPct = &used, &ofQuota
		}
		if b.statOK && cg.statOK && r.NrPeriods >= b.periods && r.NrThrottled >= b.nrThrottled {
			var thr float64
			if dp := r.NrPeriods - b.periods; dp > 0 {
				thr = percent(float64(r.NrThrottled-b.nrThrottled), float64(dp))
			}
			r.ThrottledPct = &thr
		}
	}
	*b = cgroupCPUBase{ok: true, version: r.Version, path: r.Path, usageOK: cg.usageOK, statOK: cg.statOK,
		usage: r.UsageUS, periods: r.NrPeriods, nrThrottled: r.NrThrottled}
	return r
}

// round3 rounds v to 0.001.
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// cgroupMemFiles are the memory controller's files of one cgroup that
// has a limit file.
type cgroupMemFiles struct {
	path  string // the cgroup's path (CgroupMem.Path)
	limit string // v2 memory.max; v1 memory.limit_in_bytes
	usage string // v2 memory.current; v1 memory.usage_in_bytes
}

// cgroupMemState is what ReadMem keeps of ds's cgroup: where the memory
// controller's files are.
type cgroupMemState struct {
	resolved bool
	at       time.Time        // of the resolution
	version  int              // of levels; 0 when none
	levels   []cgroupMemFiles // ds's cgroup and its ancestors with a limit file, ds's first
	pathsErr string           // why /proc/self/cgroup could not be read or parsed
}

// resolveCgroupMem finds ds's cgroup and its ancestors that have a
// memory limit file: v2's memory.max if any has one (the root has
// none), else v1's memory.limit_in_bytes (not the root's: see v1Levels).
func (p *Prober) resolveCgroupMem(now time.Time) {
	s := &p.mem.cg
	s.resolved, s.at, s.version, s.levels, s.pathsErr = true, now, 0, s.levels[:0], ""
	paths, err := p.readCgroupPaths()
	if err != nil {
		s.pathsErr = err.Error()
		return
	}
	add := func(levels []cgroupLevel, limit, usage string) {
		for _, l := range levels {
			if f := filepath.Join(l.dir, limit); exists(f) {
				s.levels = append(s.levels, cgroupMemFiles{path: l.path, limit: f, usage: filepath.Join(l.dir, usage)})
			}
		}
	}
	if paths.Unified != "" {
		if add(p.cgroupLevels(paths.Unified, ""), "memory.max", "memory.current"); len(s.levels) > 0 {
			s.version = 2
			return
		}
	}
	if paths.Memory != "" {
		if add(v1Levels(p.cgroupLevels(paths.Memory, "memory")), "memory.limit_in_bytes", "memory.usage_in_bytes"); len(s.levels) > 0 {
			s.version = 1
		}
	}
}

// read reads the limit of every kept level and the usage of the level
// with the smallest limit (v1: below v1Unlimited). nil when no level
// has a limit and nothing failed; a file that cannot be read or parsed
// is named in the Error of the record, which is there even without a
// limit. failed: a kept file could not be read.
func (s *cgroupMemState) read() (cg *CgroupMem, failed bool) {
	if s.pathsErr != "" {
		return &CgroupMem{Error: s.pathsErr}, false
	}
	var errs cgroupErrs
	best := -1
	var limit uint64
	for i := range s.levels {
		l := &s.levels[i]
		b, err := readKept(l.limit, &failed)
		var v uint64
		var unlimited bool
		if err == nil {
			v, unlimited, err = parseCgroupValue(b, l.limit)
		}
		if err != nil {
			errs.add(l.path, err)
			continue
		}
		if unlimited || s.version == 1 && v >= v1Unlimited {
			continue
		}
		if best < 0 || v < limit {
			best, limit = i, v
		}
	}
	if best < 0 {
		if len(errs.errs) == 0 {
			return nil, failed
		}
		return &CgroupMem{Version: s.version, Path: errs.path, Error: errs.String()}, failed
	}
	l := &s.levels[best]
	cg = &CgroupMem{Version: s.version, Path: l.path, LimitBytes: limit}
	b, err := readKept(l.usage, &failed)
	var usage uint64
	var unlimited bool
	if err == nil {
		usage, unlimited, err = parseCgroupValue(b, l.usage)
	}
	if err == nil && unlimited {
		err = lineErr(l.usage, 1, "invalid value %q", bytes.TrimSpace(b))
	}
	if err != nil {
		errs.add(l.path, err)
	} else {
		cg.UsageBytes, cg.UsedPct = usage, 100
		if limit > 0 {
			cg.UsedPct = max(round2(100*float64(usage)/float64(limit)), 0)
		}
	}
	cg.Error = errs.String()
	return cg, failed
}

// cgroupMemRecord reads the memory controller of ds's cgroup at now
// (see cgroupMemState.read); the cgroups are found again when
// cgroupResolveEvery has passed, or when a kept file cannot be read.
func (p *Prober) cgroupMemRecord(now time.Time) *CgroupMem {
	s := &p.mem.cg
	fresh := resolveDue(s.resolved, s.at, now)
	if fresh {
		p.resolveCgroupMem(now)
	}
	cg, failed := s.read()
	if failed && !fresh {
		p.resolveCgroupMem(now)
		cg, _ = s.read()
	}
	return cg
}

package hostprobe

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"time"
)

// ParseMeminfo parses /proc/meminfo (proc(5)) into a map from the
// kernel's names (MemTotal, Active(anon), HugePages_Total, …) to values:
// in bytes for a value in "kB" (×1024), as they are for a value without
// a unit (counts, such as HugePages_Total). Blank lines are skipped; a
// file of none is an error. A malformed line (no colon, no name, a value that is not a decimal
// uint64, a unit other than kB, a value in bytes past 2^64, anything
// after the unit) is an error naming the line, rather than skipped: a
// file that does not parse is more likely not meminfo at all (a wrong
// mount) than meminfo with one odd line. A name listed twice keeps its
// last value.
func ParseMeminfo(r io.Reader) (map[string]uint64, error) {
	b, err := readAllLimited(r)
	if err != nil {
		return nil, fmt.Errorf("parse /proc/meminfo: %w", err)
	}
	m := make(map[string]uint64, 64)
	if err := parseMeminfo(b, "/proc/meminfo", m, nil); err != nil {
		return nil, err
	}
	return m, nil
}

// parseMeminfo is ParseMeminfo over bytes into m. names, when not nil,
// holds the key strings of earlier reads, so that a read allocates no
// new ones.
func parseMeminfo(b []byte, name string, m map[string]uint64, names map[string]string) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return fmt.Errorf("parse %s: empty", name)
	}
	for n := 1; len(b) > 0; n++ {
		var line []byte
		line, b = tokLine(b)
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		k, rest, ok := bytes.Cut(line, []byte(":"))
		k = bytes.TrimSpace(k)
		if !ok || len(k) == 0 {
			return lineErr(name, n, "want \"Name: value [kB]\", have %q", line)
		}
		f, rest := tokField(rest)
		v, ok := tokUint(f)
		if !ok {
			return lineErr(name, n, "%s: invalid value %q", k, f)
		}
		unit, rest := tokField(rest)
		switch {
		case len(unit) == 0:
		case string(unit) == "kB" && v <= math.MaxUint64/1024:
			v *= 1024
		default:
			return lineErr(name, n, "%s: invalid unit %q for %d", k, unit, v)
		}
		if extra, _ := tokField(rest); len(extra) > 0 {
			return lineErr(name, n, "%s: unexpected %q", k, extra)
		}
		key, ok := names[string(k)]
		if !ok {
			key = string(k)
			if names != nil && len(names) < maxMeminfoNames {
				names[key] = key
			}
		}
		m[key] = v
	}
	return nil
}

// maxMeminfoNames bounds memState.names: meminfo has about 60 lines.
const maxMeminfoNames = 512

// memState is ReadMem's previous read.
type memState struct {
	time  time.Time // of the previous good read
	names map[string]string
	size  int // entries of the previous read's map
	cg    cgroupMemState
}

// ReadMem reads ProcRoot/meminfo and the memory controller of ds's
// cgroup into a host.mem record (ARCHITECTURE.md §4): the named members in
// bytes, null when the kernel does not report them; UsedPct and
// SwapUsedPct rounded to 0.01; Meminfo with every line; Cgroup only
// when ds's cgroup or an ancestor has a memory limit (the smallest
// binds: its limit, and that cgroup's usage), or with the Error of a
// cgroup file that cannot be read or parsed. The limit files are read
// at every read; which cgroups have one is found again every 10 s of
// now, or at once when one of their files cannot be read. IntervalMS is
// the time since the previous good read. An unreadable or malformed
// meminfo is an error.
func (p *Prober) ReadMem(now time.Time) (*MemRecord, error) {
	s := &p.mem
	name := p.procPath("meminfo")
	b, err := readFile(name)
	if err != nil {
		return nil, err
	}
	if s.names == nil {
		s.names = make(map[string]string)
	}
	m := make(map[string]uint64, max(s.size, 64))
	if err := parseMeminfo(b, name, m, s.names); err != nil {
		return nil, err
	}
	rec := &MemRecord{Sample: Sample{Schema: SchemaMem}, Meminfo: m}
	rec.stamp(now, s.time)

	vals := make([]uint64, 9)
	for i, f := range []struct {
		key string
		dst **uint64
	}{
		{"MemTotal", &rec.TotalBytes},
		{"MemFree", &rec.FreeBytes},
		{"MemAvailable", &rec.AvailableBytes},
		{"Buffers", &rec.BuffersBytes},
		{"Cached", &rec.CachedBytes},
		{"Shmem", &rec.ShmemBytes},
		{"Dirty", &rec.DirtyBytes},
		{"SwapTotal", &rec.SwapTotalBytes},
		{"SwapFree", &rec.SwapFreeBytes},
	} {
		if v, ok := m[f.key]; ok {
			vals[i] = v
			*f.dst = &vals[i]
		}
	}
	rec.UsedPct = usedPercent(rec.TotalBytes, rec.AvailableBytes)
	rec.SwapUsedPct = usedPercent(rec.SwapTotalBytes, rec.SwapFreeBytes)
	rec.Cgroup = p.cgroupMemRecord(now)
	s.time, s.size = now, len(m)
	return rec, nil
}

// usedPercent is (total − avail) / total in percent, rounded to 0.01 and
// clamped to [0, 100]; nil without both, or when total is 0.
func usedPercent(total, avail *uint64) *float64 {
	if total == nil || avail == nil || *total == 0 {
		return nil
	}
	used := float64(*total) - float64(*avail)
	v := percent(used, float64(*total))
	return &v
}

package hostprobe

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// cpuFuzzSeeds adds the fixture files named (globs under testdata) and
// the extra texts to f's corpus.
func cpuFuzzSeeds(f *testing.F, glob string, extra ...string) {
	names, err := filepath.Glob(glob)
	if err != nil {
		f.Fatal(err)
	}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range extra {
		f.Add([]byte(s))
	}
}

// cpuErrString is err's text, "" for nil.
func cpuErrString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// FuzzParseStat: no panic; the parse is deterministic, also into a Stat
// that held another parse; what parses renders back to text that parses
// the same; and the percentages between any two of its rows are null or
// within [0, 100].
func FuzzParseStat(f *testing.F) {
	cpuFuzzSeeds(f, "testdata/proc/*/stat", "cpu 1 2 3 4\ncpu0 1 2 3 4 5 6 7 8 9 10 11\n", "cpu\ncpu0 x")
	cpuFuzzSeeds(f, "testdata/proc/*/*/stat")
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := ParseStat(bytes.NewReader(data))
		st2, err2 := ParseStat(bytes.NewReader(data))
		if cpuErrString(err) != cpuErrString(err2) || !reflect.DeepEqual(st, st2) {
			t.Fatalf("two parses differ: %+v, %v; %+v, %v", st, err, st2, err2)
		}
		dirty := Stat{PerCPU: []StatCPU{{CPU: 9, Ticks: CPUTicks{User: 9}}, {CPU: 10}}}
		err3 := parseStat(data, "/proc/stat", &dirty)
		if cpuErrString(err) != cpuErrString(err3) || err == nil && !reflect.DeepEqual(st.CPU, dirty.CPU) ||
			err == nil && len(st.PerCPU)+len(dirty.PerCPU) > 0 && !reflect.DeepEqual(st.PerCPU, dirty.PerCPU) {
			t.Fatalf("parse into a used Stat differs: %+v, %v; %+v, %v", st, err, dirty, err3)
		}
		if err != nil {
			return
		}
		var b strings.Builder
		rows := append([]StatCPU{{CPU: -1, Ticks: st.CPU}}, st.PerCPU...)
		for _, r := range rows {
			name := "cpu"
			if r.CPU >= 0 {
				name += strconv.Itoa(r.CPU)
			}
			c := r.Ticks
			fmt.Fprintf(&b, "%s %d %d %d %d %d %d %d %d %d %d\n", name, c.User, c.Nice, c.System, c.Idle, c.Iowait, c.IRQ, c.SoftIRQ, c.Steal, c.Guest, c.GuestNice)
		}
		rt, err := ParseStat(strings.NewReader(b.String()))
		if err != nil || !reflect.DeepEqual(rt, st) {
			t.Fatalf("round trip of %+v: %+v, %v", st, rt, err)
		}
		vals := make([]float64, numPcts)
		rows = rows[:min(len(rows), 16)]
		for _, a := range rows {
			for _, z := range rows {
				pc := cpuPercents(a.Ticks, z.Ticks, vals)
				for _, v := range []*float64{pc.TotalPct, pc.UserPct, pc.SystemPct, pc.IdlePct, pc.IowaitPct, pc.StealPct} {
					valued := PercentsValued(pc.Reset)
					if v == nil && valued || v != nil && (!valued || !(*v >= 0 && *v <= 100)) {
						t.Fatalf("%+v → %+v: %s", a.Ticks, z.Ticks, cpuPctString(pc))
					}
				}
			}
		}
	})
}

// FuzzParseMeminfo: no panic; deterministic, with or without the key
// cache ReadMem keeps; what parses renders back to text that parses the
// same.
func FuzzParseMeminfo(f *testing.F) {
	cpuFuzzSeeds(f, "testdata/proc/*/meminfo", "A: 1\nB: 2 kB\n", "X:\n", "MemTotal: 18014398509481984 kB\n")
	cpuFuzzSeeds(f, "testdata/proc/*/*/meminfo")
	names := map[string]string{}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseMeminfo(bytes.NewReader(data))
		m2 := map[string]uint64{}
		err2 := parseMeminfo(data, "/proc/meminfo", m2, names)
		if cpuErrString(err) != cpuErrString(err2) || err == nil && !reflect.DeepEqual(m, m2) {
			t.Fatalf("two parses differ: %v, %v; %v, %v", m, err, m2, err2)
		}
		if err != nil {
			return
		}
		var b strings.Builder
		for k, v := range m {
			fmt.Fprintf(&b, "%s: %d\n", k, v)
		}
		rt, err := ParseMeminfo(strings.NewReader(b.String()))
		if err != nil || !reflect.DeepEqual(rt, m) {
			t.Fatalf("round trip of %v: %v, %v", m, rt, err)
		}
	})
}

// FuzzParseLoadavg: no panic; deterministic; what parses is finite, not
// negative, and renders back to text that parses the same.
func FuzzParseLoadavg(f *testing.F) {
	cpuFuzzSeeds(f, "testdata/proc/*/loadavg", "0 0 0", "1e308 1e-300 0x1p3 1/2 3\n", "inf 1 1")
	cpuFuzzSeeds(f, "testdata/proc/*/*/loadavg")
	f.Fuzz(func(t *testing.T, data []byte) {
		la, err := ParseLoadavg(bytes.NewReader(data))
		la2, err2 := ParseLoadavg(bytes.NewReader(data))
		if cpuErrString(err) != cpuErrString(err2) || la != la2 {
			t.Fatalf("two parses differ: %+v, %v; %+v, %v", la, err, la2, err2)
		}
		if err != nil {
			return
		}
		s := fmt.Sprintf("%s %s %s %d/%d %d\n", strconv.FormatFloat(la.Load1, 'g', -1, 64),
			strconv.FormatFloat(la.Load5, 'g', -1, 64), strconv.FormatFloat(la.Load15, 'g', -1, 64), la.Running, la.Total, la.LastPID)
		rt, err := ParseLoadavg(strings.NewReader(s))
		if err != nil || rt != la {
			t.Fatalf("round trip of %+v via %q: %+v, %v", la, s, rt, err)
		}
	})
}

// FuzzParseCgroup feeds the same input to every cgroup parser: no panic;
// each is deterministic; the paths of /proc/self/cgroup begin with "/",
// and cgroupLevels walks from them up to the hierarchy's mount, never
// out of it.
func FuzzParseCgroup(f *testing.F) {
	cpuFuzzSeeds(f, "testdata/proc/*/*/self/cgroup", "12:memory:/docker/abc\n11:cpu,cpuacct:/docker/abc\n0::/../../x\n",
		"0::/a/../../../etc\n", "max 100000\n", "50000 100000\n", "-1\n", "nr_periods 5\nthrottled_time 3000\n")
	cpuFuzzSeeds(f, "testdata/sys/*/*/fs/cgroup/*")
	sys := f.TempDir()
	root := filepath.Join(sys, "fs", "cgroup")
	for _, d := range []string{"", "a", "a/b", "cpu", "memory"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			f.Fatal(err)
		}
	}
	p := &Prober{SysRoot: sys}
	f.Fuzz(func(t *testing.T, data []byte) {
		cg, err := ParseCgroup(bytes.NewReader(data))
		cg2, err2 := ParseCgroup(bytes.NewReader(data))
		if cpuErrString(err) != cpuErrString(err2) || cg != cg2 {
			t.Fatalf("ParseCgroup: two parses differ: %+v, %v; %+v, %v", cg, err, cg2, err2)
		}
		for _, path := range []string{cg.Unified, cg.CPU, cg.CPUAcct, cg.Memory} {
			if path == "" {
				continue
			}
			if path[0] != '/' {
				t.Fatalf("path %q does not begin with /", path)
			}
			for _, m := range []string{"", "cpu", "memory"} {
				levels := p.cgroupLevels(path, m)
				mount := filepath.Join(root, m)
				if len(levels) == 0 || levels[len(levels)-1].dir != mount {
					t.Fatalf("cgroupLevels(%q, %q) = %q: does not end at the mount %s", path, m, levels, mount)
				}
				for _, l := range levels {
					if l.dir != mount && !strings.HasPrefix(l.dir, mount+string(filepath.Separator)) || !strings.HasPrefix(l.path, "/") {
						t.Fatalf("cgroupLevels(%q, %q) = %q: out of %s", path, m, levels, mount)
					}
				}
			}
		}
		q, per, err := ParseCPUMax(bytes.NewReader(data))
		q2, per2, err2 := ParseCPUMax(bytes.NewReader(data))
		if cpuErrString(err) != cpuErrString(err2) || q != q2 || per != per2 || err == nil && (q < -1 || per < 0) {
			t.Fatalf("ParseCPUMax: %d %d %v; %d %d %v", q, per, err, q2, per2, err2)
		}
		st, err := ParseCgroupCPUStat(bytes.NewReader(data))
		st2, err2 := ParseCgroupCPUStat(bytes.NewReader(data))
		if cpuErrString(err) != cpuErrString(err2) || st != st2 {
			t.Fatalf("ParseCgroupCPUStat: %+v %v; %+v %v", st, err, st2, err2)
		}
		v, unl, err := ParseCgroupValue(bytes.NewReader(data))
		v2, unl2, err2 := ParseCgroupValue(bytes.NewReader(data))
		if cpuErrString(err) != cpuErrString(err2) || v != v2 || unl != unl2 || unl && v != 0 {
			t.Fatalf("ParseCgroupValue: %d %v %v; %d %v %v", v, unl, err, v2, unl2, err2)
		}
	})
}

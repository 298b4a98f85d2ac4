package hostprobe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// cpuT0 is the synthetic time of the first read of a test.
var cpuT0 = time.Unix(1700000000, 0)

// cpuWriteTree writes files (a path below dir → its text) into dir.
func cpuWriteTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// cpuStatText is a /proc/stat of the given "cpuN …" rows, headed by an
// aggregate "cpu" row that sums them.
func cpuStatText(t *testing.T, rows ...string) string {
	t.Helper()
	var sum CPUTicks
	for _, r := range rows {
		_, cols, _ := strings.Cut(r, " ")
		var c CPUTicks
		if err := parseTicks([]byte(cols), &c); err != nil {
			t.Fatalf("row %q: %v", r, err)
		}
		sum.add(c)
	}
	return fmt.Sprintf("cpu  %d %d %d %d %d %d %d %d %d %d\n%s\nintr 1 2 3\nctxt 99\n",
		sum.User, sum.Nice, sum.System, sum.Idle, sum.Iowait, sum.IRQ, sum.SoftIRQ, sum.Steal, sum.Guest, sum.GuestNice,
		strings.Join(rows, "\n"))
}

// cpuPctString renders p compactly: "b=40 u=20 s=10 i=50 w=10 st=10"
// (busy, user, system, idle, iowait, steal), with " (reset)" when Reset
// is set, or "null(reset)" when every percentage is null.
func cpuPctString(p CPUPercents) string {
	vals := []*float64{p.TotalPct, p.UserPct, p.SystemPct, p.IdlePct, p.IowaitPct, p.StealPct}
	nulls := 0
	var parts []string
	for i, v := range vals {
		s := "null"
		if v == nil {
			nulls++
		} else {
			s = fmt.Sprint(*v)
		}
		parts = append(parts, []string{"b=", "u=", "s=", "i=", "w=", "st="}[i]+s)
	}
	if nulls == len(vals) {
		return "null(" + p.Reset + ")"
	}
	s := strings.Join(parts, " ")
	if p.Reset != "" {
		s += " (" + p.Reset + ")"
	}
	return s
}

// cpuCoreStrings renders a record's cores: "cpuN " + cpuPctString, or
// "cpuN offline" (after checking that an offline core has no values).
func cpuCoreStrings(t *testing.T, cores []CPUCore) []string {
	t.Helper()
	var out []string
	for i, c := range cores {
		if i > 0 && cores[i-1].CPU >= c.CPU {
			t.Errorf("cores not sorted by CPU number: %d after %d", c.CPU, cores[i-1].CPU)
		}
		if !c.Online {
			if c.Ticks != nil || c.CPUPercents != (CPUPercents{}) {
				t.Errorf("offline cpu%d has values: ticks %v, %s", c.CPU, c.Ticks, cpuPctString(c.CPUPercents))
			}
			out = append(out, fmt.Sprintf("cpu%d offline", c.CPU))
			continue
		}
		if c.Ticks == nil {
			t.Errorf("online cpu%d has no ticks", c.CPU)
		}
		out = append(out, fmt.Sprintf("cpu%d %s", c.CPU, cpuPctString(c.CPUPercents)))
	}
	return out
}

// TestParseStat covers ARCHITECTURE.md case 5.1 and the malformed inputs.
func TestParseStat(t *testing.T) {
	conf, err := os.ReadFile("testdata/proc/conformance/stat")
	if err != nil {
		t.Fatal(err)
	}
	longIntr := "intr " + strings.Repeat("1234567 ", 20000) + "\n" // past bufio.Scanner's 64 KiB
	runParseCases(t, ParseStat, []parseCase[Stat]{
		{
			name: "conformance §5.1",
			in:   string(conf),
			want: Stat{
				CPU: CPUTicks{100, 2, 50, 800, 10, 1, 3, 4, 0, 0},
				PerCPU: []StatCPU{
					{0, CPUTicks{60, 1, 25, 400, 5, 1, 2, 2, 0, 0}},
					{1, CPUTicks{40, 1, 25, 400, 5, 0, 1, 2, 0, 0}},
				},
			},
		},
		{
			name: "old kernel with 4 and 8 columns",
			in:   "cpu  1 2 3 4\ncpu0 1 2 3 4 5 6 7 8\n",
			want: Stat{CPU: CPUTicks{User: 1, Nice: 2, System: 3, Idle: 4},
				PerCPU: []StatCPU{{0, CPUTicks{1, 2, 3, 4, 5, 6, 7, 8, 0, 0}}}},
		},
		{
			name: "columns past the tenth are ignored",
			in:   "cpu 1 2 3 4 5 6 7 8 9 10 11 12\n",
			want: Stat{CPU: CPUTicks{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		},
		{
			name: "tabs, sparse CPU numbers, a long intr line, no final newline",
			in:   "cpu\t1 2 3 4\n" + longIntr + "cpu7 1 2 3 4\ncpu3 0 0 0 1",
			want: Stat{CPU: CPUTicks{User: 1, Nice: 2, System: 3, Idle: 4},
				PerCPU: []StatCPU{{7, CPUTicks{User: 1, Nice: 2, System: 3, Idle: 4}}, {3, CPUTicks{Idle: 1}}}},
		},
		{
			name: "lines that are not cpu rows",
			in:   "cpufreq x\ncpu 1 2 3 4\n\nprocs_running 3\n",
			want: Stat{CPU: CPUTicks{User: 1, Nice: 2, System: 3, Idle: 4}},
		},
		{name: "empty", in: "", wantErr: `parse /proc/stat: no "cpu" row`},
		{name: "no cpu row", in: "cpu0 1 2 3 4\nintr 1\n", wantErr: `parse /proc/stat: no "cpu" row`},
		{name: "bad column", in: "cpu 1 2 3 4\ncpu0 1 2 x 4\n", wantErr: `parse /proc/stat: line 2: cpu0: column 3: invalid count "x"`},
		{name: "negative column", in: "cpu 1 -2 3 4\n", wantErr: `line 1: cpu: column 2: invalid count "-2"`},
		{name: "overflow", in: "cpu 1 2 3 18446744073709551616\n", wantErr: `line 1: cpu: column 4: invalid count`},
		{name: "three columns", in: "intr 1\ncpu 1 2 3\n", wantErr: `line 2: cpu: 3 columns, want at least 4`},
		{name: "name only", in: "cpu\n", wantErr: `line 1: cpu: 0 columns, want at least 4`},
		{name: "bad CPU number", in: "cpu 1 2 3 4\ncpu1x 1 2 3 4\n", wantErr: `line 2: bad CPU number "cpu1x"`},
		{name: "huge CPU number", in: "cpu 1 2 3 4\ncpu99999999 1 2 3 4\n", wantErr: `line 2: bad CPU number`},
		{name: "second cpu row", in: "cpu 1 2 3 4\ncpu 1 2 3 4\n", wantErr: `line 2: second "cpu" row`},
		{name: "CPU listed twice", in: "cpu 1 2 3 4\ncpu0 1 2 3 4\ncpu1 1 2 3 4\ncpu0 1 2 3 4\n", wantErr: `line 4: cpu0 listed twice`},
	})
}

// TestStatConformance51 is ARCHITECTURE.md case 5.1 through a Prober: two
// logical CPUs, host user 100, total 970.
func TestStatConformance51(t *testing.T) {
	p := &Prober{ProcRoot: "testdata/proc/conformance", SysRoot: "testdata/sys/none"}
	rec, err := p.ReadCPU(cpuT0)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Host.LogicalCPUs != 2 || rec.Host.Ticks.User != 100 || rec.Host.Ticks.Total() != 970 {
		t.Errorf("logical_cpus %d, user %d, total %d; want 2, 100, 970",
			rec.Host.LogicalCPUs, rec.Host.Ticks.User, rec.Host.Ticks.Total())
	}
	if len(rec.Cores) != 2 || rec.Cores[1].Ticks == nil || *rec.Cores[1].Ticks != (CPUTicks{40, 1, 25, 400, 5, 0, 1, 2, 0, 0}) {
		t.Errorf("cores = %+v", rec.Cores)
	}
}

// TestCPUConformance52 is ARCHITECTURE.md case 5.2: previous (user 10,
// system 10, idle 80), current (user 30, system 20, idle 130, iowait 10,
// steal 10) → busy 40 %, idle 50 %, iowait 10 %, steal 10 %; the first
// sample is null, never 0.
func TestCPUConformance52(t *testing.T) {
	p := &Prober{ProcRoot: "testdata/proc/conformance-5.2/t0", SysRoot: "testdata/sys/none"}
	rec, err := p.ReadCPU(cpuT0)
	if err != nil {
		t.Fatal(err)
	}
	if got := cpuPctString(rec.Host.CPUPercents); got != "null(first)" || rec.IntervalMS != nil {
		t.Errorf("first read: host %s, interval %v; want null(first), null", got, rec.IntervalMS)
	}
	p.ProcRoot = "testdata/proc/conformance-5.2/t1"
	rec, err = p.ReadCPU(cpuT0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	const want = "b=40 u=20 s=10 i=50 w=10 st=10"
	if got := cpuPctString(rec.Host.CPUPercents); got != want {
		t.Errorf("host = %s, want %s", got, want)
	}
	if got := cpuPctString(rec.Cores[0].CPUPercents); got != want {
		t.Errorf("cpu0 = %s, want %s", got, want)
	}
	if rec.IntervalMS == nil || *rec.IntervalMS != 1000 {
		t.Errorf("interval_ms = %v, want 1000", rec.IntervalMS)
	}
}

// cpuStep is one read of a ReadCPU sequence: the files to write (a text
// of "-" removes the file) and what the record must say.
type cpuStep struct {
	files   map[string]string
	host    string   // "N: " + cpuPctString of the host, N logical CPUs
	cores   []string // cpuCoreStrings
	wantErr string   // the read fails with an error containing this
}

// TestReadCPURules proves the rules of ARCHITECTURE.md case 5.2 and the
// issue over sequences of reads of a fake proc (and sys) tree.
func TestReadCPURules(t *testing.T) {
	stat := func(rows ...string) map[string]string { return map[string]string{"proc/stat": cpuStatText(t, rows...)} }
	tests := []struct {
		name  string
		steps []cpuStep
	}{
		{
			name: "priming read is null, never 0 or a since-boot average",
			steps: []cpuStep{
				{files: stat("cpu0 500 0 500 9000 0 0 0 0 0 0", "cpu1 0 0 0 10000 0 0 0 0 0 0"),
					host: "2: null(first)", cores: []string{"cpu0 null(first)", "cpu1 null(first)"}},
				{files: stat("cpu0 600 0 500 9000 0 0 0 0 0 0", "cpu1 0 0 0 10100 0 0 0 0 0 0"),
					host:  "2: b=50 u=50 s=0 i=50 w=0 st=0",
					cores: []string{"cpu0 b=100 u=100 s=0 i=0 w=0 st=0", "cpu1 b=0 u=0 s=0 i=100 w=0 st=0"}},
			},
		},
		{
			name: "no tick passed",
			steps: []cpuStep{
				{files: stat("cpu0 1 2 3 4 5 6 7 8 0 0"), host: "1: null(first)", cores: []string{"cpu0 null(first)"}},
				{files: stat("cpu0 1 2 3 4 5 6 7 8 0 0"), host: "1: null(no_time)", cores: []string{"cpu0 null(no_time)"}},
				{files: stat("cpu0 2 2 3 5 5 6 7 8 0 0"), host: "1: b=50 u=50 s=0 i=50 w=0 st=0",
					cores: []string{"cpu0 b=50 u=50 s=0 i=50 w=0 st=0"}},
			},
		},
		{
			// NOHZ kernels let iowait step back a tick; the row is null
			// and the next read computes from this one: no spike, no stop.
			// iowait stepping back a tick (NO_HZ; proc(5)) counts 0 for
			// the interval: the other shares stand, marked; no hole.
			name: "iowait steps back one tick",
			steps: []cpuStep{
				{files: stat("cpu0 100 0 0 1000 10 0 0 0 0 0", "cpu1 100 0 0 1000 10 0 0 0 0 0"),
					host: "2: null(first)", cores: []string{"cpu0 null(first)", "cpu1 null(first)"}},
				{files: stat("cpu0 150 0 0 1050 10 0 0 0 0 0", "cpu1 150 0 0 1050 9 0 0 0 0 0"),
					host:  "2: b=50 u=50 s=0 i=50 w=0 st=0 (iowait_backwards)",
					cores: []string{"cpu0 b=50 u=50 s=0 i=50 w=0 st=0", "cpu1 b=50 u=50 s=0 i=50 w=0 st=0 (iowait_backwards)"}},
				{files: stat("cpu0 200 0 0 1100 10 0 0 0 0 0", "cpu1 175 0 0 1125 9 0 0 0 0 0"),
					host:  "2: b=37.5 u=37.5 s=0 i=62.5 w=0 st=0",
					cores: []string{"cpu0 b=50 u=50 s=0 i=50 w=0 st=0", "cpu1 b=25 u=25 s=0 i=75 w=0 st=0"}},
			},
		},
		{
			// Idle stepping back while user rises must not read as a
			// 100 % busy interval: null, marked, and the baseline moves on.
			name: "idle steps back one tick",
			steps: []cpuStep{
				{files: stat("cpu0 100 0 0 1050 0 0 0 0 0 0"), host: "1: null(first)", cores: []string{"cpu0 null(first)"}},
				{files: stat("cpu0 102 0 0 1049 0 0 0 0 0 0"), host: "1: null(backwards)", cores: []string{"cpu0 null(backwards)"}},
				{files: stat("cpu0 112 0 0 1139 0 0 0 0 0 0"), host: "1: b=10 u=10 s=0 i=90 w=0 st=0",
					cores: []string{"cpu0 b=10 u=10 s=0 i=90 w=0 st=0"}},
			},
		},
		{
			// Issue 22 item 9: a tick of jitter in one column of a
			// normal interval clamps that column; the sample stands.
			name: "one column steps back one tick in a long interval",
			steps: []cpuStep{
				{files: stat("cpu0 100 0 50 1050 0 0 0 0 0 0"), host: "1: null(first)", cores: []string{"cpu0 null(first)"}},
				{files: stat("cpu0 200 0 49 1950 0 0 0 0 0 0"), host: "1: b=10 u=10 s=0 i=90 w=0 st=0 (clamped)",
					cores: []string{"cpu0 b=10 u=10 s=0 i=90 w=0 st=0 (clamped)"}},
				{files: stat("cpu0 300 0 149 2750 0 0 0 0 0 0"), host: "1: b=20 u=10 s=10 i=80 w=0 st=0",
					cores: []string{"cpu0 b=20 u=10 s=10 i=80 w=0 st=0"}},
				// Three ticks back is no jitter: a reset.
				{files: stat("cpu0 400 0 146 3650 0 0 0 0 0 0"), host: "1: null(backwards)", cores: []string{"cpu0 null(backwards)"}},
			},
		},
		{
			name: "every counter falls after suspend/resume",
			steps: []cpuStep{
				{files: stat("cpu0 9000 0 1000 90000 0 0 0 0 0 0"), host: "1: null(first)", cores: []string{"cpu0 null(first)"}},
				{files: stat("cpu0 10 0 10 80 0 0 0 0 0 0"), host: "1: null(backwards)", cores: []string{"cpu0 null(backwards)"}},
				{files: stat("cpu0 20 0 10 170 0 0 0 0 0 0"), host: "1: b=10 u=10 s=0 i=90 w=0 st=0",
					cores: []string{"cpu0 b=10 u=10 s=0 i=90 w=0 st=0"}},
				{files: stat("cpu0 30 0 10 260 0 0 0 0 0 0"), host: "1: b=10 u=10 s=0 i=90 w=0 st=0",
					cores: []string{"cpu0 b=10 u=10 s=0 i=90 w=0 st=0"}},
			},
		},
		{
			// node_exporter reported an offline CPU with its last values.
			name: "a CPU goes offline and comes back",
			steps: []cpuStep{
				{files: stat("cpu0 0 0 0 100 0 0 0 0 0 0", "cpu1 0 0 0 100 0 0 0 0 0 0"),
					host: "2: null(first)", cores: []string{"cpu0 null(first)", "cpu1 null(first)"}},
				{files: stat("cpu0 50 0 0 150 0 0 0 0 0 0", "cpu1 100 0 0 100 0 0 0 0 0 0"),
					host:  "2: b=75 u=75 s=0 i=25 w=0 st=0",
					cores: []string{"cpu0 b=50 u=50 s=0 i=50 w=0 st=0", "cpu1 b=100 u=100 s=0 i=0 w=0 st=0"}},
				{files: stat("cpu0 60 0 0 240 0 0 0 0 0 0"),
					host:  "1: b=10 u=10 s=0 i=90 w=0 st=0 (cpus_changed)",
					cores: []string{"cpu0 b=10 u=10 s=0 i=90 w=0 st=0", "cpu1 offline"}},
				{files: stat("cpu0 70 0 0 330 0 0 0 0 0 0"),
					host:  "1: b=10 u=10 s=0 i=90 w=0 st=0",
					cores: []string{"cpu0 b=10 u=10 s=0 i=90 w=0 st=0", "cpu1 offline"}},
				{files: stat("cpu0 80 0 0 420 0 0 0 0 0 0", "cpu1 100 0 0 5000 0 0 0 0 0 0"),
					host:  "2: b=10 u=10 s=0 i=90 w=0 st=0 (cpus_changed)",
					cores: []string{"cpu0 b=10 u=10 s=0 i=90 w=0 st=0", "cpu1 null(incarnation)"}},
				{files: stat("cpu0 90 0 0 510 0 0 0 0 0 0", "cpu1 190 0 0 5010 0 0 0 0 0 0"),
					host:  "2: b=50 u=50 s=0 i=50 w=0 st=0",
					cores: []string{"cpu0 b=10 u=10 s=0 i=90 w=0 st=0", "cpu1 b=90 u=90 s=0 i=10 w=0 st=0"}},
			},
		},
		{
			// Across a hotplug the aggregate row is not to be trusted
			// (the kernel switches the source of a CPU's idle and
			// iowait as it goes or comes); here it jumps by the new
			// CPU's counters (99 % busy). The host is summed over cpu0,
			// online at both reads.
			name: "a CPU coming online would spike the aggregate",
			steps: []cpuStep{
				{files: stat("cpu0 0 0 0 100 0 0 0 0 0 0"), host: "1: null(first)", cores: []string{"cpu0 null(first)"}},
				{files: stat("cpu0 25 0 0 175 0 0 0 0 0 0", "cpu1 100000 0 0 1000 0 0 0 0 0 0"),
					host:  "2: b=25 u=25 s=0 i=75 w=0 st=0 (cpus_changed)",
					cores: []string{"cpu0 b=25 u=25 s=0 i=75 w=0 st=0", "cpu1 null(first)"}},
			},
		},
		{
			name: "no CPU online at both reads: null, and the reason is the change",
			steps: []cpuStep{
				{files: stat("cpu0 0 0 0 100 0 0 0 0 0 0"), host: "1: null(first)", cores: []string{"cpu0 null(first)"}},
				{files: stat("cpu1 10 0 0 90 0 0 0 0 0 0"),
					host: "1: null(cpus_changed)", cores: []string{"cpu0 offline", "cpu1 null(first)"}},
				{files: stat("cpu1 20 0 0 180 0 0 0 0 0 0"),
					host: "1: b=10 u=10 s=0 i=90 w=0 st=0", cores: []string{"cpu0 offline", "cpu1 b=10 u=10 s=0 i=90 w=0 st=0"}},
			},
		},
		{
			name: "CPUs change and the remaining one steps back",
			steps: []cpuStep{
				{files: stat("cpu0 0 0 0 100 5 0 0 0 0 0", "cpu1 0 0 0 100 0 0 0 0 0 0"),
					host: "2: null(first)", cores: []string{"cpu0 null(first)", "cpu1 null(first)"}},
				{files: stat("cpu0 10 0 0 190 4 0 0 0 0 0"),
					host: "1: b=10 u=10 s=0 i=90 w=0 st=0 (iowait_backwards)", cores: []string{"cpu0 b=10 u=10 s=0 i=90 w=0 st=0 (iowait_backwards)", "cpu1 offline"}},
				{files: stat("cpu0 20 0 0 100 4 0 0 0 0 0"),
					host: "1: null(backwards)", cores: []string{"cpu0 null(backwards)", "cpu1 offline"}},
			},
		},
		{
			name: "offline from the start, listed from sysfs",
			steps: []cpuStep{
				{files: map[string]string{
					"proc/stat":                         cpuStatText(t, "cpu0 0 0 0 100 0 0 0 0 0 0", "cpu1 0 0 0 100 0 0 0 0 0 0"),
					"sys/devices/system/cpu/present":    "0-3\n",
					"sys/devices/system/cpu/possible":   "0-127\n",
					"sys/devices/system/cpu/online":     "0-1\n",
					"sys/devices/system/cpu/offline":    "2-127\n",
					"sys/devices/system/cpu/kernel_max": "8191\n",
				},
					host:  "2: null(first)",
					cores: []string{"cpu0 null(first)", "cpu1 null(first)", "cpu2 offline", "cpu3 offline"}},
				{files: stat("cpu0 10 0 0 190 0 0 0 0 0 0", "cpu1 10 0 0 190 0 0 0 0 0 0", "cpu2 7 0 0 3 0 0 0 0 0 0"),
					host:  "3: b=10 u=10 s=0 i=90 w=0 st=0 (cpus_changed)",
					cores: []string{"cpu0 b=10 u=10 s=0 i=90 w=0 st=0", "cpu1 b=10 u=10 s=0 i=90 w=0 st=0", "cpu2 null(first)", "cpu3 offline"}},
			},
		},
		{
			name: "possible when there is no present",
			steps: []cpuStep{
				{files: map[string]string{
					"proc/stat":                       cpuStatText(t, "cpu0 0 0 0 100 0 0 0 0 0 0"),
					"sys/devices/system/cpu/possible": "0,2\n",
				},
					host: "1: null(first)", cores: []string{"cpu0 null(first)", "cpu2 offline"}},
			},
		},
		{
			name: "a malformed sysfs list is ignored",
			steps: []cpuStep{
				{files: map[string]string{
					"proc/stat":                      cpuStatText(t, "cpu0 0 0 0 100 0 0 0 0 0 0"),
					"sys/devices/system/cpu/present": "0-99999999\n",
					"sys/devices/system/cpu/online":  "0,x\n",
				},
					host: "1: null(first)", cores: []string{"cpu0 null(first)"}},
			},
		},
		{
			name: "rows out of CPU order",
			steps: []cpuStep{
				{files: stat("cpu2 0 0 0 100 0 0 0 0 0 0", "cpu0 0 0 0 100 0 0 0 0 0 0"),
					host: "2: null(first)", cores: []string{"cpu0 null(first)", "cpu2 null(first)"}},
				{files: stat("cpu2 100 0 0 100 0 0 0 0 0 0", "cpu0 0 0 0 200 0 0 0 0 0 0"),
					host:  "2: b=50 u=50 s=0 i=50 w=0 st=0",
					cores: []string{"cpu0 b=0 u=0 s=0 i=100 w=0 st=0", "cpu2 b=100 u=100 s=0 i=0 w=0 st=0"}},
			},
		},
		{
			// The vmstat split: user is user+nice, system is
			// system+irq+softirq, steal is busy; guest is inside user.
			name: "every column",
			steps: []cpuStep{
				{files: stat("cpu0 0 0 0 0 0 0 0 0 0 0"), host: "1: null(first)", cores: []string{"cpu0 null(first)"}},
				{files: stat("cpu0 1 2 3 1 1 1 1 1 1 1"), host: "1: b=81.82 u=27.27 s=45.45 i=9.09 w=9.09 st=9.09",
					cores: []string{"cpu0 b=81.82 u=27.27 s=45.45 i=9.09 w=9.09 st=9.09"}},
			},
		},
		{
			name: "stat unreadable: an error, and the baseline is kept",
			steps: []cpuStep{
				{files: stat("cpu0 0 0 0 100 0 0 0 0 0 0"), host: "1: null(first)", cores: []string{"cpu0 null(first)"}},
				{files: map[string]string{"proc/stat": "-"}, wantErr: "no such file"},
				{files: stat("cpu0 30 0 0 170 0 0 0 0 0 0"), host: "1: b=30 u=30 s=0 i=70 w=0 st=0",
					cores: []string{"cpu0 b=30 u=30 s=0 i=70 w=0 st=0"}},
			},
		},
		{
			name: "stat malformed: an error naming the line, and the baseline is kept",
			steps: []cpuStep{
				{files: stat("cpu0 0 0 0 100 0 0 0 0 0 0"), host: "1: null(first)", cores: []string{"cpu0 null(first)"}},
				{files: map[string]string{"proc/stat": "cpu 1 2 3 4\ncpu0 1 2 3\n"}, wantErr: "stat: line 2: cpu0: 3 columns"},
				{files: stat("cpu0 30 0 0 170 0 0 0 0 0 0"), host: "1: b=30 u=30 s=0 i=70 w=0 st=0",
					cores: []string{"cpu0 b=30 u=30 s=0 i=70 w=0 st=0"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := &Prober{ProcRoot: filepath.Join(dir, "proc"), SysRoot: filepath.Join(dir, "sys")}
			good := time.Time{}
			for i, st := range tt.steps {
				for name, text := range st.files {
					if text == "-" {
						if err := os.Remove(filepath.Join(dir, name)); err != nil {
							t.Fatal(err)
						}
						delete(st.files, name)
					}
				}
				cpuWriteTree(t, dir, st.files)
				now := cpuT0.Add(time.Duration(i) * time.Second)
				rec, err := p.ReadCPU(now)
				if st.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), st.wantErr) {
						t.Fatalf("read %d: err = %v, want it to contain %q", i+1, err, st.wantErr)
					}
					continue
				}
				if err != nil {
					t.Fatalf("read %d: %v", i+1, err)
				}
				if got := fmt.Sprintf("%d: %s", rec.Host.LogicalCPUs, cpuPctString(rec.Host.CPUPercents)); got != st.host {
					t.Errorf("read %d: host %s\n\twant %s", i+1, got, st.host)
				}
				if got := cpuCoreStrings(t, rec.Cores); !reflect.DeepEqual(got, st.cores) {
					t.Errorf("read %d: cores %q\n\twant %q", i+1, got, st.cores)
				}
				// The interval is since the previous good read.
				if good.IsZero() != (rec.IntervalMS == nil) ||
					rec.IntervalMS != nil && *rec.IntervalMS != float64(now.Sub(good).Milliseconds()) {
					t.Errorf("read %d: interval_ms %v after the good read at %v", i+1, rec.IntervalMS, good)
				}
				if rec.Host.Load1 != nil || rec.Host.LoadError == "" || rec.Cgroup != nil {
					t.Errorf("read %d: load1 %v (%q), cgroup %v without loadavg or cgroup", i+1, rec.Host.Load1, rec.Host.LoadError, rec.Cgroup)
				}
				good = now
			}
		})
	}
}

// TestReadCPULoadavg is ARCHITECTURE.md case 5.3 through a Prober; an
// unreadable or malformed loadavg is null loads and a load_error naming
// the file (and the line and field), not an error.
func TestReadCPULoadavg(t *testing.T) {
	p := &Prober{ProcRoot: "testdata/proc/conformance", SysRoot: "testdata/sys/none"}
	rec, err := p.ReadCPU(cpuT0)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Host.Load1 == nil || *rec.Host.Load1 != 1.25 || *rec.Host.Load5 != 0.75 || *rec.Host.Load15 != 0.5 || rec.Host.LoadError != "" {
		t.Errorf("loads = %v %v %v (%q), want 1.25 0.75 0.5", rec.Host.Load1, rec.Host.Load5, rec.Host.Load15, rec.Host.LoadError)
	}
	for _, tt := range []struct{ loadavg, want string }{
		{"-", "open $D/loadavg: no such file or directory"},
		{"1.0 NaN 2.0\n", `parse $D/loadavg: line 1: field 2: invalid load average "NaN"`},
		{"1 2\n", `parse $D/loadavg: line 1: 2 fields, want at least 3`},
	} {
		dir := t.TempDir()
		files := map[string]string{"stat": "cpu 1 2 3 4\n"}
		if tt.loadavg != "-" {
			files["loadavg"] = tt.loadavg
		}
		cpuWriteTree(t, dir, files)
		p := &Prober{ProcRoot: dir, SysRoot: dir}
		rec, err := p.ReadCPU(cpuT0)
		if err != nil {
			t.Fatalf("loadavg %q: %v", tt.loadavg, err)
		}
		if rec.Host.Load1 != nil || rec.Host.Load5 != nil || rec.Host.Load15 != nil {
			t.Errorf("loadavg %q: loads %v %v %v, want null", tt.loadavg, rec.Host.Load1, rec.Host.Load5, rec.Host.Load15)
		}
		if got := strings.ReplaceAll(rec.Host.LoadError, dir, "$D"); got != tt.want {
			t.Errorf("loadavg %q: load_error %q, want %q", tt.loadavg, got, tt.want)
		}
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(`"load1":null`)) || !bytes.Contains(b, []byte(`"load_error":"`)) {
			t.Errorf("loadavg %q: JSON %s", tt.loadavg, b)
		}
	}
}

func TestParseLoadavg(t *testing.T) {
	runParseCases(t, ParseLoadavg, []parseCase[Loadavg]{
		{name: "conformance §5.3", in: "1.25 0.75 0.50 1/234 5678\n", want: Loadavg{1.25, 0.75, 0.5, 1, 234, 5678}},
		{name: "averages only", in: "0.00 0.01 0.05", want: Loadavg{Load1: 0, Load5: 0.01, Load15: 0.05}},
		{name: "no pid", in: "3 2 1 7/70\n", want: Loadavg{3, 2, 1, 7, 70, 0}},
		{name: "empty", in: "", wantErr: "parse /proc/loadavg: line 1: 0 fields, want at least 3"},
		{name: "two fields", in: "1 2\n", wantErr: "line 1: 2 fields, want at least 3"},
		{name: "not a number", in: "1 x 2\n", wantErr: `line 1: field 2: invalid load average "x"`},
		{name: "negative", in: "1 2 -3\n", wantErr: `field 3: invalid load average "-3"`},
		{name: "NaN", in: "NaN 1 1\n", wantErr: `field 1: invalid load average "NaN"`},
		{name: "Inf", in: "1 +Inf 1\n", wantErr: `field 2: invalid load average "+Inf"`},
		{name: "bad running/total", in: "1 2 3 1-234 5\n", wantErr: `field 4: invalid running/total "1-234"`},
		{name: "bad pid", in: "1 2 3 1/234 -5\n", wantErr: `field 5: invalid pid "-5"`},
		{name: "extra field", in: "1 2 3 1/234 5 6\n", wantErr: `line 1: unexpected field "6"`},
		{name: "second line", in: "1 2 3\n4 5 6\n", wantErr: "line 2: unexpected second line"},
	})
}

func TestParseCPUList(t *testing.T) {
	tests := []struct {
		in   string
		want []int
		err  bool
	}{
		{in: "0-3\n", want: []int{0, 1, 2, 3}},
		{in: "0,2-3,7\n", want: []int{0, 2, 3, 7}},
		{in: "\n", want: nil},
		{in: "5", want: []int{5}},
		{in: "3-1", err: true},
		{in: "0-", err: true},
		{in: "a", err: true},
		{in: "0,,1", err: true},
		{in: "0-65536", err: true},
		{in: "0-65535", want: func() []int {
			v := make([]int, 1<<16)
			for i := range v {
				v[i] = i
			}
			return v
		}()},
		{in: "0-65535,1", err: true},
	}
	for _, tt := range tests {
		got, err := parseCPUList([]byte(tt.in))
		if (err != nil) != tt.err || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseCPUList(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

// TestCPUPercentsBounds checks over random pairs of rows that the
// percentages are null or within [0, 100], and that busy, idle and
// iowait add up to 100.
func TestCPUPercentsBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	vals := make([]float64, numPcts)
	col := func() uint64 {
		switch r.IntN(4) {
		case 0:
			return 0
		case 1:
			return r.Uint64N(10)
		case 2:
			return r.Uint64N(1 << 40)
		}
		return r.Uint64()
	}
	for range 20000 {
		var a, b CPUTicks
		for _, c := range []*CPUTicks{&a, &b} {
			*c = CPUTicks{col(), col(), col(), col(), col(), col(), col(), col(), col(), col()}
		}
		if r.IntN(2) == 0 { // b after a: every column grows
			b = a
			b.add(CPUTicks{r.Uint64N(100), r.Uint64N(100), r.Uint64N(100), r.Uint64N(1000), r.Uint64N(3), 0, r.Uint64N(5), r.Uint64N(5), 0, 0})
		}
		pc := cpuPercents(a, b, vals)
		ps := []*float64{pc.TotalPct, pc.UserPct, pc.SystemPct, pc.IdlePct, pc.IowaitPct, pc.StealPct}
		if !PercentsValued(pc.Reset) {
			for _, v := range ps {
				if v != nil {
					t.Fatalf("%+v → %+v: reset %s with values", a, b, pc.Reset)
				}
			}
			continue
		}
		for _, v := range ps {
			if v == nil || *v < 0 || *v > 100 || math.IsNaN(*v) {
				t.Fatalf("%+v → %+v: %s", a, b, cpuPctString(pc))
			}
		}
		if sum := *pc.TotalPct + *pc.IdlePct + *pc.IowaitPct; math.Abs(sum-100) > 0.02 {
			t.Fatalf("%+v → %+v: busy+idle+iowait = %v", a, b, sum)
		}
	}
}

// TestCPURecordGolden pins the JSON of one full host.cpu record (an
// offline CPU, load averages, a cgroup quota) in
// testdata/golden/cpu_record.json; DS_UPDATE=1 rewrites it.
func TestCPURecordGolden(t *testing.T) {
	rec := cpuContainerRecord(t)
	got, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	const golden = "testdata/golden/cpu_record.json"
	if os.Getenv("DS_UPDATE") != "" {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (DS_UPDATE=1 go test ./pkg/hostprobe -run TestCPURecordGolden makes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the record; regenerate with DS_UPDATE=1 and review:\n%s", golden, got)
	}
}

// cpuContainerRecord reads the container fixture (testdata/proc/container
// and testdata/sys/container, at t0 and a second later at t1: 4 of 5
// CPUs online, cgroup v2 with a quota of 0.5 CPU, used fully) and returns
// the second record. A Prober's roots are set once: they are symbolic
// links, pointed at t1 after the first read.
func cpuContainerRecord(t *testing.T) *CPURecord {
	t.Helper()
	dir := t.TempDir()
	p := Prober{ProcRoot: filepath.Join(dir, "proc"), SysRoot: filepath.Join(dir, "sys")}
	var rec *CPURecord
	for i, step := range []string{"t0", "t1"} {
		for _, root := range []string{"proc", "sys"} {
			target, err := filepath.Abs(filepath.Join("testdata", root, "container", step))
			if err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(dir, root)
			if err := os.Remove(link); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
		}
		var err error
		if rec, err = p.ReadCPU(cpuT0.Add(time.Duration(i) * time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	return rec
}

// TestReadCPURealProc reads this machine's /proc twice; skipped in short
// mode, and tolerant of any machine.
func TestReadCPURealProc(t *testing.T) {
	if testing.Short() {
		t.Skip("reads the real /proc")
	}
	if _, err := os.Stat("/proc/stat"); err != nil {
		t.Skip("no /proc/stat")
	}
	var p Prober
	if _, err := p.ReadCPU(time.Now()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	rec, err := p.ReadCPU(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if rec.Host.LogicalCPUs < 1 {
		t.Errorf("logical_cpus = %d", rec.Host.LogicalCPUs)
	}
	for _, c := range append([]CPUPercents{rec.Host.CPUPercents}, func() (ps []CPUPercents) {
		for _, c := range rec.Cores {
			ps = append(ps, c.CPUPercents)
		}
		return ps
	}()...) {
		for _, v := range []*float64{c.TotalPct, c.UserPct, c.SystemPct, c.IdlePct, c.IowaitPct, c.StealPct} {
			if v != nil && (*v < 0 || *v > 100) {
				t.Errorf("percentage out of range: %s", cpuPctString(c))
			}
		}
	}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", b)
}

// BenchmarkReadCPU reads a 64-CPU /proc/stat; ds host at 100 ms must
// cost under 1 % of a core for every channel together.
func BenchmarkReadCPU(b *testing.B) {
	dir := b.TempDir()
	var sb strings.Builder
	sb.WriteString("cpu  6400 0 6400 64000 0 0 0 0 0 0\n")
	for i := range 64 {
		fmt.Fprintf(&sb, "cpu%d 100 0 100 1000 0 0 0 0 0 0\n", i)
	}
	sb.WriteString("intr " + strings.Repeat("0 ", 4000) + "\nctxt 1\nbtime 1\n")
	if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "loadavg"), []byte("0.1 0.2 0.3 1/100 42\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	p := &Prober{ProcRoot: dir, SysRoot: dir}
	b.ReportAllocs()
	now := cpuT0
	for b.Loop() {
		now = now.Add(100 * time.Millisecond)
		if _, err := p.ReadCPU(now); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseStat parses a 64-CPU /proc/stat into a reused Stat.
func BenchmarkParseStat(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("cpu  6400 0 6400 64000 0 0 0 0 0 0\n")
	for i := range 64 {
		fmt.Fprintf(&sb, "cpu%d 100 0 100 1000 0 0 0 0 0 0\n", i)
	}
	sb.WriteString("intr " + strings.Repeat("0 ", 4000) + "\nctxt 1\nbtime 1\n")
	data := []byte(sb.String())
	var st Stat
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if err := parseStat(data, "stat", &st); err != nil {
			b.Fatal(err)
		}
	}
}

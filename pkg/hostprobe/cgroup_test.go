package hostprobe

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseCgroup(t *testing.T) {
	runParseCases(t, ParseCgroup, []parseCase[CgroupPaths]{
		{name: "v2", in: "0::/user.slice/user-1000.slice/session-2.scope\n",
			want: CgroupPaths{Unified: "/user.slice/user-1000.slice/session-2.scope"}},
		{name: "v2 in a cgroup namespace", in: "0::/\n", want: CgroupPaths{Unified: "/"}},
		{name: "v1", in: "12:memory:/docker/abc\n11:cpu,cpuacct:/docker/abc\n10:name=systemd:/docker/abc\n3:pids:/docker/abc\n",
			want: CgroupPaths{CPU: "/docker/abc", CPUAcct: "/docker/abc", Memory: "/docker/abc"}},
		{name: "hybrid", in: "5:cpuacct,cpu:/a\n4:memory:/b\n1:name=systemd:/c\n0::/d\n",
			want: CgroupPaths{Unified: "/d", CPU: "/a", CPUAcct: "/a", Memory: "/b"}},
		{name: "a path with colons", in: "0::/a:b:c\n", want: CgroupPaths{Unified: "/a:b:c"}},
		{name: "outside the namespace", in: "0::/../../user.slice\n", want: CgroupPaths{Unified: "/../../user.slice"}},
		{name: "blank lines", in: "\n0::/x\n\n", want: CgroupPaths{Unified: "/x"}},
		{name: "empty", in: "", want: CgroupPaths{}},
		{name: "no colons", in: "0::/\nhello\n", wantErr: `parse /proc/self/cgroup: line 2: want "ID:controllers:path", have "hello"`},
		{name: "one colon", in: "0:/x\n", wantErr: `line 1: want "ID:controllers:path"`},
		{name: "bad id", in: "x::/\n", wantErr: `line 1: want "ID:controllers:path"`},
		{name: "relative path", in: "0::x\n", wantErr: `line 1: path "x" does not begin with /`},
		{name: "no path", in: "2:cpu:\n", wantErr: `line 1: path "" does not begin with /`},
	})
}

func TestParseCPUMax(t *testing.T) {
	tests := []struct {
		in            string
		quota, period int64
		wantErr       string
	}{
		{in: "max 100000\n", quota: -1, period: 100000},
		{in: "50000 100000\n", quota: 50000, period: 100000},
		{in: "200000 50000", quota: 200000, period: 50000},
		{in: "max\n", quota: -1, period: 100000},
		{in: "", wantErr: `cpu.max: line 1: want "$MAX $PERIOD", have ""`},
		{in: "1 2 3\n", wantErr: `line 1: want "$MAX $PERIOD"`},
		{in: "-1 100000\n", wantErr: `line 1: invalid quota "-1"`},
		{in: "50000 max\n", wantErr: `line 1: invalid period "max"`},
		{in: "0 100000\n", wantErr: `line 1: invalid quota "0"`},
		{in: "100000 0\n", wantErr: `line 1: invalid period "0"`},
		{in: "99999999999999999999 1\n", wantErr: `invalid quota`},
		{in: "1 2\n3 4\n", wantErr: `line 2: unexpected second line`},
	}
	for _, tt := range tests {
		q, p, err := ParseCPUMax(strings.NewReader(tt.in))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseCPUMax(%q): err = %v, want it to contain %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || q != tt.quota || p != tt.period {
			t.Errorf("ParseCPUMax(%q) = %d, %d, %v; want %d, %d", tt.in, q, p, err, tt.quota, tt.period)
		}
	}
}

func TestParseCgroupCPUStat(t *testing.T) {
	runParseCases(t, ParseCgroupCPUStat, []parseCase[CgroupCPUStat]{
		{name: "v2", in: "usage_usec 10\nuser_usec 6\nsystem_usec 4\nnr_periods 100\nnr_throttled 7\nthrottled_usec 900\nnr_bursts 0\nburst_usec 0\n",
			want: CgroupCPUStat{UsageUS: 10, UserUS: 6, SystemUS: 4, HasUsage: true, NrPeriods: 100, NrThrottled: 7, ThrottledUS: 900}},
		{name: "v2 without the cpu controller", in: "usage_usec 10\nuser_usec 6\nsystem_usec 4\n",
			want: CgroupCPUStat{UsageUS: 10, UserUS: 6, SystemUS: 4, HasUsage: true}},
		{name: "v1, throttled_time in ns", in: "nr_periods 5\nnr_throttled 2\nthrottled_time 3000999\nwait_sum 12\n",
			want: CgroupCPUStat{NrPeriods: 5, NrThrottled: 2, ThrottledUS: 3000}},
		{name: "unknown keys with odd values are ignored", in: "future_thing x\nnr_periods 1\n", want: CgroupCPUStat{NrPeriods: 1}},
		{name: "empty", in: "", want: CgroupCPUStat{}},
		{name: "no value", in: "nr_periods 1\nnr_throttled\n", wantErr: `parse cpu.stat: line 2: want "key value", have "nr_throttled"`},
		{name: "bad value", in: "usage_usec -5\n", wantErr: `line 1: usage_usec: invalid value "-5"`},
		{name: "extra field", in: "usage_usec 5 6\n", wantErr: `line 1: want "key value"`},
	})
}

func TestParseCgroupValue(t *testing.T) {
	tests := []struct {
		in        string
		v         uint64
		unlimited bool
		wantErr   string
	}{
		{in: "268435456\n", v: 268435456},
		{in: "max\n", unlimited: true},
		{in: "-1\n", unlimited: true},
		{in: "9223372036854771712\n", v: 9223372036854771712},
		{in: "18446744073709551615", v: 18446744073709551615},
		{in: "", wantErr: `cgroup value: line 1: invalid value ""`},
		{in: "-2\n", wantErr: `line 1: invalid value "-2"`},
		{in: "1 2\n", wantErr: `line 1: invalid value "1 2"`},
		{in: "1\n2\n", wantErr: `line 2: unexpected second line`},
	}
	for _, tt := range tests {
		v, unl, err := ParseCgroupValue(strings.NewReader(tt.in))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseCgroupValue(%q): err = %v, want it to contain %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || v != tt.v || unl != tt.unlimited {
			t.Errorf("ParseCgroupValue(%q) = %d, %v, %v; want %d, %v", tt.in, v, unl, err, tt.v, tt.unlimited)
		}
	}
}

// TestReadCPUContainerQuota: a container at a quota of 0.5 CPU that uses
// 0.5 CPU is saturated (usage_of_quota_percent 100) while the host's 4
// CPUs look idle (12.5 % busy); throttled_percent comes from the
// nr_throttled/nr_periods deltas (5 of 10).
func TestReadCPUContainerQuota(t *testing.T) {
	p := &Prober{ProcRoot: "testdata/proc/container/t0", SysRoot: "testdata/sys/container/t0"}
	rec, err := p.ReadCPU(cpuT0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cpuCgString(rec.Cgroup), "v2 / quota=0.5 usage=10000000 periods=1000 throttled=100 usage_cpus=null of_quota=null throttled_pct=null"; got != want {
		t.Errorf("first read: cgroup %s\n\twant %s", got, want)
	}
	rec = cpuContainerRecord(t)
	if got := cpuPctString(rec.Host.CPUPercents); got != "b=12.5 u=12.5 s=0 i=87.5 w=0 st=0" {
		t.Errorf("host = %s, want 12.5 %% busy", got)
	}
	if got, want := cpuCgString(rec.Cgroup), "v2 / quota=0.5 usage=10500000 periods=1010 throttled=105 usage_cpus=0.5 of_quota=100 throttled_pct=50"; got != want {
		t.Errorf("cgroup %s\n\twant %s", got, want)
	}
	if rec.Cgroup.QuotaUS != 50000 || rec.Cgroup.PeriodUS != 100000 || rec.Cgroup.ThrottledUS != 750000 {
		t.Errorf("cgroup = %+v", rec.Cgroup)
	}
}

// cpuCgString renders a CgroupCPU compactly, "nil" for none.
func cpuCgString(c *CgroupCPU) string {
	if c == nil {
		return "nil"
	}
	f := func(v *float64) string {
		if v == nil {
			return "null"
		}
		return fmt.Sprint(*v)
	}
	s := fmt.Sprintf("v%d %s quota=%g usage=%d periods=%d throttled=%d usage_cpus=%s of_quota=%s throttled_pct=%s",
		c.Version, c.Path, c.QuotaCPUs, c.UsageUS, c.NrPeriods, c.NrThrottled, f(c.UsageCPUs), f(c.UsageOfQuotaPct), f(c.ThrottledPct))
	if c.Error != "" {
		s += " error=" + c.Error
	}
	return s
}

// cgStep is one read of a cgroup test: the files to write first ("-"
// removes one), the time since the previous read (0: a second), and the
// record's cgroup as cpuCgString renders it, the test's directory as $D.
type cgStep struct {
	files map[string]string
	dt    time.Duration
	want  string
}

// cgRun runs steps on a Prober over a fresh tree holding files, and
// returns the cgroup of each read rendered by render, the tree's
// directory written $D.
func cgRun(t *testing.T, files map[string]string, steps []cgStep, read func(p *Prober, now time.Time) string) {
	t.Helper()
	dir := t.TempDir()
	cpuWriteTree(t, dir, files)
	p := &Prober{ProcRoot: filepath.Join(dir, "proc"), SysRoot: filepath.Join(dir, "sys")}
	now := cpuT0
	for i, st := range steps {
		for name, text := range st.files {
			if text == "-" {
				if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
					t.Fatal(err)
				}
			} else {
				cpuWriteTree(t, dir, map[string]string{name: text})
			}
		}
		if i > 0 {
			now = now.Add(cmp.Or(st.dt, time.Second))
		}
		if got := strings.ReplaceAll(read(p, now), dir, "$D"); got != st.want {
			t.Errorf("read %d: cgroup %s\n\twant %s", i+1, got, st.want)
		}
	}
}

// TestReadCPUCgroup finds the cgroup in the layouts of v1, v2, hybrid
// hosts and containers, takes the smallest quota on the way from ds's
// cgroup up to the mount (and that cgroup's counters), keeps what it
// found for 10 s, and says what it could not read, over sequences of
// reads a second apart (unless dt says otherwise).
func TestReadCPUCgroup(t *testing.T) {
	v2stat := func(usage, periods, throttled int) string {
		return fmt.Sprintf("usage_usec %d\nuser_usec 0\nsystem_usec 0\nnr_periods %d\nnr_throttled %d\nthrottled_usec 0\n", usage, periods, throttled)
	}
	v1stat := func(periods, throttled int) string {
		return fmt.Sprintf("nr_periods %d\nnr_throttled %d\nthrottled_time 0\n", periods, throttled)
	}
	const nullDerived = "usage_cpus=null of_quota=null throttled_pct=null"
	tests := []struct {
		name  string
		files map[string]string
		steps []cgStep
	}{
		{
			name: "v2 nested cgroup",
			files: map[string]string{
				"proc/self/cgroup":                         "0::/kubepods/pod1/ctr\n",
				"sys/fs/cgroup/cpu.stat":                   v2stat(1, 1, 1), // the root's: not ours
				"sys/fs/cgroup/kubepods/pod1/ctr/cpu.max":  "200000 100000\n",
				"sys/fs/cgroup/kubepods/pod1/ctr/cpu.stat": v2stat(1000000, 50, 0),
			},
			steps: []cgStep{
				{want: "v2 /kubepods/pod1/ctr quota=2 usage=1000000 periods=50 throttled=0 " + nullDerived},
				{files: map[string]string{"sys/fs/cgroup/kubepods/pod1/ctr/cpu.stat": v2stat(1500000, 60, 0)},
					want: "v2 /kubepods/pod1/ctr quota=2 usage=1500000 periods=60 throttled=0 usage_cpus=0.5 of_quota=25 throttled_pct=0"},
				// Idle: no period ran, so none was throttled.
				{want: "v2 /kubepods/pod1/ctr quota=2 usage=1500000 periods=60 throttled=0 usage_cpus=0 of_quota=0 throttled_pct=0"},
			},
		},
		{
			// A systemd slice's CPUQuota, or a pod's limit above its
			// containers: the quota of a parent binds, and throttling
			// happens there, so its counters are the ones that say
			// the service is saturated.
			name: "v2 quota on a parent: a systemd slice",
			files: map[string]string{
				"proc/self/cgroup":                               "0::/system.slice/ds.service\n",
				"sys/fs/cgroup/system.slice/cpu.max":             "50000 100000\n",
				"sys/fs/cgroup/system.slice/cpu.stat":            v2stat(3000000, 100, 40),
				"sys/fs/cgroup/system.slice/ds.service/cpu.max":  "max 100000\n",
				"sys/fs/cgroup/system.slice/ds.service/cpu.stat": v2stat(10, 0, 0),
			},
			steps: []cgStep{
				{want: "v2 /system.slice quota=0.5 usage=3000000 periods=100 throttled=40 " + nullDerived},
				{files: map[string]string{"sys/fs/cgroup/system.slice/cpu.stat": v2stat(3500000, 110, 50)},
					want: "v2 /system.slice quota=0.5 usage=3500000 periods=110 throttled=50 usage_cpus=0.5 of_quota=100 throttled_pct=100"},
			},
		},
		{
			// 0.8 CPU (40000/50000) at the leaf, 0.5 (50000/100000)
			// at the parent, 4 at the grandparent: the parent binds,
			// though its quota in µs is not the smallest.
			name: "v2 the smallest quota per period binds",
			files: map[string]string{
				"proc/self/cgroup":               "0::/a/b/c\n",
				"sys/fs/cgroup/a/cpu.max":        "400000 100000\n",
				"sys/fs/cgroup/a/cpu.stat":       v2stat(1, 1, 1),
				"sys/fs/cgroup/a/b/cpu.max":      "50000 100000\n",
				"sys/fs/cgroup/a/b/cpu.stat":     v2stat(2, 2, 2),
				"sys/fs/cgroup/a/b/c/cpu.max":    "40000 50000\n",
				"sys/fs/cgroup/a/b/c/cpu.stat":   v2stat(3, 3, 3),
				"sys/fs/cgroup/a/b/c/d/cpu.stat": v2stat(4, 4, 4), // below ds: not on the way up
			},
			steps: []cgStep{
				{want: "v2 /a/b quota=0.5 usage=2 periods=2 throttled=2 " + nullDerived},
				// docker update: the leaf's quota drops below the parent's.
				{files: map[string]string{"sys/fs/cgroup/a/b/c/cpu.max": "10000 50000\n"},
					want: "v2 /a/b/c quota=0.2 usage=3 periods=3 throttled=3 " + nullDerived},
				{want: "v2 /a/b/c quota=0.2 usage=3 periods=3 throttled=3 usage_cpus=0 of_quota=0 throttled_pct=0"},
			},
		},
		{
			// docker run --cgroupns=private: the container's cgroup is
			// the mount, and ds runs in a cgroup below it.
			name: "v2 in a sub-cgroup of a container with a cgroup namespace",
			files: map[string]string{
				"proc/self/cgroup":           "0::/sub\n",
				"sys/fs/cgroup/cpu.max":      "150000 100000\n",
				"sys/fs/cgroup/cpu.stat":     v2stat(7, 0, 0),
				"sys/fs/cgroup/sub/cpu.max":  "max 100000\n",
				"sys/fs/cgroup/sub/cpu.stat": v2stat(1, 0, 0),
			},
			steps: []cgStep{{want: "v2 / quota=1.5 usage=7 periods=0 throttled=0 " + nullDerived}},
		},
		{
			name: "v2 path not under the mount: a container without a cgroup namespace",
			files: map[string]string{
				"proc/self/cgroup":       "0::/system.slice/docker-abc.scope\n",
				"sys/fs/cgroup/cpu.max":  "150000 100000\n",
				"sys/fs/cgroup/cpu.stat": v2stat(0, 0, 0),
			},
			steps: []cgStep{{want: "v2 /system.slice/docker-abc.scope quota=1.5 usage=0 periods=0 throttled=0 " + nullDerived}},
		},
		{
			name: "v2 path outside the namespace",
			files: map[string]string{
				"proc/self/cgroup":       "0::/../../user.slice\n",
				"sys/user.slice/cpu.max": "1 1\n", // where ".." would lead
				"sys/fs/cgroup/cpu.max":  "50000 100000\n",
				"sys/fs/cgroup/cpu.stat": v2stat(0, 0, 0),
			},
			steps: []cgStep{{want: "v2 /../../user.slice quota=0.5 usage=0 periods=0 throttled=0 " + nullDerived}},
		},
		{
			// The quota is read at every read (docker update changes
			// it), though where it is is kept.
			name:  "v2 without quota, then with one, then without",
			files: map[string]string{"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/cpu.max": "max 100000\n", "sys/fs/cgroup/cpu.stat": v2stat(100, 0, 0)},
			steps: []cgStep{
				{want: "nil"},
				{files: map[string]string{"sys/fs/cgroup/cpu.max": "100000 100000\n", "sys/fs/cgroup/cpu.stat": v2stat(200, 0, 0)},
					want: "v2 / quota=1 usage=200 periods=0 throttled=0 " + nullDerived},
				{files: map[string]string{"sys/fs/cgroup/cpu.stat": v2stat(300200, 10, 10)},
					want: "v2 / quota=1 usage=300200 periods=10 throttled=10 usage_cpus=0.3 of_quota=30 throttled_pct=100"},
				{files: map[string]string{"sys/fs/cgroup/cpu.max": "max 100000\n"}, want: "nil"},
				{files: map[string]string{"sys/fs/cgroup/cpu.max": "100000 100000\n", "sys/fs/cgroup/cpu.stat": v2stat(400000, 20, 10)},
					want: "v2 / quota=1 usage=400000 periods=20 throttled=10 " + nullDerived},
			},
		},
		{
			name:  "v2 counters going back, then normal",
			files: map[string]string{"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/cpu.max": "100000 100000\n", "sys/fs/cgroup/cpu.stat": v2stat(5000000, 100, 50)},
			steps: []cgStep{
				{want: "v2 / quota=1 usage=5000000 periods=100 throttled=50 " + nullDerived},
				{files: map[string]string{"sys/fs/cgroup/cpu.stat": v2stat(1000, 1, 0)},
					want: "v2 / quota=1 usage=1000 periods=1 throttled=0 " + nullDerived},
				{files: map[string]string{"sys/fs/cgroup/cpu.stat": v2stat(101000, 5, 1)},
					want: "v2 / quota=1 usage=101000 periods=5 throttled=1 usage_cpus=0.1 of_quota=10 throttled_pct=25"},
			},
		},
		{
			name:  "v2 cpu.stat missing or malformed: the quota, and the error",
			files: map[string]string{"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/cpu.max": "100000 100000\n"},
			steps: []cgStep{
				{want: "v2 / quota=1 usage=0 periods=0 throttled=0 " + nullDerived +
					" error=open $D/sys/fs/cgroup/cpu.stat: no such file or directory"},
				{files: map[string]string{"sys/fs/cgroup/cpu.stat": "usage_usec x\n"},
					want: "v2 / quota=1 usage=0 periods=0 throttled=0 " + nullDerived +
						` error=parse $D/sys/fs/cgroup/cpu.stat: line 1: usage_usec: invalid value "x"`},
				{files: map[string]string{"sys/fs/cgroup/cpu.stat": v2stat(0, 0, 0)},
					want: "v2 / quota=1 usage=0 periods=0 throttled=0 " + nullDerived},
				{files: map[string]string{"sys/fs/cgroup/cpu.stat": v2stat(100000, 0, 0)},
					want: "v2 / quota=1 usage=100000 periods=0 throttled=0 usage_cpus=0.1 of_quota=10 throttled_pct=0"},
			},
		},
		{
			// A kept answer is trusted for 10 s: a cgroup move shows
			// within that time, not at once.
			name: "v2 cgroup moved",
			files: map[string]string{"proc/self/cgroup": "0::/a\n", "sys/fs/cgroup/a/cpu.max": "100000 100000\n", "sys/fs/cgroup/a/cpu.stat": v2stat(0, 0, 0),
				"sys/fs/cgroup/b/cpu.max": "100000 100000\n", "sys/fs/cgroup/b/cpu.stat": v2stat(900000, 0, 0)},
			steps: []cgStep{
				{want: "v2 /a quota=1 usage=0 periods=0 throttled=0 " + nullDerived},
				{files: map[string]string{"proc/self/cgroup": "0::/b\n"},
					want: "v2 /a quota=1 usage=0 periods=0 throttled=0 usage_cpus=0 of_quota=0 throttled_pct=0"},
				{dt: 9 * time.Second, want: "v2 /b quota=1 usage=900000 periods=0 throttled=0 " + nullDerived},
			},
		},
		{
			// A kept file that cannot be read is looked for again at
			// once.
			name: "v2 cgroup moved and the old one removed",
			files: map[string]string{"proc/self/cgroup": "0::/a\n", "sys/fs/cgroup/a/cpu.max": "100000 100000\n", "sys/fs/cgroup/a/cpu.stat": v2stat(0, 0, 0),
				"sys/fs/cgroup/b/cpu.max": "100000 100000\n", "sys/fs/cgroup/b/cpu.stat": v2stat(900000, 0, 0)},
			steps: []cgStep{
				{want: "v2 /a quota=1 usage=0 periods=0 throttled=0 " + nullDerived},
				{files: map[string]string{"proc/self/cgroup": "0::/b\n", "sys/fs/cgroup/a": "-"},
					want: "v2 /b quota=1 usage=900000 periods=0 throttled=0 " + nullDerived},
			},
		},
		{
			// The "no quota anywhere" answer is kept too; a quota put
			// on a parent later shows within 10 s.
			name:  "v2 a quota that appears later",
			files: map[string]string{"proc/self/cgroup": "0::/a\n", "sys/fs/cgroup/a/cgroup.procs": "1\n"},
			steps: []cgStep{
				{want: "nil"},
				{files: map[string]string{"sys/fs/cgroup/a/cpu.max": "50000 100000\n", "sys/fs/cgroup/a/cpu.stat": v2stat(5, 0, 0)}, want: "nil"},
				{dt: 9 * time.Second, want: "v2 /a quota=0.5 usage=5 periods=0 throttled=0 " + nullDerived},
			},
		},
		{
			// /proc/self/cgroup is read once per 10 s, not at every
			// read.
			name: "v2 /proc/self/cgroup kept",
			files: map[string]string{"proc/self/cgroup": "0::/a\n", "sys/fs/cgroup/a/cpu.max": "100000 100000\n",
				"sys/fs/cgroup/a/cpu.stat": v2stat(0, 0, 0)},
			steps: []cgStep{
				{want: "v2 /a quota=1 usage=0 periods=0 throttled=0 " + nullDerived},
				{files: map[string]string{"proc/self/cgroup": "-"},
					want: "v2 /a quota=1 usage=0 periods=0 throttled=0 usage_cpus=0 of_quota=0 throttled_pct=0"},
				{dt: 9 * time.Second, want: "nil"},
			},
		},
		{
			name:  "no /proc/self/cgroup",
			files: map[string]string{"sys/fs/cgroup/cpu.max": "100000 100000\n"},
			steps: []cgStep{{want: "nil"}},
		},
		{
			name:  "/proc/self/cgroup malformed",
			files: map[string]string{"proc/self/cgroup": "garbage\n", "sys/fs/cgroup/cpu.max": "100000 100000\n"},
			steps: []cgStep{
				{want: "v0  quota=0 usage=0 periods=0 throttled=0 " + nullDerived +
					` error=parse $D/proc/self/cgroup: line 1: want "ID:controllers:path", have "garbage"`},
				{dt: 10 * time.Second, files: map[string]string{"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/cpu.stat": v2stat(0, 0, 0)},
					want: "v2 / quota=1 usage=0 periods=0 throttled=0 " + nullDerived},
			},
		},
		{
			name:  "/proc/self/cgroup unreadable",
			files: map[string]string{"proc/self/cgroup/x": "a directory, not a file"},
			steps: []cgStep{{want: "v0  quota=0 usage=0 periods=0 throttled=0 " + nullDerived +
				" error=read $D/proc/self/cgroup: is a directory"}},
		},
		{
			name:  "cpu.max malformed, then good",
			files: map[string]string{"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/cpu.max": "x y\n", "sys/fs/cgroup/cpu.stat": v2stat(0, 0, 0)},
			steps: []cgStep{
				{want: "v2 / quota=0 usage=0 periods=0 throttled=0 " + nullDerived +
					` error=parse $D/sys/fs/cgroup/cpu.max: line 1: invalid quota "x"`},
				{files: map[string]string{"sys/fs/cgroup/cpu.max": "0 100000\n"}, want: "v2 / quota=0 usage=0 periods=0 throttled=0 " + nullDerived +
					` error=parse $D/sys/fs/cgroup/cpu.max: line 1: invalid quota "0"`},
				{files: map[string]string{"sys/fs/cgroup/cpu.max": "100000 0\n"}, want: "v2 / quota=0 usage=0 periods=0 throttled=0 " + nullDerived +
					` error=parse $D/sys/fs/cgroup/cpu.max: line 1: invalid period "0"`},
				{files: map[string]string{"sys/fs/cgroup/cpu.max": "100000 100000\n"}, want: "v2 / quota=1 usage=0 periods=0 throttled=0 " + nullDerived},
			},
		},
		{
			name:  "cpu.max unreadable",
			files: map[string]string{"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/cpu.max/x": "a directory, not a file"},
			steps: []cgStep{{want: "v2 / quota=0 usage=0 periods=0 throttled=0 " + nullDerived +
				" error=read $D/sys/fs/cgroup/cpu.max: is a directory"}},
		},
		{
			// The good level is reported, and the bad one named: the
			// quota shown may not be the one that binds.
			name: "one level malformed, another with a quota",
			files: map[string]string{"proc/self/cgroup": "0::/a/b\n", "sys/fs/cgroup/a/b/cpu.max": "garbage\n",
				"sys/fs/cgroup/a/cpu.max": "50000 100000\n", "sys/fs/cgroup/a/cpu.stat": v2stat(8, 0, 0)},
			steps: []cgStep{{want: "v2 /a quota=0.5 usage=8 periods=0 throttled=0 " + nullDerived +
				` error=parse $D/sys/fs/cgroup/a/b/cpu.max: line 1: invalid quota "garbage"`}},
		},
		{
			name: "v1 with cpu,cpuacct mounted together, path not under the mount",
			files: map[string]string{
				"proc/self/cgroup":                            "11:cpu,cpuacct:/docker/abc\n10:memory:/docker/abc\n1:name=systemd:/docker/abc\n",
				"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us":  "25000\n",
				"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
				"sys/fs/cgroup/cpu,cpuacct/cpu.stat":          "nr_periods 10\nnr_throttled 2\nthrottled_time 5000000\n",
				"sys/fs/cgroup/cpu,cpuacct/cpuacct.usage":     "7000000000\n",
			},
			steps: []cgStep{
				{want: "v1 /docker/abc quota=0.25 usage=7000000 periods=10 throttled=2 " + nullDerived},
				{files: map[string]string{
					"sys/fs/cgroup/cpu,cpuacct/cpu.stat":      "nr_periods 20\nnr_throttled 10\nthrottled_time 9000000\n",
					"sys/fs/cgroup/cpu,cpuacct/cpuacct.usage": "7250000000\n",
				}, want: "v1 /docker/abc quota=0.25 usage=7250000 periods=20 throttled=10 usage_cpus=0.25 of_quota=100 throttled_pct=80"},
			},
		},
		{
			// docker on v1 without a cgroup namespace mounts the
			// container's own cgroup, while /proc/self/cgroup gives the
			// host's path: ds in /docker/abc/sub is sub below the mount.
			name: "v1 container without a namespace, ds in a sub-cgroup",
			files: map[string]string{
				"proc/self/cgroup":                                "11:cpu,cpuacct:/docker/abc/sub\n",
				"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us":      "25000\n",
				"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us":     "100000\n",
				"sys/fs/cgroup/cpu,cpuacct/cpu.stat":              v1stat(10, 3),
				"sys/fs/cgroup/cpu,cpuacct/cpuacct.usage":         "7000000000\n",
				"sys/fs/cgroup/cpu,cpuacct/sub/cpu.cfs_quota_us":  "-1\n",
				"sys/fs/cgroup/cpu,cpuacct/sub/cpu.cfs_period_us": "100000\n",
				"sys/fs/cgroup/cpu,cpuacct/sub/cpu.stat":          v1stat(0, 0),
				"sys/fs/cgroup/cpu,cpuacct/sub/cpuacct.usage":     "1000\n",
			},
			steps: []cgStep{{want: "v1 /docker/abc quota=0.25 usage=7000000 periods=10 throttled=3 " + nullDerived}},
		},
		{
			name: "v1 quota on a parent, cpu and cpuacct mounted apart",
			files: map[string]string{
				"proc/self/cgroup":                        "4:cpuacct:/a/b\n3:cpu:/a/b\n",
				"sys/fs/cgroup/cpu/cpu.cfs_quota_us":      "-1\n",
				"sys/fs/cgroup/cpu/a/cpu.cfs_quota_us":    "50000\n",
				"sys/fs/cgroup/cpu/a/cpu.cfs_period_us":   "100000\n",
				"sys/fs/cgroup/cpu/a/cpu.stat":            v1stat(100, 50),
				"sys/fs/cgroup/cpu/a/b/cpu.cfs_quota_us":  "-1\n",
				"sys/fs/cgroup/cpu/a/b/cpu.cfs_period_us": "100000\n",
				"sys/fs/cgroup/cpu/a/b/cpu.stat":          v1stat(0, 0),
				"sys/fs/cgroup/cpuacct/a/cpuacct.usage":   "2000000000\n",
				"sys/fs/cgroup/cpuacct/a/b/cpuacct.usage": "1000\n",
				"sys/fs/cgroup/cpuacct/cpuacct.usage":     "9000000000\n",
			},
			steps: []cgStep{
				{want: "v1 /a quota=0.5 usage=2000000 periods=100 throttled=50 " + nullDerived},
				{files: map[string]string{"sys/fs/cgroup/cpu/a/cpu.stat": v1stat(110, 60), "sys/fs/cgroup/cpuacct/a/cpuacct.usage": "2500000000\n"},
					want: "v1 /a quota=0.5 usage=2500000 periods=110 throttled=60 usage_cpus=0.5 of_quota=100 throttled_pct=100"},
			},
		},
		{
			name: "v1 with separate cpu and cpuacct mounts, nested path",
			files: map[string]string{
				"proc/self/cgroup":                          "4:cpuacct:/job\n3:cpu:/job\n",
				"sys/fs/cgroup/cpu/job/cpu.cfs_quota_us":    "300000\n",
				"sys/fs/cgroup/cpu/job/cpu.cfs_period_us":   "100000\n",
				"sys/fs/cgroup/cpu/job/cpu.stat":            "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n",
				"sys/fs/cgroup/cpuacct/job/cpuacct.usage":   "1000\n",
				"sys/fs/cgroup/cpu/cpu.cfs_quota_us":        "-1\n",
				"sys/fs/cgroup/cpuacct/cpuacct.usage":       "999999999\n",
				"sys/fs/cgroup/cpu/cpu.cfs_period_us":       "100000\n",
				"sys/fs/cgroup/cpu/job/cgroup.procs":        "1\n",
				"sys/fs/cgroup/cpuacct/job/cpuacct.usage_x": "1\n",
			},
			steps: []cgStep{{want: "v1 /job quota=3 usage=1 periods=0 throttled=0 " + nullDerived}},
		},
		{
			// The kernel refuses a quota on the root of a v1 hierarchy
			// (it has cgroup.sane_behavior): its files are not read.
			name: "v1 host: the root of the hierarchy is left out",
			files: map[string]string{
				"proc/self/cgroup": "3:cpu,cpuacct:/user.slice\n",
				"sys/fs/cgroup/cpu,cpuacct/cgroup.sane_behavior":         "0\n",
				"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us":             "never read\n",
				"sys/fs/cgroup/cpu,cpuacct/user.slice/cpu.cfs_quota_us":  "200000\n",
				"sys/fs/cgroup/cpu,cpuacct/user.slice/cpu.cfs_period_us": "100000\n",
				"sys/fs/cgroup/cpu,cpuacct/user.slice/cpu.stat":          v1stat(1, 0),
				"sys/fs/cgroup/cpu,cpuacct/user.slice/cpuacct.usage":     "1000000\n",
			},
			steps: []cgStep{
				{want: "v1 /user.slice quota=2 usage=1000 periods=1 throttled=0 " + nullDerived},
				{dt: 10 * time.Second, files: map[string]string{"proc/self/cgroup": "3:cpu,cpuacct:/\n"}, want: "nil"},
			},
		},
		{
			name: "v1 without quota",
			files: map[string]string{
				"proc/self/cgroup":                    "3:cpu,cpuacct:/\n",
				"sys/fs/cgroup/cpu/cpu.cfs_quota_us":  "-1\n",
				"sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n",
			},
			steps: []cgStep{{want: "nil"}},
		},
		{
			name: "v1 errors: a quota of 0, a bad period, a bad cpuacct.usage",
			files: map[string]string{
				"proc/self/cgroup":                            "3:cpu,cpuacct:/\n",
				"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us":  "0\n",
				"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
				"sys/fs/cgroup/cpu,cpuacct/cpu.stat":          v1stat(0, 0),
				"sys/fs/cgroup/cpu,cpuacct/cpuacct.usage":     "-1\n",
			},
			steps: []cgStep{
				{want: "v1 / quota=0 usage=0 periods=0 throttled=0 " + nullDerived +
					" error=parse $D/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us: line 1: invalid quota 0"},
				{files: map[string]string{"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "50000\n", "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "-1\n"},
					want: "v1 / quota=0 usage=0 periods=0 throttled=0 " + nullDerived +
						` error=parse $D/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us: line 1: invalid period "-1"`},
				{files: map[string]string{"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n"},
					want: "v1 / quota=0.5 usage=0 periods=0 throttled=0 " + nullDerived +
						` error=parse $D/sys/fs/cgroup/cpu,cpuacct/cpuacct.usage: line 1: invalid value "-1"`},
			},
		},
		{
			name: "hybrid: v2 has no cpu controller, v1 has",
			files: map[string]string{
				"proc/self/cgroup": "3:cpu,cpuacct:/\n1:name=systemd:/user.slice\n0::/user.slice\n",
				"sys/fs/cgroup/unified/user.slice/cgroup.procs": "1\n",
				"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us":    "50000\n",
				"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us":   "100000\n",
				"sys/fs/cgroup/cpu,cpuacct/cpu.stat":            v1stat(4, 1),
				"sys/fs/cgroup/cpu,cpuacct/cpuacct.usage":       "5000\n",
			},
			steps: []cgStep{{want: "v1 / quota=0.5 usage=5 periods=4 throttled=1 " + nullDerived}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.files["proc/stat"] = "cpu  1 2 3 4\ncpu0 1 2 3 4\n"
			cgRun(t, tt.files, tt.steps, func(p *Prober, now time.Time) string {
				rec, err := p.ReadCPU(now)
				if err != nil {
					t.Fatal(err)
				}
				if rec.Cgroup != nil {
					if _, err := json.Marshal(rec.Cgroup); err != nil {
						t.Errorf("cgroup %+v: %v", rec.Cgroup, err)
					}
				}
				return cpuCgString(rec.Cgroup)
			})
		})
	}
}

// TestReadMemCgroup: MemRecord.Cgroup is set under a memory limit on ds's
// cgroup or an ancestor, the smallest binding (v2 memory.max; v1
// memory.limit_in_bytes below 2^62), and when a file cannot be read or
// parsed, with its error.
func TestReadMemCgroup(t *testing.T) {
	const unlimited1 = "9223372036854771712\n"
	tests := []struct {
		name  string
		files map[string]string
		want  *CgroupMem
	}{
		{name: "v2 limit", files: map[string]string{"proc/self/cgroup": "0::/a\n",
			"sys/fs/cgroup/a/memory.max": "1073741824\n", "sys/fs/cgroup/a/memory.current": "268435456\n"},
			want: &CgroupMem{Version: 2, Path: "/a", UsageBytes: 268435456, LimitBytes: 1073741824, UsedPct: 25}},
		{name: "v2 no limit", files: map[string]string{"proc/self/cgroup": "0::/a\n",
			"sys/fs/cgroup/a/memory.max": "max\n", "sys/fs/cgroup/a/memory.current": "268435456\n"}},
		{name: "v2 zero limit", files: map[string]string{"proc/self/cgroup": "0::/\n",
			"sys/fs/cgroup/memory.max": "0\n", "sys/fs/cgroup/memory.current": "4096\n"},
			want: &CgroupMem{Version: 2, Path: "/", UsageBytes: 4096, LimitBytes: 0, UsedPct: 100}},
		{name: "v2 limit on a parent", files: map[string]string{"proc/self/cgroup": "0::/pod/ctr\n",
			"sys/fs/cgroup/pod/memory.max": "1000\n", "sys/fs/cgroup/pod/memory.current": "250\n",
			"sys/fs/cgroup/pod/ctr/memory.max": "max\n", "sys/fs/cgroup/pod/ctr/memory.current": "100\n"},
			want: &CgroupMem{Version: 2, Path: "/pod", UsageBytes: 250, LimitBytes: 1000, UsedPct: 25}},
		{name: "v2 the smallest limit binds", files: map[string]string{"proc/self/cgroup": "0::/a/b/c\n",
			"sys/fs/cgroup/a/memory.max": "3000\n", "sys/fs/cgroup/a/memory.current": "1\n",
			"sys/fs/cgroup/a/b/memory.max": "1000\n", "sys/fs/cgroup/a/b/memory.current": "500\n",
			"sys/fs/cgroup/a/b/c/memory.max": "2000\n", "sys/fs/cgroup/a/b/c/memory.current": "3\n"},
			want: &CgroupMem{Version: 2, Path: "/a/b", UsageBytes: 500, LimitBytes: 1000, UsedPct: 50}},
		{name: "v2 in a sub-cgroup of a container with a cgroup namespace", files: map[string]string{"proc/self/cgroup": "0::/sub\n",
			"sys/fs/cgroup/memory.max": "1000\n", "sys/fs/cgroup/memory.current": "900\n",
			"sys/fs/cgroup/sub/memory.max": "max\n", "sys/fs/cgroup/sub/memory.current": "9\n"},
			want: &CgroupMem{Version: 2, Path: "/", UsageBytes: 900, LimitBytes: 1000, UsedPct: 90}},
		{name: "v2 usage unreadable", files: map[string]string{"proc/self/cgroup": "0::/\n",
			"sys/fs/cgroup/memory.max": "4096\n"},
			want: &CgroupMem{Version: 2, Path: "/", LimitBytes: 4096, Error: "open $D/sys/fs/cgroup/memory.current: no such file or directory"}},
		{name: "v2 memory.max malformed", files: map[string]string{"proc/self/cgroup": "0::/a\n",
			"sys/fs/cgroup/a/memory.max": "lots\n", "sys/fs/cgroup/a/memory.current": "1\n"},
			want: &CgroupMem{Version: 2, Path: "/a", Error: `parse $D/sys/fs/cgroup/a/memory.max: line 1: invalid value "lots"`}},
		{name: "v2 memory.current malformed", files: map[string]string{"proc/self/cgroup": "0::/a\n",
			"sys/fs/cgroup/a/memory.max": "100\n", "sys/fs/cgroup/a/memory.current": "max\n"},
			want: &CgroupMem{Version: 2, Path: "/a", LimitBytes: 100, Error: `parse $D/sys/fs/cgroup/a/memory.current: line 1: invalid value "max"`}},
		{name: "/proc/self/cgroup malformed", files: map[string]string{"proc/self/cgroup": "0:/a\n",
			"sys/fs/cgroup/memory.max": "100\n", "sys/fs/cgroup/memory.current": "1\n"},
			want: &CgroupMem{Error: `parse $D/proc/self/cgroup: line 1: want "ID:controllers:path", have "0:/a"`}},
		{name: "v1 limit", files: map[string]string{"proc/self/cgroup": "9:memory:/docker/x\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "2147483648\n", "sys/fs/cgroup/memory/memory.usage_in_bytes": "1073741824\n"},
			want: &CgroupMem{Version: 1, Path: "/docker/x", UsageBytes: 1073741824, LimitBytes: 2147483648, UsedPct: 50}},
		{name: "v1 unlimited", files: map[string]string{"proc/self/cgroup": "9:memory:/\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": unlimited1, "sys/fs/cgroup/memory/memory.usage_in_bytes": "1073741824\n"}},
		{name: "v1 limit on a parent", files: map[string]string{"proc/self/cgroup": "9:memory:/a/b\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": unlimited1, "sys/fs/cgroup/memory/memory.usage_in_bytes": "5000\n",
			"sys/fs/cgroup/memory/a/memory.limit_in_bytes": "400\n", "sys/fs/cgroup/memory/a/memory.usage_in_bytes": "100\n",
			"sys/fs/cgroup/memory/a/b/memory.limit_in_bytes": unlimited1, "sys/fs/cgroup/memory/a/b/memory.usage_in_bytes": "10\n"},
			want: &CgroupMem{Version: 1, Path: "/a", UsageBytes: 100, LimitBytes: 400, UsedPct: 25}},
		{name: "v1 container without a namespace, ds in a sub-cgroup", files: map[string]string{"proc/self/cgroup": "9:memory:/docker/x/sub\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "2000\n", "sys/fs/cgroup/memory/memory.usage_in_bytes": "500\n",
			"sys/fs/cgroup/memory/sub/memory.limit_in_bytes": unlimited1, "sys/fs/cgroup/memory/sub/memory.usage_in_bytes": "10\n"},
			want: &CgroupMem{Version: 1, Path: "/docker/x", UsageBytes: 500, LimitBytes: 2000, UsedPct: 25}},
		{name: "v1 host: the root of the hierarchy is left out", files: map[string]string{"proc/self/cgroup": "9:memory:/\n",
			"sys/fs/cgroup/memory/cgroup.sane_behavior":  "0\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "never read\n", "sys/fs/cgroup/memory/memory.usage_in_bytes": "1\n"}},
		{name: "hybrid: v1 memory", files: map[string]string{"proc/self/cgroup": "9:memory:/m\n0::/u\n",
			"sys/fs/cgroup/unified/u/cgroup.procs":         "1\n",
			"sys/fs/cgroup/memory/m/memory.limit_in_bytes": "100\n", "sys/fs/cgroup/memory/m/memory.usage_in_bytes": "33\n"},
			want: &CgroupMem{Version: 1, Path: "/m", UsageBytes: 33, LimitBytes: 100, UsedPct: 33}},
		{name: "none", files: map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.files["proc/meminfo"] = "MemTotal: 1000 kB\nMemAvailable: 500 kB\n"
			cpuWriteTree(t, dir, tt.files)
			p := &Prober{ProcRoot: filepath.Join(dir, "proc"), SysRoot: filepath.Join(dir, "sys")}
			rec, err := p.ReadMem(cpuT0)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Cgroup != nil {
				rec.Cgroup.Error = strings.ReplaceAll(rec.Cgroup.Error, dir, "$D")
			}
			if !reflect.DeepEqual(rec.Cgroup, tt.want) {
				t.Errorf("cgroup = %+v, want %+v", rec.Cgroup, tt.want)
			}
		})
	}
}

// TestReadMemCgroupKept: the limits are read at every read; where they
// are is found again after 10 s, or at once when a kept file cannot be
// read.
func TestReadMemCgroupKept(t *testing.T) {
	cgs := func(cg *CgroupMem) string {
		if cg == nil {
			return "nil"
		}
		s := fmt.Sprintf("v%d %s %d/%d", cg.Version, cg.Path, cg.UsageBytes, cg.LimitBytes)
		if cg.Error != "" {
			s += " error=" + cg.Error
		}
		return s
	}
	files := map[string]string{"proc/meminfo": "MemTotal: 1000 kB\n", "proc/self/cgroup": "0::/a\n",
		"sys/fs/cgroup/a/memory.max": "1000\n", "sys/fs/cgroup/a/memory.current": "10\n",
		"sys/fs/cgroup/b/memory.max": "2000\n", "sys/fs/cgroup/b/memory.current": "20\n",
		"sys/fs/cgroup/c/memory.max": "3000\n", "sys/fs/cgroup/c/memory.current": "30\n"}
	cgRun(t, files, []cgStep{
		{want: "v2 /a 10/1000"},
		// docker update: the new limit at once.
		{files: map[string]string{"sys/fs/cgroup/a/memory.max": "500\n"}, want: "v2 /a 10/500"},
		{files: map[string]string{"sys/fs/cgroup/a/memory.max": "max\n"}, want: "nil"},
		// Moved: seen 10 s after the last look.
		{files: map[string]string{"proc/self/cgroup": "0::/b\n"}, want: "nil"},
		{dt: 7 * time.Second, want: "v2 /b 20/2000"},
		// Moved, and the old cgroup gone: seen at once.
		{files: map[string]string{"proc/self/cgroup": "0::/c\n", "sys/fs/cgroup/b": "-"}, want: "v2 /c 30/3000"},
		// A usage that cannot be read: the limit, and the error.
		{files: map[string]string{"sys/fs/cgroup/c/memory.current": "-"},
			want: "v2 /c 0/3000 error=open $D/sys/fs/cgroup/c/memory.current: no such file or directory"},
	}, func(p *Prober, now time.Time) string {
		rec, err := p.ReadMem(now)
		if err != nil {
			t.Fatal(err)
		}
		return cgs(rec.Cgroup)
	})
}

// cgBenchProber is a Prober over a tree of ds in /kubepods/pod1/ctr, v2,
// with a CPU quota and a memory limit at the pod and at the container.
func cgBenchProber(b *testing.B) *Prober {
	dir := b.TempDir()
	var sb strings.Builder
	sb.WriteString("cpu  6400 0 6400 64000 0 0 0 0 0 0\n")
	for i := range 64 {
		fmt.Fprintf(&sb, "cpu%d 100 0 100 1000 0 0 0 0 0 0\n", i)
	}
	files := map[string]string{
		"proc/stat":        sb.String(),
		"proc/loadavg":     "0.1 0.2 0.3 1/100 42\n",
		"proc/meminfo":     "MemTotal: 1000 kB\nMemFree: 100 kB\nMemAvailable: 500 kB\n",
		"proc/self/cgroup": "12:memory:/x\n11:cpu,cpuacct:/x\n1:name=systemd:/x\n0::/kubepods/pod1/ctr\n",
	}
	for _, d := range []string{"kubepods/pod1", "kubepods/pod1/ctr"} {
		files["sys/fs/cgroup/"+d+"/cpu.max"] = "200000 100000\n"
		files["sys/fs/cgroup/"+d+"/cpu.stat"] = "usage_usec 1000\nuser_usec 600\nsystem_usec 400\nnr_periods 10\nnr_throttled 1\nthrottled_usec 500\nnr_bursts 0\nburst_usec 0\n"
		files["sys/fs/cgroup/"+d+"/memory.max"] = "1073741824\n"
		files["sys/fs/cgroup/"+d+"/memory.current"] = "268435456\n"
	}
	files["sys/fs/cgroup/kubepods/memory.max"] = "max\n"
	files["sys/fs/cgroup/kubepods/cpu.max"] = "max 100000\n"
	cpuWriteTree(b, dir, files)
	return &Prober{ProcRoot: filepath.Join(dir, "proc"), SysRoot: filepath.Join(dir, "sys")}
}

// BenchmarkReadCPUCgroup is BenchmarkReadCPU inside a container with
// quotas at two levels of its cgroup: what the cgroup adds to each
// sample.
func BenchmarkReadCPUCgroup(b *testing.B) {
	p := cgBenchProber(b)
	b.ReportAllocs()
	now := cpuT0
	for b.Loop() {
		now = now.Add(100 * time.Millisecond)
		if rec, err := p.ReadCPU(now); err != nil || rec.Cgroup == nil {
			b.Fatal(err, rec.Cgroup)
		}
	}
}

// BenchmarkReadMemCgroup is BenchmarkReadMem inside a container with
// memory limits at two levels of its cgroup.
func BenchmarkReadMemCgroup(b *testing.B) {
	p := cgBenchProber(b)
	b.ReportAllocs()
	now := cpuT0
	for b.Loop() {
		now = now.Add(100 * time.Millisecond)
		if rec, err := p.ReadMem(now); err != nil || rec.Cgroup == nil {
			b.Fatal(err, rec.Cgroup)
		}
	}
}

// A cgroup block whose quota or limit could not be read says where and
// why, and holds no zeros that would read as "no quota, no usage".
func TestCgroupErrorBlockHasNoZeros(t *testing.T) {
	for _, v := range []any{
		CgroupCPU{Version: 2, Path: "/a", Error: "parse /sys/fs/cgroup/a/cpu.max: line 1: garbage"},
		CgroupMem{Version: 1, Path: "/b", Error: "read memory.limit_in_bytes: permission denied"},
	} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "quota") || strings.Contains(string(b), "usage") || !strings.Contains(string(b), `"error":`) {
			t.Errorf("%T: %s", v, b)
		}
	}
	b, _ := json.Marshal(CgroupCPU{Version: 2, Path: "/", QuotaUS: 50000, PeriodUS: 100000, QuotaCPUs: 0.5})
	if !strings.Contains(string(b), `"quota_us":50000`) || !strings.Contains(string(b), `"nr_throttled":0`) {
		t.Errorf("a block with a quota: %s", b)
	}
}

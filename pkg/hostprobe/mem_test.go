package hostprobe

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseMeminfo(t *testing.T) {
	runParseCases(t, ParseMeminfo, []parseCase[map[string]uint64]{
		{name: "kB, counts, parentheses",
			in:   "MemTotal:       16318056 kB\nActive(anon):    4123456 kB\nHugePages_Total:       3\nHugepagesize:       2048 kB\n",
			want: map[string]uint64{"MemTotal": 16318056 * 1024, "Active(anon)": 4123456 * 1024, "HugePages_Total": 3, "Hugepagesize": 2048 * 1024}},
		{name: "tabs, blank lines, no final newline", in: "\nMemFree:\t1 kB\n\n  \nCached: 0 kB",
			want: map[string]uint64{"MemFree": 1024, "Cached": 0}},
		{name: "a name listed twice keeps the last", in: "A: 1\nA: 2\n", want: map[string]uint64{"A": 2}},
		{name: "empty", in: "", wantErr: "parse /proc/meminfo: empty"},
		{name: "blank", in: "\n \n", wantErr: "parse /proc/meminfo: empty"},
		{name: "no colon", in: "MemTotal: 1 kB\nMemFree 2 kB\n", wantErr: `parse /proc/meminfo: line 2: want "Name: value [kB]", have "MemFree 2 kB"`},
		{name: "no name", in: ": 5 kB\n", wantErr: `line 1: want "Name: value [kB]"`},
		{name: "no value", in: "MemTotal:\n", wantErr: `line 1: MemTotal: invalid value ""`},
		{name: "bad value", in: "MemTotal: -5 kB\n", wantErr: `line 1: MemTotal: invalid value "-5"`},
		{name: "other unit", in: "X: 1 kB\nMemTotal: 5 MB\n", wantErr: `line 2: MemTotal: invalid unit "MB" for 5`},
		{name: "kB past 2^64 bytes", in: "MemTotal: 18014398509481984 kB\n", wantErr: `line 1: MemTotal: invalid unit "kB" for 18014398509481984`},
		{name: "largest kB", in: "MemTotal: 18014398509481983 kB\n", want: map[string]uint64{"MemTotal": 18014398509481983 * 1024}},
		{name: "trailing field", in: "MemTotal: 5 kB extra\n", wantErr: `line 1: MemTotal: unexpected "extra"`},
	})
}

// memU and memF read a nullable member for comparisons; -1 for null.
func memU(v *uint64) int64 {
	if v == nil {
		return -1
	}
	return int64(*v)
}

func memF(v *float64) float64 {
	if v == nil {
		return -1
	}
	return *v
}

func TestReadMem(t *testing.T) {
	p := &Prober{ProcRoot: "testdata/proc/conformance", SysRoot: "testdata/sys/none"}
	rec, err := p.ReadMem(cpuT0)
	if err != nil {
		t.Fatal(err)
	}
	const kB = 1024
	got := []int64{memU(rec.TotalBytes), memU(rec.FreeBytes), memU(rec.AvailableBytes), memU(rec.BuffersBytes),
		memU(rec.CachedBytes), memU(rec.ShmemBytes), memU(rec.DirtyBytes), memU(rec.SwapTotalBytes), memU(rec.SwapFreeBytes)}
	want := []int64{16318056 * kB, 1204312 * kB, 9876544 * kB, 412340 * kB, 8123456 * kB, 345678 * kB, 1234 * kB, 2097148 * kB, 1048574 * kB}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("members = %v, want %v", got, want)
	}
	// (16318056 − 9876544) / 16318056 = 39.47 %; (2097148 − 1048574) / 2097148 = 50 %.
	if memF(rec.UsedPct) != 39.47 || memF(rec.SwapUsedPct) != 50 {
		t.Errorf("used %v %%, swap used %v %%; want 39.47, 50", memF(rec.UsedPct), memF(rec.SwapUsedPct))
	}
	if len(rec.Meminfo) != 19 || rec.Meminfo["HugePages_Total"] != 0 || rec.Meminfo["Active(anon)"] != 4123456*kB {
		t.Errorf("meminfo = %v", rec.Meminfo)
	}
	if rec.Schema != SchemaMem || rec.IntervalMS != nil || rec.SampleUnixMS != cpuT0.UnixMilli() || rec.Cgroup != nil {
		t.Errorf("first read: %+v", rec.Sample)
	}
	rec2, err := p.ReadMem(cpuT0.Add(250 * time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if rec2.IntervalMS == nil || *rec2.IntervalMS != 250 {
		t.Errorf("second read: interval_ms %v, want 250", rec2.IntervalMS)
	}
	if !reflect.DeepEqual(rec.Meminfo, rec2.Meminfo) {
		t.Error("the same file read twice gave different maps")
	}
	rec2.Meminfo["MemTotal"] = 0
	if rec.Meminfo["MemTotal"] == 0 {
		t.Error("records share their map")
	}
}

// TestReadMemOldKernel: members the kernel does not report are null, and
// so are the percentages that need them; no swap is a null swap
// percentage, not 0.
func TestReadMemOldKernel(t *testing.T) {
	dir := t.TempDir()
	cpuWriteTree(t, dir, map[string]string{"meminfo": "MemTotal: 1000 kB\nMemFree: 100 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n"})
	p := &Prober{ProcRoot: dir, SysRoot: dir}
	rec, err := p.ReadMem(cpuT0)
	if err != nil {
		t.Fatal(err)
	}
	if rec.AvailableBytes != nil || rec.UsedPct != nil || rec.SwapUsedPct != nil || rec.ShmemBytes != nil || memU(rec.SwapTotalBytes) != 0 {
		t.Errorf("available %v, used %v, swap used %v, shmem %v, swap total %v",
			rec.AvailableBytes, rec.UsedPct, rec.SwapUsedPct, rec.ShmemBytes, memU(rec.SwapTotalBytes))
	}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"available_bytes":null`, `"used_percent":null`, `"swap_used_percent":null`, `"interval_ms":null`} {
		if !strings.Contains(string(b), s) {
			t.Errorf("JSON %s lacks %s", b, s)
		}
	}
	if strings.Contains(string(b), `"cgroup"`) {
		t.Errorf("JSON %s has a cgroup without a limit", b)
	}
}

// TestReadMemAvailableAboveTotal clamps used_percent at 0.
func TestReadMemAvailableAboveTotal(t *testing.T) {
	dir := t.TempDir()
	cpuWriteTree(t, dir, map[string]string{"meminfo": "MemTotal: 1000 kB\nMemAvailable: 2000 kB\nSwapTotal: 10 kB\nSwapFree: 20 kB\n"})
	p := &Prober{ProcRoot: dir, SysRoot: dir}
	rec, err := p.ReadMem(cpuT0)
	if err != nil {
		t.Fatal(err)
	}
	if memF(rec.UsedPct) != 0 || memF(rec.SwapUsedPct) != 0 {
		t.Errorf("used %v, swap used %v; want 0, 0", memF(rec.UsedPct), memF(rec.SwapUsedPct))
	}
}

// TestReadMemErrors: an unreadable or malformed meminfo is an error
// naming the file (and the line), and the next good read's interval is
// from the last good one.
func TestReadMemErrors(t *testing.T) {
	dir := t.TempDir()
	p := &Prober{ProcRoot: dir, SysRoot: dir}
	name := filepath.Join(dir, "meminfo")
	if _, err := p.ReadMem(cpuT0); err == nil || !strings.Contains(err.Error(), name) {
		t.Errorf("no meminfo: err = %v, want it to name %s", err, name)
	}
	cpuWriteTree(t, dir, map[string]string{"meminfo": "MemTotal: 1000 kB\n"})
	if _, err := p.ReadMem(cpuT0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	cpuWriteTree(t, dir, map[string]string{"meminfo": "MemTotal: 1000 kB\nbroken\n"})
	_, err := p.ReadMem(cpuT0.Add(2 * time.Second))
	if want := "parse " + name + ": line 2:"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("malformed: err = %v, want it to contain %q", err, want)
	}
	cpuWriteTree(t, dir, map[string]string{"meminfo": "MemTotal: 1000 kB\n"})
	rec, err := p.ReadMem(cpuT0.Add(3 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if rec.IntervalMS == nil || *rec.IntervalMS != 2000 {
		t.Errorf("interval_ms %v, want 2000 (since the last good read)", rec.IntervalMS)
	}
}

// TestReadMemContainer reads the container fixture: a v2 memory limit of
// 512 MiB with 256 MiB used.
func TestReadMemContainer(t *testing.T) {
	p := &Prober{ProcRoot: "testdata/proc/container/t0", SysRoot: "testdata/sys/container/t0"}
	rec, err := p.ReadMem(cpuT0)
	if err != nil {
		t.Fatal(err)
	}
	want := &CgroupMem{Version: 2, Path: "/", UsageBytes: 256 << 20, LimitBytes: 512 << 20, UsedPct: 50}
	if !reflect.DeepEqual(rec.Cgroup, want) {
		t.Errorf("cgroup = %+v, want %+v", rec.Cgroup, want)
	}
	if memF(rec.UsedPct) != 25 || rec.SwapUsedPct != nil {
		t.Errorf("used %v, swap used %v; want 25, null", memF(rec.UsedPct), rec.SwapUsedPct)
	}
}

// TestReadMemRealProc reads this machine's /proc; skipped in short mode,
// and tolerant of any machine.
func TestReadMemRealProc(t *testing.T) {
	if testing.Short() {
		t.Skip("reads the real /proc")
	}
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		t.Skip("no /proc/meminfo")
	}
	var p Prober
	rec, err := p.ReadMem(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if rec.TotalBytes == nil || *rec.TotalBytes == 0 {
		t.Errorf("total_bytes = %v", rec.TotalBytes)
	}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", b)
}

// BenchmarkReadMem reads a typical meminfo.
func BenchmarkReadMem(b *testing.B) {
	p := &Prober{ProcRoot: "testdata/proc/conformance", SysRoot: "testdata/sys/none"}
	b.ReportAllocs()
	now := cpuT0
	for b.Loop() {
		now = now.Add(100 * time.Millisecond)
		if _, err := p.ReadMem(now); err != nil {
			b.Fatal(err)
		}
	}
}

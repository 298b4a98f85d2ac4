package hostprobe

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"testing"
	"time"
)

// checkEncode fails unless recordEncoder writes rec as json.Marshal
// does, byte for byte.
func checkEncode(t *testing.T, e *recordEncoder, rec any) {
	t.Helper()
	want, werr := json.Marshal(rec)
	got, gerr := e.encode(rec)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("json.Marshal error %v, encode error %v", werr, gerr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encode differs from json.Marshal:\n got %s\nwant %s", got, want)
	}
}

func fp(v float64) *float64 { return &v }
func up(v uint64) *uint64   { return &v }

// TestEncodeMatchesMarshal checks the records of the fixture trees, of
// this machine's /proc, and hand-made ones that take every branch
// (cgroup error blocks, omitted members, nil and empty lists, floats
// written with an exponent, strings that need escapes).
func TestEncodeMatchesMarshal(t *testing.T) {
	var e recordEncoder
	t0 := time.Unix(1700000000, 0)
	for _, roots := range [][2]string{
		{"testdata/proc/container/t0", "testdata/sys/container/t0"},
		{"testdata/proc/container/t1", "testdata/sys/container/t1"},
		{"testdata/proc/conformance", "testdata/sys/none"},
		{"/proc", "/sys"},
	} {
		if _, err := os.Stat(roots[0]); err != nil {
			continue
		}
		p := &Prober{ProcRoot: roots[0], SysRoot: roots[1]}
		for i := range 3 {
			now := t0.Add(time.Duration(i) * 100 * time.Millisecond)
			if r, err := p.ReadCPU(now); err == nil {
				checkEncode(t, &e, r)
			}
			if r, err := p.ReadMem(now); err == nil {
				checkEncode(t, &e, r)
			}
			if r, err := p.ReadNet(now); err == nil {
				checkEncode(t, &e, r)
			}
		}
	}
	odd := "a<b>&\"\\\b\f\n\r\t\x01\x7f é \u2028\u2029 \xff end"
	pct := CPUPercents{TotalPct: fp(1e-7), UserPct: fp(1e21), SystemPct: fp(math.Copysign(0, -1)), IdlePct: fp(123456789.125), IowaitPct: fp(5e-324), Reset: odd}
	recs := []any{
		&Sample{Schema: SchemaCPU, Seq: 3, SkippedTicks: 2, SampleUnixMS: -5, IntervalMS: fp(99.999), Error: odd},
		&Sample{Schema: SchemaNet},
		&CPURecord{Sample: Sample{Schema: SchemaCPU}},
		&CPURecord{Sample: Sample{Schema: SchemaCPU}, Host: CPUHost{CPUPercents: pct, Load1: fp(0.5), LoadError: odd, Ticks: CPUTicks{User: math.MaxUint64}},
			Cores:  []CPUCore{{CPU: 1, Online: true, CPUPercents: pct, Ticks: &CPUTicks{Idle: 7}}, {CPU: 2}},
			Cgroup: &CgroupCPU{Version: 2, Path: odd, QuotaUS: 5, PeriodUS: 10, QuotaCPUs: 0.5, UsageCPUs: fp(1.5e-9), Error: odd}},
		&CPURecord{Cores: []CPUCore{}, Cgroup: &CgroupCPU{Version: 1, Path: "/", Error: odd}},
		&CPURecord{Cgroup: &CgroupCPU{Version: 1, Path: "/"}},
		&MemRecord{},
		&MemRecord{Meminfo: map[string]uint64{}, Cgroup: &CgroupMem{Version: 1, Path: "/x", Error: odd}},
		&MemRecord{TotalBytes: up(1), SwapFreeBytes: up(math.MaxUint64), UsedPct: fp(33.33), Meminfo: map[string]uint64{"b": 1, "a<": 2, odd: 3},
			Cgroup: &CgroupMem{Version: 2, Path: "/y", UsageBytes: 3, LimitBytes: 4, UsedPct: 75, Error: odd}},
		&MemRecord{Meminfo: map[string]uint64{"b": 1, "c": 2, "a": 3}},
		&NetRecord{Gone: []string{}},
		&NetRecord{Interfaces: []NetInterface{}, Gone: []string{odd, "eth1"}},
		&NetRecord{Interfaces: []NetInterface{
			{Name: odd, Incarnation: 2, NetCounters: NetCounters{RxBytes: 1, TxDropped: math.MaxUint64}, RxBytesPerS: fp(1e300), TxDroppedPerS: fp(0),
				Reset: odd, Wrapped: []string{"rx_bytes"}, LinkSpeedMbps: new(int64), OverLinkSpeed: []string{"tx_bytes", odd}},
			{Name: "lo", Wrapped: []string{}, OverLinkSpeed: []string{}},
		}},
		&GPURecord{Sample: Sample{Schema: SchemaGPU}, Available: true, GPUs: []GPU{{UUID: odd}}},
	}
	for _, r := range recs {
		checkEncode(t, &e, r)
	}
}

// TestEncodeNaN: a NaN or an infinity is an error, as with json.Marshal.
func TestEncodeNaN(t *testing.T) {
	var e recordEncoder
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		for _, r := range []any{
			&Sample{IntervalMS: fp(v)},
			&CPURecord{Cores: []CPUCore{{CPUPercents: CPUPercents{StealPct: fp(v)}}}},
			&CPURecord{Cgroup: &CgroupCPU{QuotaUS: 1, QuotaCPUs: v}},
			&MemRecord{Cgroup: &CgroupMem{LimitBytes: 1, UsedPct: v}},
			&NetRecord{Interfaces: []NetInterface{{TxErrorsPerS: fp(v)}}},
		} {
			if b, err := e.encode(r); err == nil {
				t.Errorf("encode(%T with %v) = %s, want an error", r, v, b)
			}
			checkEncode(t, &e, r)
		}
	}
}

// FuzzEncode checks strings and floats of any value against json.Marshal.
func FuzzEncode(f *testing.F) {
	f.Add("eth0", 1.5, uint64(3))
	f.Add("<\xff\u2028>", 1e-7, uint64(0))
	f.Add("\x00\x1f\"", -1e21, uint64(math.MaxUint64))
	f.Fuzz(func(t *testing.T, s string, v float64, n uint64) {
		var e recordEncoder
		checkEncode(t, &e, &NetRecord{Sample: Sample{Schema: s, Seq: n, IntervalMS: &v, Error: s},
			Interfaces: []NetInterface{{Name: s, RxBytesPerS: &v, Wrapped: []string{s}}}, Gone: []string{s}})
		checkEncode(t, &e, &MemRecord{UsedPct: &v, Meminfo: map[string]uint64{s: n, "MemTotal": 1}, Cgroup: &CgroupMem{Path: s, LimitBytes: n, UsedPct: v, Error: s}})
		checkEncode(t, &e, &CPURecord{Host: CPUHost{Load1: &v, CPUPercents: CPUPercents{Reset: s}}, Cgroup: &CgroupCPU{Path: s, QuotaUS: int64(n), QuotaCPUs: v, Error: s}})
	})
}

package hostprobe

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"

	"github.com/ds-telemetry/ds/pkg/textfmt"
)

// recordEncoder writes host.cpu, host.mem and host.net records (and the
// bare Sample of an error record) as JSON without reflection: what
// json.Marshal writes for them, byte for byte (member order, omitempty,
// null for a nil pointer or slice, sorted meminfo keys, its float format
// and its HTML-safe string escapes; encode_test.go checks it against
// json.Marshal), at a fraction of the cost and allocations, since ds
// host --interval 100ms encodes three records ten times a second. Other
// types (host.gpu: at most one record a tick, from nvidia-smi) go
// through json.Marshal. The zero value is ready; one encoder must not be
// used concurrently.
type recordEncoder struct {
	buf  []byte   // scratch, reused: a record is copied out of it
	keys []string // the sorted keys of the last meminfo map written
}

// errUnsupportedFloat is what encode returns for a NaN or an infinity,
// which JSON cannot carry (json.Marshal fails on them too).
type errUnsupportedFloat struct{}

func (errUnsupportedFloat) Error() string { return "json: unsupported value: NaN or Inf" }

// encode returns rec's JSON in a new slice of its own (the caller may
// hand it on: the stream takes ownership of a payload).
func (e *recordEncoder) encode(rec any) ([]byte, error) {
	b := e.buf[:0]
	var ok bool
	switch r := rec.(type) {
	case *CPURecord:
		b, ok = e.appendCPU(b, r)
	case *MemRecord:
		b, ok = e.appendMem(b, r)
	case *NetRecord:
		b, ok = e.appendNet(b, r)
	case *Sample:
		b = append(b, '{')
		b, ok = appendSampleMembers(b, r)
		b = append(b, '}')
	default:
		return json.Marshal(rec)
	}
	e.buf = b
	if !ok {
		return nil, errUnsupportedFloat{}
	}
	return append([]byte(nil), b...), nil
}

// appendSampleMembers writes the members of s (no braces).
func appendSampleMembers(b []byte, s *Sample) ([]byte, bool) {
	b = append(b, `"schema":`...)
	b = textfmt.AppendJSONString(b, s.Schema, true)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, s.Seq, 10)
	if s.SkippedTicks != 0 {
		b = append(b, `,"skipped_ticks":`...)
		b = strconv.AppendInt(b, int64(s.SkippedTicks), 10)
	}
	b = append(b, `,"sample_unix_ms":`...)
	b = strconv.AppendInt(b, s.SampleUnixMS, 10)
	b = append(b, `,"interval_ms":`...)
	b, ok := appendFloatPtr(b, s.IntervalMS)
	if s.Error != "" {
		b = append(b, `,"error":`...)
		b = textfmt.AppendJSONString(b, s.Error, true)
	}
	return b, ok
}

func (e *recordEncoder) appendCPU(b []byte, r *CPURecord) ([]byte, bool) {
	b = append(b, '{')
	b, ok := appendSampleMembers(b, &r.Sample)
	h := &r.Host
	b = append(b, `,"host":{"logical_cpus":`...)
	b = strconv.AppendInt(b, int64(h.LogicalCPUs), 10)
	b = append(b, ',')
	b, ok1 := appendPercents(b, &h.CPUPercents)
	b = append(b, `,"load1":`...)
	b, ok2 := appendFloatPtr(b, h.Load1)
	b = append(b, `,"load5":`...)
	b, ok3 := appendFloatPtr(b, h.Load5)
	b = append(b, `,"load15":`...)
	b, ok4 := appendFloatPtr(b, h.Load15)
	ok = ok && ok1 && ok2 && ok3 && ok4
	if h.LoadError != "" {
		b = append(b, `,"load_error":`...)
		b = textfmt.AppendJSONString(b, h.LoadError, true)
	}
	b = append(b, `,"ticks":`...)
	b = appendTicks(b, &h.Ticks)
	b = append(b, `},"cores":`...)
	if r.Cores == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range r.Cores {
			c := &r.Cores[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"cpu":`...)
			b = strconv.AppendInt(b, int64(c.CPU), 10)
			b = append(b, `,"online":`...)
			b = strconv.AppendBool(b, c.Online)
			b = append(b, ',')
			var okc bool
			b, okc = appendPercents(b, &c.CPUPercents)
			ok = ok && okc
			b = append(b, `,"ticks":`...)
			if c.Ticks == nil {
				b = append(b, "null"...)
			} else {
				b = appendTicks(b, c.Ticks)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if r.Cgroup != nil {
		b = append(b, `,"cgroup":`...)
		var okg bool
		b, okg = appendCgroupCPU(b, r.Cgroup)
		ok = ok && okg
	}
	return append(b, '}'), ok
}

// appendPercents writes the members of p (no braces).
func appendPercents(b []byte, p *CPUPercents) ([]byte, bool) {
	ok := true
	for _, f := range [...]struct {
		key string
		v   *float64
	}{
		{`"total_percent":`, p.TotalPct},
		{`,"user_percent":`, p.UserPct},
		{`,"system_percent":`, p.SystemPct},
		{`,"idle_percent":`, p.IdlePct},
		{`,"iowait_percent":`, p.IowaitPct},
		{`,"steal_percent":`, p.StealPct},
	} {
		var okf bool
		b = append(b, f.key...)
		b, okf = appendFloatPtr(b, f.v)
		ok = ok && okf
	}
	if p.Reset != "" {
		b = append(b, `,"reset":`...)
		b = textfmt.AppendJSONString(b, p.Reset, true)
	}
	return b, ok
}

func appendTicks(b []byte, t *CPUTicks) []byte {
	b = append(b, `{"user":`...)
	b = strconv.AppendUint(b, t.User, 10)
	b = append(b, `,"nice":`...)
	b = strconv.AppendUint(b, t.Nice, 10)
	b = append(b, `,"system":`...)
	b = strconv.AppendUint(b, t.System, 10)
	b = append(b, `,"idle":`...)
	b = strconv.AppendUint(b, t.Idle, 10)
	b = append(b, `,"iowait":`...)
	b = strconv.AppendUint(b, t.Iowait, 10)
	b = append(b, `,"irq":`...)
	b = strconv.AppendUint(b, t.IRQ, 10)
	b = append(b, `,"softirq":`...)
	b = strconv.AppendUint(b, t.SoftIRQ, 10)
	b = append(b, `,"steal":`...)
	b = strconv.AppendUint(b, t.Steal, 10)
	b = append(b, `,"guest":`...)
	b = strconv.AppendUint(b, t.Guest, 10)
	b = append(b, `,"guest_nice":`...)
	b = strconv.AppendUint(b, t.GuestNice, 10)
	return append(b, '}')
}

// appendCgroupCPU writes c as its MarshalJSON does.
func appendCgroupCPU(b []byte, c *CgroupCPU) ([]byte, bool) {
	b = append(b, `{"version":`...)
	b = strconv.AppendInt(b, int64(c.Version), 10)
	b = append(b, `,"path":`...)
	b = textfmt.AppendJSONString(b, c.Path, true)
	if c.QuotaUS == 0 && c.Error != "" {
		b = append(b, `,"error":`...)
		b = textfmt.AppendJSONString(b, c.Error, true)
		return append(b, '}'), true
	}
	b = append(b, `,"quota_us":`...)
	b = strconv.AppendInt(b, c.QuotaUS, 10)
	b = append(b, `,"period_us":`...)
	b = strconv.AppendInt(b, c.PeriodUS, 10)
	b = append(b, `,"quota_cpus":`...)
	b, ok := appendFloat(b, c.QuotaCPUs)
	b = append(b, `,"usage_usec":`...)
	b = strconv.AppendUint(b, c.UsageUS, 10)
	b = append(b, `,"nr_periods":`...)
	b = strconv.AppendUint(b, c.NrPeriods, 10)
	b = append(b, `,"nr_throttled":`...)
	b = strconv.AppendUint(b, c.NrThrottled, 10)
	b = append(b, `,"throttled_usec":`...)
	b = strconv.AppendUint(b, c.ThrottledUS, 10)
	b = append(b, `,"usage_cpus":`...)
	b, ok1 := appendFloatPtr(b, c.UsageCPUs)
	b = append(b, `,"usage_of_quota_percent":`...)
	b, ok2 := appendFloatPtr(b, c.UsageOfQuotaPct)
	b = append(b, `,"throttled_percent":`...)
	b, ok3 := appendFloatPtr(b, c.ThrottledPct)
	if c.Error != "" {
		b = append(b, `,"error":`...)
		b = textfmt.AppendJSONString(b, c.Error, true)
	}
	return append(b, '}'), ok && ok1 && ok2 && ok3
}

func (e *recordEncoder) appendMem(b []byte, r *MemRecord) ([]byte, bool) {
	b = append(b, '{')
	b, ok := appendSampleMembers(b, &r.Sample)
	for _, f := range [...]struct {
		key string
		v   *uint64
	}{
		{`,"total_bytes":`, r.TotalBytes},
		{`,"free_bytes":`, r.FreeBytes},
		{`,"available_bytes":`, r.AvailableBytes},
		{`,"buffers_bytes":`, r.BuffersBytes},
		{`,"cached_bytes":`, r.CachedBytes},
		{`,"shmem_bytes":`, r.ShmemBytes},
		{`,"dirty_bytes":`, r.DirtyBytes},
		{`,"swap_total_bytes":`, r.SwapTotalBytes},
		{`,"swap_free_bytes":`, r.SwapFreeBytes},
	} {
		b = append(b, f.key...)
		if f.v == nil {
			b = append(b, "null"...)
		} else {
			b = strconv.AppendUint(b, *f.v, 10)
		}
	}
	b = append(b, `,"used_percent":`...)
	b, ok1 := appendFloatPtr(b, r.UsedPct)
	b = append(b, `,"swap_used_percent":`...)
	b, ok2 := appendFloatPtr(b, r.SwapUsedPct)
	ok = ok && ok1 && ok2
	b = append(b, `,"meminfo":`...)
	if r.Meminfo == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '{')
		for i, k := range e.sortedKeys(r.Meminfo) {
			if i > 0 {
				b = append(b, ',')
			}
			b = textfmt.AppendJSONString(b, k, true)
			b = append(b, ':')
			b = strconv.AppendUint(b, r.Meminfo[k], 10)
		}
		b = append(b, '}')
	}
	if c := r.Cgroup; c != nil {
		b = append(b, `,"cgroup":{"version":`...)
		b = strconv.AppendInt(b, int64(c.Version), 10)
		b = append(b, `,"path":`...)
		b = textfmt.AppendJSONString(b, c.Path, true)
		if c.LimitBytes == 0 && c.Error != "" {
			b = append(b, `,"error":`...)
			b = textfmt.AppendJSONString(b, c.Error, true)
		} else {
			b = append(b, `,"usage_bytes":`...)
			b = strconv.AppendUint(b, c.UsageBytes, 10)
			b = append(b, `,"limit_bytes":`...)
			b = strconv.AppendUint(b, c.LimitBytes, 10)
			b = append(b, `,"used_percent":`...)
			var okc bool
			b, okc = appendFloat(b, c.UsedPct)
			ok = ok && okc
			if c.Error != "" {
				b = append(b, `,"error":`...)
				b = textfmt.AppendJSONString(b, c.Error, true)
			}
		}
		b = append(b, '}')
	}
	return append(b, '}'), ok
}

// sortedKeys returns m's keys in the order json.Marshal writes them
// (sorted), reusing the last call's slice when m has the same keys (a
// meminfo's lines do not change from one read to the next).
func (e *recordEncoder) sortedKeys(m map[string]uint64) []string {
	if len(e.keys) == len(m) {
		same := true
		for _, k := range e.keys {
			if _, ok := m[k]; !ok {
				same = false
				break
			}
		}
		if same {
			return e.keys
		}
	}
	e.keys = e.keys[:0]
	for k := range m {
		e.keys = append(e.keys, k)
	}
	slices.Sort(e.keys)
	return e.keys
}

func (e *recordEncoder) appendNet(b []byte, r *NetRecord) ([]byte, bool) {
	b = append(b, '{')
	b, ok := appendSampleMembers(b, &r.Sample)
	b = append(b, `,"interfaces":`...)
	if r.Interfaces == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range r.Interfaces {
			if i > 0 {
				b = append(b, ',')
			}
			var oki bool
			b, oki = appendNetInterface(b, &r.Interfaces[i])
			ok = ok && oki
		}
		b = append(b, ']')
	}
	if len(r.Gone) > 0 {
		b = append(b, `,"gone":`...)
		b = appendStrings(b, r.Gone)
	}
	return append(b, '}'), ok
}

func appendNetInterface(b []byte, ni *NetInterface) ([]byte, bool) {
	b = append(b, `{"name":`...)
	b = textfmt.AppendJSONString(b, ni.Name, true)
	b = append(b, `,"incarnation":`...)
	b = strconv.AppendInt(b, int64(ni.Incarnation), 10)
	c := &ni.NetCounters
	for _, f := range [...]struct {
		key string
		v   uint64
	}{
		{`,"rx_bytes":`, c.RxBytes},
		{`,"rx_packets":`, c.RxPackets},
		{`,"rx_errors":`, c.RxErrors},
		{`,"rx_dropped":`, c.RxDropped},
		{`,"tx_bytes":`, c.TxBytes},
		{`,"tx_packets":`, c.TxPackets},
		{`,"tx_errors":`, c.TxErrors},
		{`,"tx_dropped":`, c.TxDropped},
	} {
		b = append(b, f.key...)
		b = strconv.AppendUint(b, f.v, 10)
	}
	ok := true
	for _, f := range [...]struct {
		key string
		v   *float64
	}{
		{`,"rx_bytes_per_s":`, ni.RxBytesPerS},
		{`,"tx_bytes_per_s":`, ni.TxBytesPerS},
		{`,"rx_packets_per_s":`, ni.RxPacketsPerS},
		{`,"tx_packets_per_s":`, ni.TxPacketsPerS},
		{`,"rx_errors_per_s":`, ni.RxErrorsPerS},
		{`,"tx_errors_per_s":`, ni.TxErrorsPerS},
		{`,"rx_dropped_per_s":`, ni.RxDroppedPerS},
		{`,"tx_dropped_per_s":`, ni.TxDroppedPerS},
	} {
		var okf bool
		b = append(b, f.key...)
		b, okf = appendFloatPtr(b, f.v)
		ok = ok && okf
	}
	if ni.Reset != "" {
		b = append(b, `,"reset":`...)
		b = textfmt.AppendJSONString(b, ni.Reset, true)
	}
	if len(ni.Wrapped) > 0 {
		b = append(b, `,"wrapped":`...)
		b = appendStrings(b, ni.Wrapped)
	}
	if ni.LinkSpeedMbps != nil {
		b = append(b, `,"link_speed_mbps":`...)
		b = strconv.AppendInt(b, *ni.LinkSpeedMbps, 10)
	}
	if len(ni.OverLinkSpeed) > 0 {
		b = append(b, `,"over_link_speed":`...)
		b = appendStrings(b, ni.OverLinkSpeed)
	}
	return append(b, '}'), ok
}

// appendStrings writes a non-nil list of strings.
func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = textfmt.AppendJSONString(b, s, true)
	}
	return append(b, ']')
}

func appendFloatPtr(b []byte, v *float64) ([]byte, bool) {
	if v == nil {
		return append(b, "null"...), true
	}
	return appendFloat(b, *v)
}

// appendFloat writes f as encoding/json writes a float64
// (textfmt.AppendJSONFloat); false for a NaN or an infinity, which
// json.Marshal refuses.
func appendFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	return textfmt.AppendJSONFloat(b, f), true
}

package hostprobe

import (
	"encoding/json"
	"time"
)

// Schema names of the host records, carried in each record's "schema"
// member and in the channel's catalog descriptor (frames.JSONRecord).
// ARCHITECTURE.md §4 keeps the seed's names (host.cpu.v1, host.net.v1,
// host.gpu.v1).
const (
	SchemaCPU = "host.cpu.v1"
	SchemaMem = "host.mem.v1"
	SchemaNet = "host.net.v1"
	SchemaGPU = "host.gpu.v1"
)

// Channel names the sampler registers (ARCHITECTURE.md §4).
const (
	ChannelCPU = "host.cpu"
	ChannelMem = "host.mem"
	ChannelNet = "host.net"
	ChannelGPU = "host.gpu"
)

// Reset reasons: why a record's rates or percentages are null. A value is
// null, never 0 and never made up, when it cannot be known from two reads
// (ARCHITECTURE.md case 5.2).
const (
	ResetFirst       = "first"        // no previous read of this counter (a priming read comes first)
	ResetBackwards   = "backwards"    // a counter went down: a reset (driver reload, suspend/resume), not a wrap nor a tick of jitter
	ResetNoTime      = "no_time"      // no time passed between the two reads, or every counter stood still
	ResetNewLife     = "incarnation"  // the interface or CPU came back after it was gone: its counters start a new incarnation
	ResetCPUsChanged = "cpus_changed" // host: CPUs came or went; the totals are summed over the CPUs online at both reads
	// ResetImplausible: a counter rose faster than any link can carry
	// (over 2^40 bytes or 2^32 packets a second): a counter replaced, not
	// traffic.
	ResetImplausible = "implausible"
	// ResetIowaitBackwards marks values that are there: iowait stepped
	// back a few ticks (NO_HZ accounting, proc(5)) and counted 0 for the
	// interval; the other shares stand.
	ResetIowaitBackwards = "iowait_backwards"
	// ResetClamped marks values that are there: a column of the row
	// other than iowait stepped back a tick or two (accounting jitter)
	// and counted 0 for the interval; the other shares stand. A larger
	// step back is ResetBackwards.
	ResetClamped = "clamped"
)

// Sample is the head of every host record: what it is and the time it
// covers. A record's rates and percentages are over the IntervalMS before
// SampleUnixMS.
type Sample struct {
	// Schema is the record's schema name (SchemaCPU, …).
	Schema string `json:"schema"`
	// Seq counts this channel's records from 1 within one run of a
	// sampler. A record that was taken but could not be recorded (a
	// full capture queue: the loss is in the stream as a
	// datastream.health record) leaves a gap in seq; a tick at which no
	// sample was taken is counted in SkippedTicks instead.
	Seq uint64 `json:"seq"`
	// SkippedTicks counts the ticks of the schedule, since this
	// channel's previous record, at which it took no sample: the
	// sampler overran the interval (host.cpu, host.mem, host.net), or
	// this record's nvidia-smi was still running (host.gpu: never two
	// at once). Samples not taken are said, not silently missing.
	SkippedTicks int `json:"skipped_ticks,omitempty"`
	// SampleUnixMS is when the read was taken, in ms since the Unix
	// epoch (wall clock).
	SampleUnixMS int64 `json:"sample_unix_ms"`
	// IntervalMS is the time since the previous read of the same
	// probe, in ms, measured on the monotonic clock; null for a first
	// read.
	IntervalMS *float64 `json:"interval_ms"`
	// Error, when set, says why this record holds no values (a file
	// that could not be read or parsed, nvidia-smi failing); the
	// sampler goes on.
	Error string `json:"error,omitempty"`
}

// stamp fills the time members of s for a read at now after a previous
// read at prev (zero: none).
func (s *Sample) stamp(now, prev time.Time) {
	s.SampleUnixMS = now.UnixMilli()
	if !prev.IsZero() {
		ms := float64(now.Sub(prev)) / float64(time.Millisecond)
		s.IntervalMS = &ms
	}
}

// CPUTicks are one row of /proc/stat: cumulative time in USER_HZ ticks
// (1/100 s on Linux) since boot, in the kernel's column order. Guest and
// GuestNice are already counted in User and Nice (proc(5)), so Total
// leaves them out.
type CPUTicks struct {
	User      uint64 `json:"user"`
	Nice      uint64 `json:"nice"`
	System    uint64 `json:"system"`
	Idle      uint64 `json:"idle"`
	Iowait    uint64 `json:"iowait"`
	IRQ       uint64 `json:"irq"`
	SoftIRQ   uint64 `json:"softirq"`
	Steal     uint64 `json:"steal"`
	Guest     uint64 `json:"guest"`
	GuestNice uint64 `json:"guest_nice"`
}

// Total is the sum of the columns that partition time: user, nice,
// system, idle, iowait, irq, softirq and steal (ARCHITECTURE.md case 5.1:
// `cpu  100 2 50 800 10 1 3 4 0 0` totals 970).
func (t CPUTicks) Total() uint64 {
	return t.User + t.Nice + t.System + t.Idle + t.Iowait + t.IRQ + t.SoftIRQ + t.Steal
}

// CPUPercents are the shares of one interval, in percent of the time of
// the CPUs they cover (0–100), as vmstat(8) splits it: Total (busy) is
// everything but idle and iowait, so steal counts as busy; User is user
// + nice; System is system + irq + softirq. Each is null when the
// interval cannot be known (see Reset).
type CPUPercents struct {
	TotalPct  *float64 `json:"total_percent"`
	UserPct   *float64 `json:"user_percent"`
	SystemPct *float64 `json:"system_percent"`
	IdlePct   *float64 `json:"idle_percent"`
	IowaitPct *float64 `json:"iowait_percent"`
	StealPct  *float64 `json:"steal_percent"`
	// Reset says why the percentages are null (ResetFirst, …), or, with
	// ResetCPUsChanged, how they were computed.
	Reset string `json:"reset,omitempty"`
}

// CPUHost is the whole-host part of a host.cpu record.
type CPUHost struct {
	// LogicalCPUs counts the per-CPU rows of /proc/stat: the CPUs
	// online at this read (ARCHITECTURE.md case 5.1).
	LogicalCPUs int `json:"logical_cpus"`
	CPUPercents
	// Load1, Load5 and Load15 are /proc/loadavg's averages; null when
	// it could not be read.
	Load1  *float64 `json:"load1"`
	Load5  *float64 `json:"load5"`
	Load15 *float64 `json:"load15"`
	// LoadError, when set, says why the load averages are null:
	// /proc/loadavg could not be read or parsed (the error names the
	// file, and the line and field).
	LoadError string `json:"load_error,omitempty"`
	// Ticks is the aggregate "cpu" row of this read.
	Ticks CPUTicks `json:"ticks"`
}

// CPUCore is one CPU of a host.cpu record. A CPU seen once in this run
// and offline now is listed with Online false, null percentages and null
// Ticks: never with its last values.
type CPUCore struct {
	CPU    int  `json:"cpu"`
	Online bool `json:"online"`
	CPUPercents
	Ticks *CPUTicks `json:"ticks"`
}

// CgroupCPU is the CPU controller of the cgroup ds runs in, when it or an
// ancestor has a quota (the smallest on the way up to the hierarchy's
// mount: Path): a container saturated at its quota shows here while the
// host's CPUs look idle. Cumulative counters are as the kernel gives them; the
// derived members are over the record's interval and null on a first
// read or a counter that went down.
type CgroupCPU struct {
	// Version is the cgroup version, 1 or 2.
	Version int `json:"version"`
	// Path is the path, as /proc/self/cgroup writes paths, of the
	// cgroup whose quota binds: ds's own or an ancestor's, the one with
	// the smallest QuotaCPUs ("/" at the root of a container's
	// namespace). The counters are that cgroup's.
	Path string `json:"path"`
	// QuotaUS and PeriodUS are the quota per period, in µs (v2 cpu.max,
	// v1 cpu.cfs_quota_us and cpu.cfs_period_us).
	QuotaUS  int64 `json:"quota_us"`
	PeriodUS int64 `json:"period_us"`
	// QuotaCPUs is QuotaUS/PeriodUS: how many CPUs' worth of time the
	// cgroup may use.
	QuotaCPUs float64 `json:"quota_cpus"`
	// UsageUS is the cgroup's cumulative CPU time in µs (v2 cpu.stat
	// usage_usec; v1 cpuacct.usage / 1000).
	UsageUS uint64 `json:"usage_usec"`
	// NrPeriods, NrThrottled and ThrottledUS are cpu.stat's cumulative
	// counts of enforcement periods, periods in which the cgroup was
	// throttled, and time throttled (µs).
	NrPeriods   uint64 `json:"nr_periods"`
	NrThrottled uint64 `json:"nr_throttled"`
	ThrottledUS uint64 `json:"throttled_usec"`
	// UsageCPUs is the CPU time used over the interval divided by its
	// length: CPUs' worth of time used.
	UsageCPUs *float64 `json:"usage_cpus"`
	// UsageOfQuotaPct is UsageCPUs / QuotaCPUs in percent: 100 is a
	// saturated container.
	UsageOfQuotaPct *float64 `json:"usage_of_quota_percent"`
	// ThrottledPct is the share of the interval's periods in which the
	// cgroup was throttled, in percent.
	ThrottledPct *float64 `json:"throttled_percent"`
	// Error, when set, names the cgroup files that could not be read or
	// parsed (/proc/self/cgroup, cpu.max, cpu.stat, …) and why. When no
	// quota could be read, the block holds only version, path and error;
	// otherwise counters that could not be read are 0 and the derived
	// members null.
	Error string `json:"error,omitempty"`
}

// CPURecord is one host.cpu record (ARCHITECTURE.md §4, seed host.cpu.v1).
type CPURecord struct {
	Sample
	Host  CPUHost   `json:"host"`
	Cores []CPUCore `json:"cores"`
	// Cgroup is set only inside a cgroup with a CPU quota, or when the
	// cgroup's files cannot be read (CgroupCPU.Error).
	Cgroup *CgroupCPU `json:"cgroup,omitempty"`
}

// MemRecord is one host.mem record: /proc/meminfo in bytes (ARCHITECTURE.md
// §4). A member the kernel does not report is null.
type MemRecord struct {
	Sample
	TotalBytes     *uint64 `json:"total_bytes"`
	FreeBytes      *uint64 `json:"free_bytes"`
	AvailableBytes *uint64 `json:"available_bytes"`
	BuffersBytes   *uint64 `json:"buffers_bytes"`
	CachedBytes    *uint64 `json:"cached_bytes"`
	ShmemBytes     *uint64 `json:"shmem_bytes"`
	DirtyBytes     *uint64 `json:"dirty_bytes"`
	SwapTotalBytes *uint64 `json:"swap_total_bytes"`
	SwapFreeBytes  *uint64 `json:"swap_free_bytes"`
	// UsedPct is (total − available) / total in percent (what free(1)
	// calls used, and what matters for the OOM killer).
	UsedPct *float64 `json:"used_percent"`
	// SwapUsedPct is (swap total − swap free) / swap total; null without
	// swap.
	SwapUsedPct *float64 `json:"swap_used_percent"`
	// Meminfo holds every line of /proc/meminfo by the kernel's name, in
	// bytes where the kernel says kB (counts, such as HugePages_Total, as
	// they are).
	Meminfo map[string]uint64 `json:"meminfo"`
	// Cgroup is set only inside a cgroup with a memory limit, or when
	// the cgroup's files cannot be read (CgroupMem.Error).
	Cgroup *CgroupMem `json:"cgroup,omitempty"`
}

// CgroupMem is the memory controller of the cgroup ds runs in, when it
// or an ancestor has a limit (v2 memory.max, v1 memory.limit_in_bytes
// below the "unlimited" value): the smallest limit on the way up to the
// hierarchy's mount, and the usage of the cgroup that has it (Path).
type CgroupMem struct {
	Version    int     `json:"version"`
	Path       string  `json:"path"`
	UsageBytes uint64  `json:"usage_bytes"`
	LimitBytes uint64  `json:"limit_bytes"`
	UsedPct    float64 `json:"used_percent"`
	// Error, when set, names the cgroup files that could not be read or
	// parsed (/proc/self/cgroup, memory.max, memory.current, …) and why.
	// When no limit could be read, the block holds only version, path
	// and error.
	Error string `json:"error,omitempty"`
}

// cgroupError is what a cgroup block holds when no quota or limit could
// be read at all: where and why, and no members that would read as 0.
type cgroupError struct {
	Version int    `json:"version"`
	Path    string `json:"path"`
	Error   string `json:"error"`
}

// MarshalJSON writes c, or only its version, path and error when no
// quota could be read (a valid quota is positive): zeros there would
// read as a cgroup with no quota and no usage.
func (c CgroupCPU) MarshalJSON() ([]byte, error) {
	if c.QuotaUS == 0 && c.Error != "" {
		return json.Marshal(cgroupError{c.Version, c.Path, c.Error})
	}
	type plain CgroupCPU
	return json.Marshal(plain(c))
}

// MarshalJSON writes c, or only its version, path and error when no
// limit could be read (a valid limit is positive).
func (c CgroupMem) MarshalJSON() ([]byte, error) {
	if c.LimitBytes == 0 && c.Error != "" {
		return json.Marshal(cgroupError{c.Version, c.Path, c.Error})
	}
	type plain CgroupMem
	return json.Marshal(plain(c))
}

// NetCounters are one interface's cumulative counters from
// /proc/net/dev.
type NetCounters struct {
	RxBytes   uint64 `json:"rx_bytes"`
	RxPackets uint64 `json:"rx_packets"`
	RxErrors  uint64 `json:"rx_errors"`
	RxDropped uint64 `json:"rx_dropped"`
	TxBytes   uint64 `json:"tx_bytes"`
	TxPackets uint64 `json:"tx_packets"`
	TxErrors  uint64 `json:"tx_errors"`
	TxDropped uint64 `json:"tx_dropped"`
}

// NetDevice is one parsed row of /proc/net/dev.
type NetDevice struct {
	Name string
	NetCounters
}

// NetInterface is one interface of a host.net record: its cumulative
// counters and their rates per second over the record's interval. Rates
// are null, never negative, when they cannot be known (Reset).
type NetInterface struct {
	Name string `json:"name"`
	// Incarnation counts the interface's appearances in this run, from
	// 1: an interface that disappears and comes back starts a new
	// incarnation, whose counters are not compared with the old ones.
	Incarnation int `json:"incarnation"`
	NetCounters
	RxBytesPerS   *float64 `json:"rx_bytes_per_s"`
	TxBytesPerS   *float64 `json:"tx_bytes_per_s"`
	RxPacketsPerS *float64 `json:"rx_packets_per_s"`
	TxPacketsPerS *float64 `json:"tx_packets_per_s"`
	RxErrorsPerS  *float64 `json:"rx_errors_per_s"`
	TxErrorsPerS  *float64 `json:"tx_errors_per_s"`
	RxDroppedPerS *float64 `json:"rx_dropped_per_s"`
	TxDroppedPerS *float64 `json:"tx_dropped_per_s"`
	// Reset says why the rates are null (ResetFirst, ResetNewLife,
	// ResetBackwards, ResetImplausible, ResetNoTime).
	Reset string `json:"reset,omitempty"`
	// Wrapped names the counters taken to have wrapped at their width
	// (sysstat's rule: bytes fell while packets rose, and the old value
	// was near 2^32 or 2^64); their rates count across the wrap.
	Wrapped []string `json:"wrapped,omitempty"`
	// LinkSpeedMbps is the link's speed (SysRoot/class/net/NAME/speed,
	// Mbit/s) when a rate was checked against it; omitted otherwise.
	LinkSpeedMbps *int64 `json:"link_speed_mbps,omitempty"`
	// OverLinkSpeed names the counters (rx_bytes, rx_packets, tx_bytes,
	// tx_packets) whose rates are null because they rose faster than the
	// link carries (a counter reset or replaced); the other rates stand.
	OverLinkSpeed []string `json:"over_link_speed,omitempty"`
}

// NetRecord is one host.net record (ARCHITECTURE.md §4, seed host.net.v1).
type NetRecord struct {
	Sample
	Interfaces []NetInterface `json:"interfaces"`
	// Gone names the interfaces of the previous read that are not in
	// this one.
	Gone []string `json:"gone,omitempty"`
}

// GPU is one GPU of a host.gpu record, keyed by UUID. A field nvidia-smi
// reports as N/A, [N/A] or [Not Supported] is null; the rest of the GPU,
// and the other GPUs, are kept (ARCHITECTURE.md case 5.5).
type GPU struct {
	UUID           string   `json:"uuid"`
	Index          *int     `json:"index"`
	Name           string   `json:"name"`
	MemoryUsedMiB  *float64 `json:"memory_used_mib"`
	MemoryTotalMiB *float64 `json:"memory_total_mib"`
	// UtilPct and MemUtilPct are utilization.gpu and utilization.memory:
	// the share of the driver's last sample period (1/6 s to 1 s) in
	// which a kernel ran, or memory was read or written.
	UtilPct    *float64 `json:"utilization_gpu_percent"`
	MemUtilPct *float64 `json:"utilization_memory_percent"`
	TempC      *float64 `json:"temperature_c"`
	PowerW     *float64 `json:"power_w"`
}

// GPUProcess is one compute process on a GPU
// (nvidia-smi --query-compute-apps).
type GPUProcess struct {
	GPUUUID       string   `json:"gpu_uuid"`
	PID           int      `json:"pid"`
	Name          string   `json:"name"`
	UsedMemoryMiB *float64 `json:"used_memory_mib"`
}

// GPURecord is one host.gpu record (ARCHITECTURE.md §4, seed host.gpu.v1).
type GPURecord struct {
	Sample
	// Available is false in the one record that says nvidia-smi is not
	// there (ErrNoGPU); no GPU records follow it.
	Available bool `json:"available"`
	// DurationMS is how long nvidia-smi took, in ms.
	DurationMS float64      `json:"duration_ms"`
	GPUs       []GPU        `json:"gpus"`
	Processes  []GPUProcess `json:"processes"`
	// ProcessesError says why Processes is null while GPUs is not (the
	// compute-apps query failed).
	ProcessesError string `json:"processes_error,omitempty"`
	// ParseError, when set, names the rows of nvidia-smi's output that
	// could be read only in part (a field neither a number nor a
	// placeholder, too few fields: that field null, the GPU or process
	// kept) or not at all (no uuid or pid: left out); see RowsError.
	ParseError string `json:"parse_error,omitempty"`
}

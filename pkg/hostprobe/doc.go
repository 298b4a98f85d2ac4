// Package hostprobe samples the host's hardware into JSON records: the
// ds host producer, and ds wrap --host's (ARCHITECTURE.md §1: a producer, beside
// pkg/proc). It reads /proc/stat, /proc/loadavg, /proc/meminfo,
// /proc/net/dev and the process's cgroup, runs nvidia-smi, and submits one
// record per channel per interval to a frames producer:
//
//	host.cpu  JsonRecord "host.cpu.v1"  per-CPU and host percentages, load averages, raw /proc/stat ticks, the cgroup's CPU quota and throttling
//	host.mem  JsonRecord "host.mem.v1"  /proc/meminfo in bytes, the cgroup's memory limit
//	host.net  JsonRecord "host.net.v1"  per-interface cumulative counters and their rates
//	host.gpu  JsonRecord "host.gpu.v1"  per-GPU (by uuid) memory, utilization, temperature, power; compute processes
//
// It imports frames and the standard library only; it knows nothing of
// files or encodings (cmd/ds connects the producer to a segments.Writer).
//
// # Layers
//
// Pure parsers read one file's text from an io.Reader ([ParseStat],
// [ParseLoadavg], [ParseMeminfo], [ParseNetDev], [ParseGPUs], …) and keep
// no state. A [Prober] reads the files under a configurable root
// (ProcRoot, SysRoot: a fixture tree in tests, the host's /proc mounted
// elsewhere in a container) and turns two successive reads into one
// record, keeping the previous read per channel. A [Sampler] runs a
// Prober on a schedule and submits the records.
//
// # Rules
//
// A record's rates and percentages cover the interval between two reads
// (Sample.IntervalMS, on the monotonic clock); raw cumulative counters are
// stored beside them, so that any interval can be recomputed from two
// records. A value that two reads cannot give is null, never 0 and never
// made up, and the record says why (Reset): the first read of a counter
// (a priming read: no since-boot averages), a counter that went backwards
// (a reset, unless sysstat's wrap rule holds), an interface or CPU that
// came back (a new incarnation), an offline CPU. A bad read is an error
// record, and sampling goes on.
//
// nvidia-smi runs on a goroutine of its own under a deadline: a hung one is
// killed with its process group and recorded, never delays the other
// channels, and is never started twice at once. A missing nvidia-smi is
// recorded once (Available false) and GPU sampling stops.
package hostprobe

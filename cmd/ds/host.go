package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/capture"
	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/hostprobe"
)

func hostCommand() *cli.Command {
	return &cli.Command{
		Name:      "host",
		Usage:     "sample CPU, memory, network and GPUs into a capture",
		UsageText: "ds host [-o FILE|DIR|-] [--interval D] [--count N | --duration D] [--cpu] [--mem] [--net] [--gpu] [flags]",
		Description: `Samples the host's hardware every --interval (1s by default) and records
one JSON record per channel per sample into a new stream of a DSS capture,
with the writer's own datastream.clock and datastream.health records:

   host.cpu  host and per-CPU percentages (total = busy, user, system,
             idle, iowait, steal), load averages, the raw /proc/stat
             ticks, and, inside a cgroup with a CPU quota, the quota,
             the cgroup's usage and its throttling
   host.mem  /proc/meminfo in bytes, used percent, a cgroup memory limit
   host.net  per interface: cumulative bytes, packets, errors and drops,
             and their rates per second
   host.gpu  per GPU, keyed by uuid: memory used and total (MiB),
             utilization (%), temperature (°C), power (W), and the
             compute processes, from nvidia-smi

Without --cpu, --mem, --net or --gpu every channel is sampled; with any of
them, only those. ds host runs until --count samples, --duration, or INT,
TERM or HUP (a last, shorter sample is then taken, and the stream ends
cleanly; exit status 0).

Each record says when it was read (sample_unix_ms) and the interval its
rates cover (interval_ms, on the monotonic clock); cumulative counters are
kept beside the rates, so any interval can be recomputed from two records.
Samples are taken on a fixed schedule from the start: a slow sample does
not shift the next ones (a tick it overran is skipped). The first record
comes one interval after a priming read, so its percentages are over
that interval, never since boot. A value that two reads cannot give is
null, never 0, with the reason in "reset": "first", "backwards" (a
counter went down: a reset, not a wrap, unless sysstat's rule for a
wrap holds: bytes fell while packets rose near the counter's width),
"incarnation" (an interface or a CPU came back: its counters start
afresh), "implausible" (a counter rose faster than any link carries),
"no_time". A byte or packet rate faster than the interface's link
carries (SYS/class/net/NAME/speed, where known, with room for drivers
that update their counters every second or two) is a counter reset: that
rate is null, the counter named in "over_link_speed", beside
"link_speed_mbps"; the other rates stand. An offline CPU is listed with "online":false and null
values, never with its last ones; when CPUs come or go the host totals
are summed over the CPUs online at both reads ("cpus_changed", values
kept). iowait stepping back a few ticks (NO_HZ kernels, proc(5)) counts 0
for that interval and the other shares are kept ("iowait_backwards");
so does any other column stepping back a tick or two in an interval of
at least 32 times that many ticks ("clamped"); a larger step back makes
the sample null ("backwards"), never a spike.

GPUs: nvidia-smi (--nvidia-smi, found in PATH by default) runs on a
goroutine of its own, on the same ticks, at most once at a time, under
--gpu-timeout for both of its queries: a tick that finds it still
running is skipped (counted in skipped_ticks of the record of the run
that was still going), and a
hung nvidia-smi is killed and recorded (an "error" record), never
delaying the other channels. A placeholder (N/A, [N/A], [Not Supported]) is null
for that field only. Without nvidia-smi one host.gpu record says
"available":false, and GPU sampling stops (said on stderr when --gpu was
given). A file that cannot be read gives an error record for that sample
(said once on stderr); sampling goes on.

--proc-root and --sys-root read another procfs and sysfs: a host's /proc
mounted elsewhere in a container (as node_exporter's --path.procfs), or
a fixture tree. With --proc-root alone, sysfs is read from the sys
directory beside it (/host/proc → /host/sys), never from this machine's
/sys.

Records go through the capture's bounded queue: should the capture stall
(a -o FIFO nobody reads), records are dropped before they get a
position, the loss is recorded in place (ds log shows it), ds host says
how many at exit, and its memory stays bounded. Each sample's records get
their positions and a clock reading at once; a capture on a pipe, FIFO
or stdout is flushed after each sample, a compressed file every --flush
(1s here: a block holds many samples; kill -9 loses at most that). A
second INT, TERM or HUP kills ds host at once; a signal ignored when it
started (nohup) stays ignored.

Reading the records: ds series prints any member as a time series
(gjson paths; -o csv for a spreadsheet):

   ds series host.cpu -f host.total_percent -f host.iowait_percent h.dss
   ds series host.cpu -f 'cores.#.total_percent' h.dss
   ds series host.mem -f used_percent -f available_bytes h.dss
   ds series host.net -f 'interfaces.#(name=="eth0").rx_bytes_per_s' h.dss
   ds series host.gpu -f 'gpus.#(uuid=="GPU-…").utilization_gpu_percent' h.dss
   ds latest host.gpu h.dss

Cost: a sample reads a few small files, so --interval 100ms costs under
1 % of a CPU (0.8 to 0.9 % measured on a 2-core VM), --interval 1s about
0.1 %; nvidia-smi itself takes tens of milliseconds of CPU per run, so
sample GPUs at 1s or more.

Exit status: 0 when the run ended (--count, --duration, a signal); 1 when
a channel failed at every sample (its error records say why), when --gpu
alone finds no nvidia-smi (nothing to sample), or when the capture could
not be written (-o - whose reader went away included: the run stops
there); 2 for a usage error.

-o FILE never replaces an existing file (--overwrite, --append); with -o
DIR, or no -o, the capture is named LABEL-TIME.dss (LABEL is "host" by
default). -o - writes the capture to stdout (ds host -o - | ds log -).`,
		Flags: append([]cli.Flag{
			outputFlag(),
			&cli.DurationFlag{Name: "interval", Aliases: []string{"i"}, Value: time.Second, Usage: "sample every `INTERVAL` (at least 10ms; below 100ms per-CPU percentages are coarse: /proc/stat counts 10ms ticks)"},
			&cli.IntFlag{Name: "count", Aliases: []string{"n"}, Usage: "stop after `N` samples"},
			&cli.DurationFlag{Name: "duration", Usage: "stop after `D` (the sample at D is taken)"},
			&cli.BoolFlag{Name: "cpu", Usage: "sample host.cpu"},
			&cli.BoolFlag{Name: "mem", Usage: "sample host.mem"},
			&cli.BoolFlag{Name: "net", Usage: "sample host.net"},
			&cli.BoolFlag{Name: "gpu", Usage: "sample host.gpu (nvidia-smi)"},
			&cli.StringSliceFlag{Name: "iface", Usage: "record only network interfaces matching `GLOB` (repeatable; e.g. 'eth*')"},
			&cli.StringFlag{Name: "proc-root", Value: hostprobe.DefaultProcRoot, Usage: "read procfs at `DIR`"},
			&cli.StringFlag{Name: "sys-root", Value: hostprobe.DefaultSysRoot, Usage: "read sysfs (cgroups, CPUs online) at `DIR` (with --proc-root: the sys directory beside it)"},
			&cli.StringFlag{Name: "nvidia-smi", Value: hostprobe.DefaultNvidiaSMI, Usage: "run `PROGRAM` for GPU samples (a path, or a name found in PATH)"},
			&cli.DurationFlag{Name: "gpu-timeout", Value: hostprobe.DefaultGPUTimeout, Usage: "kill an nvidia-smi that has not answered after `D`"},
			&cli.StringFlag{Name: "label", Value: "host", Usage: "stream `LABEL` and file name prefix"},
			&cli.BoolFlag{Name: "append", Usage: "add the stream to an existing capture (refused when the file is not a capture)"},
			&cli.BoolFlag{Name: "overwrite", Usage: "replace an existing -o FILE (by default an existing file is never replaced)"},
		}, hostCaptureFlags()...),
		DisableSliceFlagSeparator: true,
		Action:                    hostAction,
	}
}

// hostCaptureFlags are captureFlags with ds host's --flush: 1s by
// default, since the capture is drained after each sample anyway.
func hostCaptureFlags() []cli.Flag {
	flags := captureFlags()
	for _, f := range flags {
		if d, ok := f.(*cli.DurationFlag); ok && d.Name == "flush" {
			d.Value = time.Second
			d.Usage = "flush the capture every `INTERVAL` (a compressed capture; a pipe or FIFO is flushed after each sample)"
		}
	}
	return flags
}

// hostQueue is ds host's capture queue, in frames: the records of about
// 200 ticks, should the capture stall (then records are dropped and
// counted).
const hostQueue = 1024

// hostStopSignals end ds host cleanly; a second one kills it.
var hostStopSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

func hostAction(ctx context.Context, c *cli.Command) error {
	sopts, p, err := hostOptions(c)
	if err != nil {
		return err
	}
	// A sampler needs one CPU: with one P the sampler, the capture and
	// the GPU goroutine hand work to each other on one thread instead of
	// waking others (each wake is a context switch, which is most of what
	// ds host costs on a VM). GOMAXPROCS, when set, wins.
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	copts, err := hostCaptureOptions(c)
	if err != nil {
		return err
	}
	stderr := c.Root().ErrWriter
	warn := hostprobe.NewWarnings(stderr, "", c.Bool("gpu"))
	sopts.OnError = warn.Report
	var cap *capture.Capture
	sopts.AfterTick = func() { cap.Kick() } // set before the sampler runs
	var sampler *hostprobe.Sampler
	copts.Setup = func(e *frames.Endpoint) (err error) {
		sampler, err = hostprobe.NewSampler(p, e.Producer(), sopts)
		return err
	}
	sigs := make(chan os.Signal, 4)
	// SIGPIPE is caught so that -o - into a pipe whose reader went away
	// ends the stream (the capture's EPIPE) instead of killing ds.
	signal.Notify(sigs, syscall.SIGPIPE)
	defer signal.Stop(sigs)
	if cap, err = startCapture(copts, c.Root().Writer, stderr); err != nil {
		return err
	}
	// The stop signals are caught only now: until the capture exists
	// (opening a FIFO waits for its reader) they kill ds, as they would
	// any program; one ignored when ds started (nohup) stays ignored.
	stops := notIgnored(hostStopSignals)
	signal.Notify(sigs, stops...)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	handled := make(chan struct{})
	defer close(handled)
	go stopOnSignal(sigs, stops, cap.Failed(), handled, cancel)
	runErr := hostprobe.RunBounded(runCtx, sampler, p, stderr)
	cancel()
	cerr := cap.Finish()
	stats := sampler.Stats()
	warn.Summary(stats)
	if n := sampler.Dropped(); n > 0 {
		fmt.Fprintf(stderr, "ds: warning: %d host records were dropped: the capture %s could not keep up (ds log shows where)\n", n, cap.Name())
	}
	return hostResult(cap, cerr, runErr, stats, stderr)
}

// hostCaptureOptions reads ds host's capture flags.
func hostCaptureOptions(c *cli.Command) (captureOptions, error) {
	copts, err := captureOptionsFrom(c)
	if err != nil {
		return copts, err
	}
	// A few records per tick: a small queue, whose subscription (twice
	// its size, allocated up front) the garbage collector need not scan.
	copts.Queue = hostQueue
	copts.Label, err = emitLabel(c.String("label"), c.IsSet("label"), "host", c.Root().ErrWriter)
	// The capture is drained after each sample (Kick); its own timer
	// flushes a compressed capture and writes the health records.
	copts.Poll = copts.Flush
	return copts, err
}

// hostResult returns ds host's error from the capture's (cerr) and the
// sampler's (runErr) and the sampler's stats: every error but the last is
// printed on stderr, a line of its own, "ds: " first, as the last one
// (returned) is printed.
func hostResult(cap *capture.Capture, cerr, runErr error, stats []hostprobe.ChannelStats, stderr io.Writer) error {
	var errs []error
	switch {
	case cerr != nil && cap.ToStdout() && errors.Is(cerr, syscall.EPIPE):
		// A sampler's only output is its capture: the reader going away
		// (ds host -o - | ssh … whose connection broke) ends the run,
		// and is not a clean end.
		errs = append(errs, fmt.Errorf("host: the capture's reader went away (stdout: %v); sampling stopped after %d samples", cerr, stats[0].Records))
	case cerr != nil:
		errs = append(errs, fmt.Errorf("capture %s: %w", cap.Name(), cerr))
	}
	if runErr != nil {
		errs = append(errs, fmt.Errorf("host: %w", runErr))
	}
	for _, st := range stats {
		if st.Records > 0 && st.Errors == st.Records {
			errs = append(errs, fmt.Errorf("host: %s: every sample failed (%d; the error records say why)", st.Channel, st.Records))
		}
	}
	for _, e := range errs[:max(len(errs)-1, 0)] {
		fmt.Fprintf(stderr, "ds: %v\n", e)
	}
	if len(errs) > 0 {
		return errs[len(errs)-1]
	}
	return nil
}

// stopOnSignal cancels the run at the first of the stop signals stops
// (SIGPIPE aside) and restores their default action, so that a second
// one kills ds at once, whenever it comes until done is closed: during
// the run, or while the capture ends (a write blocked on a FIFO nobody
// reads). A failed capture cancels the run too.
func stopOnSignal(sigs <-chan os.Signal, stops []os.Signal, failed <-chan struct{}, done <-chan struct{}, cancel func()) {
	for {
		select {
		case sig := <-sigs:
			if sig == syscall.SIGPIPE {
				continue
			}
			signal.Reset(stops...)
			cancel()
			return
		case <-failed:
			cancel()
			failed = nil
		case <-done:
			return
		}
	}
}

// notIgnored returns the signals of sigs that were not ignored when ds
// started: under nohup, SIGHUP must stay ignored, and signal.Notify would
// undo that.
func notIgnored(sigs []os.Signal) []os.Signal {
	var out []os.Signal
	for _, s := range sigs {
		if !signal.Ignored(s) {
			out = append(out, s)
		}
	}
	return out
}

// hostOptions reads and checks ds host's sampling flags: the schedule,
// the channels and the Prober. Without --cpu, --mem, --net or --gpu every
// channel is sampled. --sys-root defaults to /sys, or to the sys
// directory beside --proc-root when that is given (a host's /proc and
// /sys mounted side by side, a fixture tree): never this machine's /sys
// with another machine's /proc.
func hostOptions(c *cli.Command) (hostprobe.SamplerOptions, *hostprobe.Prober, error) {
	var o hostprobe.SamplerOptions
	switch {
	case c.Args().Len() > 0:
		return o, nil, usagef("host: unexpected argument %q", c.Args().First())
	case c.IsSet("count") && c.IsSet("duration"):
		return o, nil, usagef("host: --count and --duration contradict each other; give one")
	case c.IsSet("count") && c.Int("count") < 1:
		return o, nil, usagef("host: --count %d: want at least 1", c.Int("count"))
	case c.IsSet("duration") && c.Duration("duration") <= 0:
		return o, nil, usagef("host: --duration %v: want a positive duration", c.Duration("duration"))
	case c.Duration("interval") < hostprobe.MinInterval:
		return o, nil, usagef("host: --interval %v: want at least %v", c.Duration("interval"), hostprobe.MinInterval)
	case c.Duration("gpu-timeout") <= 0:
		return o, nil, usagef("host: --gpu-timeout must be positive")
	}
	o = hostprobe.SamplerOptions{
		Interval: c.Duration("interval"), Count: c.Int("count"), Duration: c.Duration("duration"),
		Channels: hostprobe.Channels{CPU: c.Bool("cpu"), Mem: c.Bool("mem"), Net: c.Bool("net"), GPU: c.Bool("gpu")},
	}
	p := &hostprobe.Prober{
		ProcRoot: c.String("proc-root"), SysRoot: c.String("sys-root"),
		NvidiaSMI: c.String("nvidia-smi"), GPUTimeout: c.Duration("gpu-timeout"),
		Interfaces: c.StringSlice("iface"),
	}
	if c.IsSet("proc-root") && !c.IsSet("sys-root") {
		p.SysRoot = filepath.Join(filepath.Dir(filepath.Clean(p.ProcRoot)), "sys")
	}
	if fi, err := os.Stat(p.ProcRoot); err != nil || !fi.IsDir() {
		return o, nil, usagef("host: --proc-root %s: not a directory", p.ProcRoot)
	}
	if fi, err := os.Stat(p.SysRoot); c.IsSet("sys-root") && (err != nil || !fi.IsDir()) {
		return o, nil, usagef("host: --sys-root %s: not a directory", p.SysRoot)
	}
	if c.IsSet("iface") && !o.Channels.Net && o.Channels != (hostprobe.Channels{}) {
		return o, nil, usagef("host: --iface selects interfaces of host.net, which is not sampled (add --net)")
	}
	if err := hostprobe.CheckInterfacePatterns(p.Interfaces); err != nil {
		return o, nil, usagef("host: --iface: %v", err)
	}
	return o, p, nil
}

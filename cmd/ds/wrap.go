package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/capture"
	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/hostprobe"
	"github.com/ds-telemetry/ds/pkg/proc"
)

// exitWrapFailure is ds wrap's status when ds itself fails (bad flags, the
// capture cannot be created or written), chosen, as timeout(1) and docker
// run do, outside the codes a shell gives a child: 126 and 127 keep their
// shell meaning (not executable, not found) and 128+N is a signal.
const exitWrapFailure = 125

var forwardedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH}

var one = 1

func wrapCommand() *cli.Command {
	return &cli.Command{
		Name:      "wrap",
		Usage:     "run a command, pass its output through and record it",
		UsageText: "ds wrap [-o FILE|DIR|-] [--label L] [--pty] [-q] [flags] -- CMD [ARGS…]",
		Description: `Runs CMD with stdin passed through and stdout and stderr passed through
to ds's own, and records both, with lifecycle records, into a DSS capture:
proc.<label>.stdout, proc.<label>.stderr (text, bytes verbatim) and
proc.<label>.lifecycle (JSON records: started, signal, exited, …), plus the
writer's own datastream.clock and datastream.health records.

--host INTERVAL samples the host as ds host does (host.cpu, host.mem,
host.net, host.gpu records) into the same stream, from before CMD starts
until it exits, so that a stall in the output sits next to the CPU,
network and GPU samples that explain it: ds log shows them in place, and
ds series host.cpu -f host.total_percent prints them as a series. Host
records go through the same queue as CMD's output, and never wait: should
the capture fall behind, they are dropped (with CMD's output, or alone
under --backpressure, where CMD waits instead), and the loss is shown in
place.
--host-channels cpu,net samples only those (nvidia-smi is run for gpu:
a host without it gets one host.gpu record saying so).

ds wrap exits with CMD's status: its exit code, 128+N when signal N killed
it, 127 when CMD is not found, 126 when it cannot be executed. When ds itself
fails (bad flags, the capture cannot be written) it exits 125.

INT, TERM, HUP, QUIT, USR1, USR2 and WINCH reach CMD; a CMD still running
--grace after TERM, HUP or QUIT is killed. INT (Ctrl-C) is the interactive
stop, which a CMD may handle and carry on after: it is not followed by KILL,
but a second Ctrl-C kills the whole tree at once.

By default the capture never slows CMD down: output waits in a queue of
at most 256 MiB (counting what is being written; a stalled -o FIFO holds
ds at about that much memory), and if the capture cannot keep up for that
long (a child writing faster than the disk takes it, a slow -o FIFO),
output frames are dropped before they get a position, and
every loss is written into the capture where it happened, as a
datastream.health record that ds log shows as "dropped N frames before
position P (queue full)"; ds wrap then warns once on stderr at exit. With
--backpressure CMD is slowed instead, exactly as a pipe or tee(1) would
slow it, and nothing is dropped. Lifecycle, health and clock records are
never dropped.

Order: within one channel (stdout alone, stderr alone) the order is
always exact, byte for byte, whatever the load, and the pass-through and
the capture always show the same order. Between stdout and stderr, ds
keeps the order of the writes it reads one at a time: one loop reads both
pipes, a partial line of one is recorded before data of the other, and
when both pipes hold data an inotify watch on each tells which was written
last. When ds has fallen several writes behind (a shell's echo builtins
write microseconds apart; a busy machine may not run ds for milliseconds),
the events still give the order line by line if each write is one line.
What does not hold: writes of several lines each, next to writes to the
other stream, read after ds fell behind, come out grouped by stream (a
write's lines stay together, but may move past the other stream's); so
may a long burst of writes; and where inotify cannot watch pipes, stdout
comes first. Measured with scripts/order_trials.sh (20 runs of 50 pairs
each) on a 2-core machine at a load average of 11 to 17, with 0, 2 or 4
busy loops added: one-line writes 1 ms apart kept their order in every
run; one-line writes without a pause kept 84-97% of the lines in place;
three-line stdout writes 1 ms apart kept 97.5-99.7% in place (10 to 18 of
20 runs exact), and without a pause 4-10%. For an exact interleave, run
CMD with --pty (both streams share one terminal: one channel) or merge
them in the command (sh -c 'CMD 2>&1': one pipe).
Positions: what ds reads from a pipe at once (complete lines joined for
up to 2 ms, at most 256 KiB) is one frame, so several lines can share one
position; ds log prints each line with its frame's position. A position
orders frames, not lines; the lines of a frame are in the order written.

Process tree: ds is a subreaper for CMD's descendants (and, as PID 1,
reaps every orphan, as tini does). When it escalates to KILL (after
--grace, or a second Ctrl-C) it kills the whole tree CMD started, not only
CMD. A stop signal (INT, TERM, HUP, QUIT) stops the whole job, as
systemd's KillMode=mixed does: CMD gets it; when CMD exits within --grace
of the first one, what remains of its tree (the orphans re-parented to ds,
daemons that forked and called setsid included, and the members of a
session or process group CMD leads, with their descendants) gets the
signal too, and what is still running --grace after the first stop signal
gets KILL (after INT, only when CMD has exited: a CMD that handles Ctrl-C
is not killed for it). Lifecycle signal records name them: source "tree" for the
signal, "escalation" for the KILL, with "descendants" (the pids) and
"count". Processes CMD had started through another program (systemd-run,
a container runtime) are not its descendants and are not stopped; nothing
is when ds itself is killed with KILL. A CMD that exits on its own leaves
its background processes running, as without ds. After CMD exits, ds reads its pipes until they close or stay quiet for
100 ms; a background process still holding them is named in a
drain_timeout lifecycle record. A script without #! runs under /bin/sh, as
sh and env do (a file that looks binary, with a NUL in its first line,
is refused with 126, as bash does). After CMD exits, the pipes are read
for at most 2 s (a background process that keeps writing). Labels are
[a-z0-9_-], lower-cased; other bytes are rewritten to _ and leading or
trailing _ trimmed (said once on stderr); a label that then has no letter
or digit, or starts with -, is refused.

Time: every drain (each --flush interval while output waits) starts with
a datastream.clock record read at that moment, so a frame's time in
ds log --json is at most one --flush interval (and the 2 ms for which
complete lines may wait to be joined into one frame) after it was read.

-o FILE never replaces an existing file: use --overwrite to replace it, or
--append to add a stream to an existing capture. A capture that cannot be
written is reported on stderr at once; CMD keeps running and passing its
output through, and ds wrap exits 125 at the end. On a full file system
the capture file keeps every frame that fit, whole and in order (it ends
at a record boundary, as a capture that did not end; see "Full file
system" in ds-format(5)); what came after is lost.

Captures written to files are zstd-compressed by default (--compress
auto); a capture written to stdout, a pipe or a device is not, unless
asked. Blocks are compressed at zstd's default level (about zstd -3)
while compression keeps up, at its fastest level when it falls behind,
and with S2 (about four times as fast, 1.5 times the size) after that. A
command that writes faster still (cat of a large cached file: about
1 GB/s on two cores) gets the blocks that cannot be compressed in time
stored uncompressed, in the same capture, rather than its output
dropped: such a capture can be two or three times larger than zstd -3 of
the text (see ds-format(5), "Block"). With --backpressure every block is
compressed, and the command runs at the speed of compression.

With -o - the capture goes to stdout and CMD's stdout is not passed through.

-o nats://HOST:PORT/PREFIX (repeatable, beside a file or alone) also
publishes the stream to a NATS JetStream server (see ds nats --help): a
slow or unreachable server costs that output its copies (recorded in the
stream, said at exit), never CMD or the file. A server that refuses the
credentials, has no stream for PREFIX or holds this --node and --life
already is an error before CMD runs. When CMD has exited, ds wrap waits
up to 5 s for the servers to acknowledge what it holds.`,
		Flags: append(append([]cli.Flag{
			outputFlag(),
			&cli.StringFlag{Name: "label", Usage: "process `LABEL` in channel names (default: the command's basename)"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "record only; do not pass the output through"},
			&cli.BoolFlag{Name: "pty", Usage: "run CMD on a pseudo-terminal (stdout and stderr merged, as a terminal shows them)"},
			&cli.BoolFlag{Name: "append", Usage: "add a stream to an existing capture (refused when the file is not a capture)"},
			&cli.BoolFlag{Name: "overwrite", Usage: "replace an existing -o FILE (by default an existing file is never replaced)"},
			&cli.BoolFlag{Name: "backpressure", Usage: "when the capture cannot keep up, slow CMD down (as a pipe would) instead of dropping output"},
			&cli.DurationFlag{Name: "host", Usage: "also sample CPU, memory, network and GPUs every `INTERVAL` into the same stream (as ds host does)"},
			&cli.StringFlag{Name: "host-channels", Value: "cpu,mem,net,gpu", Usage: "with --host: sample these `CHANNELS` (a comma list of cpu, mem, net, gpu)"},
		}, captureFlags()...),
			&cli.IntFlag{Name: "queue", Value: frames.DefaultMuxCapacity, Usage: "the capture queue holds at most `FRAMES` output frames (and 256 MiB of them, written or not)"},
			&cli.DurationFlag{Name: "grace", Value: proc.DefaultGrace, Usage: "time between TERM and KILL (for CMD, and for what remains of its tree after any stop signal)"}),
		// Flags end at the command: ds wrap make -j4 test works without --.
		StopOnNthArg:              &one,
		DisableSliceFlagSeparator: true, // -o nats://h1,h2/ds lists servers
		Action:                    wrapAction,
	}
}

func wrapAction(ctx context.Context, c *cli.Command) (err error) {
	// Every failure of ds itself exits 125 (see exitWrapFailure).
	defer func() {
		var st *statusError
		if err != nil && !errors.As(err, &st) {
			err = &wrapError{err}
		}
	}()
	j, err := readWrapJob(c)
	if err != nil {
		return err
	}
	root := c.Root()
	return j.run(ctx, root.Reader, root.Writer, root.ErrWriter)
}

// wrapJob is what ds wrap's flags ask for: the command, its label, the
// capture and the host samples beside it.
type wrapJob struct {
	argv    []string
	label   string
	opts    captureOptions
	pty     bool
	quiet   bool
	grace   time.Duration
	prober  *hostprobe.Prober
	sampler *hostprobe.Sampler // set by opts.Setup, with --host
}

// readWrapJob reads and checks ds wrap's flags.
func readWrapJob(c *cli.Command) (*wrapJob, error) {
	if c.Duration("grace") <= 0 {
		return nil, usagef("wrap: --grace must be positive")
	}
	opts, err := captureOptionsFrom(c)
	if err != nil {
		return nil, err
	}
	j := &wrapJob{argv: c.Args().Slice(), pty: c.Bool("pty"), quiet: c.Bool("quiet"), grace: c.Duration("grace"), prober: &hostprobe.Prober{}}
	if len(j.argv) == 0 {
		return nil, usagef("wrap: no command given (ds wrap [flags] -- CMD [ARGS…])")
	}
	opts.Backpressure, opts.Queue = c.Bool("backpressure"), c.Int("queue")
	opts.FailNote = "the command goes on and its output is still passed through, but is no longer recorded (ds wrap will exit 125)"
	// A label that breaks proc.LabelRule is refused; one that cleaning
	// rewrites is used rewritten and said once on stderr, whether it was
	// given or derived from the command's name (train.v2 → train_v2).
	label, from := c.String("label"), ""
	if label == "" {
		label, from = proc.CommandBase(j.argv[0]), " (from the command name)"
	}
	given := label
	if label, err = proc.CleanLabel(given); err != nil {
		if from != "" {
			return nil, usagef("wrap: no label from the command name: %v; give one with --label", err)
		}
		return nil, usagef("wrap: --label: %v", err)
	}
	if label != given {
		fmt.Fprintf(c.Root().ErrWriter, "ds: label %q%s is used as %q (labels are %s)\n", given, from, label, proc.LabelChars)
	}
	opts.Label, j.label = label, label
	if c.IsSet("host-channels") && !c.IsSet("host") {
		return nil, usagef("wrap: --host-channels needs --host INTERVAL")
	}
	if c.IsSet("host") {
		if d := c.Duration("host"); d < hostprobe.MinInterval {
			return nil, usagef("wrap: --host %v: want an interval of at least %v", d, hostprobe.MinInterval)
		}
		// The host channels are registered before CMD starts, so that the
		// first segment header names them.
		warn := hostprobe.NewWarnings(c.Root().ErrWriter, "--host: ", false)
		chans, err := hostprobe.ParseChannels(c.String("host-channels"))
		if err != nil {
			return nil, usagef("wrap: --host-channels: %v", err)
		}
		opts.Setup = func(e *frames.Endpoint) (err error) {
			j.sampler, err = hostprobe.NewSampler(j.prober, e.Producer(), hostprobe.SamplerOptions{
				Interval: c.Duration("host"), Channels: chans, OnError: warn.Report,
			})
			return err
		}
	}
	j.opts = opts
	return j, nil
}

// run starts the capture, runs the command (and the host samples) into
// it, ends the capture and returns the command's status.
func (j *wrapJob) run(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) error {
	cap, err := startCapture(j.opts, stdout, stderr)
	if err != nil {
		return err
	}
	// Host samples run beside CMD, from before it starts until it has
	// exited (a last, shorter sample then covers its end).
	hostDone := make(chan error, 1)
	hostCtx, stopHost := context.WithCancel(ctx)
	defer stopHost()
	if j.sampler != nil {
		go func() { hostDone <- hostprobe.RunBounded(hostCtx, j.sampler, j.prober, stderr) }()
	} else {
		hostDone <- nil
	}
	popts := j.procOptions(cap, stdin, stdout, stderr)
	sigs := make(chan os.Signal, 8)
	// SIGPIPE is caught too (proc does not forward it): a reader of ds's
	// stdout that goes away (ds wrap … | head) must not kill ds before the
	// capture is finished; the child still gets its own SIGPIPE.
	signal.Notify(sigs, append(forwardedSignals, syscall.SIGPIPE)...)
	defer signal.Stop(sigs)
	popts.Signals = sigs
	res, runErr := proc.Run(ctx, popts)
	stopHost()
	<-hostDone
	cerr := cap.Finish()
	cap.WarnLoss(stderr, j.opts.Backpressure)
	warnPassThrough(stderr, res)
	if cerr != nil && !(cap.ToStdout() && errors.Is(cerr, syscall.EPIPE)) {
		// (-o - into a pipe whose reader went away is cmd | head: the
		// command's status, nothing said.)
		return fmt.Errorf("capture %s: %w (the command exited with status %d)", cap.Name(), cerr, res.ExitCode)
	}
	var se *proc.StartError
	if runErr != nil && !errors.As(runErr, &se) {
		return runErr
	}
	if runErr != nil {
		fmt.Fprintf(stderr, "ds: %v\n", runErr)
	}
	if res.ExitCode != 0 {
		return &statusError{code: res.ExitCode}
	}
	return nil
}

// procOptions are the options of CMD's run, recording into cap.
func (j *wrapJob) procOptions(cap *capture.Capture, stdin io.Reader, stdout, stderr io.Writer) proc.Options {
	var producer proc.Producer = cap.Endpoint().Producer()
	if j.opts.Backpressure {
		producer = capture.WaitingProducer{Producer: cap.Endpoint().Producer(), Stop: cap.Finishing()}
	}
	popts := proc.Options{
		Argv: j.argv, Label: j.label, Stdin: stdin, Producer: producer,
		PTY: j.pty, Grace: j.grace, Alloc: capture.AllocPayload,
	}
	if !j.quiet {
		popts.Stderr = stderr
		if !cap.ToStdout() {
			popts.Stdout = stdout
		}
	}
	if cap.ToStdout() {
		popts.StdoutGone = cap.StdoutGone
	}
	return popts
}

// warnPassThrough says once on stderr that CMD's output could not all be
// passed through (ds wrap > /dev/full, a closed stdout): without ds the
// command would have seen the error itself. EPIPE is not said: the command
// got its SIGPIPE as without ds.
func warnPassThrough(stderr io.Writer, res proc.Result) {
	for _, ch := range []struct {
		name string
		err  error
	}{{"stdout", res.Stdout.PassThroughErr}, {"stderr", res.Stderr.PassThroughErr}} {
		if ch.err != nil && !errors.Is(ch.err, syscall.EPIPE) {
			fmt.Fprintf(stderr, "ds: warning: passing the command's %s through failed (%v); from then on it was only recorded\n", ch.name, ch.err)
		}
	}
}

// wrapError is a failure of ds wrap itself: exit 125.
type wrapError struct{ err error }

func (e *wrapError) Error() string { return e.err.Error() }
func (e *wrapError) Unwrap() error { return e.err }

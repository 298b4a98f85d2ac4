package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/proc"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/wireformat"
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

ds wrap exits with CMD's status: its exit code, 128+N when signal N killed
it, 127 when CMD is not found, 126 when it cannot be executed. When ds itself
fails (bad flags, the capture cannot be written) it exits 125.

INT, TERM, HUP, QUIT, USR1, USR2 and WINCH reach CMD; a CMD that ignores TERM
is killed after --grace; a second Ctrl-C kills it at once.

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

Order: stdout and stderr are read by one loop and passed through and
recorded in the order ds reads them; a partial line of one is recorded
before data of the other. When both pipes hold data, an inotify watch on
each tells which was written to first, and when ds has fallen several
writes behind (a shell's echo builtins write microseconds apart, and the
kernel lets a writer run on before it wakes the reader), the events give
the order line by line as long as each write is one line. Writes 1 ms or
more apart on an idle machine always keep their order. A long burst of
such writes, several lines in one write next to writes to the other
stream, or a machine so busy that ds does not run for a millisecond can
still come out reordered: two pipes carry no time of their own. With
--pty both streams share one terminal and their order is always exact
(but they are one channel).

Process tree: ds is a subreaper for CMD's descendants (and, as PID 1,
reaps every orphan, as tini does). When it escalates to KILL (after
--grace, or a second Ctrl-C) it kills the whole tree CMD started, not only
CMD. After CMD exits, ds reads its pipes until they close or stay quiet for
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
output through, and ds wrap exits 125 at the end.

Captures written to files are zstd-compressed by default (--compress
auto); a capture written to stdout, a pipe or a device is not, unless
asked. A command that writes faster than zstd compresses on this
machine's cores (cat of a large cached file: about 1 GB/s on two cores)
gets the blocks zstd cannot keep up with stored uncompressed, in the same
capture, rather than its output dropped: such a capture can be several
times larger than zstd -3 of the text. With --backpressure every block is
compressed, and the command runs at the speed of compression.

With -o - the capture goes to stdout and CMD's stdout is not passed through.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "capture `FILE`, directory, or - for stdout (default: LABEL-TIME.dss here)"},
			&cli.StringFlag{Name: "label", Usage: "process `LABEL` in channel names (default: the command's basename)"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "record only; do not pass the output through"},
			&cli.BoolFlag{Name: "pty", Usage: "run CMD on a pseudo-terminal (stdout and stderr merged, as a terminal shows them)"},
			&cli.BoolFlag{Name: "append", Usage: "add a stream to an existing capture (refused when the file is not a capture)"},
			&cli.BoolFlag{Name: "overwrite", Usage: "replace an existing -o FILE (by default an existing file is never replaced)"},
			&cli.BoolFlag{Name: "backpressure", Usage: "when the capture cannot keep up, slow CMD down (as a pipe would) instead of dropping output"},
			&cli.StringFlag{Name: "node", Usage: "stream `NODE` (default: $DS_NODE, else the host name)"},
			&cli.Uint64Flag{Name: "life", Usage: "stream `LIFE` (default: start time in ns since the Unix epoch)"},
			&cli.StringFlag{Name: "origin", Value: "RemoteNode", Usage: "stream `ORIGIN`: RemoteNode, Orchestrator or Bootstrap"},
			&cli.StringFlag{Name: "compress", Value: "auto", Usage: "`CODEC` for the capture: zstd, none, or auto (zstd for files, none for stdout, pipes and devices)"},
			&cli.DurationFlag{Name: "flush", Value: 100 * time.Millisecond, Usage: "drain and flush the capture every `INTERVAL`"},
			&cli.BoolFlag{Name: "sync", Usage: "fsync the capture at every flush"},
			&cli.IntFlag{Name: "queue", Value: frames.DefaultMuxCapacity, Usage: "the capture queue holds at most `FRAMES` output frames (and 256 MiB of them, written or not)"},
			&cli.DurationFlag{Name: "grace", Value: proc.DefaultGrace, Usage: "time between TERM and KILL"},
		},
		// Flags end at the command: ds wrap make -j4 test works without --.
		StopOnNthArg: &one,
		Action:       wrapAction,
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
	if c.Duration("grace") <= 0 {
		return usagef("wrap: --grace must be positive")
	}
	if c.IsSet("node") && c.String("node") == "" {
		return usagef("wrap: --node must not be empty")
	}
	argv := c.Args().Slice()
	if len(argv) == 0 {
		return usagef("wrap: no command given (ds wrap [flags] -- CMD [ARGS…])")
	}
	if c.Bool("append") && c.Bool("overwrite") {
		return usagef("wrap: --append and --overwrite contradict each other")
	}
	opts := captureOptions{
		Output: c.String("output"), Append: c.Bool("append"), Overwrite: c.Bool("overwrite"),
		Backpressure: c.Bool("backpressure"), Node: c.String("node"),
		Life: c.Uint64("life"), Origin: c.String("origin"), Compress: c.String("compress"),
		Flush: c.Duration("flush"), Sync: c.Bool("sync"), Queue: c.Int("queue"),
	}
	// A label that breaks proc.LabelRule is refused; one that cleaning
	// rewrites is used rewritten and said once on stderr, whether it was
	// given or derived from the command's name (train.v2 → train_v2).
	label, from := c.String("label"), ""
	if label == "" {
		label, from = proc.CommandBase(argv[0]), " (from the command name)"
	}
	given := label
	if label, err = proc.CleanLabel(given); err != nil {
		if from != "" {
			return usagef("wrap: no label from the command name: %v; give one with --label", err)
		}
		return usagef("wrap: --label: %v", err)
	}
	if label != given {
		fmt.Fprintf(c.Root().ErrWriter, "ds: label %q%s is used as %q (labels are %s)\n", given, from, label, proc.LabelChars)
	}
	opts.Label = label
	stdout := c.Root().Writer
	cap, err := startCapture(opts, stdout, c.Root().ErrWriter)
	if err != nil {
		return err
	}
	var producer proc.Producer = cap.endpoint.Producer()
	if opts.Backpressure {
		producer = waitingProducer{cap.endpoint.Producer(), cap.stop}
	}
	popts := proc.Options{
		Argv: argv, Label: label, Stdin: c.Root().Reader, Producer: producer,
		PTY: c.Bool("pty"), Grace: c.Duration("grace"), Alloc: allocPayload,
	}
	if !c.Bool("quiet") {
		popts.Stderr = c.Root().ErrWriter
		if !cap.toStdout {
			popts.Stdout = stdout
		}
	}
	if cap.toStdout {
		popts.StdoutGone = cap.gone.Load
	}
	sigs := make(chan os.Signal, 8)
	// SIGPIPE is caught too (proc does not forward it): a reader of ds's
	// stdout that goes away (ds wrap … | head) must not kill ds before the
	// capture is finished; the child still gets its own SIGPIPE.
	signal.Notify(sigs, append(forwardedSignals, syscall.SIGPIPE)...)
	defer signal.Stop(sigs)
	popts.Signals = sigs
	res, runErr := proc.Run(ctx, popts)
	cerr := cap.finish()
	cap.warnLoss(c.Root().ErrWriter)
	warnPassThrough(c.Root().ErrWriter, res)
	if cerr != nil && !(cap.toStdout && errors.Is(cerr, syscall.EPIPE)) {
		// (-o - into a pipe whose reader went away is cmd | head: the
		// command's status, nothing said.)
		return fmt.Errorf("capture %s: %w (the command exited with status %d)", cap.name, cerr, res.ExitCode)
	}
	var se *proc.StartError
	if runErr != nil && !errors.As(runErr, &se) {
		return runErr
	}
	if runErr != nil {
		fmt.Fprintf(c.Root().ErrWriter, "ds: %v\n", runErr)
	}
	if res.ExitCode != 0 {
		return &statusError{code: res.ExitCode}
	}
	return nil
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

// waitingProducer is ds wrap --backpressure's producer: a full queue makes
// the capture reader wait for the next drain (and so the child, once its
// pipe is full) instead of dropping. stop releases a waiter when the
// capture ends.
type waitingProducer struct {
	frames.Producer
	stop <-chan struct{}
}

func (p waitingProducer) SubmitBytes(ch frames.ChannelID, payload []byte) bool {
	return p.SubmitWait(ch, payload, p.stop)
}

// captureOptions are the producer flags shared by ds wrap (and later
// producers): where the capture goes and how the stream is named.
type captureOptions struct {
	Output       string
	Append       bool
	Overwrite    bool // replace an existing -o FILE
	Backpressure bool // wait for room instead of dropping
	Label        string
	Node         string
	Life         uint64
	Origin       string
	Compress     string
	Flush        time.Duration
	Sync         bool
	Queue        int // mux capacity in frames
}

// capture drains an endpoint into a segments.Writer every Flush interval.
type capture struct {
	stderr   io.Writer   // where a write failure is reported at once
	gone     atomic.Bool // -o -: the capture's reader went away (EPIPE)
	busy     int         // pending frames that make the loop drain before the interval
	name     string
	toStdout bool
	file     *os.File // nil for stdout
	endpoint *frames.Endpoint
	sub      *frames.Subscription
	w        *segments.Writer
	sync     bool
	stop     chan struct{}
	done     chan error
	events   []frames.Event
	keeps    keepPolicy
}

// keepPolicy says which frames the segment summaries of a capture keep a
// copy of (segments.WriterOptions.Keep), by channel: the ends of the
// clock (the capture's time span) and of the health records (the
// writer's latest counters), every health record that places a loss, and
// every lifecycle record (how the command started and exited). ds info
// then reads all of that from the summaries. Channel ids are handed out
// from 1, so a slice indexed by id holds the channels' rules.
type keepPolicy []segments.Keep

func (k *keepPolicy) declare(d frames.ChannelDescriptor) {
	var rule segments.Keep
	switch {
	case d.Name == frames.ClockChannel:
		rule = segments.KeepEnds
	case d.Name == frames.HealthChannel:
		rule = segments.KeepEnds | keepLoss
	case strings.HasPrefix(d.Name, "proc.") && strings.HasSuffix(d.Name, ".lifecycle"):
		rule = segments.KeepFrame
	default:
		return
	}
	if d.ID >= 1<<16 {
		return // not a channel ds wrap registers
	}
	for int(d.ID) >= len(*k) {
		*k = append(*k, segments.KeepNone)
	}
	(*k)[d.ID] = rule
}

// keepLoss marks the health channel: its records that carry "loss" are
// kept whole.
const keepLoss segments.Keep = 0x80

func (k keepPolicy) keep(ch frames.ChannelID, payload []byte) segments.Keep {
	if int(ch) >= len(k) {
		return segments.KeepNone
	}
	rule := k[ch]
	if rule&keepLoss != 0 {
		if bytes.Contains(payload, []byte(`"loss":`)) {
			return segments.KeepFrame
		}
		return rule &^ keepLoss
	}
	return rule
}

// newCaptureFile creates a capture named LABEL-YYYYMMDDTHHMMSS.dss in dir,
// never replacing a file: when the name is taken (another run in the same
// second), it tries LABEL-…-2.dss, -3, and so on. The file is created
// exclusively, so two runs can never pick the same name.
func newCaptureFile(dir, label string, now time.Time) (string, *os.File, error) {
	base := filepath.Join(dir, label+"-"+now.Format("20060102T150405"))
	for i := 1; ; i++ {
		name := base + ".dss"
		if i > 1 {
			name = fmt.Sprintf("%s-%d.dss", base, i)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) && i < 1000 {
			continue
		}
		if err != nil {
			return "", nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			return "", nil, fmt.Errorf("lock %s: %w", name, err)
		}
		return name, f, nil
	}
}

func startCapture(o captureOptions, stdout, stderr io.Writer) (*capture, error) {
	now := time.Now()
	node := o.Node
	if node == "" {
		node = os.Getenv("DS_NODE")
	}
	if node == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			h = "localhost"
		}
		node = h
	}
	life := o.Life
	if life == 0 {
		life = uint64(now.UnixNano())
	}
	origin, err := frames.ParseStreamOrigin(o.Origin)
	if err != nil {
		return nil, usagef("--origin: %v", err)
	}
	auto := false
	var comp segments.Compression
	switch o.Compress {
	case "auto", "":
		auto = true
	case "none":
		comp = segments.CompressNone
	case "zstd":
		comp = segments.CompressZstd
	default:
		return nil, usagef("--compress %q: want zstd, none or auto", o.Compress)
	}
	if o.Flush <= 0 {
		return nil, usagef("--flush must be positive")
	}
	c := &capture{stderr: stderr, sync: o.Sync, stop: make(chan struct{}), done: make(chan error, 1)}
	c.busy = min(busyFrames, max(1, o.Queue/2))
	var w io.Writer
	if o.Output == "-" {
		if f, ok := stdout.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
			return nil, usagef("refusing to write a binary capture to a terminal; redirect stdout or use -o FILE")
		}
		c.name, c.toStdout, w = "stdout", true, stdout
	} else {
		generated := o.Output == "" || isDir(o.Output)
		if generated {
			c.name, c.file, err = newCaptureFile(o.Output, o.Label, now)
		} else {
			c.name = o.Output
			c.file, err = openCapture(c.name, o.Append, o.Overwrite)
		}
		if err != nil {
			return nil, err
		}
		w = c.file
		if auto {
			// A file is kept as an artifact: compress it. A FIFO or a
			// device is read live, where zstd's block latency and CPU
			// buy nothing.
			if fi, err := c.file.Stat(); err == nil && fi.Mode().IsRegular() {
				comp = segments.CompressZstd
			}
		}
		if generated {
			fmt.Fprintf(stderr, "ds: capturing to %s\n", c.name)
		}
	}
	label := o.Label
	desc := frames.StreamDescriptor{Stream: frames.StreamID{Node: frames.NodeID(node), Life: frames.Life(life)}, Label: &label, Origin: origin}
	if o.Queue <= 0 || o.Queue > frames.MaxMuxCapacity {
		return nil, usagef("--queue %d: want 1 to %d frames", o.Queue, frames.MaxMuxCapacity)
	}
	// Payloads count against the queue's 256 MiB until written, so that
	// the bound covers the batch being written too: a stalled sink holds
	// ds at about that much memory, whatever the child writes. A soft
	// memory limit keeps the garbage collector from letting the heap grow
	// to twice that (GOMEMLIMIT, when set, wins).
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(frames.DefaultMuxMaxBytes + 128<<20)
	}
	c.endpoint = frames.NewEndpoint(desc, frames.EndpointOptions{MuxCapacity: o.Queue, HoldUntilReleased: true})
	// One tick's batch holds at most the mux capacity of data frames, one
	// loss record after each of them, a clock record and the reserved
	// lane's few records: the capture's queue takes all of that, so it
	// never drops a frame that has a position.
	c.sub = c.endpoint.Subscribe(frames.SubscriptionRequest{}, frames.SubscriberOptions{Name: "capture", Capacity: 2*o.Queue + 4096})
	// The clock heads every drained batch with a reading taken then.
	_, err = frames.NewClock(c.endpoint, nil)
	if err == nil {
		err = c.endpoint.EnableHealth()
	}
	if err != nil {
		c.closeFile()
		return nil, err
	}
	for _, d := range c.endpoint.Catalog() {
		c.keeps.declare(d)
	}
	c.w, err = segments.NewWriter(w, desc, c.endpoint.Catalog(), segments.WriterOptions{
		Compression: comp, WriterID: "ds " + dsVersion(),
		Keep: func(ch frames.ChannelID, payload []byte) segments.Keep { return c.keeps.keep(ch, payload) },
		// By default never wait on zstd, and store blocks plain while the
		// queue (counting the batch being written) is over half full: a
		// capture larger than it could be, rather than output dropped. With --backpressure the child waits
		// for compression instead, and every block is compressed.
		StoreWhenBusy: !o.Backpressure, Busy: func() bool { return c.endpoint.QueueFill() > 0.5 },
	})
	if err != nil {
		c.closeFile()
		return nil, err
	}
	// The first batch, drained now: the clock record of the start and a
	// first health record, so that every capture, even one cut short, says
	// when it began and what its writer accounted (zeros until something
	// is lost). Every later frame is in a batch of its own clock record.
	c.endpoint.SubmitHealth()
	c.endpoint.Tick()
	go c.loop(o.Flush)
	return c, nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// openCapture opens name for writing and takes an exclusive lock on it, so
// that two writers cannot interleave. An existing regular file is never
// replaced unless overwrite is set (asciinema's rule): without it, a new
// file is created exclusively; with appendTo the file must already be a
// capture (its first bytes are checked), or empty. A device, FIFO or pipe is
// written as it is. The file is emptied (overwrite) only once the lock is
// held.
func openCapture(name string, appendTo, overwrite bool) (*os.File, error) {
	flags := os.O_WRONLY | os.O_APPEND
	if fi, err := os.Stat(name); err == nil && fi.Mode().IsRegular() {
		switch {
		case appendTo:
			if err := checkCaptureHead(name); err != nil {
				return nil, err
			}
		case !overwrite:
			return nil, fmt.Errorf("%s exists: not replacing it (use --overwrite to replace it, --append to add a stream to a capture)", name)
		}
	} else if err != nil && errors.Is(err, fs.ErrNotExist) {
		flags |= os.O_CREATE | os.O_EXCL // lose no race with another writer
	}
	f, err := os.OpenFile(name, flags, 0o644)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return f, nil // a device, FIFO or pipe: nothing to lock or empty
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s is being written by another process (locked)", name)
		}
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	if overwrite {
		if err := f.Truncate(0); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

// checkCaptureHead refuses to append to a file that is not a DSS capture:
// its first bytes must be a segment header's magic (an empty file is fine).
func checkCaptureHead(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, len(wireformat.Magic))
	n, err := io.ReadFull(f, head)
	switch {
	case n == 0 && errors.Is(err, io.EOF):
		return nil
	case string(head[:n]) != wireformat.Magic:
		return fmt.Errorf("--append: %s is not a ds capture (its first bytes are not a DSS segment header); not appending to it", name)
	}
	return nil
}

func (c *capture) closeFile() {
	if c.file != nil {
		c.file.Close()
	}
}

// loop ticks the endpoint every interval, and sooner when frames pile up
// (checked every busyPoll), and writes what it drained. Draining early keeps
// few payload buffers in flight, so they are recycled while still in cache
// instead of fresh pages being faulted in. It never blocks a producer: only
// the writer waits on the disk.
//
// Health records: every loss at the mux is written in place by the
// endpoint (EnableHealth); a datastream.health record is also submitted
// after every tick at which a loss counter changed, and once a second
// while output flows. The first write error is reported on stderr at once;
// draining goes on (and discards) so that the child is never held up.
func (c *capture) loop(interval time.Duration) {
	poll := min(busyPoll, interval)
	t := time.NewTicker(poll)
	defer t.Stop()
	var err error
	lastFlush, lastHealth := time.Now(), time.Now()
	last := c.endpoint.Health()
	for {
		select {
		case <-c.stop:
			c.done <- err
			return
		case <-t.C:
		}
		now := time.Now()
		flush := now.Sub(lastFlush) >= interval
		if !flush && c.endpoint.Pending() < c.busy {
			continue
		}
		if flush {
			lastFlush = now
		}
		busy := c.endpoint.Pending() > 0
		c.endpoint.Tick()
		if e := c.write(flush); e != nil && err == nil {
			err = e // sticky in the writer too
			if c.toStdout && errors.Is(e, syscall.EPIPE) {
				// As in cmd | head: the command's stdout now leads into
				// a pipe nobody reads, its next write gets SIGPIPE, and
				// nothing is said.
				c.gone.Store(true)
			} else {
				fmt.Fprintf(c.stderr, "ds: capture %s: %v; the command goes on and its output is still passed through, but is no longer recorded (ds wrap will exit 125)\n", c.name, e)
			}
		}
		h := c.endpoint.Health()
		if lossChanged(h, last) || (busy && now.Sub(lastHealth) >= time.Second) {
			c.endpoint.SubmitHealth()
			lastHealth, last = now, h
		}
	}
}

// lossChanged reports whether a loss counter moved between two health
// readings.
func lossChanged(h, last frames.Health) bool {
	return h.MuxDropped != last.MuxDropped || h.UnknownChannel != last.UnknownChannel ||
		h.Bitbucketed != last.Bitbucketed || h.SubscriberDropped != last.SubscriberDropped
}

// A capture loop drains early, every busyPoll, once busyFrames frames wait
// (or half its queue, when the queue is smaller).
const (
	busyPoll   = 10 * time.Millisecond
	busyFrames = 16
)

// warnLoss prints one warning on stderr when output was dropped: how many
// frames and bytes, and the flag that avoids it.
func (c *capture) warnLoss(stderr io.Writer) {
	h := c.endpoint.Health()
	if h.MuxDropped == 0 && h.SubscriberDropped == 0 {
		return
	}
	fmt.Fprintf(stderr, "ds: warning: the capture %s could not keep up: %d output frames (%d bytes) were dropped at the queue and %d by the writer; ds log shows where. Use --backpressure to slow the command down instead of dropping.\n",
		c.name, h.MuxDropped, h.MuxDroppedBytes, h.SubscriberDropped)
}

// write writes what the subscription holds; with flush, it also flushes
// the writer (and syncs with --sync). Early drains, between flush
// intervals, only write: flushing waits for the zstd blocks in flight, and
// a drain that waited on them every 10 ms would let a fast child fill the
// queue.
func (c *capture) write(flush bool) error {
	c.events = c.sub.DrainInto(c.events[:0])
	var err error
	for _, ev := range c.events {
		switch ev.Kind {
		case frames.EventChannelDeclared:
			c.keeps.declare(*ev.Channel)
			if err == nil {
				err = c.w.DeclareChannel(*ev.Channel)
			}
		case frames.EventFrame:
			if err == nil {
				err = c.w.WriteFrame(frames.Frame{Channel: ev.Frame.Channel.Channel, Position: ev.Frame.Position, Payload: ev.Frame.Payload})
			}
			// Written (copied) or not, the payload is done with: hand
			// its memory back to the queue's bound and reuse it.
			c.endpoint.Release(cap(ev.Frame.Payload))
			releasePayload(ev.Frame.Payload)
		}
	}
	if err != nil {
		clear(c.events)
		return err
	}
	clear(c.events)
	if !flush {
		return nil
	}
	if err := c.w.Flush(); err != nil {
		return err
	}
	if c.sync {
		return c.w.Sync()
	}
	return nil
}

// finish stops the loop, writes the final health and clock records and
// StreamEnded, and closes the file.
func (c *capture) finish() error {
	close(c.stop)
	err := <-c.done
	c.endpoint.Tick()
	if e := c.write(true); err == nil {
		err = e
	}
	// The last batch: a health record after everything, headed by the
	// clock record of the end (read at that drain, so clock records never
	// go back in position order).
	c.endpoint.SubmitHealth()
	c.endpoint.End()
	if e := c.write(true); err == nil {
		err = e
	}
	if e := c.w.Close(); err == nil {
		err = e
	}
	if c.file != nil {
		if c.sync {
			if e := c.file.Sync(); err == nil {
				err = e
			}
		}
		if e := c.file.Close(); err == nil {
			err = e
		}
	}
	return err
}

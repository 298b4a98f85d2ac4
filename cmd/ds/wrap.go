package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/proc"
	"github.com/ds-telemetry/ds/pkg/segments"
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
is killed after --grace; a second Ctrl-C kills it at once. The capture never
slows CMD down: if it cannot keep up, frames are dropped and counted in
datastream.health.

With -o - the capture goes to stdout and CMD's stdout is not passed through.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "capture `FILE`, directory, or - for stdout (default: LABEL-TIME.dss here)"},
			&cli.StringFlag{Name: "label", Usage: "process `LABEL` in channel names (default: the command's basename)"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "record only; do not pass the output through"},
			&cli.BoolFlag{Name: "pty", Usage: "run CMD on a pseudo-terminal (stdout and stderr merged, as a terminal shows them)"},
			&cli.BoolFlag{Name: "append", Usage: "append to an existing capture instead of replacing it"},
			&cli.StringFlag{Name: "node", Usage: "stream `NODE` (default: $DS_NODE, else the host name)"},
			&cli.Uint64Flag{Name: "life", Usage: "stream `LIFE` (default: start time in ns since the Unix epoch)"},
			&cli.StringFlag{Name: "origin", Value: "RemoteNode", Usage: "stream `ORIGIN`: RemoteNode, Orchestrator or Bootstrap"},
			&cli.StringFlag{Name: "compress", Value: "none", Usage: "`CODEC` for the capture: none or zstd"},
			&cli.DurationFlag{Name: "flush", Value: 100 * time.Millisecond, Usage: "drain and flush the capture every `INTERVAL`"},
			&cli.BoolFlag{Name: "sync", Usage: "fsync the capture at every flush"},
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
	opts := captureOptions{
		Output: c.String("output"), Append: c.Bool("append"), Node: c.String("node"),
		Life: c.Uint64("life"), Origin: c.String("origin"), Compress: c.String("compress"),
		Flush: c.Duration("flush"), Sync: c.Bool("sync"),
	}
	label := c.String("label")
	if label == "" {
		label, err = proc.LabelFromCommand(argv[0])
	} else {
		label, err = proc.CleanLabel(label)
	}
	if err != nil {
		return usagef("wrap: %v", err)
	}
	opts.Label = label
	stdout := c.Root().Writer
	cap, err := startCapture(opts, stdout, c.Root().ErrWriter)
	if err != nil {
		return err
	}
	popts := proc.Options{
		Argv: argv, Label: label, Stdin: c.Root().Reader, Producer: cap.endpoint.Producer(),
		PTY: c.Bool("pty"), Grace: c.Duration("grace"), Alloc: allocPayload,
	}
	if !c.Bool("quiet") {
		popts.Stderr = c.Root().ErrWriter
		if !cap.toStdout {
			popts.Stdout = stdout
		}
	}
	sigs := make(chan os.Signal, 8)
	// SIGPIPE is caught too (proc does not forward it): a reader of ds's
	// stdout that goes away (ds wrap … | head) must not kill ds before the
	// capture is finished; the child still gets its own SIGPIPE.
	signal.Notify(sigs, append(forwardedSignals, syscall.SIGPIPE)...)
	defer signal.Stop(sigs)
	popts.Signals = sigs
	res, runErr := proc.Run(ctx, popts)
	if cerr := cap.finish(); cerr != nil {
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

// wrapError is a failure of ds wrap itself: exit 125.
type wrapError struct{ err error }

func (e *wrapError) Error() string { return e.err.Error() }
func (e *wrapError) Unwrap() error { return e.err }

// captureOptions are the producer flags shared by ds wrap (and later
// producers): where the capture goes and how the stream is named.
type captureOptions struct {
	Output   string
	Append   bool
	Label    string
	Node     string
	Life     uint64
	Origin   string
	Compress string
	Flush    time.Duration
	Sync     bool
}

// capture drains an endpoint into a segments.Writer every Flush interval.
type capture struct {
	name     string
	toStdout bool
	file     *os.File // nil for stdout
	endpoint *frames.Endpoint
	clock    *frames.Clock
	sub      *frames.Subscription
	w        *segments.Writer
	sync     bool
	stop     chan struct{}
	done     chan error
	events   []frames.Event
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
	var comp segments.Compression
	switch o.Compress {
	case "none", "":
		comp = segments.CompressNone
	case "zstd":
		comp = segments.CompressZstd
	default:
		return nil, usagef("--compress %q: want none or zstd", o.Compress)
	}
	if o.Flush <= 0 {
		return nil, usagef("--flush must be positive")
	}
	c := &capture{sync: o.Sync, stop: make(chan struct{}), done: make(chan error, 1)}
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
			c.file, err = openCapture(c.name, o.Append)
		}
		if err != nil {
			return nil, err
		}
		w = c.file
		if generated {
			fmt.Fprintf(stderr, "ds: capturing to %s\n", c.name)
		}
	}
	label := o.Label
	desc := frames.StreamDescriptor{Stream: frames.StreamID{Node: frames.NodeID(node), Life: frames.Life(life)}, Label: &label, Origin: origin}
	c.endpoint = frames.NewEndpoint(desc, frames.EndpointOptions{MuxCapacity: frames.DefaultMuxCapacity})
	c.sub = c.endpoint.Subscribe(frames.SubscriptionRequest{}, frames.SubscriberOptions{Name: "capture", Capacity: frames.DefaultMuxCapacity + 1024})
	c.clock, err = frames.NewClock(c.endpoint, nil)
	if err != nil {
		c.closeFile()
		return nil, err
	}
	c.w, err = segments.NewWriter(w, desc, c.endpoint.Catalog(), segments.WriterOptions{Compression: comp, WriterID: "ds " + dsVersion()})
	if err != nil {
		c.closeFile()
		return nil, err
	}
	c.clock.Emit()
	go c.loop(o.Flush)
	return c, nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// openCapture opens name for writing and takes an exclusive lock on it, so
// that two writers cannot interleave; the file is emptied only once the
// lock is held (unless appending).
func openCapture(name string, appendTo bool) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
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
	if !appendTo {
		if err := f.Truncate(0); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

func (c *capture) closeFile() {
	if c.file != nil {
		c.file.Close()
	}
}

// loop ticks the endpoint every interval, and sooner when frames pile up
// (checked every busyPoll), and writes what it drained; it emits a health
// record every second. Draining early keeps few payload buffers in flight,
// so they are recycled while still in cache instead of fresh pages being
// faulted in. It never blocks a producer: only the writer waits on the disk.
func (c *capture) loop(interval time.Duration) {
	poll := min(busyPoll, interval)
	t := time.NewTicker(poll)
	defer t.Stop()
	var err error
	lastTick, lastHealth := time.Now(), time.Now()
	for {
		select {
		case <-c.stop:
			c.done <- err
			return
		case <-t.C:
		}
		now := time.Now()
		if now.Sub(lastTick) < interval && c.endpoint.Pending() < busyFrames {
			continue
		}
		lastTick = now
		busy := c.endpoint.Pending() > 0
		c.clock.Tick()
		if e := c.write(); e != nil && err == nil {
			err = e // sticky in the writer too; keep draining so producers never block
		}
		if busy && now.Sub(lastHealth) >= time.Second {
			// Only when there is news, so an idle stream stays silent; and
			// right after a drain, so that it finds room in the queue.
			c.endpoint.SubmitHealth()
			lastHealth = now
		}
	}
}

// A capture loop drains early, every busyPoll, once busyFrames frames wait.
const (
	busyPoll   = 10 * time.Millisecond
	busyFrames = 16
)

func (c *capture) write() error {
	c.events = c.sub.DrainInto(c.events[:0])
	for _, ev := range c.events {
		var err error
		switch ev.Kind {
		case frames.EventChannelDeclared:
			err = c.w.DeclareChannel(*ev.Channel)
		case frames.EventFrame:
			err = c.w.WriteFrame(frames.Frame{Channel: ev.Frame.Channel.Channel, Position: ev.Frame.Position, Payload: ev.Frame.Payload})
			if err == nil {
				releasePayload(ev.Frame.Payload) // written (copied): reuse it
			}
		}
		if err != nil {
			return err
		}
	}
	clear(c.events)
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
	c.endpoint.Tick() // make room for the last records, whatever piled up
	if e := c.write(); err == nil {
		err = e
	}
	c.endpoint.SubmitHealth()
	c.clock.Emit()
	c.endpoint.End()
	if e := c.write(); err == nil {
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

package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/urfave/cli/v3"
	"golang.org/x/term"

	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/sources"
	"github.com/ds-telemetry/ds/pkg/top"
)

func topCommand() *cli.Command {
	return &cli.Command{
		Name:      "top",
		Usage:     "show a live view of captures or of ds host's output",
		UsageText: "ds top [--interval D] [--once] [--width N] [--height N] [--lines N] [--color WHEN] INPUT…",
		Description: `Shows what the inputs hold, as it comes: per stream with host samples
(ds host, ds wrap --host), a CPU panel (total, user, system and iowait
percent, load, a bar and a sparkline of the total, a bar per core as the
height allows), memory (used percent, bytes used of the total, swap),
network rates (every interface but lo, summed, with a sparkline, then
each interface), each GPU (utilization, memory, temperature, power,
name); then each process ds wrap ran (running with its pid, exited with
its status, killed by a signal); then the last lines of the text
channels, the newest last. A value a record lacks shows as "–", never 0.
Everything taken from the input is escaped.

Inputs are those of ds log (capture files, directories, stores, - for
stdin, nats:// URLs), followed as ds log -f follows them: a capture file
as it grows, stdin and pipes to their end, so that ds host | ds top -
shows the host live.

On a terminal ds top draws in place, on the alternate screen, every
--interval (1s) and when the terminal is resized, at its size (--width and
--height override it); q or Ctrl-C quits, and so do SIGINT and SIGTERM,
restoring the screen. Keys are read from the terminal (/dev/tty when stdin
is the input). When the inputs end, the last frame stays, saying so, until
q. Warnings and damage reports wait until the screen is restored.

When stdout is not a terminal, ds top prints a plain snapshot every
--interval (--width columns, 80 by default; every panel and the last
--lines lines), each followed by an empty line, and a last one when the
inputs end; --once reads the inputs to their end (without following) and
prints one snapshot, for scripts. Colour as --color says (auto: on a
terminal, unless NO_COLOR is set). Exit status 3 when an input is
damaged, 1 when one cannot be read.`,
		Flags: append([]cli.Flag{
			&cli.DurationFlag{Name: "interval", Aliases: []string{"i"}, Value: time.Second, Usage: "redraw every `D`"},
			&cli.BoolFlag{Name: "once", Usage: "read the inputs to their end and print one snapshot"},
			&cli.IntFlag{Name: "width", Usage: "draw `N` columns wide (default: the terminal's, or 80)"},
			&cli.IntFlag{Name: "height", Usage: "draw `N` lines high on a terminal (default: the terminal's)"},
			&cli.IntFlag{Name: "lines", Value: 10, Usage: "show the last `N` text lines in a snapshot (a terminal shows as many as fit)"},
			&cli.StringFlag{Name: "color", Value: "auto", Usage: "colour the view: `WHEN` is auto (when stdout is a terminal, NO_COLOR is unset or empty and TERM is not dumb), always or never"},
		}, natsFlags()...),
		Action: topAction,
	}
}

func topAction(ctx context.Context, c *cli.Command) error {
	limitReadMemory()
	names := c.Args().Slice()
	if len(names) == 0 {
		return usagef("top: no input given (name capture files, or - for stdin)")
	}
	if c.Duration("interval") <= 0 {
		return usagef("top: --interval must be positive")
	}
	if c.Int("width") < 0 || c.Int("height") < 0 || c.Int("lines") < 0 {
		return usagef("top: --width, --height and --lines must not be negative")
	}
	root := c.Root()
	color, err := useColor(c, root.Writer)
	if err != nil {
		return err
	}
	set, err := newSources(c)
	if err != nil {
		return err
	}
	m := top.New(top.Options{})
	sinkFor := func(*sources.Input) segments.Sink { return m }
	opts := top.RenderOptions{Color: color, Location: time.Local, Lines: int(c.Int("lines")), Width: int(c.Int("width"))}
	if opts.Lines == 0 {
		opts.Lines = -1 // --lines 0: none
	}
	if opts.Width == 0 {
		opts.Width = 80
	}
	if c.Bool("once") {
		err := scanInputs(ctx, set, names, root.Reader, root.ErrWriter, false, sinkFor, nil)
		if _, werr := io.WriteString(root.Writer, m.Render(opts)); werr != nil && !isEPIPE(werr) {
			return werr
		}
		return err
	}
	return runTop(ctx, c, m, set, names, opts, sinkFor)
}

// runTop is ds top without --once: it follows the inputs into m while
// top.Run draws it, in place on a terminal or as snapshots.
func runTop(ctx context.Context, c *cli.Command, m *top.Model, set *sources.Set, names []string, opts top.RenderOptions, sinkFor func(*sources.Input) segments.Sink) error {
	root := c.Root()
	ctx, stop := signalContext(ctx)
	defer stop()
	out, _ := root.Writer.(*os.File)
	tty := out != nil && isatty.IsTerminal(out.Fd())
	stderr := root.ErrWriter
	held := &lockedBuffer{}
	if tty {
		stderr = held // shown once the screen is restored
	}
	done := make(chan struct{})
	var scanErr error
	go func() {
		defer close(done)
		scanErr = newInputs(set, root.Reader, nil, stderr).Scan(ctx, names, true, sinkFor, nil)
	}()
	ticker := time.NewTicker(c.Duration("interval"))
	defer ticker.Stop()
	screen := top.Screen{Out: root.Writer, TTY: tty, Render: opts}
	ev := top.Events{Ticks: ticker.C, Done: done}
	w, h := int(c.Int("width")), int(c.Int("height"))
	screen.Size = func() (int, int) { return opts.Width, 0 }
	if tty {
		screen.Size = func() (int, int) {
			tw, th := terminalSize(out)
			return cmp0(w, tw), cmp0(h, th)
		}
		redraw := make(chan struct{}, 1)
		winch := make(chan os.Signal, 1)
		signal.Notify(winch, syscall.SIGWINCH)
		defer signal.Stop(winch)
		go func() {
			for range winch {
				select {
				case redraw <- struct{}{}:
				default:
				}
			}
		}()
		ev.Redraw = redraw
		if keys, restore := keyboard(root.Reader, names); keys != nil {
			defer restore()
			ev.Keys = keys
		}
	}
	err := top.Run(ctx, m, screen, ev)
	stop()
	<-done
	if tty {
		io.Copy(root.ErrWriter, held)
	}
	if err != nil && !isEPIPE(err) {
		return err
	}
	return scanErr
}

// cmp0 is v, or def when v is 0.
func cmp0(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// keyboard returns the terminal ds top reads keys from, in raw mode (so
// that q needs no Enter), and the function that restores it: stdin when it
// is a terminal and not an input, otherwise /dev/tty; nil when there is
// none.
func keyboard(stdin io.Reader, names []string) (io.Reader, func()) {
	var f *os.File
	if in, ok := stdin.(*os.File); ok && !slices.Contains(names, "-") && term.IsTerminal(int(in.Fd())) {
		f = in
	} else if tty, err := os.Open("/dev/tty"); err == nil {
		f = tty
	} else {
		return nil, nil
	}
	state, err := term.MakeRaw(int(f.Fd()))
	if err != nil {
		return nil, nil
	}
	return f, func() {
		term.Restore(int(f.Fd()), state)
		if f != stdin {
			f.Close()
		}
	}
}

// lockedBuffer is a buffer several goroutines write to.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Read(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Read(p)
}

package main

import (
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v3"
	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/play"
	"github.com/ds-telemetry/ds/pkg/views"
)

func playCommand() *cli.Command {
	return &cli.Command{
		Name:      "play",
		Usage:     "replay the text channels of captures at their recorded pace",
		UsageText: "ds play [-s SPEED] [-i SECONDS] [--no-wait] [-c CHANNEL] [FILTERS] INPUT…",
		Description: `Writes the bytes ds log --cat prints (the text channels, or the channels
-c names) to stdout, at the pace they were recorded, as asciinema play
does: between two frames, ds play waits the time between them, divided
by -s (--speed; 2 is twice as fast), and at most -i (--idle-time-limit)
seconds, so that an hour the command sat idle replays in a moment. A
capture made with ds wrap --pty replays its escapes as recorded (colours,
cursor moves, progress bars, and any other escape it sent); one made
without shows its lines, its SGR colours passed and every other control
or escape shown escaped (\x1b[2J), as ds log shows them. A JSON record
channel (-c proc.X.lifecycle) replays one record a line.

A frame's time is its stream's latest datastream.clock reading before it
(within one flush interval of when it was written, as ds log --time
shows), measured by the monotonic clock across a step of the wall clock,
as --time=delta measures: a clock set back mid-capture is no pause. A
frame before any clock reading is written at once. --no-wait (or -s 0)
writes everything at once: ds play --no-wait is ds log --cat.

When stdin is a terminal, keys control the replay: space pauses and
resumes, . (while paused) writes the next frame, q or ctrl-c quits. The
terminal's mode is restored on exit. Otherwise ds play only writes at
pace, until the end or until interrupted.

` + playSelectionHelp + `

` + inputsHelp + `

Exit status 3 when an input is damaged: everything readable is played
first; 130 when interrupted (SIGINT, SIGTERM, q or ctrl-c).`,
		Flags: append([]cli.Flag{
			&cli.FloatFlag{Name: "speed", Aliases: []string{"s"}, Value: 1, Usage: "replay `SPEED` times as fast, 0.001 to 1e6 (0: at once)"},
			&cli.StringFlag{Name: "idle-time-limit", Aliases: []string{"i"}, Usage: "wait at most `SECONDS` between two frames (2, 0.5, or 1m; 0: no limit)"},
			&cli.BoolFlag{Name: "no-wait", Usage: "write everything at once (as -s 0)"},
			&cli.StringSliceFlag{Name: "channel", Aliases: []string{"c"}, Usage: "replay only `CHANNEL` (exact name, or a pattern whose * matches anything: proc.*, proc.*.stdout); repeatable"},
		}, append(withoutFlag(selectionFlags(), "grep"), natsFlags()...)...),
		Action: playAction,
	}
}

func playAction(ctx context.Context, c *cli.Command) error {
	limitReadMemory()
	set, err := newSources(c)
	if err != nil {
		return err
	}
	opts := play.Options{Speed: c.Float("speed")}
	if !(opts.Speed == 0 || opts.Speed >= 1e-3 && opts.Speed <= 1e6) {
		return usagef("play: -s %v: want a speed from 0.001 to 1e6 (0: at once)", opts.Speed)
	}
	if c.Bool("no-wait") {
		opts.Speed = 0
	}
	if v := c.String("idle-time-limit"); v != "" {
		if opts.IdleLimit, err = parseSeconds(v); err != nil {
			return usagef("play: -i %s: %v", v, err)
		}
	}
	sel, err := readSelection(c)
	if err != nil {
		return err
	}
	if c.Args().Len() == 0 {
		return usagef("play: name a capture (- for stdin)")
	}
	root := c.Root()
	ctx, stop := signalContext(ctx)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	opts.Done = ctx.Done()
	if keys, restore := terminalKeys(root.Reader); keys != nil {
		defer restore()
		opts.Keys = keys
	}
	pl := play.New(root.Writer, opts)
	var playErr error
	var buf []byte
	lo := views.LogOptions{Format: views.FormatCat, Select: sel, CatFrames: func(ns int64, b []byte, ch views.CatChannel) {
		if playErr != nil {
			return
		}
		if !ch.Terminal {
			// Not a --pty capture's: nothing of it may drive the
			// terminal but colours; a JSON record ends its line.
			buf = views.AppendTerminalLines(buf[:0], b)
			if ch.Kind == frames.KindJSONRecord && (len(buf) == 0 || buf[len(buf)-1] != '\n') {
				buf = append(buf, '\n')
			}
			b = buf
		}
		if playErr = pl.Frame(ns, b); playErr != nil {
			cancel() // the read stops
		}
	}}
	_, err = newInputs(set, root.Reader, root.Writer, root.ErrWriter).Log(ctx, c.Args().Slice(), lo, false)
	switch {
	case errors.Is(playErr, play.ErrQuit):
		return &statusError{code: 130}
	case playErr != nil:
		return writeErr(playErr)
	}
	return err
}

// parseSeconds parses -i: seconds (2, 0.5) or a duration (1m, 500ms).
func parseSeconds(v string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 {
		return time.Duration(f * float64(time.Second)), nil
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 && !strings.HasPrefix(v, "-") {
		return d, nil
	}
	return 0, errors.New("want seconds (2, 0.5) or a duration (1m), 0 or more")
}

// terminalKeys returns the keys typed at stdin when it is a terminal, put
// in cbreak mode (each key as it is typed, not echoed; output and ctrl-c
// as usual, so a capture's newlines still return the carriage, and an
// interrupt still stops ds), and the function restoring its mode; nil
// when stdin is no terminal.
func terminalKeys(stdin any) (<-chan byte, func()) {
	f, ok := stdin.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil, nil
	}
	fd := int(f.Fd())
	old, err := term.GetState(fd)
	if err != nil {
		return nil, nil
	}
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, nil
	}
	t.Lflag &^= unix.ICANON | unix.ECHO
	t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, t); err != nil {
		return nil, nil
	}
	keys := make(chan byte, 16)
	go func() {
		defer close(keys)
		b := make([]byte, 1)
		for {
			if n, err := f.Read(b); n == 0 || err != nil {
				return
			}
			keys <- b[0]
		}
	}()
	return keys, func() { _ = term.Restore(fd, old) }
}

// playSelectionHelp is selectionHelp without -g, which ds play does not
// take: it replays frames whole, and a line may span several.
var playSelectionHelp = strings.Replace(selectionHelp, `-g/--grep RE (a Go regular expression matched against each line as shown,
joined across frames, or a record's JSON; case-insensitive unless RE holds
an upper-case letter, as journalctl does), --positions A-B.`, `--positions A-B (ds play takes no -g: it replays frames
whole, and a line may span several).`, 1)

// withoutFlag returns flags less the one named name.
func withoutFlag(flags []cli.Flag, name string) []cli.Flag {
	var out []cli.Flag
	for _, f := range flags {
		if !slices.Contains(f.Names(), name) {
			out = append(out, f)
		}
	}
	return out
}

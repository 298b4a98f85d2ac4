package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/views"
)

func tailCommand() *cli.Command {
	return &cli.Command{
		Name:      "tail",
		Usage:     "print the last lines of captures",
		UsageText: "ds tail [-n N] [--cat|--json] [-c CHANNEL]… [--all] INPUT…",
		Description: `Prints the last N lines (10 by default) that ds log would print for each
input, in the same formats, with the same channel selection.

A capture file is read from its end: ds tail finds the last segments from
the summaries that end them (ds-format(5), "Reading from the end") and
reads only those, more of them only while they hold too few lines, so
that the tail of a 10 GiB capture costs what the tail of a small one
does. Segments without a summary (a writer that was killed, an older
writer, a damaged summary) are found by their header and read. Stdin and
pipes are read to their end, keeping only the last N lines.

With several inputs, each one's lines follow a "==> NAME <==" line, as
tail(1) prints them. Without an input, ds tail reads stdin. -n 0 prints
nothing. A last line without a newline counts as a line.

Exit status 3 when what was read of an input is damaged.`,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "lines", Aliases: []string{"n"}, Value: views.DefaultTailLines, Usage: "print the last `N` lines"},
			&cli.BoolFlag{Name: "cat", Usage: "print payload bytes only, byte-exact (as ds log --cat)"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object per frame, gap, drop and damaged range"},
			&cli.StringSliceFlag{Name: "channel", Aliases: []string{"c"}, Usage: "show only `CHANNEL` (exact name, or a prefix ending in .*); repeatable"},
			&cli.BoolFlag{Name: "all", Usage: "also show the writer's own datastream.* channels"},
		},
		Action: tailAction,
	}
}

func tailAction(ctx context.Context, c *cli.Command) error {
	limitReadMemory()
	n := c.Int("lines")
	if n < 0 {
		return usagef("tail: -n %d: want a number of lines, 0 or more", n)
	}
	opts := views.TailOptions{Lines: int(n), Log: views.LogOptions{
		Channels: channelFilters(c.StringSlice("channel")),
		All:      c.Bool("all"),
	}}
	switch {
	case c.Bool("cat") && c.Bool("json"):
		return usagef("tail: --cat and --json cannot be combined")
	case c.Bool("cat"):
		opts.Log.Format = views.FormatCat
	case c.Bool("json"):
		opts.Log.Format = views.FormatJSON
	}
	names := c.Args().Slice()
	if len(names) == 0 {
		names = []string{"-"} // as tail(1): stdin
	}
	root := c.Root()
	var firstErr error
	damaged := false
	for i, name := range names {
		if len(names) > 1 {
			sep := "\n"
			if i == 0 {
				sep = ""
			}
			if _, err := fmt.Fprintf(root.Writer, "%s==> %s <==\n", sep, name); err != nil {
				return writeErr(err)
			}
		}
		var d bool
		var err error
		if n == 0 {
			d, err = false, checkInput(name, root.Reader) // as tail(1): nothing to print
		} else {
			d, err = tailOne(ctx, name, root.Reader, root.Writer, root.ErrWriter, opts)
		}
		damaged = damaged || d
		if err != nil {
			if isEPIPE(err) {
				return nil
			}
			fmt.Fprintf(root.ErrWriter, "ds: %v\n", err)
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	if firstErr != nil {
		return &statusError{code: exitFailure}
	}
	if damaged {
		return &statusError{code: exitCorrupt}
	}
	return nil
}

// checkInput reports an input that cannot be opened.
func checkInput(name string, stdin io.Reader) error {
	in, err := openInput(name, stdin)
	if err == nil {
		in.close()
	}
	return err
}

// tailOne prints the tail of one input and says whether what it read was
// damaged.
func tailOne(ctx context.Context, name string, stdin io.Reader, stdout, stderr io.Writer, opts views.TailOptions) (bool, error) {
	in, err := openInput(name, stdin)
	if err != nil {
		return false, err
	}
	defer in.close()
	if in.file == nil || in.size < 0 {
		// A pipe: read it all, keeping the last lines.
		return tailStream(ctx, in, stdout, stderr, opts)
	}
	opts.File, opts.Live = name, in.live
	stats, err := views.Tail(ctx, in.file, in.size, opts, stdout)
	rep := &damageReporter{in: in, stderr: stderr}
	for _, d := range stats.Damage {
		rep.report(d.Offset, d.End, d.Torn, d.Err)
	}
	if err != nil {
		return rep.damaged, fmt.Errorf("%s: %w", name, err)
	}
	return rep.damaged, nil
}

// tailStream is tail of an input that cannot be read from its end.
func tailStream(ctx context.Context, in *input, stdout, stderr io.Writer, opts views.TailOptions) (bool, error) {
	ring := views.NewLineRing(opts.Lines)
	p := views.NewPrinter(ring, opts.Log)
	sink := views.NewLogSink(p, opts.Log.Window)
	sink.File = in.name
	rep := &damageReporter{in: in, stderr: stderr, Sink: sink}
	err := views.Scan(ctx, in.r, views.ScanOptions{}, rep)
	sink.A.Flush()
	if cerr := p.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return rep.damaged, fmt.Errorf("%s: %w", in.name, err)
	}
	return rep.damaged, ring.WriteLines(stdout)
}

// writeErr turns a write error into the command's error: a closed pipe is
// not one.
func writeErr(err error) error {
	if isEPIPE(err) {
		return nil
	}
	return err
}

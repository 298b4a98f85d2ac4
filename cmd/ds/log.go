package main

import (
	"context"

	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/views"
)

func logCommand() *cli.Command {
	return &cli.Command{
		Name:      "log",
		Usage:     "print the merged log of captures",
		UsageText: "ds log [--cat|--json] [-c CHANNEL]… [--all] INPUT…",
		Description: `Prints every frame of the inputs (capture files, or - for stdin) in
position order, one line per text line:

   [STREAM]  POSITION  CHANNEL  TEXT

A text line split across frames is shown once, whole, at the position where
it started, when it is complete: lines of other channels completed in the
meantime come first, and a line its stream never finished is printed when
the stream ends. A line longer than 1 MiB is printed in 1 MiB pieces. CRLF
ends a line; a line with bare CRs (a progress bar) shows its last segment,
as a terminal would (--cr-segments shows each). JSON records
are printed compactly; bytes that are not text are escaped as \xNN. Gaps
(positions that never arrived) and damaged byte ranges are shown in place.
The stream column appears when the inputs hold more than one stream.

The writer's own channels (datastream.clock, datastream.health) are hidden
unless --all is given or -c names them.

--cat prints payload bytes only, byte-exact: by default the text channels,
with -c the channels named (records as written, with no separator). --json prints one JSON object per frame, gap and
damaged range; a text payload that is not UTF-8 carries "bytes_b64" instead
of "text", a record "record", and "time" (RFC 3339) is the stream's latest
datastream.clock reading at that frame.

Exit status 3 when an input is damaged: everything readable is printed
first. A capture that ds wrap is still writing is read to its current end.`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "cat", Usage: "print payload bytes only, byte-exact"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object per frame, gap and damaged range"},
			&cli.StringSliceFlag{Name: "channel", Aliases: []string{"c"}, Usage: "show only `CHANNEL` (exact name, or a prefix ending in .*); repeatable"},
			&cli.BoolFlag{Name: "all", Usage: "also show the writer's own datastream.* channels"},
			&cli.BoolFlag{Name: "cr-segments", Usage: "show every CR-separated segment of a text line"},
		},
		Action: logAction,
	}
}

func logAction(ctx context.Context, c *cli.Command) error {
	opts := views.LogOptions{
		Channels:   channelFilters(c.StringSlice("channel")),
		All:        c.Bool("all"),
		CRSegments: c.Bool("cr-segments"),
	}
	switch {
	case c.Bool("cat") && c.Bool("json"):
		return usagef("log: --cat and --json cannot be combined")
	case c.Bool("cat"):
		opts.Format = views.FormatCat
	case c.Bool("json"):
		opts.Format = views.FormatJSON
	}
	root := c.Root()
	p := views.NewPrinter(root.Writer, opts)
	sink := views.NewLogSink(p, 0)
	err := scanInputs(ctx, c.Args().Slice(), root.Reader, root.ErrWriter, false, func(in *input) views.Sink {
		sink.File = in.name
		return sink
	}, nil)
	sink.A.Flush()
	if cerr := p.Close(); cerr != nil && err == nil {
		if isEPIPE(cerr) {
			return nil
		}
		return cerr
	}
	return err
}

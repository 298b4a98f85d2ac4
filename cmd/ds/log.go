package main

import (
	"context"
	"fmt"
	"io"
	"strings"

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
it started, when it is complete, unless something of another channel of
its stream (a line, a record, a gap, a drop) comes after its start: that is
never printed before it, so the line is printed as it is, unfinished, and
the rest of it, if not empty, becomes a line of its own. A line its stream
never finished is printed, as it is, when the stream ends. A line longer
than 1 MiB is printed in 1 MiB pieces. CRLF ends a line; a line with bare
CRs (a progress bar) shows its last segment, as a terminal would
(--cr-segments shows each). JSON records are printed compactly; bytes that
are not text are escaped as \xNN. The stream column appears when the inputs
hold more than one stream.

Losses are shown in place: gaps (positions assigned but never stored),
drops (submissions the writer refused, a full queue or a stream that had
ended, which never got a position), and damaged byte ranges:

   ~  gap      positions 3–5 missing (3 frames)
   ~  dropped  4 frames before position 9 (queue full)

A drop is read from the datastream.health record at that position; with
records of older writers, which carry only counters, it is shown at the
first record whose mux_dropped counter grew. Gaps and drops concern the
whole stream, so they are shown whatever -c selects.

The writer's own channels (datastream.clock, datastream.health) are hidden
unless --all is given or -c names them.

--cat prints payload bytes only, byte-exact: by default the text channels,
with -c the channels named (records as written, with no separator). Gaps
and drops are not in its output: it ends with one warning on stderr when
there were any.

--json prints one JSON object per frame, gap, drop and damaged range. A
text payload that is not UTF-8 carries "bytes_b64" instead of "text", a
record "record". "time" (RFC 3339) is the stream's latest datastream.clock
reading before that frame: the writer records each drain tick's clock
reading before the frames the tick takes, so it is an upper bound on when
the frame arrived, within one flush interval. A gap is
{"gap":{"from":F,"to":T,"count":N}}, a drop
{"dropped":{"before":P,"frames":N,"bytes":B,"reason":"queue full"}} (bytes
null when the record did not say), each after "stream", "node", "life".

Exit status 3 when an input is damaged: everything readable is printed
first. A capture that ds wrap is still writing is read to its current end.`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "cat", Usage: "print payload bytes only, byte-exact"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object per frame, gap, drop and damaged range"},
			&cli.StringSliceFlag{Name: "channel", Aliases: []string{"c"}, Usage: "show only `CHANNEL` (exact name, or a prefix ending in .*); repeatable"},
			&cli.BoolFlag{Name: "all", Usage: "also show the writer's own datastream.* channels"},
			&cli.BoolFlag{Name: "cr-segments", Usage: "show every CR-separated segment of a text line"},
		},
		Action: logAction,
	}
}

func logAction(ctx context.Context, c *cli.Command) error {
	limitReadMemory()
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
	if l := p.Losses(); opts.Format == views.FormatCat && l.Gaps+l.Drops > 0 {
		warnCatLosses(root.ErrWriter, l)
	}
	return err
}

// warnCatLosses says, in one line, that --cat output lacks frames that
// ds log would have shown as gaps and drops.
func warnCatLosses(w io.Writer, l views.Losses) {
	var parts []string
	if l.Gaps > 0 {
		parts = append(parts, fmt.Sprintf("%s (%s missing)", lossCount(l.Gaps, "gap"), lossCount(l.MissingFrames, "frame")))
	}
	if l.Drops > 0 {
		parts = append(parts, fmt.Sprintf("%s dropped at the writer's queue in %s", lossCount(l.DroppedFrames, "frame"), lossCount(l.Drops, "place")))
	}
	fmt.Fprintf(w, "ds: warning: output incomplete: %s; ds log shows where\n", strings.Join(parts, ", "))
}

func lossCount(n uint64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/sources"
	"github.com/ds-telemetry/ds/pkg/textfmt"
	"github.com/ds-telemetry/ds/pkg/views"
)

func seriesCommand() *cli.Command {
	return &cli.Command{
		Name:      "series",
		Usage:     "print a JSON record channel as a time series",
		UsageText: "ds series CHANNEL [--field PATH]… [-o json|csv|tsv|svg] [--plot] [--rate] INPUT…",
		Description: `Prints one row per frame of CHANNEL (an exact name, or a pattern whose
* matches anything: host.*, proc.*.lifecycle) whose payload is JSON: a JsonRecord channel, or any channel whose
frames are JSON values. Rows come in position order per stream; each has
the stream (node#life), the position, the channel, the time and the
value of each --field, a gjson path (github.com/tidwall/gjson):

   host.total_percent                    a member
   gpus.#.memory_used_mib                an array: that member of each element
   interfaces.#(name=="eth0").rx_bytes   the element whose name is eth0

Without --field a row holds the whole record. A path the record lacks
has no value (null, an empty cell); members not asked for are ignored.

The time is the stream's latest datastream.clock reading at or before the
frame: the writer records each drain tick's clock reading before the
frames that tick takes, so it is an upper bound on when the frame
arrived, within one flush interval. Frames before the first reading have
no time.

-o json (the default) prints one object per row, every key always there:

   {"stream":"n1#7","node":"n1","life":7,"position":2,"channel":"host.cpu",
    "time":"2024-11-30T08:00:00.1Z","time_unix_ns":1732953600100000000,
    "values":{"host.total_percent":12.5}}

"time" and "time_unix_ns" are null without a clock reading; "values" maps
each path, as given, to its value; without --field "record" holds the
record instead. A frame that arrived after its position had been
declared part of a gap also has "late":true (and no time).

-o csv prints a header row (stream,position,channel,time, then each PATH,
or record) and one row per frame, quoted as RFC 4180 wants: strings as
their text, numbers and booleans as in JSON, null and missing values
empty, arrays and objects as compact JSON. -o tsv is the same with tabs,
unquoted: a tab, newline, CR or backslash in a cell is written \t, \n, \r
or \\. The header comes with the first row; with no row it is printed
alone, unless ds series fails (a CHANNEL that matches no channel): then
stdout is empty.

--rate reads each field as a cumulative counter and prints its increase
per second of clock time since the previous sample of the same series
(one field of one channel of one stream: a new life starts afresh):
(v[i] - v[i-1]) / (t[i] - t[i-1]). The rate is null (an empty cell),
never negative or made up, for the first sample; when the previous
sample may not be the previous one (a gap or a drop in the stream since
it, or the channel's previous frame was not JSON); when either value is
missing or not a number, or the counter went down (a reset); when either
time is unknown or the time did not advance. An array (a path with #) is
rated element by element, pairing elements by index, null throughout
when the lengths differ; select one element by key in the path to follow
it whatever the order. --rate needs --field.

ds host's records (host.cpu, host.mem, host.net, host.gpu) carry their
own rates (rx_bytes_per_s, …, over interval_ms, with counter wraps,
resets and new interface incarnations handled) and the time each was
read (sample_unix_ms): prefer them to --rate, whose time is the writer's
clock, at most one flush interval late.

--plot draws the fields instead, as a line chart for a terminal: one
chart of every field (each element of an array field, each channel and
each stream its own line, named in the legend), in braille dots (2×4
per cell), its y axis labelled with its top, middle and bottom values
(with their unit when the field names say it: _percent, _bytes,
_bytes_per_s, _mib, _c, _w, _ms), its x axis with times (local time;
sample numbers when no row has a time: rows without a time are left
out, and counted on stderr, when some have one). It is --width columns
wide (at least 20) and --height lines high (at least 6): by default the terminal's size (stdout's),
80×24 when stdout is no terminal. Each column shows the smallest and the
largest value of the rows that fall in it, so any number of rows draws
in one pass; a null or missing value breaks the line (it is no zero).
The lines are coloured as --color says (auto: on a terminal, unless
NO_COLOR is set); without colour, a chart of several lines draws each
with a mark of its own (* + x o # @ % =, as in the legend) instead of
braille dots, which would make them alike. -o svg writes the same chart as a standalone SVG
image (--width×--height px, by default 800×300, at least 200×120): one polyline per
unbroken run of each line, axes, labels and legend, every name escaped.
Both need --field.

Frames of CHANNEL that are not JSON are skipped and counted: one warning
per channel on stderr at the end. A CHANNEL that matches no channel of
the inputs is an error (exit status 1), reported with the channels there
are. Exit status 3 when an input is damaged: every readable row is
printed first.`,
		Flags: append([]cli.Flag{
			&cli.StringSliceFlag{Name: "field", Aliases: []string{"f"}, Usage: "print the value at gjson `PATH`; repeatable, in the order given"},
			&cli.StringFlag{Name: "format", Aliases: []string{"o"}, Value: "json", Usage: "output `FORMAT`: json (NDJSON), csv, tsv or svg (a chart)"},
			&cli.BoolFlag{Name: "rate", Usage: "print each field as a per-second rate of a cumulative counter"},
			&cli.BoolFlag{Name: "plot", Usage: "draw the fields as a line chart for the terminal"},
			&cli.IntFlag{Name: "width", Usage: "the chart's width: `N` columns (--plot; default the terminal's, or 80) or px (-o svg; default 800)"},
			&cli.IntFlag{Name: "height", Usage: "the chart's height: `N` lines (--plot; default the terminal's, or 24) or px (-o svg; default 300)"},
			&cli.StringFlag{Name: "color", Value: "auto", Usage: "colour the chart's lines (--plot): `WHEN` is auto (when stdout is a terminal, NO_COLOR is unset or empty and TERM is not dumb), always or never"},
		}, append(streamFlags(), natsFlags()...)...),
		DisableSliceFlagSeparator: true,
		Action:                    seriesAction,
	}
}

func seriesAction(ctx context.Context, c *cli.Command) error {
	limitReadMemory()
	set, err := newSources(c)
	if err != nil {
		return err
	}
	args := c.Args().Slice()
	if len(args) == 0 {
		return usagef("series: no channel given")
	}
	chart, err := seriesChartFrom(c)
	if err != nil {
		return err
	}
	format := views.SeriesJSON
	if chart == nil {
		if format, err = views.ParseSeriesFormat(c.String("format")); err != nil {
			return usagef("series: -o %q: want json, csv, tsv or svg", c.String("format"))
		}
	}
	if args[0] == "" {
		return usagef("series: empty channel name")
	}
	if len(args) == 1 {
		return usagef("series: no input given (name capture files after CHANNEL, or - for stdin)")
	}
	opts := views.SeriesOptions{
		Channels: []frames.ChannelFilter{frames.ParseChannelPattern(args[0])},
		Fields:   c.StringSlice("field"),
		Format:   format,
		Rate:     c.Bool("rate"),
	}
	ss, err := readStreamSelection(c)
	if err != nil {
		return err
	}
	root := c.Root()
	if chart != nil {
		opts.Points = chart.collect(opts.Fields, opts.Rate).Point
	}
	s, err := views.NewSeries(root.Writer, opts)
	if err != nil {
		return usagef("%v", err)
	}
	err = scanInputs(ctx, set, args[1:], root.Reader, root.ErrWriter, false, func(*sources.Input) segments.Sink { return ss.wrap(s) }, nil)
	ss.warn(root.ErrWriter)
	if cerr := s.Close(); cerr != nil {
		if isEPIPE(cerr) {
			return nil
		}
		if err == nil {
			return cerr
		}
	}
	views.WarnCopies(root.ErrWriter, s.Copies(), "used")
	st := s.Stats()
	for _, sk := range st.Skipped {
		fmt.Fprintf(root.ErrWriter, "ds: series: %s of %s not JSON, skipped\n", textfmt.Nouns(sk.Frames, "frame"), textfmt.Escape(sk.Channel))
	}
	if len(st.Unmatched) > 0 && onlyDamaged(err) {
		// Nothing to print was asked for by name: a failure, which goes
		// before damage (exit 1 over 3).
		return noMatch("series", st.Unmatched[0], st.Channels, st.ChannelsMore)
	}
	if chart != nil {
		if werr := chart.draw(root.Writer, root.ErrWriter, args[0]); werr != nil && !isEPIPE(werr) {
			return werr
		}
	}
	return err
}

// onlyDamaged reports whether scanInputs read every input (damaged or
// not), so that what the inputs hold is known.
func onlyDamaged(err error) bool {
	var st *sources.StatusError
	return err == nil || errors.As(err, &st) && st.Status == sources.Damaged
}

// noMatch is the error of a channel pattern that matched no channel,
// listing the channels there are (each quoted if it could drive a
// terminal: names come from the input).
func noMatch(cmd, pattern string, channels []string, more bool) error {
	list := "none"
	if len(channels) > 0 {
		quoted := make([]string, len(channels))
		for i, c := range channels {
			quoted[i] = textfmt.Quote(c) // names come from the capture
		}
		list = strings.Join(quoted, ", ")
		if more {
			list += ", …"
		}
	}
	return fmt.Errorf("%s: no channel matches %q (channels: %s)", cmd, pattern, list)
}

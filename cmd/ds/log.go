package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/viewer"
	"github.com/ds-telemetry/ds/pkg/views"
)

func logCommand() *cli.Command {
	return &cli.Command{
		Name:      "log",
		Usage:     "print the merged log of captures",
		UsageText: "ds log [-n N] [-r] [--cat|--json[=frames|pretty]] [--time[=MODE]] [FILTERS] INPUT…",
		Description: `Prints every frame of the inputs (capture files, or - for stdin) in
position order, one line per text line:

   [STREAM]  POSITION  CHANNEL  TEXT

A text line split across frames is shown once, whole, at the position where
it started, when it is complete, unless something of another channel of
its stream (a line, a record, a gap, a drop) comes after its start: that is
never printed before it, so the line is printed as it is, unfinished, and
the rest of it, if not empty, becomes a line of its own. A line its stream
never finished is printed, as it is, when the stream ends. A line longer
than 1 MiB is printed in 1 MiB pieces. A row printed before its line's
newline ends with "…" (printf 'no newline' shows as "no newline…"), and
the row that continues such a line starts with "…", as editors mark
wrapped lines; what follows a CR overwrites rather than continues, so it
has no leading mark. The marks are ds's: -g does not match them, --color
dims them, --cat has none, and --json says "partial" and "continues".
CRLF ends a line; a line with bare CRs (a progress bar) shows its last
segment, as a terminal would (--cr-segments shows each). JSON records are
printed compactly; bytes that are not text are escaped as \xNN; so are
control sequences other than colour (which --color shows on a terminal)
and bidi controls, so a capture never drives the terminal.

When the inputs hold more than one stream (the streams --node, --stream
and --origin select), a stream column leads every line: NODE when no two
streams share a node, NODE#LIFE otherwise. For files it is known from
their segment headers before the first line; a pipe (-) shows it from the
first line of its second stream on.

Losses are shown in place: gaps (positions assigned but never stored),
drops (submissions the writer refused, a full queue or a stream that had
ended, which never got a position), transport losses (positions an output
of the stream, ds wrap -o nats://…, did not deliver) and damaged byte
ranges:

   ~  gap      positions 3–5 missing (3 frames)
   ~  dropped  4 frames before position 9 (queue full)
   ~  lost     positions 3–5 (3 frames) not delivered by nats://h/ds: …

A drop is read from the datastream.health record at that position; with
records of older writers, which carry only counters, it is shown at the
first record whose mux_dropped counter grew. A transport loss is read
from the datastream.transport record its writer submitted once the
output delivered again, and shown at that record's position, after the
positions it names: a copy read back from that output shows a gap there
first; any other copy (the capture file) holds those positions, and the
line tells what the network copy lacks. A record that does not decode
names no loss. Gaps, drops and transport losses concern the whole
stream, so they are shown whatever -c selects.

A conflict, a different payload for a position already read (two
captures of one stream that differ), is shown after the first copy,
marked "[conflict: another payload was stored first]" ("conflict":true
in --json; --cat leaves it out), and every stream's conflicts are counted
on stderr, whatever -c shows: "ds: warning: stream N#L: 6 conflicts …".
Copies are compared by a hash of each position's payload, kept for the
last 16384 positions of a stream (8 MiB for all streams); a copy whose
first was read longer before is counted on stderr as "not compared",
never taken for identical silently.
A step of a stream's wall clock is shown in place too, at the
datastream.clock record that shows it: each record pairs the wall clock
with the monotonic clock, which move alike (NTP slews both), so the wall
clock moving more than 100 ms beyond the monotonic clock between two
records is a step (the clock was set, or the machine slept); the times
after it are off by the step. Records without mono_ns, or whose
monotonic clock stands still, show none.

   ~  clock    wall clock stepped back 5s at position 12 (it moved -4.9s
               while the monotonic clock moved 100ms)

The writer's own channels (datastream.clock, datastream.health,
datastream.transport) are hidden unless --all is given or -c names them;
--all shows a health or transport record after the loss line it gives
rise to.

--cat prints payload bytes only, byte-exact: by default the text channels,
with -c the channels named (records as written, with no separator). Gaps,
drops and transport losses are not in its output: it ends with one
warning on stderr when there were gaps or drops (the output lacks those
frames), and one note when the stream records transport losses (another
copy of it lacks those frames; this one lacks them only where it has
gaps).

--json prints one JSON object per text line (joined across frames as
above: "text" holds the line's bytes exactly, its newline included,
"position" and "last_position" the positions of its first and last frame,
"partial":true when it was printed before its newline, "continues":true
when it is the rest of a line printed so), per record and bytes
frame, gap, drop and damaged range. Every object has a "text": a text
line's bytes, or what ds log prints for it after the columns (a record's
compact JSON, escaped bytes, a gap's message), so that
ds log --json | jq 'select(.text|test("FAIL"))' finds what
ds log | grep FAIL finds. A text line that is not UTF-8 has a lossy
"text" (a U+FFFD for each bad byte), then its exact bytes in "bytes_b64"
and "utf8":false. --json=frames prints one object per frame, with
"text" for text frames only. A record carries "record" (the parsed JSON),
bytes "bytes_b64". "life" is a 64-bit number that jq rounds: select
streams by "stream". "time" (RFC 3339) is the stream's latest
datastream.clock reading before that frame: the writer records each
drain tick's clock reading before the frames the tick takes, so it is an
upper bound on when the frame arrived, within one flush interval. A gap is
{"gap":{"from":F,"to":T,"count":N}}, a drop
{"dropped":{"before":P,"frames":N,"bytes":B,"reason":"queue full"}} (bytes
null when the record did not say), a transport loss
{"transport_loss":{"output":S,"from":F,"to":T,"frames":N,"reason":R,
"since_unix_ms":MS,"until_unix_ms":MS}} (the outage's wall-clock bounds in
ms since the Unix epoch, 0 when the record did not say), a clock step
{"clock_step":{"position":P,"after":A,"step_ns":S,"elapsed_ns":E,
"from_unix_ns":F,"to_unix_ns":T}} (between the records at A and P the wall
clock moved S ns more than the monotonic clock, which moved E ns; F and T
are the two wall-clock readings), each after "stream", "node", "life".

--json=pretty prints the objects of --json indented, over several lines
(journalctl -o json-pretty); --json=frames,pretty those of --json=frames.

-n N (--lines N) prints only the last N lines of what ds log would print
(journalctl -n): rows, objects of --json, or lines of --cat. One capture
file is read from its end as ds tail reads it, so the last lines of a
10 GiB capture cost what those of a small one do; several inputs are
merged, keeping the last N lines in memory. -n 0 prints nothing. -f does
not go with -n: ds tail -n N -f prints the last N lines, then follows.
-n +N prints from the N-th line on, as tail -n +N does (not journalctl's
--lines=+N, the N oldest: that is ds log | head -n N); not with -r or -f.

-r (--reverse) prints the newest line first (journalctl -r): ds log's
lines (each as ds log prints it, a line joined across frames included),
last first; with -n N, the N newest, newest first. The log is rendered,
then read back from its end: beyond 8 MiB of output it is kept in a
temporary file (in $TMPDIR, removed at exit), so memory stays small and
the disk holds what is printed. -r goes with neither -f nor --cat (whose
records have no line to reverse; pipe --cat to tac).

--time adds a time column: --time or --time=wall (local time; --utc or
--time=utc for UTC), --time=since-start (seconds since the first clock
reading of the inputs), --time=delta (seconds since the previous line
printed: stalls stand out), --time=unix. since-start and delta are
measured across a clock step by the monotonic clock, so a step shows as
its note, not as a jump, a negative delta or a stall. A line before any
clock reading shows "-".

` + selectionHelp + `

--after CURSOR shows, of each stream the cursor names, only the positions
after it; --show-cursor prints the cursor of what was shown as a last line,
"-- cursor: CURSOR" ({"cursor":"CURSOR"} with --json), for the next run's
--after. Frames between a cursor and the first position an input still
holds are reported as trimmed, never skipped silently.

` + inputsHelp + `

-f (--follow) keeps reading capture files as they grow, and takes in the
new capture files of the directories named, until interrupted (SIGINT or
SIGTERM: exit 0, or 3 if what was read was damaged). A file truncated or
replaced is read again from its start, with a note on stderr. As with
tail -f, a file is followed after its streams have ended (ds wrap
--append may add one), and a record cut short at its end is awaited, not
reported as a torn tail. Stdin is read to its end.

Exit status 3 when an input is damaged: everything readable is printed
first. A capture that ds wrap is still writing is read to its current end.`,
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "cat", Usage: "print payload bytes only, byte-exact"},
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep reading files as they grow, and new captures in directories"},
			&cli.GenericFlag{Name: "json", Value: &optionalValue{}, Usage: "print one JSON object per line, record, gap, drop, transport loss and damaged range (=frames: per frame; =pretty: indented)"},
			&cli.GenericFlag{Name: "lines", Aliases: []string{"n"}, Value: &linesValue{}, Usage: "print only the last `N` lines (+N: from line N on, as tail -n +N)"},
			&cli.BoolFlag{Name: "reverse", Aliases: []string{"r"}, Usage: "print the newest line first"},
			&cli.GenericFlag{Name: "time", Value: &optionalValue{}, Usage: "add a time column: wall, utc, since-start, delta or unix"},
			&cli.BoolFlag{Name: "utc", Usage: "show and read times in UTC"},
			&cli.BoolFlag{Name: "show-cursor", Usage: "end with the cursor of what was shown (for --after)"},
			&cli.StringSliceFlag{Name: "channel", Aliases: []string{"c"}, Usage: "show only `CHANNEL` (exact name, or a pattern whose * matches anything: proc.*, proc.*.stdout); repeatable"},
			&cli.BoolFlag{Name: "all", Usage: "also show the writer's own datastream.* channels"},
			&cli.BoolFlag{Name: "cr-segments", Usage: "show every CR-separated segment of a text line"},
			colorFlag(),
		}, append(selectionFlags(), natsFlags()...)...),
		Action: logAction,
	}
}

func logAction(ctx context.Context, c *cli.Command) error {
	limitReadMemory()
	if c.Args().Len() == 0 {
		return usagef("log: no input given (name capture files, or - for stdin)")
	}
	set, err := newSources(c)
	if err != nil {
		return err
	}
	opts := views.LogOptions{
		All:        c.Bool("all"),
		CRSegments: c.Bool("cr-segments"),
	}
	if err := readLogFormat(c, &opts); err != nil {
		return err
	}
	last, reverse, follow := -1, c.Bool("reverse"), c.Bool("follow")
	var from int64 // -n +N: print from line N on
	if c.IsSet("lines") {
		n := tailLines(c)
		switch {
		case n.from:
			from = max(n.n, 1)
		case n.n > math.MaxInt32:
			return usagef("log: -n %d: at most %d lines", n.n, math.MaxInt32)
		default:
			last = int(n.n)
		}
	}
	switch {
	case from > 0 && (reverse || follow):
		return usagef("log: -n +N does not go with -r or -f")
	case last >= 0 && follow:
		return usagef("log: -n does not go with -f: ds tail -n N -f prints the last N lines, then follows")
	case reverse && follow:
		return usagef("log: -r does not go with -f (the newest line is yet to come)")
	case reverse && opts.Format == views.FormatCat:
		return usagef("log: -r does not go with --cat (records have no line to reverse); pipe --cat to tac")
	}
	var colorErr error
	if opts.Color, colorErr = useColor(c, c.Root().Writer); colorErr != nil {
		return colorErr
	}
	root := c.Root()
	out := newLogOutput(root.Writer, pretty(c), reverse)
	w := out.w
	if from > 1 {
		w = views.SkipLines(w, from-1)
	}
	in := newInputs(set, root.Reader, w, root.ErrWriter)
	var cur segments.Cursor
	shown := true // what was printed has a cursor
	if last >= 0 {
		cur, err = in.LogLast(ctx, c.Args().Slice(), opts, last)
		shown = cur != nil
	} else {
		var p *views.Printer
		if p, err = in.Log(ctx, c.Args().Slice(), opts, follow); p == nil {
			out.close()
			return err
		}
		cur = p.Cursor()
	}
	if werr := out.reversed(); werr != nil {
		return writeErr(werr)
	}
	if c.Bool("show-cursor") && shown {
		if werr := showCursor(out.after, cur, opts.Format); werr != nil && err == nil {
			return writeErr(werr)
		}
	}
	if werr := out.close(); werr != nil && err == nil {
		return writeErr(werr)
	}
	return err
}

// pretty reports whether c's --json asks for indented objects.
func pretty(c *cli.Command) bool {
	_, _, p := jsonMode(c.String("json"))
	return p
}

// logOutput is what ds log and ds tail write to: stdout, through a
// views.PrettyJSON with --json=pretty, through a viewer.Reverser with -r.
type logOutput struct {
	w      io.Writer // what the views write to
	after  io.Writer // what comes after the reversed lines (--show-cursor)
	pretty *views.PrettyJSON
	rev    *viewer.Reverser
}

func newLogOutput(stdout io.Writer, pretty, reverse bool) *logOutput {
	o := &logOutput{w: stdout, after: stdout}
	if pretty {
		o.pretty = views.NewPrettyJSON(stdout)
		o.w, o.after = o.pretty, o.pretty
	}
	if reverse {
		o.rev = viewer.NewReverser(o.w)
		o.w = o.rev
	}
	return o
}

// reversed writes the lines kept for -r, newest first.
func (o *logOutput) reversed() error {
	if o.rev == nil {
		return nil
	}
	err := o.rev.Close()
	o.rev = nil
	return err
}

// close writes what is left: the reversed lines, an unfinished last
// pretty line.
func (o *logOutput) close() error {
	err := o.reversed()
	if o.pretty != nil {
		if perr := o.pretty.Flush(); err == nil {
			err = perr
		}
	}
	return err
}

// readLogFormat reads the output format, time column and filters of ds log
// and ds tail into opts.
func readLogFormat(c *cli.Command, opts *views.LogOptions) error {
	json := c.String("json")
	jsonOn, jsonFrames, _ := jsonMode(json)
	switch {
	case c.Bool("cat") && json != "":
		return usagef("%s: --cat and --json cannot be combined", c.Name)
	case c.Bool("cat"):
		opts.Format = views.FormatCat
	case jsonOn:
		opts.Format, opts.JSONFrames = views.FormatJSON, jsonFrames
	case json != "":
		return usagef("%s: --json=%s: want --json (one object per line), --json=frames, --json=pretty or --json=frames,pretty", c.Name, json)
	}
	if t := c.String("time"); t != "" {
		if t == "true" {
			t = "wall"
		}
		mode, utc, err := views.ParseTimeMode(t)
		if err != nil {
			return usagef("%s: %v", c.Name, err)
		}
		if opts.Format != views.FormatText {
			return usagef("%s: --time adds a column to the text format (--json always has \"time\")", c.Name)
		}
		opts.Time, opts.UTC = mode, utc || c.Bool("utc")
	}
	sel, err := readSelection(c)
	if err != nil {
		return err
	}
	if sel.Grep != nil && opts.Format == views.FormatCat {
		return usagef("%s: -g cannot be combined with --cat (it keeps bytes exact); pipe --cat to grep", c.Name)
	}
	opts.Select = sel
	return nil
}

// jsonMode parses a --json value: "" (no --json), true or lines (one
// object per line), frames (one per frame), pretty (indented), and
// frames,pretty. ok is false for anything else, and for "".
func jsonMode(v string) (ok, frames, pretty bool) {
	if v == "" {
		return false, false, false
	}
	for _, w := range strings.Split(v, ",") {
		switch w {
		case "true", "lines":
		case "frames":
			frames = true
		case "pretty":
			pretty = true
		default:
			return false, false, false
		}
	}
	return true, frames, pretty
}

// showCursor writes the cursor line of --show-cursor.
func showCursor(w io.Writer, cur segments.Cursor, format views.LogFormat) error {
	var err error
	switch format {
	case views.FormatJSON:
		_, err = fmt.Fprintf(w, "{\"cursor\":%q}\n", cur.String())
	case views.FormatText:
		_, err = fmt.Fprintf(w, "-- cursor: %s\n", cur.String())
	}
	return err
}

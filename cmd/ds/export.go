package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/export"
	"github.com/ds-telemetry/ds/pkg/sources"
)

func exportCommand() *cli.Command {
	return &cli.Command{
		Name:      "export",
		Usage:     "write captures as asciicast, OpenTelemetry logs (OTLP/JSON), CSV or TSV",
		UsageText: "ds export asciicast|otlp|csv|tsv [-o FILE] [FILTERS] INPUT…",
		Description: `Writes what ds log shows of the inputs (merged by time, the writer's own
datastream.* channels hidden unless -c names them) in a format other
tools read, to stdout or to -o FILE. The first argument names it:

asciicast   asciicast v2, for asciinema play and the asciinema web
            player: a header, then [TIME, "o", DATA] for each frame of a
            text channel (stdout and stderr alike), as written, so that
            a progress bar plays as it was drawn. TIME is seconds since
            the first clock reading of the inputs, by the wall clock less
            its steps (a clock set back or forward makes no jump; see ds
            log), never decreasing. DATA is text: a UTF-8 character split
            across frames is joined, and each other byte that is not
            UTF-8 becomes U+FFFD. A capture made without --pty gets a CR
            before each LF that has none, as a terminal would have added;
            a --pty capture keeps its bytes (its lifecycle record says
            so; with -c, name the lifecycle channel too). Gaps, drops,
            transport losses and damage are markers [TIME, "m", MESSAGE].
            The header has --width and --height (80x24: ds does not
            record a window size), the time of the first clock reading,
            the command (the first lifecycle record's argv) and --title.
            -g matches each frame, not each line.
otlp        OpenTelemetry logs in the OTLP/JSON encoding: one
            ExportLogsServiceRequest per line, holding one LogRecord, so
            that each line can be posted to an OTLP/HTTP endpoint
            (/v1/logs) or read by the collector's otlpjsonfile receiver.
            One record per text line (its newline left out; bytesValue
            in base64 when it is not UTF-8), record (its JSON as a
            string), bytes frame (bytesValue) and note (gap, drop,
            transport loss, start, trimmed, damage: its message). The
            resource is the stream: service.name (its --label), ds.stream,
            service.instance.id (NODE#LIFE), ds.node, ds.life (a string),
            ds.label; a damaged range's is service.name ds and ds.file.
            Times are the clock reading before the frame, in
            timeUnixNano and observedTimeUnixNano (damage: the last
            time before it; before any, observedTimeUnixNano is now).
            A line's body leaves out its newline and one CR before it
            (the CR LF of a --pty capture). Severity: a line of
            proc.*.stderr is WARN (13), of any other channel INFO (9):
            stderr carries diagnostics and progress as much as errors.
            Gaps, drops and transport losses are WARN, damage ERROR (17).
            Attributes: ds.channel, ds.position, ds.last_position (a
            line over several frames), log.iostream (stdout or stderr),
            ds.partial, ds.late, ds.conflict; a note's ds.note and its
            numbers (ds.from, ds.to, ds.frames, ds.before, ds.reason,
            ds.output, ds.file, ds.offset, ds.end, ds.torn).
csv         RFC 4180 CSV: a header row stream,position,channel,time,text
            (as ds series -o csv: stream is NODE#LIFE, time RFC 3339 in
            UTC with ns, empty before the first clock reading), then one
            row per text line (newline and one CR before it left out;
            each byte that is not
            UTF-8 becomes U+FFFD, as --json's "text"), record (compact
            JSON), bytes frame (escaped as \x00) and note, whose position
            is ~ (! for damage) and channel what it is (gap, dropped,
            lost, start, trimmed, damaged), as in ds log. Each control
            byte but tab, newline and CR (ESC, BEL, DEL…) is written
            \xNN, so that the export cannot drive a terminal it is shown
            on. Cells starting with = + - @ are left as they are: a
            spreadsheet may take them for formulas.
tsv         The same with tabs, unquoted: a tab, newline, CR or backslash
            in a cell is written \t, \n, \r or \\ (as ds series -o tsv),
            other control bytes \xNN as in csv.

ds log --json is the lossless form (exact bytes, every field); these
formats are for the tools that read them.

-o FILE writes to FILE (a temporary file renamed at the end; an existing
FILE is replaced only with --overwrite); without it, or with -o -, the
export goes to stdout.

` + selectionHelp + `

` + inputsHelp + `

Exit status 3 when an input is damaged: everything readable is exported
first, the damage in place. 2 for an unknown format or an input that is
no capture, 1 when one cannot be read (the others are exported; with
none, -o FILE is not written) or FILE cannot be written.`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write to `FILE` (- for stdout, the default)"},
			&cli.BoolFlag{Name: "overwrite", Usage: "replace an existing FILE"},
			&cli.StringSliceFlag{Name: "channel", Aliases: []string{"c"}, Usage: "export only `CHANNEL` (exact name, or a pattern whose * matches anything: proc.*, proc.*.stdout); repeatable"},
			&cli.IntFlag{Name: "width", Value: export.DefaultWidth, Usage: "asciicast: the terminal's width in `COLUMNS`"},
			&cli.IntFlag{Name: "height", Value: export.DefaultHeight, Usage: "asciicast: the terminal's height in `ROWS`"},
			&cli.StringFlag{Name: "title", Usage: "asciicast: the recording's `TITLE`"},
		}, append(selectionFlags(), natsFlags()...)...),
		Action: exportAction,
	}
}

func exportAction(ctx context.Context, c *cli.Command) error {
	limitReadMemory()
	args := c.Args().Slice()
	if len(args) == 0 {
		return usagef("export: name a format: %s", strings.Join(export.Formats, ", "))
	}
	format, err := export.ParseFormat(args[0])
	if err != nil {
		if s := suggest(export.Formats, args[0]); s != "" {
			return usagef("export: unknown format %q — did you mean %q? (want %s)", args[0], s, strings.Join(export.Formats, ", "))
		}
		return usagef("export: unknown format %q (want %s)", args[0], strings.Join(export.Formats, ", "))
	}
	if len(args) == 1 {
		return usagef("export: no input given (name capture files after the format, or - for stdin)")
	}
	if c.Int("width") < 1 || c.Int("height") < 1 {
		return usagef("export: --width and --height must be at least 1")
	}
	sel, err := readSelection(c)
	if err != nil {
		return err
	}
	set, err := newSources(c)
	if err != nil {
		return err
	}
	opts := export.Options{Format: format, Select: sel, Width: int(c.Int("width")), Height: int(c.Int("height")),
		Title: c.String("title"), Version: dsVersion()}
	root := c.Root()
	out := c.String("output") // opened as ds report's -o is
	if out == "" {
		out = "-"
	}
	w, file, err := createReportOutput(out, c.Bool("overwrite"), root.Writer)
	if err != nil {
		return err
	}
	if file != nil {
		defer file.Abort()
	}
	res, err := export.Write(ctx, newInputs(set, root.Reader, nil, root.ErrWriter), args[1:], opts, w)
	var status *sources.StatusError
	if err != nil && !errors.As(err, &status) {
		if file == nil {
			return writeErr(err)
		}
		return fmt.Errorf("%s: %w", out, err) // not written: the file is removed
	}
	if status != nil && status.Status > sources.Damaged && res.Streams == 0 {
		return err // nothing could be read: no file (it is removed)
	}
	if file != nil {
		if cerr := file.Commit(); cerr != nil {
			return cerr
		}
	}
	return err
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime/debug"

	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/report"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/sources"
	"github.com/ds-telemetry/ds/pkg/textfmt"
)

func reportCommand() *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "write one self-contained HTML page of captures: summary, host charts, the log",
		UsageText: "ds report -o FILE.html [--max-size SIZE] [FILTERS] INPUT…",
		Description: `Writes one HTML page of the inputs, for a person to read in a browser
(a CI artifact, a capture of last month): it holds everything it shows,
loads nothing from anywhere, and opens over file://.

The page has, for every stream:

   a summary   the command (argv, directory), its exit status, how long
               it ran, its resource use (user and system time, max RSS),
               frames and bytes, and its losses with their reasons
               (gaps, drops, transport losses, conflicts), the inputs and
               their damaged ranges, each linked to its place in the log
   charts      the host.cpu, host.mem, host.net and host.gpu samples (as
               ds wrap --host records them) on the run's time axis, with
               losses, damage and exits marked; hovering shows the values
               and the log line at that time, a click goes to it
   the log     what ds log shows, merged by time: stdout and stderr lines
               (their SGR colours rendered; every other escape sequence,
               control byte and bidi control shown escaped, and nothing
               of a payload ever taken for markup), lifecycle events,
               gaps, drops and damage in place; lines that read like
               errors (error, fatal, fail, panic, exception, traceback)
               and failed exits are marked

A search box takes a regular expression, case-insensitive unless it has
an upper-case letter (as -g); Enter goes to the next match, and "only
matches" hides the other lines. Buttons go to the first error (or failed
exit), the next, the exit and the first loss. Every line has an address,
FILE.html#NODE#LIFE/POSITION (click its position to get it). The log is
held in the page as data and drawn as it is scrolled, one line a row (a
page of a million lines opens in about a second; it needs JavaScript): a
line longer than its row is shown whole below it when clicked.

The page is kept under --max-size (20 MiB by default): when the log does
not fit, its start and its end are shown, and of its middle the lines
that read like errors, lifecycle events and losses while they fit in a
tenth of the budget; every range left off is named in place and in the
summary, with the ds log command that prints it. The filters (see ds
log) choose what the log shows; the summary and the charts cover every
frame.

-o FILE writes the page to FILE (a temporary file renamed at the end; an
existing FILE is replaced only with --overwrite); -o - writes it to
stdout. A note on stderr says when lines were left off.

` + selectionHelp + `

` + inputsHelp + `

Exit status 3 when an input is damaged (the page is written, with the
damage shown); 2 when an input is no capture and 1 when one cannot be
read (the page shows the others; with none, no page is written); 1 when
FILE cannot be written.`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the page to `FILE` (- for stdout); required"},
			&cli.BoolFlag{Name: "overwrite", Usage: "replace an existing FILE"},
			&cli.StringFlag{Name: "max-size", Value: "20MiB", Usage: "keep the page under `SIZE` bytes (512K, 20MiB…): the middle of a longer log is left off, named"},
		}, append(selectionFlags(), natsFlags()...)...),
		Action: reportAction,
	}
}

func reportAction(ctx context.Context, c *cli.Command) error {
	out := c.String("output")
	if out == "" {
		return usagef("report: no output given: -o FILE.html (or - for stdout)")
	}
	names := c.Args().Slice()
	if len(names) == 0 {
		return usagef("no input given (name capture files, or - for stdin)")
	}
	size, err := segments.ParseSize(c.String("max-size"))
	if err != nil {
		return usagef("report: --max-size: %v", err)
	}
	if size < report.MinMaxBytes {
		return usagef("report: --max-size %s: want at least %s (the page's own markup)", c.String("max-size"), textfmt.Bytes(report.MinMaxBytes))
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		// The views' limit, plus the page, held whole until it is
		// written (head, middle, two tail buffers: 3× its size), with
		// room: a tighter limit makes the collector run all the time.
		debug.SetMemoryLimit(readMemoryLimit + 8*size)
	}
	sel, err := readSelection(c)
	if err != nil {
		return err
	}
	if sel.Grep != nil {
		return usagef("report: -g: the page has a search box of its own (every line is on it)")
	}
	set, err := newSources(c)
	if err != nil {
		return err
	}
	root := c.Root()
	w, file, err := createReportOutput(out, c.Bool("overwrite"), root.Writer)
	if err != nil {
		return err
	}
	if file != nil {
		defer file.Abort()
	}
	res, err := report.Build(ctx, newInputs(set, root.Reader, nil, root.ErrWriter), names, report.Options{MaxBytes: size, Select: sel}, w)
	var status *sources.StatusError
	if err != nil && !errors.As(err, &status) {
		return fmt.Errorf("%s: %w", out, err) // not written: the file is removed
	}
	if status != nil && status.Status > sources.Damaged && res.Streams == 0 {
		return err // nothing could be read: no page (the file is removed)
	}
	if file != nil {
		if cerr := file.Commit(); cerr != nil {
			return cerr
		}
	}
	if res.Elided > 0 {
		fmt.Fprintf(root.ErrWriter, "ds: note: %s: %s of %d left off to keep it under %s (--max-size); the page names them\n",
			out, textfmt.Nouns(res.Elided, "line"), res.Lines+res.Elided, textfmt.Bytes(uint64(res.MaxBytes)))
	}
	return err
}

// createReportOutput opens where ds report writes: stdout for -, or a
// new file (replacing one only with overwrite). Errors name the path
// given, not the temporary file written next to it.
func createReportOutput(name string, overwrite bool, stdout io.Writer) (io.Writer, *segments.OutputFile, error) {
	if name == "-" {
		return stdout, nil, nil
	}
	file, err := segments.CreateOutputFile(name, overwrite)
	if errors.Is(err, fs.ErrExist) {
		return nil, nil, fmt.Errorf("%s exists: not replacing it (use --overwrite to replace it)", name)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return nil, nil, fmt.Errorf("create %s: %w", name, pe.Err)
	}
	if err != nil {
		return nil, nil, err
	}
	return file, file, nil
}

package main

import (
	"context"
	"errors"
	"regexp"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/diff"
	"github.com/ds-telemetry/ds/pkg/sources"
)

// ds diff's exit statuses, as diff(1)'s: 0 same, 1 different, 2
// trouble; and ds's 3 for damaged input, which wins over 1.
const (
	diffDiffer  = 1
	diffTrouble = 2
)

func diffCommand() *cli.Command {
	return &cli.Command{
		Name:      "diff",
		Usage:     "compare two runs of a job: lines only in one, timing, exit status, resource use",
		UsageText: "ds diff [-U N] [--exact] [-I RE]… [--json] [FILTERS] A B",
		Description: `Compares two runs of the same job, A and B (two captures, as ds wrap
records them: files, - for stdin, stores, directories; each read as ds log
reads it, its streams merged by time), as a person would: what lines only
one has, which steps got slower, and how they ended.

The output has three parts:

   a header    both runs side by side, with the change: the command, its
               exit status, wall time, user and system CPU and max RSS
               (from the proc.LABEL.lifecycle records; one set of rows per
               process), the host's peak CPU, memory and GPU use (ds wrap
               --host samples), the lines compared, and the capture's own
               losses (gaps, drops, damage: lines may be missing there)
   the hunks   the lines only in A (-) or only in B (+), as diff -u shows
               them, with N lines of context (-U N, 3 by default); each
               line has its line numbers in A and B (among the lines
               compared), its time in each run (seconds since that run's
               first clock reading), its channel (stdout and stderr for a
               process's) and its text, escaped as ds log shows it
   timing      the steps whose time changed most: from a line both runs
               have to the next line both have (the start and the end of
               each run count as such lines), how long it took in A and in
               B, and the change ("compiling foo.c: 12s → 40s, +28s");
               the --timing N largest changes (10) of at least
               --timing-min (1s)

Lines are compared by their text with what changes from run to run masked:
numbers (42, 3.14), hex ids (6 or more hex digits, a digit and a letter
among them; 0x…; UUIDs), dates and times (2026-01-02T10:00:00Z, 10:00:05),
durations (1.23s, 45ms, 1m30s) and the directory right below a temporary
root (/tmp/go-build123/… as /tmp/<TMP>/…; every digit run of an absolute
path is masked). A number is masked where a word starts: v1.2, sha256 and
x86_64 keep theirs. --exact compares the bytes instead. -I/--ignore RE (a
Go regular expression, repeatable) masks what RE matches too, and a line it
masks whole ('^DEBUG.*') is left out, as diff -I leaves it out. Lines only
match on the same channel; proc.LABEL.X matches proc.*.X, so runs recorded
under other labels compare. The masking is for matching only: lines are
shown as they are.

The line diff is patience diff (as git diff --patience) over Myers'
algorithm: lines that occur once in both runs anchor the match, and what
lies between them is diffed exactly. A part that is both long and very
different, with no such line in it, is shown as replaced whole (a note
says so) so that two runs of millions of lines compare in seconds; at most
--max-lines lines of each run are kept (4194304 by default: about 150
bytes each, for lines of 100 bytes), past that ds diff refuses the input.

By default the lines of every text channel are compared (a ds wrap
capture's stdout and stderr); -c selects channels as ds log does (records
are then compared by their compact JSON). The other filters (see ds log)
apply to both runs; the stream filters choose the processes the header
shows too.

--json prints one JSON document: "a" and "b" (each run's "input",
"streams", "processes" [{"stream","label","pid","argv","cwd","exit":
{"kind":"code"|"signal"|"spawn_failed","value"},"wall_ns","user_ns",
"sys_ns","max_rss_bytes"}], "host" {"samples","cpu_percent",
"mem_used_bytes","mem_used_percent","gpu_percent","gpu_mem_mib"},
"time_start", "duration_ns", "lines", "ignored_lines", "losses"), "same",
"exit_differs", "removed", "added", "approximate", "timings" [{"a","b"
(the step's first line in A and B, 0 for the start),"a_next","b_next"
(0 for the end),"a_ns","b_ns","change_ns","channel","text"}] and "hunks"
[{"a_start","a_lines","b_start","b_lines","lines":[{"op":" "|"-"|"+",
"a","b" (null on the side a line is not in),"a_position","b_position",
"a_time","b_time" (RFC 3339),"a_since_ns","b_since_ns","channel","text"}]}]
(a text that is not UTF-8 is lossy, with its bytes in "bytes_b64" and
"utf8":false; "more_bytes" counts what was not kept of a long line).

Exit status, as diff(1): 0 when the runs are the same (no line only in
one, and their processes ended alike: timing and resource use never
count), 1 when they differ, 2 on trouble (a usage error, an input that
cannot be read or holds no capture, too many lines, the output failing);
3 when an input is damaged (what was readable is compared and printed),
which wins over 1.`,
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "unified", Aliases: []string{"U"}, Value: 3, Usage: "show `N` lines of context around each hunk"},
			&cli.BoolFlag{Name: "exact", Usage: "compare lines byte for byte: mask no numbers, ids, times, durations or paths"},
			&cli.StringSliceFlag{Name: "ignore", Aliases: []string{"I"}, Usage: "also mask what `RE` matches; a line it masks whole is left out; repeatable"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON document"},
			&cli.IntFlag{Name: "timing", Value: 10, Usage: "list the `N` largest timing changes (0: none)"},
			&cli.StringFlag{Name: "timing-min", Value: "1s", Usage: "list timing changes of at least `DURATION`"},
			&cli.IntFlag{Name: "max-lines", Value: diff.DefaultMaxLines, Usage: "refuse an input of more than `N` lines"},
			&cli.StringSliceFlag{Name: "channel", Aliases: []string{"c"}, Usage: "compare only `CHANNEL` (exact name, or a pattern whose * matches anything: proc.*, proc.*.stdout); repeatable"},
			colorFlag(),
		}, append(selectionFlags(), natsFlags()...)...),
		Action: diffAction,
	}
}

func diffAction(ctx context.Context, c *cli.Command) error {
	names := c.Args().Slice()
	if len(names) != 2 {
		return usagef("diff: want two inputs, A and B (got %d)", len(names))
	}
	if names[0] == "-" && names[1] == "-" {
		return usagef("diff: only one of A and B can be - (stdin)")
	}
	opts := diff.Options{Context: int(c.Int("unified")), Timing: int(c.Int("timing")), MaxLines: int(c.Int("max-lines"))}
	if opts.Context < 0 || opts.Timing < 0 || opts.MaxLines < 1 {
		return usagef("diff: -U, --timing and --max-lines take a number of at least 0 (--max-lines: 1)")
	}
	min, err := time.ParseDuration(c.String("timing-min"))
	if err != nil || min < 0 {
		return usagef("diff: --timing-min %q: want a duration such as 1s or 500ms", c.String("timing-min"))
	}
	opts.TimingMinNS = int64(min)
	opts.Matcher.Exact = c.Bool("exact")
	for _, s := range c.StringSlice("ignore") {
		re, err := regexp.Compile(s)
		if err != nil {
			return usagef("diff: --ignore %q: %v", s, err)
		}
		opts.Matcher.Ignore = append(opts.Matcher.Ignore, re)
	}
	if opts.Select, err = readSelection(c); err != nil {
		return err
	}
	color, err := useColor(c, c.Root().Writer)
	if err != nil {
		return err
	}
	set, err := newSources(c)
	if err != nil {
		return err
	}
	root := c.Root()
	r := newInputs(set, root.Reader, root.Writer, root.ErrWriter)
	var runs [2]*diff.Run
	damaged := false
	var trouble error
	for i, name := range names {
		run, err := diff.Read(ctx, r, name, opts)
		var st *sources.StatusError
		var le *diff.LimitError
		switch {
		case errors.As(err, &le):
			return &codedError{err: err, code: diffTrouble}
		case errors.As(err, &st) && st.Status == sources.Damaged:
			damaged = true
		case err != nil:
			trouble = err // reported on stderr as it was met
		}
		runs[i] = run
	}
	if trouble != nil {
		return &statusError{code: diffTrouble}
	}
	res := diff.Compare(runs[0], runs[1], opts)
	if c.Bool("json") {
		err = res.WriteJSON(root.Writer)
	} else {
		err = res.WriteText(root.Writer, color)
	}
	switch {
	case err != nil && isEPIPE(err):
		// ds diff … | head: the reader has what it wanted.
	case err != nil:
		return &codedError{err: err, code: diffTrouble}
	}
	switch {
	case damaged:
		return &statusError{code: exitCorrupt}
	case !res.Same:
		return &statusError{code: diffDiffer}
	}
	return nil
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/capture"
	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/sources"
	"github.com/ds-telemetry/ds/pkg/textfmt"
	"github.com/ds-telemetry/ds/pkg/views"
)

// ds merge and ds recover read their inputs with segments.Merge, the
// store's ingest: package views is used here only to read the shared
// filter flags (readSelection), never to read a capture.

func mergeCommand() *cli.Command {
	return &cli.Command{
		Name:      "merge",
		Usage:     "merge captures into one canonical capture",
		UsageText: "ds merge -o OUT [--overwrite] [--compress zstd|none] [FILTERS] INPUT…",
		Description: `Reads the inputs in argument order and writes OUT, one capture holding
every stream of them, each rebuilt by position whatever the order and the
overlaps of the inputs: captures of many nodes, of many lives of one
node, copies of one capture cut at different places, duplicated or
reordered by a transport. Each stream's frames are written in position
order; a frame met again (the same node, life and position) is written
once, the first copy read winning, and a frame met again with a different
payload is a conflict: it is named on stderr and written after the first,
so that ds info of OUT still shows it. Two identical lines at different
positions stay two frames. Lives of a node are never merged. Gaps (positions
no input holds) are not written; OUT simply lacks them, as its inputs did.

Each stream's catalog is the union of its inputs' catalogs: a channel (or
a stream) described differently by two inputs is an error naming both,
and OUT is not written. A stream that an input ended (a StreamEnded
record) ends in OUT after its last frame; a stream trimmed by a store
keeps its trim horizon (name the store's inputs first: frames below the
horizon read before it stay in OUT). A stream whose first frames are in
no input (a capture whose head was cut off, or cut off by the filters)
starts with a segment of sequence number 1, so that readers of OUT know
its earlier frames are elsewhere.

OUT is written to a temporary file in its directory, renamed to OUT at
the end: an existing OUT is never replaced unless --overwrite is given
(it may then be one of the inputs), and a merge that fails or is
interrupted leaves nothing behind. -o - writes to stdout (refused on a
terminal). Inputs in position order, as captures are, stream through in
bounded memory whatever their size; frames out of order are held in
memory up to --memory and sorted on disk beyond (in $TMPDIR), as sort(1)
does. Inputs are DSS capture files, directories (every capture file in
them, in name order; a *.dss file that is no capture is refused as if
named: exit 2), stores (each stream of the store) and - for stdin.

Filters cut the output down: --node, --stream and --origin select
streams; -c/--channel (exact name, or prefix.*) and --content select
channels (the others' frames are left out, and so are they from the
catalog); --positions A-B keeps those positions of every stream;
--since and --until keep the frames whose time is within the bounds (a
frame's time is its stream's latest datastream.clock reading; a stream
without clock readings keeps nothing, and is named on stderr): an
absolute time (2026-12-01 10:00, 10:00, @UNIXSECONDS, RFC 3339, today) or
-10m (before now), in local time unless --utc. A stream whose last frames
--positions, --since or --until leave out gets no StreamEnded record.

A progress bar is shown on stderr when it is a terminal (TERM not dumb)
and the merge takes more than a second, unless -q (NO_COLOR turns off
colour only: the bar has none). At the end one line on stderr says how
many frames were written, duplicates collapsed, conflicts and gaps found
(-q: none).

Exit status 0 when every input was read whole; 3 when an input was
damaged: OUT still holds everything readable, and each damaged range is
named on stderr with its file and byte offsets (ds recover lists what was
lost); 2 when an input is not a DSS capture (as the views say), or for a
usage error; 1 when an input cannot be read, a catalog conflict, or OUT
cannot be written.`,
		Flags: append(append(mergeOutputFlags(), streamFlags()...),
			&cli.StringSliceFlag{Name: "channel", Aliases: []string{"c"}, Usage: "keep only `CHANNEL` (exact name, or a pattern whose * matches anything: proc.*, proc.*.stdout); repeatable"},
			&cli.StringSliceFlag{Name: "content", Usage: "keep only channels of `KIND` (text, json, bytes); repeatable"},
			&cli.StringFlag{Name: "positions", Usage: "keep only positions `A-B` of each stream (A-, -B: open ends)"},
			&cli.StringFlag{Name: "since", Usage: "keep only frames at or after `TIME` (2026-12-01 10:00, -10m, @UNIXSECONDS)"},
			&cli.StringFlag{Name: "until", Usage: "keep only frames at or before `TIME` (as --since)"},
			&cli.BoolFlag{Name: "utc", Usage: "read --since and --until in UTC"},
		),
		Action: mergeAction,
	}
}

func recoverCommand() *cli.Command {
	return &cli.Command{
		Name:      "recover",
		Usage:     "write every recoverable frame of damaged captures to a clean one",
		UsageText: "ds recover -o OUT [--overwrite] [--compress zstd|none] INPUT…",
		Description: `Reads damaged captures (a flipped bit, a torn tail, bytes lost or
overwritten, a head cut off) and writes every frame that can still be read
to OUT, a clean capture: each stream in position order, its catalog, its
end, as ds merge writes them (ds merge's rules hold for several inputs:
copies of a stream fill each other's holes).

On stderr ds recover says, for each input, what it could not keep: each
damaged byte range (and a torn tail) with its offsets, then, per stream,
the runs of positions lost in the holes they left (frames the capture
had, of which no copy could be read); frames lost past a torn tail have
no known positions. A last line counts what was recovered and lost (-q:
only the losses are listed).

Exit status 0 only when nothing was lost: every input read whole, no
stream with a hole, no record of a type this ds does not know (a newer
writer's, which it cannot copy); 3 whenever anything was lost, even when
OUT holds all that could be saved (never 0 after a silent loss); 2 when
an input holds no DSS segment; 1 when an input cannot be read, or OUT
cannot be written. OUT is written as ds merge writes it (a temporary
file renamed at the end; --overwrite to replace an existing OUT; -o -
for stdout).`,
		Flags:  mergeOutputFlags(),
		Action: recoverAction,
	}
}

// mergeOutputFlags are the flags ds merge and ds recover share.
func mergeOutputFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the capture to `OUT` (- for stdout); required"},
		&cli.BoolFlag{Name: "overwrite", Usage: "replace an existing OUT (by default an existing file is never replaced)"},
		&cli.StringFlag{Name: "compress", Value: "zstd", Usage: "`CODEC` of OUT: zstd or none"},
		&cli.IntFlag{Name: "memory", Value: segments.DefaultMemory >> 20, Usage: "hold at most `MIB` MiB of frames out of order in memory; sort the rest in temporary files"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print no summary line and no progress bar"},
	}
}

// mergeJob is one ds merge or ds recover run, as its flags say.
type mergeJob struct {
	out       string
	overwrite bool
	quiet     bool
	recover   bool
	opts      segments.MergeOptions
	sel       *views.MergeSelection
	set       *sources.Set // the stores read
	stdin     io.Reader
	stdout    io.Writer
	stderr    io.Writer
}

// readMergeJob reads the flags ds merge and ds recover share.
func readMergeJob(c *cli.Command) (*mergeJob, error) {
	root := c.Root()
	j := &mergeJob{
		out: c.String("output"), overwrite: c.Bool("overwrite"), quiet: c.Bool("quiet"),
		set: envSources(), stdin: root.Reader, stdout: root.Writer, stderr: root.ErrWriter,
	}
	if j.out == "" {
		return nil, usagef("no output given: -o OUT (a file, or - for stdout)")
	}
	if c.Args().Len() == 0 {
		return nil, usagef("no input given (name capture files, directories or stores, or - for stdin)")
	}
	comp, err := segments.ParseCompression(c.String("compress"))
	if err != nil {
		return nil, usagef("--compress %q: want zstd or none", c.String("compress"))
	}
	mib := c.Int("memory")
	if mib < 1 || mib > 1<<20 {
		return nil, usagef("--memory %d: want a number of MiB from 1", mib)
	}
	j.opts = segments.MergeOptions{
		Compression: comp,
		Memory:      int(mib) << 20,
		WriterID:    "ds " + dsVersion(),
		Keep: func(cat []frames.ChannelDescriptor) func(frames.ChannelID, []byte) segments.Keep {
			var k capture.KeepPolicy // what ds wrap's summaries keep
			for _, d := range cat {
				k.Declare(d)
			}
			return k.Keep
		},
	}
	return j, nil
}

func mergeAction(ctx context.Context, c *cli.Command) error {
	j, err := readMergeJob(c)
	if err != nil {
		return err
	}
	sel, err := readSelection(c)
	if err != nil {
		return err
	}
	if j.sel, err = views.NewMergeSelection(sel); errors.Is(err, views.ErrBoundFromStart) {
		return usagef("--since/--until +DURATION: ds merge reads its inputs once and cannot know their start in advance; give a time (2026-12-01 10:00, -10m, @UNIXSECONDS)")
	} else if err != nil {
		return err
	}
	j.sel.Apply(&j.opts)
	return j.run(ctx, c.Args().Slice())
}

func recoverAction(ctx context.Context, c *cli.Command) error {
	j, err := readMergeJob(c)
	if err != nil {
		return err
	}
	j.recover = true
	return j.run(ctx, c.Args().Slice())
}

// mergeMemoryLimit is ds merge's soft memory limit, in bytes (see
// readMemoryLimit).
const mergeMemoryLimit = 48 << 20

// run merges the inputs named into j.out.
func (j *mergeJob) run(ctx context.Context, names []string) error {
	// A merge of 8 inputs holds 8 readers' buffers: the views' limit
	// would have it collect without end.
	limitMemory(mergeMemoryLimit)
	collectOften()
	var o sources.Outcome
	names = expandNames(j.set, names, j.stderr, &o)
	if o.FailedInput() {
		return o.Err()
	}
	inputs, total := j.inputs(names)
	out, file, err := createMergeOutput(j.out, j.overwrite, j.stdout)
	if err != nil {
		return err
	}
	if file != nil {
		defer file.Abort()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	j.opts.Context = ctx
	bar := newMergeBar(j.stderr, total, j.quiet)
	var n mergeNotes
	j.watch(bar, &n)
	rep, err := segments.Merge(inputs, out, j.opts)
	bar.done()
	if err != nil {
		return j.failed(ctx, err)
	}
	if file != nil {
		if err := file.Commit(); err != nil {
			return err
		}
	}
	return j.finish(rep, n)
}

// mergeNotes counts the lines of findings a merge printed as it went:
// conflicts and (ds recover) runs of lost positions, each past
// maxLostLines counted only.
type mergeNotes struct{ conflicts, lost int }

// watch sets the progress and finding callbacks of j.opts: the bar, and
// a stderr line per finding (clearing the bar first).
func (j *mergeJob) watch(bar *mergeBar, n *mergeNotes) {
	j.opts.Progress = bar.progress
	j.opts.Warn = func(err error) {
		var ce *segments.ConflictError
		if errors.As(err, &ce) {
			if n.conflicts++; n.conflicts > maxLostLines {
				return
			}
		}
		bar.clear()
		fmt.Fprintf(j.stderr, "ds: %s\n", textfmt.Escape(err.Error())) // names from input
	}
	if j.recover {
		j.opts.Gap = func(s frames.StreamID, g segments.Gap) {
			if n.lost++; n.lost <= maxLostLines {
				bar.clear()
				fmt.Fprintf(j.stderr, "ds: stream %s: %s lost (%s)\n", textfmt.Escape(s.String()), segments.RunText(g.From, g.To), textfmt.Nouns(g.Count, "frame"))
			}
		}
	}
}

// failed returns the error of a merge that did not finish: an
// interruption (exit 130), an input that is no capture (exit 2, as the
// views and ds ingest say), or err naming OUT as not written.
func (j *mergeJob) failed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		fmt.Fprintf(j.stderr, "ds: interrupted: %s not written\n", j.out)
		return &statusError{code: 128 + int(syscall.SIGINT)}
	}
	if j.out != "-" {
		err = fmt.Errorf("%w (%s not written)", err, j.out)
	}
	if errors.Is(err, segments.ErrNotDSS) {
		fmt.Fprintf(j.stderr, "ds: %v\n", err)
		return &statusError{code: exitUsage}
	}
	return err
}

// finish prints what a finished merge has to say after its findings (the
// counts of lines not printed, the filters that matched nothing, the
// warnings, the summary) and returns its exit status: 3 when an input was
// damaged or, for ds recover, anything was lost.
func (j *mergeJob) finish(rep segments.MergeReport, n mergeNotes) error {
	if n.lost > maxLostLines {
		fmt.Fprintf(j.stderr, "ds: … and %d more runs of lost positions\n", n.lost-maxLostLines)
	}
	if j.sel != nil {
		if none := j.sel.Unmatched(); len(none) > 0 {
			fmt.Fprintf(j.stderr, "ds: nothing in the inputs matches %s\n", strings.Join(none, ", "))
		}
		if ids := j.sel.Untimed(); len(ids) > 0 {
			names := make([]string, len(ids))
			for i, id := range ids {
				names[i] = id.String()
			}
			fmt.Fprintf(j.stderr, "ds: warning: --since/--until: %s has no clock records; left out\n", strings.Join(names, ", "))
		}
	}
	if rep.Unknown > 0 {
		fmt.Fprintf(j.stderr, "ds: warning: %s of types this ds does not know skipped, not copied\n", textfmt.Nouns(rep.Unknown, "record"))
	}
	if n.conflicts > maxLostLines {
		fmt.Fprintf(j.stderr, "ds: … and %d more conflicts\n", n.conflicts-maxLostLines)
	}
	if rep.Uncompared > 0 {
		// Never silent: these copies were taken as identical unchecked.
		fmt.Fprintf(j.stderr, "ds: warning: %s not compared with their first copies, which were too far back (more than %d positions) to compare: a different payload among them would be a conflict not seen\n", textfmt.Nouns(rep.Uncompared, "duplicate"), segments.MergeCompare)
	}
	if rep.DamageCount > len(rep.Damage) {
		fmt.Fprintf(j.stderr, "ds: %d damaged ranges in all\n", rep.DamageCount)
	}
	if !j.quiet {
		fmt.Fprintln(j.stderr, segments.MergeSummary(rep, j.out, j.recover))
	}
	if rep.Damaged || j.recover && (rep.Gaps > 0 || rep.Unknown > 0) {
		return &statusError{code: exitCorrupt}
	}
	return nil
}

// maxLostLines bounds the lines ds recover prints about lost positions.
const maxLostLines = 100

// inputs returns the merge inputs of the names (expanded: files, store
// streams, -) and their total size in bytes (-1 when one is unknown).
func (j *mergeJob) inputs(names []string) ([]segments.MergeInput, int64) {
	var ins []segments.MergeInput
	total := int64(0)
	for _, name := range names {
		ins = append(ins, segments.MergeInput{Name: name, Open: func() (io.ReadCloser, error) { return j.set.OpenBytes(name, j.stdin) }, Store: j.set.IsStream(name)})
		switch fi, err := os.Stat(name); {
		case name == "-" || j.set.IsStream(name):
			total = -1 // a pipe, or a store's stream: size unknown
		case err == nil && fi.Mode().IsRegular() && total >= 0:
			total += fi.Size()
		}
	}
	return ins, total
}

// createMergeOutput checks OUT and returns where the merge writes: stdout
// for - (refused on a terminal), or a segments.OutputFile that commit
// renames onto OUT (file is nil for stdout).
func createMergeOutput(name string, overwrite bool, stdout io.Writer) (w io.Writer, file *segments.OutputFile, err error) {
	if name == "-" {
		if f, ok := stdout.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
			return nil, nil, usagef("refusing to write a binary capture to a terminal; redirect stdout or use -o FILE")
		}
		return stdout, nil, nil
	}
	file, err = segments.CreateOutputFile(name, overwrite)
	if errors.Is(err, fs.ErrExist) {
		return nil, nil, fmt.Errorf("%s exists: not replacing it (use --overwrite to replace it)", name)
	}
	if err != nil {
		return nil, nil, err
	}
	return file, file, nil
}

// mergeBar is the progress bar of ds merge: shown once the merge has run
// for a second, where progressChoice allows it.
type mergeBar struct {
	w     io.Writer
	total int64
	start time.Time
	on    bool // stderr allows a bar
	bar   *progressbar.ProgressBar
}

// mergeBarDelay is how long a merge runs before its bar shows.
const mergeBarDelay = time.Second

// newMergeBar returns the bar of a merge of total input bytes, on stderr;
// quiet (-q) turns it off.
func newMergeBar(stderr io.Writer, total int64, quiet bool) *mergeBar {
	f, ok := stderr.(*os.File)
	on := progressChoice(ok && isatty.IsTerminal(f.Fd()), quiet, os.Getenv("TERM"))
	return &mergeBar{w: stderr, total: total, start: time.Now(), on: on}
}

// progressChoice says whether a command shows a progress bar on stderr:
// when stderr is a terminal whose TERM is not "dumb" (the bar moves the
// cursor), unless quiet (-q). NO_COLOR has no say: it turns colour off,
// and a progress bar is not colour (https://no-color.org).
func progressChoice(terminal, quiet bool, term string) bool {
	return terminal && !quiet && term != "dumb"
}

// progress takes the bytes read so far.
func (b *mergeBar) progress(n int64) {
	if !b.on {
		return
	}
	if b.bar == nil {
		if time.Since(b.start) < mergeBarDelay {
			return
		}
		b.bar = progressbar.NewOptions64(b.total,
			progressbar.OptionSetWriter(b.w),
			progressbar.OptionSetDescription("ds merge"),
			progressbar.OptionShowBytes(true),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionUseANSICodes(true))
	}
	_ = b.bar.Set64(n)
}

// clear takes the bar off the screen, for a line of stderr: the next
// progress draws it again.
func (b *mergeBar) clear() {
	if b.bar != nil {
		_ = b.bar.Clear()
	}
}

// done clears the bar.
func (b *mergeBar) done() {
	if b.bar != nil {
		_ = b.bar.Finish()
		_ = b.bar.Clear()
	}
}

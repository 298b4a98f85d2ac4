package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/sources"
	"github.com/ds-telemetry/ds/pkg/textfmt"
)

func checkCommand() *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "verify captures record by record: damage, torn tails, catalog conflicts, summaries",
		UsageText: "ds check [--json] [-q] INPUT…",
		Description: `Reads every record of each input (capture files, directories of captures
as the views take them, stores, or - for stdin), checks every CRC, and
reports what it finds, one line each on stdout:

   FILE: bytes A–B damaged: WHY
          bytes that could not be read (a flipped bit, a bad length,
          bytes that are no DSS), skipped up to the next good record or
          segment; adjacent damaged records make one range
   FILE: torn tail at byte A: WHY
          the input ends inside a record (a writer killed mid-record)
   FILE: stream S: channel N declared as NAME (CONTENT) at byte A and as
          NAME (CONTENT) at byte B
          one channel id of one stream with two descriptors, in segment
          headers or ChannelDeclared records (of this input or, naming it,
          an earlier one)
   FILE: stream S described as (origin O, label L) at byte A and as
          (origin O, label L) at byte B
          one stream with two descriptors in its segment headers
   FILE: byte A: summary of stream S's segment at byte B disagrees with
          its frames: WHAT
          a SegmentSummary whose frame count, payload bytes, first or last
          position, order, StreamEnded flag or per-channel counts differ
          from the frames of its segment, or that names another segment;
          a summary is never trusted over the frames it describes (it is
          compared only for segments read without damage)
   FILE: byte A: record of unknown type T in stream S, skipped
          a record type this ds does not know (a newer writer), or a Block
          of an unknown codec: not damage, its CRC checked
   FILE: stream S: a Trimmed record (positions below H) in a capture
          file, which holds N frames below it: …
          a Trimmed record is a store's, authoritative only in what a
          store reads out; a capture file (crafted, or spliced) that holds
          frames below one shows them, never hides them
   FILE: tail at byte A still being written
          a live capture (a writer holds it): a record cut short at its
          end is no torn tail
   FILE: stream S: N frames, positions A–B, …
          what the input holds of each stream: frames, payload bytes,
          segments, positions first–last, interior gaps (positions missing
          between the first and the last, the first 10 listed), the trim
          horizon of a store (positions below it are trimmed, not a gap),
          duplicates (positions seen before), and whether a StreamEnded
          record was seen
   FILE: ok: … | FILE: N problems: …
          the input's size, segments, streams and frames

Damage, torn tails, catalog conflicts (of channels or of the stream
itself), summaries that disagree and frames below a capture's Trimmed
record are problems; gaps, duplicates and streams without a StreamEnded record are
not (a lossy transport, cat a.dss a.dss, a writer still running). -q
prints the problems only, and nothing for a clean input.

A store (ds ingest) is checked as the views read it: each of its streams
is an input named "STORE (NODE#LIFE)", and offsets are those of the
stream as the store gives it out (its chunk files in position order).
Besides DSS captures, ds check reads the seed system's DSQ1 streams and
legacy envelopes (which have no segment summaries).

ds check is a full read: it reads as fast as ds log --cat, in memory
bounded by the reader's (a few MiB) plus a few hundred bytes per stream
and per run of positions (at most 65536 runs per stream are kept: beyond,
gaps are counted no more and the stream line says so).

Exit status: 0 when every input is clean, 3 when any has a problem, 2 when
an input is not a capture or the command line is wrong, 1 when an input
cannot be read (the worst wins).`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: `print one JSON object per line: each finding, then each stream, then ` +
				`the input; each object starts with "input" (the name) and "kind", then by kind: ` +
				`damage: "offset", "end" (the bytes [offset, end)), "records", "error"; ` +
				`torn: "offset", "end", "error"; live: "offset"; ` +
				`unknown: "offset", "stream", "type", "error"; ` +
				`conflict: "stream", "channel_id", "first" and "second", each {"input", "offset", "name", "content"}; ` +
				`stream_conflict: "stream", "first" and "second", each {"input", "offset", "origin", "label"}; ` +
				`summary: "offset", "segment_offset", "stream", "seq", "disagrees" (what, in words), ` +
				`"summary" and "segment", each {"frames", "bytes", "first", "last", "ordered", "ended"}; ` +
				`trim_shown: "stream", "before", "frames"; ` +
				`stream: "stream", "node", "life", "segments", "frames", "bytes", "first", "last", "gaps", "missing", ` +
				`"gap_list" (the first 10, each {"from", "to", "count"}), "gaps_counted", "duplicates", "ended", ` +
				`"trimmed_below", "hidden"; ` +
				`input: "format", "bytes", "segments", "streams", "frames", "problems", "ok" ` +
				`(first, last and trimmed_below are null when there is none)`},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print only the problems: nothing for a clean input"},
		},
		Action: checkAction,
	}
}

func checkAction(ctx context.Context, c *cli.Command) error {
	limitReadMemory()
	root := c.Root()
	names := c.Args().Slice()
	if len(names) == 0 {
		return usagef("no input given (name capture files, or - for stdin)")
	}
	opts := checkOptions{JSON: c.Bool("json"), Quiet: c.Bool("quiet")}
	return runCheck(ctx, opts, names, root.Reader, root.Writer, root.ErrWriter)
}

// checkOptions are ds check's flags.
type checkOptions struct {
	JSON  bool // one JSON object per finding
	Quiet bool // problems only
}

// runCheck checks each named input (see checkCommand) and returns the
// worst outcome: an input that cannot be read (exit 1), one that is no
// capture (exit 2), a problem found (exit 3).
func runCheck(ctx context.Context, opts checkOptions, names []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var o outcome
	bw := bufio.NewWriterSize(stdout, 64<<10)
	out := &checkOut{w: bw, opts: opts}
	ck := segments.NewChecker() // across inputs: a stream split over files is one stream
	set := envSources()
	for _, name := range expandNames(set, names, stderr, &o) {
		in, err := set.Open(context.Background(), name, stdin, false)
		if err != nil {
			o.fail(stderr, err)
			continue
		}
		out.store = in.Store != nil
		rep, err := ck.Check(ctx, in.R, in.Name, segments.CheckOptions{
			Format: in.Format, Sniff: in.File == nil, Live: in.Live, Store: in.Store != nil,
			Finding: func(f segments.Finding) { out.finding(in.Name, f) },
		})
		in.Close()
		if err != nil {
			if errors.Is(err, context.Canceled) {
				break
			}
			o.fail(stderr, sources.InputError(in.Name, err))
			if errors.Is(err, segments.ErrNotCapture) {
				continue
			}
		}
		out.report(in.Name, rep, err == nil)
		if rep.Problems > 0 {
			o.damage()
		}
		if out.err != nil {
			break
		}
	}
	if err := bw.Flush(); err != nil && out.err == nil {
		out.err = err
	}
	if out.err != nil && !isEPIPE(out.err) {
		return out.err
	}
	return o.status()
}

// finding writes one finding of input name.
func (o *checkOut) finding(name string, f segments.Finding) {
	switch f := f.(type) {
	case *segments.LiveTail:
		o.line(false, checkLive{checkHead{name, "live"}, f.Offset},
			"%s: tail at byte %d still being written (a writer holds the file)", name, f.Offset)
	case *segments.TornTail:
		cause := textfmt.Quote(checkCause(f.Err))
		o.line(true, checkTorn{checkHead{name, "torn"}, f.Offset, f.End, cause},
			"%s: torn tail at byte %d: %s", name, f.Offset, cause)
	case *segments.DamagedRange:
		cause := textfmt.Quote(checkCause(f.Err))
		what := cause
		if f.Records > 1 {
			what = fmt.Sprintf("%d records, the first: %s", f.Records, cause)
		}
		o.line(true, checkDamage{checkHead{name, "damage"}, f.Offset, f.End, f.Records, cause},
			"%s: bytes %d–%d damaged: %s", name, f.Offset, f.End-1, what)
	case *segments.UnknownRecord:
		what := f.Type.String()
		cause := ""
		if f.Err != nil {
			cause = checkCause(f.Err)
			what += " (" + textfmt.Quote(cause) + ")"
		}
		o.line(false, checkUnknown{checkHead{name, "unknown"}, f.Offset, f.Stream.String(), f.Type.String(), cause},
			"%s: byte %d: record of unknown type %s in stream %s, skipped", name, f.Offset, what, textfmt.Quote(f.Stream.String()))
	case *segments.StreamConflict:
		first, second := f.First, f.Second
		o.line(true, checkStreamConflict{
			checkHead: checkHead{name, "stream_conflict"}, Stream: second.Stream.Stream.String(),
			First:  checkStreamPlace{first.Input, first.Offset, first.Stream.Origin.String(), first.Stream.Label},
			Second: checkStreamPlace{second.Input, second.Offset, second.Stream.Origin.String(), second.Stream.Label},
		}, "%s: stream %s described as %s %s and as %s at byte %d",
			name, textfmt.Quote(second.Stream.Stream.String()), checkDescribeStream(first.Stream), checkWhere(name, first.Input, first.Offset), checkDescribeStream(second.Stream), second.Offset)
	case *segments.ChannelConflict:
		first, second := f.First, f.Second
		d := second.Channel
		o.line(true, checkConflict{
			checkHead: checkHead{name, "conflict"}, Stream: d.Stream.String(), ChannelID: d.ID,
			First:  checkPlace{first.Input, first.Offset, first.Channel.Name, first.Channel.Content},
			Second: checkPlace{second.Input, second.Offset, d.Name, d.Content},
		}, "%s: stream %s: channel %d declared as %s %s and as %s at byte %d",
			name, textfmt.Quote(d.Stream.String()), d.ID, checkDescribe(first.Channel), checkWhere(name, first.Input, first.Offset), checkDescribe(d), second.Offset)
	case *segments.SummaryMismatch:
		sum, seg := f.Summary, &f.Segment
		why := checkDisagrees(f)
		o.line(true, checkSummaryFinding{
			checkHead: checkHead{name, "summary"}, Offset: f.Offset, SegmentOffset: f.SegmentOffset,
			Stream: f.Stream.String(), Seq: f.Seq, Disagrees: why,
			Summary: checkCounts{sum.Frames, sum.Bytes, sum.First, sum.Last, sum.Ordered, sum.Ended},
			Segment: checkCounts{seg.Frames, seg.Bytes, seg.First, seg.Last, seg.Ordered, seg.Ended},
		}, "%s: byte %d: summary of stream %s's segment at byte %d disagrees with its frames: %s",
			name, f.Offset, textfmt.Quote(f.Stream.String()), f.SegmentOffset, strings.Join(why, "; "))
	case *segments.TrimmedFrames:
		o.line(true, checkTrimShown{checkHead{name, "trim_shown"}, f.Stream.String(), f.Before, f.Frames},
			"%s: stream %s: a Trimmed record (positions below %d) in a capture file, which holds %s below it: a store's record, hiding nothing here (the views show them)",
			name, textfmt.Quote(f.Stream.String()), f.Before, textfmt.Nouns(f.Frames, "frame"))
	}
}

// checkDisagrees says in words what of a summary disagrees with its
// segment.
func checkDisagrees(f *segments.SummaryMismatch) []string {
	sum, seg := f.Summary, &f.Segment
	var why []string
	if f.Fields&segments.SummaryInvalid != 0 {
		why = append(why, "it contradicts itself ("+textfmt.Quote(checkCause(f.Invalid))+")")
	}
	if f.Fields&segments.SummarySegmentID != 0 {
		why = append(why, fmt.Sprintf("segment id %s, the header's %x", textfmt.Quote(sum.SegmentID), f.SegmentID))
	}
	if f.Fields&segments.SummarySeq != 0 {
		why = append(why, fmt.Sprintf("sequence number %d, the header's %d", sum.Seq, f.Seq))
	}
	if f.Fields&segments.SummaryLength != 0 {
		why = append(why, fmt.Sprintf("length %d bytes, the segment's %d", sum.Length, seg.Length))
	}
	if f.Fields&segments.SummaryCounts != 0 {
		why = append(why, fmt.Sprintf("%s of %d bytes, the segment holds %s of %d bytes", checkNouns(sum.Frames, "frame"), sum.Bytes, checkNouns(seg.Frames, "frame"), seg.Bytes))
	}
	if f.Fields&segments.SummaryPositions != 0 {
		why = append(why, fmt.Sprintf("positions %s, the segment's %s", checkSpan(sum.First, sum.Last), checkSpan(seg.First, seg.Last)))
	}
	if f.Fields&segments.SummaryOrdered != 0 {
		why = append(why, fmt.Sprintf("ordered %v, the segment's frames %s", sum.Ordered, map[bool]string{true: "are in order", false: "are not in order"}[seg.Ordered]))
	}
	if f.Fields&segments.SummaryEnded != 0 {
		why = append(why, fmt.Sprintf("ended %v, the segment %s a StreamEnded record", sum.Ended, map[bool]string{true: "holds", false: "holds no"}[seg.Ended]))
	}
	if f.Fields&segments.SummaryChannelCount != 0 {
		why = append(why, fmt.Sprintf("%s counted, the segment's frames are of %s", checkNouns(uint64(len(sum.Channels)), "channel"), checkNouns(uint64(len(seg.Channels)), "channel")))
	}
	if f.Fields&segments.SummaryChannel != 0 {
		c, g := sum.Channels[f.Channel], seg.Channels[f.Channel]
		why = append(why, fmt.Sprintf("channel %d: %s of %d bytes at %d–%d, the segment's channel %d: %s of %d bytes at %d–%d",
			c.ID, checkNouns(c.Frames, "frame"), c.Bytes, c.First, c.Last, g.ID, checkNouns(g.Frames, "frame"), g.Bytes, g.First, g.Last))
	}
	return why
}

// checkWhere says where a first declaration was, for a finding of input
// name: in this input, or another.
func checkWhere(name, input string, offset int64) string {
	if input != name {
		return fmt.Sprintf("in %s at byte %d", textfmt.Quote(input), offset)
	}
	return fmt.Sprintf("at byte %d", offset)
}

// checkCause is the text of a reader's error, without the package
// prefixes a user need not read.
func checkCause(err error) string {
	var ce *segments.CorruptError
	if errors.As(err, &ce) {
		err = ce.Err
	}
	s := err.Error()
	for _, p := range []string{"segments: ", "wireformat: ", "views: "} {
		s = strings.TrimPrefix(s, p)
	}
	return s
}

// checkDescribeStream is a stream descriptor as the conflict line shows
// it.
func checkDescribeStream(d frames.StreamDescriptor) string {
	label := "no label"
	if d.Label != nil {
		label = "label " + strconv.Quote(*d.Label)
	}
	return "(origin " + d.Origin.String() + ", " + label + ")"
}

// checkDescribe is a descriptor as the conflict line shows it.
func checkDescribe(d frames.ChannelDescriptor) string {
	s := strconv.Quote(d.Name) + " (" + d.Content.String()
	if d.Label != nil {
		s += ", label " + strconv.Quote(*d.Label)
	}
	return s + ")"
}

func checkSpan(a, b *frames.Position) string {
	if a == nil || b == nil {
		return "none"
	}
	return fmt.Sprintf("%d–%d", *a, *b)
}

// report writes the streams of input name and the input's line (read:
// the input was read to its end).
func (o *checkOut) report(name string, rep *segments.CheckReport, read bool) {
	for i := range rep.Streams {
		o.stream(name, &rep.Streams[i])
	}
	fin := checkInput{checkHead{name, "input"}, rep.Format.String(), rep.Bytes, rep.Segments, len(rep.Streams), rep.Frames, rep.Problems, rep.Problems == 0 && read}
	desc := fmt.Sprintf("%d bytes, %s, %s, %s", rep.Bytes, checkNouns(rep.Segments, "segment"), checkNouns(uint64(len(rep.Streams)), "stream"), checkNouns(rep.Frames, "frame"))
	switch {
	case !read:
		o.line(true, fin, "%s: not read to its end: %s", name, desc)
	case rep.Problems == 0:
		o.line(false, fin, "%s: ok: %s", name, desc)
	default:
		o.line(true, fin, "%s: %s: %s", name, checkNouns(rep.Problems, "problem"), desc)
	}
}

// checkListedGaps is how many gaps a stream line lists (the JSON
// gap_list too); the counts cover them all.
const checkListedGaps = 10

// stream writes the line of one stream of input name.
func (o *checkOut) stream(input string, st *segments.StreamCheck) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: stream %s: %s", input, textfmt.Quote(st.Stream.String()), checkNouns(st.Frames, "frame"))
	js := checkStreamJSON{checkHead: checkHead{input, "stream"}, Stream: st.Stream.String(), Node: string(st.Stream.Node), Life: uint64(st.Stream.Life),
		Segments: st.Segments, Frames: st.Frames, Bytes: st.Bytes, Duplicates: st.Duplicates, Ended: st.Ended, GapsCounted: !st.RunsOverflow, GapList: []checkGap{}}
	trimmed := ""
	if st.TrimmedBelow > 0 {
		h := st.TrimmedBelow
		js.TrimmedBelow = &h
		js.Hidden = st.Hidden
		trimmed = fmt.Sprintf(", trimmed below %d", h)
		if js.Hidden > 0 {
			word := "hidden" // by the store
			if !o.store {
				word = "shown" // a capture's record hides nothing
			}
			trimmed += fmt.Sprintf(" (%s below it, %s)", checkNouns(js.Hidden, "position"), word)
		}
	}
	spans := st.Runs
	if len(spans) > 0 {
		first, last := spans[0].From, spans[len(spans)-1].To
		js.First, js.Last = &first, &last
		fmt.Fprintf(&b, " of %d bytes in %s, ", st.Bytes, checkNouns(st.Segments, "segment"))
		b.WriteString(positionRun(first, last))
		gaps, missing := st.Gaps, st.Missing
		js.Gaps, js.Missing = gaps, missing
		switch {
		case st.RunsOverflow:
			b.WriteString(", gaps not counted (too many runs of positions)")
		case gaps == 0:
			b.WriteString(", no gap")
		default:
			fmt.Fprintf(&b, ", %s (%s missing:", checkNouns(gaps, "gap"), checkNouns(missing, "position"))
			for i, sp := range spans[1:] {
				if i == checkListedGaps {
					fmt.Fprintf(&b, " …")
					break
				}
				from, to := spans[i].To+1, sp.From-1
				js.GapList = append(js.GapList, checkGap{from, to, uint64(to-from) + 1})
				if i > 0 {
					b.WriteByte(',')
				}
				if from == to {
					fmt.Fprintf(&b, " %d", from)
				} else {
					fmt.Fprintf(&b, " %d–%d", from, to)
				}
			}
			b.WriteByte(')')
		}
	} else {
		fmt.Fprintf(&b, " in %s", checkNouns(st.Segments, "segment"))
	}
	b.WriteString(trimmed)
	if st.Duplicates > 0 {
		fmt.Fprintf(&b, ", %s (positions seen before)", checkNouns(st.Duplicates, "duplicate"))
	}
	if st.Ended {
		b.WriteString(", ended")
	} else {
		b.WriteString(", not ended")
	}
	o.line(false, js, "%s", b.String())
}

// checkOut writes ds check's findings: text lines, or JSON objects.
type checkOut struct {
	w     *bufio.Writer
	opts  checkOptions
	err   error // the first write error
	store bool  // the input being reported is a store's stream
}

// line writes one finding: js with --json, else the line of format
// and args. A finding that is no problem is left out with -q.
func (o *checkOut) line(problem bool, js any, format string, args ...any) {
	if o.err != nil || o.opts.Quiet && !problem {
		return
	}
	var err error
	if o.opts.JSON {
		var b []byte
		if b, err = json.Marshal(js); err == nil {
			b = append(b, '\n')
			_, err = o.w.Write(b)
		}
	} else {
		line := fmt.Sprintf(format, args...)
		// The input's name leads every line: made safe for a terminal as
		// the rest (names, errors and ids taken from input are quoted by
		// checkSafe where they are put in).
		if name, ok := args[0].(string); ok && strings.HasPrefix(line, name) {
			line = textfmt.Quote(name) + line[len(name):]
		}
		_, err = fmt.Fprintln(o.w, line)
	}
	if err != nil {
		o.err = err
	}
}

// The JSON shapes of the findings (see the --json usage). checkHead
// leads each.
type checkHead struct {
	Input string `json:"input"`
	Kind  string `json:"kind"`
}

type checkDamage struct {
	checkHead
	Offset  int64  `json:"offset"`
	End     int64  `json:"end"`
	Records int    `json:"records"`
	Error   string `json:"error"`
}

type checkTorn struct {
	checkHead
	Offset int64  `json:"offset"`
	End    int64  `json:"end"`
	Error  string `json:"error"`
}

type checkTrimShown struct {
	checkHead
	Stream string          `json:"stream"`
	Before frames.Position `json:"before"`
	Frames uint64          `json:"frames"`
}

type checkLive struct {
	checkHead
	Offset int64 `json:"offset"`
}

type checkUnknown struct {
	checkHead
	Offset int64  `json:"offset"`
	Stream string `json:"stream"`
	Type   string `json:"type"`
	Error  string `json:"error"`
}

type checkPlace struct {
	Input   string                `json:"input"`
	Offset  int64                 `json:"offset"`
	Name    string                `json:"name"`
	Content frames.ChannelContent `json:"content"`
}

type checkConflict struct {
	checkHead
	Stream    string           `json:"stream"`
	ChannelID frames.ChannelID `json:"channel_id"`
	First     checkPlace       `json:"first"`
	Second    checkPlace       `json:"second"`
}

type checkStreamPlace struct {
	Input  string  `json:"input"`
	Offset int64   `json:"offset"`
	Origin string  `json:"origin"`
	Label  *string `json:"label"`
}

type checkStreamConflict struct {
	checkHead
	Stream string           `json:"stream"`
	First  checkStreamPlace `json:"first"`
	Second checkStreamPlace `json:"second"`
}

type checkCounts struct {
	Frames  uint64           `json:"frames"`
	Bytes   uint64           `json:"bytes"`
	First   *frames.Position `json:"first"`
	Last    *frames.Position `json:"last"`
	Ordered bool             `json:"ordered"`
	Ended   bool             `json:"ended"`
}

type checkSummaryFinding struct {
	checkHead
	Offset        int64       `json:"offset"`
	SegmentOffset int64       `json:"segment_offset"`
	Stream        string      `json:"stream"`
	Seq           uint64      `json:"seq"`
	Disagrees     []string    `json:"disagrees"`
	Summary       checkCounts `json:"summary"`
	Segment       checkCounts `json:"segment"`
}

type checkGap struct {
	From  frames.Position `json:"from"`
	To    frames.Position `json:"to"`
	Count uint64          `json:"count"`
}

type checkStreamJSON struct {
	checkHead
	Stream      string           `json:"stream"`
	Node        string           `json:"node"`
	Life        uint64           `json:"life"`
	Segments    uint64           `json:"segments"`
	Frames      uint64           `json:"frames"`
	Bytes       uint64           `json:"bytes"`
	First       *frames.Position `json:"first"`
	Last        *frames.Position `json:"last"`
	Gaps        uint64           `json:"gaps"`
	Missing     uint64           `json:"missing"`
	GapList     []checkGap       `json:"gap_list"`
	GapsCounted bool             `json:"gaps_counted"`
	Duplicates  uint64           `json:"duplicates"`
	Ended       bool             `json:"ended"`
	// TrimmedBelow is the trim horizon (a Trimmed record), null without;
	// Hidden counts the positions left below it.
	TrimmedBelow *frames.Position `json:"trimmed_below"`
	Hidden       uint64           `json:"hidden"`
}

type checkInput struct {
	checkHead
	Format   string `json:"format"`
	Bytes    int64  `json:"bytes"`
	Segments uint64 `json:"segments"`
	Streams  int    `json:"streams"`
	Frames   uint64 `json:"frames"`
	Problems uint64 `json:"problems"`
	OK       bool   `json:"ok"`
}

// checkNouns returns "1 frame", "2 frames".
func checkNouns(n uint64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.FormatUint(n, 10) + " " + what + "s"
}

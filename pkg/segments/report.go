package segments

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/textfmt"
)

// CheckPrinter writes what a [Checker] found, as ds check prints it
// (ds(1)): one text line per finding, per stream and per input, each led
// by the input's name made safe for a terminal, or with JSON one object
// per line, its "input" and "kind" first ("live", "torn", "damage",
// "unknown", "stream_conflict", "conflict", "summary", "trim_shown", "stream",
// "input"). With Quiet, the lines that are no problem are left out. It
// is not safe for concurrent use.
type CheckPrinter struct {
	w     io.Writer
	json  bool
	quiet bool
	err   error // the first write error
	// Store says that the input being reported is a store's stream,
	// whose Trimmed record hides the positions below it (in a capture
	// file it hides nothing); set it before each input's findings.
	Store bool
}

// NewCheckPrinter returns a CheckPrinter writing to w: JSON objects with
// asJSON, problems only with quiet. Every write goes to w as it is made:
// give it a buffered writer.
func NewCheckPrinter(w io.Writer, asJSON, quiet bool) *CheckPrinter {
	return &CheckPrinter{w: w, json: asJSON, quiet: quiet}
}

// Err returns the first write error; after one, nothing more is written.
func (o *CheckPrinter) Err() error { return o.err }

// RunText returns "position 5" or "positions 5–9", the run of positions
// from..to as ds check and ds recover name it.
func RunText(from, to frames.Position) string {
	if from == to {
		return fmt.Sprintf("position %d", from)
	}
	return fmt.Sprintf("positions %d–%d", from, to)
}

// Finding writes one finding f of input name.
func (o *CheckPrinter) Finding(name string, f Finding) {
	switch f := f.(type) {
	case *LiveTail:
		o.line(false, checkLive{checkHead{name, "live"}, f.Offset},
			"%s: tail at byte %d still being written (a writer holds the file)", name, f.Offset)
	case *TornTail:
		cause := textfmt.Quote(checkCause(f.Err))
		o.line(true, checkTorn{checkHead{name, "torn"}, f.Offset, f.End, cause},
			"%s: torn tail at byte %d: %s", name, f.Offset, cause)
	case *DamagedRange:
		cause := textfmt.Quote(checkCause(f.Err))
		what := cause
		if f.Records > 1 {
			what = fmt.Sprintf("%d records, the first: %s", f.Records, cause)
		}
		o.line(true, checkDamage{checkHead{name, "damage"}, f.Offset, f.End, f.Records, cause},
			"%s: bytes %d–%d damaged: %s", name, f.Offset, f.End-1, what)
	case *UnknownRecord:
		what := f.Type.String()
		cause := ""
		if f.Err != nil {
			cause = checkCause(f.Err)
			what += " (" + textfmt.Quote(cause) + ")"
		}
		o.line(false, checkUnknown{checkHead{name, "unknown"}, f.Offset, f.Stream.String(), f.Type.String(), cause},
			"%s: byte %d: record of unknown type %s in stream %s, skipped", name, f.Offset, what, textfmt.Quote(f.Stream.String()))
	case *StreamConflict:
		first, second := f.First, f.Second
		o.line(true, checkStreamConflict{
			checkHead: checkHead{name, "stream_conflict"}, Stream: second.Stream.Stream.String(),
			First:  checkStreamPlace{first.Input, first.Offset, first.Stream.Origin.String(), first.Stream.Label},
			Second: checkStreamPlace{second.Input, second.Offset, second.Stream.Origin.String(), second.Stream.Label},
		}, "%s: stream %s described as %s %s and as %s at byte %d",
			name, textfmt.Quote(second.Stream.Stream.String()), checkDescribeStream(first.Stream), checkWhere(name, first.Input, first.Offset), checkDescribeStream(second.Stream), second.Offset)
	case *ChannelConflict:
		first, second := f.First, f.Second
		d := second.Channel
		finding := checkConflict{
			checkHead: checkHead{name, "conflict"}, Stream: d.Stream.String(), ChannelID: d.ID,
			First:  checkPlace{first.Input, first.Offset, first.Channel.Name, first.Channel.Content},
			Second: checkPlace{second.Input, second.Offset, d.Name, d.Content},
		}
		if first.Input == second.Input && first.Offset == second.Offset {
			// Twice in one header's catalog.
			o.line(true, finding, "%s: stream %s: channel %d declared twice in the header at byte %d, as %s and as %s",
				name, textfmt.Quote(d.Stream.String()), d.ID, second.Offset, checkDescribe(first.Channel), checkDescribe(d))
			break
		}
		o.line(true, finding, "%s: stream %s: channel %d declared as %s %s and as %s at byte %d",
			name, textfmt.Quote(d.Stream.String()), d.ID, checkDescribe(first.Channel), checkWhere(name, first.Input, first.Offset), checkDescribe(d), second.Offset)
	case *SummaryMismatch:
		sum, seg := f.Summary, &f.Segment
		why := checkDisagrees(f)
		o.line(true, checkSummaryFinding{
			checkHead: checkHead{name, "summary"}, Offset: f.Offset, SegmentOffset: f.SegmentOffset,
			Stream: f.Stream.String(), Seq: f.Seq, Disagrees: why,
			Summary: checkCounts{sum.Frames, sum.Bytes, sum.First, sum.Last, sum.Ordered, sum.Ended},
			Segment: checkCounts{seg.Frames, seg.Bytes, seg.First, seg.Last, seg.Ordered, seg.Ended},
		}, "%s: byte %d: summary of stream %s's segment at byte %d disagrees with its frames: %s",
			name, f.Offset, textfmt.Quote(f.Stream.String()), f.SegmentOffset, strings.Join(why, "; "))
	case *TrimmedFrames:
		o.line(true, checkTrimShown{checkHead{name, "trim_shown"}, f.Stream.String(), f.Before, f.Frames},
			"%s: stream %s: a Trimmed record (positions below %d) in a capture file, which holds %s below it: a store's record, hiding nothing here (the views show them)",
			name, textfmt.Quote(f.Stream.String()), f.Before, textfmt.Nouns(f.Frames, "frame"))
	}
}

// checkDisagrees says in words what of a summary disagrees with its
// segment.
func checkDisagrees(f *SummaryMismatch) []string {
	sum, seg := f.Summary, &f.Segment
	var why []string
	if f.Fields&SummaryInvalid != 0 {
		why = append(why, "it contradicts itself ("+textfmt.Quote(checkCause(f.Invalid))+")")
	}
	if f.Fields&SummarySegmentID != 0 {
		why = append(why, fmt.Sprintf("segment id %s, the header's %x", textfmt.Quote(sum.SegmentID), f.SegmentID))
	}
	if f.Fields&SummarySeq != 0 {
		why = append(why, fmt.Sprintf("sequence number %d, the header's %d", sum.Seq, f.Seq))
	}
	if f.Fields&SummaryLength != 0 {
		why = append(why, fmt.Sprintf("length %d bytes, the segment's %d", sum.Length, seg.Length))
	}
	if f.Fields&SummaryCounts != 0 {
		why = append(why, fmt.Sprintf("%s of %d bytes, the segment holds %s of %d bytes", textfmt.Nouns(sum.Frames, "frame"), sum.Bytes, textfmt.Nouns(seg.Frames, "frame"), seg.Bytes))
	}
	if f.Fields&SummaryPositions != 0 {
		why = append(why, fmt.Sprintf("positions %s, the segment's %s", checkSpan(sum.First, sum.Last), checkSpan(seg.First, seg.Last)))
	}
	if f.Fields&SummaryOrdered != 0 {
		why = append(why, fmt.Sprintf("ordered %v, the segment's frames %s", sum.Ordered, map[bool]string{true: "are in order", false: "are not in order"}[seg.Ordered]))
	}
	if f.Fields&SummaryEnded != 0 {
		why = append(why, fmt.Sprintf("ended %v, the segment %s a StreamEnded record", sum.Ended, map[bool]string{true: "holds", false: "holds no"}[seg.Ended]))
	}
	if f.Fields&SummaryChannelCount != 0 {
		why = append(why, fmt.Sprintf("%s counted, the segment's frames are of %s", textfmt.Nouns(uint64(len(sum.Channels)), "channel"), textfmt.Nouns(uint64(len(seg.Channels)), "channel")))
	}
	if f.Fields&SummaryChannel != 0 {
		c, g := sum.Channels[f.Channel], seg.Channels[f.Channel]
		why = append(why, fmt.Sprintf("channel %d: %s of %d bytes at %d–%d, the segment's channel %d: %s of %d bytes at %d–%d",
			c.ID, textfmt.Nouns(c.Frames, "frame"), c.Bytes, c.First, c.Last, g.ID, textfmt.Nouns(g.Frames, "frame"), g.Bytes, g.First, g.Last))
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
	var ce *CorruptError
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

// Report writes the lines of the streams of input name that rep holds,
// then the input's line (read: the input was read to its end; else it
// says the input was not).
func (o *CheckPrinter) Report(name string, rep *CheckReport, read bool) {
	for i := range rep.Streams {
		o.stream(name, &rep.Streams[i])
	}
	fin := checkInput{checkHead{name, "input"}, rep.Format.String(), rep.Bytes, rep.Segments, len(rep.Streams), rep.Frames, rep.Problems, rep.Problems == 0 && read}
	desc := fmt.Sprintf("%d bytes, %s, %s, %s", rep.Bytes, textfmt.Nouns(rep.Segments, "segment"), textfmt.Nouns(uint64(len(rep.Streams)), "stream"), textfmt.Nouns(rep.Frames, "frame"))
	switch {
	case !read:
		o.line(true, fin, "%s: not read to its end: %s", name, desc)
	case rep.Problems == 0:
		o.line(false, fin, "%s: ok: %s", name, desc)
	default:
		o.line(true, fin, "%s: %s: %s", name, textfmt.Nouns(rep.Problems, "problem"), desc)
	}
}

// checkListedGaps is how many gaps a stream line lists (the JSON
// gap_list too); the counts cover them all.
const checkListedGaps = 10

// stream writes the line of one stream of input name.
func (o *CheckPrinter) stream(input string, st *StreamCheck) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: stream %s: %s", input, textfmt.Quote(st.Stream.String()), textfmt.Nouns(st.Frames, "frame"))
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
			if !o.Store {
				word = "shown" // a capture's record hides nothing
			}
			trimmed += fmt.Sprintf(" (%s below it, %s)", textfmt.Nouns(js.Hidden, "position"), word)
		}
	}
	spans := st.Runs
	if len(spans) > 0 {
		first, last := spans[0].From, spans[len(spans)-1].To
		js.First, js.Last = &first, &last
		fmt.Fprintf(&b, " of %d bytes in %s, ", st.Bytes, textfmt.Nouns(st.Segments, "segment"))
		b.WriteString(RunText(first, last))
		gaps, missing := st.Gaps, st.Missing
		js.Gaps, js.Missing = gaps, missing
		switch {
		case st.RunsOverflow:
			b.WriteString(", gaps not counted (too many runs of positions)")
		case gaps == 0:
			b.WriteString(", no gap")
		default:
			fmt.Fprintf(&b, ", %s (%s missing:", textfmt.Nouns(gaps, "gap"), textfmt.Nouns(missing, "position"))
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
		fmt.Fprintf(&b, " in %s", textfmt.Nouns(st.Segments, "segment"))
	}
	b.WriteString(trimmed)
	if st.Duplicates > 0 {
		fmt.Fprintf(&b, ", %s (positions seen before)", textfmt.Nouns(st.Duplicates, "duplicate"))
	}
	if st.Ended {
		b.WriteString(", ended")
	} else {
		b.WriteString(", not ended")
	}
	o.line(false, js, "%s", b.String())
}

// line writes one finding: js with --json, else the line of format
// and args. A finding that is no problem is left out with -q.
func (o *CheckPrinter) line(problem bool, js any, format string, args ...any) {
	if o.err != nil || o.quiet && !problem {
		return
	}
	var err error
	if o.json {
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

type checkTrimShown struct {
	checkHead
	Stream string          `json:"stream"`
	Before frames.Position `json:"before"`
	Frames uint64          `json:"frames"`
}

type checkTorn struct {
	checkHead
	Offset int64  `json:"offset"`
	End    int64  `json:"end"`
	Error  string `json:"error"`
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

// MergeSummary is the last line ds merge and ds recover (recovering) print
// on stderr, of a merge into out (- for stdout): what was merged, from
// how many inputs, and its duplicates, conflicts, gaps, trims, spills
// and (recovering) losses, "ds: " first, no newline.
func MergeSummary(r MergeReport, out string, recovering bool) string {
	to := out
	if to == "-" {
		to = "stdout"
	}
	verb := "merged"
	if recovering {
		verb = "recovered"
	}
	s := fmt.Sprintf("ds: %s %s of %s from %s into %s", verb, textfmt.Nouns(r.Frames, "frame"), textfmt.Nouns(uint64(r.Streams), "stream"), textfmt.Nouns(uint64(r.Inputs), "input"), to)
	var parts []string
	if !recovering || r.Duplicates > 0 {
		parts = append(parts, textfmt.Nouns(r.Duplicates, "duplicate")+" collapsed")
	}
	if !recovering || r.Conflicts > 0 {
		parts = append(parts, textfmt.Nouns(r.Conflicts, "conflict"))
	}
	gaps := textfmt.Nouns(r.Gaps, "gap")
	if r.Gaps > 0 {
		gaps += fmt.Sprintf(" (%s missing)", textfmt.Nouns(r.Missing, "frame"))
	}
	parts = append(parts, gaps)
	if r.Trimmed > 0 {
		parts = append(parts, textfmt.Nouns(r.Trimmed, "frame")+" below a store's trim horizon dropped")
	}
	if r.SpilledFrames > 0 {
		parts = append(parts, fmt.Sprintf("%s (%.1f MiB) sorted in temporary files", textfmt.Nouns(r.SpilledFrames, "frame"), float64(r.SpilledBytes)/(1<<20)))
	}
	if recovering {
		switch {
		case r.Damaged && r.Repaired == r.DamageCount:
			parts = append(parts, textfmt.Nouns(uint64(r.Repaired), "damaged segment header")+" repaired")
		case r.Damaged && r.Repaired > 0:
			parts = append(parts, textfmt.Nouns(uint64(r.DamageCount-r.Repaired), "damaged range")+" skipped", textfmt.Nouns(uint64(r.Repaired), "damaged segment header")+" repaired")
		case r.Damaged:
			parts = append(parts, textfmt.Nouns(uint64(r.DamageCount), "damaged range")+" skipped")
		}
		if r.Unknown > 0 {
			parts = append(parts, textfmt.Nouns(r.Unknown, "record")+" of unknown types not kept")
		}
		if !r.Damaged && r.Gaps == 0 && r.Unknown == 0 {
			parts = append(parts, "nothing lost")
		}
	}
	return s + ": " + strings.Join(parts, ", ")
}

// IngestLine is the acknowledgement line ds ingest and ds collect print
// of what was stored from input: frames stored, duplicates and conflicts,
// and those below the trim horizon (when any), the name escaped for a
// terminal (textfmt.Escape), no newline.
func IngestLine(input string, stored, dups, conflicts, trimmed uint64) string {
	line := fmt.Sprintf("%s: %s stored, %s, %s", textfmt.Escape(input), textfmt.Nouns(stored, "frame"), textfmt.Nouns(dups, "duplicate"), textfmt.Nouns(conflicts, "conflict"))
	if trimmed > 0 {
		line += fmt.Sprintf(", %d below the trim horizon", trimmed)
	}
	return line
}

package viewer

import (
	"context"
	"errors"
	"io"
	"math"
	"os"
	"slices"
	"sort"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/sources"
	"github.com/ds-telemetry/ds/pkg/views"
)

// Info is ds info (ds(1)): the summary of the named inputs (views.Info),
// as text or, with asJSON, JSON, on r.Stdout. A DSS capture file is
// summarised from its end (its segments' summaries) unless scanAll;
// other inputs are read whole. One capture is trusted to be in order;
// several inputs, stdin, or a file whose segments are out of order
// (OutOfOrder) are counted exactly (views.NewExactInfo). It keeps going
// past a bad input; the error is the output's (when every input was
// read) or the inputs' worst outcome (*sources.StatusError).
func (r *Inputs) Info(ctx context.Context, names []string, scanAll, asJSON bool) error {
	info, o := r.gather(ctx, names, scanAll)
	var werr error
	if asJSON {
		werr = info.WriteJSON(r.Stdout)
	} else {
		werr = info.WriteText(r.Stdout)
	}
	if werr != nil && !isEPIPE(werr) && !o.FailedInput() {
		return werr
	}
	return o.Err()
}

// Channels returns the names of the channels of the named inputs, sorted
// and each once, gathered as [Inputs.Info] gathers them (a capture file
// from its end: its segments' headers and summaries), for the shell
// completion of -c (ds completion channels). Channels without a
// descriptor have no name and are left out. What the inputs' damage or
// failures say goes to r.Stderr; the error is the inputs' worst outcome
// (*sources.StatusError), with the names of what could be read.
func (r *Inputs) Channels(ctx context.Context, names []string) ([]string, error) {
	info, o := r.gather(ctx, names, false)
	_, streams := info.Summary()
	seen := map[string]bool{}
	var out []string
	for _, st := range streams {
		for _, ch := range st.Channels {
			if ch.Name != "" && !seen[ch.Name] {
				seen[ch.Name] = true
				out = append(out, ch.Name)
			}
		}
	}
	slices.Sort(out)
	return out, o.Err()
}

// gather reads the named inputs into a views.Info, as Info describes.
func (r *Inputs) gather(ctx context.Context, names []string, scanAll bool) (*views.Info, *sources.Outcome) {
	o := new(sources.Outcome)
	names = r.Expand(names, o) // a directory: its captures
	// One capture is trusted to be in order, so that one whose head is
	// missing is summarised from its summaries; copies in several inputs
	// (or a pipe) are counted exactly, in any order.
	info := views.NewInfo(0)
	if len(names) > 1 || len(names) == 1 && (names[0] == "-" || OutOfOrder(names[0])) {
		info = views.NewExactInfo(0)
	}
	later := r.laterRanges(ctx, names, scanAll)
	for i, name := range names {
		in, err := r.Set.Open(ctx, name, r.Stdin, false)
		if err != nil {
			o.Fail(r.Stderr, err)
			continue
		}
		info.File(in.Name)
		rep := in.Reporter(info, r.Stderr)
		if in.File != nil && in.Size >= 0 && !scanAll && in.Format == segments.InputDSS {
			err = infoFromEnd(ctx, in, info, rep, later[i])
			info.FileSize(in.Size)
		} else {
			err = in.Scan(ctx, segments.ScanOptions{}, rep, r.Stderr)
			size := in.Size
			if size < 0 || in.Live {
				size = in.BytesRead // stdin, a pipe, or a file still growing: what was read
			}
			info.FileSize(size)
		}
		in.Close()
		if rep.Damaged {
			o.Damage()
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			o.Fail(r.Stderr, sources.InputError(name, err))
		}
	}
	return info, o
}

// infoFromEnd summarises a capture file from its end: the segments whose
// summaries tell Info all it needs are taken from their headers and
// summaries; the others (no summary, one that does not check, one that
// does not suffice, or one whose positions a later segment of its stream
// holds too, in this input or in later ones, later) are read record by
// record, with their damage reported. A segment whose positions come
// again later is read so that the assembler keeps its frames' hashes:
// the later copies (a conflicting copy ds merge wrote after its first, a
// second capture of the stream) are then compared, not counted "not
// compared" (issue 22). The walk from the end keeps only where each segment is; a
// summarised segment's header and summary are read again, in file order,
// when Info takes it. A capture of many small segments (captures of a few
// frames, concatenated) is read record by record at once: its summaries
// would save nothing.
func infoFromEnd(ctx context.Context, in *sources.Input, info *views.Info, sink segments.Sink, later positionSets) error {
	later = later.clone() // this input's segments join it as they are walked
	type place struct {
		off, end   int64
		summarised bool
		span       *segments.Span // kept for the first keptSpans places
	}
	var places []place
	kept := 0 // channels of the headers of the spans kept
	w := segments.NewBackWalker(in.File, in.Size)
	for {
		sp, err := w.Prev()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		pl := place{sp.Offset, sp.End, sp.Header != nil && sp.Summary != nil, nil}
		if pl.summarised && sp.Summary.Frames > 0 && sp.Summary.First != nil && sp.Summary.Last != nil {
			s, first, last := sp.Header.Stream.Stream, *sp.Summary.First, *sp.Summary.Last
			if later.overlaps(s, first, last) {
				pl.summarised = false // read its frames, to compare the later copies
			}
			later = later.add(s, first, last)
		}
		if pl.summarised && len(places) < keptSpans && kept+len(sp.Header.Channels) <= keptChannels {
			pl.span = &sp
			kept += len(sp.Header.Channels)
		}
		places = append(places, pl)
		if len(places) >= manySegments && in.Size/int64(len(places)) < smallSegment {
			sr := io.NewSectionReader(in.File, 0, in.Size)
			return segments.Scan(ctx, sr, segments.ScanOptions{}, sink)
		}
	}
	// Segments that must be read are read in runs, one Scan each: damage
	// at the end of a segment that more input follows is no torn tail.
	scanFrom, scanTo := int64(-1), int64(-1)
	flush := func() error {
		if scanFrom < 0 {
			return nil
		}
		sr := io.NewSectionReader(in.File, scanFrom, scanTo-scanFrom)
		s := sink
		if scanTo < in.Size {
			s = notTorn{sink}
		}
		err := segments.Scan(ctx, sr, segments.ScanOptions{Offset: scanFrom}, s)
		scanFrom = -1
		return err
	}
	refused := 0 // summaries Info could not take: past a few, read the rest
	for i := len(places) - 1; i >= 0; i-- {
		p := places[i]
		if p.summarised && refused < maxRefused {
			sp, err := segments.Span{}, error(nil)
			if p.span != nil {
				sp = *p.span
			} else if sp, err = segments.NewBackWalker(in.File, p.end).Prev(); err != nil {
				return err
			}
			if sp.Offset == p.off && sp.Header != nil && sp.Summary != nil {
				if err := flush(); err != nil {
					return err
				}
				h := segments.SegmentHeader{Stream: sp.Header.Stream, Channels: sp.Header.Channels, Seq: sp.Header.Seq, Writer: sp.Header.Writer, Offset: sp.Offset}
				if info.AddSummary(h, sp.Summary) {
					continue
				}
				refused++
			}
		}
		if scanFrom < 0 {
			scanFrom = p.off
		}
		scanTo = p.end
	}
	return flush()
}

// notTorn is a sink of part of an input that more input follows: damage
// at its end is no torn tail (the writer did not stop there for good), as
// a reader of the whole input says.
type notTorn struct{ segments.Sink }

func (n notTorn) Damage(offset, end int64, torn bool, err error) {
	n.Sink.Damage(offset, end, false, err)
}

// A capture whose first manySegments segments from its end average less
// than smallSegment bytes is read record by record by ds info. The walk
// keeps the headers and summaries of the last keptSpans segments (a few
// MiB), as long as their catalogs hold at most keptChannels channels in
// all (about 5 MiB of descriptors: the four 16 MiB headers of two wide
// streams once kept 33 MB); the others it reads again.
//
// After maxRefused summaries that Info could not take (segments out of
// order or repeated: copies of a capture concatenated), the rest of the
// capture is read in one run.
const (
	maxRefused   = 8
	manySegments = 1024
	smallSegment = 64 << 10
	keptSpans    = 4096
	keptChannels = 64 << 10
)

// positionSets holds, per stream, the positions that segments read later
// hold, as their summaries say (a set of inclusive runs): a segment of
// ds info whose positions a later one holds too is read, not summarised
// (infoFromEnd). nil is empty.
type positionSets map[frames.StreamID][]posRun

type posRun struct{ from, to frames.Position } // inclusive

// overlaps reports whether any of first..last of stream s is in ps.
func (ps positionSets) overlaps(s frames.StreamID, first, last frames.Position) bool {
	runs := ps[s]
	i := sort.Search(len(runs), func(i int) bool { return runs[i].to >= first })
	return i < len(runs) && runs[i].from <= last
}

// add adds first..last of stream s to ps, which it returns (allocated if
// nil); runs that touch merge.
func (ps positionSets) add(s frames.StreamID, first, last frames.Position) positionSets {
	if ps == nil {
		ps = make(positionSets)
	}
	runs := ps[s]
	// runs[i:j] touch or overlap first..last.
	i := sort.Search(len(runs), func(i int) bool { return runs[i].to == math.MaxUint64 || runs[i].to+1 >= first })
	j := i
	for j < len(runs) && (last == math.MaxUint64 || runs[j].from <= last+1) {
		first, last = min(first, runs[j].from), max(last, runs[j].to)
		j++
	}
	runs = slices.Replace(runs, i, j, posRun{first, last})
	ps[s] = runs
	return ps
}

// clone returns a copy of ps that add does not share.
func (ps positionSets) clone() positionSets {
	if ps == nil {
		return nil
	}
	out := make(positionSets, len(ps))
	for s, runs := range ps {
		out[s] = slices.Clone(runs)
	}
	return out
}

// laterRanges returns, for each of the named inputs of ds info, the
// positions the DSS capture files after it hold, by their segment
// summaries (nil for the last, and for all when scanAll or when there is
// one input): infoFromEnd reads the segments of an input whose positions
// come again later, so that their copies are compared. A file that
// cannot be walked adds nothing (its read says what is wrong).
func (r *Inputs) laterRanges(ctx context.Context, names []string, scanAll bool) []positionSets {
	out := make([]positionSets, len(names))
	if scanAll || len(names) < 2 {
		return out
	}
	var acc positionSets
	for i := len(names) - 1; i > 0; i-- {
		if fi, err := os.Stat(names[i]); err != nil || !fi.Mode().IsRegular() {
			out[i-1] = acc.clone()
			continue // stdin, a store's stream, nats://: read once, later
		}
		in, err := r.Set.Open(ctx, names[i], nil, false)
		if err == nil {
			if in.File != nil && in.Size >= 0 && in.Format == segments.InputDSS {
				w := segments.NewBackWalker(in.File, in.Size)
				for {
					sp, err := w.Prev()
					if err != nil {
						break
					}
					if sm := sp.Summary; sp.Header != nil && sm != nil && sm.Frames > 0 && sm.First != nil && sm.Last != nil {
						acc = acc.add(sp.Header.Stream.Stream, *sm.First, *sm.Last)
					}
				}
			}
			in.Close()
		}
		out[i-1] = acc.clone()
	}
	return out
}

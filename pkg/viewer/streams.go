package viewer

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/ds-telemetry/ds/pkg/fleet"
	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/sources"
	"github.com/ds-telemetry/ds/pkg/views"
)

// ExpectStreams tells p which streams the inputs hold, as far as the
// segment headers of files say within a small budget of reads, so that
// the stream column is on from the first line when there are several
// (views.Printer.Expect). Stdin, pipes and inputs whose headers cannot all
// be found cheaply leave the printer to turn the column on at the first
// line of a second stream.
func (r *Inputs) ExpectStreams(p *views.Printer, names []string) {
	var ids []frames.StreamID
	for _, name := range names {
		found, ok := fileStreams(r.Set, name)
		if !ok {
			// Unknown: a column only if what is known already needs one.
			if len(ids) > 1 {
				p.Expect(ids)
			}
			return
		}
		for _, id := range found {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	p.Expect(ids)
}

// streamsBudget bounds the bytes ExpectStreams reads from one input.
const streamsBudget = 4 << 20

// fileStreams returns the streams of the segment headers of a capture file
// (or of the files of a directory), walking it from its end, or the
// streams of a store or of a store input (from the store's listing); ok
// is false when that cannot be done within streamsBudget or name is not
// a file.
func fileStreams(set *sources.Set, name string) (ids []frames.StreamID, ok bool) {
	if ref, isStore := set.Stream(name); isStore {
		return []frames.StreamID{ref.ID}, true
	}
	if sources.IsStore(name) {
		src, err := set.OpenStore(name)
		if err != nil {
			return nil, true // reported when read
		}
		streams, err := src.Streams(0)
		if err != nil {
			return nil, false
		}
		for _, ss := range streams {
			ids = append(ids, ss.Desc.Stream)
		}
		return ids, true
	}
	ok = walkSpans(name, func(sp segments.Span) {
		if sp.Header != nil && !slices.Contains(ids, sp.Header.Stream.Stream) {
			ids = append(ids, sp.Header.Stream.Stream)
		}
	})
	return ids, ok
}

// FileCursor returns the last position of each stream of a capture file
// (or directory) that the summaries of its segments give, within
// streamsBudget of reads: the cursor of having read it all. Streams whose
// segments have no summary are left out.
func FileCursor(name string) segments.Cursor {
	cur := segments.Cursor{}
	walkSpans(name, func(sp segments.Span) {
		if sp.Header == nil || sp.Summary == nil || sp.Summary.Last == nil {
			return
		}
		id := sp.Header.Stream.Stream
		if old, ok := cur[id]; !ok || *sp.Summary.Last > old {
			cur[id] = *sp.Summary.Last
		}
	})
	return cur
}

// walkSpans calls fn with each span of a capture file, or of the files of
// a directory, from the end; it returns false when that could not be done
// within streamsBudget of reads per file, or name is not a file (stdin,
// a pipe) or holds no DSS header at all.
func walkSpans(name string, fn func(segments.Span)) bool {
	if name == "-" || fleet.IsURL(name) {
		return false
	}
	fi, err := os.Stat(name)
	if err != nil {
		return true // reported when read
	}
	if fi.IsDir() {
		entries, err := os.ReadDir(name)
		if err != nil {
			return true
		}
		for _, e := range entries {
			path := filepath.Join(name, e.Name())
			if e.Name()[0] == '.' {
				continue
			}
			if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
				continue // as the views skip them (a symlink is followed)
			}
			format, ok := detectFile(path)
			switch {
			case !ok:
				// Not a capture: the views skip it.
			case format == segments.InputDSS:
				if !walkSpans(path, fn) {
					return false
				}
			case format == segments.InputDSQ1, format == segments.InputLegacy:
				return false // their streams are not in DSS headers
			}
		}
		return true
	}
	if !fi.Mode().IsRegular() {
		return false
	}
	f, err := os.Open(name)
	if err != nil {
		return true
	}
	defer f.Close()
	w := segments.NewBackWalker(f, fi.Size())
	// The callers want stream ids and summaries: no catalog is decoded,
	// and no read passes the budget (a 16 MiB header is not read).
	w.StreamOnly, w.MaxRead = true, streamsBudget
	headers := 0
	for {
		sp, err := w.Prev()
		if err == io.EOF {
			// No header at all: not a DSS capture (a DSQ1 stream names its
			// stream elsewhere), or an empty one.
			return headers > 0 || fi.Size() == 0
		}
		if err != nil || w.BytesRead > streamsBudget {
			return false
		}
		if sp.Header != nil {
			headers++
		}
		fn(sp)
	}
}

// detectFile returns the format of the capture file at path; ok is false
// when it cannot be read or is no capture.
func detectFile(path string) (format segments.InputFormat, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	format, err = segments.Detect(bufio.NewReader(f))
	return format, err == nil
}

// OutOfOrder reports whether a capture file holds a stream whose segments
// are not in position order in the file (cat b.dss a.dss, or copies
// concatenated): its end is then not its stream's end, and what reads it
// from its end (ds tail) or trusts its order (ds info) must read it whole
// instead. It tells from the segment summaries found walking from the end
// (within the walk's budget); when it cannot tell, it says false.
func OutOfOrder(name string) bool {
	type seg struct{ first, last frames.Position }
	segs := map[frames.StreamID][]seg{} // from the end
	if !walkSpans(name, func(sp segments.Span) {
		if sp.Header != nil && sp.Summary != nil && sp.Summary.First != nil && sp.Summary.Last != nil {
			id := sp.Header.Stream.Stream
			segs[id] = append(segs[id], seg{*sp.Summary.First, *sp.Summary.Last})
		}
	}) {
		return false
	}
	for _, ss := range segs {
		for i := 1; i < len(ss); i++ {
			if ss[i].last >= ss[i-1].first { // ss[i] comes before ss[i-1] in the file
				return true
			}
		}
	}
	return false
}

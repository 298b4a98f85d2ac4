package main

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/views"
)

// expectStreams tells p which streams the inputs hold, as far as the
// segment headers of files say within a small budget of reads, so that
// the stream column is on from the first line when there are several
// (views.Printer.Expect). Stdin, pipes and inputs whose headers cannot all
// be found cheaply leave the printer to turn the column on at the first
// line of a second stream.
func expectStreams(p *views.Printer, names []string) {
	var ids []frames.StreamID
	for _, name := range names {
		found, ok := fileStreams(name)
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

// streamsBudget bounds the bytes expectStreams reads from one input.
const streamsBudget = 4 << 20

// fileStreams returns the streams of the segment headers of a capture file
// (or of the files of a directory), walking it from its end; ok is false
// when that cannot be done within streamsBudget or name is not a file.
func fileStreams(name string) (ids []frames.StreamID, ok bool) {
	ok = walkSpans(name, func(sp segments.Span) {
		if sp.Header != nil && !slices.Contains(ids, sp.Header.Stream.Stream) {
			ids = append(ids, sp.Header.Stream.Stream)
		}
	})
	return ids, ok
}

// fileCursor returns the last position of each stream of a capture file
// (or directory) that the summaries of its segments give, within
// streamsBudget of reads: the cursor of having read it all. Streams whose
// segments have no summary are left out.
func fileCursor(name string) views.Cursor {
	cur := views.Cursor{}
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
	if name == "-" {
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
			case format == views.InputDSS:
				if !walkSpans(path, fn) {
					return false
				}
			case format == views.InputDSQ1, format == views.InputLegacy:
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
func detectFile(path string) (format views.InputFormat, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	format, err = views.Detect(bufio.NewReader(f))
	return format, err == nil
}

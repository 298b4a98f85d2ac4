package main

import (
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
	if name == "-" {
		return nil, false
	}
	fi, err := os.Stat(name)
	if err != nil {
		return nil, true // reported when read
	}
	if fi.IsDir() {
		entries, err := os.ReadDir(name)
		if err != nil {
			return nil, true
		}
		for _, e := range entries {
			if e.Name()[0] == '.' || !e.Type().IsRegular() {
				continue
			}
			found, ok := fileStreams(filepath.Join(name, e.Name()))
			if !ok {
				return nil, false
			}
			ids = append(ids, found...)
		}
		return ids, true
	}
	if !fi.Mode().IsRegular() {
		return nil, false
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, true
	}
	defer f.Close()
	w := segments.NewBackWalker(f, fi.Size())
	for {
		sp, err := w.Prev()
		if err == io.EOF {
			// No header at all: not a DSS capture (a DSQ1 stream names its
			// stream elsewhere), or an empty one.
			return ids, len(ids) > 0 || fi.Size() == 0
		}
		if err != nil || w.BytesRead > streamsBudget {
			return nil, false
		}
		if sp.Header != nil && !slices.Contains(ids, sp.Header.Stream.Stream) {
			ids = append(ids, sp.Header.Stream.Stream)
		}
	}
}

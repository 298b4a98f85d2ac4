package views

import (
	"fmt"
	"io"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/textfmt"
)

// CopyCount is what a view's assembler found of the copies of one
// stream's positions that its output may not say in so many words
// (ARCHITECTURE.md §6 invariant 10; issue 22): Conflicts counts different
// payloads for a position read before (refused: the first copy is the
// one shown), Uncompared the copies whose first copy's hash was no longer
// kept (read too long before, or summarised), taken for identical though
// a conflict among them would have gone unseen (see [segments.Assembler]).
type CopyCount struct {
	Stream                frames.StreamID
	Conflicts, Uncompared uint64
}

// CopyCounts returns the streams of a that had conflicts or copies not
// compared, in order of first appearance; nil when none had.
func CopyCounts(a *segments.Assembler) []CopyCount {
	var out []CopyCount
	for _, s := range a.Streams() {
		if st := a.Stats(s); st.Conflicts+st.Uncompared > 0 {
			out = append(out, CopyCount{Stream: s, Conflicts: st.Conflicts, Uncompared: st.Uncompared})
		}
	}
	return out
}

// maxCopyLines bounds the streams [WarnCopies] names one by one.
const maxCopyLines = 10

// WarnCopies says on w, one line per stream ("ds: warning: stream
// NODE#LIFE: …"), what counts holds: its conflicts, and its copies not
// compared. kept says what the view did with the first copy ("shown",
// "used"). Past maxCopyLines streams, one line totals the rest. Nothing is
// written for none. It returns the first write error.
func WarnCopies(w io.Writer, counts []CopyCount, kept string) error {
	var rest CopyCount
	restStreams := 0
	for i, c := range counts {
		if i >= maxCopyLines {
			rest.Conflicts += c.Conflicts
			rest.Uncompared += c.Uncompared
			restStreams++
			continue
		}
		if err := warnCopies(w, "stream "+c.Stream.String(), c, kept); err != nil {
			return err
		}
	}
	if restStreams > 0 {
		return warnCopies(w, fmt.Sprintf("%s more", textfmt.Nouns(uint64(restStreams), "stream")), rest, kept)
	}
	return nil
}

func warnCopies(w io.Writer, where string, c CopyCount, kept string) error {
	if c.Conflicts > 0 {
		if _, err := fmt.Fprintf(w, "ds: warning: %s: %s (a different payload for a position already read; the first copy is %s); ds gaps lists them\n", where, textfmt.Nouns(c.Conflicts, "conflict"), kept); err != nil {
			return err
		}
	}
	if c.Uncompared > 0 {
		if _, err := fmt.Fprintf(w, "ds: warning: %s: %s not compared with the first (read too long before): a conflict among them would go unseen\n", where, textfmt.Nouns(c.Uncompared, "copy")); err != nil {
			return err
		}
	}
	return nil
}

// Copies returns what the series' assembler found of copies
// ([CopyCounts]): call it after Close.
func (s *Series) Copies() []CopyCount { return CopyCounts(s.a) }

// Copies returns what the assembler of l found of copies ([CopyCounts]):
// call it after Flush.
func (l *Latest) Copies() []CopyCount { return CopyCounts(l.a) }

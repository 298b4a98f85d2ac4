package viewer

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/sources"
	"github.com/ds-telemetry/ds/pkg/textfmt"
	"github.com/ds-telemetry/ds/pkg/views"
)

// Log prints the merged log of the named inputs to r.Stdout as ds log
// does (views.Printer with opts; see Scan for follow), with its warnings
// on r.Stderr, and returns the printer, for its cursor. The printer is
// nil when the output failed: a closed pipe is then no error. The error
// is the inputs' worst outcome (a *sources.StatusError) or the output's.
func (r *Inputs) Log(ctx context.Context, names []string, opts views.LogOptions, follow bool) (*views.Printer, error) {
	p := views.NewPrinter(r.Stdout, opts)
	r.ExpectStreams(p, names)
	sink := views.NewLogSink(p, 0)
	// sinkFor may run in another goroutine (a followed directory): it
	// must not touch the shared sink.
	err := r.Scan(ctx, names, follow, func(in *sources.Input) segments.Sink {
		return inputLogSink{sink, in.Name}
	}, nil)
	sink.A.Flush()
	if cerr := p.Close(); cerr != nil {
		if isEPIPE(cerr) {
			return nil, err
		}
		return nil, cerr
	}
	if l := p.Losses(); opts.Format == views.FormatCat && l.Gaps+l.Drops+l.Transport > 0 {
		WarnCatLosses(r.Stderr, l)
	}
	views.WarnCopies(r.Stderr, views.CopyCounts(sink.A), "shown")
	WarnSelection(r.Stderr, p)
	return p, err
}

// inputLogSink is the log sink shared by merged inputs, as one input feeds
// it: its damage lines name that input. The merge calls the sinks one at
// a time.
type inputLogSink struct {
	*views.LogSink
	name string
}

// Damage implements segments.Sink.
func (s inputLogSink) Damage(offset, end int64, torn bool, err error) {
	s.File = s.name
	s.LogSink.Damage(offset, end, torn, err)
}

// WarnCatLosses says on w, in one line, that --cat output lacks frames
// that ds log would have shown as gaps and drops: the losses of this
// input. Transport losses (frames an output of the stream, ds wrap -o
// nats://…, did not deliver) are no loss of this input: the copy that
// lacks them has gaps there, and any other holds them. A second line
// notes them.
func WarnCatLosses(w io.Writer, l views.Losses) {
	var parts []string
	if l.Gaps > 0 {
		parts = append(parts, fmt.Sprintf("%s (%s missing)", textfmt.Nouns(l.Gaps, "gap"), textfmt.Nouns(l.MissingFrames, "frame")))
	}
	if l.Drops > 0 {
		parts = append(parts, fmt.Sprintf("%s dropped at the writer's queue in %s", textfmt.Nouns(l.DroppedFrames, "frame"), textfmt.Nouns(l.Drops, "place")))
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "ds: warning: output incomplete: %s; ds log shows where\n", strings.Join(parts, ", "))
	}
	if l.Transport > 0 {
		fmt.Fprintf(w, "ds: note: the stream records %s (%s not delivered by an output of it); ds log shows where\n", textfmt.Nouns(l.Transport, "transport loss"), textfmt.Nouns(l.UndeliveredFrames, "frame"))
	}
}

// WarnSelection says on w which filters of p matched nothing in the
// inputs and which streams could not be placed in time.
func WarnSelection(w io.Writer, p *views.Printer) {
	if u := p.Unmatched(); len(u) > 0 {
		fmt.Fprintf(w, "ds: nothing in the inputs matches %s\n", strings.Join(u, ", "))
	}
	if u := p.Untimed(); len(u) > 0 {
		names := make([]string, len(u))
		for i, s := range u {
			names[i] = s.String()
		}
		fmt.Fprintf(w, "ds: warning: --since/--until: %s has no clock records before its frames; not shown\n", strings.Join(names, ", "))
	}
}

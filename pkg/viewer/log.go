package viewer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ds-telemetry/ds/pkg/fleet"
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

// LogLast is ds log -n N (journalctl -n): the last n lines of the merged
// log of the named inputs, as Log prints them with opts, to r.Stdout, and
// the cursor of what was read. One capture file is read from its end, as
// ds tail reads it (views.Tail, views.TailStreams: what it costs does not
// grow with the file); one pipe, import or nats:// input as ds tail reads
// it; several inputs (or a directory, a store) are merged as Log merges
// them, keeping the last n lines in memory (views.LineRing: memory is
// what the n lines hold). n 0 prints nothing. The error is as Log's; a
// closed stdout is none.
func (r *Inputs) LogLast(ctx context.Context, names []string, opts views.LogOptions, n int) (segments.Cursor, error) {
	if n <= 0 {
		quiet := *r
		quiet.Stdout = io.Discard
		p, err := quiet.Log(ctx, names, opts, false)
		if p == nil {
			return nil, err
		}
		return p.Cursor(), err
	}
	if len(names) == 1 && r.single(names[0]) {
		var o sources.Outcome
		var src *sources.NATS
		if fleet.IsURL(names[0]) {
			var err error
			if src, err = r.Set.OpenNATS(names[0]); err != nil {
				o.Fail(r.Stderr, err)
				return nil, o.Err()
			}
			defer src.Close()
		}
		d, cur, err := r.tailOne(ctx, names[0], src, r.Stdout, views.TailOptions{Lines: n, Log: opts})
		if d {
			o.Damage()
		}
		if err != nil {
			if isEPIPE(err) {
				return cur, nil
			}
			o.Fail(r.Stderr, err)
		}
		return cur, o.Err()
	}
	ring := views.NewLineRing(n)
	keep := *r
	keep.Stdout = ring
	p, err := keep.Log(ctx, names, opts, false)
	if p == nil {
		return nil, err
	}
	if werr := ring.WriteLines(r.Stdout); werr != nil {
		return nil, quietEPIPE(werr)
	}
	return p.Cursor(), err
}

// single reports whether name is one input that ds tail reads as one: a
// file, stdin, a nats:// URL (not a directory, a store or a stream of
// one).
func (r *Inputs) single(name string) bool {
	if name == "-" || fleet.IsURL(name) {
		return true
	}
	if r.Set.IsStream(name) {
		return false
	}
	fi, err := os.Stat(name)
	return err == nil && !fi.IsDir()
}

// LogFrom is ds tail -n +N (tail(1)'s "from line N"): what Log prints of
// each named input with opts from its line from on (1-based; 1 or less:
// all of it), each input's after a "==> NAME <==" line when there are
// several, as Tail prints them. With follow (one input only), it then
// prints what is written to the input, as Log does with follow. The
// error is as Tail's.
func (r *Inputs) LogFrom(ctx context.Context, names []string, opts views.LogOptions, from int64, follow bool) error {
	var o sources.Outcome
	names = r.Expand(names, &o)
	var worst error
	for k, name := range names {
		if len(names) > 1 {
			sep := "\n"
			if k == 0 {
				sep = ""
			}
			if _, err := fmt.Fprintf(r.Stdout, "%s==> %s <==\n", sep, textfmt.Quote(sources.InputName(name))); err != nil {
				return quietEPIPE(err)
			}
		}
		skip := *r
		skip.Stdout = views.SkipLines(r.Stdout, from-1)
		p, err := skip.Log(ctx, []string{name}, opts, follow)
		if p == nil && err == nil {
			return nil // stdout closed
		}
		var se *sources.StatusError
		switch {
		case err == nil:
		case errors.As(err, &se):
			if worst == nil || se.Status > worst.(*sources.StatusError).Status {
				worst = se
			}
		default:
			return err
		}
	}
	if o.FailedInput() {
		return o.Err()
	}
	if worst != nil {
		return worst
	}
	return o.Err()
}

package capture

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// An Output is a further destination of a capture's stream beside its
// file: a fanout subscriber of the capture's endpoint with its own
// bounded buffer (a NATS JetStream publisher, fleet.Publisher behind a
// small adapter). [Options].Outputs subscribes it; the capture loop then
// hands it every drained batch, and [Capture.Finish] settles and closes
// it after the capture file is complete. Take, Settle and Close are
// called from the capture's goroutines one at a time per Output; Waiting
// and Name may be called at any time.
type Output interface {
	// Name names the output in messages (a NATS target's Display).
	Name() string
	// Take copies what the output's subscription holds; with flush, it
	// also sends what it has copied now. It is called right after every
	// tick, before the frames' payloads are reused, and must never wait
	// on the network.
	Take(flush bool)
	// Waiting returns the bytes held and not yet acknowledged.
	Waiting() int64
	// Settle waits, until ctx is done, for everything taken so far to be
	// delivered, and then submits to the endpoint the records of what
	// was lost meanwhile (datastream.transport). It returns ctx's error
	// when delivery did not finish in time.
	Settle(ctx context.Context) error
	// Close waits, until ctx is done, for the last messages (the stream's
	// end, taken after the endpoint's End) to be delivered, stops the
	// output, releases what it holds (its connection included) and
	// reports what it lost.
	Close(ctx context.Context) OutputReport
}

// An OutputReport says what an [Output] lost, for the end-of-run warning.
type OutputReport struct {
	Output     string // the output's Name
	LostFrames uint64 // frames this output lost, recorded in the stream or not
	// Unrecorded are the ranges lost that no datastream.transport record
	// names (those lost at the end).
	Unrecorded []frames.TransportLoss
}

// An output's time at the end of a capture ([Capture.Finish]): up to
// outputSettle for what the producer wrote, and the rest of outputGrace
// for the stream's last records and its end.
const (
	outputGrace  = 5 * time.Second
	outputSettle = 2 * time.Second
)

// takeOutputs hands the batch just drained to every output.
func (c *Capture) takeOutputs(flush bool) {
	for _, o := range c.outs {
		o.Take(flush)
	}
}

// settleOutputs waits, until ctx is done, for every output to have its
// messages acknowledged and to submit the records of what it lost; it
// reports whether there are outputs (whose records then need a tick).
// The outputs settle at once, each on its own: a dead server costs only
// its own output the wait.
func (c *Capture) settleOutputs(ctx context.Context) bool {
	var wg sync.WaitGroup
	for _, o := range c.outs {
		if w := o.Waiting(); w > 1<<20 {
			fmt.Fprintf(c.warn, "ds: waiting up to %v for %s to acknowledge %d MiB\n", outputGrace, o.Name(), w>>20)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = o.Settle(ctx)
		}()
	}
	wg.Wait()
	return len(c.outs) > 0
}

// An OutputsLostError is what [Capture.Finish] returns when the capture
// has no file and no stdout, only outputs such as NATS servers, and every
// one of them lost frames: then no copy of the run holds them, and ds
// failed to record it (as a write error on a file fails it), whatever the
// command did.
type OutputsLostError struct {
	Reports []OutputReport // one per output, each with LostFrames > 0
}

func (e *OutputsLostError) Error() string {
	var b strings.Builder
	for i, r := range e.Reports {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s lost %d frames", r.Output, r.LostFrames)
	}
	b.WriteString(", and no capture file has them")
	return b.String()
}

// closeOutputs waits, until ctx is done, for every output to have its
// last messages acknowledged (all at once, each on its own), and reports
// what each output lost. It returns an [*OutputsLostError] when the
// outputs are the capture's only copies and each of them lost frames.
func (c *Capture) closeOutputs(ctx context.Context) error {
	reps := make([]OutputReport, len(c.outs))
	var wg sync.WaitGroup
	for i, o := range c.outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reps[i] = o.Close(ctx)
		}()
	}
	wg.Wait()
	lost := 0
	for _, rep := range reps {
		c.reportOutput(rep)
		if rep.LostFrames > 0 {
			lost++
		}
	}
	if c.w == nil && len(reps) > 0 && lost == len(reps) {
		return &OutputsLostError{Reports: reps}
	}
	return nil
}

// reportOutput says what an output lost: how many frames, whether the
// capture file has them, and the ranges no datastream.transport record
// names.
func (c *Capture) reportOutput(rep OutputReport) {
	if rep.LostFrames == 0 {
		return
	}
	where := "no capture file has them"
	if c.w != nil {
		where = "the capture " + c.name + " has them"
	}
	fmt.Fprintf(c.warn, "ds: warning: %s lost %d frames (%s); ds gaps shows where and why\n", rep.Output, rep.LostFrames, where)
	for i, l := range rep.Unrecorded {
		if i == 8 {
			fmt.Fprintf(c.warn, "ds:   … and %d more ranges\n", len(rep.Unrecorded)-i)
			break
		}
		fmt.Fprintf(c.warn, "ds:   %s not delivered: %s\n", segments.RunText(l.From, l.To), l.Reason)
	}
}

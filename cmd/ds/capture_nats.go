package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/ds-telemetry/ds/pkg/fleet"
	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// The producers' NATS outputs (-o nats://HOST:PORT/PREFIX): each is a
// fleet.Publisher, one more fanout subscriber of the capture's endpoint
// with its own bounded buffer. The capture loop hands it every drained
// batch (takePublishers, from write) before the payloads are reused, and
// finish gives each up to natsGrace to have its last messages
// acknowledged, after the capture file is closed.

// natsGrace bounds how long a producer waits at its end for its NATS
// servers to acknowledge what they hold: natsSettle of it for what the
// command wrote, the rest for the stream's last records and its end.
const (
	natsGrace  = 5 * time.Second
	natsSettle = 2 * time.Second
)

// dialPublishers connects the NATS outputs of o, for stream id, and
// returns their targets (c.conns gets the connections). A server that
// does not answer is not an error (the output keeps trying, and what it
// cannot hold meanwhile is lost to it and recorded); a server that
// answers without a JetStream stream for the prefix, that holds stream
// id already, or that refuses the credentials, is.
func (c *capture) dialPublishers(o captureOptions, id frames.StreamID, stderr io.Writer) ([]fleet.Target, error) {
	var targets []fleet.Target
	for _, url := range o.NATS {
		nc, t, err := dialNATS(url, o.Auth, "ds "+dsVersion(), true, stderr)
		if err != nil {
			c.closePublishersNow()
			return nil, err
		}
		c.conns = append(c.conns, nc)
		if nc.IsConnected() {
			// One check: the stream for the prefix (FindStream), then
			// that it does not hold this stream yet.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err := fleet.CheckNewStream(ctx, nc, t, id)
			cancel()
			if err != nil {
				c.closePublishersNow()
				return nil, err
			}
		}
		targets = append(targets, t)
	}
	return targets, nil
}

// startPublishers subscribes a publisher for each connected NATS output
// to the endpoint.
func (c *capture) startPublishers(o captureOptions, targets []fleet.Target) error {
	for i, t := range targets {
		p, err := fleet.NewPublisher(c.endpoint, c.conns[i], t, fleet.PublisherOptions{
			Compression: segments.CompressZstd, WriterID: "ds " + dsVersion(), Capacity: 2*o.Queue + 4096, Buffer: o.NATSBuffer,
		})
		if err != nil {
			c.closePublishersNow()
			return err
		}
		c.pubs = append(c.pubs, p)
		if c.name == "" {
			c.name = t.Display
		}
	}
	return nil
}

// takePublishers hands the batch just drained to every NATS output.
func (c *capture) takePublishers(flush bool) {
	for _, p := range c.pubs {
		p.Take(flush)
	}
}

// closePublishersNow closes the connections of a capture that never
// started.
func (c *capture) closePublishersNow() {
	for _, nc := range c.conns {
		nc.Close()
	}
	c.conns = nil
}

// settlePublishers waits, until ctx is done, for every NATS output to
// have its messages acknowledged and to submit the records of what it
// lost; it reports whether there are outputs (whose records then need a
// tick). The outputs settle at once, each on its own: a dead server
// costs only its own output the wait.
func (c *capture) settlePublishers(ctx context.Context) bool {
	var wg sync.WaitGroup
	for _, p := range c.pubs {
		if w := p.Waiting(); w > 1<<20 {
			fmt.Fprintf(c.stderr, "ds: waiting up to %v for %s to acknowledge %d MiB\n", natsGrace, p.Name(), w>>20)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = p.Settle(ctx)
		}()
	}
	wg.Wait()
	return len(c.pubs) > 0
}

// closePublishers waits, until ctx is done, for every NATS output to
// have its last messages acknowledged (all at once, each on its own),
// closes the connections and reports on stderr what each output lost.
func (c *capture) closePublishers(ctx context.Context) {
	reps := make([]fleet.PublishReport, len(c.pubs))
	var wg sync.WaitGroup
	for i, p := range c.pubs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reps[i] = p.Close(ctx)
		}()
	}
	wg.Wait()
	for _, rep := range reps {
		c.reportPublisher(rep)
	}
	c.closePublishersNow()
}

// reportPublisher says on stderr what a NATS output lost: how many frames,
// whether the stream records it (datastream.transport records, which ds
// gaps lists), and the ranges it could not record.
func (c *capture) reportPublisher(rep fleet.PublishReport) {
	if rep.LostFrames == 0 {
		return
	}
	where := "no capture file has them"
	if c.w != nil {
		where = "the capture " + c.name + " has them"
	}
	fmt.Fprintf(c.stderr, "ds: warning: %s lost %d frames (%s); ds gaps shows where and why\n", rep.Output, rep.LostFrames, where)
	for i, l := range rep.Unrecorded {
		if i == 8 {
			fmt.Fprintf(c.stderr, "ds:   … and %d more ranges\n", len(rep.Unrecorded)-i)
			break
		}
		fmt.Fprintf(c.stderr, "ds:   %s not delivered: %s\n", positionRun(l.From, l.To), l.Reason)
	}
}

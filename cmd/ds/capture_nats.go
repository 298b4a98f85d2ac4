package main

import (
	"context"
	"fmt"
	"io"
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

// natsGrace bounds how long a producer waits at its end for a NATS
// server to acknowledge what it holds.
const natsGrace = 5 * time.Second

// startPublishers connects the NATS outputs of o and subscribes their
// publishers to the endpoint. A server that does not answer is not an
// error (the output keeps trying, and what it cannot hold meanwhile is
// lost to it and recorded); a server that answers without a JetStream
// stream for the prefix, or refuses the credentials, is.
func (c *capture) startPublishers(o captureOptions, stderr io.Writer) error {
	for _, url := range o.NATS {
		nc, t, err := dialNATS(url, o.Auth, "ds "+dsVersion(), true, stderr)
		if err != nil {
			c.closePublishersNow()
			return err
		}
		c.conns = append(c.conns, nc)
		if err := checkNATSStream(nc, t); err != nil {
			c.closePublishersNow()
			return err
		}
		if nc.IsConnected() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err := fleet.CheckNewStream(ctx, nc, t, c.endpoint.Stream().Stream)
			cancel()
			if err != nil {
				c.closePublishersNow()
				return err
			}
		}
		p, err := fleet.NewPublisher(c.endpoint, nc, t, fleet.PublisherOptions{
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
// tick). A server that is away is said once on stderr.
func (c *capture) settlePublishers(ctx context.Context) bool {
	for _, p := range c.pubs {
		if w := p.Waiting(); w > 1<<20 {
			fmt.Fprintf(c.stderr, "ds: waiting up to %v for %s to acknowledge %d MiB\n", natsGrace, p.Name(), w>>20)
		}
		_ = p.Settle(ctx)
	}
	return len(c.pubs) > 0
}

// closePublishers waits, until ctx is done, for every NATS output to
// have its last messages acknowledged, closes the connections and reports
// on stderr what each output lost.
func (c *capture) closePublishers(ctx context.Context) {
	if len(c.pubs) == 0 {
		c.closePublishersNow()
		return
	}
	for _, p := range c.pubs {
		c.reportPublisher(p.Close(ctx))
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
		fmt.Fprintf(c.stderr, "ds:   %s not delivered: %s\n", positionRange(l.From, l.To), l.Reason)
	}
}

// positionRange says "position P" or "positions A–B".
func positionRange(from, to frames.Position) string {
	if from == to {
		return fmt.Sprintf("position %d", from)
	}
	return fmt.Sprintf("positions %d–%d", from, to)
}

package main

import (
	"context"
	"io"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ds-telemetry/ds/pkg/capture"
	"github.com/ds-telemetry/ds/pkg/fleet"
	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// The producers' NATS outputs (-o nats://HOST:PORT/PREFIX): each is a
// fleet.Publisher, one more fanout subscriber of the capture's endpoint
// with its own bounded buffer, handed to pkg/capture as a capture.Output
// (natsOutput). The capture loop hands it every drained batch before the
// payloads are reused, and Finish gives each up to 5 s to have its last
// messages acknowledged, after the capture file is closed.

// natsOutputs are a producer's dialed NATS outputs, not yet subscribed.
type natsOutputs struct {
	o       captureOptions
	conns   []*nats.Conn
	targets []fleet.Target
}

// dialOutputs connects the NATS outputs of o, for stream id. A server
// that does not answer is not an error (the output keeps trying, and what
// it cannot hold meanwhile is lost to it and recorded); a server that
// answers without a JetStream stream for the prefix, that holds stream
// id already, or that refuses the credentials, is.
func dialOutputs(o captureOptions, id frames.StreamID, stderr io.Writer) (*natsOutputs, error) {
	n := &natsOutputs{o: o}
	for _, url := range o.NATS {
		nc, t, err := dialNATS(url, o.Auth, "ds "+dsVersion(), true, stderr)
		if err != nil {
			n.closeNow()
			return nil, err
		}
		n.conns = append(n.conns, nc)
		if nc.IsConnected() {
			// One check: the stream for the prefix (FindStream), then
			// that it does not hold this stream yet.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err := fleet.CheckNewStream(ctx, nc, t, id)
			cancel()
			if err != nil {
				n.closeNow()
				return nil, err
			}
		}
		n.targets = append(n.targets, t)
	}
	return n, nil
}

// start subscribes a publisher for each connected NATS output to the
// endpoint (capture.Options.Outputs).
func (n *natsOutputs) start(e *frames.Endpoint) ([]capture.Output, error) {
	var outs []capture.Output
	for i, t := range n.targets {
		p, err := fleet.NewPublisher(e, n.conns[i], t, fleet.PublisherOptions{
			Compression: segments.CompressZstd, WriterID: "ds " + dsVersion(), Capacity: 2*n.o.Queue + 4096, Buffer: n.o.NATSBuffer,
		})
		if err != nil {
			return nil, err
		}
		outs = append(outs, natsOutput{p, n.conns[i]})
	}
	return outs, nil
}

// closeNow closes the connections of a capture that never started.
func (n *natsOutputs) closeNow() {
	for _, nc := range n.conns {
		nc.Close()
	}
	n.conns = nil
}

// natsOutput is a fleet.Publisher as a capture.Output: its Close also
// closes its connection, and reports what capture needs of the
// fleet.PublishReport.
type natsOutput struct {
	*fleet.Publisher
	nc *nats.Conn
}

func (o natsOutput) Close(ctx context.Context) capture.OutputReport {
	rep := o.Publisher.Close(ctx)
	o.nc.Close()
	return capture.OutputReport{Output: rep.Output, LostFrames: rep.LostFrames, Unrecorded: rep.Unrecorded}
}

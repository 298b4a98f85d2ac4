package fleet

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ds-telemetry/ds/pkg/segments"
)

// TestClusterNodeDown stops the leader of a 3-replica stream while a
// producer publishes to the cluster (a target naming all three servers):
// the publisher waits out the election, and an ingester connected to the
// survivors stores every frame the publisher saw acknowledged, which is
// every frame written.
func TestClusterNodeDown(t *testing.T) {
	servers := testCluster(t)
	var hosts []string
	for _, s := range servers {
		hosts = append(hosts, hostPort(t, s.ClientURL()))
	}
	urls := "nats://" + strings.Join(hosts, ",")
	nc, tg := connect(t, urls)
	if len(tg.Servers) != 3 {
		t.Fatalf("target %+v: want 3 servers", tg)
	}
	initStream(t, nc, tg.Prefix, StreamOptions{Replicas: 3})
	p := newProducer(t, "cluster", 1, publisherOn(t, nc, tg, PublisherOptions{Compression: segments.CompressZstd}))
	produceFor(p, 500*time.Millisecond, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	str, err := js.Stream(ctx, StreamName(tg.Prefix))
	if err != nil {
		t.Fatal(err)
	}
	info, err := str.Info(ctx)
	if err != nil || info.Cluster == nil {
		t.Fatalf("stream info: %+v, %v", info, err)
	}
	if n := len(info.Cluster.Replicas) + 1; n != 3 {
		t.Fatalf("stream has %d replicas, want 3", n)
	}
	acked := p.pub.Stats()
	stopped := false
	for _, s := range servers {
		if s.Name() == info.Cluster.Leader {
			s.Shutdown()
			s.WaitForShutdown()
			stopped = true
		}
	}
	if !stopped {
		t.Fatalf("stream leader %q is none of the servers", info.Cluster.Leader)
	}
	t.Logf("stopped %s after %d frames acknowledged", info.Cluster.Leader, acked.Frames)
	produceFor(p, time.Second, nil)
	rep := p.end(t, 30*time.Second)
	t.Logf("report: %+v", rep)
	if rep.LostFrames != 0 || len(rep.Unrecorded) != 0 {
		t.Errorf("the publisher lost frames: %+v", rep)
	}
	if rep.Frames < acked.Frames {
		t.Errorf("%d frames acknowledged at the end, %d before the stop", rep.Frames, acked.Frames)
	}

	// A fresh ingester, connected to whichever survivor answers.
	nc2, _ := connect(t, urls)
	st := tempStore(t)
	// Until the consumer has nothing left: an idle stop can come early
	// while the cluster elects, or on a loaded machine.
	var stats IngestStats
	for {
		var run IngestStats
		run, err = Ingest(ctx, nc2, tg, st, IngestOptions{Durable: "survivor", Idle: time.Second})
		stats.add(run)
		if err == nil {
			var left uint64
			if left, err = consumerLeft(ctx, nc2, tg, "survivor"); err == nil && left == 0 {
				break
			}
			if err == nil {
				err = fmt.Errorf("%d messages left to the consumer", left)
			}
		}
		if ctx.Err() != nil {
			break
		}
		t.Logf("ingest (the cluster may still be electing): %v", err)
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	id := p.e.Stream().Stream
	g := loadStore(t, st)[id]
	if g == nil || !g.Ended {
		t.Fatalf("stream not stored (%v), or not ended", g == nil)
	}
	if uint64(len(g.Frames)) != rep.Frames {
		t.Errorf("%d frames stored, %d acknowledged (ingest %+v)", len(g.Frames), rep.Frames, stats)
	}
	sameFrames(t, id.String(), g.Frames, p.all)
}

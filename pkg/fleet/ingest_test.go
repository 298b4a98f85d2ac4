package fleet

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ds-telemetry/ds/pkg/segments"
)

// publishStreams publishes nodes' streams, rounds messages each (one per
// tick: 50 lines and a frame of blob random bytes), and returns their
// producers and the messages acknowledged.
func publishStreams(t *testing.T, nc *nats.Conn, tg Target, nodes []string, rounds, blob int) ([]*producer, uint64) {
	t.Helper()
	var ps []*producer
	for i, node := range nodes {
		ps = append(ps, newProducer(t, node, uint64(i+1), publisherOn(t, nc, tg, PublisherOptions{Compression: segments.CompressZstd})))
	}
	for round := 0; round < rounds; round++ {
		for i, p := range ps {
			p.write(50)
			if blob > 0 {
				p.writeBlob(blob, uint64(round*len(ps)+i))
			}
			p.tick(true)
		}
	}
	var msgs uint64
	for _, p := range ps {
		rep := p.end(t, 10*time.Second)
		if rep.LostFrames != 0 {
			t.Fatalf("%s: %+v", p.e.Stream().Stream, rep)
		}
		msgs += rep.Messages
	}
	return ps, msgs
}

// checkComplete checks that st holds every stream of ps, ended, each
// frame once and byte for byte as the file output got it.
func checkComplete(t *testing.T, st *segments.Store, ps []*producer) {
	t.Helper()
	stored := loadStore(t, st)
	if len(stored) != len(ps) {
		t.Errorf("%d streams stored, want %d", len(stored), len(ps))
	}
	for _, p := range ps {
		id := p.e.Stream().Stream
		g := stored[id]
		if g == nil {
			t.Fatalf("%s: not stored", id)
		}
		if !g.Ended {
			t.Errorf("%s: not ended", id)
		}
		sameFrames(t, id.String(), g.Frames, p.all)
	}
}

// openStore opens another handle on st's directory, as a second process
// would.
func openStore(t *testing.T, st *segments.Store) *segments.Store {
	t.Helper()
	h, err := segments.OpenStore(st.Dir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// TestIngestRestart stops an ingester three ways mid-stream (interrupted,
// its store failing, killed between storing a batch and acknowledging
// it) and checks that the next ingester of the same durable name stores
// every frame once: what was acknowledged is not delivered again, what
// was not comes back after AckWait and collapses in the store.
func TestIngestRestart(t *testing.T) {
	// Messages of about 20 KiB, batches of at most 80 KiB (max_payload
	// 64 KiB, plus 16 KiB): about 20 batches.
	srv := smallServer(t, 64<<10)
	nc, tg := connect(t, srv)
	initStream(t, nc, tg.Prefix, StreamOptions{})
	ps, msgs := publishStreams(t, nc, tg, []string{"n1", "n.2"}, 40, 20<<10)
	st := tempStore(t)
	opts := IngestOptions{Durable: "store", AckWait: time.Second, BatchBytes: 1, Warn: func(err error) { t.Logf("ingest: %v", err) }}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// 1. Interrupted (SIGINT) after three batches: it finishes the batch
	// in hand, acknowledges it and returns.
	ctx1, stop := context.WithCancel(ctx)
	o := opts
	o.Stored = func(s IngestStats) {
		if s.Batches == 3 {
			stop()
		}
	}
	s1, err := Ingest(ctx1, nc, tg, st, o)
	if err != nil || s1.Batches != 3 || s1.Messages == 0 || s1.Duplicates != 0 {
		t.Fatalf("first ingester: %+v, %v", s1, err)
	}

	// 2. Its store fails after two batches: the batch in hand is not
	// acknowledged, and Ingest says so.
	nc2, _ := connect(t, srv)
	h2 := openStore(t, st)
	o = opts
	o.Idle = 2 * time.Second // not reached: the third batch fails
	o.Stored = func(s IngestStats) {
		if s.Batches == 2 {
			h2.Close() // the next commit finds no lock file
		}
	}
	s2, err := Ingest(ctx, nc2, tg, h2, o)
	if err == nil || !strings.Contains(err.Error(), "not acknowledged") || s2.Batches != 2 {
		t.Fatalf("second ingester: %+v, %v", s2, err)
	}
	nc2.Close()

	// 3. Killed after its batch was stored and before it was
	// acknowledged: the connection goes away with the messages pending.
	nc3, _ := connect(t, srv)
	js, err := jetstream.New(nc3)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := js.Consumer(ctx, StreamName(tg.Prefix), opts.Durable)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.FetchBytes(80<<10, jetstream.FetchMaxWait(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var data []byte
	var held int
	for m := range batch.Messages() {
		data = append(data, m.Data()...)
		held++
	}
	if held == 0 {
		t.Fatalf("killed ingester fetched nothing: %v", batch.Error())
	}
	rep3, err := st.Ingest(ctx, "killed", strings.NewReader(string(data)), segments.IngestOptions{})
	if err != nil || rep3.Frames == 0 {
		t.Fatalf("killed ingester's store: %+v, %v", rep3, err)
	}
	nc3.Close()

	// 4. The next ingester of the same name gets the rest, and, after
	// AckWait, what 2 and 3 held.
	o = opts
	o.Idle = 3 * time.Second
	s4, err := Ingest(ctx, nc, tg, st, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ingesters: %+v; %+v; killed held %d messages, %d frames; %+v", s1, s2, held, rep3.Frames, s4)
	if s4.Duplicates < rep3.Frames {
		t.Errorf("last ingester collapsed %d frames, want at least the %d the killed one stored", s4.Duplicates, rep3.Frames)
	}
	if s4.Conflicts != 0 || s4.Damaged != 0 {
		t.Errorf("last ingester: %+v", s4)
	}
	if got := s1.Messages + s2.Messages + s4.Messages; got < msgs {
		t.Errorf("%d messages acknowledged, %d published", got, msgs)
	}
	var written uint64
	for _, p := range ps {
		written += uint64(len(p.all))
	}
	if got := s1.Frames + s2.Frames + rep3.Frames + s4.Frames; got != written {
		t.Errorf("%d new frames stored in all, %d written", got, written)
	}
	checkComplete(t, st, ps)
	ci, err := cons.Info(ctx)
	if err == nil && (ci.NumPending != 0 || ci.NumAckPending != 0) {
		t.Errorf("consumer: %d pending, %d unacknowledged", ci.NumPending, ci.NumAckPending)
	}
}

// TestIngestShared runs two ingesters with one durable name at once, each
// with its own connection and store handle (two processes): both store
// part of the stream and together all of it.
func TestIngestShared(t *testing.T) {
	srv := smallServer(t, 64<<10)
	nc, tg := connect(t, srv)
	initStream(t, nc, tg.Prefix, StreamOptions{})
	ps, msgs := publishStreams(t, nc, tg, []string{"a", "b", "c"}, 20, 20<<10)
	st := tempStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	stats := make([]IngestStats, 2)
	errs := make([]error, 2)
	for i := range stats {
		nci, _ := connect(t, srv)
		h := openStore(t, st)
		wg.Add(1)
		go func() {
			defer wg.Done()
			stats[i], errs[i] = Ingest(ctx, nci, tg, h, IngestOptions{
				Durable: "shared", Idle: 1500 * time.Millisecond, BatchBytes: 1, // raised to 80 KiB
				// A store slower than the fetch, so that the other
				// ingester's requests are served meanwhile.
				Stored: func(IngestStats) { time.Sleep(5 * time.Millisecond) },
			})
		}()
	}
	wg.Wait()
	for i := range stats {
		if errs[i] != nil {
			t.Fatalf("ingester %d: %v", i, errs[i])
		}
		if stats[i].Messages == 0 || stats[i].Frames == 0 {
			t.Errorf("ingester %d stored nothing: %+v", i, stats[i])
		}
	}
	t.Logf("ingesters: %+v; %+v", stats[0], stats[1])
	if got := stats[0].Messages + stats[1].Messages; got < msgs {
		t.Errorf("%d messages acknowledged, %d published", got, msgs)
	}
	checkComplete(t, st, ps)
}

// TestIngestSmallBatch: a message larger than IngestOptions.BatchBytes is
// still delivered and stored (the server ends a pull request at a
// message larger than its byte bound, with no message).
func TestIngestSmallBatch(t *testing.T) {
	s := testServer(t, "")
	nc, tg := connect(t, s.ClientURL())
	initStream(t, nc, tg.Prefix, StreamOptions{})
	ps, _ := publishStreams(t, nc, tg, []string{"small"}, 3, 100<<10)
	st := tempStore(t)
	// A bound below the message size that fetched nothing would leave the
	// consumer its messages: ingestDrained fails the test after 30 s.
	ingestDrained(t, nc, tg, st, IngestOptions{Durable: "small", Idle: time.Second, BatchBytes: 64, Warn: func(err error) { t.Logf("ingest: %v", err) }})
	checkComplete(t, st, ps)
}

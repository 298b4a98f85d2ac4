package fleet

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// producer is a stream with a publisher (and a capture of every frame the
// endpoint drained, the "file output") driven tick by tick as ds wrap's
// capture loop drives them.
type producer struct {
	e     *frames.Endpoint
	pub   *Publisher
	file  *frames.Subscription
	all   []frames.Frame // what the file subscriber got, in order
	ch    frames.ChannelID
	blob  frames.ChannelID
	count int
}

func newProducer(t testing.TB, node string, life uint64, pub func(*frames.Endpoint) *Publisher) *producer {
	t.Helper()
	e := frames.NewEndpoint(frames.StreamDescriptor{Stream: frames.StreamID{Node: frames.NodeID(node), Life: frames.Life(life)}}, frames.EndpointOptions{})
	p := &producer{e: e}
	p.file = e.Subscribe(frames.SubscriptionRequest{}, frames.SubscriberOptions{Name: "file", Capacity: 1 << 14})
	var err error
	if p.ch, err = e.RegisterChannel("proc.job.stdout", frames.TextStream()); err != nil {
		t.Fatal(err)
	}
	if p.blob, err = e.RegisterChannel("blob", frames.Bytes()); err != nil {
		t.Fatal(err)
	}
	p.pub = pub(e)
	return p
}

// publisherOn returns the publisher constructor newProducer takes.
func publisherOn(t testing.TB, nc *nats.Conn, tg Target, opts PublisherOptions) func(*frames.Endpoint) *Publisher {
	return func(e *frames.Endpoint) *Publisher {
		t.Helper()
		p, err := NewPublisher(e, nc, tg, opts)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
}

// tick drains the endpoint and hands the batch to both outputs.
func (p *producer) tick(flush bool) {
	p.e.Tick()
	p.pub.Take(flush)
	for _, ev := range p.file.DrainInto(nil) {
		if ev.Kind == frames.EventFrame {
			p.all = append(p.all, frames.Frame{Channel: ev.Frame.Channel.Channel, Position: ev.Frame.Position, Payload: ev.Frame.Payload})
		}
	}
}

// write submits n text lines.
func (p *producer) write(n int) {
	for i := 0; i < n; i++ {
		p.e.Producer().SubmitText(p.ch, fmt.Sprintf("%s line %d\n", p.e.Stream().Stream.Node, p.count))
		p.count++
	}
}

// writeBlob submits one frame of n random (incompressible) bytes.
func (p *producer) writeBlob(n int, seed uint64) {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)})
	r.Read(b)
	p.e.Producer().SubmitBytes(p.blob, b)
}

// end ends the stream, takes its last batch and closes the publisher
// with grace to deliver.
func (p *producer) end(t testing.TB, grace time.Duration) PublishReport {
	// As ds's capture ends a stream: the publisher settles (its server
	// acknowledges what it holds, its losses get records), the records
	// get positions, then the stream ends.
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	_ = p.pub.Settle(ctx)
	p.tick(true)
	p.e.End()
	p.tick(true)
	if p.file.Dropped() != 0 {
		t.Errorf("%s: the file subscriber dropped %d frames", p.e.Stream().Stream, p.file.Dropped())
	}
	return p.pub.Close(ctx)
}

// roundTripNodes are node names that need escaping in a subject token,
// among them pairs that would share a subject with a naive escape ("a.b"
// and "a=2Eb", "a b" and "a_b").
var roundTripNodes = []string{"ci-7", "a.b", "a=2Eb", "", "*", ">", "a b", "a_b", "ünï cødé", "n.2 *>"}

// TestRoundTrip publishes several streams (nodes that need escaping, two
// lives of one node, a frame as large as a message may hold) and checks
// that the store and a Reader get every frame byte for byte, plain and
// zstd.
func TestRoundTrip(t *testing.T) {
	for _, comp := range []segments.Compression{segments.CompressNone, segments.CompressZstd} {
		t.Run(fmt.Sprint(comp), func(t *testing.T) { testRoundTrip(t, comp) })
	}
}

func testRoundTrip(t *testing.T, comp segments.Compression) {
	s := testServer(t, "")
	nc, tg := connect(t, s.ClientURL())
	initStream(t, nc, tg.Prefix, StreamOptions{})
	var ps []*producer
	for i, node := range roundTripNodes {
		ps = append(ps, newProducer(t, node, uint64(i+1), publisherOn(t, nc, tg, PublisherOptions{Compression: comp})))
	}
	// A second life of "a.b": its own subject and stream.
	ps = append(ps, newProducer(t, "a.b", 1<<40, publisherOn(t, nc, tg, PublisherOptions{Compression: comp})))
	for round := 0; round < 20; round++ {
		for i, p := range ps {
			p.write(50)
			switch {
			case round == 5 && i == 0:
				// The largest frame a message takes, alone in its message.
				p.tick(true)
				p.writeBlob(p.pub.limit()-24, uint64(i))
			case round == 9 && i%2 == 1:
				// The same after lines: it seals the message being written.
				p.writeBlob(p.pub.limit()-24, uint64(i))
			}
			p.tick(round%3 == 0)
		}
	}
	var written int
	for _, p := range ps {
		rep := p.end(t, 10*time.Second)
		if rep.LostFrames != 0 || len(rep.Unrecorded) != 0 || rep.Recorded != 0 || rep.Retries != 0 {
			t.Fatalf("%s: %+v", p.e.Stream().Stream, rep)
		}
		if rep.Frames != uint64(len(p.all)) {
			t.Errorf("%s: %d frames acknowledged, %d written", p.e.Stream().Stream, rep.Frames, len(p.all))
		}
		written += len(p.all)
	}

	// Each stream has its subject, and nothing else is there.
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	str, err := js.Stream(ctx, StreamName(tg.Prefix))
	if err != nil {
		t.Fatal(err)
	}
	si, err := str.Info(ctx, jetstream.WithSubjectFilter(AllSubjects(tg.Prefix)))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, p := range ps {
		want = append(want, Subject(tg.Prefix, p.e.Stream().Stream))
	}
	var got []string
	for subj := range si.State.Subjects {
		got = append(got, subj)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("subjects:\ngot  %q\nwant %q", got, want)
	}

	st := tempStore(t)
	stats := ingestAll(t, nc, tg, st, 500*time.Millisecond)
	if stats.Frames != uint64(written) || stats.Duplicates != 0 || stats.Conflicts != 0 || stats.Damaged != 0 {
		t.Errorf("ingest: %+v, %d frames written", stats, written)
	}
	checkComplete(t, st, ps)
	stored := loadStore(t, st)
	for _, p := range ps {
		id := p.e.Stream().Stream
		g := stored[id]
		if !sameCatalog(g.Channels, p.e.Catalog()) {
			t.Errorf("%s: store catalog %+v, endpoint %+v", id, g.Channels, p.e.Catalog())
		}
	}

	// ds log nats://…: the retained messages as one capture.
	r, err := NewReader(ctx, nc, tg, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	back := readFrames(t, r)
	r.Close()
	for _, p := range ps {
		id := p.e.Stream().Stream
		sameFrames(t, id.String()+" (reader)", back[id], p.all)
	}

	// A node filter reads that node's lives only: "a.b" is not "a=2Eb".
	r, err = NewReader(ctx, nc, tg, ReaderOptions{Nodes: []frames.NodeID{"a.b"}})
	if err != nil {
		t.Fatal(err)
	}
	back = readFrames(t, r)
	r.Close()
	var nodes []string
	for id := range back {
		nodes = append(nodes, id.String())
	}
	slices.Sort(nodes)
	if len(nodes) != 2 || !strings.HasPrefix(nodes[0], "a.b#") || !strings.HasPrefix(nodes[1], "a.b#") {
		t.Errorf("reader of node a.b got streams %q", nodes)
	}
}

// sameCatalog compares catalogs by id, name and content.
func sameCatalog(a, b []frames.ChannelDescriptor) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ID != b[i].ID || a[i].Name != b[i].Name || a[i].Stream != b[i].Stream || fmt.Sprint(a[i].Content) != fmt.Sprint(b[i].Content) {
			return false
		}
	}
	return true
}

// TestOversizedFrame: a frame larger than a message may hold is lost to
// the network output only, and a datastream.transport record says so;
// the frames around it arrive.
func TestOversizedFrame(t *testing.T) {
	s := testServer(t, "")
	nc, tg := connect(t, s.ClientURL())
	initStream(t, nc, tg.Prefix, StreamOptions{})
	p := newProducer(t, "big", 1, publisherOn(t, nc, tg, PublisherOptions{Compression: segments.CompressZstd}))
	p.write(10)
	p.tick(false)
	p.writeBlob(p.pub.limit()-23, 1) // one byte too many
	p.tick(false)
	big := p.all[len(p.all)-1].Position
	p.write(10)
	p.tick(true)
	p.tick(true) // the transport record submitted by the last Take
	rep := p.end(t, 10*time.Second)
	if rep.LostFrames != 1 || rep.Recorded != 1 || len(rep.Unrecorded) != 0 {
		t.Fatalf("report %+v", rep)
	}
	if h := p.e.Health(); h.SubscriberDropped != 1 {
		t.Errorf("subscriber_dropped %d, want 1", h.SubscriberDropped)
	}
	st := tempStore(t)
	ingestAll(t, nc, tg, st, 500*time.Millisecond)
	g := loadStore(t, st)[p.e.Stream().Stream]
	if g == nil || !g.Ended {
		t.Fatalf("stream not stored (%v) or not ended", g == nil)
	}
	if n := checkLosses(t, p.e.Stream().Stream, g, p.all, nil, "larger than a message may be"); n != 1 {
		t.Errorf("records name %d frames, want 1", n)
	}
	recs := transportRecords(t, g)
	if len(recs) != 1 || recs[0].Record.Lost.From != big || recs[0].Record.Lost.To != big || recs[0].Record.Output != tg.Display {
		t.Errorf("transport records %+v, want one naming %d", recs, big)
	}
	if len(g.Frames) != len(p.all)-1 {
		t.Errorf("%d frames stored, want %d", len(g.Frames), len(p.all)-1)
	}
}

// TestSameStreamTwice: a second run with the same node and life publishes
// messages whose Nats-Msg-Ids the server already holds. JetStream keeps
// the first run's and drops these as duplicates; the publisher must not
// take that for a delivery: it counts the frames lost, with a reason that
// names the likely cause, instead of reporting success.
func TestSameStreamTwice(t *testing.T) {
	s := testServer(t, "")
	nc, tg := connect(t, s.ClientURL())
	initStream(t, nc, tg.Prefix, StreamOptions{})
	first := newProducer(t, "twice", 7, publisherOn(t, nc, tg, PublisherOptions{}))
	first.write(50)
	first.tick(true)
	if rep := first.end(t, 10*time.Second); rep.LostFrames != 0 {
		t.Fatalf("first run: %+v", rep)
	}
	second := newProducer(t, "twice", 7, publisherOn(t, nc, tg, PublisherOptions{}))
	second.write(50)
	second.tick(true)
	rep := second.end(t, 10*time.Second)
	// Its 50 lines are lost (the server kept the first run's); the record
	// that says so is a new position, so it is stored.
	if rep.LostFrames != 50 || rep.Recorded+uint64(len(rep.Unrecorded)) == 0 {
		t.Fatalf("second run with the same node and life: %+v", rep)
	}
	for _, l := range rep.Unrecorded {
		if !strings.Contains(l.Reason, "same --node and --life") {
			t.Errorf("reason %q", l.Reason)
		}
	}
}

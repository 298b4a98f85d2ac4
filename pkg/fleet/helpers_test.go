package fleet

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// testServer starts a single JetStream server on a free loopback port,
// files under dir (a fresh temporary directory when ""), and shuts it down
// at the end of the test.
func testServer(t testing.TB, dir string) *Server {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	s, err := StartServer(ServerOptions{Listen: "127.0.0.1:0", StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

// smallServer starts a JetStream server whose max_payload is maxPayload
// bytes (publishers then write small messages, and an ingester's batch
// holds few) and returns its client URL.
func smallServer(t testing.TB, maxPayload int32) string {
	t.Helper()
	s, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true, StoreDir: t.TempDir(),
		NoSigs: true, NoLog: true, MaxPayload: maxPayload,
	})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	return s.ClientURL()
}

// restartServer starts a server on the same address and directory as one
// that was shut down.
func restartServer(t testing.TB, addr, dir string) *Server {
	t.Helper()
	var s *Server
	var err error
	for i := 0; i < 50; i++ { // the port may linger a moment
		if s, err = StartServer(ServerOptions{Listen: addr, StoreDir: dir}); err == nil {
			t.Cleanup(s.Shutdown)
			return s
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal(err)
	return nil
}

// hostPort returns the HOST:PORT of a client URL ("nats://127.0.0.1:4222").
func hostPort(t testing.TB, clientURL string) string {
	t.Helper()
	u, err := url.Parse(clientURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// freePort returns a loopback port nobody listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// testCluster starts a 3-node JetStream cluster on loopback and returns
// its servers (nats-server's own API: the fleet package's Server runs
// single servers only).
func testCluster(t testing.TB) []*server.Server {
	t.Helper()
	ports := []int{freePort(t), freePort(t), freePort(t)}
	var routes []*url.URL
	for _, p := range ports {
		routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", p)})
	}
	var servers []*server.Server
	for i, p := range ports {
		o := &server.Options{
			ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1", Port: server.RANDOM_PORT,
			JetStream: true, StoreDir: filepath.Join(t.TempDir(), fmt.Sprint(i)), NoSigs: true, NoLog: true,
			Cluster: server.ClusterOpts{Name: "ds-test", Host: "127.0.0.1", Port: p},
			Routes:  routes,
		}
		s, err := server.NewServer(o)
		if err != nil {
			t.Fatal(err)
		}
		go s.Start()
		servers = append(servers, s)
		t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	}
	for _, s := range servers {
		if !s.ReadyForConnections(10 * time.Second) {
			t.Fatal("cluster server not ready")
		}
	}
	// JetStream's meta group needs a leader before streams can be made.
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range servers {
			if s.JetStreamIsLeader() {
				return servers
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no JetStream meta leader within 20 s")
	return nil
}

// connect connects to urls (one client URL, or "nats://h1:p1,h2:p2") for
// a test, retrying (as producers do); the target's prefix is "ds".
func connect(t testing.TB, urls string) (*nats.Conn, Target) {
	t.Helper()
	tg, err := ParseTarget(urls + "/ds")
	if err != nil {
		t.Fatal(err)
	}
	nc, err := Connect(tg, Auth{}, ConnectOptions{Name: "test", Retry: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc, tg
}

// initStream creates the test stream (memory storage off: file, so that a
// restarted server keeps it).
func initStream(t testing.TB, nc *nats.Conn, prefix string, o StreamOptions) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var err error
	for i := 0; i < 20; i++ { // a cluster may still be electing
		if _, _, err = InitStream(ctx, nc, prefix, o); err == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatal(err)
}

// ingestAll runs Ingest with durable name "test" until the stream has had
// no message for idle (see ingestDrained), and fails the test on an
// error.
func ingestAll(t testing.TB, nc *nats.Conn, tg Target, st *segments.Store, idle time.Duration) IngestStats {
	t.Helper()
	return ingestDrained(t, nc, tg, st, IngestOptions{Durable: "test", Idle: idle, Warn: func(err error) { t.Logf("ingest: %v", err) }})
}

// ingestDrained runs Ingest with o (o.Idle set) and fails the test on an
// error. On a loaded machine a fetch may come back empty although
// messages wait (the server did not answer within the idle time): while
// consumer o.Durable still has messages to deliver or to see
// acknowledged, it runs Ingest again, for up to 30 s in all, then fails
// the test. It returns the totals of the runs.
func ingestDrained(t testing.TB, nc *nats.Conn, tg Target, st *segments.Store, o IngestOptions) IngestStats {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var total IngestStats
	for run := 1; ; run++ {
		stats, err := Ingest(ctx, nc, tg, st, o)
		if err != nil {
			t.Fatal(err)
		}
		total.add(stats)
		left, err := consumerLeft(ctx, nc, tg, o.Durable)
		if err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			return total
		}
		if ctx.Err() != nil {
			t.Fatalf("ingest: %d messages still left to consumer %q after 30 s (%d runs, %+v)", left, o.Durable, run, total)
		}
		t.Logf("ingest run %d stopped idle with %d messages left (a loaded machine?): running it again", run, left)
	}
}

// consumerLeft returns how many messages durable consumer durable of tg's
// stream has still to deliver or to see acknowledged.
func consumerLeft(ctx context.Context, nc *nats.Conn, tg Target, durable string) (uint64, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return 0, err
	}
	c, err := js.Consumer(ctx, StreamName(tg.Prefix), durable)
	if err != nil {
		return 0, err
	}
	ci, err := c.Info(ctx)
	if err != nil {
		return 0, err
	}
	return ci.NumPending + uint64(ci.NumAckPending), nil
}

// add adds the totals of another Ingest run to s.
func (s *IngestStats) add(o IngestStats) {
	s.Batches += o.Batches
	s.Messages += o.Messages
	s.Bytes += o.Bytes
	s.Frames += o.Frames
	s.Duplicates += o.Duplicates
	s.Conflicts += o.Conflicts
	s.Expired += o.Expired
	s.Trimmed += o.Trimmed
	s.Damaged += o.Damaged
	s.Refused += o.Refused
}

// storedStream is what a store holds of one stream, as the tests compare
// it: its frames in position order, its catalog and whether it ended.
type storedStream struct {
	Frames   []frames.Frame
	Channels []frames.ChannelDescriptor
	Ended    bool
}

// channel returns the id of the channel named name, or 0.
func (s *storedStream) channel(name string) frames.ChannelID {
	for _, d := range s.Channels {
		if d.Name == name {
			return d.ID
		}
	}
	return 0
}

// storedIn returns the first stored position in from..to, if any.
func (s *storedStream) storedIn(from, to frames.Position) (frames.Position, bool) {
	i, _ := slices.BinarySearchFunc(s.Frames, from, func(f frames.Frame, p frames.Position) int { return cmp.Compare(f.Position, p) })
	if i < len(s.Frames) && s.Frames[i].Position <= to {
		return s.Frames[i].Position, true
	}
	return 0, false
}

// loadStore reads every stream of st. A position stored twice (a
// duplicate the store did not collapse) fails the test.
func loadStore(t testing.TB, st *segments.Store) map[frames.StreamID]*storedStream {
	t.Helper()
	ss, err := st.Streams()
	if err != nil {
		t.Fatal(err)
	}
	out := map[frames.StreamID]*storedStream{}
	for _, s := range ss {
		rc, err := st.OpenStream(s.Desc.Stream)
		if err != nil {
			t.Fatal(err)
		}
		fs := readFrames(t, rc)[s.Desc.Stream]
		rc.Close()
		// Chunks may interleave where a late copy filled a hole: order by
		// position, as the views do.
		slices.SortStableFunc(fs, func(a, b frames.Frame) int { return cmp.Compare(a.Position, b.Position) })
		for i := 1; i < len(fs); i++ {
			if fs[i].Position == fs[i-1].Position {
				t.Fatalf("%s: position %d stored twice", s.Desc.Stream, fs[i].Position)
			}
		}
		if uint64(len(fs)) != s.Frames {
			t.Errorf("%s: Streams says %d frames, the stream reads %d", s.Desc.Stream, s.Frames, len(fs))
		}
		chans, err := st.Channels(s.Desc.Stream)
		if err != nil {
			t.Fatal(err)
		}
		out[s.Desc.Stream] = &storedStream{Frames: fs, Channels: chans, Ended: s.Ended}
	}
	return out
}

// readFrames reads a capture's frames by stream, in input order; damage
// fails the test.
func readFrames(t testing.TB, r io.Reader) map[frames.StreamID][]frames.Frame {
	t.Helper()
	out := map[frames.StreamID][]frames.Frame{}
	rd := segments.NewReader(r, segments.ReaderOptions{})
	for {
		e, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if e.Kind == segments.EntryFrame {
			f := e.Frame
			f.Payload = append([]byte(nil), f.Payload...)
			out[e.Stream] = append(out[e.Stream], f)
		}
	}
}

// sameFrames fails the test unless got and want hold the same frames
// (position, channel, payload) in the same order.
func sameFrames(t testing.TB, what string, got, want []frames.Frame) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d frames, want %d", what, len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Position != w.Position || g.Channel != w.Channel || !bytes.Equal(g.Payload, w.Payload) {
			t.Fatalf("%s: frame %d: got position %d channel %d %s, want position %d channel %d %s",
				what, i, g.Position, g.Channel, short(g.Payload), w.Position, w.Channel, short(w.Payload))
		}
	}
}

// short shows a payload in a failure message.
func short(b []byte) string {
	if len(b) > 64 {
		return fmt.Sprintf("%q… (%d bytes)", b[:64], len(b))
	}
	return fmt.Sprintf("%q", b)
}

// positioned is a transport record with the position it was stored at.
type positioned struct {
	Position frames.Position
	Record   frames.TransportRecord
}

// transportRecords decodes the datastream.transport records of s, in
// position order; a record that does not decode fails the test.
func transportRecords(t testing.TB, s *storedStream) []positioned {
	t.Helper()
	ch := s.channel(frames.TransportChannel)
	if ch == 0 {
		return nil
	}
	var out []positioned
	for _, f := range s.Frames {
		if f.Channel != ch {
			continue
		}
		var r frames.TransportRecord
		if err := json.Unmarshal(f.Payload, &r); err != nil {
			t.Fatalf("transport record at %d: %v: %s", f.Position, err, f.Payload)
		}
		out = append(out, positioned{f.Position, r})
	}
	return out
}

// checkLosses checks a stream read back from the network against what the
// capture file got (want): every position written is either stored, with
// the same channel and payload, or inside the range of a
// datastream.transport record stored after it (or of one of unrecorded);
// every range names only positions that are absent, counts them, and has a
// reason that contains reason. It returns the frames the stored records
// name.
func checkLosses(t testing.TB, id frames.StreamID, got *storedStream, want []frames.Frame, unrecorded []frames.TransportLoss, reason string) (recorded uint64) {
	t.Helper()
	var ranges []frames.TransportLoss
	for _, r := range transportRecords(t, got) {
		l := r.Record.Lost
		if l == nil {
			t.Errorf("%s: transport record at %d without a loss", id, r.Position)
			continue
		}
		if r.Position <= l.To {
			t.Errorf("%s: transport record at %d names %d..%d: not after the range", id, r.Position, l.From, l.To)
		}
		if r.Record.Output == "" || strings.Contains(r.Record.Output, "@") {
			t.Errorf("%s: transport record at %d: output %q", id, r.Position, r.Record.Output)
		}
		recorded += l.Frames
		ranges = append(ranges, *l)
	}
	ranges = append(ranges, unrecorded...)
	for _, l := range ranges {
		if l.From > l.To || l.Frames != uint64(l.To-l.From)+1 {
			t.Errorf("%s: loss %d..%d counts %d frames", id, l.From, l.To, l.Frames)
		}
		if !strings.Contains(l.Reason, reason) {
			t.Errorf("%s: loss %d..%d: reason %q does not say %q", id, l.From, l.To, l.Reason, reason)
		}
		if l.SinceUnixMs == 0 || l.UntilUnixMs < l.SinceUnixMs {
			t.Errorf("%s: loss %d..%d: since %d until %d", id, l.From, l.To, l.SinceUnixMs, l.UntilUnixMs)
		}
		if p, ok := got.storedIn(l.From, l.To); ok {
			t.Errorf("%s: loss %d..%d (%s) names position %d, which is stored", id, l.From, l.To, l.Reason, p)
		}
	}
	lost := func(p frames.Position) bool {
		for _, l := range ranges {
			if l.From <= p && p <= l.To {
				return true
			}
		}
		return false
	}
	i := 0
	for _, w := range want {
		for i < len(got.Frames) && got.Frames[i].Position < w.Position {
			i++
		}
		if i < len(got.Frames) && got.Frames[i].Position == w.Position {
			g := got.Frames[i]
			if g.Channel != w.Channel || !bytes.Equal(g.Payload, w.Payload) {
				t.Fatalf("%s: position %d: stored channel %d %s, written channel %d %s", id, w.Position, g.Channel, short(g.Payload), w.Channel, short(w.Payload))
			}
			continue
		}
		if !lost(w.Position) {
			t.Fatalf("%s: position %d is neither stored nor named by a transport record", id, w.Position)
		}
	}
	if len(got.Frames) > len(want) {
		t.Errorf("%s: %d frames stored, only %d written", id, len(got.Frames), len(want))
	}
	return recorded
}

func tempStore(t testing.TB) *segments.Store {
	t.Helper()
	st, err := segments.CreateStore(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

package fleet

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// produceFor writes and ticks p (40 lines every 5 ms, flushing each tick)
// for d, or until stop says so.
func produceFor(p *producer, d time.Duration, stop func() bool) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && (stop == nil || !stop()) {
		p.write(40)
		p.tick(true)
		time.Sleep(5 * time.Millisecond)
	}
}

// trickleFor writes and ticks p (1 line every 5 ms, flushing each tick)
// for d, or until stop says so: lines that close a lost range (its record
// follows), too few to overflow the buffer again however slowly a loaded
// server acknowledges.
func trickleFor(p *producer, d time.Duration, stop func() bool) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && (stop == nil || !stop()) {
		p.write(1)
		p.tick(true)
		time.Sleep(5 * time.Millisecond)
	}
}

// outageSetup starts a server (files in a temporary directory, so that
// it can be restarted on the same address) and a producer of stream
// node#1 whose publisher has a 64 KiB buffer (plain records, so that an
// outage fills it soon), which publishes for 300 ms, and on until the
// server has acknowledged a message (for up to 20 s: a loaded machine).
func outageSetup(t *testing.T, node string) (s *Server, addr, dir string, nc *nats.Conn, tg Target, p *producer) {
	t.Helper()
	dir = t.TempDir()
	s = testServer(t, dir)
	addr = hostPort(t, s.ClientURL())
	nc, tg = connect(t, s.ClientURL())
	initStream(t, nc, tg.Prefix, StreamOptions{})
	p = newProducer(t, node, 1, publisherOn(t, nc, tg, PublisherOptions{Buffer: 64 << 10}))
	produceFor(p, 300*time.Millisecond, nil)
	produceFor(p, 20*time.Second, func() bool { return p.pub.Stats().Messages > 0 })
	return s, addr, dir, nc, tg, p
}

// TestServerRestart shuts the server down while a producer publishes with
// a buffer the outage overflows, restarts it on the same address and
// files, and checks the copy the store gets: every position written is
// stored or named by a datastream.transport record stored after it, each
// record names only absent positions and says the server was unreachable,
// the stream ends, and the publisher's report adds up.
func TestServerRestart(t *testing.T) {
	s, addr, dir, nc, tg, p := outageSetup(t, "outage")
	before := p.pub.Stats()
	if before.Messages == 0 || before.LostFrames != 0 {
		t.Fatalf("before the outage: %+v", before)
	}

	s.Shutdown()
	// Until the outage has overflowed the buffer (a second, or more on a
	// loaded machine: up to 20 s).
	produceFor(p, time.Second, nil)
	produceFor(p, 20*time.Second, func() bool { return p.pub.Stats().LostFrames > 0 })
	if p.pub.Stats().LostFrames == 0 {
		t.Fatalf("the outage lost nothing in 20 s (buffer %d bytes waiting)", p.pub.Waiting())
	}
	restartServer(t, addr, dir)
	// Until the publisher delivers again and has recorded its loss, then
	// a little more so that the record's message goes out; a trickle of
	// lines, so that the only losses are the outage's.
	trickleFor(p, 20*time.Second, func() bool { return p.pub.recorded > 0 })
	if p.pub.recorded == 0 {
		t.Fatalf("no transport record 20 s after the restart: %+v", p.pub.Stats())
	}
	trickleFor(p, 200*time.Millisecond, nil)
	rep := p.end(t, 10*time.Second)
	t.Logf("report: %+v", rep)
	if len(rep.Unrecorded) != 0 || rep.Recorded == 0 || rep.LostFrames == 0 {
		t.Errorf("report: %+v", rep)
	}
	if h := p.e.Health(); h.SubscriberDropped != rep.LostFrames {
		t.Errorf("subscriber_dropped %d, lost %d", h.SubscriberDropped, rep.LostFrames)
	}

	st := tempStore(t)
	ingestAll(t, nc, tg, st, time.Second)
	id := p.e.Stream().Stream
	g := loadStore(t, st)[id]
	if g == nil {
		t.Fatal("stream not stored")
	}
	if !g.Ended {
		t.Error("stream not ended in the store")
	}
	recorded := checkLosses(t, id, g, p.all, nil, "server unreachable")
	if recorded != rep.LostFrames {
		t.Errorf("records name %d frames, the publisher lost %d", recorded, rep.LostFrames)
	}
	recs := transportRecords(t, g)
	if uint64(len(recs)) != rep.Recorded {
		t.Errorf("%d transport records stored, %d submitted", len(recs), rep.Recorded)
	}
	for _, r := range recs {
		t.Logf("at %d: %+v", r.Position, *r.Record.Lost)
		if r.Record.Output != tg.Display {
			t.Errorf("record output %q, want %q", r.Record.Output, tg.Display)
		}
	}
	// The file output has every position, the records included, and no
	// record that the network copy lacks (one submitted while the outage
	// went on, itself lost).
	inFile := 0
	for i, f := range p.all {
		if f.Position != frames.Position(i) {
			t.Fatalf("file output: frame %d has position %d", i, f.Position)
		}
		if f.Channel != p.ch {
			inFile++
		}
	}
	if inFile != len(recs) {
		t.Errorf("file output has %d transport records, the network copy %d", inFile, len(recs))
	}
	if n := len(p.all) - len(g.Frames); uint64(n) != rep.LostFrames {
		t.Errorf("%d frames written, %d stored, %d lost", len(p.all), len(g.Frames), rep.LostFrames)
	}
}

// TestDeadServer: a publisher whose server never answers costs the capture
// nothing. Take never blocks (the producer finishes), the file output gets
// every frame, and Close with a short grace reports every frame lost, in
// ranges that no record names.
func TestDeadServer(t *testing.T) {
	tg, err := ParseTarget(fmt.Sprintf("nats://127.0.0.1:%d/ds", freePort(t)))
	if err != nil {
		t.Fatal(err)
	}
	nc, err := Connect(tg, Auth{}, ConnectOptions{Name: "dead", Retry: true, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("Connect with Retry: %v", err)
	}
	defer nc.Close()
	// Plain records, so that the buffer overflows: frames are lost both
	// while the capture runs and at Close.
	p := newProducer(t, "dead", 1, publisherOn(t, nc, tg, PublisherOptions{Buffer: 64 << 10}))
	const ticks, lines = 200, 50
	done := make(chan PublishReport)
	go func() {
		for i := 0; i < ticks; i++ {
			p.write(lines)
			p.tick(i%5 == 0)
		}
		done <- p.end(t, 300*time.Millisecond)
	}()
	var rep PublishReport
	select {
	case rep = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the producer did not finish: Take or Close blocked on a dead server")
	}
	t.Logf("report: %+v", rep)
	var data, records int
	for i, f := range p.all {
		if f.Position != frames.Position(i) {
			t.Fatalf("file output: frame %d has position %d", i, f.Position)
		}
		if f.Channel == p.ch {
			data++
		} else {
			records++
		}
	}
	if data != ticks*lines {
		t.Fatalf("file output got %d frames, want %d", data, ticks*lines)
	}
	if records != 0 {
		// The output never delivered: a record says what it lost "once it
		// delivers again", so none belongs here.
		t.Errorf("file output got %d datastream.transport records from an output that never delivered; the first: %s",
			records, p.all[slices.IndexFunc(p.all, func(f frames.Frame) bool { return f.Channel != p.ch })].Payload)
	}
	if rep.Messages != 0 || rep.Recorded != 0 || rep.LostFrames != uint64(len(p.all)) {
		t.Errorf("report %+v: want every one of %d frames lost, none recorded", rep, len(p.all))
	}
	// What the full buffer refused is counted as the subscriber's drops
	// (what Close gave up is not: the stream has ended).
	if h := p.e.Health(); h.SubscriberDropped == 0 || h.SubscriberDropped >= rep.LostFrames {
		t.Errorf("subscriber_dropped %d (lost %d): the overflowing buffer is not counted", h.SubscriberDropped, rep.LostFrames)
	}
	// The ranges cover every position once; the stream's end (a message
	// without frames) is named by a range of no frames after the last.
	end := frames.Position(len(p.all))
	covered := make([]int, len(p.all))
	var sum uint64
	unreachable := false
	for _, l := range rep.Unrecorded {
		sum += l.Frames
		if l.Reason == "" {
			t.Errorf("loss %d..%d without a reason", l.From, l.To)
		}
		unreachable = unreachable || strings.Contains(l.Reason, "server unreachable")
		if l.Frames == 0 {
			if l.From != end || l.To != end {
				t.Errorf("loss %d..%d of no frames: want %d..%d (the end)", l.From, l.To, end, end)
			}
			continue
		}
		if l.From > l.To || l.To >= end || l.Frames != uint64(l.To-l.From)+1 {
			t.Errorf("loss %d..%d counts %d frames (%d written)", l.From, l.To, l.Frames, end)
			continue
		}
		for q := l.From; q <= l.To; q++ {
			covered[q]++
		}
	}
	if sum != rep.LostFrames {
		t.Errorf("unrecorded ranges count %d frames, lost %d", sum, rep.LostFrames)
	}
	if i := slices.IndexFunc(covered, func(n int) bool { return n != 1 }); i >= 0 {
		t.Errorf("position %d is in %d unrecorded ranges: %+v", i, covered[i], rep.Unrecorded)
	}
	if !unreachable {
		t.Errorf("no range says the server was unreachable: %+v", rep.Unrecorded)
	}
}

// TestSlowServer: a buffer too small for the rate the stream is written
// at loses frames while the server is up; each lost range is recorded
// once, after it, with the buffer named as the reason, and the capture
// file holds no record the network copy lacks.
func TestSlowServer(t *testing.T) {
	s := testServer(t, "")
	nc, tg := connect(t, s.ClientURL())
	initStream(t, nc, tg.Prefix, StreamOptions{})
	p := newProducer(t, "slow", 1, publisherOn(t, nc, tg, PublisherOptions{Buffer: 16 << 10}))
	for i := 0; i < 300; i++ {
		p.write(100)
		p.tick(true)
	}
	rep := p.end(t, 10*time.Second)
	t.Logf("report: %+v", rep)
	if rep.LostFrames == 0 || rep.Recorded == 0 {
		t.Fatalf("nothing lost or recorded: %+v", rep)
	}
	st := tempStore(t)
	ingestAll(t, nc, tg, st, time.Second)
	id := p.e.Stream().Stream
	g := loadStore(t, st)[id]
	if g == nil || !g.Ended {
		t.Fatalf("stream not stored (%v) or not ended", g == nil)
	}
	var unrecorded uint64
	for _, l := range rep.Unrecorded {
		unrecorded += l.Frames
	}
	recorded := checkLosses(t, id, g, p.all, rep.Unrecorded, "buffer full")
	if recorded+unrecorded != rep.LostFrames {
		t.Errorf("records name %d frames, unrecorded %d, the publisher lost %d", recorded, unrecorded, rep.LostFrames)
	}
	inFile := 0
	for _, f := range p.all {
		if f.Channel != p.ch {
			inFile++
		}
	}
	if recs := transportRecords(t, g); inFile != len(recs) {
		t.Errorf("file output has %d transport records, the network copy %d", inFile, len(recs))
	}
}

// TestServerGoneAtEnd: the server goes away while a producer publishes and
// is not back when the producer ends. The frames lost at the tail have no
// record in the network copy (none could be written: the stream ended
// before the server came back), so that copy must not claim to be whole:
// it carries no StreamEnded and reads as not ended, never as a stream
// that simply stopped; the publisher reports the ranges.
func TestServerGoneAtEnd(t *testing.T) {
	s, addr, dir, nc, tg, p := outageSetup(t, "gone")
	if st := p.pub.Stats(); st.Messages == 0 {
		t.Fatalf("nothing published before the outage: %+v", st)
	}
	s.Shutdown()
	produceFor(p, time.Second, nil)
	rep := p.end(t, 500*time.Millisecond)
	if rep.LostFrames == 0 || len(rep.Unrecorded) == 0 {
		t.Fatalf("report: %+v", rep)
	}
	var unrecorded uint64
	for _, l := range rep.Unrecorded {
		if !strings.Contains(l.Reason, "server unreachable") {
			t.Errorf("unrecorded range %d–%d: reason %q", l.From, l.To, l.Reason)
		}
		unrecorded += l.Frames
	}
	restartServer(t, addr, dir)
	st := tempStore(t)
	ingestAll(t, nc, tg, st, time.Second)
	id := p.e.Stream().Stream
	g := loadStore(t, st)[id]
	if g == nil {
		t.Fatal("stream not stored")
	}
	if g.Ended {
		t.Fatal("the network copy lost its tail and still reads as ended")
	}
	if n := uint64(len(p.all) - len(g.Frames)); n != rep.LostFrames {
		t.Errorf("%d frames written, %d stored, %d reported lost", len(p.all), len(g.Frames), rep.LostFrames)
	}
}

package frames

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var endpointStream = StreamID{Node: "node-endpoint", Life: 7}

func newTestEndpoint() *Endpoint {
	return NewEndpoint(StreamDescriptor{Stream: endpointStream}, EndpointOptions{MuxCapacity: 64})
}

func mustRegister(t *testing.T, e *Endpoint, name string, c ChannelContent) ChannelID {
	t.Helper()
	id, err := e.RegisterChannel(name, c)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// drainAll returns every queued event without waiting.
func drainAll(s *Subscription) []Event { return s.DrainInto(nil) }

func framePositions(evs []Event) []Position {
	var ps []Position
	for _, ev := range evs {
		if ev.Kind == EventFrame {
			ps = append(ps, ev.Frame.Position)
		}
	}
	return ps
}

// ARCHITECTURE.md case 2.1
func TestEndpointNoSubscribersBitbuckets(t *testing.T) {
	e := newTestEndpoint()
	log := mustRegister(t, e, "runtime.log", TextStream())
	if !e.Producer().SubmitText(log, "hello") {
		t.Fatal("submit refused")
	}
	rep := e.Tick()
	if rep != (TickReport{Drained: 1}) {
		t.Fatalf("tick = %+v", rep)
	}
	h := e.Health()
	if h.Assigned != 1 || h.Drained != 1 || h.Bitbucketed != 1 || h.MuxDropped != 0 {
		t.Fatalf("health = %+v", h)
	}
}

// ARCHITECTURE.md case 2.2, §2.3
func TestEndpointCatalogIDsAndConflicts(t *testing.T) {
	e := newTestEndpoint()
	ids := []ChannelID{
		mustRegister(t, e, "stdout", TextStream()),
		mustRegister(t, e, "stderr", TextStream()),
	}
	rec, err := e.RegisterRecord("runtime.record")
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, rec)
	if diff := cmp.Diff([]ChannelID{1, 2, 3}, ids); diff != "" {
		t.Fatalf("ids (-want +got):\n%s", diff)
	}
	if got := len(e.Catalog()); got != 3 {
		t.Fatalf("catalog holds %d descriptors, want 3", got)
	}
	if again := mustRegister(t, e, "stdout", TextStream()); again != 1 {
		t.Fatalf("re-registering stdout gave %d, want 1", again)
	}
	_, err = e.RegisterChannel("stdout", JSONRecord("stdout.json"))
	var ce *ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, ErrChannelConflict) || ce.Name != "stdout" {
		t.Fatalf("conflicting registration: err = %v", err)
	}
	if want := `frames: channel "stdout" (id 1) is registered as TextStream, not JsonRecord(stdout.json)`; err.Error() != want {
		t.Fatalf("error text %q, want %q", err, want)
	}
	if _, err := e.RegisterChannel("", Bytes()); !errors.Is(err, ErrEmptyChannelName) {
		t.Fatalf("empty name: err = %v", err)
	}
	if _, err := e.RegisterChannel("x\xff", Bytes()); !errors.Is(err, ErrBadChannelName) {
		t.Fatalf("invalid UTF-8 name: err = %v", err)
	}
	if _, err := e.RegisterChannel("weird", ChannelContent{Kind: 9}); !errors.Is(err, ErrBadContent) {
		t.Fatalf("unknown content: err = %v", err)
	}
}

func TestCatalogExhaustionIsAnError(t *testing.T) {
	e := NewEndpoint(StreamDescriptor{Stream: endpointStream}, EndpointOptions{MaxChannelID: 2})
	mustRegister(t, e, "a", Bytes())
	mustRegister(t, e, "b", Bytes())
	if _, err := e.RegisterChannel("c", Bytes()); !errors.Is(err, ErrChannelsExhausted) {
		t.Fatalf("third channel: err = %v, want ErrChannelsExhausted", err)
	}
	// Existing names still resolve; nothing was reused.
	if id := mustRegister(t, e, "b", Bytes()); id != 2 {
		t.Fatalf("b = %d", id)
	}
}

// ARCHITECTURE.md case 2.4
func TestEndpointSubscribeSnapshot(t *testing.T) {
	e := newTestEndpoint()
	mustRegister(t, e, "stdout", TextStream())
	if _, err := e.RegisterRecord("runtime.record"); err != nil {
		t.Fatal(err)
	}
	s := e.Subscribe(SubscriptionRequest{}, SubscriberOptions{Capacity: 8})
	snap := s.Snapshot()
	if len(snap.Streams) != 1 || snap.Streams[0].Stream != endpointStream {
		t.Fatalf("snapshot streams = %+v", snap.Streams)
	}
	var names []string
	for _, d := range snap.Channels {
		names = append(names, d.Name)
	}
	if diff := cmp.Diff([]string{"stdout", "runtime.record"}, names); diff != "" {
		t.Fatalf("snapshot channels (-want +got):\n%s", diff)
	}
	if evs := drainAll(s); len(evs) != 0 {
		t.Fatalf("snapshot channels were also queued as events: %v", evs)
	}
}

// ARCHITECTURE.md case 2.5
func TestEndpointNoReplay(t *testing.T) {
	e := newTestEndpoint()
	log := mustRegister(t, e, "runtime.log", TextStream())
	p := e.Producer()
	p.SubmitText(log, "pre-subscription")
	e.Tick()
	s := e.Subscribe(SubscriptionRequest{}, SubscriberOptions{Capacity: 8})
	p.SubmitText(log, "visible")
	e.Tick()
	evs := drainAll(s)
	want := []Event{FrameEvent(FrameDelivery{Channel: ChannelRef{endpointStream, log}, Position: 1, Payload: []byte("visible")})}
	if diff := cmp.Diff(want, evs); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
}

// ARCHITECTURE.md case 2.6 and §2.12: the snapshot is filtered, future frames are
// broadcast, and a frame on a channel left out of the snapshot is preceded
// by that channel's declaration so the subscriber can name it.
func TestEndpointFilteredSnapshotBroadcastFrames(t *testing.T) {
	e := newTestEndpoint()
	text := mustRegister(t, e, "runtime.log", TextStream())
	rec, _ := e.RegisterRecord("runtime.record")
	s := e.Subscribe(SubscriptionRequest{Channels: ContentChannels(KindTextStream)}, SubscriberOptions{Capacity: 8})
	if snap := s.Snapshot(); len(snap.Channels) != 1 || snap.Channels[0].ID != text {
		t.Fatalf("filtered snapshot = %+v", snap.Channels)
	}
	p := e.Producer()
	p.SubmitText(text, "line")
	p.SubmitRecord(rec, map[string]int{"n": 1})
	e.Tick()
	evs := drainAll(s)
	if got := framePositions(evs); len(got) != 2 {
		t.Fatalf("received frames at %v, want both", got)
	}
	named := map[ChannelID]bool{text: true}
	for _, ev := range evs {
		switch ev.Kind {
		case EventChannelDeclared:
			named[ev.Channel.ID] = true
		case EventFrame:
			if !named[ev.Frame.Channel.Channel] {
				t.Fatalf("frame on channel %d before its declaration: %v", ev.Frame.Channel.Channel, evs)
			}
		}
	}
}

// ARCHITECTURE.md case 2.7
func TestEndpointTwoSubscribers(t *testing.T) {
	e := newTestEndpoint()
	log := mustRegister(t, e, "runtime.log", TextStream())
	a := e.Subscribe(SubscriptionRequest{}, SubscriberOptions{Capacity: 8})
	b := e.Subscribe(SubscriptionRequest{}, SubscriberOptions{Capacity: 8})
	for i := range 3 {
		e.Producer().SubmitText(log, fmt.Sprint(i))
	}
	rep := e.Tick()
	if rep != (TickReport{Drained: 3, Delivered: 6, Subscribers: 2}) {
		t.Fatalf("tick = %+v", rep)
	}
	for _, s := range []*Subscription{a, b} {
		if diff := cmp.Diff([]Position{0, 1, 2}, framePositions(drainAll(s))); diff != "" {
			t.Fatalf("positions (-want +got):\n%s", diff)
		}
	}
}

// ARCHITECTURE.md case 2.8
func TestEndpointSlowSubscriberDropsOnlyItsOwn(t *testing.T) {
	e := newTestEndpoint()
	log := mustRegister(t, e, "runtime.log", TextStream())
	slow := e.Subscribe(SubscriptionRequest{}, SubscriberOptions{Name: "slow", Capacity: 1})
	fast := e.Subscribe(SubscriptionRequest{}, SubscriberOptions{Name: "fast", Capacity: 8})
	for i := range 4 {
		e.Producer().SubmitText(log, fmt.Sprint(i))
	}
	rep := e.Tick()
	if rep != (TickReport{Drained: 4, Delivered: 5, DroppedForSubscribers: 3, Subscribers: 2}) {
		t.Fatalf("tick = %+v", rep)
	}
	if diff := cmp.Diff([]Position{0}, framePositions(drainAll(slow))); diff != "" {
		t.Fatalf("slow (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Position{0, 1, 2, 3}, framePositions(drainAll(fast))); diff != "" {
		t.Fatalf("fast (-want +got):\n%s", diff)
	}
	if slow.Dropped() != 3 || fast.Dropped() != 0 {
		t.Fatalf("drops slow %d fast %d", slow.Dropped(), fast.Dropped())
	}
	h := e.Health()
	want := []SubscriberHealth{{"slow", 3}, {"fast", 0}}
	if diff := cmp.Diff(want, h.Subscribers); diff != "" || h.SubscriberDropped != 3 {
		t.Fatalf("health subscribers (-want +got):\n%s (total %d)", diff, h.SubscriberDropped)
	}
}

// A subscriber that loses copies after taking them (a network output
// whose server never acknowledged them) counts them with Lost: its own
// counter and the endpoint's all-time total both grow, the other
// subscribers' do not, and a closed subscriber's losses stay in the total.
func TestSubscriptionLost(t *testing.T) {
	e := newTestEndpoint()
	out := e.Subscribe(SubscriptionRequest{}, SubscriberOptions{Name: "nats://h:4222/ds", Capacity: 8})
	file := e.Subscribe(SubscriptionRequest{}, SubscriberOptions{Name: "file", Capacity: 8})
	out.Lost(0)
	out.Lost(5)
	out.Lost(2)
	if out.Dropped() != 7 || file.Dropped() != 0 {
		t.Fatalf("dropped out %d file %d", out.Dropped(), file.Dropped())
	}
	h := e.Health()
	want := []SubscriberHealth{{"nats://h:4222/ds", 7}, {"file", 0}}
	if diff := cmp.Diff(want, h.Subscribers); diff != "" || h.SubscriberDropped != 7 {
		t.Fatalf("health subscribers (-want +got):\n%s (total %d)", diff, h.SubscriberDropped)
	}
	out.Close()
	e.Tick()
	if h := e.Health(); h.SubscriberDropped != 7 || len(h.Subscribers) != 1 {
		t.Fatalf("after close: %+v", h)
	}
}

// ARCHITECTURE.md case 2.9
func TestEndpointDeclarationWithoutTick(t *testing.T) {
	e := newTestEndpoint()
	s := e.Subscribe(SubscriptionRequest{Channels: ContentChannels(KindTextStream)}, SubscriberOptions{Capacity: 8})
	id, _ := e.RegisterRecord("runtime.record")
	ev, ok := s.TryNext()
	if !ok || ev.Kind != EventChannelDeclared || ev.Channel.ID != id || ev.Channel.Name != "runtime.record" {
		t.Fatalf("got %+v %v, want ChannelDeclared runtime.record", ev, ok)
	}
}

// ARCHITECTURE.md case 2.10: the process-output adapter shape.
func TestEndpointProcessOutput(t *testing.T) {
	e := newTestEndpoint()
	out := mustRegister(t, e, "proc.trainer.stdout", TextStream())
	errc := mustRegister(t, e, "proc.trainer.stderr", TextStream())
	s := e.Subscribe(SubscriptionRequest{}, SubscriberOptions{Capacity: 8})
	onOutput := func(isStderr bool, data []byte) {
		ch := out
		if isStderr {
			ch = errc
		}
		e.Producer().SubmitBytes(ch, append([]byte(nil), data...))
	}
	onOutput(false, []byte("hello\n"))
	onOutput(true, []byte("warn\n"))
	e.Tick()
	want := []Event{
		FrameEvent(FrameDelivery{Channel: ChannelRef{endpointStream, out}, Position: 0, Payload: []byte("hello\n")}),
		FrameEvent(FrameDelivery{Channel: ChannelRef{endpointStream, errc}, Position: 1, Payload: []byte("warn\n")}),
	}
	if diff := cmp.Diff(want, drainAll(s)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// ARCHITECTURE.md case 2.11
func TestEndpointGoneSubscriberRemoved(t *testing.T) {
	e := newTestEndpoint()
	log := mustRegister(t, e, "runtime.log", TextStream())
	gone := e.Subscribe(SubscriptionRequest{}, SubscriberOptions{Name: "gone", Capacity: 8})
	live := e.Subscribe(SubscriptionRequest{}, SubscriberOptions{Name: "live", Capacity: 8})
	gone.Close()
	e.Producer().SubmitText(log, "a")
	e.Producer().SubmitText(log, "b")
	rep := e.Tick()
	if rep != (TickReport{Drained: 2, Delivered: 2, DroppedForSubscribers: 2, Subscribers: 2}) {
		t.Fatalf("tick = %+v", rep)
	}
	if gone.Dropped() != 2 {
		t.Fatalf("gone dropped %d, want 2", gone.Dropped())
	}
	if h := e.Health(); len(h.Subscribers) != 1 || h.Subscribers[0].Name != "live" {
		t.Fatalf("gone subscriber not removed: %+v", h.Subscribers)
	}
	e.Producer().SubmitText(log, "c")
	if rep := e.Tick(); rep.Subscribers != 1 || rep.DroppedForSubscribers != 0 {
		t.Fatalf("after removal: %+v", rep)
	}
	if got := len(framePositions(drainAll(live))); got != 3 {
		t.Fatalf("live got %d frames", got)
	}
}

// ARCHITECTURE.md case 2.12: a declaration is never lost to a full data queue.
func TestEndpointDeclarationBypassesFullQueue(t *testing.T) {
	e := newTestEndpoint()
	log := mustRegister(t, e, "runtime.log", TextStream())
	s := e.Subscribe(SubscriptionRequest{}, SubscriberOptions{Capacity: 1})
	e.Producer().SubmitText(log, "fills the queue")
	e.Producer().SubmitText(log, "dropped")
	e.Tick()
	id := mustRegister(t, e, "late", TextStream())
	e.Producer().SubmitText(id, "x")
	e.Tick()
	evs := drainAll(s)
	var declared bool
	for _, ev := range evs {
		if ev.Kind == EventChannelDeclared && ev.Channel.ID == id {
			declared = true
		}
	}
	if !declared {
		t.Fatalf("declaration of %d lost: %+v", id, evs)
	}
}

// Submitting on an id the catalog never handed out is refused before a
// position, so no subscriber ever receives an unnameable frame.
func TestEndpointUnknownChannelRefused(t *testing.T) {
	e := newTestEndpoint()
	mustRegister(t, e, "a", Bytes())
	p := e.Producer()
	if p.SubmitBytes(0, nil) || p.SubmitBytes(2, nil) || p.SubmitBytes(99, nil) {
		t.Fatal("submit on an unregistered id accepted")
	}
	if h := e.Health(); h.UnknownChannel != 3 || h.Assigned != 0 {
		t.Fatalf("health = %+v", h)
	}
}

// ARCHITECTURE.md case 2.12, property: subscribers that join while channels are
// being registered and frames submitted see each declaration exactly once
// (snapshot or event, never both, never neither) and can name every frame.
func TestEndpointPropertySubscribeRacesRegistration(t *testing.T) {
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 7))
		e := NewEndpoint(StreamDescriptor{Stream: endpointStream}, EndpointOptions{MuxCapacity: 1 + rng.IntN(200)})
		const channels = 40
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range channels {
				id, err := e.RegisterChannel(fmt.Sprintf("c%d", i), TextStream())
				if err != nil {
					t.Error(err)
					return
				}
				for range rng.IntN(5) {
					e.Producer().SubmitText(id, "x")
				}
				if rng.IntN(3) == 0 {
					e.Tick()
				}
			}
		}()
		subs := make([]*Subscription, 8)
		for i := range subs {
			var req SubscriptionRequest
			if i%2 == 1 {
				req.Channels = PrefixChannels("c1")
			}
			subs[i] = e.Subscribe(req, SubscriberOptions{Capacity: 1 + i})
		}
		wg.Wait()
		e.End()
		for i, s := range subs {
			seen := map[ChannelID]int{}
			for _, d := range s.Snapshot().Channels {
				seen[d.ID]++
			}
			for {
				ev, err := s.Next(context.Background())
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				switch ev.Kind {
				case EventChannelDeclared:
					seen[ev.Channel.ID]++
				case EventFrame:
					if seen[ev.Frame.Channel.Channel] == 0 {
						t.Fatalf("seed %d sub %d: frame on channel %d it cannot name", seed, i, ev.Frame.Channel.Channel)
					}
				}
			}
			for id, n := range seen {
				if n != 1 {
					t.Fatalf("seed %d sub %d: channel %d declared %d times", seed, i, id, n)
				}
			}
			if i%2 == 0 && len(seen) != channels {
				t.Fatalf("seed %d sub %d (All): saw %d declarations, want %d", seed, i, len(seen), channels)
			}
		}
	}
}

// Property (subscriber isolation, no back-pressure): producers submitting
// concurrently with ticks are never blocked by a subscriber that never
// reads, and every subscriber's frames arrive in position order with
// delivered + dropped equal to drained.
func TestEndpointPropertySubscriberIsolation(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 3))
		e := NewEndpoint(StreamDescriptor{Stream: endpointStream}, EndpointOptions{MuxCapacity: 1 + rng.IntN(100)})
		id := mustRegister(t, e, "x", Bytes())
		stuck := e.Subscribe(SubscriptionRequest{}, SubscriberOptions{Name: "stuck", Capacity: 1})
		reader := e.Subscribe(SubscriptionRequest{}, SubscriberOptions{Name: "reader", Capacity: 1 + rng.IntN(50)})
		var got []Position
		readDone := make(chan struct{})
		go func() {
			defer close(readDone)
			for {
				ev, err := reader.Next(context.Background())
				if err != nil {
					return
				}
				if ev.Kind == EventFrame {
					got = append(got, ev.Frame.Position)
				}
			}
		}()
		var wg sync.WaitGroup
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 500 {
					e.Producer().SubmitBytes(id, nil)
				}
			}()
		}
		ticks := make(chan struct{})
		go func() {
			defer close(ticks)
			for range 50 {
				e.Tick()
				time.Sleep(time.Duration(rng.IntN(50)) * time.Microsecond)
			}
		}()
		wg.Wait()
		<-ticks
		e.End()
		<-readDone
		h := e.Health()
		for i := 1; i < len(got); i++ {
			if got[i] <= got[i-1] {
				t.Fatalf("seed %d: positions out of order: %v", seed, got[i-1:i+1])
			}
		}
		if uint64(len(got))+reader.Dropped() != h.Drained {
			t.Fatalf("seed %d: reader got %d + dropped %d != drained %d", seed, len(got), reader.Dropped(), h.Drained)
		}
		if h.Drained > 0 && stuck.Dropped() != h.Drained-1 {
			t.Fatalf("seed %d: stuck subscriber (capacity 1, never reads) dropped %d of %d", seed, stuck.Dropped(), h.Drained)
		}
		if h.Assigned+h.MuxDropped != 1500 {
			t.Fatalf("seed %d: assigned %d + dropped %d != 1500", seed, h.Assigned, h.MuxDropped)
		}
	}
}

func TestEndpointEnd(t *testing.T) {
	e := newTestEndpoint()
	log := mustRegister(t, e, "runtime.log", TextStream())
	s := e.Subscribe(SubscriptionRequest{}, SubscriberOptions{Capacity: 8})
	e.Producer().SubmitText(log, "last words")
	e.End()
	ctx := context.Background()
	ev, err := s.Next(ctx)
	if err != nil || ev.Kind != EventFrame {
		t.Fatalf("first event %+v %v, want the pending frame", ev, err)
	}
	ev, err = s.Next(ctx)
	if err != nil || ev.Kind != EventStreamEnded || ev.Ended != endpointStream {
		t.Fatalf("second event %+v %v, want StreamEnded", ev, err)
	}
	if _, err := s.Next(ctx); err != io.EOF {
		t.Fatalf("after end: %v, want io.EOF", err)
	}
	if _, err := e.RegisterChannel("more", Bytes()); !errors.Is(err, ErrEnded) {
		t.Fatalf("register after end: %v", err)
	}
	e.End() // idempotent
}

func TestSubscriptionNextHonoursContext(t *testing.T) {
	e := newTestEndpoint()
	s := e.Subscribe(SubscriptionRequest{}, SubscriberOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := s.Next(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}

func TestClockEmitsOnlyWhenFramesDrain(t *testing.T) {
	e := newTestEndpoint()
	now := time.Unix(1700000000, 0)
	c, err := NewClock(e, func() time.Time { now = now.Add(time.Millisecond); return now })
	if err != nil {
		t.Fatal(err)
	}
	s := e.Subscribe(SubscriptionRequest{}, SubscriberOptions{Capacity: 64})
	log := mustRegister(t, e, "runtime.log", TextStream())
	if rep := c.Tick(); rep.Drained != 0 {
		t.Fatalf("idle tick drained %d", rep.Drained)
	}
	e.Producer().SubmitText(log, "a")
	e.Producer().SubmitText(log, "b")
	if rep := c.Tick(); rep.Drained != 3 {
		t.Fatalf("tick drained %d, want 2 frames + 1 clock", rep.Drained)
	}
	if rep := c.Tick(); rep.Drained != 0 {
		t.Fatalf("a clock record must not cause another one: drained %d", rep.Drained)
	}
	var clocks []ClockRecord
	var last Position
	for _, ev := range drainAll(s) {
		if ev.Kind == EventFrame && ev.Frame.Channel.Channel == 1 {
			r, err := DecodeRecord(ev.Frame.Payload, ClockRecord{})
			if err != nil {
				t.Fatal(err)
			}
			clocks = append(clocks, r)
			last = ev.Frame.Position
		}
	}
	// The clock record is read at drain time and positioned first: an
	// upper bound on the submission time of the frames after it.
	if len(clocks) != 1 || last != 0 {
		t.Fatalf("clock records %v at %d, want one before both frames", clocks, last)
	}
	if clocks[0].UnixNS != time.Unix(1700000000, 2e6).UnixNano() || clocks[0].MonoNS != int64(time.Millisecond) {
		t.Fatalf("clock = %+v", clocks[0])
	}
}

func TestSubmitHealthRecord(t *testing.T) {
	e := newTestEndpoint()
	log := mustRegister(t, e, "runtime.log", TextStream())
	s := e.Subscribe(SubscriptionRequest{}, SubscriberOptions{Name: "w", Capacity: 64})
	e.Producer().SubmitText(log, "a")
	e.Tick()
	if ok, err := e.SubmitHealth(); !ok || err != nil {
		t.Fatalf("SubmitHealth = %v, %v", ok, err)
	}
	e.Tick()
	evs := drainAll(s)
	last := evs[len(evs)-1]
	h, err := DecodeRecord(last.Frame.Payload, Health{})
	if err != nil {
		t.Fatal(err)
	}
	want := Health{Assigned: 1, Drained: 1, Subscribers: []SubscriberHealth{{"w", 0}}}
	if diff := cmp.Diff(want, h); diff != "" {
		t.Fatalf("health (-want +got):\n%s", diff)
	}
}

// End refuses later submissions, so an accepted frame is never lost
// silently (found by review: submits racing End returned true and stayed
// pending forever).
func TestEndpointEndRefusesLaterSubmits(t *testing.T) {
	e := newTestEndpoint()
	log := mustRegister(t, e, "runtime.log", TextStream())
	s := e.Subscribe(SubscriptionRequest{}, SubscriberOptions{Capacity: MaxSubscriberCapacity})
	var accepted atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5000 {
				if e.Producer().SubmitText(log, "x") {
					accepted.Add(1)
				}
			}
		}()
	}
	for range 20 {
		e.Tick()
	}
	e.End()
	wg.Wait()
	got := len(framePositions(drainAll(s)))
	if int64(got) != accepted.Load() || e.Pending() != 0 {
		t.Fatalf("accepted %d, delivered %d, pending %d", accepted.Load(), got, e.Pending())
	}
	if e.Producer().SubmitText(log, "late") {
		t.Fatal("submit after End accepted")
	}
}

// Several goroutines may wait in Next at once; all of them wake.
func TestSubscriptionManyWaiters(t *testing.T) {
	e := newTestEndpoint()
	log := mustRegister(t, e, "runtime.log", TextStream())
	s := e.Subscribe(SubscriptionRequest{}, SubscriberOptions{Capacity: 8})
	var wg sync.WaitGroup
	var frames atomic.Int64
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ev, err := s.Next(context.Background())
				if err != nil {
					return
				}
				if ev.Kind == EventFrame {
					frames.Add(1)
				}
			}
		}()
	}
	e.Producer().SubmitText(log, "a")
	e.Producer().SubmitText(log, "b")
	e.Tick()
	e.End()
	wg.Wait() // hangs if a waiter is never woken
	if frames.Load() != 2 {
		t.Fatalf("got %d frames", frames.Load())
	}
}

func TestDecodeRecordDoesNotAliasDefaults(t *testing.T) {
	type rec struct {
		Tags map[string]string `json:"tags"`
	}
	defaults := rec{Tags: map[string]string{}}
	if _, err := DecodeRecord([]byte(`{"tags":{"host":"a"}}`), defaults); err != nil {
		t.Fatal(err)
	}
	if len(defaults.Tags) != 0 {
		t.Fatalf("defaults were written through: %v", defaults.Tags)
	}
}

// TestEnableHealthPlacesLoss: with EnableHealth, a loss at the mux becomes a
// datastream.health record with Loss set, positioned right after the frame
// the refused submissions followed, and the clock record heads the batch.
func TestEnableHealthPlacesLoss(t *testing.T) {
	e := NewEndpoint(StreamDescriptor{Stream: endpointStream}, EndpointOptions{MuxCapacity: 2})
	clock, err := NewClock(e, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.EnableHealth(); err != nil {
		t.Fatal(err)
	}
	s := e.Subscribe(SubscriptionRequest{}, SubscriberOptions{Capacity: 64})
	out := mustRegister(t, e, "proc.x.stdout", TextStream())
	p := e.Producer()
	p.SubmitText(out, "a")
	p.SubmitText(out, "b")
	p.SubmitText(out, "lost1")
	p.SubmitText(out, "lost2")
	if !p.SubmitReserved(out, []byte("reserved")) {
		t.Fatal("reserved lane refused")
	}
	if ok, err := e.SubmitHealth(); !ok || err != nil {
		t.Fatalf("SubmitHealth: %v, %v", ok, err)
	}
	clock.Tick()
	var got []string
	for _, ev := range drainAll(s) {
		if ev.Kind != EventFrame {
			continue
		}
		d, _ := e.Lookup(ev.Frame.Channel.Channel)
		line := fmt.Sprintf("%d %s", ev.Frame.Position, d.Name)
		if d.Name == HealthChannel {
			h, err := DecodeRecord(ev.Frame.Payload, Health{})
			if err != nil {
				t.Fatalf("health record %s: %v", ev.Frame.Payload, err)
			}
			if h.Loss != nil {
				line += fmt.Sprintf(" loss %d frames %d bytes %q,", h.Loss.Frames, h.Loss.Bytes, h.Loss.Reason)
			}
			line += fmt.Sprintf(" mux_dropped %d, assigned %d", h.MuxDropped, h.Assigned)
		} else if d.Name != ClockChannel {
			line += " " + string(ev.Frame.Payload)
		}
		got = append(got, line)
	}
	want := []string{
		"0 datastream.clock",
		"1 proc.x.stdout a",
		"2 proc.x.stdout b",
		`3 datastream.health loss 2 frames 10 bytes "queue full", mux_dropped 2, assigned 3`,
		"4 proc.x.stdout reserved",
		// SubmitHealth's record is made at drain time, after the batch:
		// its counters include every loss placed before it.
		"5 datastream.health mux_dropped 2, assigned 5",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("batch (-want +got):\n%s", diff)
	}
}

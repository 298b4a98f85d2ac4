package frames

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
)

// DefaultSubscriberCapacity is the data-queue capacity of a subscriber that
// asks for 0 (ARCHITECTURE.md cases 2 uses 8 for its scenarios; ds uses more).
const DefaultSubscriberCapacity = 1024

// MaxSubscriberCapacity bounds a subscriber's data queue, in events;
// larger requests are clamped. The queue is allocated up front at about 112
// bytes per event.
const MaxSubscriberCapacity = MaxMuxCapacity + 1<<16

// DefaultMuxMaxBytes is the payload memory an endpoint's mux queue holds
// when EndpointOptions.MuxMaxBytes is 0: 256 MiB, a quarter of a second of
// a child writing 1 GB/s. Measured with ds wrap -- cat of a 1 GiB cached
// file on two cores, which holds payloads until they are written
// (HoldUntilReleased): with 64 or 128 MiB frames were dropped in some runs
// (a write into the page cache stalls for longer now and then), with
// 256 MiB in none of 9; ds wrap's peak RSS was then 150-200 MB.
const DefaultMuxMaxBytes = 256 << 20

// ErrEnded is returned by registration on an endpoint whose stream has ended.
var ErrEnded = errors.New("frames: stream has ended")

// EndpointOptions configures an [Endpoint]. The zero value is usable.
type EndpointOptions struct {
	// MuxCapacity is the mux queue capacity in frames; 0 means
	// DefaultMuxCapacity. It is clamped to [1, MaxMuxCapacity].
	MuxCapacity int
	// MuxMaxBytes bounds the payload bytes the mux queue holds; 0 means
	// DefaultMuxMaxBytes, negative means no byte bound (see NewMuxBytes).
	MuxMaxBytes int
	// HoldUntilReleased makes payloads count against MuxMaxBytes until the
	// consumer hands them back with [Endpoint.Release] ([Mux.Hold]): the
	// bound then covers the frames a subscriber is still writing too.
	HoldUntilReleased bool
	// MaxChannelID bounds the ids the catalog hands out; 0 means the whole
	// uint32 range. Tests use small values to reach exhaustion.
	MaxChannelID ChannelID
}

// TickReport is what one [Endpoint.Tick] did (ARCHITECTURE.md rule 6.2 EndpointTick).
type TickReport struct {
	Drained               int // frames taken from the mux and given positions
	Delivered             int // frame copies that entered subscriber queues
	DroppedForSubscribers int // frame copies lost to full or gone subscribers
	Subscribers           int // subscribers the batch was offered to
}

// Endpoint owns one stream (ARCHITECTURE.md rule 4.1): its descriptor, mux, catalog,
// subscriber fanout and counters. Producers obtain a [Producer] from it.
// [Endpoint.Tick] drains the mux once and broadcasts the batch to every
// subscriber (ARCHITECTURE.md rule 6.2); a slow subscriber drops only its own copies, and
// with no subscriber the frames are counted as bitbucketed.
//
// Registration, subscription and ticks are serialised by one lock, which is
// how ds fixes the defects of ARCHITECTURE.md case 2.12: a subscriber sees every
// channel declaration exactly once, declarations bypass its bounded data
// queue, and it never receives a frame whose channel it cannot name.
// Submissions take only the mux lock, so producers are never held up by
// registration, subscribers or ticks.
type Endpoint struct {
	desc     StreamDescriptor
	mux      *Mux
	catalog  *Catalog
	channels atomic.Uint32 // registered count, for the submit-time id check

	mu    sync.Mutex // guards subs, batch, ended, hooks; serialises register/subscribe/tick
	subs  []*Subscription
	batch []Frame
	ended bool
	hooks DrainHooks // set by NewClock (Head) and EnableHealth (Loss)
	// healthDue: SubmitHealth asked for a health record at the next tick;
	// healthCh is its channel.
	healthDue bool
	healthCh  ChannelID

	drained        atomic.Uint64
	bitbucketed    atomic.Uint64
	unknownChannel atomic.Uint64
	subDropped     atomic.Uint64 // every subscriber drop, including removed subscribers
}

// NewEndpoint returns an endpoint for the stream described by desc.
func NewEndpoint(desc StreamDescriptor, opts EndpointOptions) *Endpoint {
	capacity := opts.MuxCapacity
	if capacity == 0 {
		capacity = DefaultMuxCapacity
	}
	maxBytes := opts.MuxMaxBytes
	if maxBytes == 0 {
		maxBytes = DefaultMuxMaxBytes
	}
	mux := NewMuxBytes(capacity, maxBytes)
	if opts.HoldUntilReleased {
		mux.Hold()
	}
	return &Endpoint{
		desc:    desc,
		mux:     mux,
		catalog: NewCatalog(desc.Stream, opts.MaxChannelID),
	}
}

// Stream returns the stream descriptor.
func (e *Endpoint) Stream() StreamDescriptor { return e.desc }

// Producer returns a handle producers submit through. It is a small value,
// cheap to copy and safe to use from any number of goroutines (ARCHITECTURE.md rule 4.1).
func (e *Endpoint) Producer() Producer { return Producer{e: e} }

// Catalog returns every channel descriptor in id order.
func (e *Endpoint) Catalog() []ChannelDescriptor { return e.catalog.Descriptors() }

// Lookup returns the descriptor of a registered channel.
func (e *Endpoint) Lookup(id ChannelID) (ChannelDescriptor, bool) { return e.catalog.Lookup(id) }

// RegisterChannel registers name with content (ARCHITECTURE.md rule 4.2) and returns its
// id; see [Catalog.Register] for the rules and errors. A new channel is
// announced to every current subscriber at once, without waiting for a tick
// and without passing through its bounded data queue (ARCHITECTURE.md case 2.9,
// §2.12). After [Endpoint.End] it returns [ErrEnded].
func (e *Endpoint) RegisterChannel(name string, content ChannelContent) (ChannelID, error) {
	return e.register(name, nil, content)
}

// RegisterLabeled is RegisterChannel with a descriptor label.
func (e *Endpoint) RegisterLabeled(name, label string, content ChannelContent) (ChannelID, error) {
	return e.register(name, &label, content)
}

// RegisterRecord registers a JSON record channel whose schema is its own
// name, as the seed's register_record does (ARCHITECTURE.md rule 5.6).
func (e *Endpoint) RegisterRecord(name string) (ChannelID, error) {
	return e.register(name, nil, JSONRecord(name))
}

func (e *Endpoint) register(name string, label *string, content ChannelContent) (ChannelID, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended {
		return 0, ErrEnded
	}
	d, created, err := e.catalog.Register(name, label, content)
	if err != nil {
		return 0, err
	}
	if created {
		e.channels.Store(uint32(d.ID))
		for _, s := range e.subs {
			s.announce(d)
		}
	}
	return d.ID, nil
}

// Pending returns how many submissions wait for the next tick.
func (e *Endpoint) Pending() int { return e.mux.Pending() }

// Release hands back n bytes of payload capacity that a consumer is done
// with (EndpointOptions.HoldUntilReleased; see [Mux.Release]).
func (e *Endpoint) Release(n int) { e.mux.Release(n) }

// QueueFill returns how full the mux queue is, from 0 to 1: the larger of
// its fill in frames and in bytes. A producer loop can use it to shed work
// of its own (ds wrap stores blocks uncompressed) before the queue is full
// and submissions are dropped.
func (e *Endpoint) QueueFill() float64 {
	f := float64(e.mux.Pending()) / float64(e.mux.Capacity())
	if mb := e.mux.MaxBytes(); mb > 0 {
		f = max(f, float64(e.mux.PendingBytes())/float64(mb))
	}
	return f
}

// Tick drains the mux once and offers the batch to every subscriber
// (ARCHITECTURE.md rule 6.2). A subscriber whose queue is full loses its own copies; a
// closed subscriber loses the whole batch and is removed (CONFORMANCE
// §2.11); with no subscriber at all the batch is bitbucketed. Tick never
// blocks on a subscriber.
func (e *Endpoint) Tick() TickReport {
	e.mu.Lock()
	defer e.mu.Unlock()
	hooks := e.hooks
	if e.healthDue {
		e.healthDue = false
		hooks.Tail = func(m LossMark) (ChannelID, []byte) { return e.healthCh, e.healthAt(m, nil) }
	}
	e.batch = e.mux.DrainWith(e.batch[:0], hooks)
	batch := e.batch
	rep := TickReport{Drained: len(batch), Subscribers: len(e.subs)}
	e.drained.Add(uint64(len(batch)))
	if len(batch) == 0 {
		e.removeClosed()
		return rep
	}
	if len(e.subs) == 0 {
		e.bitbucketed.Add(uint64(len(batch)))
	}
	for _, s := range e.subs {
		delivered, dropped := s.offer(e, batch)
		rep.Delivered += delivered
		rep.DroppedForSubscribers += dropped
	}
	e.subDropped.Add(uint64(rep.DroppedForSubscribers))
	e.removeClosed()
	clear(batch) // release payload references held by the reused batch
	return rep
}

func (e *Endpoint) removeClosed() {
	live := e.subs[:0]
	for _, s := range e.subs {
		if !s.isClosed() {
			live = append(live, s)
		}
	}
	clear(e.subs[len(live):])
	e.subs = live
}

// End marks the stream ended: pending submissions are ticked out first, then
// every subscriber receives a StreamEnded event (ARCHITECTURE.md rule 2.5) and, once its
// queues are empty, io.EOF. Later registrations fail with [ErrEnded] and
// later submissions return false and count as mux_dropped. End is
// idempotent.
func (e *Endpoint) End() TickReport {
	// Close first: every submission accepted before it is drained below,
	// and every later one is refused and counted, so none is lost silently.
	e.mux.Close()
	rep := e.Tick()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended {
		return rep
	}
	e.ended = true
	ev := StreamEndedEvent(e.desc.Stream)
	for _, s := range e.subs {
		s.end(ev)
	}
	e.subs = nil
	return rep
}

// Snapshot is the catalog state handed to a new subscriber (ARCHITECTURE.md rule 5.8),
// filtered by its [SubscriptionRequest].
type Snapshot struct {
	Streams  []StreamDescriptor
	Channels []ChannelDescriptor
}

// SubscriberOptions configures a subscription.
type SubscriberOptions struct {
	// Name identifies the subscriber in health records.
	Name string
	// Capacity bounds the data queue in events; 0 means
	// DefaultSubscriberCapacity. It is clamped to MaxSubscriberCapacity. A subscriber that must never drop (such as
	// a capture writer that empties its queue after every tick) asks for at
	// least the mux capacity.
	Capacity int
}

// Subscribe registers a subscriber and returns it with a snapshot of the
// catalog filtered by req (ARCHITECTURE.md rule 6.2). From then on the subscriber is
// offered every future event, whatever req says; past frames are not
// replayed (ARCHITECTURE.md case 2.5). Subscribing after [Endpoint.End] returns a
// subscription that yields only io.EOF.
func (e *Endpoint) Subscribe(req SubscriptionRequest, opts SubscriberOptions) *Subscription {
	capacity := opts.Capacity
	if capacity <= 0 {
		capacity = DefaultSubscriberCapacity
	}
	capacity = min(capacity, MaxSubscriberCapacity)
	s := &Subscription{name: opts.Name, req: req, buf: make([]Event, capacity), notify: make(chan struct{}, 1), endpoint: e}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended {
		s.closed = true
		return s
	}
	if req.Sources.Match(e.desc) {
		s.snapshot.Streams = []StreamDescriptor{e.desc}
		for _, d := range e.catalog.Descriptors() {
			if req.Channels.Match(d) {
				s.snapshot.Channels = append(s.snapshot.Channels, d)
				s.markAnnounced(d.ID)
			}
		}
	}
	e.subs = append(e.subs, s)
	return s
}

// Health returns the endpoint's self-health counters (see [Health]).
func (e *Endpoint) Health() Health {
	h := Health{
		Assigned:          e.mux.Assigned(),
		Drained:           e.drained.Load(),
		MuxDropped:        e.mux.Dropped(),
		MuxDroppedBytes:   e.mux.DroppedBytes(),
		Bitbucketed:       e.bitbucketed.Load(),
		UnknownChannel:    e.unknownChannel.Load(),
		SubscriberDropped: e.subDropped.Load(),
		Pending:           uint64(e.mux.Pending()),
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range e.subs {
		h.Subscribers = append(h.Subscribers, SubscriberHealth{Name: s.name, Dropped: s.Dropped()})
	}
	return h
}

// Producer is a handle for submitting to one endpoint (ARCHITECTURE.md rule 4.1
// DatastreamProducer). The zero value is not usable; get one from
// [Endpoint.Producer]. Copies share the endpoint.
type Producer struct{ e *Endpoint }

// RegisterChannel is [Endpoint.RegisterChannel].
func (p Producer) RegisterChannel(name string, content ChannelContent) (ChannelID, error) {
	return p.e.RegisterChannel(name, content)
}

// RegisterRecord is [Endpoint.RegisterRecord].
func (p Producer) RegisterRecord(name string) (ChannelID, error) { return p.e.RegisterRecord(name) }

// SubmitBytes submits payload on ch (ARCHITECTURE.md rule 4.2). It returns true when the
// payload entered the mux queue and false when it was dropped before a
// position was assigned: the queue was full (counted as mux_dropped) or ch
// was never registered on this endpoint (counted as unknown_channel), so a
// subscriber can always name every frame it receives. It never blocks. The
// endpoint takes ownership of payload.
func (p Producer) SubmitBytes(ch ChannelID, payload []byte) bool {
	if !p.known(ch) {
		return false
	}
	return p.e.mux.Submit(ch, payload)
}

// known reports whether ch was registered on the endpoint; a submission on
// an id never handed out is refused and counted as unknown_channel, so
// that a subscriber can always name every frame it receives.
func (p Producer) known(ch ChannelID) bool {
	if ch == 0 || uint32(ch) > p.e.channels.Load() {
		p.e.unknownChannel.Add(1)
		return false
	}
	return true
}

// SubmitText submits a copy of text on ch; see SubmitBytes.
func (p Producer) SubmitText(ch ChannelID, text string) bool {
	return p.SubmitBytes(ch, []byte(text))
}

// SubmitRecord encodes v as JSON ([EncodeRecord]) and submits it on ch. It
// returns the encoding error, if any, and otherwise whether the record was
// accepted (see SubmitBytes).
func (p Producer) SubmitRecord(ch ChannelID, v any) (bool, error) {
	b, err := EncodeRecord(v)
	if err != nil {
		return false, err
	}
	return p.SubmitBytes(ch, b), nil
}

// Pending returns how many submissions wait for the next tick.
func (p Producer) Pending() int { return p.e.mux.Pending() }

// SubmitReserved submits payload on ch through the mux's reserved lane
// ([Mux.SubmitReserved]): it is never refused for a full queue, only
// after [Endpoint.End] or for an unregistered ch. It is for a producer's own
// few records that must survive any load: ds wrap's lifecycle records, the
// health and clock records. The endpoint takes ownership of payload.
func (p Producer) SubmitReserved(ch ChannelID, payload []byte) bool {
	if !p.known(ch) {
		return false
	}
	return p.e.mux.SubmitReserved(ch, payload)
}

// SubmitWait is SubmitBytes that waits for room in a full queue instead of
// dropping ([Mux.SubmitWait]): back-pressure on this producer only, as a
// pipe would put on a writer. It returns false when ch is unregistered, the
// stream has ended, or done is closed first.
func (p Producer) SubmitWait(ch ChannelID, payload []byte, done <-chan struct{}) bool {
	if !p.known(ch) {
		return false
	}
	return p.e.mux.SubmitWait(ch, payload, done)
}

// Subscription is one subscriber of an [Endpoint] (ARCHITECTURE.md rule 6.2). It has a
// bounded data queue with its own drop counter and an unbounded control
// queue for declarations, which is emptied first: every ChannelDeclared for
// a channel reaches the subscriber before any frame on that channel. Its
// methods are safe for concurrent use.
type Subscription struct {
	name     string
	req      SubscriptionRequest
	snapshot Snapshot
	notify   chan struct{}
	dropped  atomic.Uint64
	endpoint *Endpoint // for Lost: the endpoint's all-time counter

	announced []bool // by channel id; guarded by the endpoint's mu

	mu      sync.Mutex
	control []Event
	buf     []Event // ring of data events
	head, n int
	closed  bool // Close was called or the stream ended
}

// Name returns the subscriber name given in [SubscriberOptions].
func (s *Subscription) Name() string { return s.name }

// Request returns the request the subscription was made with.
func (s *Subscription) Request() SubscriptionRequest { return s.req }

// Snapshot returns the filtered catalog snapshot taken at subscription.
func (s *Subscription) Snapshot() Snapshot { return s.snapshot }

// Dropped returns how many frame copies this subscriber lost to a full
// queue or to being closed, and those it reported with [Subscription.Lost].
func (s *Subscription) Dropped() uint64 { return s.dropped.Load() }

// Lost counts n frame copies that the subscriber took from its queue and
// then lost downstream (a network output whose server never acknowledged
// them): they are added to its drop counter and to the endpoint's
// subscriber_dropped, so that the next [Health] record accounts them like
// copies lost to a full queue (ARCHITECTURE.md rule 6.2: a slow subscriber drops only its
// own copies, and the loss is counted).
func (s *Subscription) Lost(n uint64) {
	if n == 0 {
		return
	}
	s.dropped.Add(n)
	if s.endpoint != nil {
		s.endpoint.subDropped.Add(n)
	}
}

func (s *Subscription) markAnnounced(id ChannelID) {
	for int(id) >= len(s.announced) {
		s.announced = append(s.announced, make([]bool, len(s.announced)+8)...)
	}
	s.announced[id] = true
}

func (s *Subscription) isAnnounced(id ChannelID) bool {
	return int(id) < len(s.announced) && s.announced[id]
}

// announce queues a declaration; called with the endpoint's mu held.
func (s *Subscription) announce(d ChannelDescriptor) {
	s.markAnnounced(d.ID)
	s.mu.Lock()
	if !s.closed {
		s.control = append(s.control, ChannelDeclaredEvent(d))
	}
	s.mu.Unlock()
	s.wake()
}

// offer enqueues a batch; called with the endpoint's mu held. Channels the
// subscriber has not been told about (filtered out of its snapshot) are
// declared first.
func (s *Subscription) offer(e *Endpoint, batch []Frame) (delivered, dropped int) {
	for _, f := range batch {
		if !s.isAnnounced(f.Channel) {
			if d, ok := e.catalog.Lookup(f.Channel); ok {
				s.announce(d)
			}
		}
	}
	stream := e.desc.Stream
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.dropped.Add(uint64(len(batch)))
		return 0, len(batch)
	}
	for _, f := range batch {
		if s.n == len(s.buf) {
			dropped++
			continue
		}
		i := s.head + s.n
		if i >= len(s.buf) {
			i -= len(s.buf)
		}
		s.buf[i] = Event{Kind: EventFrame, Frame: FrameDelivery{Channel: ChannelRef{Stream: stream, Channel: f.Channel}, Position: f.Position, Payload: f.Payload}}
		s.n++
		delivered++
	}
	s.mu.Unlock()
	if dropped > 0 {
		s.dropped.Add(uint64(dropped))
	}
	if delivered > 0 {
		s.wake()
	}
	return delivered, dropped
}

// end queues the StreamEnded event and closes the subscription for new events.
func (s *Subscription) end(ev Event) {
	s.mu.Lock()
	if !s.closed {
		s.control = append(s.control, ev)
		s.closed = true
	}
	s.mu.Unlock()
	s.wake()
}

func (s *Subscription) wake() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

func (s *Subscription) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// pop returns the next event; ok is false when both queues are empty.
// Called with s.mu held. Control events go first, except that a StreamEnded
// waits until the data queue is empty so that it is always the last event.
func (s *Subscription) pop() (Event, bool) {
	if len(s.control) > 0 && (s.n == 0 || s.control[0].Kind != EventStreamEnded) {
		ev := s.control[0]
		s.control[0] = Event{}
		s.control = s.control[1:]
		if len(s.control) == 0 {
			s.control = nil
		}
		return ev, true
	}
	if s.n > 0 {
		ev := s.buf[s.head]
		s.buf[s.head] = Event{}
		s.head++
		if s.head == len(s.buf) {
			s.head = 0
		}
		s.n--
		return ev, true
	}
	return Event{}, false
}

// TryNext returns the next queued event without waiting; ok is false when
// nothing is queued.
func (s *Subscription) TryNext() (ev Event, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pop()
}

// DrainInto appends every queued event to dst, in delivery order, and
// returns it. It does not wait.
func (s *Subscription) DrainInto(dst []Event) []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		ev, ok := s.pop()
		if !ok {
			return dst
		}
		dst = append(dst, ev)
	}
}

// Next waits for the next event. It returns io.EOF once the subscription is
// closed (by [Subscription.Close] or [Endpoint.End]) and its queues are
// empty, and ctx.Err() if ctx is done first.
func (s *Subscription) Next(ctx context.Context) (Event, error) {
	for {
		s.mu.Lock()
		ev, ok := s.pop()
		closed := s.closed
		more := s.n > 0 || len(s.control) > 0
		s.mu.Unlock()
		if ok {
			if more {
				s.wake() // pass the wake-up on to another waiter
			}
			return ev, nil
		}
		if closed {
			s.wake() // every waiter must see the end
			return Event{}, io.EOF
		}
		select {
		case <-s.notify:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

// Close detaches the subscriber: its receiver is gone. Events already
// queued are discarded; the next tick counts its whole batch as dropped for
// this subscriber and removes it (ARCHITECTURE.md case 2.11). Close is idempotent.
func (s *Subscription) Close() {
	s.mu.Lock()
	s.closed = true
	s.control = nil
	clear(s.buf)
	s.n, s.head = 0, 0
	s.mu.Unlock()
	s.wake()
}

package frames

import "time"

// Channel names ds mints for the datastream's own records (ARCHITECTURE.md §4).
const (
	// HealthChannel carries [Health] records.
	HealthChannel = "datastream.health"
	// ClockChannel carries [ClockRecord] records.
	ClockChannel = "datastream.clock"
)

// Health is the datastream.health record: the writer's own counters at the
// moment it was taken (ARCHITECTURE.md §4; ARCHITECTURE.md rule 4.1 "counters for assigned,
// drained, mux-dropped, and bitbucketed frames"). All counts are frames
// since the endpoint was created.
//
// The counters follow the drain-time rules. A submission refused by a full
// queue (MuxDropped) or for an unregistered channel (UnknownChannel) never
// had a position, so it can never show up as a gap; only frames that were
// assigned a position and then lost downstream do. The original system
// subtracted mux drops from assigned positions to estimate loss, which
// double-counted: here Assigned counts positions only, and the frames a
// reader should expect from this stream up to this record are exactly
// Assigned (positions 0..Assigned-1), the record itself excepted.
type Health struct {
	Assigned          uint64             `json:"assigned"`           // positions handed out
	Drained           uint64             `json:"drained"`            // frames taken from the mux (= Assigned)
	MuxDropped        uint64             `json:"mux_dropped"`        // submits refused by a full queue; no position
	MuxDroppedBytes   uint64             `json:"mux_dropped_bytes"`  // their payload bytes
	UnknownChannel    uint64             `json:"unknown_channel"`    // submits on an unregistered id; no position
	Bitbucketed       uint64             `json:"bitbucketed"`        // drained frames with no subscriber to take them
	SubscriberDropped uint64             `json:"subscriber_dropped"` // frame copies lost by subscribers, all time
	Pending           uint64             `json:"pending"`            // queued, not yet drained
	Subscribers       []SubscriberHealth `json:"subscribers"`        // current subscribers
	// Loss, when set, makes this record the place of a loss: Loss.Frames
	// submissions were refused between the frame before this record's
	// position and this record (see [Endpoint.EnableHealth]). MuxDropped
	// then counts the refusals placed so far, these included.
	Loss *Loss `json:"loss,omitempty"`
}

// Loss describes submissions refused at one place of a stream, in a
// [Health] record written there (ARCHITECTURE.md rule 4.5: refused submissions never had a
// position, so they can only be accounted beside the frames around them).
type Loss struct {
	Frames uint64 `json:"frames"` // submissions refused
	Bytes  uint64 `json:"bytes"`  // their payload bytes
	Reason string `json:"reason"` // LossQueueFull
}

// LossQueueFull is the [Loss] reason of submissions refused because the
// mux queue was full, in frames or in bytes.
const LossQueueFull = "queue full"

// SubscriberHealth is one subscriber's drop counter in a [Health] record.
type SubscriberHealth struct {
	Name    string `json:"name"`
	Dropped uint64 `json:"dropped"`
}

// ClockRecord is the datastream.clock record (ARCHITECTURE.md §4): a wall-clock
// reading and a monotonic reading taken together. UnixNS is nanoseconds
// since the Unix epoch; MonoNS is monotonic nanoseconds since the producer's
// [Clock] was created. Every drain tick that has frames starts its batch
// with a clock record read at drain time, after the batch was taken from
// the queue: its UnixNS is an upper bound on when each frame of the batch
// was submitted, and since a producer drains at least once per flush
// interval while frames wait, it is within one interval of the truth
// whatever the idle time before. A view gives a frame the reading of the
// closest clock record before it (ds-format(5) "TIME").
type ClockRecord struct {
	UnixNS int64 `json:"unix_ns"`
	MonoNS int64 `json:"mono_ns"`
}

// Clock emits datastream.clock records for one endpoint: one at the head of
// every drained batch (at most one per tick, none for an idle stream; a
// producer that wants readings at start and end ticks then, with a health
// record due: see ds wrap), and, through [Clock.Emit], one whenever asked.
type Clock struct {
	e     *Endpoint
	ch    ChannelID
	start time.Time
	now   func() time.Time
}

// NewClock registers datastream.clock on e (a JSON record channel with
// schema "datastream.clock") and returns the clock. now is the time source;
// nil means time.Now.
func NewClock(e *Endpoint, now func() time.Time) (*Clock, error) {
	ch, err := e.RegisterRecord(ClockChannel)
	if err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	c := &Clock{e: e, ch: ch, start: now(), now: now}
	e.mu.Lock()
	e.hooks.Head = c.head
	e.mu.Unlock()
	return c, nil
}

// Read returns the current clock record without submitting it.
func (c *Clock) Read() ClockRecord {
	t := c.now()
	return ClockRecord{UnixNS: t.UnixNano(), MonoNS: int64(t.Sub(c.start))}
}

// Emit submits one clock record now, through the reserved lane (it is
// never dropped for a full queue); it reports whether it was accepted.
func (c *Clock) Emit() bool {
	b, err := EncodeRecord(c.Read())
	return err == nil && c.e.Producer().SubmitReserved(c.ch, b)
}

// Tick ticks the endpoint. Since NewClock, every tick that drains frames
// starts its batch with a clock record read at drain time (see
// [NewClock]), so Tick is [Endpoint.Tick]; it is kept for producer loops
// written against the clock.
func (c *Clock) Tick() TickReport { return c.e.Tick() }

// head is the endpoint's drain hook: a clock record read after the batch
// was taken from the queue, positioned before its frames.
func (c *Clock) head() (ChannelID, []byte) {
	b, err := EncodeRecord(c.Read())
	if err != nil {
		// ClockRecord holds two int64s: cannot fail.
		panic("frames: encode clock record: " + err.Error())
	}
	return c.ch, b
}

// SubmitHealth makes the next tick write the endpoint's [Health] on
// datastream.health (a JSON record channel with schema
// "datastream.health"), registering the channel on first use. The record
// is made at drain time and placed after the batch, so it counts exactly
// the positions and the losses placed before it, and its counters never go
// back from one health record to the next; it is never dropped for a full
// queue. It returns the registration error, if any, and whether a record
// will be written (false once the stream has ended).
func (e *Endpoint) SubmitHealth() (bool, error) {
	ch, err := e.RegisterRecord(HealthChannel)
	if err != nil {
		return false, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended {
		return false, nil
	}
	e.healthCh, e.healthDue = ch, true
	return true, nil
}

// healthAt encodes the health record placed at m (a drain hook; e.mu is
// held by the tick): positions and placed losses are those before m, the
// other counters are read now. loss, if set, makes it a loss record.
func (e *Endpoint) healthAt(m LossMark, loss *Loss) []byte {
	h := Health{
		Assigned:          uint64(m.Position),
		Drained:           uint64(m.Position),
		MuxDropped:        m.Total,
		MuxDroppedBytes:   m.TotalBytes,
		UnknownChannel:    e.unknownChannel.Load(),
		Bitbucketed:       e.bitbucketed.Load(),
		SubscriberDropped: e.subDropped.Load(),
		Pending:           uint64(e.mux.Pending()),
		Subscribers:       []SubscriberHealth{},
		Loss:              loss,
	}
	if e.hooks.Loss == nil {
		// Losses are not placed: count every refusal so far.
		h.MuxDropped, h.MuxDroppedBytes = e.mux.Dropped(), e.mux.DroppedBytes()
	}
	for _, s := range e.subs {
		h.Subscribers = append(h.Subscribers, SubscriberHealth{Name: s.name, Dropped: s.Dropped()})
	}
	b, err := EncodeRecord(h)
	if err != nil {
		panic("frames: encode health record: " + err.Error()) // numbers and names only
	}
	return b
}

// EnableHealth registers datastream.health and makes every later tick
// account each loss in place: where the mux refused submissions for a full
// queue, the batch gets a [Health] record with [Loss] set, positioned right
// after the frame the refused submissions followed. A capture cut at any
// point (kill -9 of the writer) thus accounts for every loss before the
// cut, and a view can show it where it happened.
func (e *Endpoint) EnableHealth() error {
	ch, err := e.RegisterRecord(HealthChannel)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.hooks.Loss = func(m LossMark) (ChannelID, []byte) {
		return ch, e.healthAt(m, &Loss{Frames: m.Frames, Bytes: m.Bytes, Reason: LossQueueFull})
	}
	return nil
}

// TransportChannel carries [TransportRecord] records: what an output of the
// stream that leaves the machine (ds wrap -o nats://…) lost, and why.
const TransportChannel = "datastream.transport"

// TransportRecord is the datastream.transport record. An output that took
// frames from its subscription and could not deliver them (a server that
// was unreachable, or too slow while the output's queue overflowed)
// submits one, once it delivers again, for every range of positions it
// lost: the copy that reader of the output gets then shows a gap at
// From..To followed, at this record's position, by the reason. Every other
// output of the stream (the capture file) gets the record too, which tells
// its reader what the network copy lacks.
//
// Output names the output without credentials ("nats://host:4222/ds").
type TransportRecord struct {
	Output string         `json:"output"`
	Lost   *TransportLoss `json:"lost,omitempty"`
}

// TransportLoss is one range of positions an output lost.
type TransportLoss struct {
	From   Position `json:"from"`   // first position lost
	To     Position `json:"to"`     // last position lost (From ≤ To)
	Frames uint64   `json:"frames"` // frames lost in From..To (every position, unless the output filters channels)
	Reason string   `json:"reason"` // "server unreachable: …", "queue full: …"
	// SinceUnixMs and UntilUnixMs bound the outage in wall-clock time
	// (ms since the Unix epoch); 0 when unknown.
	SinceUnixMs int64 `json:"since_unix_ms,omitempty"`
	UntilUnixMs int64 `json:"until_unix_ms,omitempty"`
}

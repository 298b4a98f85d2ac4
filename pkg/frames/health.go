package frames

import "time"

// Channel names ds mints for the datastream's own records (DESIGN.md §4).
const (
	// HealthChannel carries [Health] records.
	HealthChannel = "datastream.health"
	// ClockChannel carries [ClockRecord] records.
	ClockChannel = "datastream.clock"
)

// Health is the datastream.health record: the writer's own counters at the
// moment it was taken (DESIGN.md §4; spec §4.1 "counters for assigned,
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
	UnknownChannel    uint64             `json:"unknown_channel"`    // submits on an unregistered id; no position
	Bitbucketed       uint64             `json:"bitbucketed"`        // drained frames with no subscriber to take them
	SubscriberDropped uint64             `json:"subscriber_dropped"` // frame copies lost by subscribers, all time
	Pending           uint64             `json:"pending"`            // queued, not yet drained
	Subscribers       []SubscriberHealth `json:"subscribers"`        // current subscribers
}

// SubscriberHealth is one subscriber's drop counter in a [Health] record.
type SubscriberHealth struct {
	Name    string `json:"name"`
	Dropped uint64 `json:"dropped"`
}

// ClockRecord is the datastream.clock record (DESIGN.md §4): a wall-clock
// reading and a monotonic reading taken together. UnixNS is nanoseconds
// since the Unix epoch; MonoNS is monotonic nanoseconds since the producer's
// [Clock] was created. A clock record submitted just before a drain gets a
// position after every frame of that batch, so its UnixNS is an upper bound
// on when each of them was submitted; the previous clock record is a lower
// bound. That is how views give frames a time.
type ClockRecord struct {
	UnixNS int64 `json:"unix_ns"`
	MonoNS int64 `json:"mono_ns"`
}

// Clock emits datastream.clock records for one endpoint. A producer loop
// calls [Clock.Tick] instead of [Endpoint.Tick]: it emits at most one record
// per tick, and only when the tick has other frames to drain, so an idle
// stream stays silent. [Clock.Emit] adds the records at start and end.
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
	return &Clock{e: e, ch: ch, start: now(), now: now}, nil
}

// Read returns the current clock record without submitting it.
func (c *Clock) Read() ClockRecord {
	t := c.now()
	return ClockRecord{UnixNS: t.UnixNano(), MonoNS: int64(t.Sub(c.start))}
}

// Emit submits one clock record now; it reports whether it was accepted.
func (c *Clock) Emit() bool {
	ok, _ := c.e.Producer().SubmitRecord(c.ch, c.Read())
	return ok
}

// Tick submits a clock record if anything is pending, then ticks the
// endpoint. The clock record is drained in the same batch, after the frames
// it bounds.
func (c *Clock) Tick() TickReport {
	if c.e.Pending() > 0 {
		c.Emit()
	}
	return c.e.Tick()
}

// SubmitHealth submits the endpoint's current [Health] on datastream.health
// (a JSON record channel with schema "datastream.health"), registering the
// channel on first use. The record describes the stream up to, not
// including, itself. It returns the registration or encoding error, if any,
// and whether the record was accepted.
func (e *Endpoint) SubmitHealth() (bool, error) {
	ch, err := e.RegisterRecord(HealthChannel)
	if err != nil {
		return false, err
	}
	return e.Producer().SubmitRecord(ch, e.Health())
}

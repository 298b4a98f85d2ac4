package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// Defaults of [PublisherOptions].
const (
	// DefaultBuffer is the bytes of messages a Publisher holds while it
	// waits for the server: 32 MiB, about 10 s of a build's output at
	// 3 MB/s, or a minute of host samples from a hundred machines.
	DefaultBuffer = 32 << 20
	// DefaultMaxMessage is the largest message a Publisher writes when
	// the server allows more: NATS's default max_payload, 1 MiB.
	DefaultMaxMessage = 1 << 20
	// DefaultPublishTimeout bounds the wait for one acknowledgement.
	DefaultPublishTimeout = 5 * time.Second
	// maxPendingLosses bounds the transport records waiting for room in
	// the mux's reserved lane; further losses join the last one.
	maxPendingLosses = 64
)

// PublisherOptions configures a [Publisher]. The zero value is valid.
type PublisherOptions struct {
	// Buffer bounds, in bytes, the messages waiting to be published or
	// acknowledged plus the one being written; 0 means DefaultBuffer.
	// What does not fit is lost to this output (and accounted).
	Buffer int
	// MaxMessage bounds a message's size in bytes; 0 means the server's
	// max_payload, at most DefaultMaxMessage.
	MaxMessage int
	// Compression of the messages' records; the zero value, CompressNone,
	// sends them plain. ds sends zstd.
	Compression segments.Compression
	// WriterID is the segment headers' writer identity ("ds 0.3.0").
	WriterID string
	// PublishTimeout bounds the wait for one acknowledgement; 0 means
	// DefaultPublishTimeout. A publish that times out is sent again
	// (same Nats-Msg-Id).
	PublishTimeout time.Duration
	// Now is the wall clock of transport records; nil means time.Now.
	Now func() time.Time
	// Capacity is the publisher's subscription queue, in events. The
	// capture loop hands the publisher every batch right after the tick,
	// so the queue holds at most one tick's frames: ds passes what its
	// capture file's subscription gets (2×--queue+4096), so that a burst
	// never overflows it. 0 means 2×frames.DefaultMuxCapacity+4096 (about
	// 15 MB of ring, allocated up front and scanned by every GC, which is
	// why it is not frames.MaxSubscriberCapacity). A tick that overflows
	// it loses copies to this output only, recorded ("queue full").
	Capacity int
}

// A Publisher is a fanout subscriber of one stream's endpoint that
// publishes the stream to JetStream (package doc). The capture loop calls
// [Publisher.Take] after every tick; [Publisher.Close] after the
// endpoint's End waits for the last messages. Take and Close must be
// called from one goroutine; the rest is internal.
type Publisher struct {
	target    Target
	nc        *nats.Conn
	js        jetstream.JetStream
	sub       *frames.Subscription
	producer  frames.Producer
	transport frames.ChannelID
	subject   string
	stream    frames.StreamID
	opts      PublisherOptions
	fixedMax  bool // opts.MaxMessage was given: not taken from the server
	now       func() time.Time

	// The capture loop's side (Take, Close).
	w        *segments.Writer
	buf      bytes.Buffer
	events   []frames.Event
	header   int // estimated bytes of a segment header: the catalog's size
	first    frames.Position
	last     frames.Position
	nframes  int // frames in the message being written
	size     int // its estimated bytes
	next     frames.Position
	started  bool // a frame was seen: next is meaningful
	ended    bool
	loss     *frames.TransportLoss  // the range being lost now
	unsaid   []frames.TransportLoss // closed ranges whose record is not submitted yet
	recorded uint64                 // ranges recorded in the stream

	// Shared with the sender goroutine, under mu.
	mu       sync.Mutex
	cond     *sync.Cond
	queue    []message
	queued   atomic.Int64 // bytes in queue (read by Take without mu)
	closing  bool
	state    string    // why publishing fails now; "" when it works
	since    time.Time // when state began
	late     []frames.TransportLoss
	stopSend context.CancelFunc
	sendCtx  context.Context
	sent     chan struct{} // closed when the sender returns

	stats struct {
		messages, frames, bytes, duplicates, retries atomic.Uint64
		lost                                         atomic.Uint64
	}
}

// message is one sealed DSS segment waiting to be published.
type message struct {
	data        []byte
	id          string
	seq         uint64 // its segment's sequence number: messages of the stream before it
	first, last frames.Position
	frames      int
}

// PublishReport sums up a Publisher's work, for the end-of-run report.
type PublishReport struct {
	Output     string // the target's Display
	Messages   uint64 // messages the server acknowledged
	Frames     uint64 // frames in them
	Bytes      uint64 // their bytes
	Duplicates uint64 // acknowledgements that said "already stored" (a retry of a message that had arrived)
	Retries    uint64 // publishes sent again after an error or a timeout
	LostFrames uint64 // frames this output lost, recorded or not
	// Unrecorded are the ranges lost that no datastream.transport record
	// names: those lost at the end (the stream had ended; the server did
	// not come back before the grace period ran out).
	Unrecorded []frames.TransportLoss
	// Recorded counts the ranges that datastream.transport records name.
	Recorded uint64
}

// NewPublisher subscribes to e (subscriber name: t.Display) and starts
// publishing its stream to t on nc. It registers the
// datastream.transport channel on e when it first has a loss to record. nc may be reconnecting (a server not
// up yet): frames wait in the buffer until it connects. It checks nothing
// on the server: [CheckStream] does that first.
func NewPublisher(e *frames.Endpoint, nc *nats.Conn, t Target, opts PublisherOptions) (*Publisher, error) {
	if opts.Buffer <= 0 {
		opts.Buffer = DefaultBuffer
	}
	if opts.PublishTimeout <= 0 {
		opts.PublishTimeout = DefaultPublishTimeout
	}
	fixedMax := opts.MaxMessage > 0
	max := opts.MaxMessage
	if max <= 0 {
		max = DefaultMaxMessage
		if mp := nc.MaxPayload(); mp > 0 {
			fixedMax = true
			max = min(max, int(mp))
		}
	}
	opts.MaxMessage = max
	if opts.Capacity <= 0 {
		opts.Capacity = 2*frames.DefaultMuxCapacity + 4096
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.Display, err)
	}
	desc := e.Stream()
	p := &Publisher{
		target: t, nc: nc, js: js, producer: e.Producer(),
		subject: Subject(t.Prefix, desc.Stream), stream: desc.Stream, opts: opts, now: opts.Now, fixedMax: fixedMax,
		sent: make(chan struct{}),
	}
	if p.now == nil {
		p.now = time.Now
	}
	p.cond = sync.NewCond(&p.mu)
	p.sub = e.Subscribe(frames.SubscriptionRequest{}, frames.SubscriberOptions{Name: t.Display, Capacity: opts.Capacity})
	for _, d := range p.sub.Snapshot().Channels {
		p.header += descriptorSize(d)
	}
	p.w, err = segments.NewWriter(&p.buf, desc, p.sub.Snapshot().Channels, segments.WriterOptions{
		Compression: opts.Compression, WriterID: opts.WriterID, SegmentSize: 1 << 62,
	})
	if err != nil {
		p.sub.Close()
		return nil, err
	}
	p.sendCtx, p.stopSend = context.WithCancel(context.Background())
	go p.send()
	return p, nil
}

// descriptorSize estimates the bytes a channel adds to a segment's start:
// to its header and to the HeaderCopy record after it, which repeats the
// header (ds-format(5) "HeaderCopy").
func descriptorSize(d frames.ChannelDescriptor) int {
	n := 96 + len(d.Name) + len(d.Stream.Node)
	if d.Label != nil {
		n += len(*d.Label)
	}
	if d.Content.Schema != nil {
		n += len(*d.Content.Schema)
	}
	return 2 * n
}

// Name returns the output's name: the target's Display.
func (p *Publisher) Name() string { return p.target.Display }

// Take copies what the publisher's subscription holds into messages; with
// flush, it also seals the message being written, so that what was
// drained goes out now (the capture loop passes its flush interval). It
// never waits on the network: a frame that does not fit in the buffer is
// lost to this output, counted, and recorded once the output delivers
// again. It must be called before the frames' payloads are reused.
func (p *Publisher) Take(flush bool) {
	if !p.fixedMax {
		// A server down when the publisher started said no max_payload:
		// once it does, messages are sized to it, and it is not asked
		// again.
		if mp := p.nc.MaxPayload(); mp > 0 {
			p.fixedMax = true
			if mp < int64(p.opts.MaxMessage) {
				p.opts.MaxMessage = int(mp)
				if p.nframes > 0 && p.size > p.limit() {
					p.seal(false)
				}
			}
		}
	}
	p.events = p.sub.DrainInto(p.events[:0])
	for i := range p.events {
		ev := &p.events[i]
		switch ev.Kind {
		case frames.EventChannelDeclared:
			p.header += descriptorSize(*ev.Channel)
			// A declaration never fails here but for a conflict the
			// endpoint has refused already.
			_ = p.w.DeclareChannel(*ev.Channel)
		case frames.EventFrame:
			p.frame(frames.Frame{Channel: ev.Frame.Channel.Channel, Position: ev.Frame.Position, Payload: ev.Frame.Payload})
		case frames.EventStreamEnded:
			p.end()
		}
	}
	clear(p.events)
	if flush && p.nframes > 0 {
		p.seal(false)
	}
	p.say()
}

// limit is the uncompressed size at which a message is sealed: the
// largest message less the header and a margin for the records' own
// framing and the summary.
func (p *Publisher) limit() int {
	return p.opts.MaxMessage - p.header - 4096
}

func (p *Publisher) frame(f frames.Frame) {
	if p.started && f.Position > p.next {
		// The subscription's queue dropped copies (it counted them).
		n := uint64(f.Position - p.next)
		p.lose(p.next, f.Position-1, n, "queue full: the output's subscription overflowed")
	}
	if !p.started || f.Position >= p.next {
		p.started, p.next = true, f.Position+1
	}
	size := len(f.Payload) + 24
	if size > p.limit() {
		p.drop(f, fmt.Sprintf("frame of %d bytes is larger than a message may be (%d bytes, the server's max_payload less the header)", len(f.Payload), p.opts.MaxMessage))
		return
	}
	if p.size+size > p.limit() && p.nframes > 0 {
		p.seal(false)
	}
	// A transport record passes a full buffer (by a few hundred bytes,
	// once per closed range): its range would go unexplained in this
	// output's copy otherwise.
	record := p.transport != 0 && f.Channel == p.transport
	if int(p.queued.Load())+p.size+size > p.opts.Buffer && !record {
		p.drop(f, p.reason())
		return
	}
	if p.loss != nil {
		p.closeLoss()
	}
	if err := p.w.WriteFrame(f); err != nil {
		// Only a writer error (none into a bytes.Buffer) or a payload
		// over wireformat's maximum gets here.
		p.drop(f, "cannot encode: "+err.Error())
		return
	}
	if p.nframes == 0 {
		p.first = f.Position
	}
	p.last = max(p.last, f.Position)
	if f.Position < p.first {
		p.first = f.Position
	}
	p.nframes++
	p.size += size
}

// drop loses frame f, in hand, to this output: its range and its count
// in the subscription's drop counter (health records).
func (p *Publisher) drop(f frames.Frame, reason string) {
	p.lose(f.Position, f.Position, 1, reason)
	p.sub.Lost(1)
}

// failing reports whether the output is not delivering now: the last
// publish failed, or the connection is down.
func (p *Publisher) failing() bool {
	p.mu.Lock()
	state := p.state
	p.mu.Unlock()
	return state != "" || !p.nc.IsConnected()
}

// reason says why a frame does not fit now.
func (p *Publisher) reason() string {
	p.mu.Lock()
	state, since := p.state, p.since
	p.mu.Unlock()
	if state == "" && !p.nc.IsConnected() {
		// The sender still waits for the acknowledgement of a publish
		// sent before the connection went (until PublishTimeout), so it
		// has not said so yet.
		state, since = "server unreachable", p.now()
		if last := p.nc.LastError(); last != nil {
			state += ": " + last.Error()
		}
	}
	if state != "" {
		return fmt.Sprintf("%s (since %s)", state, since.UTC().Format("15:04:05.000Z"))
	}
	return fmt.Sprintf("buffer full: the server acknowledges slower than the stream is written (%d MiB waiting)", p.queued.Load()>>20)
}

// lose adds positions from..to (n frames) to the range being lost.
func (p *Publisher) lose(from, to frames.Position, n uint64, reason string) {
	p.stats.lost.Add(n)
	if p.loss != nil && from == p.loss.To+1 {
		p.loss.To, p.loss.Frames = to, p.loss.Frames+n
		return
	}
	if p.loss != nil {
		p.closeLoss()
	}
	p.loss = &frames.TransportLoss{From: from, To: to, Frames: n, Reason: reason, SinceUnixMs: p.now().UnixMilli()}
}

// closeLoss ends the range being lost: its record is submitted at the
// next say.
func (p *Publisher) closeLoss() {
	l := *p.loss
	p.loss = nil
	l.UntilUnixMs = p.now().UnixMilli()
	if len(p.unsaid) >= maxPendingLosses {
		last := &p.unsaid[len(p.unsaid)-1]
		last.To, last.Frames, last.UntilUnixMs = l.To, last.Frames+l.Frames, l.UntilUnixMs
		return
	}
	p.unsaid = append(p.unsaid, l)
}

// say submits the transport records of closed ranges (and of messages the
// sender gave up on) on the endpoint's reserved lane.
func (p *Publisher) say() {
	p.mu.Lock()
	late := p.late
	p.late = nil
	p.mu.Unlock()
	for _, l := range late {
		if len(p.unsaid) < maxPendingLosses {
			p.unsaid = append(p.unsaid, l)
		}
	}
	if p.ended || len(p.unsaid) == 0 || p.failing() {
		// A record is said once the output delivers again: said during
		// the outage, it would wait in the buffer behind the loss it
		// names, and a longer outage would have it given up at the end.
		return
	}
	if p.transport == 0 {
		// Registered at the first loss, so that a stream that lost
		// nothing declares no channel for it.
		ch, err := p.producer.RegisterRecord(frames.TransportChannel)
		if err != nil {
			return // only after the stream's end: Close reports it
		}
		p.transport = ch
	}
	for len(p.unsaid) > 0 {
		b, err := json.Marshal(frames.TransportRecord{Output: p.target.Display, Lost: &p.unsaid[0]})
		if err != nil || !p.producer.SubmitReserved(p.transport, b) {
			return // the stream has ended; Close reports it
		}
		p.recorded++
		p.unsaid = p.unsaid[1:]
	}
}

// end writes the stream's end into the last message and seals it.
func (p *Publisher) end() {
	if p.ended {
		return
	}
	if p.loss != nil {
		p.closeLoss()
	}
	p.ended = true
	if len(p.unsaid) > 0 {
		// Frames this copy lacks that no record in it names (the
		// server did not come back before the end): a StreamEnded
		// would make the copy look complete, its missing tail
		// invisible. Without it, readers report the stream as not
		// ended; the producer reports the ranges at exit.
		if p.nframes > 0 {
			p.seal(false)
		}
		return
	}
	_ = p.w.Close()
	p.seal(true)
}

// Settle seals what Take has copied, waits until the server has
// acknowledged every message (or ctx is done) and then submits the
// records of the ranges lost meanwhile: the producer calls it before it
// ends its stream, so that an outage that ends before the producer does
// is recorded in the stream rather than only reported at exit. It
// returns ctx's error when the server did not come back in time.
func (p *Publisher) Settle(ctx context.Context) error {
	if p.ended {
		return nil
	}
	if p.nframes > 0 {
		p.seal(false)
	}
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		p.mu.Lock()
		empty := len(p.queue) == 0
		p.mu.Unlock()
		if empty && !p.failing() {
			if p.loss != nil {
				p.closeLoss()
			}
			p.say()
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// seal ends the segment being written and queues it as a message.
func (p *Publisher) seal(final bool) {
	if !final {
		if err := p.w.EndSegment(); err != nil {
			return
		}
	}
	_ = p.w.Flush()
	if p.buf.Len() == 0 {
		return
	}
	seq := p.w.NextSeq()
	if seq > 0 {
		seq-- // the segment just ended
	}
	first := p.first
	if p.nframes == 0 {
		first = p.next // only the end: the position after the last
	}
	id := MsgID(p.stream, p.first, p.last, p.nframes == 0, seq)
	m := message{data: bytes.Clone(p.buf.Bytes()), id: id, seq: seq, first: first, last: p.last, frames: p.nframes}
	p.buf.Reset()
	p.nframes, p.size, p.first, p.last = 0, 0, 0, 0
	p.mu.Lock()
	p.queue = append(p.queue, m)
	p.queued.Add(int64(len(m.data)))
	p.cond.Signal()
	p.mu.Unlock()
}

// send publishes the queued messages in order, each until the server
// acknowledges it: while the connection is down it waits for it, and
// after an error or a timeout it sends the same message again (JetStream
// drops the copy by its Nats-Msg-Id). It returns when Close has asked it
// to and the queue is empty, or when Close gives up.
func (p *Publisher) send() {
	defer close(p.sent)
	backoff := 100 * time.Millisecond
	tries := 0 // failed attempts at the message in hand
	for {
		p.mu.Lock()
		for len(p.queue) == 0 && !p.closing {
			p.cond.Wait()
		}
		if len(p.queue) == 0 {
			p.mu.Unlock()
			return
		}
		m := p.queue[0]
		p.mu.Unlock()
		if p.sendCtx.Err() != nil {
			return
		}
		err := p.publish(m, tries > 0)
		if p.sendCtx.Err() != nil {
			return
		}
		if err != nil {
			tries++
			p.fail(err)
			p.stats.retries.Add(1)
			select {
			case <-p.sendCtx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff, tries = 100*time.Millisecond, 0
		p.mu.Lock()
		p.queue[0] = message{} // its bytes are garbage now
		p.queue = p.queue[1:]
		p.queued.Add(-int64(len(m.data)))
		p.state = ""
		p.mu.Unlock()
	}
}

// publish sends m once and waits for its acknowledgement; retry says that
// an earlier attempt failed. A message the server can never take (larger
// than its max_payload) is given up: its frames are recorded as lost. So
// is one that the server calls a duplicate at its first attempt: the
// server holds another message with its Nats-Msg-Id, which this publisher
// never sent (another run with the same node and life), and keeps that
// one.
func (p *Publisher) publish(m message, retry bool) error {
	if !p.nc.IsConnected() {
		p.fail(errDisconnected)
		if err := waitConnected(p.sendCtx, p.nc); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(p.sendCtx, p.opts.PublishTimeout)
	defer cancel()
	msg := &nats.Msg{Subject: p.subject, Data: m.data, Header: nats.Header{}}
	msg.Header.Set(HeaderSeq, strconv.FormatUint(m.seq, 10))
	msg.Header.Set(HeaderFirst, strconv.FormatUint(uint64(m.first), 10))
	ack, err := p.js.PublishMsg(ctx, msg, jetstream.WithMsgID(m.id))
	if errors.Is(err, nats.ErrMaxPayload) {
		p.giveUp(m, fmt.Sprintf("message of %d bytes refused: larger than the server's max_payload", len(m.data)))
		return nil
	}
	if reason, final := refusedForGood(err); final {
		p.giveUp(m, reason)
		return nil
	}
	if err != nil {
		return err
	}
	if ack.Duplicate && !retry {
		p.giveUp(m, fmt.Sprintf("the server holds another message with id %s (another run with the same --node and --life?) and dropped this one", m.id))
		return nil
	}
	p.stats.messages.Add(1)
	p.stats.frames.Add(uint64(m.frames))
	p.stats.bytes.Add(uint64(len(m.data)))
	if ack.Duplicate {
		p.stats.duplicates.Add(1)
	}
	return nil
}

var errDisconnected = errors.New("disconnected")

// refusedForGood reports whether a publish error is one that sending the
// same message again cannot cure (the stream's maximum message size, a
// permission the credentials lack, a message the stream refuses): the
// message is then given up, recorded, instead of blocking the output for
// the rest of the run.
func refusedForGood(err error) (string, bool) {
	if errors.Is(err, nats.ErrPermissionViolation) {
		return "publish refused: " + err.Error(), true
	}
	var api *jetstream.APIError
	if errors.As(err, &api) && api.Code >= 400 && api.Code < 500 && api.Code != 408 && api.Code != 429 {
		return fmt.Sprintf("publish refused by the stream: %s (%d)", api.Description, api.ErrorCode), true
	}
	return "", false
}

// The headers of a message besides Nats-Msg-Id, which let a consumer
// tell a stream whose head the server's retention removed (ds-format(5)
// "NATS MESSAGES") without decoding the message.
const (
	// HeaderSeq is the message's segment sequence number, in decimal:
	// how many messages of its stream came before it.
	HeaderSeq = "Ds-Seq"
	// HeaderFirst is the position of its first frame (for a message
	// holding only the stream's end, the position after the last frame).
	HeaderFirst = "Ds-First"
)

// fail records why publishing fails now (the reason of what is lost
// meanwhile).
func (p *Publisher) fail(err error) {
	var state string
	switch {
	case errors.Is(err, errDisconnected), errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrConnectionReconnecting),
		errors.Is(err, nats.ErrConnectionDraining), errors.Is(err, nats.ErrDisconnected):
		state = "server unreachable"
		if last := p.nc.LastError(); last != nil {
			state += ": " + last.Error()
		}
	case errors.Is(err, nats.ErrNoResponders), errors.Is(err, jetstream.ErrNoStreamResponse):
		state = "no JetStream stream takes subject " + p.subject + " (is JetStream up? ds nats init creates the stream)"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		state = "no acknowledgement within " + p.opts.PublishTimeout.String()
	default:
		state = "publish failed: " + err.Error()
	}
	p.mu.Lock()
	if p.state == "" {
		p.since = p.now()
	}
	p.state = state
	p.mu.Unlock()
}

// giveUp drops a message the server refuses for good.
func (p *Publisher) giveUp(m message, reason string) {
	p.stats.lost.Add(uint64(m.frames))
	p.sub.Lost(uint64(m.frames))
	now := p.now().UnixMilli()
	p.mu.Lock()
	if len(p.late) < maxPendingLosses && m.frames > 0 {
		p.late = append(p.late, frames.TransportLoss{From: m.first, To: m.last, Frames: uint64(m.frames), Reason: reason, SinceUnixMs: now, UntilUnixMs: now})
	}
	p.mu.Unlock()
}

// Close waits until every message is acknowledged, or ctx is done, and
// stops the publisher. Call it after the endpoint's End and the last Take
// (which sealed the stream's end). Messages still unacknowledged then are
// lost, and reported with the ranges no record names.
func (p *Publisher) Close(ctx context.Context) PublishReport {
	if !p.ended {
		p.end()
	}
	p.mu.Lock()
	p.closing = true
	p.cond.Broadcast()
	p.mu.Unlock()
	select {
	case <-p.sent:
	case <-ctx.Done():
		p.stopSend()
		p.mu.Lock()
		p.cond.Broadcast()
		p.mu.Unlock()
		<-p.sent
	}
	p.stopSend()
	p.sub.Close()
	rep := PublishReport{
		Output: p.target.Display, Messages: p.stats.messages.Load(), Frames: p.stats.frames.Load(),
		Bytes: p.stats.bytes.Load(), Duplicates: p.stats.duplicates.Load(), Retries: p.stats.retries.Load(),
		Recorded: p.recorded,
	}
	p.mu.Lock()
	queue, state, since, late := p.queue, p.state, p.since, p.late
	p.queue, p.late = nil, nil
	p.mu.Unlock()
	rep.Unrecorded = append(rep.Unrecorded, p.unsaid...)
	rep.Unrecorded = append(rep.Unrecorded, late...)
	if len(queue) > 0 {
		switch {
		case state != "":
		case !p.nc.IsConnected():
			state = "server unreachable"
			if last := p.nc.LastError(); last != nil {
				state += ": " + last.Error()
			}
		default:
			state = "not acknowledged before the end"
		}
		reason := state + "; given up at the end"
		if !since.IsZero() {
			reason = fmt.Sprintf("%s (since %s); given up at the end", state, since.UTC().Format("15:04:05.000Z"))
		}
		now := p.now().UnixMilli()
		var sinceMs int64
		if !since.IsZero() {
			sinceMs = since.UnixMilli()
		}
		for _, m := range queue {
			p.stats.lost.Add(uint64(m.frames))
			if m.frames == 0 {
				m.first, m.last = p.next, p.next // only the end: name the position after the last
			}
			n := len(rep.Unrecorded)
			if n > 0 && rep.Unrecorded[n-1].To+1 == m.first && rep.Unrecorded[n-1].Reason == reason {
				rep.Unrecorded[n-1].To = max(m.last, rep.Unrecorded[n-1].To)
				rep.Unrecorded[n-1].Frames += uint64(m.frames)
				continue
			}
			rep.Unrecorded = append(rep.Unrecorded, frames.TransportLoss{From: m.first, To: m.last, Frames: uint64(m.frames), Reason: reason, SinceUnixMs: sinceMs, UntilUnixMs: now})
		}
	}
	rep.LostFrames = p.stats.lost.Load()
	return rep
}

// Stats returns what the publisher has done so far: a PublishReport
// without Unrecorded.
func (p *Publisher) Stats() PublishReport {
	return PublishReport{
		Output: p.target.Display, Messages: p.stats.messages.Load(), Frames: p.stats.frames.Load(),
		Bytes: p.stats.bytes.Load(), Duplicates: p.stats.duplicates.Load(), Retries: p.stats.retries.Load(),
		LostFrames: p.stats.lost.Load(),
	}
}

// Waiting returns the bytes of messages not yet acknowledged.
func (p *Publisher) Waiting() int64 { return p.queued.Load() }

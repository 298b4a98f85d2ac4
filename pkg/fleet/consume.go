package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// DefaultBatchBytes bounds the message bytes [Ingest] fetches and stores
// in one commit: 8 MiB.
const DefaultBatchBytes = 8 << 20

// DefaultAckWait is [IngestOptions.AckWait]'s default: 10 s, far above the
// time one batch takes to store, and short enough that what a killed
// ingester held comes back soon.
const DefaultAckWait = 10 * time.Second

// IngestOptions configures [Ingest]. Durable is required.
type IngestOptions struct {
	// Durable names the JetStream consumer; ingesters with the same name
	// share the work, and one that restarts goes on where the name's
	// acknowledgements stopped.
	Durable string
	// Idle stops Ingest once no message came for this long; 0 runs until
	// ctx is done.
	Idle time.Duration
	// BatchBytes bounds the bytes fetched and stored at once; 0 means
	// DefaultBatchBytes. It is raised to the server's max_payload plus
	// 16 KiB (subject, reply and headers): a fetch bounded below the
	// size of the next message returns nothing.
	BatchBytes int
	// AckWait is how long the server waits for an acknowledgement before
	// it delivers a message again (to this or another ingester of the
	// same name): what a killed ingester held comes back after it. 0
	// means DefaultAckWait. It is part of the durable consumer's
	// configuration, updated by every Ingest.
	AckWait time.Duration
	// Warn, if set, is told of damage and conflicts in the messages (as
	// segments.IngestOptions.Warn), of messages the server removed
	// (retention) before this consumer read them, and of outages.
	Warn func(error)
	// Stored, if set, is called after each batch is durable and
	// acknowledged, with the totals so far.
	Stored func(IngestStats)
}

// IngestStats are [Ingest]'s totals.
type IngestStats struct {
	Batches    uint64 // batches stored and acknowledged
	Messages   uint64 // messages in them
	Bytes      uint64 // their bytes
	Frames     uint64 // frames the store took
	Duplicates uint64 // frames it had already (a message delivered again)
	Conflicts  uint64 // frames refused: another payload at their position
	Expired    uint64 // messages removed by the server before this consumer read them
	Trimmed    uint64 // streams whose head the server had removed: their trim horizon was set
	Damaged    uint64 // batches with damaged ranges
	Refused    uint64 // batches with streams refused for a catalog conflict (told to Warn, acknowledged)
	Forged     uint64 // messages with a segment of another stream than their subject's, skipped (told to Warn, acknowledged)
}

// Ingest runs the durable pull consumer o.Durable on the stream that takes
// t's subjects, and ingests what it delivers into st: it fetches a batch,
// has st.Ingest make it durable (synced and renamed into the store), and
// only then acknowledges its messages. A batch that cannot be stored is
// not acknowledged; the server delivers it again. It returns when ctx is
// done (after finishing the batch in hand) or after o.Idle without
// messages. Outages of the server are waited out (reported to o.Warn).
func Ingest(ctx context.Context, nc *nats.Conn, t Target, st *segments.Store, o IngestOptions) (IngestStats, error) {
	var stats IngestStats
	if o.Durable == "" {
		return stats, errors.New("fleet: Ingest needs a durable consumer name")
	}
	if o.BatchBytes <= 0 {
		o.BatchBytes = DefaultBatchBytes
	}
	if o.AckWait <= 0 {
		o.AckWait = DefaultAckWait
	}
	warn := o.Warn
	if warn == nil {
		warn = func(error) {}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return stats, err
	}
	if err := waitConnected(ctx, nc); err != nil { // a connection still reconnecting
		return stats, fmt.Errorf("%s: %w", t.Display, explainJS(err))
	}
	name, err := FindStream(ctx, js, t)
	if err != nil {
		return stats, err
	}
	// The server ends a pull request at a message larger than the bytes
	// it has left (status 409, which the client reports as no messages):
	// a bound below the largest message would fetch nothing, forever.
	o.BatchBytes = max(o.BatchBytes, int(nc.MaxPayload())+16<<10)
	cons, err := js.CreateOrUpdateConsumer(ctx, name, jetstream.ConsumerConfig{
		Durable:       o.Durable,
		Description:   "ds ingest",
		FilterSubject: AllSubjects(t.Prefix),
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       o.AckWait,
		MaxAckPending: 1 << 16,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return stats, fmt.Errorf("%s: consumer %q: %w", t.Display, o.Durable, explainJS(err))
	}
	stream, err := js.Stream(ctx, name)
	if err != nil {
		return stats, fmt.Errorf("%s: %w", t.Display, explainJS(err))
	}
	heads := newHeadTracker(stream, t)
	stats.Expired = expired(ctx, js, name, cons, warn, t, 0)
	idleSince := time.Now()
	var data []byte
	var msgs []jetstream.Msg
	down := false
	awaiting := false // said that unacknowledged messages are awaited
	for ctx.Err() == nil {
		if !nc.IsConnected() {
			if !down {
				warn(fmt.Errorf("%s: server unreachable; waiting for it (nothing is lost: what the consumer has not acknowledged is delivered when it is back)", t.Display))
				down = true
			}
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
			continue
		}
		wait := time.Second
		if o.Idle > 0 && !awaiting {
			wait = min(wait, max(o.Idle-time.Since(idleSince), 10*time.Millisecond))
		}
		batch, err := cons.FetchBytes(o.BatchBytes, jetstream.FetchMaxWait(wait))
		if err == nil {
			msgs, data = msgs[:0], data[:0]
			for m := range batch.Messages() {
				msgs = append(msgs, m)
				keep, err := checkSubject(t, m)
				if err != nil {
					warn(err) // acknowledged below, never stored
					stats.Forged++
				}
				data = append(data, keep...)
			}
			heads.check(ctx, msgs)
			err = batch.Error()
			if errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
				err = nil
			}
		}
		if err != nil && len(msgs) == 0 {
			if ctx.Err() != nil {
				break
			}
			if !down {
				warn(fmt.Errorf("%s: %v; waiting for the server", t.Display, explainJS(err)))
				down = true
			}
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
			continue
		}
		if down {
			down = false
			stats.Expired = expired(ctx, js, name, cons, warn, t, stats.Expired)
		}
		if len(msgs) == 0 {
			if o.Idle > 0 && time.Since(idleSince) >= o.Idle {
				// Messages an ingester fetched and did not acknowledge
				// (one killed, this one's earlier run) come back after
				// AckWait: an idle ingester waits for them rather than
				// leave the store with holes the server would fill.
				ci, err := cons.Info(ctx)
				if err == nil && ci.NumAckPending > 0 && time.Since(idleSince) < o.Idle+o.AckWait+2*time.Second {
					if !awaiting {
						warn(fmt.Errorf("%s: %d messages fetched by an ingester that stopped (or another one of consumer %q) are not acknowledged; waiting up to %v for them", t.Display, ci.NumAckPending, o.Durable, o.AckWait+2*time.Second))
						awaiting = true
					}
					continue
				}
				if err == nil && ci.NumAckPending > 0 {
					warn(fmt.Errorf("%s: %d messages are still not acknowledged (another ingester of consumer %q holds them?): the store lacks them for now; run again to store them", t.Display, ci.NumAckPending, o.Durable))
				}
				break
			}
			continue
		}
		awaiting = false
		// The batch is stored whatever ctx says: an interrupted ingester
		// finishes what it fetched, then stops.
		rep, err := st.Ingest(context.WithoutCancel(ctx), t.Display, bytes.NewReader(data), segments.IngestOptions{Warn: warn})
		if err != nil && onlyRefused(err) {
			// Streams whose catalog conflicts with the store's: the
			// rest of the batch is stored, and delivering it again
			// would refuse them again. Said, counted, acknowledged.
			warn(err)
			stats.Refused++
			err = nil
		}
		if err != nil {
			return stats, fmt.Errorf("store %s: %w (the batch was not acknowledged; it will be delivered again)", st.Dir(), err)
		}
		for _, h := range heads.take() {
			if ok, err := st.TrimHead(h.id, h.first); err == nil && ok {
				stats.Trimmed++
				warn(fmt.Errorf("%s: stream %s: the server kept it from position %d on (its retention limits removed older messages before they were read): positions before are trimmed, not missing", t.Display, h.id, h.first))
			}
		}
		for _, m := range msgs {
			// A lost acknowledgement only makes the server deliver the
			// message again, which the store collapses.
			_ = m.Ack()
		}
		stats.Batches++
		stats.Messages += uint64(len(msgs))
		stats.Bytes += uint64(len(data))
		stats.Frames += rep.Frames
		stats.Duplicates += rep.Duplicates
		stats.Conflicts += rep.Conflicts
		if rep.Damaged {
			stats.Damaged++
		}
		if o.Stored != nil {
			o.Stored(stats)
		}
		// Idle counts from here: the time the batch took to store is no
		// time without messages (a slow disk, a loaded machine), and
		// counted as such it would stop Ingest with messages waiting.
		idleSince = time.Now()
	}
	_ = nc.Flush()
	return stats, nil
}

// checkSubject checks that every segment of message m belongs to the
// stream its subject names: a client allowed to publish on one node's
// subjects (PREFIX.s.NODE.>) must not be able to write another node's
// stream, nor set its trim horizon, not even with a second segment of
// another stream appended to one of its own. It returns the bytes of m to
// read: m.Data() whole when every segment's stream matches the subject,
// else m.Data() less the segments that do not (a segment runs from its
// header to the next header of the message, or to its end), with an
// error that names each segment skipped. Bytes that are no header (before
// the first, or a damaged one) stay, for the segment reader to report as
// damage with their byte range.
func checkSubject(t Target, m jetstream.Msg) ([]byte, error) {
	data := m.Data()
	var (
		keep   []byte // nil while every segment so far matched
		errs   []error
		from   int // start of the segment being looked at
		wanted = true
		n      int // segments seen
	)
	seq := func() uint64 {
		if md, err := m.Metadata(); err == nil {
			return md.Sequence.Stream
		}
		return 0
	}
	end := func(at int) { // the segment from..at ends
		if !wanted && keep == nil {
			keep = append(make([]byte, 0, len(data)), data[:from]...)
		} else if wanted && keep != nil {
			keep = append(keep, data[from:at]...)
		}
	}
	for off := 0; off < len(data); {
		i := bytes.Index(data[off:], []byte(wireformat.Magic))
		if i < 0 {
			break
		}
		at := off + i
		off = at + 1
		h, _, err := wireformat.ParseHeader(data[at:])
		if err != nil {
			continue // damage, the reader's to report
		}
		end(at)
		from = at
		n++
		want := Subject(t.Prefix, h.Stream.Stream)
		wanted = want == m.Subject()
		if wanted {
			continue
		}
		if n == 1 && at == 0 {
			errs = append(errs, fmt.Errorf("%s: message %d on subject %q holds stream %s, whose subject is %q: skipped", t.Display, seq(), m.Subject(), h.Stream.Stream, want))
		} else {
			errs = append(errs, fmt.Errorf("%s: message %d on subject %q: its segment %d (at byte %d) holds stream %s, whose subject is %q: that segment skipped", t.Display, seq(), m.Subject(), n, at, h.Stream.Stream, want))
		}
	}
	end(len(data))
	if keep == nil {
		return data, errors.Join(errs...)
	}
	return keep, errors.Join(errs...)
}

// onlyRefused reports whether err is nothing but streams refused for a
// catalog conflict (segments.ErrStreamRefused), which no retry cures.
func onlyRefused(err error) bool {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if !onlyRefused(e) {
				return false
			}
		}
		return len(j.Unwrap()) > 0
	}
	return errors.Is(err, segments.ErrStreamRefused)
}

// expired compares the consumer's acknowledgement floor with the stream's
// first message: messages between them were removed by the stream's
// retention limits (its trim horizon) before the consumer read them. It
// warns once for each new count and returns the total.
func expired(ctx context.Context, js jetstream.JetStream, name string, cons jetstream.Consumer, warn func(error), t Target, known uint64) uint64 {
	s, err := js.Stream(ctx, name)
	if err != nil {
		return known
	}
	si, err := s.Info(ctx)
	if err != nil {
		return known
	}
	ci, err := cons.Info(ctx)
	if err != nil {
		return known
	}
	floor := ci.Delivered.Stream
	if si.State.FirstSeq <= floor+1 {
		return known
	}
	n := si.State.FirstSeq - 1 - floor
	if n > known {
		warn(fmt.Errorf("%s: %d messages were removed by the stream's retention limits (max age, max bytes) before consumer %q read them: the store lacks their frames (a stream whose head they held shows as trimmed, any other as gaps; set the limits above the longest time an ingester may be down)", t.Display, n-known, ci.Name))
		return n
	}
	return known
}

// headTracker finds, among the messages a consumer receives, the first
// retained message of each stream whose earlier messages the server's
// retention limits removed (its Ds-Seq is above 0 and no earlier message
// of its subject is left): the stream's trim horizon there (spec 004:
// trimming deletes the oldest entries and readers resume at the
// horizon), which views show as trimmed, never as a gap.
type headTracker struct {
	target Target
	stream jetstream.Stream
	seen   map[string]bool // subjects whose first message was checked
	found  []trimmedHead
}

// trimmedHead is a stream retained from position first on.
type trimmedHead struct {
	id     frames.StreamID
	first  frames.Position
	header *wireformat.Header
}

// maxTrackedSubjects bounds the subjects a headTracker remembers; past it
// the map starts again (a subject checked twice costs one request).
const maxTrackedSubjects = 1 << 16

func newHeadTracker(s jetstream.Stream, t Target) *headTracker {
	return &headTracker{target: t, stream: s, seen: map[string]bool{}}
}

// check looks at the messages of a batch whose subject it has not seen.
func (h *headTracker) check(ctx context.Context, msgs []jetstream.Msg) {
	for _, m := range msgs {
		if th, ok := h.first(ctx, m); ok {
			h.found = append(h.found, th)
		}
	}
}

// first reports whether m starts its stream's retained part after a
// removed head.
func (h *headTracker) first(ctx context.Context, m jetstream.Msg) (trimmedHead, bool) {
	subj := m.Subject()
	if h.seen[subj] {
		return trimmedHead{}, false
	}
	if len(h.seen) >= maxTrackedSubjects {
		clear(h.seen)
	}
	h.seen[subj] = true
	seq, err1 := strconv.ParseUint(m.Headers().Get(HeaderSeq), 10, 64)
	first, err2 := strconv.ParseUint(m.Headers().Get(HeaderFirst), 10, 64)
	if err1 != nil || err2 != nil || seq == 0 {
		return trimmedHead{}, false
	}
	md, err := m.Metadata()
	if err != nil {
		return trimmedHead{}, false
	}
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	oldest, err := h.stream.GetMsg(c, 1, jetstream.WithGetMsgSubject(subj))
	if err != nil || oldest.Sequence != md.Sequence.Stream {
		return trimmedHead{}, false // an earlier message is still there
	}
	hd, _, err := wireformat.ParseHeader(m.Data())
	if err != nil || Subject(h.target.Prefix, hd.Stream.Stream) != subj {
		return trimmedHead{}, false
	}
	return trimmedHead{id: hd.Stream.Stream, first: frames.Position(first), header: &hd}, true
}

// take returns what was found since the last take.
func (h *headTracker) take() []trimmedHead {
	f := h.found
	h.found = nil
	return f
}

// trimmedSegment returns a segment of th's stream holding only a Trimmed
// record at th.first (ds-format(5) "Trimmed"): put ahead of the stream's
// first retained message, it makes a reader hide nothing and report the
// positions before as trimmed.
func trimmedSegment(th trimmedHead) ([]byte, error) {
	var buf bytes.Buffer
	w, err := segments.NewWriter(&buf, th.header.Stream, th.header.Channels, segments.WriterOptions{FirstSeq: th.header.Seq})
	if err == nil {
		err = w.WriteTrimmed(th.first)
	}
	if err == nil {
		err = w.EndSegment()
	}
	if err == nil {
		err = w.Flush()
	}
	return buf.Bytes(), err
}

// ReaderOptions configures [NewReader].
type ReaderOptions struct {
	// Follow keeps reading as messages arrive (ds tail -f); otherwise
	// the reader ends after the last message stored when it started.
	Follow bool
	// LastPerStream starts at each stream's last message instead of the
	// first retained one (ds tail: only the ends matter).
	LastPerStream bool
	// Nodes, when not empty, reads only these nodes' subjects.
	Nodes []frames.NodeID
	// Warn, if set, is told of messages skipped because they are not
	// what their subject says (checkSubject).
	Warn func(error)
	// StartSeq, when not 0, starts at this sequence number of the
	// JetStream stream (counted over all its subjects) instead of its
	// first retained message: ds tail reads only the last messages.
	StartSeq uint64
}

// NewReader returns the stream's messages under t as one capture (their
// bodies concatenated), read by an ephemeral ordered consumer: the views
// read it like stdin. Close stops it. A message the server removed while
// the reader was behind is skipped by the consumer; the frames it held
// show as gaps.
func NewReader(ctx context.Context, nc *nats.Conn, t Target, o ReaderOptions) (io.ReadCloser, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	name, err := FindStream(ctx, js, t)
	if err != nil {
		return nil, err
	}
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{AllSubjects(t.Prefix)}, DeliverPolicy: jetstream.DeliverAllPolicy,
		// The server removes the consumer 5 s after the reader is gone
		// (its default is 5 minutes): ds nats status shows the readers
		// running now.
		InactiveThreshold: 5 * time.Second,
	}
	if len(o.Nodes) > 0 {
		cfg.FilterSubjects = cfg.FilterSubjects[:0]
		for _, n := range o.Nodes {
			cfg.FilterSubjects = append(cfg.FilterSubjects, NodeSubjects(t.Prefix, n))
		}
	}
	if o.LastPerStream {
		cfg.DeliverPolicy = jetstream.DeliverLastPerSubjectPolicy
	}
	if o.StartSeq > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, o.StartSeq
	}
	cons, err := js.OrderedConsumer(ctx, name, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.Display, explainJS(err))
	}
	stream, err := js.Stream(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.Display, explainJS(err))
	}
	// Without Follow the reader ends at the last message its filters
	// match now: what producers publish while it reads is not waited for.
	var endSeq uint64
	if !o.Follow {
		for _, f := range cfg.FilterSubjects {
			m, err := stream.GetLastMsgForSubject(ctx, f)
			switch {
			case errors.Is(err, jetstream.ErrMsgNotFound):
			case err != nil:
				return nil, fmt.Errorf("%s: %w", t.Display, explainJS(err))
			default:
				endSeq = max(endSeq, m.Sequence)
			}
		}
	}
	warn := o.Warn
	if warn == nil {
		warn = func(error) {}
	}
	heads := newHeadTracker(stream, t)
	pr, pw := io.Pipe()
	rctx, cancel := context.WithCancel(ctx)
	go func() {
		defer cancel()
		if !o.Follow && endSeq == 0 {
			pw.Close() // nothing to read
			return
		}
		var downSince time.Time
		failures := 0
		for rctx.Err() == nil {
			if !nc.IsConnected() {
				// Following waits for the server; a read to the end
				// gives up after readerPatience, with an error.
				if downSince.IsZero() {
					downSince = time.Now()
				}
				if !o.Follow && time.Since(downSince) > readerPatience {
					pw.CloseWithError(fmt.Errorf("%s: server unreachable for %v while reading: %v", t.Display, readerPatience, nc.LastError()))
					return
				}
				time.Sleep(100 * time.Millisecond)
				continue
			}
			downSince = time.Time{}
			batch, err := cons.Fetch(256, jetstream.FetchMaxWait(time.Second))
			if err == nil {
				err = batch.Error()
			}
			n := 0
			if batch != nil {
				for m := range batch.Messages() {
					n++
					if !o.LastPerStream {
						if th, ok := heads.first(rctx, m); ok {
							if seg, err := trimmedSegment(th); err == nil {
								if _, err := pw.Write(seg); err != nil {
									return
								}
							}
						}
					}
					keep, err := checkSubject(t, m)
					if err != nil {
						warn(err)
					}
					if len(keep) > 0 {
						if _, err := pw.Write(keep); err != nil {
							return
						}
					}
					if md, err := m.Metadata(); err == nil && !o.Follow && md.Sequence.Stream >= endSeq {
						pw.Close()
						return
					}
				}
			}
			if err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) && n == 0 {
				if rctx.Err() != nil {
					break
				}
				if failures++; !o.Follow && failures >= 10 {
					pw.CloseWithError(fmt.Errorf("%s: reading: %w", t.Display, explainJS(err)))
					return
				}
				time.Sleep(250 * time.Millisecond)
				continue
			}
			failures = 0
			if n == 0 && !o.Follow {
				// Nothing came: the messages up to endSeq may have been
				// removed (retention) while the reader waited.
				if ci, err := cons.Info(rctx); err == nil && ci.NumPending == 0 {
					pw.Close()
					return
				}
			}
		}
		// Ended by ctx (an interrupted view) or by Close: readers see
		// the context's error, not a broken pipe.
		pw.CloseWithError(rctx.Err())
	}()
	return &reader{pr: pr, cancel: cancel}, nil
}

// readerPatience is how long a [NewReader] without Follow waits for a
// server that went away before it ends the capture with an error.
const readerPatience = 10 * time.Second

type reader struct {
	pr     *io.PipeReader
	cancel context.CancelFunc
}

func (r *reader) Read(p []byte) (int, error) { return r.pr.Read(p) }

func (r *reader) Close() error {
	r.cancel()
	return r.pr.Close()
}

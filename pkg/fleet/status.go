package fleet

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ds-telemetry/ds/pkg/textfmt"
)

// Status is the state of the JetStream stream that takes a target's
// subjects and of its consumers, as [StreamStatus] reads it: what
// ds nats status prints, and, marshalled with encoding/json, its --json
// object (fields in this order; see ds(1)).
type Status struct {
	URL      string   `json:"url"`      // the target's Display form
	Stream   string   `json:"stream"`   // the JetStream stream's name
	Subjects []string `json:"subjects"` // the subjects it takes (never nil)
	Messages uint64   `json:"messages"` // messages kept
	Bytes    uint64   `json:"bytes"`    // their bytes
	// FirstSeq and LastSeq are the stream sequence numbers of the first
	// and last messages kept; FirstTime and LastTime the times the server
	// stored them, in UTC, nil when the stream holds no message.
	FirstSeq  uint64     `json:"first_seq"`
	FirstTime *time.Time `json:"first_time"`
	LastSeq   uint64     `json:"last_seq"`
	LastTime  *time.Time `json:"last_time"`
	// Streams counts the subjects that hold messages: one per
	// datastream (node, life).
	Streams uint64 `json:"streams"`
	// MaxAgeMS and MaxBytes are the retention limits (0: none),
	// Replicas the servers that keep each message, DuplicateMS the
	// duplicate window in milliseconds.
	MaxAgeMS    int64 `json:"max_age_ms"`
	MaxBytes    int64 `json:"max_bytes"`
	Replicas    int   `json:"replicas"`
	DuplicateMS int64 `json:"duplicate_window_ms"`
	// Consumers are the stream's consumers, sorted by name as the server
	// lists them (never nil).
	Consumers []Consumer `json:"consumers"`

	cfg jetstream.StreamConfig
}

// Consumer is one consumer of the stream in a [Status]: Pending messages
// not delivered yet, Unacknowledged ones delivered and waiting for an
// acknowledgement, Redelivered ones delivered more than once, and
// AckFloorSeq the stream sequence up to which all are acknowledged.
// Durable consumers are ingesters' (ds ingest, ds collect); the others are
// readers running now (ds log, ds tail nats://…).
type Consumer struct {
	Name           string `json:"name"`
	Durable        bool   `json:"durable"`
	Pending        uint64 `json:"pending"`
	Unacknowledged int    `json:"unacknowledged"`
	Redelivered    int    `json:"redelivered"`
	AckFloorSeq    uint64 `json:"ack_floor_seq"`
}

// StreamStatus reads the state of the stream that takes t's subjects
// ([FindStream]) and of its consumers over nc, within ctx. Errors name the
// target by its Display form and say what to do when there is no stream
// or JetStream is off.
func StreamStatus(ctx context.Context, nc *nats.Conn, t Target) (Status, error) {
	var st Status
	js, err := jetstream.New(nc)
	if err != nil {
		return st, fmt.Errorf("%s: %w", t.Display, err)
	}
	name, err := FindStream(ctx, js, t)
	if err != nil {
		return st, err
	}
	s, err := js.Stream(ctx, name)
	if err != nil {
		return st, fmt.Errorf("%s: stream %s: %w", t.Display, name, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return st, fmt.Errorf("%s: stream %s: %w", t.Display, name, err)
	}
	cfg, state := info.Config, info.State
	st = Status{
		URL: t.Display, Stream: cfg.Name, Subjects: cfg.Subjects,
		Messages: state.Msgs, Bytes: state.Bytes,
		FirstSeq: state.FirstSeq, LastSeq: state.LastSeq, Streams: state.NumSubjects,
		MaxAgeMS: cfg.MaxAge.Milliseconds(), MaxBytes: max(cfg.MaxBytes, 0),
		Replicas: cfg.Replicas, DuplicateMS: cfg.Duplicates.Milliseconds(),
		Consumers: []Consumer{}, cfg: cfg,
	}
	if st.Subjects == nil {
		st.Subjects = []string{}
	}
	if state.Msgs > 0 {
		first, last := state.FirstTime.UTC(), state.LastTime.UTC()
		st.FirstTime, st.LastTime = &first, &last
	}
	list := s.ListConsumers(ctx)
	for ci := range list.Info() {
		st.Consumers = append(st.Consumers, Consumer{
			Name: ci.Name, Durable: ci.Config.Durable != "",
			Pending: ci.NumPending, Unacknowledged: ci.NumAckPending,
			Redelivered: ci.NumRedelivered, AckFloorSeq: ci.AckFloor.Stream,
		})
	}
	if err := list.Err(); err != nil {
		return st, fmt.Errorf("%s: stream %s: list consumers: %w", t.Display, name, err)
	}
	return st, nil
}

// DescribeStream says what ds nats init and ds nats status show of a
// stream's configuration, on one line: "subjects ds.s.>, max age
// 168h0m0s, max bytes 10 GiB, replicas 1, duplicate window 2m0s" ("none"
// for a limit not set).
func DescribeStream(cfg jetstream.StreamConfig) string {
	age, size := "none", "none"
	if cfg.MaxAge > 0 {
		age = cfg.MaxAge.String()
	}
	if cfg.MaxBytes > 0 {
		size = textfmt.Bytes(uint64(cfg.MaxBytes))
	}
	return fmt.Sprintf("subjects %s, max age %s, max bytes %s, replicas %d, duplicate window %s",
		strings.Join(cfg.Subjects, " "), age, size, cfg.Replicas, cfg.Duplicates)
}

// statusTimeLayout is how [Status.Text] shows a time: RFC 3339 to the
// millisecond.
const statusTimeLayout = "2006-01-02T15:04:05.000Z07:00"

// Text renders st as ds nats status prints it, one "key value" line
// each (stream, messages, first, last, streams, limits, then a consumer
// line per consumer or "consumers none"), times in loc. Consumer names
// are escaped so that they cannot drive a terminal.
func (st Status) Text(loc *time.Location) string {
	var b strings.Builder
	line := func(key, format string, args ...any) {
		fmt.Fprintf(&b, "%-10s %s\n", key, fmt.Sprintf(format, args...))
	}
	line("stream", "%s on %s", st.Stream, st.URL)
	line("messages", "%d (%s)", st.Messages, textfmt.Bytes(st.Bytes))
	if st.FirstTime == nil {
		line("first", "none")
		line("last", "none")
	} else {
		line("first", "%s (sequence %d)", st.FirstTime.In(loc).Format(statusTimeLayout), st.FirstSeq)
		line("last", "%s (sequence %d)", st.LastTime.In(loc).Format(statusTimeLayout), st.LastSeq)
	}
	line("streams", "%d", st.Streams)
	line("limits", "%s", DescribeStream(st.cfg))
	if len(st.Consumers) == 0 {
		line("consumers", "none")
	}
	for _, c := range st.Consumers {
		kind := "durable"
		if !c.Durable {
			kind = "reader"
		}
		line("consumer", "%s: %s, %d pending, %d unacknowledged", textfmt.Escape(c.Name), kind, c.Pending, c.Unacknowledged)
	}
	return b.String()
}

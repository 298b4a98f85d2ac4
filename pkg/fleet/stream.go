package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// Defaults of [StreamOptions]: the trim horizon of the seed's streams
// (spec 004: trim deletes the oldest entries; readers resume at the
// horizon), as JetStream's retention limits.
const (
	DefaultMaxAge     = 7 * 24 * time.Hour
	DefaultMaxBytes   = 10 << 30
	DefaultDuplicates = 2 * time.Minute
)

// StreamOptions are the JetStream stream's limits, set by [InitStream].
// The zero value gives the defaults.
type StreamOptions struct {
	// MaxAge removes messages older than this; 0 means DefaultMaxAge,
	// negative keeps them forever.
	MaxAge time.Duration
	// MaxBytes removes the oldest messages beyond this many bytes; 0
	// means DefaultMaxBytes, negative is no limit.
	MaxBytes int64
	// Replicas is the number of servers of a cluster that store each
	// message (1, 3 or 5); 0 means 1.
	Replicas int
	// Duplicates is the window in which JetStream drops a message whose
	// Nats-Msg-Id it has stored; 0 means DefaultDuplicates.
	Duplicates time.Duration
	// Memory keeps messages in memory instead of files (tests).
	Memory bool
}

// InitStream creates the JetStream stream that takes every subject under
// prefix ([StreamName], subjects [AllSubjects]), or updates its limits when
// it exists, and returns its configuration. created says which. On a
// stream that exists, a zero field of o keeps the stream's value (an
// update changes only what it is told); a new stream gets the defaults. Old
// messages are discarded when a limit is reached: the consumers see that
// as the stream's trim horizon, not as loss.
func InitStream(ctx context.Context, nc *nats.Conn, prefix string, o StreamOptions) (cfg jetstream.StreamConfig, created bool, err error) {
	if err := checkPrefix(prefix); err != nil {
		return cfg, false, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return cfg, false, err
	}
	cfg = jetstream.StreamConfig{
		Name:        StreamName(prefix),
		Description: "ds captures (ds nats init)",
		Subjects:    []string{AllSubjects(prefix)},
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		MaxAge:      o.MaxAge,
		MaxBytes:    o.MaxBytes,
		Replicas:    max(o.Replicas, 1),
		Duplicates:  o.Duplicates,
		Storage:     jetstream.FileStorage,
	}
	switch {
	case cfg.MaxAge == 0:
		cfg.MaxAge = DefaultMaxAge
	case cfg.MaxAge < 0:
		cfg.MaxAge = 0 // JetStream: no limit
	}
	switch {
	case cfg.MaxBytes == 0:
		cfg.MaxBytes = DefaultMaxBytes
	case cfg.MaxBytes < 0:
		cfg.MaxBytes = -1
	}
	if cfg.Duplicates == 0 {
		cfg.Duplicates = DefaultDuplicates
	}
	if cfg.MaxAge > 0 && cfg.Duplicates > cfg.MaxAge {
		cfg.Duplicates = cfg.MaxAge
	}
	if o.Memory {
		cfg.Storage = jetstream.MemoryStorage
	}
	s, err := js.Stream(ctx, cfg.Name)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		_, err = js.CreateStream(ctx, cfg)
		created = true
	case err == nil:
		old := s.CachedInfo().Config
		if !slices.Contains(old.Subjects, AllSubjects(prefix)) {
			// Another prefix with the same stream name (a.b and a_b).
			return cfg, false, fmt.Errorf("stream %s exists and takes subjects %s, another prefix's: choose a prefix whose stream name differs", cfg.Name, strings.Join(old.Subjects, " "))
		}
		if o.MaxAge == 0 {
			cfg.MaxAge = old.MaxAge
		}
		if o.MaxBytes == 0 {
			cfg.MaxBytes = old.MaxBytes
		}
		if o.Replicas == 0 {
			cfg.Replicas = old.Replicas
		}
		if o.Duplicates == 0 {
			cfg.Duplicates = old.Duplicates
		}
		cfg.Storage = old.Storage // JetStream cannot change it
		_, err = js.UpdateStream(ctx, cfg)
	}
	if err != nil {
		return cfg, false, explainJS(err)
	}
	return cfg, created, nil
}

// FindStream returns the name of the JetStream stream that takes the
// subjects under t's prefix, with an error that says what to do when
// there is none or JetStream is off.
func FindStream(ctx context.Context, js jetstream.JetStream, t Target) (string, error) {
	name, err := js.StreamNameBySubject(ctx, AllSubjects(t.Prefix))
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return "", fmt.Errorf("%s: no JetStream stream takes subjects %s; create one with: ds nats init %s", t.Display, AllSubjects(t.Prefix), t.Display)
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", t.Display, explainJS(err))
	}
	// The stream must be the prefix's own: one made for a shorter prefix
	// (ds.> or ds.s.> for the prefix ds.s.x) would hand this prefix's
	// messages to that prefix's consumers as streams of its own.
	s, err := js.Stream(ctx, name)
	if err != nil {
		return "", fmt.Errorf("%s: %w", t.Display, explainJS(err))
	}
	subjects := s.CachedInfo().Config.Subjects
	if !slices.Contains(subjects, AllSubjects(t.Prefix)) && !slices.Contains(subjects, t.Prefix+".>") {
		return "", fmt.Errorf("%s: JetStream stream %s takes subjects %s, not this prefix's own (%s): choose another prefix, or create its stream with: ds nats init %s", t.Display, name, strings.Join(subjects, " "), AllSubjects(t.Prefix), t.Display)
	}
	return name, nil
}

// CheckStream checks that nc's server runs JetStream and has a stream for
// t's subjects. A producer calls it once connected, so that a mistyped
// prefix or a server without JetStream is an error before its command
// runs rather than a run whose copies all go nowhere.
func CheckStream(ctx context.Context, nc *nats.Conn, t Target) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	_, err = FindStream(ctx, js, t)
	return err
}

// explainJS turns JetStream API errors into what the user should check.
func explainJS(err error) error {
	switch {
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
		return fmt.Errorf("JetStream is not enabled on the server (start nats-server with -js, or use ds collect) (%w)", err)
	case errors.Is(err, nats.ErrNoResponders), errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return fmt.Errorf("the JetStream API did not answer: is JetStream enabled on the server? (%w)", err)
	case errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrDisconnected), errors.Is(err, nats.ErrConnectionReconnecting):
		return fmt.Errorf("server unreachable (%w)", err)
	}
	return err
}

// CheckNewStream checks that the server holds no message of stream id
// under t. A second run with the same node and life would publish the
// positions of the first one again, under the same Nats-Msg-Ids: the
// server would drop them as duplicates within its window and the store
// would refuse them as conflicts after it. A producer calls it at start,
// as --append refuses a file that holds the stream already.
func CheckNewStream(ctx context.Context, nc *nats.Conn, t Target, id frames.StreamID) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	name, err := FindStream(ctx, js, t)
	if err != nil {
		return err
	}
	s, err := js.Stream(ctx, name)
	if err != nil {
		return fmt.Errorf("%s: %w", t.Display, explainJS(err))
	}
	_, err = s.GetLastMsgForSubject(ctx, Subject(t.Prefix, id))
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("%s: %w", t.Display, explainJS(err))
	}
	return fmt.Errorf("%s: the server already holds stream %s: give this run another --life (or none: ds picks a fresh one)", t.Display, id)
}

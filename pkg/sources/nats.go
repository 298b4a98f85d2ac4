package sources

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ds-telemetry/ds/pkg/fleet"
	"github.com/ds-telemetry/ds/pkg/frames"
)

// A URLError is a nats:// (or tls://) input whose URL does not parse: the
// input is named wrong, as a file that is not a capture is (ds(1): exit
// 2). Its text never holds credentials.
type URLError struct{ Err error }

func (e *URLError) Error() string { return e.Err.Error() }
func (e *URLError) Unwrap() error { return e.Err }

// natsTimeout is how long a nats:// input's server has to answer.
const natsTimeout = 3 * time.Second

// natsCheckTimeout is how long JetStream has to say it has a stream for
// the input's prefix.
const natsCheckTimeout = 5 * time.Second

// NATS is a nats:// input of a view: a connection to the server and the
// target (fleet.Target: servers, prefix, and Display, the URL without
// credentials, which names the input everywhere). Its readers
// (fleet.NewReader) deliver the JetStream stream's messages concatenated,
// a DSS capture that the views read as they read stdin. It is not safe
// for concurrent use; Close it.
type NATS struct {
	nc    *nats.Conn
	t     fleet.Target
	nodes []frames.NodeID // the nodes read; none: all
	rc    io.ReadCloser   // the last reader opened

	// Segments a reader skipped (of another stream than their message's
	// subject says: ARCHITECTURE.md, NATS messages) go to skip, the
	// DamageReporter of the input (Input.Reporter), or wait in pending
	// until there is one. The reader's goroutine calls it.
	mu      sync.Mutex
	skip    func(error)
	pending []error
}

// skipped is the readers' fleet.ReaderOptions.Warn.
func (s *NATS) skipped(err error) {
	s.mu.Lock()
	f := s.skip
	if f == nil {
		s.pending = append(s.pending, err)
	}
	s.mu.Unlock()
	if f != nil {
		f(err)
	}
}

// onSkip hands the segments skipped so far, and from now on, to f.
func (s *NATS) onSkip(f func(error)) {
	s.mu.Lock()
	s.skip = f
	pending := s.pending
	s.pending = nil
	s.mu.Unlock()
	for _, err := range pending {
		f(err)
	}
}

// OpenNATS connects to the target of a nats:// (or tls://) input, with the
// set's [NATSOptions], and checks that JetStream has a stream for its
// prefix. A URL that does not parse is a *[URLError]; a server that does
// not answer within 3 s, that refuses the credentials, or has no stream
// (checked within 5 s), an error naming the target. Credentials are never
// in an error.
func (s *Set) OpenNATS(url string) (*NATS, error) {
	t, err := fleet.ParseTarget(url)
	if err != nil {
		return nil, &URLError{err}
	}
	nc, err := fleet.Connect(t, s.opts.NATS.Auth, fleet.ConnectOptions{Name: "ds view", Timeout: natsTimeout})
	if err != nil {
		return nil, err
	}
	if nc.IsConnected() {
		ctx, cancel := context.WithTimeout(context.Background(), natsCheckTimeout)
		err = fleet.CheckStream(ctx, nc, t)
		cancel()
		if err != nil {
			nc.Close()
			return nil, err
		}
	}
	return &NATS{nc: nc, t: t, nodes: s.opts.NATS.Nodes}, nil
}

// Name returns the input's name: its URL without credentials.
func (s *NATS) Name() string { return s.t.Display }

// Reader opens a reader of the stream's messages (of the selected nodes
// only), closing the one opened before. It ends (io.EOF) after the last
// message stored when it was opened, unless o.Follow; it ends with ctx,
// or at Close, with ctx's error. o.Nodes is set from the set's options.
func (s *NATS) Reader(ctx context.Context, o fleet.ReaderOptions) (io.Reader, error) {
	if s.rc != nil {
		s.rc.Close()
		s.rc = nil
	}
	o.Nodes = s.nodes
	if o.Warn == nil {
		o.Warn = s.skipped
	}
	rc, err := fleet.NewReader(ctx, s.nc, s.t, o)
	if err != nil {
		return nil, err
	}
	s.rc = rc
	return rc, nil
}

// Seqs returns the first and last sequence numbers of the JetStream
// stream (0, 0 when it holds no message).
func (s *NATS) Seqs(ctx context.Context) (first, last uint64, err error) {
	js, err := jetstream.New(s.nc)
	if err != nil {
		return 0, 0, err
	}
	name, err := fleet.FindStream(ctx, js, s.t)
	if err != nil {
		return 0, 0, err
	}
	st, err := js.Stream(ctx, name)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: stream %s: %w", s.t.Display, name, err)
	}
	state := st.CachedInfo().State
	if state.Msgs == 0 {
		return 0, 0, nil
	}
	return state.FirstSeq, state.LastSeq, nil
}

// Close closes the last reader and the connection.
func (s *NATS) Close() {
	if s.rc != nil {
		s.rc.Close()
	}
	s.nc.Close()
}

// InputName is how a view names an input in its output: a nats:// URL
// without its credentials (its Display; a URL that does not parse is an
// error before anything is printed, [Set.OpenNATS]), any other name as
// given.
func InputName(name string) string {
	if !fleet.IsURL(name) {
		return name
	}
	if t, err := fleet.ParseTarget(name); err == nil {
		return t.Display
	}
	return fleet.Redact(name)
}

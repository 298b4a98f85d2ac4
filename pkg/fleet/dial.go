package fleet

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
)

// DialTimeout bounds each connection attempt of [Dial].
const DialTimeout = 3 * time.Second

// AdminTimeout bounds the JetStream API calls of an administrative
// command (ds nats init, ds nats status, the stream ds collect creates):
// a server that answers at all answers within it.
const AdminTimeout = 10 * time.Second

// StreamCheckTimeout bounds [CheckStreamIfConnected].
const StreamCheckTimeout = 5 * time.Second

// DialOptions says how [Dial] connects.
type DialOptions struct {
	// Name is the client name the server shows ("ds wrap").
	Name string
	// Retry (a producer) makes a server that does not answer no error:
	// the connection keeps trying in the background. Without it, an
	// unreachable server is an error naming the target.
	Retry bool
	// Warn, if set, is told once, with the error of the first attempt,
	// when Retry goes on trying in the background.
	Warn func(error)
}

// Dial connects to t's servers with auth ([Connect], each attempt bounded
// by DialTimeout). When the server does not answer ([Unreachable]) and
// o.Retry is set, it tells o.Warn and returns a connection that keeps
// trying in the background; any other failure (credentials, TLS, a
// server that does not answer without Retry) is an error naming the
// target by its Display form. The caller closes the connection.
func Dial(t Target, auth Auth, o DialOptions) (*nats.Conn, error) {
	nc, err := Connect(t, auth, ConnectOptions{Name: o.Name, Timeout: DialTimeout})
	if err == nil || !o.Retry || !Unreachable(err) {
		return nc, err
	}
	if o.Warn != nil {
		o.Warn(err)
	}
	return Connect(t, auth, ConnectOptions{Name: o.Name, Timeout: DialTimeout, Retry: true})
}

// CheckStreamIfConnected runs [CheckStream] within StreamCheckTimeout
// when nc is connected: that JetStream takes t's subjects (ds nats init
// makes the stream). A connection still trying in the background (Dial
// with Retry) is not checked, and nil is returned.
func CheckStreamIfConnected(nc *nats.Conn, t Target) error {
	if !nc.IsConnected() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), StreamCheckTimeout)
	defer cancel()
	return CheckStream(ctx, nc, t)
}

package fleet

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// DefaultListen is where [StartServer] listens when told nothing: the
// loopback interface on NATS's standard client port.
const DefaultListen = "127.0.0.1:4222"

// ServerOptions configures [StartServer].
type ServerOptions struct {
	// Listen is HOST:PORT for clients; "" means DefaultListen, port 0
	// picks a free one.
	Listen string
	// StoreDir holds JetStream's files (ds collect: STORE/nats).
	StoreDir string
	// Name is the server's name; "" lets nats-server pick one.
	Name string
	// Token, if set, is required of every client.
	Token string
	// Log, if set, receives the server's notices and errors (each line).
	Log func(string)
	// SyncAlways makes JetStream sync each message to disk before it
	// acknowledges it (nats-server's sync_interval: always); otherwise it
	// syncs every 2 minutes, and a machine crash can lose what it
	// acknowledged since.
	SyncAlways bool
}

// A Server is nats-server running in this process with JetStream enabled
// (ds collect, and the tests): fleet capture without infrastructure.
type Server struct {
	s    *server.Server
	lock io.Closer // the store's lock ([Collect]), released after Shutdown
}

// StartServer starts nats-server in this process, JetStream on and its
// files under o.StoreDir, and waits until it takes clients (at most 10 s).
// Errors name the address (one in use is the usual one).
func StartServer(o ServerOptions) (*Server, error) {
	listen := o.Listen
	if listen == "" {
		listen = DefaultListen
	}
	host, portText, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: want HOST:PORT (%v)", listen, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 0 || port > 65535 {
		return nil, fmt.Errorf("--listen %q: bad port", listen)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	opts := &server.Options{
		ServerName:    o.Name,
		Host:          host,
		Port:          port,
		JetStream:     true,
		StoreDir:      o.StoreDir,
		NoSigs:        true,
		NoLog:         o.Log == nil,
		Authorization: o.Token,
		// A message is at most 1 MiB, the NATS default; a Publisher
		// sizes its messages to what the server says.
		MaxPayload: 1 << 20,
		SyncAlways: o.SyncAlways,
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("nats-server: %w", err)
	}
	if o.Log != nil {
		s.SetLoggerV2(logger(o.Log), false, false, false)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		return nil, fmt.Errorf("nats-server: not ready to take clients on %s within 10 s (is the port in use?)", listen)
	}
	return &Server{s: s}, nil
}

// ClientURL returns the URL clients connect to ("nats://127.0.0.1:4222").
func (s *Server) ClientURL() string { return s.s.ClientURL() }

// Shutdown stops the server and waits until it has; a server that
// [Collect] started then releases the store's lock.
func (s *Server) Shutdown() {
	s.s.Shutdown()
	s.s.WaitForShutdown()
	if s.lock != nil {
		s.lock.Close()
	}
}

// logger passes nats-server's notices, warnings and errors to a function,
// one line each.
type logger func(string)

func (l logger) Noticef(format string, v ...any) { l(fmt.Sprintf(format, v...)) }
func (l logger) Warnf(format string, v ...any)   { l("warning: " + fmt.Sprintf(format, v...)) }
func (l logger) Fatalf(format string, v ...any)  { l("fatal: " + fmt.Sprintf(format, v...)) }
func (l logger) Errorf(format string, v ...any)  { l("error: " + fmt.Sprintf(format, v...)) }
func (l logger) Debugf(string, ...any)           {}
func (l logger) Tracef(string, ...any)           {}

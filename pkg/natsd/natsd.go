// Package natsd runs nats-server with JetStream: in this process ([Start],
// for the tests) or as ds-natsd, the helper program ds collect starts as
// its child ([Main]; fleet.StartServer is the parent's side). It is the
// only package that imports nats-server, so that ds itself does not link
// it and its dependencies, whose package init cost every ds invocation
// milliseconds (issue 23 item 4; ARCHITECTURE.md §1).
//
// The protocol between ds and ds-natsd (ARCHITECTURE.md §1, "ds-natsd"):
// ds runs
//
//	ds-natsd --listen HOST:PORT --store DIR [--name NAME] [--sync]
//
// with the client token, if any, in $DS_NATSD_TOKEN (not on the command
// line, where ps shows it) and a pipe on standard input. ds-natsd writes
// one line on standard output, "ready URL" once the server takes clients
// or "fail MESSAGE" when it cannot start (then exits 1), and the server's
// warnings and errors on standard error, one line each. It shuts the
// server down cleanly and exits 0 when its standard input reaches its end
// (ds closed the pipe, or died: ds-natsd never outlives ds, not even
// after kill -9) or on SIGTERM or SIGINT.
package natsd

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// TokenEnv is the environment variable that passes the client token to
// ds-natsd.
const TokenEnv = "DS_NATSD_TOKEN"

// Options configures [Start].
type Options struct {
	// Listen is HOST:PORT for clients; port 0 picks a free one.
	Listen string
	// StoreDir holds JetStream's files (ds collect: STORE/nats).
	StoreDir string
	// Name is the server's name; "" lets nats-server pick one.
	Name string
	// Token, if set, is required of every client.
	Token string
	// Log, if set, receives the server's notices, and its warnings and
	// errors prefixed "warning: ", "error: " or "fatal: " (each line).
	Log func(string)
	// SyncAlways makes JetStream sync each message to disk before it
	// acknowledges it (nats-server's sync_interval: always); otherwise it
	// syncs every 2 minutes, and a machine crash can lose what it
	// acknowledged since.
	SyncAlways bool
	// MaxPayload is the largest message in bytes; 0 means 1 MiB, the
	// NATS default (a fleet.Publisher sizes its messages to what the
	// server says).
	MaxPayload int32
}

// A Server is nats-server running in this process with JetStream enabled.
type Server struct {
	s *server.Server
}

// Start starts nats-server in this process, JetStream on and its files
// under o.StoreDir, and waits until it takes clients (at most 10 s).
// Errors name the address (one in use is the usual one).
func Start(o Options) (*Server, error) {
	host, portText, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: want HOST:PORT (%v)", o.Listen, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 0 || port > 65535 {
		return nil, fmt.Errorf("--listen %q: bad port", o.Listen)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	maxPayload := o.MaxPayload
	if maxPayload == 0 {
		maxPayload = 1 << 20
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
		MaxPayload:    maxPayload,
		SyncAlways:    o.SyncAlways,
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
		return nil, fmt.Errorf("nats-server: not ready to take clients on %s within 10 s (is the port in use?)", o.Listen)
	}
	return &Server{s: s}, nil
}

// ClientURL returns the URL clients connect to ("nats://127.0.0.1:4222").
func (s *Server) ClientURL() string { return s.s.ClientURL() }

// Shutdown stops the server and waits until it has.
func (s *Server) Shutdown() {
	s.s.Shutdown()
	s.s.WaitForShutdown()
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

// Main is ds-natsd: it parses args (args[0] is the program's name), starts
// the server and speaks the protocol of the package comment on stdin,
// stdout and stderr. It returns the exit status: 0 after a clean
// shutdown, 1 when the server could not start, 2 for bad arguments.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ds-natsd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: ds-natsd --listen HOST:PORT --store DIR [--name NAME] [--sync]")
		fmt.Fprintln(stderr, "ds-natsd runs the NATS JetStream server for ds collect, which starts it; it stops when its standard input ends.")
		fs.PrintDefaults()
	}
	var o Options
	fs.StringVar(&o.Listen, "listen", "127.0.0.1:4222", "HOST:PORT for clients (port 0: a free one)")
	fs.StringVar(&o.StoreDir, "store", "", "directory of JetStream's files (required)")
	fs.StringVar(&o.Name, "name", "", "the server's name")
	fs.BoolVar(&o.SyncAlways, "sync", false, "sync each message to disk before acknowledging it")
	if err := fs.Parse(args[1:]); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() != 0 || o.StoreDir == "" {
		fs.Usage()
		return 2
	}
	o.Token = os.Getenv(TokenEnv)
	// The server logs from its own goroutines, some of them after
	// Shutdown returned: lines are written under a lock, one at a time so
	// that they never interleave, and dropped once Main is done with
	// stderr.
	var logMu sync.Mutex
	logOpen := true
	o.Log = func(l string) {
		logMu.Lock()
		defer logMu.Unlock()
		if logOpen {
			fmt.Fprintln(stderr, strings.ReplaceAll(l, "\n", " "))
		}
	}
	closeLog := func() {
		logMu.Lock()
		logOpen = false
		logMu.Unlock()
	}
	// ds runs ds-natsd in its own process group, so a terminal's ^C
	// reaches ds only, which then closes the pipe when it is done with
	// the server; a signal sent to ds-natsd itself stops it.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	s, err := Start(o)
	if err != nil {
		closeLog()
		fmt.Fprintf(stdout, "fail %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		return 1
	}
	fmt.Fprintf(stdout, "ready %s\n", s.ClientURL())
	eof := make(chan struct{})
	go func() {
		io.Copy(io.Discard, bufio.NewReader(stdin))
		close(eof)
	}()
	select {
	case <-eof:
	case <-sigs:
	}
	s.Shutdown()
	closeLog()
	return 0
}

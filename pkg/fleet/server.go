package fleet

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DefaultListen is where [StartServer] listens when told nothing: the
// loopback interface on NATS's standard client port.
const DefaultListen = "127.0.0.1:4222"

// HelperName is the program [StartServer] runs: ds-natsd (cmd/ds-natsd),
// which runs nats-server, so that ds does not link it (issue 23 item 4;
// ARCHITECTURE.md §1).
const HelperName = "ds-natsd"

// HelperEnv is the environment variable that, if set, gives the path of
// the helper program, in place of the search of [FindHelper].
const HelperEnv = "DS_NATSD"

// helperTokenEnv passes the token to the helper (natsd.TokenEnv; fleet
// does not import natsd, which would link nats-server into ds).
const helperTokenEnv = "DS_NATSD_TOKEN"

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
	// Log, if set, receives the server's warnings and errors, each line
	// prefixed "warning: ", "error: " or "fatal: ".
	Log func(string)
	// SyncAlways makes JetStream sync each message to disk before it
	// acknowledges it (nats-server's sync_interval: always); otherwise it
	// syncs every 2 minutes, and a machine crash can lose what it
	// acknowledged since.
	SyncAlways bool
}

// A Server is nats-server with JetStream enabled running as ds-natsd, a
// child of this process (ds collect): fleet capture without
// infrastructure.
type Server struct {
	url      string
	shutdown func()    // stops the server and waits until it has
	lock     io.Closer // the store's lock ([Collect]), released after Shutdown
	once     sync.Once
	exited   chan struct{} // closed when ds-natsd exits (nil: in this process)
	exitErr  error         // how it exited, once exited is closed
}

// Exited returns a channel closed when the server's process (ds-natsd)
// has exited, whether [Server.Shutdown] stopped it or it died (killed,
// crashed): a caller that did not shut it down has lost its server. It
// is nil, never closed, for a server running in this process.
func (s *Server) Exited() <-chan struct{} { return s.exited }

// ExitError says how ds-natsd ended once [Server.Exited] is closed: nil
// for exit status 0, else the *exec.ExitError ("signal: killed").
func (s *Server) ExitError() error { return s.exitErr }

// startServer is what [StartServer] calls; the package's tests replace it
// by an in-process server.
var startServer = startHelper

// StartServer starts nats-server, JetStream on and its files under
// o.StoreDir, as the helper program ds-natsd ([FindHelper]), and waits
// until it takes clients (at most 30 s). The helper stops when Shutdown
// is called or when this process ends, however it ends. Errors name the
// address (one in use is the usual one), or where the helper was looked
// for and how to build it.
func StartServer(o ServerOptions) (*Server, error) {
	if o.Listen == "" {
		o.Listen = DefaultListen
	}
	_, portText, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: want HOST:PORT (%v)", o.Listen, err)
	}
	if port, err := strconv.Atoi(portText); err != nil || port < 0 || port > 65535 {
		return nil, fmt.Errorf("--listen %q: bad port", o.Listen)
	}
	return startServer(o)
}

// FindHelper returns the path of ds-natsd: $DS_NATSD if set, else the
// file of that name beside this process's executable (bin/ds and
// bin/ds-natsd of make build, or both in $GOBIN after go install
// ./cmd/...), else the one on $PATH. The error names where it looked and
// how to build the helper.
func FindHelper() (string, error) {
	if p := os.Getenv(HelperEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("$%s: %w (ds collect runs nats-server as that program; build it with: go build -o %s ./cmd/ds-natsd)", HelperEnv, err, p)
		}
		return p, nil
	}
	var looked []string
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		p := filepath.Join(filepath.Dir(exe), HelperName)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
		looked = append(looked, filepath.Dir(exe))
	}
	if p, err := exec.LookPath(HelperName); err == nil {
		return p, nil
	}
	looked = append(looked, "$PATH")
	return "", fmt.Errorf("%s not found in %s: ds collect runs nats-server as that program; install it beside ds with: go install ./cmd/... (or make build: bin/ds and bin/ds-natsd), or set $%s to its path",
		HelperName, strings.Join(looked, " nor on "), HelperEnv)
}

// startHelper runs ds-natsd in a process group of its own (a terminal's
// ^C reaches ds, which stops the server when it is done with it), its
// standard input a pipe whose end stops it, and reads its first line.
func startHelper(o ServerOptions) (*Server, error) {
	path, err := FindHelper()
	if err != nil {
		return nil, err
	}
	args := []string{"--listen", o.Listen, "--store", o.StoreDir}
	if o.Name != "" {
		args = append(args, "--name", o.Name)
	}
	if o.SyncAlways {
		args = append(args, "--sync")
	}
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), helperTokenEnv+"="+o.Token)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if o.Log != nil && isProblem(sc.Text()) {
				o.Log(sc.Text())
			}
		}
	}()
	srv := &Server{exited: make(chan struct{})}
	first := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		first <- strings.TrimSuffix(line, "\n")
		io.Copy(io.Discard, stdout)
	}()
	stop := func() {
		stdin.Close()
		select {
		case <-srv.exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-srv.exited
		}
	}
	go func() {
		<-logged // Wait closes the pipes: read them to their end first
		srv.exitErr = cmd.Wait()
		close(srv.exited)
	}()
	var line string
	select {
	case line = <-first:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		return nil, fmt.Errorf("%s: not ready to take clients on %s within 30 s", path, o.Listen)
	}
	switch {
	case strings.HasPrefix(line, "ready "):
		srv.url, srv.shutdown = strings.TrimPrefix(line, "ready "), stop
		return srv, nil
	case strings.HasPrefix(line, "fail "):
		stop()
		return nil, errors.New(strings.TrimPrefix(line, "fail "))
	default:
		stdin.Close()
		<-srv.exited
		how := "exit status 0"
		if srv.exitErr != nil {
			how = srv.exitErr.Error()
		}
		return nil, fmt.Errorf("%s: exited before its server took clients (%s; it printed %q, want \"ready URL\")", path, how, line)
	}
}

// isProblem reports whether a line of the helper is a warning or an error
// (notices, the startup banners, are not worth a line).
func isProblem(line string) bool {
	return strings.HasPrefix(line, "warning: ") || strings.HasPrefix(line, "error: ") || strings.HasPrefix(line, "fatal: ")
}

// ClientURL returns the URL clients connect to ("nats://127.0.0.1:4222").
func (s *Server) ClientURL() string { return s.url }

// Shutdown stops the server and waits until it has; a server that
// [Collect] started then releases the store's lock. Calls after the
// first do nothing.
func (s *Server) Shutdown() {
	s.once.Do(func() {
		s.shutdown()
		if s.lock != nil {
			s.lock.Close()
		}
	})
}

package fleet

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/ds-telemetry/ds/pkg/segments"
)

// ds collect STORE: a NATS server with JetStream run in this process,
// its files in STORE/nats, and the durable consumer of [Ingest] storing
// what producers publish to it in STORE. STORE/nats is a directory the
// store does not know and its readers never look at (they read
// STORE/streams only), so the views and ds check read the store the same
// with it or without it.

// CollectDir is the directory of a store that holds the JetStream files
// of [Collect]'s server, and CollectLock the file in it that one Collect
// at a time holds (two servers must not share the files).
const (
	CollectDir  = "nats"
	CollectLock = "ds-collect.lock"
)

// CollectOptions configures [Collect].
type CollectOptions struct {
	// Store is the store directory, created if needed (segments.CreateStore).
	Store string
	// Server configures the server: Listen, Token (required of every
	// client, and presented by Collect's own), SyncAlways and Log.
	// StoreDir is set to Store/CollectDir; Name "" means "ds-collect".
	Server ServerOptions
	// Prefix is the subject prefix stored ("" means DefaultPrefix).
	Prefix string
	// Limits are the stream's, as [InitStream] takes them.
	Limits StreamOptions
	// URLFile, if set, receives the URL producers publish to and a
	// newline once Collect is ready (written to a temporary file renamed
	// over it, so that a reader polling it sees nothing or all of it); it
	// is removed when Collect returns.
	URLFile string
	// Ingest configures the consumer (Durable, "" meaning "ds-collect";
	// Warn, Stored; Idle 0 runs until ctx is done).
	Ingest IngestOptions
	// Ready, if set, is told the URL producers publish to once the
	// server takes them and the stream exists (after URLFile is written).
	Ready func(url string)
}

// Collect runs ds collect: it checks that o.Server.Listen is free (at
// once, rather than after nats-server's 10 s), opens or creates the store,
// locks Store/CollectDir for this process and starts the server on it,
// creates or updates the stream of o.Prefix, and ingests what producers
// publish until ctx is done. It shuts the server down and releases the
// lock before it returns.
//
// It returns what [Ingest] returns. An interruption (ctx) before the
// stream exists returns ctx.Err(). A store this run created is removed
// again when the server did not start. Errors: the address in use, the
// store not writable, another Collect holding the store ("another ds
// collect runs on this store"), the stream refused.
func Collect(ctx context.Context, o CollectOptions) (IngestStats, error) {
	var stats IngestStats
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.Ingest.Durable == "" {
		o.Ingest.Durable = "ds-collect"
	}
	if o.Server.Listen == "" {
		o.Server.Listen = DefaultListen
	}
	if err := checkListen(o.Server.Listen); err != nil {
		return stats, err
	}
	_, statErr := os.Stat(o.Store)
	created := errors.Is(statErr, fs.ErrNotExist)
	st, err := segments.CreateStore(o.Store)
	if err != nil {
		return stats, err
	}
	defer st.Close()
	srv, err := startStoreServer(o.Store, o.Server)
	if err != nil {
		if created {
			// A store this run made for a server that did not start
			// holds nothing: it is not left behind.
			st.Close()
			os.RemoveAll(o.Store)
		}
		return stats, err
	}
	defer srv.Shutdown()
	t, err := ParseTarget(srv.ClientURL() + "/" + o.Prefix)
	if err != nil {
		return stats, err
	}
	nc, err := Connect(t, Auth{Token: o.Server.Token}, ConnectOptions{Name: "ds collect"})
	if err != nil {
		return stats, err
	}
	defer nc.Close()
	initCtx, cancel := context.WithTimeout(ctx, AdminTimeout)
	_, _, err = InitStream(initCtx, nc, o.Prefix, o.Limits)
	cancel()
	if err != nil && ctx.Err() != nil {
		return stats, ctx.Err() // interrupted while starting
	}
	if err != nil {
		return stats, fmt.Errorf("%s: stream %s: %w", t.Display, StreamName(o.Prefix), err)
	}
	url := PublicURL(t)
	t.Display = url // what the consumer's reports name: the URL producers use
	if o.URLFile != "" {
		if err := writeFileAtomic(o.URLFile, url+"\n"); err != nil {
			return stats, fmt.Errorf("--url-file: %w", err)
		}
		defer os.Remove(o.URLFile)
	}
	if o.Ready != nil {
		o.Ready(url)
	}
	// A server that dies under ds collect (killed, crashed) never comes
	// back: nothing else starts it. The ingester is then stopped, what it
	// holds committed, and ds collect fails, instead of waiting forever
	// for a server that cannot return.
	ictx, stopIngest := context.WithCancelCause(ctx)
	defer stopIngest(nil)
	go func() {
		select {
		case <-srv.Exited():
			stopIngest(errServerExited)
		case <-ictx.Done():
		}
	}()
	stats, err = Ingest(ictx, nc, t, st, o.Ingest)
	if ctx.Err() == nil && errors.Is(context.Cause(ictx), errServerExited) {
		how := "exit status 0"
		if e := srv.ExitError(); e != nil {
			how = e.Error()
		}
		return stats, fmt.Errorf("the server (ds-natsd) exited under ds collect (%s): what it had acknowledged is stored; run ds collect on the store again to resume from the server's files", how)
	}
	return stats, err
}

// errServerExited is the cause of stopping the ingester of [Collect]
// when its server's process has exited.
var errServerExited = errors.New("fleet: the server exited")

// checkListen tries the address of a port other than 0: nats-server takes
// 10 s to give up on an address in use.
func checkListen(listen string) error {
	if _, port, _ := net.SplitHostPort(listen); port == "0" {
		return nil
	}
	l, err := net.Listen("tcp", listen)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("--listen %s: %w (another ds collect or nats-server?)", listen, err)
		}
		return fmt.Errorf("--listen %s: %w", listen, err)
	}
	return l.Close()
}

// startStoreServer locks store's CollectDir for this process and starts
// the server on it; the lock is held until the server's Shutdown has
// returned.
func startStoreServer(store string, o ServerOptions) (*Server, error) {
	natsDir := filepath.Join(store, CollectDir)
	if err := os.MkdirAll(natsDir, 0o755); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(natsDir, CollectLock), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("%s: another ds collect runs on this store", store)
	}
	o.StoreDir = natsDir
	if o.Name == "" {
		o.Name = "ds-collect"
	}
	srv, err := StartServer(o)
	if err != nil {
		lock.Close()
		return nil, err
	}
	srv.lock = lock
	return srv, nil
}

// PublicURL returns the URL producers publish to for a server reached at
// t: t's Display form, with this host's name (os.Hostname; 127.0.0.1 when
// it has none) in place of an address that means every interface
// (0.0.0.0, ::), which another machine cannot connect to.
func PublicURL(t Target) string {
	hostPort := strings.TrimPrefix(t.Servers[0], "nats://")
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		return t.Display
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsUnspecified() {
		return t.Display
	}
	name, err := os.Hostname()
	if err != nil || name == "" {
		name = "127.0.0.1"
	}
	return "nats://" + net.JoinHostPort(name, port) + "/" + t.Prefix
}

// writeFileAtomic writes text to path through a temporary file in its
// directory renamed over it, so that a reader polling path sees nothing
// or all of it. The temporary file is removed on failure.
func writeFileAtomic(path, text string) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}

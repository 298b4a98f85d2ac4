package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/fleet"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// ds collect STORE: a NATS server with JetStream run in this process
// (fleet.StartServer), its files in STORE/nats, and the durable consumer
// of ds ingest nats://… (ingestNATS) storing what producers publish to it
// in STORE. STORE/nats is a directory the store does not know and its
// readers never look at (they read STORE/streams only), so ds check,
// ds info and ds log of the store are the same with it or without it.

// collectNATSDir is the directory of STORE that holds the server's
// JetStream files, and collectLock the file in it that one ds collect
// at a time holds (two servers must not share the files).
const (
	collectNATSDir = "nats"
	collectLock    = "ds-collect.lock"
)

func collectCommand() *cli.Command {
	return &cli.Command{
		Name:      "collect",
		Usage:     "run a NATS server for producers and store what they publish",
		UsageText: "ds collect STORE [--listen HOST:PORT] [--prefix P] [--durable NAME] [--max-age D] [--max-bytes N] [--token T] [--url-file FILE]",
		Description: `Receives the captures of a fleet without infrastructure: runs a NATS
server with JetStream in this process, listening on --listen (default
127.0.0.1:4222; port 0 picks a free one), creates the JetStream stream of
--prefix (as ds nats init does, with --max-age and --max-bytes), and
stores what producers publish under it in the store directory STORE (as
ds ingest STORE nats://… does, with the durable consumer --durable), which
it creates if needed. When it is ready it says, on stderr:

   ds: collecting into STORE; producers publish with:
   ds wrap -o nats://127.0.0.1:4222/ds -- CMD

(on one line), and it writes that URL to --url-file FILE, if given, for
scripts; the file is removed at exit. Producers on other machines need
--listen 0.0.0.0:4222 (or an address of this host) and, better, --token
(or $DS_NATS_TOKEN), which every client must then present (producers
set $DS_NATS_TOKEN too).

stdout gets a line for each batch stored and acknowledged, as ds ingest
prints for a nats:// input:

   nats://127.0.0.1:4222/ds: 1500 frames stored, 0 duplicates,
   0 conflicts (12 messages acknowledged)

A message is acknowledged only once the store holds its frames durably:
kill -9 loses nothing, as what was not acknowledged is stored by the
next ds collect STORE (without duplicates). The server itself, as
nats-server does by default, writes what producers publish at once but
syncs its files to disk every 2 minutes: a crash of the machine (not of
the process) can lose what producers were told was kept and the
ingester had not stored yet; --sync syncs every message before it is
acknowledged, at a cost in throughput. The server keeps its files
in STORE/nats, beside STORE/streams, which it does not touch (the views
and ds check read the store as they would without it); --max-age and
--max-bytes bound what they take. One ds collect runs on a STORE at a
time. While it is down, producers cannot publish: their nats:// outputs
keep trying, and what their buffers cannot hold is lost to that output
and recorded in the stream (datastream.transport; ds gaps shows it);
their capture files keep everything.

SIGINT or SIGTERM stops it: the batch in hand is stored, the totals are
printed with "(interrupted)", the server shuts down, exit 0.

Exit status: 0 when interrupted, 1 on an error (the address is in use,
the store cannot be written, another ds collect runs on it), 2 on a bad
command line, 3 when a message was damaged.`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "listen", Value: fleet.DefaultListen, Usage: "take NATS clients on `HOST:PORT` (port 0: a free one)"},
			&cli.StringFlag{Name: "prefix", Value: fleet.DefaultPrefix, Usage: "store what is published under subject prefix `P` (nats://HOST:PORT/P)"},
			&cli.StringFlag{Name: "durable", Value: "ds-collect", Usage: "the durable consumer `NAME` that stores the messages"},
			&cli.StringFlag{Name: "token", Usage: "require `TOKEN` of every client (better: set $DS_NATS_TOKEN)", Sources: cli.EnvVars("DS_NATS_TOKEN")},
			&cli.StringFlag{Name: "url-file", Usage: "write the URL producers publish to into `FILE` when ready", TakesFile: true},
			&cli.BoolFlag{Name: "sync", Usage: "have the server fsync each message before it acknowledges it (slower; see above)"},
		}, streamLimitFlags()...),
		Action: collectAction,
	}
}

// collectOptions is what ds collect was asked.
type collectOptions struct {
	store   string
	listen  string
	prefix  string
	durable string
	token   string
	urlFile string
	sync    bool
	limits  fleet.StreamOptions
}

func collectAction(ctx context.Context, c *cli.Command) error {
	store, err := oneStore(c)
	if err != nil {
		return err
	}
	o := collectOptions{store: store, listen: c.String("listen"), prefix: c.String("prefix"),
		durable: c.String("durable"), token: c.String("token"), urlFile: c.String("url-file"), sync: c.Bool("sync")}
	if _, port, err := net.SplitHostPort(o.listen); err != nil {
		return usagef("--listen %q: want HOST:PORT, such as 127.0.0.1:4222 or 0.0.0.0:0", o.listen)
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return usagef("--listen %q: want a port from 0 to 65535", o.listen)
	}
	if _, err := fleet.ParseTarget("nats://127.0.0.1/" + o.prefix); err != nil || o.prefix == "" {
		return usagef("--prefix %q: want subject tokens separated by dots, without spaces, \"*\", \">\" or \"/\"", o.prefix)
	}
	if o.durable == "" || strings.ContainsAny(o.durable, ".*> \t") {
		return usagef("--durable %q: want a consumer name without dots, wildcards or spaces", o.durable)
	}
	if err := streamLimits(c, &o.limits); err != nil {
		return err
	}
	if o.urlFile != "" {
		// Never replaced, as -o FILE is not: ds collect removes it at
		// exit, and it could be someone's file.
		if _, err := os.Lstat(o.urlFile); err == nil {
			return fmt.Errorf("--url-file %s exists: not replacing it (remove it if a ds collect that was killed left it)", o.urlFile)
		}
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := c.Root()
	return runCollect(ctx, o, root.Writer, root.ErrWriter)
}

// runCollect opens (or creates) the store, starts the server on its
// STORE/nats, creates the stream, and ingests until ctx is done; it
// shuts the server down before it returns.
func runCollect(ctx context.Context, o collectOptions, stdout, stderr io.Writer) error {
	// nats-server takes 10 s to give up on an address in use: ask first,
	// before anything is created.
	if _, port, _ := net.SplitHostPort(o.listen); port != "0" {
		l, err := net.Listen("tcp", o.listen)
		if err != nil {
			return fmt.Errorf("--listen %s: %w (another ds collect or nats-server?)", o.listen, err)
		}
		l.Close()
	}
	_, statErr := os.Stat(o.store)
	created := errors.Is(statErr, fs.ErrNotExist)
	st, err := segments.CreateStore(o.store)
	if err != nil {
		return err
	}
	defer st.Close()
	srv, lock, err := startCollectServer(o, stderr)
	if err != nil {
		if created {
			// A store this run made for a server that did not start
			// holds nothing: it is not left behind.
			st.Close()
			os.RemoveAll(o.store)
		}
		return err
	}
	defer lock.Close()
	defer srv.Shutdown()
	t, err := fleet.ParseTarget(srv.ClientURL() + "/" + o.prefix)
	if err != nil {
		return err
	}
	nc, err := fleet.Connect(t, fleet.Auth{Token: o.token}, fleet.ConnectOptions{Name: "ds collect"})
	if err != nil {
		return err
	}
	defer nc.Close()
	initCtx, cancel := context.WithTimeout(ctx, natsAdminTimeout)
	_, _, err = fleet.InitStream(initCtx, nc, o.prefix, o.limits)
	cancel()
	if err != nil && ctx.Err() != nil {
		return nil // interrupted while starting
	}
	if err != nil {
		return fmt.Errorf("%s: stream %s: %w", t.Display, fleet.StreamName(o.prefix), err)
	}
	url := publicURL(t)
	t.Display = url // the lines name the URL the hint gives
	if o.urlFile != "" {
		if err := writeFileAtomic(o.urlFile, url+"\n"); err != nil {
			return err
		}
		defer os.Remove(o.urlFile)
	}
	hint := ""
	if o.token != "" {
		hint = " (with $DS_NATS_TOKEN set to the token)"
	}
	fmt.Fprintf(stderr, "ds: collecting into %s; producers publish with: ds wrap -o %s -- CMD%s\n", ingestSafe(o.store), url, hint)
	return ingestNATS(ctx, st, nc, t, fleet.IngestOptions{Durable: o.durable}, stdout, stderr)
}

// startCollectServer locks STORE/nats for this ds collect and starts
// the server on it; the lock is held until the returned file is closed
// (after the server's shutdown). nats-server's warnings and errors go to
// stderr.
func startCollectServer(o collectOptions, stderr io.Writer) (*fleet.Server, *os.File, error) {
	natsDir := filepath.Join(o.store, collectNATSDir)
	if err := os.MkdirAll(natsDir, 0o755); err != nil {
		return nil, nil, err
	}
	lock, err := os.OpenFile(filepath.Join(natsDir, collectLock), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return nil, nil, fmt.Errorf("%s: another ds collect runs on this store", o.store)
	}
	srv, err := fleet.StartServer(fleet.ServerOptions{
		Listen: o.listen, StoreDir: natsDir, Name: "ds-collect", Token: o.token, SyncAlways: o.sync,
		Log: func(line string) {
			// Notices (startup banners) are not worth a line; problems are.
			if strings.HasPrefix(line, "warning: ") || strings.HasPrefix(line, "error: ") || strings.HasPrefix(line, "fatal: ") {
				fmt.Fprintf(stderr, "ds: nats-server: %s\n", ingestSafe(line))
			}
		},
	})
	if err != nil {
		lock.Close()
		return nil, nil, err
	}
	return srv, lock, nil
}

// publicURL is the URL producers publish to: t's, with this host's name
// in place of an address that means every interface (0.0.0.0, ::),
// which another machine cannot connect to.
func publicURL(t fleet.Target) string {
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

// writeFileAtomic writes text to path through a temporary file renamed
// over it, so that a reader polling path sees nothing or all of it.
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
		return fmt.Errorf("--url-file: %w", err)
	}
	return nil
}

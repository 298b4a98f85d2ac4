package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/fleet"
	"github.com/ds-telemetry/ds/pkg/textfmt"
)

// ds collect STORE: fleet.Collect, which runs a NATS server with
// JetStream in this process (its files in STORE/nats) and the durable
// consumer of ds ingest nats://… storing what producers publish to it in
// STORE; natsReport prints what it stores.

func collectCommand() *cli.Command {
	return &cli.Command{
		Name:      "collect",
		Usage:     "run a NATS server for producers and store what they publish",
		UsageText: "ds collect STORE [--listen HOST:PORT] [--prefix P] [--durable NAME] [--max-age D] [--max-bytes N] [--token T] [--url-file FILE]",
		Description: `Receives the captures of a fleet without infrastructure: runs a NATS
server with JetStream (ds-natsd, its child process), listening on --listen (default
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

The server runs as ds-natsd, a program of its own that ds does not link
(so that every other ds command starts fast): ds collect looks for it
in $DS_NATSD, if set, then beside the ds executable, then on $PATH;
make build puts bin/ds-natsd beside bin/ds, and go install ./cmd/...
installs both. ds-natsd runs in a process group of its own and stops
when ds collect closes its standard input, or dies, even by kill -9.

SIGINT, SIGTERM or SIGHUP (the terminal or the ssh session gone) stops
it: the batch in hand is stored, the totals are printed with
"(interrupted)", the server shuts down, exit 0. A server that dies under
it (ds-natsd killed) stops it with exit 1.

Exit status: 0 when interrupted, 1 on an error (no ds-natsd, the address is in use,
the store cannot be written, another ds collect runs on it), 2 on a bad
command line, 3 when a message was damaged or held a segment of another
stream than its subject names (skipped, and named on stderr).`,
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
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	root := c.Root()
	return runCollect(ctx, o, root.Writer, root.ErrWriter)
}

// runCollect runs fleet.Collect until ctx is done, printing the ready
// hint and what is stored.
func runCollect(ctx context.Context, o collectOptions, stdout, stderr io.Writer) error {
	rep := &natsReport{stdout: stdout, stderr: stderr}
	stats, err := fleet.Collect(ctx, fleet.CollectOptions{
		Store: o.store, Prefix: o.prefix, Limits: o.limits, URLFile: o.urlFile,
		Server: fleet.ServerOptions{Listen: o.listen, Token: o.token, SyncAlways: o.sync,
			Log: func(line string) {
				// Notices (startup banners) are not worth a line; problems are.
				if strings.HasPrefix(line, "warning: ") || strings.HasPrefix(line, "error: ") || strings.HasPrefix(line, "fatal: ") {
					fmt.Fprintf(stderr, "ds: nats-server: %s\n", textfmt.Escape(line))
				}
			}},
		Ingest: rep.options(fleet.IngestOptions{Durable: o.durable}),
		Ready: func(url string) {
			rep.display = url // the lines name the URL the hint gives
			hint := ""
			if o.token != "" {
				hint = " (with $DS_NATS_TOKEN set to the token)"
			}
			fmt.Fprintf(stderr, "ds: collecting into %s; producers publish with: ds wrap -o %s -- CMD%s\n", textfmt.Escape(o.store), url, hint)
		},
	})
	return rep.finish(ctx, stats, err)
}

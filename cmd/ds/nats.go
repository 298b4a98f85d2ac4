package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/fleet"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// ds nats init|status: the JetStream stream that carries the captures
// published with -o nats://… (pkg/fleet), created with its retention
// limits and inspected. ds collect creates the same stream on its own
// server (collect.go).

const natsDescription = `Producers publish to a NATS server with -o nats://HOST:PORT/PREFIX;
ds ingest, ds log and ds tail read from it. A JetStream stream keeps the
messages: one per prefix, named DS_PREFIX (dots and other signs become
_), taking the subjects PREFIX.s.> (one subject per stream, that is per
node and life: PREFIX.s.NODE.LIFE). ds nats init creates it (ds collect
creates its own); ds nats status shows what it holds and how far each
consumer has read. A URL without /PREFIX means /ds.

The stream keeps each message until its limits remove the oldest: older
than --max-age (default 7d) or beyond --max-bytes in all (default 10GiB).
These limits are the trim horizon of the network copy, not losses of a
producer: they remove each stream's oldest positions, and the views show
the positions before a stream's oldest message kept as "trimmed", never
as a gap (ds ingest records that horizon in the store). An ingester that
had not stored the removed messages yet warns of them: set the limits
above the longest time an ingester may be down. The capture files of the
producers keep everything.

--duplicates (default 2m) is the window in which JetStream stores a
message that a producer sent again (after a lost acknowledgement) once;
beyond it the store still keeps one copy of each frame. --replicas
keeps each message on that many servers of a cluster (1, 3 or 5).

The connection flags (--nats-creds, --nats-token or $DS_NATS_TOKEN,
--nats-tls-*) are those of every nats:// input and output; credentials
in a URL (nats://USER:PASSWORD@HOST) are never printed.

A worked example: three producers on three nodes, one server, one
ingester (with nats-server -js on 10.0.0.5, or ds collect, which runs
the server and the ingester in one process):

   ds nats init nats://10.0.0.5:4222/ds
   ds wrap --node build-1 -o run.dss -o nats://10.0.0.5:4222/ds -- make test
   ds wrap --node build-2 -o nats://10.0.0.5:4222/ds -- make test
   ds wrap --node build-3 -o nats://10.0.0.5:4222/ds -- make test
   ds ingest --idle 5s fleet/ nats://10.0.0.5:4222/ds
   ds log --node build-2 fleet/
   ds gaps fleet/

(the three ds wrap on three machines, or in three shells: --node names
them). ds ingest stores each stream once, acknowledging each batch after
it is durable; ds log --node build-2 prints that node's lines; ds gaps
prints nothing when no frame was lost, and otherwise, for each outage of
the server that a producer's buffer (32 MiB) could not bridge, the gap
and its reason ("not delivered by nats://10.0.0.5:4222/ds: server
unreachable …"); run.dss, build-1's file, has every frame either way.

Exit status: 0 on success, 1 when the server is unreachable, refuses the
credentials, runs no JetStream or has no stream for the prefix (ds nats
status), or refuses the limits, 2 on a bad command line.`

func natsCommand() *cli.Command {
	return &cli.Command{
		Name:        "nats",
		Usage:       "create and inspect the JetStream stream of nats:// captures",
		UsageText:   "ds nats init|status URL [OPTIONS]",
		Description: natsDescription,
		Action: func(_ context.Context, c *cli.Command) error {
			if c.Args().Len() == 0 {
				return usagef("nats: name a command: init or status")
			}
			return usagef("nats: unknown command %q (init or status)", c.Args().First())
		},
		Commands: []*cli.Command{natsInitCommand(), natsStatusCommand()},
	}
}

// streamLimitFlags are the retention limits that ds nats init and
// ds collect set.
func streamLimitFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "max-age", Value: "7d", Usage: "remove messages older than `D` (7d, 36h; none: keep them)"},
		&cli.StringFlag{Name: "max-bytes", Value: "10GiB", Usage: "remove the oldest messages beyond `N` bytes in all (500MB, 10GiB; none: no limit)"},
	}
}

// streamLimits reads streamLimitFlags into o: "none" and 0 are no limit.
func streamLimits(c *cli.Command, o *fleet.StreamOptions) error {
	age, err := parseDays(c.String("max-age"))
	if err != nil {
		return usagef("--max-age %q: want a duration such as 7d, 36h or 90m, or none", c.String("max-age"))
	}
	o.MaxAge = age
	if age == 0 {
		o.MaxAge = -1
	}
	o.MaxBytes = -1
	if s := c.String("max-bytes"); !isNone(s) {
		n, err := segments.ParseSize(s)
		if err != nil {
			return usagef("--max-bytes %q: want a size such as 500MB or 10GiB, or none", s)
		}
		if n > 0 {
			o.MaxBytes = n
		}
	}
	return nil
}

func natsInitCommand() *cli.Command {
	return &cli.Command{
		Name:      "init",
		Usage:     "create the JetStream stream of a prefix, or update its limits",
		UsageText: "ds nats init URL [--max-age D] [--max-bytes N] [--replicas N] [--duplicates D]",
		Description: `Creates the JetStream stream that keeps what producers publish under
URL's prefix (see ds nats --help), or, when it exists, sets the limits
given (the others stay as they are), and prints what it did:

   created stream DS_ds: subjects ds.s.>, max age 168h0m0s, max bytes
   10 GiB, replicas 1, duplicate window 2m0s

(on one line; "updated" when it existed). Lowering a limit removes at
once the messages beyond it.

--max-age and --max-bytes are the stream's trim horizon: the oldest
messages go when a limit is reached; ds ingest warns of those it had not
stored, and a later reader sees each stream begin at its oldest message
kept. They are not losses of a producer, whose capture file keeps
everything.

Exit status: 0 on success, 1 when the server is unreachable, refuses the
credentials or the limits, or runs no JetStream, 2 on a bad command line.`,
		Flags: append(append(streamLimitFlags(),
			&cli.IntFlag{Name: "replicas", Value: 1, Usage: "keep each message on `N` servers of a cluster (1, 3 or 5)"},
			&cli.StringFlag{Name: "duplicates", Value: "2m", Usage: "store a message sent again within `D` once (at most --max-age)"},
		), natsFlags()...),
		Action: natsInitAction,
	}
}

func natsInitAction(ctx context.Context, c *cli.Command) error {
	args := c.Args().Slice()
	if len(args) != 1 {
		return usagef("nats init: want one URL, such as nats://HOST:4222/PREFIX")
	}
	if !fleet.IsURL(args[0]) {
		return usagef("nats init: %q is no nats:// or tls:// URL", args[0])
	}
	var opts fleet.StreamOptions
	if err := streamLimits(c, &opts); err != nil {
		return err
	}
	switch r := c.Int("replicas"); r {
	case 1, 3, 5:
		opts.Replicas = int(r)
	default:
		return usagef("--replicas %d: want 1, 3 or 5", r)
	}
	dup, err := parseDays(c.String("duplicates"))
	if err != nil || dup == 0 {
		return usagef("--duplicates %q: want a positive duration, such as 2m", c.String("duplicates"))
	}
	opts.Duplicates = dup
	// On a stream that exists, a limit not given stays as it is (zero:
	// fleet.InitStream keeps it); a new stream gets the defaults.
	for _, f := range []struct {
		name string
		zero func()
	}{
		{"max-age", func() { opts.MaxAge = 0 }},
		{"max-bytes", func() { opts.MaxBytes = 0 }},
		{"replicas", func() { opts.Replicas = 0 }},
		{"duplicates", func() { opts.Duplicates = 0 }},
	} {
		if !c.IsSet(f.name) {
			f.zero()
		}
	}
	auth, err := natsAuthFrom(c)
	if err != nil {
		return err
	}
	root := c.Root()
	nc, t, err := dialNATS(args[0], auth, "ds nats init", false, root.ErrWriter)
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(ctx, fleet.AdminTimeout)
	defer cancel()
	cfg, created, err := fleet.InitStream(ctx, nc, t.Prefix, opts)
	if err != nil {
		return fmt.Errorf("%s: stream %s: %w", t.Display, fleet.StreamName(t.Prefix), err)
	}
	verb := "updated"
	if created {
		verb = "created"
	}
	_, err = fmt.Fprintf(root.Writer, "%s stream %s: %s\n", verb, cfg.Name, fleet.DescribeStream(cfg))
	return err
}

func natsStatusCommand() *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "show what the JetStream stream of a prefix holds and its consumers",
		UsageText: "ds nats status URL [--json] [--utc]",
		Description: `Prints the JetStream stream that takes the subjects of URL's prefix (see
ds nats --help): its messages and bytes, its first and last messages
(their sequence numbers and the times the server stored them), how many
streams (subjects: one per node and life) it holds, its limits, and its
consumers, each with the messages it has not been delivered yet
(pending) and those delivered but not acknowledged (unacknowledged):

   stream     DS_ds on nats://127.0.0.1:4222/ds
   messages   1200 (3.1 MiB)
   first      2026-12-01T10:00:00.120+01:00 (sequence 1)
   last       2026-12-01T10:42:17.905+01:00 (sequence 1200)
   streams    3
   limits     subjects ds.s.>, max age 168h0m0s, max bytes 10 GiB, …
   consumer   ds-collect: durable, 0 pending, 0 unacknowledged

A durable consumer is an ingester's (ds ingest --durable, ds collect);
the others are readers running now (ds log, ds tail nats://…).

--json prints one JSON object instead, fields in this order: url,
stream, subjects, messages, bytes, first_seq, first_time, last_seq,
last_time (RFC 3339 in UTC, null without messages), streams, max_age_ms,
max_bytes (0: no limit), replicas, duplicate_window_ms, and consumers:
[{name, durable, pending, unacknowledged, redelivered, ack_floor_seq}].

Exit status: 0 on success, 1 when the server is unreachable, refuses the
credentials, runs no JetStream or has no stream for the prefix, 2 on a
bad command line.`,
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object"},
			&cli.BoolFlag{Name: "utc", Usage: "show times in UTC"},
		}, natsFlags()...),
		Action: natsStatusAction,
	}
}

func natsStatusAction(ctx context.Context, c *cli.Command) error {
	args := c.Args().Slice()
	if len(args) != 1 {
		return usagef("nats status: want one URL, such as nats://HOST:4222/PREFIX")
	}
	if !fleet.IsURL(args[0]) {
		return usagef("nats status: %q is no nats:// or tls:// URL", args[0])
	}
	auth, err := natsAuthFrom(c)
	if err != nil {
		return err
	}
	root := c.Root()
	nc, t, err := dialNATS(args[0], auth, "ds nats status", false, root.ErrWriter)
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(ctx, fleet.AdminTimeout)
	defer cancel()
	st, err := fleet.StreamStatus(ctx, nc, t)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		enc := json.NewEncoder(root.Writer)
		enc.SetEscapeHTML(false) // subjects hold ">"
		return enc.Encode(st)
	}
	loc := time.Local
	if c.Bool("utc") {
		loc = time.UTC
	}
	_, err = io.WriteString(root.Writer, st.Text(loc))
	return err
}

// isNone reports whether a limit flag's value says "no limit".
func isNone(s string) bool {
	return strings.EqualFold(strings.TrimSpace(s), "none")
}

// maxDays is the most days a time.Duration holds.
const maxDays = int64((1<<63 - 1) / (24 * time.Hour))

// parseDays parses a duration as time.ParseDuration does, and also with
// a leading number of days ("7d", "1d12h"); "none" and "0" are 0. It
// refuses negative durations.
func parseDays(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if isNone(t) || t == "0" {
		return 0, nil
	}
	bad := fmt.Errorf("duration %q: want a duration such as 7d, 36h or 90m", s)
	var days time.Duration
	if d, rest, ok := strings.Cut(t, "d"); ok {
		n, err := strconv.ParseInt(d, 10, 64)
		if err != nil || n < 0 || n > maxDays || !isDecimal(d) {
			return 0, bad
		}
		days = time.Duration(n) * 24 * time.Hour
		if t = rest; t == "" {
			return days, nil
		}
	}
	v, err := time.ParseDuration(t)
	if err != nil || v < 0 || days+v < days {
		return 0, bad
	}
	return days + v, nil
}

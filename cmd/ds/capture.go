package main

import (
	"errors"
	"io"
	"os"
	"runtime/debug"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/capture"
	"github.com/ds-telemetry/ds/pkg/fleet"
	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// The producers' capture flags (ds wrap, ds emit, ds host): where a
// capture goes (-o FILE|DIR|-|nats://…) and how the stream is named, read
// into captureOptions and handed to pkg/capture (startCapture), which
// opens the file and drains the endpoint into it.

// captureOptions are the producer flags shared by ds wrap and ds emit:
// where the capture goes and how the stream is named.
type captureOptions struct {
	Output string
	// NATS are the -o nats://… outputs; with them and no other -o,
	// there is no capture file (NoFile).
	NATS         []string
	NoFile       bool
	Auth         fleet.Auth
	NATSBuffer   int // bytes each NATS output holds while its server is away
	Append       bool
	Overwrite    bool // replace an existing -o FILE
	Backpressure bool // wait for room instead of dropping
	Label        string
	Node         string
	Life         uint64
	LifeSet      bool // --life given: Life is the life, 0 included
	Origin       string
	Compress     string
	Flush        time.Duration
	Sync         bool
	Queue        int // mux capacity in frames
	// FailNote says, after the first write error, which is reported on
	// stderr at once, what the command does next ("the command goes on
	// …"). Empty: the error is not reported at once (the command stops
	// soon and reports it itself).
	FailNote string
	// Poll is how often the capture loop looks for pending frames
	// between flushes (0: every 10 ms, to drain a fast producer
	// early). A producer of few frames (ds host) sets it to Flush, so
	// that the loop wakes only to flush.
	Poll time.Duration
	// Setup, when set, registers the producer's channels on the endpoint
	// before the writer starts, so that the first segment header names
	// them (ds emit's one channel).
	Setup func(*frames.Endpoint) error
}

// outputFlag is the producers' -o: one capture file, directory or -, and
// any number of nats:// outputs. Its values are never split at commas (a
// NATS URL may list servers): the commands set DisableSliceFlagSeparator.
func outputFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "output", Aliases: []string{"o"}, Usage: "capture `FILE`, directory, - for stdout, or nats://HOST:PORT/PREFIX; repeatable: one file and any number of NATS outputs (default: LABEL-TIME.dss here)"}
}

// captureFlags are the flags of the stream and capture file that every
// producer (ds wrap, ds emit, ds host) takes: --node, --life, --origin,
// --compress, --flush, --sync, and the NATS credentials.
func captureFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "node", Usage: "stream `NODE` (default: $DS_NODE, else the host name)"},
		&cli.Uint64Flag{Name: "life", Usage: "stream `LIFE`, any number from 0 to 2^64-1 (default: start time in ns since the Unix epoch)"},
		&cli.StringFlag{Name: "origin", Value: "RemoteNode", Usage: "stream `ORIGIN`: RemoteNode, Orchestrator or Bootstrap"},
		&cli.StringFlag{Name: "compress", Value: "auto", Usage: "`CODEC` for the capture: zstd, none, or auto (zstd for files, none for stdout, pipes and devices)"},
		&cli.DurationFlag{Name: "flush", Value: 100 * time.Millisecond, Usage: "drain and flush the capture every `INTERVAL`"},
		&cli.BoolFlag{Name: "sync", Usage: "fsync the capture at every flush"},
		&cli.StringFlag{Name: "nats-buffer", Value: "32MiB", Category: natsCategory, Usage: "a nats:// output holds up to `SIZE` while its server is slow or away; beyond, it loses frames (recorded)"},
	}, natsFlags()...)
}

// captureOptionsFrom reads the capture flags (captureFlags, -o, --append,
// --overwrite) of producer command c and checks what they say together.
func captureOptionsFrom(c *cli.Command) (captureOptions, error) {
	if c.IsSet("node") && c.String("node") == "" {
		return captureOptions{}, usagef("%s: --node must not be empty", c.Name)
	}
	if c.Bool("append") && c.Bool("overwrite") {
		return captureOptions{}, usagef("%s: --append and --overwrite contradict each other", c.Name)
	}
	o := captureOptions{
		Append: c.Bool("append"), Overwrite: c.Bool("overwrite"),
		Node: c.String("node"), Life: c.Uint64("life"), LifeSet: c.IsSet("life"), Origin: c.String("origin"),
		Compress: c.String("compress"), Flush: c.Duration("flush"), Sync: c.Bool("sync"),
	}
	files := 0
	seen := map[string]bool{}
	for _, out := range c.StringSlice("output") {
		if fleet.IsURL(out) {
			// The same server and prefix twice would publish every
			// message twice, the second copy dropped by the server.
			if t, err := fleet.ParseTarget(out); err == nil {
				if seen[t.Display] {
					return o, usagef("%s: -o %s given twice", c.Name, t.Display)
				}
				seen[t.Display] = true
			}
			o.NATS = append(o.NATS, out)
			continue
		}
		if files++; files > 1 {
			return o, usagef("%s: -o names one capture file, directory or - (and any number of nats:// outputs)", c.Name)
		}
		o.Output = out
	}
	if len(o.NATS) > 0 && files == 0 {
		o.NoFile = true
		if o.Append || o.Overwrite {
			return o, usagef("%s: --append and --overwrite concern a capture file; -o names only NATS outputs", c.Name)
		}
	}
	var err error
	if o.Auth, err = natsAuthFrom(c); err != nil {
		return o, err
	}
	n, err := segments.ParseSize(c.String("nats-buffer"))
	if err != nil || n < 1024 || n > 1<<40 {
		return o, usagef("%s: --nats-buffer %q: want a size from 1KiB, such as 32MiB", c.Name, c.String("nats-buffer"))
	}
	o.NATSBuffer = int(n)
	return o, nil
}

// startCapture starts the capture o describes (capture.Start) for a
// producer: it resolves the stream's node ($DS_NODE, else the host name)
// and life (the start time in ns), checks the flags' values, dials the
// NATS outputs (before the file is created, so that what a server
// refuses leaves no capture file behind), refuses a binary capture on a
// terminal and bounds the memory of the queue.
func startCapture(o captureOptions, stdout, stderr io.Writer) (*capture.Capture, error) {
	now := time.Now()
	co := capture.Options{
		Output: o.Output, NoFile: o.NoFile, Append: o.Append, Overwrite: o.Overwrite, Backpressure: o.Backpressure,
		Label: o.Label, Time: now, WriterID: "ds " + dsVersion(), Flush: o.Flush, Sync: o.Sync, Queue: o.Queue,
		FailNote: o.FailNote, Poll: o.Poll, Setup: o.Setup,
		Stream: frames.StreamID{Node: frames.NodeID(captureNode(o.Node)), Life: frames.Life(o.Life)},
	}
	if !o.LifeSet {
		// A life is any uint64 (ARCHITECTURE.md rule 2.2), 0 too: only
		// a missing --life gets the start time.
		co.Stream.Life = frames.Life(now.UnixNano())
	}
	var err error
	if co.Origin, err = frames.ParseStreamOrigin(o.Origin); err != nil {
		return nil, usagef("--origin: %v", err)
	}
	switch o.Compress {
	case "auto", "":
		co.AutoCompress = true
	case "none", "zstd":
		co.Compression, _ = segments.ParseCompression(o.Compress)
	default:
		return nil, usagef("--compress %q: want zstd, none or auto", o.Compress)
	}
	if o.Flush <= 0 {
		return nil, usagef("--flush must be positive")
	}
	if o.Queue <= 0 || o.Queue > frames.MaxMuxCapacity {
		return nil, usagef("--queue %d: want 1 to %d frames", o.Queue, frames.MaxMuxCapacity)
	}
	outs, err := dialOutputs(o, co.Stream, stderr)
	if err != nil {
		return nil, err
	}
	co.Outputs = outs.start
	if !o.NoFile && o.Output == "-" {
		if f, ok := stdout.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
			outs.closeNow()
			return nil, usagef("refusing to write a binary capture to a terminal; redirect stdout or use -o FILE")
		}
	}
	// Payloads count against the queue's 256 MiB until written, so that
	// the bound covers the batch being written too: a stalled sink holds
	// ds at about that much memory, whatever the child writes. A soft
	// memory limit keeps the garbage collector from letting the heap grow
	// to twice that (GOMEMLIMIT, when set, wins).
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(frames.DefaultMuxMaxBytes + 128<<20)
	}
	c, err := capture.Start(co, stdout, stderr)
	if err != nil {
		outs.closeNow()
		var se *capture.StreamExistsError
		if errors.As(err, &se) {
			return nil, usagef("--append: %v: a second run with the same --node and --life would start its positions again beside the first and hide one of them; give another --life (or none: each run gets its own)", err)
		}
		return nil, err
	}
	return c, nil
}

// captureNode returns the stream's node: node if given, else $DS_NODE,
// else the host name ("localhost" when there is none).
func captureNode(node string) string {
	if node == "" {
		node = os.Getenv("DS_NODE")
	}
	if node == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			h = "localhost"
		}
		node = h
	}
	return node
}

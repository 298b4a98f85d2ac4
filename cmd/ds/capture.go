package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/nats-io/nats.go"
	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/fleet"
	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// The capture machinery shared by the producers (ds wrap, ds emit): where
// a capture goes (-o FILE|DIR|-, never replacing a file), the endpoint with
// its clock and health records, and the loop that drains it into a
// segments.Writer every flush interval.

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
	// between flushes (0: every busyPoll, to drain a fast producer
	// early). A producer of few frames (ds host) sets it to Flush, so
	// that the loop wakes only to flush.
	Poll time.Duration
	// Setup, when set, registers the producer's channels on the endpoint
	// before the writer starts, so that the first segment header names
	// them (ds emit's one channel).
	Setup func(*frames.Endpoint) error
}

// capture drains an endpoint into a segments.Writer every Flush interval.
type capture struct {
	stderr   io.Writer   // where a write failure is reported at once
	gone     atomic.Bool // -o -: the capture's reader went away (EPIPE)
	busy     int         // pending frames that make the loop drain before the interval
	name     string
	toStdout bool
	file     *os.File // nil for stdout
	endpoint *frames.Endpoint
	sub      *frames.Subscription
	w        *segments.Writer
	sync     bool
	stop     chan struct{}
	done     chan error
	events   []frames.Event
	keeps    keepPolicy
	failNote string        // captureOptions.FailNote
	failed   chan struct{} // closed at the first write error (EPIPE included)
	kicked   chan struct{} // Kick: drain now
	// compressed: blocks are zstd, so a Kick drains and writes but
	// flushes (compresses a block) only at the flush interval.
	compressed bool
	// pubs are the -o nats://… outputs: fanout subscribers of their own,
	// handed every drained batch before its payloads are reused.
	pubs []*fleet.Publisher
	// conns are their connections, closed by finish.
	conns []*nats.Conn
}

// keepPolicy says which frames the segment summaries of a capture keep a
// copy of (segments.WriterOptions.Keep), by channel: the ends of the
// clock (the capture's time span) and of the health records (the
// writer's latest counters), every health record that places a loss, and
// every lifecycle record (how the command started and exited) and every
// datastream.transport record (what a NATS output lost). ds info
// then reads all of that from the summaries. Channel ids are handed out
// from 1, so a slice indexed by id holds the channels' rules.
type keepPolicy []segments.Keep

func (k *keepPolicy) declare(d frames.ChannelDescriptor) {
	var rule segments.Keep
	switch {
	case d.Name == frames.ClockChannel:
		rule = segments.KeepEnds
	case d.Name == frames.HealthChannel:
		rule = segments.KeepEnds | keepLoss
	case strings.HasPrefix(d.Name, "proc.") && strings.HasSuffix(d.Name, ".lifecycle"),
		d.Name == frames.TransportChannel: // a NATS output's losses: few, and ds info counts them
		rule = segments.KeepFrame
	default:
		return
	}
	if d.ID >= 1<<16 {
		return // not a channel ds wrap registers
	}
	for int(d.ID) >= len(*k) {
		*k = append(*k, segments.KeepNone)
	}
	(*k)[d.ID] = rule
}

// keepLoss marks the health channel: its records that carry "loss" are
// kept whole.
const keepLoss segments.Keep = 0x80

func (k keepPolicy) keep(ch frames.ChannelID, payload []byte) segments.Keep {
	if int(ch) >= len(k) {
		return segments.KeepNone
	}
	rule := k[ch]
	if rule&keepLoss != 0 {
		if bytes.Contains(payload, []byte(`"loss":`)) {
			return segments.KeepFrame
		}
		return rule &^ keepLoss
	}
	return rule
}

// newCaptureFile creates a capture named LABEL-YYYYMMDDTHHMMSS.dss in dir,
// never replacing a file: when the name is taken (another run in the same
// second), it tries LABEL-…-2.dss, -3, and so on. The file is created
// exclusively, so two runs can never pick the same name.
func newCaptureFile(dir, label string, now time.Time) (string, *os.File, error) {
	base := filepath.Join(dir, label+"-"+now.Format("20060102T150405"))
	for i := 1; ; i++ {
		name := base + ".dss"
		if i > 1 {
			name = fmt.Sprintf("%s-%d.dss", base, i)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) && i < 1000 {
			continue
		}
		if err != nil {
			return "", nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			return "", nil, fmt.Errorf("lock %s: %w", name, err)
		}
		return name, f, nil
	}
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
		&cli.Uint64Flag{Name: "life", Usage: "stream `LIFE` (default: start time in ns since the Unix epoch)"},
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
		Node: c.String("node"), Life: c.Uint64("life"), Origin: c.String("origin"),
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

func startCapture(o captureOptions, stdout, stderr io.Writer) (*capture, error) {
	now := time.Now()
	node := o.Node
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
	life := o.Life
	if life == 0 {
		life = uint64(now.UnixNano())
	}
	origin, err := frames.ParseStreamOrigin(o.Origin)
	if err != nil {
		return nil, usagef("--origin: %v", err)
	}
	auto := false
	var comp segments.Compression
	switch o.Compress {
	case "auto", "":
		auto = true
	case "none":
		comp = segments.CompressNone
	case "zstd":
		comp = segments.CompressZstd
	default:
		return nil, usagef("--compress %q: want zstd, none or auto", o.Compress)
	}
	if o.Flush <= 0 {
		return nil, usagef("--flush must be positive")
	}
	c := &capture{stderr: stderr, sync: o.Sync, stop: make(chan struct{}), done: make(chan error, 1), failNote: o.FailNote, failed: make(chan struct{}), kicked: make(chan struct{}, 1)}
	c.busy = min(busyFrames, max(1, o.Queue/2))
	// The NATS outputs are reached and checked first, so that what a
	// server refuses leaves no capture file behind.
	targets, err := c.dialPublishers(o, frames.StreamID{Node: frames.NodeID(node), Life: frames.Life(life)}, stderr)
	if err != nil {
		return nil, err
	}
	var w io.Writer
	switch {
	case o.NoFile:
		c.name = "" // set from the first NATS output below
	case o.Output == "-":
		if f, ok := stdout.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
			return nil, usagef("refusing to write a binary capture to a terminal; redirect stdout or use -o FILE")
		}
		c.name, c.toStdout, w = "stdout", true, stdout
	default:
		generated := o.Output == "" || isDir(o.Output)
		if generated {
			c.name, c.file, err = newCaptureFile(o.Output, o.Label, now)
		} else {
			c.name = o.Output
			c.file, err = openCapture(c.name, o.Append, o.Overwrite)
		}
		if err != nil {
			return nil, err
		}
		w = c.file
		if auto {
			// A file is kept as an artifact: compress it. A FIFO or a
			// device is read live, where zstd's block latency and CPU
			// buy nothing.
			if fi, err := c.file.Stat(); err == nil && fi.Mode().IsRegular() {
				comp = segments.CompressZstd
			}
		}
		if generated {
			fmt.Fprintf(stderr, "ds: capturing to %s\n", c.name)
		}
	}
	label := o.Label
	desc := frames.StreamDescriptor{Stream: frames.StreamID{Node: frames.NodeID(node), Life: frames.Life(life)}, Label: &label, Origin: origin}
	if o.Append && c.file != nil {
		if err := checkNewStream(c.file, c.name, desc.Stream); err != nil {
			c.closeFile()
			return nil, err
		}
	}
	if o.Queue <= 0 || o.Queue > frames.MaxMuxCapacity {
		return nil, usagef("--queue %d: want 1 to %d frames", o.Queue, frames.MaxMuxCapacity)
	}
	// Payloads count against the queue's 256 MiB until written, so that
	// the bound covers the batch being written too: a stalled sink holds
	// ds at about that much memory, whatever the child writes. A soft
	// memory limit keeps the garbage collector from letting the heap grow
	// to twice that (GOMEMLIMIT, when set, wins).
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(frames.DefaultMuxMaxBytes + 128<<20)
	}
	c.endpoint = frames.NewEndpoint(desc, frames.EndpointOptions{MuxCapacity: o.Queue, HoldUntilReleased: true})
	// One tick's batch holds at most the mux capacity of data frames, one
	// loss record after each of them, a clock record and the reserved
	// lane's few records: the capture's queue takes all of that, so it
	// never drops a frame that has a position.
	c.sub = c.endpoint.Subscribe(frames.SubscriptionRequest{}, frames.SubscriberOptions{Name: "capture", Capacity: 2*o.Queue + 4096})
	// The clock heads every drained batch with a reading taken then.
	_, err = frames.NewClock(c.endpoint, nil)
	if err == nil {
		err = c.endpoint.EnableHealth()
	}
	if err == nil && o.Setup != nil {
		err = o.Setup(c.endpoint)
	}
	if err != nil {
		c.closeFile()
		return nil, err
	}
	for _, d := range c.endpoint.Catalog() {
		c.keeps.declare(d)
	}
	if err := c.startPublishers(o, targets); err != nil {
		c.closeFile()
		return nil, err
	}
	c.compressed = comp == segments.CompressZstd
	if o.NoFile {
		c.endpoint.SubmitHealth()
		c.endpoint.Tick()
		c.takePublishers(true)
		go c.loop(o.Flush, o.Poll)
		return c, nil
	}
	c.w, err = segments.NewWriter(w, desc, c.endpoint.Catalog(), segments.WriterOptions{
		Compression: comp, WriterID: "ds " + dsVersion(),
		Keep: func(ch frames.ChannelID, payload []byte) segments.Keep { return c.keeps.keep(ch, payload) },
		// By default never wait on zstd, and store blocks plain while the
		// queue (counting the batch being written) is over half full: a
		// capture larger than it could be, rather than output dropped. With --backpressure the child waits
		// for compression instead, and every block is compressed.
		StoreWhenBusy: !o.Backpressure, Busy: func() bool { return c.endpoint.QueueFill() > 0.5 },
	})
	if err != nil {
		c.closeFile()
		c.closePublishersNow()
		return nil, err
	}
	// The first batch, drained now: the clock record of the start and a
	// first health record, so that every capture, even one cut short, says
	// when it began and what its writer accounted (zeros until something
	// is lost). Every later frame is in a batch of its own clock record.
	c.endpoint.SubmitHealth()
	c.endpoint.Tick()
	go c.loop(o.Flush, o.Poll)
	return c, nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// openCapture opens name for writing and takes an exclusive lock on it, so
// that two writers cannot interleave. An existing regular file is never
// replaced unless overwrite is set (asciinema's rule): without it, a new
// file is created exclusively; with appendTo the file must already be a
// capture (its first bytes are checked), or empty. A device, FIFO or pipe is
// written as it is. The file is emptied (overwrite) only once the lock is
// held.
func openCapture(name string, appendTo, overwrite bool) (*os.File, error) {
	flags := os.O_WRONLY | os.O_APPEND
	if fi, err := os.Stat(name); err == nil && fi.Mode().IsRegular() {
		switch {
		case appendTo:
			if err := checkCaptureHead(name); err != nil {
				return nil, err
			}
		case !overwrite:
			return nil, fmt.Errorf("%s exists: not replacing it (use --overwrite to replace it, --append to add a stream to a capture)", name)
		}
	} else if err != nil && errors.Is(err, fs.ErrNotExist) {
		flags |= os.O_CREATE | os.O_EXCL // lose no race with another writer
	}
	f, err := os.OpenFile(name, flags, 0o644)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return f, nil // a device, FIFO or pipe: nothing to lock or empty
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s is being written by another process (locked)", name)
		}
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	if overwrite {
		if err := f.Truncate(0); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

// checkCaptureHead refuses to append to a file that is not a DSS capture:
// its first bytes must be a segment header's magic (an empty file is fine).
func checkCaptureHead(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, len(wireformat.Magic))
	n, err := io.ReadFull(f, head)
	switch {
	case n == 0 && errors.Is(err, io.EOF):
		return nil
	case string(head[:n]) != wireformat.Magic:
		return fmt.Errorf("--append: %s is not a ds capture (its first bytes are not a DSS segment header); not appending to it", name)
	}
	return nil
}

// checkNewStream refuses to append stream to the capture w when a segment
// of f already belongs to it (an explicit --life given twice): its
// positions would start again at 0 beside the first copy's, and every
// view would take one for the other's duplicates, hiding a run. It reads
// the segment headers only (segments.BackWalker), under the lock
// openCapture took; a file that is not a regular file, or is empty, has
// none.
func checkNewStream(w *os.File, name string, stream frames.StreamID) error {
	fi, err := w.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() == 0 {
		return nil
	}
	f, err := os.Open(name) // w is write-only
	if err != nil {
		return fmt.Errorf("--append: %w", err)
	}
	defer f.Close()
	spans, err := segments.NewBackWalker(f, fi.Size()).All()
	if err != nil {
		return fmt.Errorf("--append: read %s: %w", name, err)
	}
	for _, sp := range spans {
		if sp.Header != nil && sp.Header.Stream.Stream == stream {
			return usagef("--append: stream %s is already in %s: a second run with the same --node and --life would start its positions again beside the first and hide one of them; give another --life (or none: each run gets its own)", stream, name)
		}
	}
	return nil
}

// closeFile undoes what startCapture opened before it failed: the
// capture file and the NATS connections.
func (c *capture) closeFile() {
	if c.file != nil {
		c.file.Close()
	}
	c.closePublishersNow()
}

// loop ticks the endpoint every interval, and sooner when frames pile up
// (checked every poll, busyPoll by default), and writes what it drained. Draining early keeps
// few payload buffers in flight, so they are recycled while still in cache
// instead of fresh pages being faulted in. It never blocks a producer: only
// the writer waits on the disk.
//
// Health records: every loss at the mux is written in place by the
// endpoint (EnableHealth); a datastream.health record is also submitted
// after every tick at which a loss counter changed, and once a second
// while output flows. The first write error is reported on stderr at once
// (followed by FailNote, unless that is empty; nothing is said for EPIPE on
// -o -, which sets gone)
// and closes failed; draining goes on (and discards) so that the child is
// never held up.
func (c *capture) loop(interval, poll time.Duration) {
	if poll <= 0 {
		poll = busyPoll
	}
	poll = min(poll, interval)
	t := time.NewTicker(poll)
	defer t.Stop()
	var err error
	lastFlush, lastHealth := time.Now(), time.Now()
	last := c.endpoint.Health()
	for {
		kick := false
		select {
		case <-c.stop:
			c.done <- err
			return
		case <-t.C:
		case <-c.kicked:
			kick = true
		}
		now := time.Now()
		flush := (kick && !c.compressed) || now.Sub(lastFlush) >= interval
		if !flush && !kick && c.endpoint.Pending() < c.busy {
			continue
		}
		if flush {
			lastFlush = now
		}
		busy := c.endpoint.Pending() > 0
		c.endpoint.Tick()
		if e := c.write(flush); e != nil && err == nil {
			err = e // sticky in the writer too
			close(c.failed)
			if c.toStdout && errors.Is(e, syscall.EPIPE) {
				// As in cmd | head: the command's stdout now leads into
				// a pipe nobody reads, its next write gets SIGPIPE, and
				// nothing is said.
				c.gone.Store(true)
			} else if c.failNote != "" {
				fmt.Fprintf(c.stderr, "ds: capture %s: %v; %s\n", c.name, e, c.failNote)
			}
		}
		h := c.endpoint.Health()
		if lossChanged(h, last) || (busy && now.Sub(lastHealth) >= time.Second) {
			c.endpoint.SubmitHealth()
			lastHealth, last = now, h
		}
	}
}

// Kick makes the loop drain now, without waiting for its timer: a
// producer of a few records at its own pace (ds host, after each sample)
// gets them positions and a clock reading at once, and the loop need not
// wake on a short timer to find them. An uncompressed capture (a pipe, a
// FIFO: read live) is flushed at each kick too; a compressed one at its
// flush interval, so that a block holds many samples. It never blocks.
func (c *capture) Kick() {
	select {
	case c.kicked <- struct{}{}:
	default: // a kick is pending already
	}
}

// lossChanged reports whether a loss counter moved between two health
// readings.
func lossChanged(h, last frames.Health) bool {
	return h.MuxDropped != last.MuxDropped || h.UnknownChannel != last.UnknownChannel ||
		h.Bitbucketed != last.Bitbucketed || h.SubscriberDropped != last.SubscriberDropped
}

// A capture loop drains early, every busyPoll, once busyFrames frames wait
// (or half its queue, when the queue is smaller).
const (
	busyPoll   = 10 * time.Millisecond
	busyFrames = 16
)

// warnLoss prints one warning on stderr when output was dropped: how many
// frames and bytes, and the flag that avoids it (with --backpressure set,
// only records that never wait, ds wrap --host's, can be dropped).
func (c *capture) warnLoss(stderr io.Writer, backpressure bool) {
	h := c.endpoint.Health()
	// The capture's own subscriber: what the NATS outputs lost is theirs,
	// reported apart (reportPublisher).
	written := c.sub.Dropped()
	if c.w == nil {
		written = 0
	}
	if h.MuxDropped == 0 && written == 0 {
		return
	}
	hint := " Use --backpressure to slow the command down instead of dropping."
	if backpressure {
		hint = " (The command waited for room; host samples do not wait.)"
	}
	fmt.Fprintf(stderr, "ds: warning: the capture %s could not keep up: %d frames (%d bytes) were dropped at the queue and %d by the writer; ds log shows where.%s\n",
		c.name, h.MuxDropped, h.MuxDroppedBytes, written, hint)
}

// write writes what the subscription holds; with flush, it also flushes
// the writer (and syncs with --sync). Early drains, between flush
// intervals, only write: flushing waits for the zstd blocks in flight, and
// a drain that waited on them every 10 ms would let a fast child fill the
// queue.
func (c *capture) write(flush bool) error {
	c.events = c.sub.DrainInto(c.events[:0])
	// The NATS outputs copy the same frames first: the loop below hands
	// the payloads back for reuse.
	c.takePublishers(flush)
	if c.w == nil {
		for _, ev := range c.events {
			if ev.Kind == frames.EventFrame {
				c.endpoint.Release(cap(ev.Frame.Payload))
				releasePayload(ev.Frame.Payload)
			}
		}
		clear(c.events)
		return nil
	}
	var err error
	for _, ev := range c.events {
		switch ev.Kind {
		case frames.EventChannelDeclared:
			c.keeps.declare(*ev.Channel)
			if err == nil {
				err = c.w.DeclareChannel(*ev.Channel)
			}
		case frames.EventFrame:
			if err == nil {
				err = c.w.WriteFrame(frames.Frame{Channel: ev.Frame.Channel.Channel, Position: ev.Frame.Position, Payload: ev.Frame.Payload})
			}
			// Written (copied) or not, the payload is done with: hand
			// its memory back to the queue's bound and reuse it.
			c.endpoint.Release(cap(ev.Frame.Payload))
			releasePayload(ev.Frame.Payload)
		}
	}
	if err != nil {
		clear(c.events)
		return err
	}
	clear(c.events)
	if !flush {
		return nil
	}
	if err := c.w.Flush(); err != nil {
		return err
	}
	if c.sync {
		return c.w.Sync()
	}
	return nil
}

// finish stops the loop, writes the final health and clock records and
// StreamEnded, and closes the file.
func (c *capture) finish() error {
	close(c.stop)
	err := <-c.done
	c.endpoint.Tick()
	if e := c.write(true); err == nil {
		err = e
	}
	// The NATS outputs get up to natsSettle to deliver what they hold,
	// so that the records of what they lost (once their server is back)
	// are in the stream before it ends, then up to natsGrace-natsSettle
	// to deliver its end: separate budgets, so that an output whose
	// server is dead at the end does not use up the time another needs
	// for its last message.
	ctx, cancel := context.WithTimeout(context.Background(), natsSettle)
	defer cancel()
	if c.settlePublishers(ctx) {
		c.endpoint.Tick()
		if e := c.write(true); err == nil {
			err = e
		}
	}
	// The last batch: a health record after everything, headed by the
	// clock record of the end (read at that drain, so clock records never
	// go back in position order).
	c.endpoint.SubmitHealth()
	c.endpoint.End()
	if e := c.write(true); err == nil {
		err = e
	}
	// The file first, then the NATS outputs, which may wait for a server
	// (at most natsGrace): the file is complete whatever the network does.
	if c.w != nil {
		if e := c.w.Close(); err == nil {
			err = e
		}
	}
	if c.file != nil {
		if c.sync {
			if e := c.file.Sync(); err == nil {
				err = e
			}
		}
		if e := c.file.Close(); err == nil {
			err = e
		}
	}
	cctx, ccancel := context.WithTimeout(context.Background(), natsGrace-natsSettle)
	defer ccancel()
	c.closePublishers(cctx)
	return err
}

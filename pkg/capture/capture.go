package capture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// Options configures [Start]. Stream, Flush and Queue are required; the
// caller (cmd/ds) resolves defaults such as the node name and checks the
// values its flags gave.
type Options struct {
	// Output is where the capture goes: "" or an existing directory for a
	// generated name LABEL-YYYYMMDDTHHMMSS.dss there (said on the warning
	// writer), "-" for the stdout writer given to Start, else a file name
	// (a regular file, a FIFO or a device).
	Output string
	// NoFile: there is no capture file, only Outputs (ds wrap -o
	// nats://… alone); Output is ignored.
	NoFile bool
	// Append adds the stream to an existing capture file (which must be
	// a capture, or empty, and must not hold Stream already: a
	// *StreamExistsError). Overwrite replaces an existing file. Neither:
	// an existing regular file is an error (never replaced).
	Append    bool
	Overwrite bool
	// Backpressure: the producer waits for room (frames.Producer's
	// SubmitWait) instead of dropping; every zstd block is then
	// compressed, even while the queue is busy.
	Backpressure bool
	// Label is the stream's label (ds info), and the prefix of a
	// generated file name.
	Label string
	// Stream names the stream (node and life); Origin is its origin.
	Stream frames.StreamID
	Origin frames.StreamOrigin
	// Compression of the capture file's blocks. With AutoCompress it is
	// chosen instead: zstd for a regular file (kept as an artifact),
	// none for stdout, a FIFO or a device (read live, where zstd's block
	// latency buys nothing).
	Compression  segments.Compression
	AutoCompress bool
	// Time names a generated file; zero means time.Now().
	Time time.Time
	// WriterID is the segment headers' writer identity ("ds 0.3.0").
	WriterID string
	// Flush is how often the loop drains and flushes the file (must be
	// positive); Sync adds an fsync at every flush and at the end.
	Flush time.Duration
	Sync  bool
	// Queue is the mux capacity in frames: 1 to frames.MaxMuxCapacity.
	Queue int
	// FailNote says, after the first write error, which is reported on
	// the warning writer at once, what the command does next ("the
	// command goes on …"). Empty: the error is not reported at once (the
	// command stops soon and reports it itself).
	FailNote string
	// Poll is how often the loop looks for pending frames between
	// flushes (0: every 10 ms, to drain a fast producer early). A
	// producer of few frames (ds host) sets it to Flush, so that the loop
	// wakes only to flush (and at Kick).
	Poll time.Duration
	// Setup, when set, registers the producer's channels on the endpoint
	// before the writer starts, so that the first segment header names
	// them (ds emit's one channel).
	Setup func(*frames.Endpoint) error
	// Outputs, when set, subscribes the further outputs (NATS
	// publishers) to the endpoint, after Setup and before the first
	// drain. An error fails Start. The outputs are the capture's from
	// then on: Finish closes them. (What the caller opened for them, a
	// connection, is the caller's to close when Start fails.)
	Outputs func(*frames.Endpoint) ([]Output, error)
}

// A Capture drains an endpoint into a segments.Writer (and its Outputs)
// every flush interval, from the goroutine Start starts, until
// [Capture.Finish]. Its methods are safe to call from any goroutine,
// except Finish, which is called once.
type Capture struct {
	warn     io.Writer   // where a write failure is reported at once
	gone     atomic.Bool // Output "-": the capture's reader went away (EPIPE)
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
	keeps    KeepPolicy
	failNote string        // Options.FailNote
	failed   chan struct{} // closed at the first write error (EPIPE included)
	kicked   chan struct{} // Kick: drain now
	// compressed: blocks are zstd, so a Kick drains and writes but
	// flushes (compresses a block) only at the flush interval.
	compressed bool
	// outs are the further outputs: fanout subscribers of their own,
	// handed every drained batch before its payloads are reused.
	outs []Output
}

// A capture loop drains early, every busyPoll, once busyFrames frames wait
// (or half its queue, when the queue is smaller).
const (
	busyPoll   = 10 * time.Millisecond
	busyFrames = 16
)

// Start opens the capture o describes, creates its endpoint (with the
// datastream.clock and datastream.health channels, then Setup's and the
// Outputs), writes the first batch (a clock record of the start and a
// first health record) and starts the drain loop. stdout is where Output
// "-" writes (Start does not check that it is not a terminal); warn gets
// the warnings, each a line that begins "ds: ". Errors: the file's (it
// exists and is not replaced, is locked by another writer, is not a
// capture, cannot be created), a *StreamExistsError with Append, Setup's
// and Outputs' errors, and bad Flush or Queue values. A Start that fails
// leaves no file it created open (a file created empty stays).
func Start(o Options, stdout, warn io.Writer) (*Capture, error) {
	now := o.Time
	if now.IsZero() {
		now = time.Now()
	}
	if o.Flush <= 0 {
		return nil, errors.New("capture: the flush interval must be positive")
	}
	if o.Queue <= 0 || o.Queue > frames.MaxMuxCapacity {
		return nil, fmt.Errorf("capture: queue of %d frames: want 1 to %d", o.Queue, frames.MaxMuxCapacity)
	}
	comp := o.Compression
	if o.AutoCompress {
		comp = segments.CompressNone
	}
	c := &Capture{warn: warn, sync: o.Sync, stop: make(chan struct{}), done: make(chan error, 1), failNote: o.FailNote, failed: make(chan struct{}), kicked: make(chan struct{}, 1)}
	c.busy = min(busyFrames, max(1, o.Queue/2))
	var w io.Writer
	var err error
	switch {
	case o.NoFile:
		c.name = "" // set from the first output below
	case o.Output == "-":
		c.name, c.toStdout, w = "stdout", true, stdout
	default:
		generated := o.Output == "" || isDir(o.Output)
		if generated {
			c.name, c.file, err = newFile(o.Output, o.Label, now)
		} else {
			c.name = o.Output
			c.file, err = openFile(c.name, o.Append, o.Overwrite)
		}
		if err != nil {
			return nil, err
		}
		w = c.file
		if o.AutoCompress {
			// A file is kept as an artifact: compress it. A FIFO or a
			// device is read live, where zstd's block latency and CPU
			// buy nothing.
			if fi, err := c.file.Stat(); err == nil && fi.Mode().IsRegular() {
				comp = segments.CompressZstd
			}
		}
		if generated {
			fmt.Fprintf(warn, "ds: capturing to %s\n", c.name)
		}
	}
	label := o.Label
	desc := frames.StreamDescriptor{Stream: o.Stream, Label: &label, Origin: o.Origin}
	if o.Append && c.file != nil {
		if err := checkNewStream(c.file, c.name, desc.Stream); err != nil {
			c.closeFile()
			return nil, err
		}
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
		c.keeps.Declare(d)
	}
	if o.Outputs != nil {
		if c.outs, err = o.Outputs(c.endpoint); err != nil {
			c.outs = nil
			c.closeFile()
			return nil, err
		}
		if c.name == "" && len(c.outs) > 0 {
			c.name = c.outs[0].Name()
		}
	}
	c.compressed = comp == segments.CompressZstd
	if o.NoFile {
		c.endpoint.SubmitHealth()
		c.endpoint.Tick()
		c.takeOutputs(true)
		go c.loop(o.Flush, o.Poll)
		return c, nil
	}
	c.w, err = segments.NewWriter(w, desc, c.endpoint.Catalog(), segments.WriterOptions{
		Compression: comp, WriterID: o.WriterID,
		Keep: func(ch frames.ChannelID, payload []byte) segments.Keep { return c.keeps.Keep(ch, payload) },
		// By default never wait on compression: zstd, then S2 when zstd
		// falls behind, and blocks stored plain while the queue (counting
		// the batch being written) is over three quarters full: a capture
		// larger than it could be, rather than output dropped (at half
		// full, as before S2, cat(1) of log text made captures 3.3 to 3.9
		// times zstd -3's, at 0.85 frames were dropped in 3 runs of 6; at
		// 0.75, 2 to 3 times and none in 16: segments.Writer.chooseCodec).
		// With Backpressure the producer waits for compression instead,
		// and every block is compressed.
		StoreWhenBusy: !o.Backpressure, Busy: func() bool { return c.endpoint.QueueFill() > 0.75 },
	})
	if err != nil {
		c.closeFile()
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

// closeFile undoes what Start opened before it failed: the capture file.
func (c *Capture) closeFile() {
	if c.file != nil {
		c.file.Close()
	}
}

// Endpoint returns the stream's endpoint: producers register channels and
// submit frames through its Producer.
func (c *Capture) Endpoint() *frames.Endpoint { return c.endpoint }

// Name returns the capture's name for messages: the file name, "stdout",
// or, without a file, the first output's Name.
func (c *Capture) Name() string { return c.name }

// ToStdout reports whether the capture goes to the stdout writer
// (Options.Output "-").
func (c *Capture) ToStdout() bool { return c.toStdout }

// StdoutGone reports whether a capture on stdout met EPIPE: its reader
// went away (the caller's next write to stdout would get SIGPIPE).
func (c *Capture) StdoutGone() bool { return c.gone.Load() }

// Failed is closed at the first error writing the capture (EPIPE
// included). The loop goes on draining, and discards, so that the
// producer is never held up; Finish returns the error.
func (c *Capture) Failed() <-chan struct{} { return c.failed }

// Finishing is closed when Finish begins: a producer waiting for room in
// the queue (SubmitWait) should give up then.
func (c *Capture) Finishing() <-chan struct{} { return c.stop }

// Dropped returns the frames lost by the capture itself: at the queue
// (the mux was full, before they got a position) and by its own
// subscriber (the writer's queue). What Outputs lost is theirs.
func (c *Capture) Dropped() (queue, writer uint64) {
	return c.endpoint.Health().MuxDropped, c.sub.Dropped()
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
// while output flows. The first write error is reported on the warning
// writer at once (followed by FailNote, unless that is empty; nothing is
// said for EPIPE on stdout, which sets gone) and closes failed; draining
// goes on (and discards) so that the producer is never held up.
func (c *Capture) loop(interval, poll time.Duration) {
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
				fmt.Fprintf(c.warn, "ds: capture %s: %v; %s\n", c.name, e, c.failNote)
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
func (c *Capture) Kick() {
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

// WarnLoss writes one warning to w when output was dropped: how many
// frames and bytes, and the flag that avoids it (with backpressure set,
// only records that never wait, ds wrap --host's, can be dropped). Call
// it after Finish.
func (c *Capture) WarnLoss(w io.Writer, backpressure bool) {
	h := c.endpoint.Health()
	// The capture's own subscriber: what the outputs lost is theirs,
	// reported apart (reportOutput).
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
	fmt.Fprintf(w, "ds: warning: the capture %s could not keep up: %d frames (%d bytes) were dropped at the queue and %d by the writer; ds log shows where.%s\n",
		c.name, h.MuxDropped, h.MuxDroppedBytes, written, hint)
}

// write writes what the subscription holds; with flush, it also flushes
// the writer (and syncs with Sync). Early drains, between flush
// intervals, only write: flushing waits for the zstd blocks in flight, and
// a drain that waited on them every 10 ms would let a fast producer fill
// the queue.
func (c *Capture) write(flush bool) error {
	c.events = c.sub.DrainInto(c.events[:0])
	// The outputs copy the same frames first: the loop below hands the
	// payloads back for reuse.
	c.takeOutputs(flush)
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
			c.keeps.Declare(*ev.Channel)
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

// Finish stops the loop, writes the final health and clock records and
// StreamEnded, and closes the file (it does not close the stdout
// writer); then it gives the outputs up to 5 s to deliver what they hold
// (2 s of it before the stream ends, so that the records of what they
// lost are in the stream), closes them and warns of what each lost. It
// returns the first error writing the capture (the one that closed
// Failed, if any), or an [*OutputsLostError] when the outputs were its
// only copies and each lost frames. Call it once.
func (c *Capture) Finish() error {
	close(c.stop)
	err := <-c.done
	c.endpoint.Tick()
	if e := c.write(true); err == nil {
		err = e
	}
	// The outputs get up to outputSettle to deliver what they hold, so
	// that the records of what they lost (once their server is back) are
	// in the stream before it ends, then up to outputGrace-outputSettle
	// to deliver its end: separate budgets, so that an output whose
	// server is dead at the end does not use up the time another needs
	// for its last message.
	ctx, cancel := context.WithTimeout(context.Background(), outputSettle)
	defer cancel()
	if c.settleOutputs(ctx) {
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
	// The file first, then the outputs, which may wait for a server (at
	// most outputGrace): the file is complete whatever the network does.
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
	cctx, ccancel := context.WithTimeout(context.Background(), outputGrace-outputSettle)
	defer ccancel()
	if e := c.closeOutputs(cctx); err == nil {
		err = e
	}
	return err
}

// Package capture is the write path of the producers (ds wrap, ds emit,
// ds host; see ds(1)): it joins a stream's endpoint and fanout (package
// frames) to a segments.Writer and to any further [Output] (a NATS
// publisher), and drains the one into the others every flush interval.
//
// The write path reads downward:
//
//	proc, hostprobe, LineFramer → frames.Endpoint (mux, fanout)
//	  → capture (drain loop, keep policy, losses)
//	  → segments.Writer → wireformat → the capture file or stdout
//	  → Outputs (each a fanout subscriber of its own)
//
// [Start] creates the endpoint (with its datastream.clock and
// datastream.health channels), opens the capture file ([Options].Output:
// a generated LABEL-YYYYMMDDTHHMMSS.dss in a directory, a named file
// that is never replaced unless Overwrite is set, or stdout) and starts
// the drain loop. The producer submits frames to [Capture.Endpoint]; the
// loop ticks the endpoint every Options.Flush (and sooner when frames
// pile up, or at [Capture.Kick]), writes what was drained and flushes the
// file. [Capture.Finish] ends the stream (StreamEnded) and closes the
// file, then gives the outputs a bounded time to deliver their last
// messages.
//
// The loop never blocks a producer: a full queue drops frames before
// they get a position (or, with Backpressure, the producer waits), and
// every loss is written into the capture where it happened as a
// datastream.health record (ds-format(5)). Warnings are written to the
// io.Writer given to Start, as lines that begin "ds: ".
//
// [LineFramer] and [Emitter] cut a byte stream (ds emit's stdin) into
// text, JSON or bytes frames. [AllocPayload] hands out the pooled payload
// buffers the loop recycles once a frame is written.
//
// The package imports frames, segments and wireformat; it never imports
// the views, the CLI or a network transport: callers dial their outputs
// and hand them in as [Output] values. It returns errors and reads no
// environment variables, flags or terminals.
package capture

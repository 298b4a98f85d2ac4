package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/proc"
	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// Frame size limits of ds emit, in bytes.
const (
	// emitMaxFrame is the largest text or bytes frame, and the size of one
	// read of stdin: ds wrap's (proc.DefaultMaxFrameSize, 256 KiB).
	emitMaxFrame = proc.DefaultMaxFrameSize
	// emitMaxRecord is the largest JSON line, without its newline: the
	// largest frame payload the format holds (wireformat.MaxPayloadSize,
	// 1 MiB). A record cannot be cut, so a longer line is refused.
	emitMaxRecord = wireformat.MaxPayloadSize
)

// emitIdleFlush is how long a partial text line (bytes after the last
// newline) waits for its newline before it is submitted as a frame of its
// own: ds wrap's proc.DefaultIdleFlush.
const emitIdleFlush = proc.DefaultIdleFlush

// emitStopSignals end ds emit cleanly.
var emitStopSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

func emitCommand() *cli.Command {
	return &cli.Command{
		Name:      "emit",
		Usage:     "record stdin as frames of one channel",
		UsageText: "ds emit -c CHANNEL [--content text|json|bytes] [--schema S] [-o FILE|DIR|-] [flags]",
		Description: `Reads stdin and records it, as it arrives, as frames of one channel of a
new stream in a DSS capture, with the writer's own datastream.clock and
datastream.health records, exactly as ds wrap writes them:

   journalctl -f | ds emit -c sys.journal -o journal.dss
   producer | ds emit -c app.metrics --content json -o metrics.dss
   printf 'deploy started\n' | ds emit -c ops.notes --append -o run.dss

--content text (the default; a TextStream channel): one frame per line, its
newline kept, bytes verbatim (CR, NUL, invalid UTF-8 included). A line
longer than 256 KiB is cut into 256 KiB frames; a partial line (no newline
yet) is submitted as a frame of its own after 50 ms without its newline, at
EOF and at a stop signal (ds wrap cuts long lines and flushes partial ones
the same way, though it packs several lines into a frame). Views join
a text channel's consecutive frames until a newline, so a split line shows
once, whole.

--content json (a JsonRecord channel, with --schema S if given): each line
must be one JSON value, a record, stored without its line ending (LF or
CRLF). Blank lines (empty or white space only) are skipped silently. A line
that is not one JSON value, or is longer than 1 MiB, is refused with
"ds: stdin:LINE: invalid JSON: …" (or "… record longer than …") on stderr
and not recorded; every other line is, and ds emit then exits 1 at the end,
after a line that counts the refused lines. A last line without a newline
is a record too.

--content bytes (a Bytes channel): one frame per read of stdin, at most
256 KiB each, bytes verbatim.

Each frame is submitted as it is read and written at the next --flush
interval (100 ms by default), so a reader of -o - or of the file sees it
within that. Back-pressure: when the capture cannot keep up (a slow disk,
a slow -o - reader), ds emit stops reading stdin until there is room, so
the pipe slows its writer as any pipe would; nothing is dropped.

EOF, or INT, TERM or HUP, ends the stream cleanly: what was read is
recorded (a partial line included), the last clock and health records and
StreamEnded are written, and ds emit exits 0. After a stop signal stdin is
no longer read: bytes still in the pipe are left there. A second signal
gives up waiting for room in the capture's queue; a line that then could
not be recorded is counted on stderr and the status is 1.

Channel names are any UTF-8 text without white space or control
characters, recorded exactly as given (no rewriting). They cannot be
empty, start with - (read as an option by every tool), end with * (ds log
-c would read it as a prefix), or start with datastream. (the writer's own
channels).

The stream's label (ds info) and the generated file name
(LABEL-YYYYMMDDTHHMMSS.dss, with -o DIR or no -o) come from --label, or
else from the channel name, cleaned as ds wrap cleans labels
(sys.journal → sys_journal).

-o FILE never replaces an existing file: use --overwrite to replace it, or
--append to add the stream to an existing capture. -o - writes the capture
to stdout (refused on a terminal); when its reader goes away, ds emit ends
the stream and exits 0, as ds log does. Files are zstd-compressed by default
(--compress auto); a capture on stdout, a pipe or a device is not.

Exit status: 0 at EOF or a stop signal with every line recorded; 1 when a
line was refused (json) or could not be recorded, when stdin could not be
read, or when the capture could not be written; 2 for a usage error (bad
channel name, flags).`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "channel", Aliases: []string{"c"}, Usage: "record stdin on `CHANNEL` (required; dotted name, e.g. sys.journal)"},
			&cli.StringFlag{Name: "content", Value: "text", Usage: "`KIND` of stdin: text (a frame per line), json (a record per line) or bytes (a frame per read)"},
			&cli.StringFlag{Name: "schema", Usage: "with --content json: the records' `SCHEMA` name in the catalog (default: none)"},
			outputFlag(),
			&cli.StringFlag{Name: "label", Usage: "stream `LABEL` and file name prefix (default: the channel name, cleaned)"},
			&cli.BoolFlag{Name: "append", Usage: "add the stream to an existing capture (refused when the file is not a capture)"},
			&cli.BoolFlag{Name: "overwrite", Usage: "replace an existing -o FILE (by default an existing file is never replaced)"},
		}, captureFlags()...),
		DisableSliceFlagSeparator: true, // -o nats://h1,h2/ds lists servers
		Action:                    emitAction,
	}
}

// emitOptions are ds emit's settings: the channel and how stdin is cut,
// and where the capture goes.
type emitOptions struct {
	Channel string
	Mode    emitMode
	Schema  string // JSON schema name; "" for none
	Capture captureOptions
}

func emitAction(ctx context.Context, c *cli.Command) error {
	if c.Args().Len() > 0 {
		return usagef("emit: unexpected argument %q (ds emit reads stdin only)", c.Args().First())
	}
	copts, err := captureOptionsFrom(c)
	if err != nil {
		return err
	}
	copts.Backpressure, copts.Queue = true, frames.DefaultMuxCapacity
	opts := emitOptions{Channel: c.String("channel"), Schema: c.String("schema"), Capture: copts}
	if opts.Mode, err = parseEmitMode(c.String("content")); err != nil {
		return err
	}
	if opts.Schema != "" && opts.Mode != emitJSON {
		return usagef("emit: --schema applies to --content json only")
	}
	if err := checkChannelName(opts.Channel); err != nil {
		return err
	}
	if opts.Capture.Label, err = emitLabel(c.String("label"), c.IsSet("label"), opts.Channel, c.Root().ErrWriter); err != nil {
		return err
	}
	sigs := make(chan os.Signal, 4)
	// SIGPIPE is caught so that -o - into a pipe whose reader went away
	// gives the capture an EPIPE (the end of the stream) instead of
	// killing ds before the capture ends.
	signal.Notify(sigs, append(emitStopSignals, syscall.SIGPIPE)...)
	defer signal.Stop(sigs)
	root := c.Root()
	return runEmit(opts, root.Reader, root.Writer, root.ErrWriter, sigs)
}

// parseEmitMode reads --content.
func parseEmitMode(s string) (emitMode, error) {
	switch s {
	case "text":
		return emitText, nil
	case "json":
		return emitJSON, nil
	case "bytes":
		return emitBytes, nil
	}
	return 0, usagef("emit: --content %q: want text, json or bytes", s)
}

// checkChannelName enforces the channel name rules of ds emit (see its
// description): those of the catalog (frames.Catalog.Register: not empty,
// valid UTF-8; CONFORMANCE.md §6.2), plus what keeps the name usable in
// views: no white space or control characters, no leading -, no trailing
// *, and not in the writer's own datastream. namespace.
func checkChannelName(name string) error {
	switch {
	case name == "":
		return usagef("emit: a channel name is needed: ds emit -c CHANNEL (an empty name is not one)")
	case !utf8.ValidString(name):
		return usagef("emit: -c %q: %v", name, frames.ErrBadChannelName)
	case strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return usagef("emit: -c %q: a channel name cannot hold white space or control characters", name)
	case strings.HasPrefix(name, "-"):
		return usagef("emit: -c %q: a channel name cannot start with -", name)
	case strings.HasSuffix(name, "*"):
		return usagef("emit: -c %q: a channel name cannot end with * (ds log -c NAME* selects a prefix)", name)
	case strings.HasPrefix(name, "datastream."):
		return usagef("emit: -c %q: datastream.* channels are the writer's own", name)
	}
	return nil
}

// emitLabel returns the stream label: --label cleaned as ds wrap cleans
// it (a rewrite is said once on stderr, a label that breaks
// proc.LabelRule is refused), or else the channel name cleaned silently,
// or "emit" when nothing of it is left.
func emitLabel(given string, set bool, channel string, stderr io.Writer) (string, error) {
	if !set {
		if l, err := proc.CleanLabel(channel); err == nil {
			return l, nil
		}
		return "emit", nil
	}
	l, err := proc.CleanLabel(given)
	if err != nil {
		return "", usagef("emit: --label: %v", err)
	}
	if l != given {
		fmt.Fprintf(stderr, "ds: label %q is used as %q (labels are %s)\n", given, l, proc.LabelChars)
	}
	return l, nil
}

// runEmit records stdin on opts.Channel until EOF, a stop signal on sigs
// (INT, TERM, HUP; SIGPIPE is ignored there), or a capture that fails, and
// then ends the stream. Refused JSON lines are reported on stderr as they
// are met; the returned error says how many there were.
func runEmit(opts emitOptions, stdin io.Reader, stdout, stderr io.Writer, sigs <-chan os.Signal) error {
	content := frames.TextStream()
	switch opts.Mode {
	case emitJSON:
		content = frames.JSONRecord(opts.Schema)
	case emitBytes:
		content = frames.Bytes()
	}
	var ch frames.ChannelID
	copts := opts.Capture
	copts.Setup = func(e *frames.Endpoint) (err error) {
		ch, err = e.RegisterChannel(opts.Channel, content)
		return err
	}
	cap, err := startCapture(copts, stdout, stderr)
	if err != nil {
		return err
	}
	in, interrupt, release := interruptible(stdin)
	defer release()
	quit := make(chan struct{}) // closed on a second stop signal
	e := &emitter{fr: lineFramer{mode: opts.Mode}}
	var lost, lostBytes int
	producer := cap.endpoint.Producer()
	e.fr.submit = func(payload []byte) {
		n := len(payload)
		if !producer.SubmitWait(ch, payload, quit) {
			lost++
			lostBytes += n
		}
	}
	e.fr.refuse = func(line uint64, err error) {
		fmt.Fprintf(stderr, "ds: stdin:%d: %v\n", line, err)
	}
	readDone := make(chan error, 1)
	go e.read(in, readDone)

	var tick <-chan time.Time
	if opts.Mode == emitText {
		t := time.NewTicker(emitIdleFlush / 2)
		defer t.Stop()
		tick = t.C
	}
	var readErr error
	reading := true
wait:
	for {
		select {
		case readErr = <-readDone:
			reading = false
			break wait
		case now := <-tick:
			e.idle(now)
		case sig := <-sigs:
			if sig != syscall.SIGPIPE {
				break wait
			}
		case <-cap.failed:
			break wait
		}
	}
	if reading {
		// Stop reading: interrupt the read in progress and wait for the
		// reader to record what it has read; where a read cannot be
		// interrupted (a terminal), it is abandoned. A second stop signal
		// gives up waiting for room in the queue.
		if interrupt() {
			for reading {
				select {
				case readErr = <-readDone:
					reading = false
				case sig := <-sigs:
					if sig != syscall.SIGPIPE {
						closeOnce(quit)
					}
				}
			}
		}
		if errors.Is(readErr, os.ErrDeadlineExceeded) {
			readErr = nil
		}
	}
	e.stop() // the partial line, if any
	cerr := cap.finish()
	if errors.Is(readErr, io.EOF) {
		readErr = nil
	}
	var errs []error
	if cerr != nil && !(cap.toStdout && errors.Is(cerr, syscall.EPIPE)) {
		errs = append(errs, fmt.Errorf("capture %s: %w; stdin was not recorded from then on", cap.name, cerr))
	}
	if readErr != nil {
		errs = append(errs, fmt.Errorf("stdin: read: %w", readErr))
	}
	if r := e.fr.refused; r > 0 {
		errs = append(errs, fmt.Errorf("emit: %d of %d lines refused (not recorded; see above); the other lines are in %s", r, e.fr.lines(), cap.name))
	}
	if lost > 0 {
		errs = append(errs, fmt.Errorf("emit: %s (%d bytes) read from stdin could not be recorded: the stream ended while they waited for room in the queue", lossCount(uint64(lost), "frame"), lostBytes))
	}
	if h, written := cap.endpoint.Health(), cap.sub.Dropped(); h.MuxDropped+written > 0 {
		errs = append(errs, fmt.Errorf("emit: the capture %s dropped %d frames at the queue and %d at the writer; ds log shows where", cap.name, h.MuxDropped, written))
	}
	return errors.Join(errs...)
}

func closeOnce(c chan struct{}) {
	select {
	case <-c:
	default:
		close(c)
	}
}

// interruptible returns a reader of stdin whose blocking read can be ended
// by interrupt (which reports whether it can), and release, which undoes
// what it set up. For a pipe, FIFO or socket it reads a duplicate of the
// descriptor in non-blocking mode through Go's poller, so that a read
// deadline ends a read in progress; release puts the descriptor back in
// blocking mode (the mode is shared with every holder of the pipe). Any
// other reader is returned as it is, and interrupt ends its read only if it
// has a read deadline that works.
func interruptible(r io.Reader) (in io.Reader, interrupt func() bool, release func()) {
	deadline := func(d interface{ SetReadDeadline(time.Time) error }) func() bool {
		return func() bool { return d.SetReadDeadline(time.Now()) == nil }
	}
	noop := func() {}
	f, ok := r.(*os.File)
	if !ok {
		if d, ok := r.(interface{ SetReadDeadline(time.Time) error }); ok {
			return r, deadline(d), noop
		}
		return r, func() bool { return false }, noop
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return r, deadline(f), noop
	}
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		return r, deadline(f), noop
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return r, deadline(f), noop
	}
	nf := os.NewFile(uintptr(fd), f.Name())
	return nf, deadline(nf), func() {
		_ = syscall.SetNonblock(fd, false)
		nf.Close()
	}
}

// emitter guards a lineFramer shared by the goroutine that reads stdin and
// the one that flushes idle partial lines and ends the stream.
type emitter struct {
	mu      sync.Mutex
	fr      lineFramer
	stopped bool // after stop: a read still in progress is not recorded
}

// read reads r into the framer until an error (io.EOF at the end, or
// os.ErrDeadlineExceeded when interrupted), which it sends on done.
func (e *emitter) read(r io.Reader, done chan<- error) {
	buf := make([]byte, emitMaxFrame)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			e.mu.Lock()
			if e.stopped {
				e.mu.Unlock()
				done <- err
				return
			}
			e.fr.write(buf[:n], time.Now())
			e.mu.Unlock()
		}
		if err != nil {
			done <- err
			return
		}
	}
}

// idle submits a partial text line that has waited emitIdleFlush. When
// the reader holds the framer (it may be waiting for room in the queue),
// idle does nothing: the main loop must stay free to take signals and a
// failed capture, and the line's next tick comes soon.
func (e *emitter) idle(now time.Time) {
	if !e.mu.TryLock() {
		return
	}
	defer e.mu.Unlock()
	if !e.stopped {
		e.fr.idle(now)
	}
}

// stop ends the input: the partial line, if any, is submitted (text) or
// checked and submitted (json), and nothing read later is recorded.
func (e *emitter) stop() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.stopped {
		e.stopped = true
		e.fr.end()
	}
}

// emitMode is how ds emit cuts stdin into frames (--content).
type emitMode int

const (
	emitText  emitMode = iota // a frame per line, newline kept
	emitJSON                  // a record per line, validated
	emitBytes                 // a frame per read
)

// lineFramer cuts a byte stream into frames as described for ds emit. It
// hands each frame to submit in a buffer of its own (from allocPayload;
// submit takes ownership) and each refused JSON line, numbered from 1, to
// refuse. It is not safe for concurrent use.
type lineFramer struct {
	mode   emitMode
	submit func(payload []byte)
	refuse func(line uint64, err error)

	pending  []byte    // text: a partial line; json: the current line so far
	since    time.Time // text: when pending became non-empty
	line     uint64    // json: lines completed so far
	skipping bool      // json: the current line is too long; skip to its end
	refused  uint64    // json: lines refused
}

// write frames p, read at now.
func (f *lineFramer) write(p []byte, now time.Time) {
	switch f.mode {
	case emitBytes:
		for len(p) > 0 {
			n := min(len(p), emitMaxFrame)
			f.submitCopy(p[:n])
			p = p[n:]
		}
	case emitText:
		f.writeText(p, now)
	case emitJSON:
		f.writeJSON(p)
	}
}

func (f *lineFramer) writeText(p []byte, now time.Time) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		n := len(p)
		if i >= 0 {
			n = i + 1
		}
		if room := emitMaxFrame - len(f.pending); n > room {
			// A line longer than a frame: cut at emitMaxFrame.
			f.pending = append(f.pending, p[:room]...)
			p = p[room:]
			f.flushPending()
			continue
		}
		switch {
		case i < 0:
			if len(f.pending) == 0 {
				f.since = now
			}
			f.pending = append(f.pending, p...)
		case len(f.pending) == 0:
			f.submitCopy(p[:n])
		default:
			f.pending = append(f.pending, p[:n]...)
			f.flushPending()
		}
		p = p[n:]
	}
}

func (f *lineFramer) writeJSON(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		part := p
		if i >= 0 {
			part = p[:i]
		}
		switch {
		case f.skipping:
		case len(f.pending)+len(part) > emitMaxRecord:
			f.skipping = true
			f.pending = f.pending[:0]
		default:
			f.pending = append(f.pending, part...)
		}
		if i < 0 {
			return
		}
		f.endLine()
		p = p[i+1:]
	}
}

// endLine ends the current JSON line: it is submitted when it holds one
// JSON value, skipped when blank, refused otherwise.
func (f *lineFramer) endLine() {
	f.line++
	rec := bytes.TrimSuffix(f.pending, []byte("\r"))
	f.pending = f.pending[:0]
	switch {
	case f.skipping:
		f.skipping = false
		f.refused++
		f.refuse(f.line, fmt.Errorf("record longer than %d bytes (1 MiB), not recorded", emitMaxRecord))
	case len(bytes.TrimSpace(rec)) == 0:
		// a blank line: skipped silently
	case json.Valid(rec):
		f.submitCopy(rec)
	default:
		f.refused++
		f.refuse(f.line, fmt.Errorf("invalid JSON: %v", jsonError(rec)))
	}
}

// jsonError explains why b is not one JSON value.
func jsonError(b []byte) error {
	var v json.RawMessage
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	return errors.New("not one JSON value")
}

// lines returns how many JSON lines were read (blank lines included).
func (f *lineFramer) lines() uint64 { return f.line }

// idle submits a partial text line that has waited emitIdleFlush.
func (f *lineFramer) idle(now time.Time) {
	if f.mode == emitText && len(f.pending) > 0 && now.Sub(f.since) >= emitIdleFlush {
		f.flushPending()
	}
}

// end submits what is left at the end of the input: a partial text line,
// or a last JSON line without its newline.
func (f *lineFramer) end() {
	switch {
	case f.mode == emitText && len(f.pending) > 0:
		f.flushPending()
	case f.mode == emitJSON && (len(f.pending) > 0 || f.skipping):
		f.endLine()
	}
}

func (f *lineFramer) flushPending() {
	f.submitCopy(f.pending)
	f.pending = f.pending[:0]
}

// submitCopy submits a copy of b in a pooled buffer: the capture hands
// every payload back to the pool once written (releasePayload), so no
// payload may share memory with anything else.
func (f *lineFramer) submitCopy(b []byte) {
	f.submit(append(allocPayload(len(b)), b...))
}

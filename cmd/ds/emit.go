package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/capture"
	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/proc"
	"github.com/ds-telemetry/ds/pkg/textfmt"
)

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
	Mode    capture.Content
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
	if opts.Schema != "" && opts.Mode != capture.ContentJSON {
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
func parseEmitMode(s string) (capture.Content, error) {
	switch s {
	case "text":
		return capture.ContentText, nil
	case "json":
		return capture.ContentJSON, nil
	case "bytes":
		return capture.ContentBytes, nil
	}
	return 0, usagef("emit: --content %q: want text, json or bytes", s)
}

// checkChannelName enforces the channel name rules of ds emit (see its
// description): those of the catalog (frames.Catalog.Register: not empty,
// valid UTF-8; ARCHITECTURE.md case 6.2), plus what keeps the name usable in
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
	case capture.ContentJSON:
		content = frames.JSONRecord(opts.Schema)
	case capture.ContentBytes:
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
	var lost, lostBytes int
	producer := cap.Endpoint().Producer()
	e := capture.NewEmitter(&capture.LineFramer{
		Mode: opts.Mode,
		Submit: func(payload []byte) {
			n := len(payload)
			if !producer.SubmitWait(ch, payload, quit) {
				lost++
				lostBytes += n
			}
		},
		Refuse: func(line uint64, err error) {
			fmt.Fprintf(stderr, "ds: stdin:%d: %v\n", line, err)
		},
	})
	readDone := make(chan error, 1)
	go e.Read(in, readDone)

	var tick <-chan time.Time
	if opts.Mode == capture.ContentText {
		t := time.NewTicker(capture.IdleFlush / 2)
		defer t.Stop()
		tick = t.C
	}
	readErr := waitEmit(e, readDone, tick, sigs, cap.Failed(), interrupt, quit)
	e.Stop() // the partial line, if any
	cerr := cap.Finish()
	if errors.Is(readErr, io.EOF) {
		readErr = nil
	}
	return emitResult(cap, e, cerr, readErr, lost, lostBytes)
}

// emitResult returns ds emit's error from the capture's (cerr) and the
// reader's (readErr), the lines refused and the frames lost (lost, of
// lostBytes) or dropped: every one of them, joined.
func emitResult(cap *capture.Capture, e *capture.Emitter, cerr, readErr error, lost, lostBytes int) error {
	var errs []error
	if cerr != nil && !(cap.ToStdout() && errors.Is(cerr, syscall.EPIPE)) {
		errs = append(errs, fmt.Errorf("capture %s: %w; stdin was not recorded from then on", cap.Name(), cerr))
	}
	if readErr != nil {
		errs = append(errs, fmt.Errorf("stdin: read: %w", readErr))
	}
	if r := e.Refused(); r > 0 {
		errs = append(errs, fmt.Errorf("emit: %d of %d lines refused (not recorded; see above); the other lines are in %s", r, e.Lines(), cap.Name()))
	}
	if lost > 0 {
		errs = append(errs, fmt.Errorf("emit: %s (%d bytes) read from stdin could not be recorded: the stream ended while they waited for room in the queue", textfmt.Nouns(uint64(lost), "frame"), lostBytes))
	}
	if queue, written := cap.Dropped(); queue+written > 0 {
		errs = append(errs, fmt.Errorf("emit: the capture %s dropped %d frames at the queue and %d at the writer; ds log shows where", cap.Name(), queue, written))
	}
	return errors.Join(errs...)
}

// waitEmit waits for the reader of stdin (readDone) to end, a stop
// signal on sigs (SIGPIPE aside) or failed to close, flushing idle partial
// lines at every tick meanwhile. Then, when the reader is still reading,
// it interrupts the read and waits for the reader to record what it has
// read (a second stop signal closes quit: give up waiting for room in the
// queue); where a read cannot be interrupted (a terminal) it is
// abandoned. It returns the reader's error (nil for an interrupted read).
func waitEmit(e *capture.Emitter, readDone <-chan error, tick <-chan time.Time, sigs <-chan os.Signal, failed <-chan struct{}, interrupt func() bool, quit chan struct{}) error {
	var readErr error
	reading := true
wait:
	for {
		select {
		case readErr = <-readDone:
			reading = false
			break wait
		case now := <-tick:
			e.Idle(now)
		case sig := <-sigs:
			if sig != syscall.SIGPIPE {
				break wait
			}
		case <-failed:
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
	return readErr
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

package sources

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/ds-telemetry/ds/pkg/fleet"
	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/textfmt"
)

// LiveIdle is how long a live input (a pipe, a file followed) stays quiet
// before the partial lines held are shown (segments.ScanOptions.IdleAfter).
const LiveIdle = 300 * time.Millisecond

// An Input is one capture named on the command line ("-" is stdin), one
// capture file of a directory named there, one stream of a store named
// there ([Set.ExpandStore]), or a nats:// input. It is opened by
// [Set.Open] and closed by [Input.Close]; it is not safe for concurrent
// use.
type Input struct {
	// Name names the input in headers and messages: as named, "STORE
	// (NODE#LIFE)" for a store's stream, the URL without credentials for
	// a nats:// input.
	Name string
	// R reads the input's bytes.
	R io.Reader
	// Size is the file's size in bytes when it was opened; -1 when it is
	// unknown (a pipe, stdin not redirected from a file, a store's stream,
	// a nats:// input: a live input).
	Size int64
	// Live says that a writer holds the file's lock (ds wrap): its tail is
	// still being written, so a torn last record is not damage.
	Live bool
	// BytesRead is the number of bytes read, once scanned ([Input.Scan]).
	BytesRead int64
	// File is the file read, for a file; nil otherwise.
	File *os.File
	// Format is what a regular file holds, found when it is opened; for
	// stdin and pipes it is found as they are read (segments.ScanAny).
	// A store's stream is segments.InputDSS.
	Format segments.InputFormat
	// Store reads the input when it is a stream of a store (R is it).
	Store *StreamReader
	// NATS is the connection of a nats:// input (R reads its messages).
	NATS *NATS
}

// Open opens the input name: "-" is stdin; a nats:// URL is the JetStream
// stream it names ([Set.OpenNATS]), read as stdin is: its messages up to
// the last one stored now or, with follow, as they arrive, until ctx
// ends; the name of a store's stream input ([Set.ExpandStore]) is that
// stream, read from its start. A regular file that holds no format ds
// reads is refused with a *[NotCaptureError]; a directory, with an error
// saying so (see [Set.Expand]); a file that cannot be opened, with the
// error of os.Open.
func (s *Set) Open(ctx context.Context, name string, stdin io.Reader, follow bool) (*Input, error) {
	if fleet.IsURL(name) {
		src, err := s.OpenNATS(name)
		if err != nil {
			return nil, err
		}
		r, err := src.Reader(ctx, fleet.ReaderOptions{Follow: follow})
		if err != nil {
			src.Close()
			return nil, err
		}
		return &Input{Name: src.Name(), R: r, Size: -1, NATS: src}, nil
	}
	if name == "-" {
		in := &Input{Name: "-", R: stdin, Size: -1}
		if f, ok := stdin.(*os.File); ok {
			if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
				in.Size = fi.Size() // redirected from a file: not live
			}
		}
		return in, nil
	}
	if ref, ok := s.Stream(name); ok {
		sr := ref.NewReader()
		return &Input{Name: name, R: sr, Size: -1, Format: segments.InputDSS, Store: sr}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	in := &Input{Name: name, R: f, Size: -1, File: f}
	if fi, err := f.Stat(); err == nil {
		if fi.IsDir() {
			f.Close()
			return nil, fmt.Errorf("%s: is a directory", name)
		}
		if fi.Mode().IsRegular() {
			in.Size = fi.Size()
			in.Format, err = segments.Detect(io.NewSectionReader(f, 0, in.Size))
			if err != nil {
				f.Close()
				return nil, InputError(name, err)
			}
		}
	}
	// ds wrap holds an exclusive lock while it writes; a shared lock that
	// cannot be had means the capture is live.
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); errors.Is(err, syscall.EWOULDBLOCK) {
		in.Live = true
	} else if err == nil {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	}
	return in, nil
}

// Close closes what the input holds open: its file, its store reader, its
// NATS connection.
func (in *Input) Close() {
	if in.File != nil {
		in.File.Close()
	}
	if in.Store != nil {
		in.Store.Close()
	}
	if in.NATS != nil {
		in.NATS.Close()
	}
}

// TrimTrust returns opts for reading the input: a store's stream is its
// read-out, whose Trimmed record hides the frames below it
// (ScanOptions.Store); in a capture file a Trimmed record hides nothing,
// and when the file holds frames below one, warn is told so
// (ds-format(5) "Trimmed").
func (in *Input) TrimTrust(opts segments.ScanOptions, warn io.Writer) segments.ScanOptions {
	if in.Store != nil {
		opts.Store = true
		return opts
	}
	opts.CaptureTrimmed = func(s frames.StreamID, before frames.Position, n uint64) {
		verb := "are"
		if n == 1 {
			verb = "is"
		}
		fmt.Fprintf(warn, "ds: %s: a Trimmed record of stream %s (positions below %d) in a capture file: %s below it %s shown, not hidden\n",
			textfmt.Quote(in.Name), textfmt.Escape(s.String()), before, textfmt.Nouns(n, "frame"), verb)
	}
	return opts
}

// Scan reads the input into sink (segments.ScanAny), and sets BytesRead.
// A Trimmed record is trusted as [Input.TrimTrust] says.
// With opts.Follow, a regular file is followed as it grows ([FollowFile]),
// from opts.Offset, where its read position must be: a file truncated or
// replaced is read again from its start, with a note on warn ("ds: NAME:
// file truncated; reading it again from the start"), until ctx ends.
// Anything else is read to its end, as tail -f reads a pipe. It returns
// what ScanAny returns (ctx's error when ctx ends).
func (in *Input) Scan(ctx context.Context, opts segments.ScanOptions, sink segments.Sink, warn io.Writer) error {
	opts = in.TrimTrust(opts, warn)
	cr := &segments.CountingReader{R: in.R}
	defer func() { in.BytesRead = cr.N() }()
	if !opts.Follow || in.File == nil || in.Size < 0 {
		opts.Follow = false // as tail -f reads a pipe: to its end
		return segments.ScanAny(ctx, cr, opts, sink)
	}
	ff := &FollowFile{File: in.File, Name: in.Name, Off: opts.Offset}
	cr.R = ff
	for {
		err := segments.ScanAny(ctx, cr, opts, sink)
		var why string
		switch {
		case errors.Is(err, ErrTruncated):
			why = "truncated"
		case errors.Is(err, ErrReplaced):
			why = "replaced"
		default:
			return err
		}
		fmt.Fprintf(warn, "ds: %s: file %s; reading it again from the start\n", textfmt.Quote(in.Name), why)
		f, err := os.Open(in.Name)
		if err != nil {
			return err
		}
		in.File.Close()
		in.File, in.R = f, f
		ff.File, ff.Off, opts.Offset = f, 0, 0
	}
}

// A NotCaptureError is an input that holds none of the formats ds reads:
// the user named the wrong file (ds(1): exit 2). It unwraps to
// segments.ErrNotCapture.
type NotCaptureError struct{ Name string }

func (e *NotCaptureError) Error() string {
	return e.Name + ": not a capture (expected a DSS capture, a DSQ1 stream or legacy envelopes)"
}

func (e *NotCaptureError) Unwrap() error { return segments.ErrNotCapture }

// InputError names the input in an error of reading it: a
// *[NotCaptureError] for segments.ErrNotCapture, "NAME: err" otherwise.
func InputError(name string, err error) error {
	if errors.Is(err, segments.ErrNotCapture) {
		return &NotCaptureError{name}
	}
	return fmt.Errorf("%s: %w", name, err)
}

// A DamageReporter sits between an input's reader and a sink: it reports
// each damaged range once on Warn ("ds: NAME: …"), hides a torn tail of a
// live input (a record still being written, not damage) and remembers
// whether anything was damaged. It passes segments.Idler on.
type DamageReporter struct {
	segments.Sink // nil: report only ([DamageReporter.Report])
	Name          string
	Live          bool
	Warn          io.Writer
	Damaged       bool // set once a damaged range was reported
}

// Reporter returns a DamageReporter of the input's damage on warn, in
// front of sink.
//
// For a nats:// input, the reporter also says each segment the reader
// skipped because it holds another stream than its message's subject
// names (a client publishing into another node's stream), and counts it
// as damage: the views exit 3, as ds check and ds gaps do.
func (in *Input) Reporter(sink segments.Sink, warn io.Writer) *DamageReporter {
	d := &DamageReporter{Sink: sink, Name: in.Name, Live: in.Live, Warn: warn}
	if in.NATS != nil {
		in.NATS.onSkip(func(err error) {
			fmt.Fprintf(warn, "ds: %s\n", textfmt.Escape(err.Error()))
			d.Damaged = true
		})
	}
	return d
}

// Damage implements segments.Sink: the range is reported, and passed on
// unless it is the torn tail of a live input.
func (d *DamageReporter) Damage(offset, end int64, torn bool, err error) {
	if d.Report(offset, end, torn, err) {
		d.Sink.Damage(offset, end, torn, err)
	}
}

// Idle implements segments.Idler.
func (d *DamageReporter) Idle(quiet bool) {
	if i, ok := d.Sink.(segments.Idler); ok {
		i.Idle(quiet)
	}
}

// Report says on Warn that bytes [offset, end) are damaged, unless they
// are the torn tail of a live input; it reports whether they are damage.
func (d *DamageReporter) Report(offset, end int64, torn bool, err error) bool {
	if torn && d.Live {
		return false
	}
	d.Damaged = true
	if torn {
		fmt.Fprintf(d.Warn, "ds: %s: torn tail at byte %d (the writer stopped mid-record): %s\n", textfmt.Quote(d.Name), offset, textfmt.Quote(err.Error()))
	} else if errors.Is(err, segments.ErrHeaderRepaired) {
		fmt.Fprintf(d.Warn, "ds: %s: bytes %d–%d damaged: %s\n", textfmt.Quote(d.Name), offset, end-1, textfmt.Quote(err.Error()))
	} else {
		fmt.Fprintf(d.Warn, "ds: %s: bytes %d–%d unreadable, skipped: %s\n", textfmt.Quote(d.Name), offset, end-1, textfmt.Quote(err.Error()))
	}
	return true
}

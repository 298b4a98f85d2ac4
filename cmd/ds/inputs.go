package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/fleet"
	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/views"
)

// input is one capture named on the command line ("-" is stdin), one
// capture file of a directory named there, or one stream of a store named
// there (see store.go).
type input struct {
	name string
	r    io.Reader
	size int64 // -1 when unknown (a pipe: a live input)
	live bool  // a writer holds the file's lock: its tail is still being written
	read int64 // bytes read, once scanned
	file *os.File
	// format is what a regular file holds, found when it is opened; for
	// stdin and pipes it is found as they are read (segments.ScanAny).
	format segments.InputFormat
	// store reads the input when it is a stream of a store (r is it).
	store *storeReader
	// nats is the connection of a nats:// input (r reads its messages).
	nats *natsSource
}

// openInput opens a capture: "-" is stdin; a nats:// URL is the JetStream
// stream it names, its messages up to the last one stored now
// (openInputContext); the name of a store input
// (expandInputs) is that stream of the store, read from its start. A
// regular file that holds no format ds reads is refused with a
// *notCaptureError (exit 2); a directory, with an error saying so (see
// expandInputs).
func openInput(name string, stdin io.Reader) (*input, error) {
	return openInputContext(context.Background(), name, stdin, false)
}

// openInputContext is openInput for a view that runs until ctx ends. A
// nats:// input is the JetStream stream under its prefix (see natsSource),
// named by the URL without credentials, read as stdin is: with follow,
// messages are read as they arrive, until ctx ends.
func openInputContext(ctx context.Context, name string, stdin io.Reader, follow bool) (*input, error) {
	if fleet.IsURL(name) {
		src, err := openNATS(ctx, name)
		if err != nil {
			return nil, err
		}
		r, err := src.reader(ctx, fleet.ReaderOptions{Follow: follow})
		if err != nil {
			src.close()
			return nil, err
		}
		return &input{name: src.t.Display, r: r, size: -1, nats: src}, nil
	}
	if name == "-" {
		in := &input{name: "-", r: stdin, size: -1}
		if f, ok := stdin.(*os.File); ok {
			if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
				in.size = fi.Size() // redirected from a file: not live
			}
		}
		return in, nil
	}
	if ref, ok := lookupStoreInput(name); ok {
		sr := newStoreReader(ref)
		return &input{name: name, r: sr, size: -1, format: segments.InputDSS, store: sr}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	in := &input{name: name, r: f, size: -1, file: f}
	if fi, err := f.Stat(); err == nil {
		if fi.IsDir() {
			f.Close()
			return nil, fmt.Errorf("%s: is a directory", name)
		}
		if fi.Mode().IsRegular() {
			in.size = fi.Size()
			in.format, err = segments.Detect(io.NewSectionReader(f, 0, in.size))
			if err != nil {
				f.Close()
				return nil, inputError(name, err)
			}
		}
	}
	// ds wrap holds an exclusive lock while it writes; a shared lock that
	// cannot be had means the capture is live.
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); errors.Is(err, syscall.EWOULDBLOCK) {
		in.live = true
	} else if err == nil {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	}
	return in, nil
}

func (in *input) close() {
	if in.file != nil {
		in.file.Close()
	}
	if in.store != nil {
		in.store.Close()
	}
	if in.nats != nil {
		in.nats.close()
	}
}

// notCaptureError is an input that holds none of the formats ds reads:
// the user named the wrong file (exit 2).
type notCaptureError struct{ name string }

func (e *notCaptureError) Error() string {
	return e.name + ": not a capture (expected a DSS capture, a DSQ1 stream or legacy envelopes)"
}

func (e *notCaptureError) Unwrap() error { return segments.ErrNotCapture }

// inputError names the input in an error of reading it.
func inputError(name string, err error) error {
	if errors.Is(err, segments.ErrNotCapture) {
		return &notCaptureError{name}
	}
	return fmt.Errorf("%s: %w", name, err)
}

// damageReporter sits between the reader and a sink: it reports each
// damaged range once on stderr ("ds: FILE: …"), hides a torn tail of a live
// capture (it is a record still being written, not damage) and remembers
// whether anything was damaged.
type damageReporter struct {
	segments.Sink
	in      *input
	stderr  io.Writer
	damaged bool
}

func (d *damageReporter) Damage(offset, end int64, torn bool, err error) {
	if d.report(offset, end, torn, err) {
		d.Sink.Damage(offset, end, torn, err)
	}
}

// Idle passes segments.Idler on.
func (d *damageReporter) Idle(quiet bool) {
	if i, ok := d.Sink.(segments.Idler); ok {
		i.Idle(quiet)
	}
}

// report says on stderr that bytes [offset, end) are damaged, unless they
// are the torn tail of a live capture; it reports whether they are damage.
func (d *damageReporter) report(offset, end int64, torn bool, err error) bool {
	if torn && d.in.live {
		return false
	}
	d.damaged = true
	if torn {
		fmt.Fprintf(d.stderr, "ds: %s: torn tail at byte %d (the writer stopped mid-record): %v\n", d.in.name, offset, err)
	} else {
		fmt.Fprintf(d.stderr, "ds: %s: bytes %d–%d unreadable, skipped: %v\n", d.in.name, offset, end-1, err)
	}
	return true
}

// limitReadMemory gives the views a soft memory limit (unless GOMEMLIMIT
// is set): the garbage collector then keeps the heap near what the views
// hold, which their bounds keep under readMemoryLimit, instead of letting
// it double between collections.
func limitReadMemory() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(readMemoryLimit)
	}
}

// readMemoryLimit is the soft memory limit of the views, in bytes.
const readMemoryLimit = 48 << 20

// inputsHelp is the part of a view's description that says what its
// inputs may be (see scanInputs).
const inputsHelp = `Inputs are capture files, directories (every capture file in them, in
name order; hidden files and other files are skipped), stores and - for
stdin. A store (the directory ds ingest grows) is read as a capture of
its streams: each stream is an input of its own, named "STORE
(NODE#LIFE)", read whole, and what ds trim deleted of it is shown as
trimmed, not as a gap; a store that holds nothing is an empty capture.
Besides DSS captures, ds reads the seed system's DSQ1 streams and legacy
delivery envelopes (frames without channel names, shown raw); a file of
none of these is refused (exit 2), an empty file is an empty capture.
Several inputs are merged by time, never grouped by file: a frame's time is
its stream's latest datastream.clock reading in its input (inputs without
clock records come first), ties go in argument order, and each input keeps
its own order; a stream split across files comes out whole, in position
order, in any argument order. A pipe is shown as it arrives: a line without
its newline yet shows after 0.3 s of quiet.

A nats://HOST[:PORT][/PREFIX] input (tls:// for TLS; PREFIX "ds" by
default) is the JetStream stream that producers publish to with
-o nats://… (ds nats init makes it): the messages it holds, read as a
pipe is (-f: then the new ones, as they arrive), only the subjects of
the nodes --node and --stream name. ds tail reads its last messages
only. Credentials come from --nats-creds, --nats-token ($DS_NATS_TOKEN)
or user:password@ in the URL; the input is named without them. A server
that does not answer within 3 s, or has no stream for PREFIX, is an
error (exit 1).`

// liveIdle is how long a live input (a pipe, a file followed) stays quiet
// before the partial lines held are shown (segments.ScanOptions.IdleAfter).
const liveIdle = 300 * time.Millisecond

// dirPoll is how often a directory followed (-f) is listed for new
// capture files. Listing, rather than fsnotify: no dependency, it works on
// every file system (NFS and FUSE mounts included, where inotify does
// not), and a quarter of a second is as soon as tail -f users expect; a
// listing of a directory of captures costs little.
const dirPoll = 250 * time.Millisecond

// scanInputs reads the named inputs into the sinks made for them (sinkFor
// is called once per input; done, if not nil, after each input is read,
// with input.read set).
//
// A name is a capture file, - for stdin, a nats:// URL (a JetStream
// stream, read as a pipe is: openInputContext), a store (one input per stream,
// see store.go), or a directory: every capture file in it, in name order
// (not recursive; hidden files and files that are not captures are
// skipped, and a directory without any is named on stderr). Every input is read whatever its format (segments.ScanAny: DSS,
// DSQ1, legacy envelopes); a named file of none is refused (exit 2).
//
// One input is scanned directly. Several are merged by time (views.Merge):
// entries of different inputs interleave, each input's own in order, so a
// sink shared by the inputs must not expect them grouped by input; each
// input's damage is reported with its name (a shared *views.LogSink gets
// the name of the input whose damage it prints).
//
// With follow (-f), regular DSS files are followed as they grow (a file
// truncated or replaced is read again from its start, with a note on
// stderr) and directories are watched for new capture files, until
// SIGINT or SIGTERM, which end it cleanly, as tail -f follows (a stream
// that ended may be followed by another, ds wrap --append); stores are
// polled for new chunks of their streams and for new streams (every
// dirPoll); a nats:// input is read as its messages arrive; stdin, pipes,
// DSQ1 and legacy files are read to their end, and with nothing left to
// follow it returns. Pipes and
// followed inputs are live: a partial last line shows after liveIdle of
// quiet, and a quiet input does not hold the merge back.
//
// It keeps going past a bad input and returns the worst outcome: an I/O
// error (exit 1) over an input that is not a capture (exit 2) over
// damage (exit 3).
func scanInputs(ctx context.Context, names []string, stdin io.Reader, stderr io.Writer, follow bool, sinkFor func(*input) segments.Sink, done func(*input)) error {
	if len(names) == 0 {
		return usagef("no input given (name capture files, or - for stdin)")
	}
	stderr = &lockedWriter{w: stderr}
	if follow {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
	}
	var o outcome
	paths, dirs := expandInputs(names, follow, stderr, &o)
	var ins []*input
	live := follow
	for _, p := range paths {
		in, err := openInputContext(ctx, p, stdin, follow)
		if err != nil {
			o.fail(stderr, err)
			continue
		}
		if in.store != nil && follow {
			in.store.follow(ctx)
		}
		live = live || in.size < 0 && in.store == nil
		ins = append(ins, in)
	}
	opts := segments.ScanOptions{Follow: follow}
	if live {
		opts.IdleAfter = liveIdle
	}
	finish := func(in *input, rep *damageReporter, err error) {
		if done != nil {
			done(in)
		}
		in.close()
		if rep.damaged {
			o.damage()
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			o.fail(stderr, inputError(in.name, err))
		}
	}
	if len(ins) == 1 && len(dirs) == 0 {
		in := ins[0]
		rep := &damageReporter{Sink: sinkFor(in), in: in, stderr: stderr}
		finish(in, rep, scanOne(ctx, in, opts, rep, stderr))
		return o.status()
	}
	if len(ins) == 0 && len(dirs) == 0 {
		return o.status()
	}
	merged := func(in *input) views.MergeInput {
		rep := &damageReporter{Sink: sinkFor(in), in: in, stderr: stderr}
		return views.MergeInput{
			Scan: func(ctx context.Context, sink segments.Sink) error { return scanOne(ctx, in, opts, sink, stderr) },
			Sink: rep,
			Done: func(err error) { finish(in, rep, err) },
		}
	}
	var first []views.MergeInput
	for _, in := range ins {
		first = append(first, merged(in))
	}
	var more chan views.MergeInput
	if len(dirs) > 0 {
		more = make(chan views.MergeInput)
		go func() {
			defer close(more)
			watchDirs(ctx, dirs, func(path string) {
				in, err := openInput(path, nil)
				if err != nil {
					o.fail(stderr, err)
					return
				}
				if in.store != nil {
					in.store.follow(ctx)
				}
				select {
				case more <- merged(in):
				case <-ctx.Done():
					in.close()
				}
			})
		}()
	}
	views.Merge(ctx, first, more, views.MergeOptions{IdleAfter: opts.IdleAfter}) // ends with ctx, or returns nil
	return o.status()
}

// scanOne reads one input into sink (segments.ScanAny). With opts.Follow, a
// regular file is followed (see scanInputs), from opts.Offset, where its
// read position must be; anything else is read to its end.
func scanOne(ctx context.Context, in *input, opts segments.ScanOptions, sink segments.Sink, stderr io.Writer) error {
	cr := &atomicCounter{r: in.r}
	defer func() { in.read = cr.n.Load() }()
	opts = trimTrust(opts, in, stderr)
	if !opts.Follow || in.file == nil || in.size < 0 {
		opts.Follow = false // as tail -f reads a pipe: to its end
		return segments.ScanAny(ctx, cr, opts, sink)
	}
	ff := &followFile{in: in, off: opts.Offset}
	cr.r = ff
	for {
		err := segments.ScanAny(ctx, cr, opts, sink)
		var why string
		switch {
		case errors.Is(err, errTruncated):
			why = "truncated"
		case errors.Is(err, errReplaced):
			why = "replaced"
		default:
			return err
		}
		fmt.Fprintf(stderr, "ds: %s: file %s; reading it again from the start\n", in.name, why)
		f, err := os.Open(in.name)
		if err != nil {
			return err
		}
		in.file.Close()
		in.file, in.r = f, f
		ff.off, opts.Offset = 0, 0
	}
}

// Errors of a followed file at its end (followFile.Read).
var (
	errTruncated = errors.New("file truncated")
	errReplaced  = errors.New("file replaced")
)

// followFile reads a file that grows. At its end it says whether the file
// was truncated (it is now shorter than what was read) or replaced (the
// name now leads to another file): errTruncated, errReplaced; otherwise
// io.EOF, after which a following reader reads again later. A file is
// followed until the command is interrupted, as tail -f follows: a stream
// that has ended may be followed by another (ds wrap --append), and an
// incomplete record at the end is awaited, not reported.
type followFile struct {
	in  *input
	off int64 // file offset of the next byte
}

func (f *followFile) Read(p []byte) (int, error) {
	n, err := f.in.file.Read(p)
	f.off += int64(n)
	if n > 0 || err != io.EOF {
		return n, err
	}
	cur, err := f.in.file.Stat()
	if err == nil && cur.Size() < f.off {
		return 0, errTruncated
	}
	if fi, nerr := os.Stat(f.in.name); err == nil && nerr == nil && !os.SameFile(fi, cur) {
		return 0, errReplaced
	}
	return 0, io.EOF
}

// inputWatch is a directory or a store followed for new inputs.
type inputWatch interface {
	// poll returns the names of the inputs that are new since the last
	// look.
	poll() []string
}

// dirWatch is a directory followed for new capture files.
type dirWatch struct {
	dir   string
	known map[string]bool // names listed already
}

// poll implements inputWatch: a new empty file is left for a later look.
func (d *dirWatch) poll() []string {
	found, _ := d.list(true) // a directory gone for now may be back
	return found
}

// expandInputs replaces each directory among names by the capture files
// in it, in name order, and each store by the inputs of its streams (see
// scanInputs), and with follow returns the directories and stores to
// watch.
func expandInputs(names []string, follow bool, stderr io.Writer, o *outcome) ([]string, []inputWatch) {
	var paths []string
	var dirs []inputWatch
	for _, name := range names {
		fi, err := os.Stat(name)
		if name == "-" || fleet.IsURL(name) || err != nil || !fi.IsDir() {
			paths = append(paths, name) // openInput says what is wrong
			continue
		}
		if isStoreDir(name) {
			found, w, err := expandStore(name)
			if err != nil {
				o.fail(stderr, err)
				continue
			}
			paths = append(paths, found...) // none: an empty capture
			if follow {
				dirs = append(dirs, w)
			}
			continue
		}
		d := &dirWatch{dir: name, known: make(map[string]bool)}
		found, err := d.list(false)
		if err != nil {
			o.fail(stderr, err)
			continue
		}
		if len(found) == 0 {
			fmt.Fprintf(stderr, "ds: %s: no capture in this directory\n", name)
		}
		paths = append(paths, found...)
		if follow {
			dirs = append(dirs, d)
		}
	}
	return paths, dirs
}

// expandNames is expandInputs without following, for commands that read
// their inputs one by one (ds tail, ds info).
func expandNames(names []string, stderr io.Writer, o *outcome) []string {
	paths, _ := expandInputs(names, false, stderr, o)
	return paths
}

// list returns the capture files of the directory it has not listed
// before, in name order: regular files (or links to them) whose name does
// not start with a dot, that are empty or hold a format ds reads. With
// waitEmpty, an empty file is left for a later listing.
func (d *dirWatch) list(waitEmpty bool) ([]string, error) {
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		return nil, err
	}
	var found []string
	for _, e := range entries {
		name := e.Name()
		if d.known[name] || strings.HasPrefix(name, ".") {
			continue
		}
		path := filepath.Join(d.dir, name)
		fi, err := os.Stat(path)
		if err != nil || !fi.Mode().IsRegular() {
			d.known[name] = err == nil
			continue
		}
		if fi.Size() == 0 && waitEmpty {
			continue
		}
		d.known[name] = true
		if isCapture(path) {
			found = append(found, path)
		}
	}
	return found, nil
}

// isCapture reports whether the file at path holds a format ds reads (or
// cannot be read: opening it again will say why).
func isCapture(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return true
	}
	defer f.Close()
	_, err = segments.Detect(f)
	return !errors.Is(err, segments.ErrNotCapture)
}

// watchDirs lists the directories and stores every dirPoll until ctx
// ends, and calls add with each new input. A new empty file is taken once
// it has its first bytes (ds wrap creates its file before it writes).
func watchDirs(ctx context.Context, dirs []inputWatch, add func(path string)) {
	t := time.NewTicker(dirPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, d := range dirs {
			for _, path := range d.poll() {
				add(path)
			}
		}
	}
}

// outcome is the worst outcome of a view's inputs so far; it is safe for
// concurrent use.
type outcome struct {
	mu                          sync.Mutex
	failed, notCapture, damaged bool
}

// fail reports err on stderr.
func (o *outcome) fail(stderr io.Writer, err error) {
	fmt.Fprintf(stderr, "ds: %v\n", err)
	o.mu.Lock()
	defer o.mu.Unlock()
	var ue *usageError
	if errors.Is(err, segments.ErrNotCapture) || errors.As(err, &ue) { // a bad nats:// URL
		o.notCapture = true
	} else {
		o.failed = true
	}
}

func (o *outcome) damage() {
	o.mu.Lock()
	o.damaged = true
	o.mu.Unlock()
}

// failedInput reports whether an input could not be read or was no
// capture (exit 1 or 2): both rank above damage (3) in status's order,
// 1 over 2 over 3.
func (o *outcome) failedInput() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.failed || o.notCapture
}

// status returns the command's error: exit 1, 2 or 3, or nil.
func (o *outcome) status() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case o.failed:
		return &statusError{code: exitFailure}
	case o.notCapture:
		return &statusError{code: exitUsage}
	case o.damaged:
		return &statusError{code: exitCorrupt}
	}
	return nil
}

// lockedWriter serialises writes to w (stderr, written by the goroutines
// of several inputs).
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// tailFollow is ds tail -f: the last lines of each input, as ds tail
// prints them ("==> NAME <==" before each when there are several, or a
// directory), then what is written to them from then on, from each
// input's own printer (a header whenever the input printing changes),
// until SIGINT or SIGTERM (see scanInputs).
// Directories are watched for new capture files, printed from their
// start; a store's streams are followed as they grow, and the store is
// watched for new streams, printed from their start (see store.go).
func tailFollow(ctx context.Context, names []string, stdin io.Reader, stdout, stderr io.Writer, opts views.TailOptions) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	stderr = &lockedWriter{w: stderr}
	var o outcome
	paths, dirs := expandInputs(names, true, stderr, &o)
	out := &tailOut{w: stdout, multi: len(paths) > 1 || len(dirs) > 0}
	lines := max(opts.Lines, 1) // -n 0: nothing, but the point to follow from
	var wg sync.WaitGroup
	follow := func(in *input, sink *views.LogSink, from int64) {
		defer wg.Done()
		defer in.close()
		rep := &damageReporter{Sink: sink, in: in, stderr: stderr}
		var err error
		if _, err = in.file.Seek(from, io.SeekStart); err == nil {
			in.r = in.file
			err = scanOne(ctx, in, segments.ScanOptions{Follow: true, Offset: from, IdleAfter: liveIdle}, rep, stderr)
		}
		sink.A.Flush()
		sink.P.Close()
		if rep.damaged {
			o.damage()
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			o.fail(stderr, inputError(in.name, err))
		}
	}
	storeDone := func(damaged bool, err error) {
		defer wg.Done()
		if damaged {
			o.damage()
		}
		if err != nil {
			o.fail(stderr, err)
		}
	}
	for _, p := range paths {
		w := &tailOutWriter{o: out, name: inputName(p), mute: opts.Lines == 0}
		one := opts
		one.Lines = lines
		if fleet.IsURL(p) {
			// A JetStream stream: its last lines, then its new messages.
			src, err := openNATS(ctx, p)
			if err != nil {
				o.fail(stderr, err) // no header for it
				continue
			}
			if err := out.header(w.name); err != nil {
				src.close()
				return writeErr(err)
			}
			d, cur, last, err := tailNATS(ctx, src, w, stderr, one)
			if d {
				o.damage()
			}
			if err != nil {
				src.close()
				if !errors.Is(err, context.Canceled) && !isEPIPE(err) {
					o.fail(stderr, err)
				}
				continue
			}
			w.mute = false
			wg.Add(1)
			go func() {
				defer wg.Done()
				d, err := followNATS(ctx, src, w, stderr, opts.Log, cur, last)
				if d {
					o.damage()
				}
				if err != nil && !errors.Is(err, context.Canceled) {
					o.fail(stderr, err)
				}
			}()
			continue
		}
		if err := out.header(p); err != nil {
			return writeErr(err)
		}
		in, err := openInput(p, stdin)
		if err != nil {
			o.fail(stderr, err)
			continue
		}
		if in.store != nil {
			// A stream of a store: its last lines, then what comes.
			wg.Add(1)
			d, err := tailStore(ctx, in, w, stderr, one, storeDone)
			if d {
				o.damage()
			}
			if err != nil {
				wg.Done()
				if !errors.Is(err, context.Canceled) && !isEPIPE(err) {
					o.fail(stderr, err)
				}
			}
			continue
		}
		if !readsFromEnd(in) {
			// Stdin, a pipe, an import: read to the end, as tail -f does
			// a pipe.
			d, _, err := tailStream(ctx, in, w, stderr, one)
			in.close()
			if d {
				o.damage()
			}
			if err != nil && !errors.Is(err, context.Canceled) {
				o.fail(stderr, err)
			}
			continue
		}
		one.Follow = true
		stats, damaged, err := tailFile(ctx, in, one, w, stderr)
		if damaged {
			o.damage()
		}
		w.mute = false
		if err != nil || stats.Sink == nil {
			in.close()
			if err != nil && !errors.Is(err, context.Canceled) {
				o.fail(stderr, err)
			}
			continue
		}
		wg.Add(1)
		go follow(in, stats.Sink, stats.Resume)
	}
	if len(dirs) > 0 {
		watchDirs(ctx, dirs, func(path string) {
			in, err := openInput(path, nil)
			if err != nil {
				o.fail(stderr, err)
				return
			}
			if in.format != segments.InputDSS && in.format != segments.InputEmpty {
				in.close()
				return
			}
			sink := views.NewLogSink(views.NewPrinter(&tailOutWriter{o: out, name: path}, opts.Log), opts.Log.Window)
			sink.File = path
			wg.Add(1)
			if in.store != nil {
				go followStore(ctx, in, &damageReporter{Sink: sink, in: in, stderr: stderr}, storeDone)
				return
			}
			go follow(in, sink, 0)
		})
	}
	wg.Wait()
	if out.err != nil && !isEPIPE(out.err) {
		return out.err
	}
	return o.status()
}

// followNATS is ds tail -f of a nats:// input once its last lines are
// printed: it prints what the messages after sequence number last hold
// (every message, when last is 0: the stream was empty), after cursor
// (what was printed already), as they arrive, until ctx ends. It closes
// src, and says whether what it read was damaged.
func followNATS(ctx context.Context, src *natsSource, w io.Writer, stderr io.Writer, opts views.LogOptions, cursor views.Cursor, last uint64) (bool, error) {
	defer src.close()
	start := uint64(0)
	if last > 0 {
		start = last + 1
	}
	r, err := src.reader(ctx, fleet.ReaderOptions{Follow: true, StartSeq: start})
	if err != nil {
		return false, err
	}
	opts.Select.After = cursor
	p := views.NewPrinter(w, opts)
	// The streams read for the last lines count as seen: a new one gets
	// the stream column, as a second stream of a pipe does in ds log.
	for _, id := range slices.SortedFunc(maps.Keys(cursor), frames.StreamID.Compare) {
		p.Stream(frames.StreamDescriptor{Stream: id})
	}
	// Read from part-way: a stream whose earlier messages were not read
	// starts where reading does.
	sink := partialLogSink(p, opts.Window)
	sink.File = src.t.Display
	rep := &damageReporter{Sink: sink, in: &input{name: src.t.Display, size: -1}, stderr: stderr}
	err = segments.ScanAny(ctx, r, segments.ScanOptions{IdleAfter: liveIdle}, rep)
	sink.A.Flush()
	if cerr := p.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil && !errors.Is(err, context.Canceled) && !isEPIPE(err) {
		return rep.damaged, inputError(src.t.Display, err)
	}
	return rep.damaged, nil
}

// tailOut is the output of ds tail -f: the printers of several inputs
// write to it at once, each a line or more at a time, and it leads the
// lines of an input with "==> NAME <==" whenever they follow another
// input's (when multi).
type tailOut struct {
	mu    sync.Mutex
	w     io.Writer
	multi bool
	last  string
	any   bool  // a header was written
	err   error // the first write error
}

// header writes the header of input name unless its lines are the last
// written.
func (o *tailOut) header(name string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.headerLocked(name)
}

func (o *tailOut) headerLocked(name string) error {
	if !o.multi || o.any && o.last == name {
		return nil
	}
	sep := "\n"
	if !o.any {
		sep = ""
	}
	o.any, o.last = true, name
	_, err := fmt.Fprintf(o.w, "%s==> %s <==\n", sep, name)
	return err
}

// tailOutWriter is what the printer of one input writes to; nothing while
// mute.
type tailOutWriter struct {
	o    *tailOut
	name string
	mute bool
}

func (w *tailOutWriter) Write(b []byte) (int, error) {
	if w.mute || len(b) == 0 {
		return len(b), nil
	}
	o := w.o
	o.mu.Lock()
	defer o.mu.Unlock()
	err := o.headerLocked(w.name)
	if err == nil {
		_, err = o.w.Write(b)
	}
	if err != nil && o.err == nil {
		o.err = err
	}
	return len(b), err
}

// channelFilters turns -c patterns into filters.
func channelFilters(patterns []string) []frames.ChannelFilter {
	var fs []frames.ChannelFilter
	for _, p := range patterns {
		fs = append(fs, frames.ParseChannelPattern(p))
	}
	return fs
}

// atomicCounter counts the bytes read through it, safe to read while it
// is read (Scan returns when ctx ends, its reader maybe in a read).
type atomicCounter struct {
	r io.Reader
	n atomic.Int64
}

func (c *atomicCounter) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	return n, err
}

// natsSource is a nats:// input of a view: a connection to the server and
// the target (fleet.Target: servers, prefix, and Display, the URL without
// credentials, which names the input everywhere). Its readers
// (fleet.NewReader) deliver the JetStream stream's messages concatenated,
// a DSS capture that the views read as they read stdin.
type natsSource struct {
	nc    *nats.Conn
	t     fleet.Target
	nodes []frames.NodeID // the nodes read (--node, --stream); none: all
	rc    io.ReadCloser   // the last reader opened
}

// openNATS connects to the target of a nats:// (or tls://) input, with
// the credentials and node selection in ctx (withNATSInputs), and checks
// that JetStream has a stream for its prefix. A URL that does not parse is
// a *usageError (exit 2); a server that does not answer within 3 s, that
// refuses the credentials, or has no stream, an error naming the target
// (exit 1). Credentials are never in an error.
func openNATS(ctx context.Context, url string) (*natsSource, error) {
	ni := natsInputsFrom(ctx)
	nc, t, err := dialNATS(url, ni.auth, "ds view", false, io.Discard)
	if err != nil {
		return nil, err
	}
	if err := checkNATSStream(nc, t); err != nil {
		nc.Close()
		return nil, err
	}
	return &natsSource{nc: nc, t: t, nodes: ni.nodes}, nil
}

// reader opens a reader of the stream's messages (the nodes of s only),
// closing the one opened before. It ends (io.EOF) after the last message
// stored when it was opened, unless o.Follow; it ends with ctx, or at
// close, with ctx's error.
func (s *natsSource) reader(ctx context.Context, o fleet.ReaderOptions) (io.Reader, error) {
	if s.rc != nil {
		s.rc.Close()
		s.rc = nil
	}
	o.Nodes = s.nodes
	rc, err := fleet.NewReader(ctx, s.nc, s.t, o)
	if err != nil {
		return nil, err
	}
	s.rc = rc
	return rc, nil
}

// seqs returns the first and last sequence numbers of the JetStream
// stream (0, 0 when it holds no message).
func (s *natsSource) seqs(ctx context.Context) (first, last uint64, err error) {
	js, err := jetstream.New(s.nc)
	if err != nil {
		return 0, 0, err
	}
	name, err := fleet.FindStream(ctx, js, s.t)
	if err != nil {
		return 0, 0, err
	}
	st, err := js.Stream(ctx, name)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: stream %s: %w", s.t.Display, name, err)
	}
	state := st.CachedInfo().State
	if state.Msgs == 0 {
		return 0, 0, nil
	}
	return state.FirstSeq, state.LastSeq, nil
}

func (s *natsSource) close() {
	if s.rc != nil {
		s.rc.Close()
	}
	s.nc.Close()
}

// natsInputs says how a view opens its nats:// inputs.
type natsInputs struct {
	auth  fleet.Auth
	nodes []frames.NodeID // the nodes --node and --stream name; none: all
}

type natsInputsKey struct{}

// withNATSInputs returns ctx telling openNATS how command c opens nats://
// inputs: the credentials of its --nats-* flags (natsFlags), and the nodes
// its --node and --stream flags select, so that only their subjects are
// read (the views still apply every filter). A view whose action does not
// call it reads nats:// inputs with $DS_NATS_CREDS and $DS_NATS_TOKEN only,
// every node.
func withNATSInputs(ctx context.Context, c *cli.Command) (context.Context, error) {
	auth, err := natsAuthFrom(c)
	if err != nil {
		return ctx, err
	}
	ni := natsInputs{auth: auth}
	for _, n := range c.StringSlice("node") {
		ni.nodes = append(ni.nodes, frames.NodeID(n))
	}
	for _, s := range c.StringSlice("stream") {
		if id, err := frames.ParseStreamID(s); err == nil && !slices.Contains(ni.nodes, id.Node) {
			ni.nodes = append(ni.nodes, id.Node) // a bad one is readSelection's to report
		}
	}
	return context.WithValue(ctx, natsInputsKey{}, ni), nil
}

// natsInputsFrom returns what withNATSInputs put in ctx, or the
// credentials of the environment.
func natsInputsFrom(ctx context.Context) natsInputs {
	ni, ok := ctx.Value(natsInputsKey{}).(natsInputs)
	if !ok {
		ni.auth = fleet.Auth{CredsFile: os.Getenv("DS_NATS_CREDS"), Token: os.Getenv("DS_NATS_TOKEN")}
	}
	return ni
}

// inputName is how a view names an input in its output: a nats:// URL
// without its credentials (its Display; a URL that does not parse is an
// error before anything is printed, openNATS), any other name as given.
func inputName(name string) string {
	if !fleet.IsURL(name) {
		return name
	}
	if t, err := fleet.ParseTarget(name); err == nil {
		return t.Display
	}
	return fleet.Redact(name)
}

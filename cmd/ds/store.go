package main

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"hash/crc64"
	"io"
	"path/filepath"
	"strconv"
	"sync"
	"time"
	"unicode"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/views"
)

// A store (ds ingest) is read by the views like a capture: a store
// directory named as an input stands for one input per stream of the
// store (expandInputs), each read as the DSS byte stream that
// segments.Store.OpenStream gives, so the time-ordered merge of the views
// interleaves the streams of a store as it does separate files. Such an
// input is named "STORE (NODE#LIFE)" in headers and messages.

// storeSrc is a store opened for reading, shared by the inputs of its
// streams; it is safe for concurrent use.
type storeSrc struct {
	dir string // as named (cleaned)
	st  *segments.Store

	mu     sync.Mutex
	polled time.Time // when streams was listed
	list   []segments.StoreStream
	err    error
}

// storeInputRef is what the name of a store input stands for.
type storeInputRef struct {
	src *storeSrc
	id  frames.StreamID
}

// storeRegistry holds the stores opened by this process, by directory,
// and the inputs made of their streams, by name, so that a store input
// travels through the views' code as a name, as a file does.
var storeRegistry = struct {
	mu     sync.Mutex
	stores map[string]*storeSrc
	inputs map[string]storeInputRef
}{stores: map[string]*storeSrc{}, inputs: map[string]storeInputRef{}}

// isStoreDir reports whether name is a store directory.
func isStoreDir(name string) bool {
	return name != "-" && segments.IsStore(name)
}

// openStoreSrc opens the store at dir, once per process.
func openStoreSrc(dir string) (*storeSrc, error) {
	dir = filepath.Clean(dir)
	storeRegistry.mu.Lock()
	defer storeRegistry.mu.Unlock()
	if src, ok := storeRegistry.stores[dir]; ok {
		return src, nil
	}
	st, err := segments.OpenStore(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	src := &storeSrc{dir: dir, st: st}
	storeRegistry.stores[dir] = src
	return src, nil
}

// lookupStoreInput returns what the input name stands for, if it is a
// store input.
func lookupStoreInput(name string) (storeInputRef, bool) {
	storeRegistry.mu.Lock()
	defer storeRegistry.mu.Unlock()
	ref, ok := storeRegistry.inputs[name]
	return ref, ok
}

// isStoreInput reports whether name is the name of a store input.
func isStoreInput(name string) bool {
	_, ok := lookupStoreInput(name)
	return ok
}

// inputName returns the name of the input of stream id of the store, and
// registers it: "STORE (NODE#LIFE)", the stream quoted as a Go string
// when its node has characters that are not printable.
func (s *storeSrc) inputName(id frames.StreamID) string {
	text := id.String()
	for _, r := range text {
		if !unicode.IsPrint(r) {
			text = strconv.Quote(text)
			break
		}
	}
	name := s.dir + " (" + text + ")"
	storeRegistry.mu.Lock()
	storeRegistry.inputs[name] = storeInputRef{src: s, id: id}
	storeRegistry.mu.Unlock()
	return name
}

// streams returns the streams of the store, as listed at most maxAge ago
// (0: listed now), so that the inputs of a store followed share one
// listing per poll.
func (s *storeSrc) streams(maxAge time.Duration) ([]segments.StoreStream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.polled.IsZero() || maxAge <= 0 || time.Since(s.polled) >= maxAge {
		s.list, s.err = s.st.Streams()
		s.polled = time.Now()
		if s.err != nil {
			s.err = fmt.Errorf("%s: %w", s.dir, s.err)
		}
	}
	return s.list, s.err
}

// expandStore returns the names of the inputs of the store at dir, one
// per stream in the store's order (node, then life), and what watches it
// for new streams.
func expandStore(dir string) ([]string, *storeWatch, error) {
	src, err := openStoreSrc(dir)
	if err != nil {
		return nil, nil, err
	}
	streams, err := src.streams(0)
	if err != nil {
		return nil, nil, err
	}
	w := &storeWatch{src: src, known: map[frames.StreamID]bool{}}
	var names []string
	for _, ss := range streams {
		id := ss.Desc.Stream
		w.known[id] = true
		names = append(names, src.inputName(id))
	}
	return names, w, nil
}

// storeWatch is a store followed (-f) for new streams.
type storeWatch struct {
	src   *storeSrc
	known map[frames.StreamID]bool
}

// poll returns the names of the inputs of the streams that are new in
// the store since the last look.
func (w *storeWatch) poll() []string {
	streams, err := w.src.streams(dirPoll / 2)
	if err != nil {
		return nil // a store being changed: look again later
	}
	var names []string
	for _, ss := range streams {
		id := ss.Desc.Stream
		if !w.known[id] {
			w.known[id] = true
			names = append(names, w.src.inputName(id))
		}
	}
	return names
}

// storeState is what a listing says of a stream, to tell that it changed.
type storeState struct {
	found  bool
	frames uint64
	bytes  int64
	chunks int
	before frames.Position
	ended  bool
}

// state returns the stream's state in the store's latest listing (one at
// most maxAge old).
func (r storeInputRef) state(maxAge time.Duration) storeState {
	streams, err := r.src.streams(maxAge)
	if err != nil {
		return storeState{}
	}
	for _, ss := range streams {
		if ss.Desc.Stream == r.id {
			return storeState{true, ss.Frames, ss.Bytes, ss.Chunks, ss.Before, ss.Ended}
		}
	}
	return storeState{}
}

// storeReader reads the stream of a store input: the byte stream of
// segments.Store.OpenStream. Once its ctx is set (follow), it does not
// end at the end of that: it waits for the stream to change in the store
// (new chunks, a trim), opens it again and goes on with the bytes that
// were not read. The store's byte stream of a stream is its chunks in
// order of their first positions, so a chunk that comes after the last
// one read only appends: when what was read is still the start of the
// new byte stream (a CRC-64 of it says so), only the rest is read;
// otherwise (a chunk of lower positions came, or a trim deleted the
// first ones) the whole byte stream is read again, and its frames that
// were read already are copies that the views drop.
type storeReader struct {
	// mu serialises Read and Close: a follower's scan may still be in
	// Read (waiting for the store to change, until ctx ends) when its
	// input is closed.
	mu     sync.Mutex
	ref    storeInputRef
	ctx    context.Context // set: follow the stream
	rc     io.ReadCloser
	opened bool
	n      int64       // bytes read of the current byte stream
	sum    hash.Hash64 // of those bytes
	seen   storeState  // the stream's state before it was opened
}

// storeTable is the CRC-64 table of storeReader.
var storeTable = crc64.MakeTable(crc64.ECMA)

// newStoreReader returns the reader of a store input.
func newStoreReader(ref storeInputRef) *storeReader {
	return &storeReader{ref: ref, sum: crc64.New(storeTable)}
}

// follow makes r wait, at the end of the stream, for more until ctx ends
// (it then returns ctx.Err()).
func (r *storeReader) follow(ctx context.Context) { r.ctx = ctx }

// Read implements io.Reader.
func (r *storeReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		if r.rc == nil {
			var err error
			switch {
			case !r.opened:
				err = r.open()
			case r.ctx == nil:
				return 0, io.EOF
			default:
				err = r.wait()
			}
			if err != nil {
				return 0, err
			}
		}
		n, err := r.rc.Read(p)
		r.sum.Write(p[:n])
		r.n += int64(n)
		if err == io.EOF {
			r.rc.Close()
			r.rc = nil
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
}

// open opens the stream's byte stream for the first time.
func (r *storeReader) open() error {
	r.seen = r.ref.state(dirPoll / 2)
	rc, err := r.ref.src.st.OpenStream(r.ref.id)
	if err != nil {
		return err
	}
	r.rc, r.opened = rc, true
	return nil
}

// wait polls the store until the stream changes, and opens it again
// after what was read (or from its start: see storeReader).
func (r *storeReader) wait() error {
	t := time.NewTicker(dirPoll)
	defer t.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return r.ctx.Err()
		case <-t.C:
		}
		st := r.ref.state(dirPoll / 2)
		if !st.found || st == r.seen {
			continue
		}
		rc, err := r.ref.src.st.OpenStream(r.ref.id)
		if err != nil {
			return err
		}
		prefix := crc64.New(storeTable)
		if _, err := io.CopyN(prefix, rc, r.n); err == nil && prefix.Sum64() == r.sum.Sum64() {
			r.rc, r.seen = rc, st
			return nil
		}
		rc.Close()
		if rc, err = r.ref.src.st.OpenStream(r.ref.id); err != nil {
			return err
		}
		r.rc, r.seen, r.n = rc, st, 0
		r.sum.Reset()
		return nil
	}
}

// Close closes what is open.
func (r *storeReader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rc != nil {
		err := r.rc.Close()
		r.rc = nil
		return err
	}
	return nil
}

// switchWriter writes to w, which may be changed between writes.
type switchWriter struct{ w io.Writer }

func (s *switchWriter) Write(b []byte) (int, error) { return s.w.Write(b) }

// tailStore is ds tail -f of a store input: the last lines of the
// stream as it is in the store (written to w), then, from a goroutine, what
// comes to it, written by the same printer (so a line is never cut or
// shown twice where the two meet) until ctx ends. It returns whether what
// was read was damaged, and the goroutine's end: done is called with its
// damage and error.
func tailStore(ctx context.Context, in *input, w *tailOutWriter, stderr io.Writer, opts views.TailOptions, done func(damaged bool, err error)) (bool, error) {
	ring := views.NewLineRing(opts.Lines)
	out := &switchWriter{w: ring}
	p := views.NewPrinter(out, opts.Log)
	sink := views.NewLogSink(p, opts.Log.Window)
	sink.File = in.name
	rep := &damageReporter{in: in, stderr: stderr, Sink: sink}
	err := segments.ScanAny(ctx, in.r, segments.ScanOptions{Store: true}, rep)
	if err != nil {
		in.close()
		return rep.damaged, inputError(in.name, err)
	}
	// The end of what the store holds: what is held back is shown, as a
	// live input's is when it goes quiet, and the last lines written.
	sink.A.Flush()
	p.FlushPartials()
	if err := p.Flush(); err != nil {
		in.close()
		return rep.damaged, err
	}
	if err := ring.WriteLines(w); err != nil {
		in.close()
		return rep.damaged, err
	}
	w.mute = false
	out.w = w
	go followStore(ctx, in, rep, done)
	return rep.damaged, nil
}

// followStore reads a store input on into sink (a damageReporter whose
// sink is a *views.LogSink) until ctx ends, then closes its printer, and
// calls done.
func followStore(ctx context.Context, in *input, rep *damageReporter, done func(damaged bool, err error)) {
	defer in.close()
	in.store.follow(ctx)
	sink := rep.Sink.(*views.LogSink)
	err := segments.ScanAny(ctx, in.r, segments.ScanOptions{IdleAfter: liveIdle, Store: true}, rep)
	sink.A.Flush()
	sink.P.Close()
	if err != nil && !errors.Is(err, context.Canceled) {
		err = inputError(in.name, err)
	} else {
		err = nil
	}
	done(rep.damaged, err)
}

// consumer is one run of ds tail --consumer NAME: the stores it reads,
// each with its own saved cursor of NAME.
type consumer struct {
	name   string
	stores []*storeSrc
	// raise holds the streams whose saved cursor was below their trim
	// horizon H, with H-1: what was trimmed counts as consumed.
	raise     views.Cursor
	lastSaved string // the text of the last cursor saved, to save a change only
	stderr    io.Writer
	held      map[frames.StreamID]bool // streams whose cursor a gap held back (said once)
}

// openConsumer opens the stores named (each must be one) and returns the
// cursor NAME resumes from: per stream, the position saved (the lowest,
// for a stream in several stores; none for a stream NAME never read, which
// is then read from its first kept frame). A cursor below a stream's trim
// horizon H resumes at H, and that is said on stderr.
func openConsumer(name string, dirs []string, stderr io.Writer) (*consumer, views.Cursor, error) {
	c := &consumer{name: name, raise: views.Cursor{}, stderr: stderr}
	start := views.Cursor{}
	for _, dir := range dirs {
		src, err := openStoreSrc(dir)
		if err != nil {
			return nil, nil, err
		}
		c.stores = append(c.stores, src)
		saved, _, err := src.st.Consumer(name)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: consumer %s: %w", src.dir, name, err)
		}
		streams, err := src.streams(0)
		if err != nil {
			return nil, nil, err
		}
		before := map[frames.StreamID]frames.Position{}
		for _, ss := range streams {
			before[ss.Desc.Stream] = ss.Before
		}
		for id, pos := range saved {
			if old, ok := start[id]; ok && old <= pos {
				continue
			}
			start[id] = pos
			if h := before[id]; h > 0 && pos+1 < h {
				if _, said := c.raise[id]; !said {
					fmt.Fprintf(stderr, "ds: consumer %s: %s: positions below %d were trimmed; resuming at %d\n", name, id, h, h)
				}
				c.raise[id] = h - 1
			}
		}
	}
	return c, start, nil
}

// save saves cur as the consumer's cursor in each store, for the streams
// that store holds (SaveConsumer keeps the later of the saved position and
// the given one, per stream), unless it is what was saved last.
func (c *consumer) save(cur views.Cursor) error {
	return c.saveBefore(cur, nil)
}

// saveBefore is save with the cursor of each stream that had a gap kept
// before it (holes: the gap's first position, views.Printer.Holes): the
// gap may be filled later (a late copy ingested), and a consumer must
// never skip what arrives (at least once). What follows the gap is shown
// again at the next read, until the gap is filled or trimmed; the first
// time, stderr says so.
func (c *consumer) saveBefore(cur, holes views.Cursor) error {
	all := views.Cursor{}
	for id, pos := range cur {
		if h, ok := holes[id]; ok && pos >= h {
			if c.held == nil {
				c.held = map[frames.StreamID]bool{}
			}
			if !c.held[id] && c.stderr != nil {
				c.held[id] = true
				fmt.Fprintf(c.stderr, "ds: consumer %s: %s: position %d is missing, so its cursor stays at %d: what follows is read again until it arrives or is trimmed (ds trim)\n", c.name, id, h, h-1)
			}
			pos = h - 1
		}
		all[id] = pos
	}
	mergeCursor(all, c.raise)
	text := all.String()
	if text == c.lastSaved {
		return nil
	}
	c.lastSaved = text
	for _, src := range c.stores {
		streams, err := src.streams(0)
		if err != nil {
			return err
		}
		sub := map[frames.StreamID]frames.Position{}
		for _, ss := range streams {
			if pos, ok := all[ss.Desc.Stream]; ok {
				sub[ss.Desc.Stream] = pos
			}
		}
		if len(sub) == 0 {
			continue
		}
		if err := src.st.SaveConsumer(c.name, sub); err != nil {
			return fmt.Errorf("%s: saving consumer %s: %w", src.dir, c.name, err)
		}
	}
	return nil
}

// tailConsumer is ds tail --consumer NAME STORE…: everything after the
// consumer's saved cursor (at most limit frames of each stream, unless
// limit < 0), merged as ds log merges, then, once the output is written,
// the cursor of what was printed saved in each store. With follow, it
// then follows the stores, saving whenever the output goes quiet (and at
// the end): at-least-once, as ds tail --cursor-file.
func tailConsumer(ctx context.Context, name string, opts views.LogOptions, dirs []string, limit int, follow bool, stdin io.Reader, stdout, stderr io.Writer) error {
	cons, start, err := openConsumer(name, dirs, stderr)
	if err != nil {
		return err
	}
	if limit == 0 {
		return nil // as a cursor read with limit 0: nothing, and nothing moves
	}
	after := views.Cursor{}
	mergeCursor(after, start)
	for id, pos := range opts.Select.After { // --after wins
		after[id] = pos
	}
	opts.Select.After = after
	p := views.NewPrinter(stdout, opts)
	expectStreams(p, dirs)
	sink := views.NewLogSink(p, 0)
	if limit > 0 {
		old := sink.A
		lim := &frameLimit{item: p.Item, after: after, max: limit, taken: map[frames.StreamID]int{}}
		sink.A = segments.NewAssembler(0, lim.emit)
		old.Close()
	}
	var saveErr error
	save := func() {
		// The output went quiet: what the printer took in is written
		// out (Idle(true) flushed the lines held), so its cursor may be
		// saved.
		if p.Flush() == nil && saveErr == nil {
			saveErr = cons.saveBefore(p.Cursor(), p.Holes())
		}
	}
	err = scanInputs(ctx, dirs, stdin, stderr, follow, func(in *input) segments.Sink {
		s := segments.Sink(inputLogSink{sink, in.name})
		if follow {
			s = quietSaver{s, save}
		}
		return s
	}, nil)
	sink.A.Flush()
	if cerr := p.Close(); cerr != nil {
		if isEPIPE(cerr) {
			return err // the output failed: the cursor stays
		}
		return cerr
	}
	if l := p.Losses(); opts.Format == views.FormatCat && l.Gaps+l.Drops+l.Transport > 0 {
		warnCatLosses(stderr, l)
	}
	warnSelection(stderr, p)
	if saveErr != nil {
		return saveErr
	}
	if serr := cons.saveBefore(p.Cursor(), p.Holes()); serr != nil {
		return serr
	}
	return err
}

// quietSaver is a sink that calls save after its sink, an Idler, was told
// that the inputs went quiet.
type quietSaver struct {
	segments.Sink
	save func()
}

// Idle implements segments.Idler.
func (q quietSaver) Idle(quiet bool) {
	if i, ok := q.Sink.(segments.Idler); ok {
		i.Idle(quiet)
	}
	if quiet {
		q.save()
	}
}

// frameLimit passes the assembled items of each stream to item (a
// printer's) up to
// and including the max-th frame after the stream's cursor (ds tail
// --consumer -n N: a cursor read with a limit, counted in positions, so
// frames the channel filters hide count too, as the cursor passes them),
// and nothing of the stream after it.
type frameLimit struct {
	item  func(segments.Item)
	after views.Cursor
	max   int
	taken map[frames.StreamID]int // frames passed after the cursor; max+1: the stream is done
}

func (l *frameLimit) emit(it segments.Item) {
	n := l.taken[it.Stream]
	if n >= l.max {
		return
	}
	if it.Kind == segments.ItemFrame {
		if pos, ok := l.after[it.Stream]; !ok || it.Frame.Position > pos {
			l.taken[it.Stream] = n + 1
		}
	}
	l.item(it)
}

package segments

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ds-telemetry/ds/pkg/catalogfile"
	"github.com/ds-telemetry/ds/pkg/frames"
)

// Defaults of [IngestOptions].
const (
	// DefaultCommitInterval is how long frames wait, buffered, before a
	// commit stores them (1 s).
	DefaultCommitInterval = time.Second
	// DefaultCommitBytes is how much an ingest buffers before it commits,
	// in bytes (8 MiB: under ds ingest's soft memory limit of 44 MiB it
	// then peaks under 64 MiB of RSS, ARCHITECTURE.md §7).
	DefaultCommitBytes = 8 << 20
)

// ingestFrameOverhead is what a buffered frame counts toward
// IngestOptions.CommitBytes beyond its payload, in bytes.
const ingestFrameOverhead = 64

// IngestOptions configures [Store.Ingest]. The zero value is valid.
type IngestOptions struct {
	// CommitInterval bounds how long frames stay buffered: a commit
	// happens at least this often while something is buffered (a live
	// input, read as it comes). 0 means DefaultCommitInterval.
	CommitInterval time.Duration
	// CommitBytes commits when this much is buffered, in bytes (payloads
	// plus 64 bytes a frame), at the end of the input block being read
	// (its frames are then stored as the block, not compressed again),
	// or at twice it within a block. 0 means DefaultCommitBytes.
	CommitBytes int
	// TempDir is unused by this version: chunks are written in STORE/tmp,
	// which is on the store's file system, so that a rename commits them.
	// It is kept for callers that set it.
	TempDir string
	// Acked, if not nil, is called after each commit is durable (its
	// chunks and files synced and renamed), with what it stored: a
	// caller may then acknowledge that data. It is called from the
	// goroutine that called Ingest, without the store's lock.
	Acked func(Commit)
	// Warn, if not nil, is told of damage in the input (the damaged byte
	// range, a *CorruptError inside) and of conflicts (a
	// *FrameConflictError), each an error whose text starts with the
	// input's name. Ingest goes on after each.
	Warn func(error)
	// Store says that the input is a store's read-out ([Store.OpenStream]),
	// whose Trimmed records hide the frames below them (the store kept
	// them in a chunk that straddles its horizon). In any other input (a
	// capture file, a pipe) a Trimmed record is not this store's word and
	// hides nothing: its frames are stored (ds-format(5) "Trimmed").
	Store bool
}

// Commit is what one commit of [Store.Ingest] stored.
type Commit struct {
	Input string // the name given to Ingest
	// Frames counts the frames stored: new positions. Duplicates counts
	// frames dropped as copies of a frame already stored or earlier in
	// the batch (same position, channel and payload); Conflicts, frames
	// refused because another payload is stored at their position;
	// Trimmed, frames below their stream's trim horizon, dropped.
	Frames, Duplicates, Conflicts, Trimmed uint64
	// Streams lists the streams the commit changed (new frames, a new
	// stream, new channels or the stream's end), in the order the input
	// named them first.
	Streams []frames.StreamID
	// Offset is the input offset, in bytes, before which every entry of
	// the input has been committed: ingesting the input again from a
	// segment boundary at or before it loses nothing. At the end of the
	// input it is the input's size.
	Offset int64
}

// IngestReport sums up one [Store.Ingest].
type IngestReport struct {
	Frames, Duplicates, Conflicts, Trimmed uint64 // as in Commit, for the whole input
	Commits                                int    // commits that stored something
	Damaged                                bool   // the input had damaged ranges (reported through Warn)
}

// A FrameConflictError reports a frame refused by [Store.Ingest] because
// a different payload (or channel) is already stored, or was met earlier
// in the same commit, at its position: the first copy stays (CONFORMANCE
// §3.2).
type FrameConflictError struct {
	Input    string
	Stream   frames.StreamID
	Position frames.Position
	Channel  frames.ChannelID // the refused frame's
	Bytes    int              // its payload size
}

func (e *FrameConflictError) Error() string {
	return fmt.Sprintf("%s: %s position %d: conflict: a frame (channel %d, %d bytes) differs from the one stored at its position, which stays", e.Input, e.Stream, e.Position, e.Channel, e.Bytes)
}

// ingestStream is what an ingest holds of one stream.
type ingestStream struct {
	id   frames.StreamID
	desc frames.StreamDescriptor
	// cat is what the input declared of it, and after a commit the
	// stream's catalog.json as that commit left it, with what the input
	// declared since (catFile identifies the file then).
	cat *catalogfile.Catalog
	// catFile identifies catalog.json as the last commit left it (nil
	// before one): a commit that finds the file unchanged takes cat as
	// the stored catalog instead of reading the file and merging cat
	// into it, which for 120 000 channels held two catalogs of 12 MiB at
	// once (issue 21 item 5) and decoded one at every commit.
	catFile *fileIdentity
	// catChanged says that cat has had declarations since the last
	// commit; batch and ended are what awaits the next one.
	catChanged bool
	batch      []ingestFrame
	ended      bool
	// horizon is the highest Trimmed record of the input for the stream
	// when the input is another store's read-out (IngestOptions.Store):
	// frames below are dropped.
	horizon frames.Position
	refused error // a catalog conflict: the stream's frames are dropped
	// chunks are the chunks this ingest wrote, which stream.json's index
	// may lack (it is written every storeIndexEvery chunks and at the
	// end): they need not be read to be counted.
	chunks map[string]storeChunkMeta
}

// ingestFrame is a buffered frame of the input and the Block record it
// was read from (nil: a plain record).
type ingestFrame struct {
	frames.Frame
	blk *ingestBlock
}

// ingestBlock is a Block record of the input whose frames an ingest
// buffers: a chunk that stores exactly its frames, in its order, from the
// start of a block of the chunk copies its stored body
// ([Writer.CopyBlock]) instead of compressing them again, as ds merge does
// (issue 23 item 3).
type ingestBlock struct {
	body []byte // the record's stored body ([Reader.Block]), copied
	// n counts the block's frames the ingest buffered, last the position
	// of the last; bad says that the block cannot be copied: it holds
	// other records than frames of one stream in increasing position
	// order (a stable sort by position could reorder them), or frames of
	// a refused stream.
	n    int
	last frames.Position
	bad  bool
}

// storeIndexEvery is how many chunks an ingest commits to a stream before
// it updates the stream's stream.json index (and at its end): the index is
// a cache, and writing it durably at every commit would double the
// commit's syncs.
const storeIndexEvery = 16

func (st *ingestStream) pending() bool {
	return st.refused == nil && (st.catChanged || st.ended || len(st.batch) > 0)
}

// storeIngest is one run of Store.Ingest.
type storeIngest struct {
	s        *Store
	name     string
	opts     IngestOptions
	streams  map[frames.StreamID]*ingestStream
	order    []*ingestStream
	buffered int       // bytes buffered
	since    time.Time // when the oldest pending thing was buffered
	pending  bool
	// due says that CommitBytes are buffered: the commit waits for the
	// end of the input's block being read (lastBlk), so that the block's
	// frames go to one chunk and are copied, not compressed again (up to
	// twice CommitBytes buffered).
	due     bool
	lastBlk *ingestBlock

	rep  IngestReport
	errs []error
}

// ingestRun is a run of entries of the input, read by the reading
// goroutine, followed by err: a *CorruptError (reading goes on), io.EOF
// or a read error (final).
type ingestRun struct {
	entries []Entry
	blocks  []*ingestBlock // per entry: the Block record it was read from, or nil
	err     error
}

// A CountingReader counts the bytes read through it from R. N may be read
// while another goroutine reads (a scan that returns when its context
// ends may leave its reader in a Read).
type CountingReader struct {
	R io.Reader
	n atomic.Int64
}

// Read reads from R and counts what it returned.
func (c *CountingReader) Read(p []byte) (int, error) {
	n, err := c.R.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// N returns the number of bytes read so far.
func (c *CountingReader) N() int64 { return c.n.Load() }

// ReadingFile reports the file under R (a FileInput).
func (c *CountingReader) ReadingFile() (io.ReaderAt, int64, int64, bool) { return fileAt(c.R) }

// Ingest reads a DSS capture from r (a file, or a live pipe read as it
// comes; name names it in reports) and stores its frames. Frames are
// buffered per stream and committed when IngestOptions.CommitBytes are
// buffered, when IngestOptions.CommitInterval has passed with something
// buffered, at each StreamEnded record, and at the end of input.
//
// A commit takes the store's lock (waiting for another storeIngest's commit)
// and, per stream: sorts the batch by position (stable: the first copy
// wins), collapses duplicates within it, compares it with the frames
// already stored at those positions (reading only the chunks whose range
// overlaps the batch's), drops identical copies (Duplicates) and refuses
// different ones (Conflicts, each told to Warn as a *FrameConflictError;
// the stored frame stays), drops frames below the stream's trim horizon
// (Trimmed), and writes the new frames as one chunk with the stream's
// descriptor and full catalog (see [Store], "Commits and crashes"). Only
// then is IngestOptions.Acked called. Ingest is thus idempotent (the
// same capture twice stores nothing new) and order-independent (any
// arrival order of any cut of a stream stores the same frames).
//
// A channel declaration that conflicts with the store's catalog of its
// stream, or with the input's own earlier one (same id, other descriptor;
// or a name given to two ids), is an error for that stream: its frames in
// this input are not stored, the other streams' are, and the error is
// returned at the end, joined with any other (it matches
// catalogfile.ErrConflict). Damage in the input is told to Warn with its
// byte range; the good frames around it are stored and
// IngestReport.Damaged is set.
//
// When ctx ends, Ingest commits what it holds and returns ctx.Err(): the
// rest of the input may be ingested later (again from its start: what is
// stored already is a duplicate). A failed commit (an I/O error) ends
// Ingest with that error; what earlier commits stored stays. Ingest does
// not close r; when it returns before r's end (ctx, an error), the
// goroutine reading r stops at its next read.
func (s *Store) Ingest(ctx context.Context, name string, r io.Reader, opts IngestOptions) (IngestReport, error) {
	if opts.CommitInterval <= 0 {
		opts.CommitInterval = DefaultCommitInterval
	}
	if opts.CommitBytes <= 0 {
		opts.CommitBytes = DefaultCommitBytes
	}
	in := &storeIngest{s: s, name: name, opts: opts, streams: make(map[frames.StreamID]*ingestStream)}
	cr := &CountingReader{R: r}
	batches := make(chan ingestRun, 4)
	// Runs go back to the reading goroutine once added: entries are 128
	// bytes, and a run's slices made anew each time were half of what an
	// ingest allocated (the collector's work with it).
	free := make(chan ingestRun, 6)
	stop := make(chan struct{})
	defer close(stop)
	go ingestRead(cr, batches, free, stop)

	tick := max(opts.CommitInterval/4, time.Millisecond)
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	lastOffset := int64(0)
	for {
		select {
		case <-ctx.Done():
			return in.finish(lastOffset, ctx.Err())
		case <-ticker.C:
			if in.pending && time.Since(in.since) >= opts.CommitInterval {
				if err := in.commit(lastOffset); err != nil {
					return in.rep, err
				}
			}
		case b := <-batches:
			for i := range b.entries {
				e, blk := &b.entries[i], b.blocks[i]
				if in.due && (blk == nil || blk != in.lastBlk) {
					// The block read when CommitBytes were reached has
					// ended.
					if err := in.commit(lastOffset); err != nil {
						return in.rep, err
					}
				}
				lastOffset, in.lastBlk = e.Offset, blk
				commitNow := in.add(e, blk)
				switch {
				case commitNow || in.buffered >= 2*opts.CommitBytes:
					if err := in.commit(lastOffset); err != nil {
						return in.rep, err
					}
				case in.buffered >= opts.CommitBytes:
					in.due = in.pending
				}
			}
			if b.err == nil {
				clear(b.entries)
				clear(b.blocks)
				select {
				case free <- ingestRun{entries: b.entries[:0], blocks: b.blocks[:0]}:
				default:
				}
			}
			var ce *CorruptError
			switch {
			case b.err == nil:
			case errors.As(b.err, &ce):
				in.rep.Damaged = true
				in.warn(fmt.Errorf("%s: %w", name, ingestDamage(ce)))
			case b.err == io.EOF:
				return in.finish(cr.N(), nil)
			default:
				return in.finish(lastOffset, fmt.Errorf("%s: %w", name, b.err))
			}
		}
	}
}

// ingestDamage says what a damaged range of an input is.
func ingestDamage(ce *CorruptError) error {
	if errors.Is(ce, io.ErrUnexpectedEOF) {
		return fmt.Errorf("torn tail at byte %d (the writer stopped mid-record): %w", ce.Offset, ce)
	}
	if errors.Is(ce, ErrHeaderRepaired) {
		return fmt.Errorf("bytes %d–%d damaged: %w", ce.Offset, ce.End-1, ce)
	}
	return fmt.Errorf("bytes %d–%d unreadable, skipped: %w", ce.Offset, ce.End-1, ce)
}

// ingestArena is the size, in bytes, of the pieces of memory that the
// reading goroutine copies payloads into: one allocation for many frames,
// not one a frame.
const ingestArena = 256 << 10

// ingestRunLen is the most entries a run of the reading goroutine holds.
const ingestRunLen = 256

// ingestRead reads entries from r and sends them in runs: a run ends when
// it is ingestRunLen entries long, when the reader would wait for input, and at
// damage or the end. Each entry read from a Block record is sent with
// that block (its body copied once). Runs come back on free to be filled
// again (none may: it makes new ones). It stops when stop is closed.
func ingestRead(r io.Reader, out chan<- ingestRun, free <-chan ingestRun, stop <-chan struct{}) {
	// Summaries are read as entries (and ignored by add), not skipped:
	// a skipped summary made Buffered count bytes that Next then passed
	// over, so the run before it was held until more input came, and a
	// live input's last frames (ds emit's, before its closing summary)
	// were not committed by an interrupt. A large catalog that repeats
	// the one its stream's previous header carried declares nothing new
	// and is not decoded again (a 16 MiB header's descriptors are 8 MB).
	rd := NewReader(r, ReaderOptions{SkipRepeatedCatalogs: true})
	var (
		run    ingestRun
		arena  []byte
		blk    *ingestBlock
		blkOff int64
		e      Entry
	)
	send := func(b ingestRun) bool {
		select {
		case out <- b:
			return true
		case <-stop:
			return false
		}
	}
	for {
		err := rd.NextView(&e)
		if err == nil {
			if e.Kind == EntryFrame {
				// The payload aliases the reader's buffers: copied into
				// the arena, which the frames then share.
				n := len(e.Frame.Payload)
				if len(arena)+n > cap(arena) {
					arena = make([]byte, 0, max(ingestArena, n))
				}
				at := len(arena)
				arena = append(arena, e.Frame.Payload...)
				e.Frame.Payload = arena[at:len(arena):len(arena)]
			}
			body, _, ok := rd.Block()
			switch {
			case !ok:
				blk = nil
			case blk == nil || e.Offset != blkOff:
				blk, blkOff = &ingestBlock{body: bytes.Clone(body)}, e.Offset
			}
			if run.entries == nil {
				select {
				case run = <-free:
				default:
					run.entries, run.blocks = make([]Entry, 0, ingestRunLen), make([]*ingestBlock, 0, ingestRunLen)
				}
			}
			run.entries = append(run.entries, e)
			run.blocks = append(run.blocks, blk)
			if len(run.entries) >= ingestRunLen || rd.Buffered() == 0 {
				if !send(run) {
					return
				}
				run = ingestRun{}
			}
			continue
		}
		blk = nil
		run.err = err
		if !send(run) {
			return
		}
		run = ingestRun{}
		var ce *CorruptError
		if !errors.As(err, &ce) {
			return // io.EOF or a sticky error
		}
	}
}

func (in *storeIngest) warn(err error) {
	if in.opts.Warn != nil {
		in.opts.Warn(err)
	}
}

func (in *storeIngest) stream(id frames.StreamID) *ingestStream {
	st := in.streams[id]
	if st == nil {
		st = &ingestStream{id: id, desc: frames.StreamDescriptor{Stream: id}, cat: catalogfile.New()}
		in.streams[id] = st
		in.order = append(in.order, st)
	}
	return st
}

// markPending notes that something awaits a commit.
func (in *storeIngest) markPending() {
	if !in.pending {
		in.pending, in.since = true, time.Now()
	}
}

// add takes one entry of the input, read from Block record blk (nil: a
// plain record). It reports whether a commit is due at once (a
// StreamEnded record).
func (in *storeIngest) add(e *Entry, blk *ingestBlock) bool {
	if blk != nil && e.Kind != EntryFrame {
		blk.bad = true
	}
	switch e.Kind {
	case EntrySegment:
		st := in.stream(e.Stream)
		st.desc = e.Header.Stream
		_, known := st.cat.Stream(st.id)
		in.declare(st, !known, func() error { return st.cat.AddStream(e.Header.Stream, in.name) })
		if st.refused != nil || len(e.Header.Channels) == 0 {
			break
		}
		if st.cat.Len(st.id) == 0 {
			// A stream's first catalog: the header's descriptors become
			// the catalog's (the Reader made them for this entry alone).
			var added bool
			in.declare(st, false, func() (err error) {
				added, err = st.cat.AdoptChannels(st.id, e.Header.Channels, in.name)
				return err
			})
			if added && st.refused == nil {
				in.declare(st, true, func() error { return nil })
			}
			e.Header.Channels = nil
			break
		}
		st.cat.Grow(st.id, len(e.Header.Channels))
		for _, d := range e.Header.Channels {
			_, known := st.cat.Lookup(st.id, d.ID)
			in.declare(st, !known, func() error { return st.cat.AddChannel(d, in.name) })
		}
	case EntryChannel:
		st := in.stream(e.Stream)
		_, known := st.cat.Lookup(st.id, e.Channel.ID)
		in.declare(st, !known, func() error { return st.cat.AddChannel(*e.Channel, in.name) })
	case EntryFrame:
		st := in.stream(e.Stream)
		if st.refused != nil {
			if blk != nil {
				blk.bad = true
			}
			return false
		}
		if blk != nil {
			if blk.n > 0 && e.Frame.Position <= blk.last {
				blk.bad = true
			}
			blk.n++
			blk.last = e.Frame.Position
		}
		st.batch = append(st.batch, ingestFrame{e.Frame, blk})
		in.buffered += len(e.Frame.Payload) + ingestFrameOverhead
		in.markPending()
	case EntryStreamEnded:
		st := in.stream(e.Stream)
		if st.refused != nil {
			return false
		}
		st.ended = true
		in.markPending()
		return true
	case EntryTrimmed:
		if in.opts.Store {
			st := in.stream(e.Stream)
			st.horizon = max(st.horizon, e.Frame.Position)
		}
	}
	return false
}

// declare applies a declaration of the input to st's catalog (isNew: of
// a stream or channel id it did not hold); a conflict refuses the stream.
func (in *storeIngest) declare(st *ingestStream, isNew bool, add func() error) {
	if st.refused != nil {
		return
	}
	if err := add(); err != nil {
		in.refuse(st, &refusedError{in.name, st.id, err})
		return
	}
	if isNew {
		st.catChanged = true
		in.markPending()
	}
}

// refusedError is a stream of an input that Ingest does not store: its
// catalog conflicts (Err, a *catalogfile.ConflictError or several joined).
// Its text is one line.
type refusedError struct {
	input  string
	stream frames.StreamID
	err    error
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("%s: stream %s: not stored: %s", e.input, e.stream, strings.ReplaceAll(e.err.Error(), "\n", "; "))
}

func (e *refusedError) Unwrap() error { return e.err }

// Is makes every refused stream match ErrStreamRefused.
func (e *refusedError) Is(target error) bool { return target == ErrStreamRefused }

func (in *storeIngest) refuse(st *ingestStream, err error) {
	st.refused = err
	st.batch, st.ended, st.catChanged = nil, false, false
	in.errs = append(in.errs, err)
}

// saveIndexes writes the stream.json index of every stream this ingest
// wrote chunks to and whose index lacks some, under the store's lock.
func (in *storeIngest) saveIndexes() error {
	var todo []*ingestStream
	for _, st := range in.order {
		if len(st.chunks) > 0 {
			todo = append(todo, st)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	if err := in.s.lock(); err != nil {
		return err
	}
	defer in.s.unlock()
	for _, st := range todo {
		state, err := loadStoredStream(in.s.streamDir(st.id), st.chunks)
		if err != nil {
			return err
		}
		if state.stale {
			if err := in.s.saveMeta(state); err != nil {
				return err
			}
		}
		st.chunks = nil
	}
	return nil
}

// finish ends an ingest: it commits what is pending (offset is
// Commit.Offset), writes the indexes, and returns the report and err
// joined with the streams' errors.
func (in *storeIngest) finish(offset int64, err error) (IngestReport, error) {
	if cerr := in.commit(offset); cerr != nil {
		return in.rep, cerr
	}
	if ierr := in.saveIndexes(); ierr != nil {
		return in.rep, ierr
	}
	return in.rep, errors.Join(append(in.errs, err)...)
}

// commit stores what is pending, under the store's lock, then calls
// Acked. offset is Commit.Offset.
func (in *storeIngest) commit(offset int64) error {
	in.due = false
	if !in.pending {
		return nil
	}
	c := Commit{Input: in.name, Offset: offset}
	if err := in.s.lock(); err != nil {
		return err
	}
	var pend []*pendingChunk
	fail := func(err error) error {
		for _, pc := range pend {
			pc.discard()
		}
		in.s.unlock()
		return err
	}
	var done []*ingestStream
	for _, st := range in.order {
		if !st.pending() {
			continue
		}
		changed, pc, err := in.s.commitStream(st, in.name, &c, in.warn)
		var ce *catalogfile.ConflictError
		if errors.As(err, &ce) {
			in.refuse(st, &refusedError{in.name, st.id, err})
			continue
		}
		if err != nil {
			return fail(err)
		}
		if pc != nil {
			pend = append(pend, pc)
		}
		if changed {
			c.Streams = append(c.Streams, st.id)
		}
		done = append(done, st)
	}
	// The chunks of all streams are synced at once: concurrent syncs
	// share the file system's journal commits.
	if err := syncChunks(pend); err != nil {
		return fail(err)
	}
	for i, pc := range pend {
		if err := in.s.installChunk(pc, &c); err != nil {
			pend = pend[i+1:]
			return fail(err)
		}
	}
	for _, st := range done {
		clear(st.batch) // the payloads go; the slice is reused
		st.batch, st.ended, st.catChanged = st.batch[:0], false, false
	}
	in.s.unlock()
	in.buffered, in.pending = 0, false
	in.rep.Frames += c.Frames
	in.rep.Duplicates += c.Duplicates
	in.rep.Conflicts += c.Conflicts
	in.rep.Trimmed += c.Trimmed
	in.rep.Commits++
	if in.opts.Acked != nil {
		in.opts.Acked(c)
	}
	return nil
}

// commitStream prepares the commit of one stream's pending batch (see
// Ingest): it writes the stream's catalog and descriptor if they are new,
// and its new frames to a temporary chunk file, not yet synced, which
// installChunk puts in place. It reports whether it changes the stream.
// The caller holds the lock. A catalog conflict is a
// *catalogfile.ConflictError, and changes nothing.
func (s *Store) commitStream(st *ingestStream, input string, c *Commit, warn func(error)) (bool, *pendingChunk, error) {
	dir := s.streamDir(st.id)
	state, err := loadStoredStream(dir, st.chunks)
	isNew := errors.Is(err, fs.ErrNotExist)
	switch {
	case isNew:
		state = &storedStream{dir: dir, meta: &storeMeta{Descriptor: st.desc}, index: make(map[string]storeChunkMeta)}
	case err != nil:
		return false, nil, err
	case state.meta.Descriptor.Stream != st.id:
		return false, nil, fmt.Errorf("%w: the directory of %s holds %s (in %s)", ErrStoreFormat, st.id, state.meta.Descriptor.Stream, dir)
	}
	catPath := filepath.Join(dir, streamCatalogFile)
	cat, catChanged := st.cat, st.catChanged
	if st.catFile == nil || !st.catFile.same(catPath) {
		var err error
		if cat, catChanged, err = mergeStoredCatalog(dir, st, isNew, state); err != nil {
			return false, nil, err
		}
	}
	if e, ok := cat.Stream(st.id); ok && e.Declared {
		state.meta.Descriptor = e.Descriptor
	}

	keep := s.newFrames(state, st, input, c, warn)
	if keep.err != nil {
		// A stored chunk that cannot be read: its frames cannot be told
		// from new ones, and storing them again would duplicate them.
		return false, nil, keep.err
	}
	writeEnded := st.ended && !state.ended()

	if isNew {
		if err := os.MkdirAll(filepath.Join(dir, streamChunks), 0o755); err != nil {
			return false, nil, fmt.Errorf("segments: store: %w", err)
		}
		storeSyncDir(filepath.Join(s.dir, storeStreams))
		storeSyncDir(dir)
	}
	if catChanged || isNew {
		if err := s.writeFileAtomicFunc(catPath, func(w io.Writer) error { _, err := cat.WriteTo(w); return err }); err != nil {
			return false, nil, err
		}
	}
	// cat is now what catalog.json holds (the lock is held: no other
	// process writes it meanwhile).
	st.cat, st.catFile = cat, identify(catPath)
	if isNew {
		if err := s.saveMeta(state); err != nil {
			return false, nil, err
		}
	}
	if len(keep.frames) == 0 && !writeEnded {
		return isNew || catChanged, nil, nil
	}
	pc, err := s.writeChunk(state, cat.Descriptors(st.id), keep.frames, writeEnded)
	if err != nil {
		return false, nil, err
	}
	pc.st = st
	return true, pc, nil
}

// mergeStoredCatalog returns the stream's catalog as catalog.json holds
// it with what st.cat declares merged in, and whether that changed it; a
// conflict is a *catalogfile.ConflictError. Where the file holds nothing
// (a new stream), st.cat is the catalog, not a copy of it.
func mergeStoredCatalog(dir string, st *ingestStream, isNew bool, state *storedStream) (*catalogfile.Catalog, bool, error) {
	cat, err := storeReadCatalog(dir)
	if err != nil {
		return nil, false, err
	}
	if cat.Empty() && isNew {
		return st.cat, !st.cat.Empty(), nil
	}
	changed := false
	if !isNew {
		if _, ok := cat.Stream(st.id); !ok {
			cat.AddStream(state.meta.Descriptor, "") // a catalog.json lost: the stored descriptor rules
			changed = true
		}
	}
	merged, err := cat.MergeChanged(st.cat)
	if err != nil {
		return nil, false, err
	}
	return cat, changed || merged, nil
}

// fileIdentity tells whether a file was replaced or changed since it was
// identified: its device, inode, size, modification and change times.
// ds replaces a store's files by renaming a new one over them (a new
// inode), never in place.
type fileIdentity struct {
	dev, ino, size uint64
	mtime, ctime   int64
}

// identify returns the identity of the file at path, nil where it cannot
// be told (no such file, or a system without inodes).
func identify(path string) *fileIdentity {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	return &fileIdentity{dev: uint64(st.Dev), ino: st.Ino, size: uint64(st.Size), mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
}

// same reports whether the file at path is still the one id identified.
func (id *fileIdentity) same(path string) bool {
	now := identify(path)
	return now != nil && *now == *id
}

// newBatch is the part of a batch that a commit stores.
type newBatch struct {
	frames []ingestFrame
	err    error // a stored chunk could not be read
}

// newFrames sorts st's batch by position and returns the frames not yet
// stored, counting the others in c and telling Warn of conflicts.
func (s *Store) newFrames(state *storedStream, st *ingestStream, input string, c *Commit, warn func(error)) newBatch {
	horizon := max(state.horizon, st.horizon)
	// Filtered in place: the batch is dropped after the commit (or with
	// the ingest, when the commit fails).
	// A frame moves only once one before it was dropped: a frame is 48
	// bytes with pointers, and copying each onto itself cost write
	// barriers while the collector ran.
	n := 0
	for i := range st.batch {
		if st.batch[i].Position < horizon {
			c.Trimmed++
			continue
		}
		if n != i {
			st.batch[n] = st.batch[i]
		}
		n++
	}
	batch := st.batch[:n]
	byPos := func(a, b ingestFrame) int { return cmp.Compare(a.Position, b.Position) }
	if !slices.IsSortedFunc(batch, byPos) {
		slices.SortStableFunc(batch, byPos)
	}
	conflict := func(f ingestFrame) {
		c.Conflicts++
		if warn != nil {
			warn(&FrameConflictError{Input: input, Stream: st.id, Position: f.Position, Channel: f.Channel, Bytes: len(f.Payload)})
		}
	}
	// Copies within the batch: the first stays.
	n = 0
	for i := range batch {
		if n > 0 && batch[n-1].Position == batch[i].Position {
			if storeSameFrame(batch[n-1].Frame, batch[i].Frame) {
				c.Duplicates++
			} else {
				conflict(batch[i])
			}
			continue
		}
		if n != i {
			batch[n] = batch[i]
		}
		n++
	}
	batch = batch[:n]
	if len(batch) == 0 {
		return newBatch{}
	}
	// Copies of stored frames: read the chunks whose range overlaps.
	lo, hi := batch[0].Position, batch[len(batch)-1].Position
	var stored []bool
	for _, ch := range state.chunks {
		if ch.empty || ch.first > hi || ch.last < lo {
			continue
		}
		if stored == nil {
			stored = make([]bool, len(batch))
		}
		err := storeReadChunk(state.chunkPath(ch), func(e *Entry) {
			if e.Kind != EntryFrame {
				return
			}
			i, found := slices.BinarySearchFunc(batch, e.Frame.Position, func(f ingestFrame, p frames.Position) int { return cmp.Compare(f.Position, p) })
			if !found || stored[i] {
				return
			}
			stored[i] = true
			if storeSameFrame(batch[i].Frame, e.Frame) {
				c.Duplicates++
			} else {
				conflict(batch[i])
			}
		})
		if err != nil {
			return newBatch{err: err}
		}
	}
	if stored == nil {
		return newBatch{frames: batch}
	}
	out := batch[:0]
	for i, f := range batch {
		if !stored[i] {
			out = append(out, f)
		}
	}
	return newBatch{frames: out}
}

func storeSameFrame(a, b frames.Frame) bool {
	return a.Channel == b.Channel && bytes.Equal(a.Payload, b.Payload)
}

// pendingChunk is a chunk written to a temporary file by a commit, not
// yet synced nor in place.
type pendingChunk struct {
	st     *ingestStream
	state  *storedStream
	cf     storeChunk
	tmp    *os.File
	frames uint64
	ended  bool
}

// discard removes the temporary file.
func (pc *pendingChunk) discard() {
	if pc.tmp != nil {
		pc.tmp.Close()
		os.Remove(pc.tmp.Name())
		pc.tmp = nil
	}
}

// writeChunk writes frames (in position order) as a new chunk of the
// stream to a temporary file in STORE/tmp, not synced: ended adds the
// StreamEnded record; with no frames the chunk is an end chunk. A run of
// frames that is the whole of an input block (every frame the ingest
// buffered of it, in its order) is written as that block, its stored body
// copied ([Writer.CopyBlock], which checks that the records it would
// compress are the block's): the frames are not compressed again. The
// caller holds the lock, and syncs (syncChunks) and installs
// (installChunk) or discards the chunk; channels, in the order of ids, is
// the writer's from then on.
//
// The writer is the store's last chunk's, reset to the new chunk, keeping
// the buffers it grew: an ingest writes a chunk at every commit (ds
// collect at every batch it fetches), and a writer made anew for each grew
// its block buffer from nothing each time (an eighth of ingest's CPU).
func (s *Store) writeChunk(state *storedStream, channels []frames.ChannelDescriptor, frs []ingestFrame, ended bool) (*pendingChunk, error) {
	pc := &pendingChunk{state: state, frames: uint64(len(frs)), ended: ended}
	if len(frs) == 0 {
		pc.cf = storeChunk{empty: true}
	} else {
		pc.cf = storeChunk{first: frs[0].Position, last: frs[len(frs)-1].Position}
	}
	var err error
	if pc.cf.name, err = storeChunkName(pc.cf.first, pc.cf.last, pc.cf.empty); err != nil {
		return nil, err
	}
	if pc.tmp, err = os.CreateTemp(filepath.Join(s.dir, storeTmp), "chunk-*.tmp"); err != nil {
		return nil, fmt.Errorf("segments: store: %w", err)
	}
	// The Writer buffers: it writes in pieces of 1 MiB. It keeps channels
	// (a fresh slice, Catalog.Descriptors), not a copy: a catalog of
	// 120 000 channels is 8 MiB.
	opts := WriterOptions{Compression: CompressZstd, WriterID: storeWriterID}
	w := s.chunkWriter
	if w != nil {
		err = w.resetTo(pc.tmp, state.meta.Descriptor, channels, opts, true)
	} else if w, err = newWriter(pc.tmp, state.meta.Descriptor, channels, opts, true); err == nil {
		s.chunkWriter = w
	}
	defer func() {
		if w := s.chunkWriter; w != nil {
			w.w, w.catalog = nil, nil // the file and the catalog are not kept
		}
	}()
	for i := 0; err == nil && i < len(frs); {
		// A block is tried at its first frame only: each frame is looked
		// at at most twice.
		blk := frs[i].blk
		if i > 0 && frs[i-1].blk == blk {
			blk = nil
		}
		if n := copyRun(frs[i:], blk); n > 0 {
			err = w.EndBlock()
			for j := i; err == nil && j < i+n; j++ {
				err = w.WriteFrame(frs[j].Frame)
			}
			if err == nil {
				err = w.CopyBlock(blk.body, n)
			}
			i += n
			continue
		}
		err = w.WriteFrame(frs[i].Frame)
		i++
	}
	if err == nil && ended {
		err = w.Close()
	} else if err == nil {
		err = w.EndSegment()
	}
	if err != nil {
		// Its blocks may still be being compressed: not reused.
		s.chunkWriter = nil
		pc.discard()
		return nil, fmt.Errorf("segments: store: write chunk of %s: %w", state.meta.Descriptor.Stream, err)
	}
	return pc, nil
}

// copyRun returns the length of the run of frames at the start of frs that
// is the whole of input block blk and can be copied, 0 if there is none.
func copyRun(frs []ingestFrame, blk *ingestBlock) int {
	if blk == nil || blk.bad || blk.n > len(frs) {
		return 0
	}
	for _, f := range frs[:blk.n] {
		if f.blk != blk {
			return 0
		}
	}
	return blk.n
}

// syncChunks syncs and closes the temporary files of chunks, all at once.
// On error the files stay for the caller to discard.
func syncChunks(pend []*pendingChunk) error {
	errs := make([]error, len(pend))
	var wg sync.WaitGroup
	for i, pc := range pend {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := pc.tmp.Sync(); err != nil {
				errs[i] = fmt.Errorf("segments: store: sync chunk of %s: %w", pc.state.meta.Descriptor.Stream, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// installChunk renames a synced chunk into its stream's chunks/, syncs
// the directory, and records the chunk in the stream's index (written
// every storeIndexEvery chunks, and when it holds the stream's end). The
// caller holds the lock.
func (s *Store) installChunk(pc *pendingChunk, c *Commit) error {
	state, st := pc.state, pc.st
	if err := pc.tmp.Close(); err != nil {
		return fmt.Errorf("segments: store: %w", err)
	}
	chunks := filepath.Join(state.dir, streamChunks)
	if err := os.Rename(pc.tmp.Name(), filepath.Join(chunks, pc.cf.name)); err != nil {
		return fmt.Errorf("segments: store: %w", err)
	}
	pc.tmp = nil
	storeSyncDir(chunks)
	state.chunks = append(state.chunks, pc.cf)
	slices.SortFunc(state.chunks, func(a, b storeChunk) int { return cmp.Compare(a.name, b.name) })
	cm := storeChunkMeta{Name: pc.cf.name, Frames: pc.frames, Ended: pc.ended}
	state.index[pc.cf.name] = cm
	if st.chunks == nil {
		st.chunks = make(map[string]storeChunkMeta)
	}
	st.chunks[pc.cf.name] = cm
	state.stale = true
	state.unindexed++
	c.Frames += pc.frames
	if pc.ended {
		state.meta.Ended = true
	}
	if pc.ended || state.unindexed >= storeIndexEvery {
		return s.saveMeta(state)
	}
	return nil
}

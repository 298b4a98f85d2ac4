package segments

import (
	"cmp"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// Compression selects how a [Writer] stores frames.
type Compression uint8

const (
	// CompressNone writes every record plain.
	CompressNone Compression = iota
	// CompressZstd batches frames into zstd Block records of up to
	// WriterOptions.BlockSize bytes of uncompressed records.
	CompressZstd
)

// String returns "none" or "zstd", the spellings of --compress.
func (c Compression) String() string {
	switch c {
	case CompressNone:
		return "none"
	case CompressZstd:
		return "zstd"
	}
	return fmt.Sprintf("Compression(%d)", uint8(c))
}

// ParseCompression accepts "none" and "zstd".
func ParseCompression(s string) (Compression, error) {
	switch s {
	case "none":
		return CompressNone, nil
	case "zstd":
		return CompressZstd, nil
	}
	return 0, fmt.Errorf("segments: unknown compression %q (want none or zstd)", s)
}

// Defaults of [WriterOptions].
const (
	// DefaultSegmentSize is the size of a segment's stored records, in
	// bytes, at which a Writer starts a new segment (4 MiB).
	DefaultSegmentSize = 4 << 20
	// DefaultSegmentContent is the uncompressed size of a segment's
	// records, in bytes, at which a Writer starts a new segment (16 MiB):
	// 16 blocks of 1 MiB, however well they compress.
	DefaultSegmentContent = 16 << 20
	// DefaultSegmentAge is the age at which a Writer ends a segment at
	// the next flush (10 minutes), so that a slow producer's segments
	// span minutes, not hours.
	DefaultSegmentAge = 10 * time.Minute
	// DefaultWriterID is the writer identity a Writer puts in its headers
	// unless told otherwise.
	DefaultWriterID = "ds"
)

// writeChunk is the amount of buffered output, in bytes, at which a Writer
// writes to its io.Writer without waiting for Flush (1 MiB): large writes
// keep system calls rare.
const writeChunk = 1 << 20

// WriterOptions configures a [Writer]. The zero value is valid.
type WriterOptions struct {
	// SegmentSize is the size, in bytes, of a segment's stored records
	// (its header and HeaderCopy not counted) after which the writer
	// starts a new segment at the next record (ds-format(5) "SEGMENT
	// ROTATION"). 0 means DefaultSegmentSize.
	SegmentSize int64
	// SegmentContent is the uncompressed size of a segment's records, in
	// bytes, after which the writer starts a new segment at the next
	// record: plain records count their size, a Block its uncompressed
	// content (ds-format(5) "SEGMENT ROTATION"), so that a capture that
	// compresses well still has a segment every 16 blocks. 0 means
	// DefaultSegmentContent.
	SegmentContent int64
	// SegmentAge is the age at which the writer ends a segment at the next
	// [Writer.Flush] (its summary is written, and the next record starts
	// a new segment): 0 means DefaultSegmentAge; a negative age never
	// ends one. Age is measured with Now from the segment's header.
	SegmentAge time.Duration
	// Now is the writer's clock, for SegmentAge: nil means time.Now.
	// Tests pass a fake one.
	Now func() time.Time
	// Compression selects plain records or zstd blocks.
	Compression Compression
	// BlockSize is the uncompressed size, in bytes, at which a zstd block
	// is closed: 0 means wireformat.DefaultBlockSize (1 MiB); it is capped
	// at wireformat.MaxBlockSize. Larger blocks compress better; one
	// flipped bit costs at most one block.
	BlockSize int
	// WriterID is the writer identity of the headers, e.g. "ds 0.1.0":
	// UTF-8 without control characters. "" means DefaultWriterID.
	WriterID string
	// StoreWhenBusy, with CompressZstd, chooses each closed block's codec
	// by how far compression is behind instead of waiting on it: zstd's
	// default level (about zstd -3) while fewer blocks than cores are
	// being compressed, its fastest level while fewer than busyBlocks
	// are, S2 (ds-format(5) codec 02) when busyBlocks are, and plain
	// records when Busy says the producer falls behind (up to
	// storedBlocks S2 or plain blocks wait behind the zstd ones). The
	// writer then almost never waits on
	// compression, only on its io.Writer, at the cost of a larger capture
	// while its producer is faster than zstd. ds wrap and ds host set it,
	// so that a child writing faster than two cores compress fills no
	// queue and loses nothing. Without it a writer compresses every block
	// at zstd's fastest level, and waits when maxPending are pending.
	StoreWhenBusy bool
	// Busy, with StoreWhenBusy, is asked at each closed block whether the
	// writer's producer is falling behind (ds wrap: its queue is over
	// three quarters full); a true answer stores the block plain, so
	// that the writer catches up before anything is dropped. nil means
	// never.
	Busy func() bool
	// Rand is the source of segment ids. nil means crypto/rand; tests pass
	// a deterministic reader to make captures reproducible.
	Rand io.Reader
	// FirstSeq is the sequence number of the first segment header (0: the
	// writer's first segment of its stream). A writer that continues a
	// stream another writer began (ds merge, which ends one stream's
	// writer before starting the next) passes what [Writer.NextSeq] of the
	// earlier one said; a header above 0 tells readers that the stream's
	// earlier segments are elsewhere.
	FirstSeq uint64
	// Keep says which frames each segment's summary keeps a copy of
	// (ds-format(5) "SegmentSummary"), so that ds info can tell what they
	// say from the summaries alone: the producer, which made the payloads,
	// decides; the writer never looks inside one. nil keeps none. It is
	// called for every frame, with the payload valid during the call.
	Keep func(channel frames.ChannelID, payload []byte) Keep
}

// A Writer writes one stream as a DSS capture (ds-format(5)) to an
// io.Writer. It never seeks. The first segment header (with the stream
// descriptor, the catalog given to [NewWriter] and every channel declared
// before it) is written with the first record or flush; a new segment,
// whose header carries the full catalog, starts whenever the current one
// has reached WriterOptions.SegmentSize, and at the next record after a
// channel is declared once the header is out, so that every segment's
// header names every channel its frames use. Each segment ends with a
// SegmentSummary record (its counts, and the frames WriterOptions.Keep
// asks for), which lets a reader walk the capture from its end.
//
// Records are buffered: [Writer.Flush] writes them out (call it at every
// drain tick), [Writer.Sync] also syncs the file, and [Writer.Close] ends
// the stream. Output may also be written at any time when the buffer
// fills. Errors of the underlying io.Writer are sticky: once one occurs,
// every later call returns it. Argument errors (a descriptor of another
// stream, a payload over wireformat.MaxPayloadSize, a conflicting
// declaration) are not sticky and write nothing.
//
// With CompressZstd, closed blocks are compressed by background goroutines
// (up to GOMAXPROCS of them, at least 2 and at most 8) while the caller goes
// on writing; they are written out in order, at the latest by the next
// Flush. The Writer then holds the open block, the blocks in flight and
// their compressed forms, and its output buffer: with 1 MiB blocks, at
// most about 2 MiB per block in flight plus 3 MiB (and the process's
// shared zstd encoders, package wireformat). It writes to its io.Writer in
// pieces of 1 MiB or more, except at Flush, and allocates nothing per
// frame.
//
// A Writer is not safe for concurrent use.
type Writer struct {
	w    io.Writer
	opts WriterOptions
	desc frames.StreamDescriptor
	// catalog is every channel declared so far, sorted by id.
	catalog []frames.ChannelDescriptor

	buf       []byte          // encoded records not yet written to w
	bufSeed   uint32          // CRC seed of the segment of buf's first record
	block     []byte          // inner records of the open zstd block
	blockNext frames.Position // position expected after the block's last frame
	plainLen  int             // size of the open block's records if written plain
	// pending are closed blocks being compressed in the background, in
	// output order; free are finished ones to reuse.
	pending, free []*pendingBlock
	maxPending    int

	started  bool // a segment header has been emitted
	rotate   bool // a channel was declared: start a new segment at the next record
	segEnded bool // EndSegment wrote the current segment's summary: start a new one at the next record
	seq      uint64
	segID    [8]byte
	seed     uint32 // CRC seed of the current segment
	segBytes int64  // bytes of the current segment emitted so far
	segHead  int64  // of those, the header's and its HeaderCopy's
	// segContent is the uncompressed size of the current segment's
	// records so far (blocks by their content), for SegmentContent.
	segContent int64
	segStart   time.Time // when the current segment's header was emitted
	seg        segStats  // what the current segment holds, for its summary
	open       segStats  // what the open block holds

	err    error // sticky
	closed bool

	hdrBuf []byte // streamHeader's pieces
}

// NewWriter returns a Writer of the stream desc to w, whose first segment
// header will carry catalog (which may be nil). Every descriptor of catalog
// must be of desc.Stream, with distinct ids. NewWriter writes nothing to w.
// It returns an error for invalid options or catalog.
func NewWriter(w io.Writer, desc frames.StreamDescriptor, catalog []frames.ChannelDescriptor, opts WriterOptions) (*Writer, error) {
	return newWriter(w, desc, catalog, opts, false)
}

// newWriter is NewWriter; with shared, a catalog in the order of ids is
// kept, clipped, instead of copied (the writer never changes what it
// holds: a channel declared later is inserted into a copy): merge hands
// it the catalog it keeps itself.
func newWriter(w io.Writer, desc frames.StreamDescriptor, catalog []frames.ChannelDescriptor, opts WriterOptions, shared bool) (*Writer, error) {
	if opts.SegmentSize <= 0 {
		opts.SegmentSize = DefaultSegmentSize
	}
	if opts.SegmentContent <= 0 {
		opts.SegmentContent = DefaultSegmentContent
	}
	if opts.SegmentAge == 0 {
		opts.SegmentAge = DefaultSegmentAge
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.BlockSize <= 0 {
		opts.BlockSize = wireformat.DefaultBlockSize
	}
	opts.BlockSize = min(opts.BlockSize, wireformat.MaxBlockSize)
	if opts.WriterID == "" {
		opts.WriterID = DefaultWriterID
	}
	if opts.Rand == nil {
		opts.Rand = rand.Reader
	}
	if opts.Compression > CompressZstd {
		return nil, fmt.Errorf("segments: unknown compression %d", opts.Compression)
	}
	sw := &Writer{w: w, opts: opts, desc: desc, seq: opts.FirstSeq, maxPending: min(max(2, runtime.GOMAXPROCS(0)), 8)}
	if err := sw.setCatalog(catalog, shared); err != nil {
		return nil, err
	}
	// The first header is written with the first record or flush, so that
	// it names the channels declared until then; its id is drawn now and
	// its fields checked, so that a bad identity or id source fails here.
	if _, err := io.ReadFull(opts.Rand, sw.segID[:]); err != nil {
		return nil, fmt.Errorf("segments: segment id: %w", err)
	}
	h := wireformat.Header{Seq: opts.FirstSeq, Writer: opts.WriterID, Stream: desc, Channels: sw.catalog}
	if err := wireformat.CheckHeader(&h); err != nil {
		return nil, fmt.Errorf("segments: segment header: %w", err)
	}
	sw.seg.reset()
	sw.open.reset()
	return sw, nil
}

// setCatalog makes w's catalog of catalog, in the order of ids: a copy
// of it, made with one allocation when it is in that order already (a
// header's catalog, or merge's), else a descriptor at a time; with
// shared, catalog itself, clipped, when it is in that order.
func (w *Writer) setCatalog(catalog []frames.ChannelDescriptor, shared bool) error {
	sorted := true
	for i := range catalog {
		if catalog[i].Stream != w.desc.Stream {
			_, _, err := w.lookup(catalog[i])
			return err
		}
		if i > 0 && catalog[i].ID <= catalog[i-1].ID {
			sorted = false
			break
		}
	}
	switch {
	case sorted && shared:
		w.catalog = slices.Clip(catalog)
		return nil
	case sorted:
		w.catalog = slices.Clone(catalog)
		return nil
	}
	for _, d := range catalog {
		i, found, err := w.lookup(d)
		if err != nil {
			return err
		}
		if !found {
			w.catalog = slices.Insert(w.catalog, i, d)
		}
	}
	return nil
}

// lookup checks d against the catalog: it returns where d belongs, whether
// an identical declaration exists, or an error for a descriptor of another
// stream or a conflicting one.
func (w *Writer) lookup(d frames.ChannelDescriptor) (i int, found bool, err error) {
	if d.Stream != w.desc.Stream {
		return 0, false, fmt.Errorf("segments: channel %d %q is of stream %s, writer is of %s: %w", d.ID, d.Name, d.Stream, w.desc.Stream, wireformat.ErrWrongStream)
	}
	i, found = slices.BinarySearchFunc(w.catalog, d.ID, func(c frames.ChannelDescriptor, id frames.ChannelID) int {
		return cmp.Compare(c.ID, id)
	})
	if found && !sameDescriptor(w.catalog[i], d) {
		return 0, false, fmt.Errorf("%w: channel %d %q, then %q (%s)", ErrConflict, d.ID, w.catalog[i].Name, d.Name, d.Content)
	}
	return i, found, nil
}

func sameDescriptor(a, b frames.ChannelDescriptor) bool {
	return a.Stream == b.Stream && a.ID == b.ID && a.Name == b.Name &&
		((a.Label == nil) == (b.Label == nil)) && (a.Label == nil || *a.Label == *b.Label) &&
		a.Content.Equal(b.Content)
}

// startSegment emits the header of a new segment with a fresh id, after
// the summary of the current one, and the header's HeaderCopy record
// (ds-format(5) "HeaderCopy"), with which a reader recovers the segment
// if the header is damaged. A header too large for a record (over 4 MiB:
// a catalog of tens of thousands of channels) is followed by its parity
// copy instead, which repairs damage confined to one 256 KiB shard.
func (w *Writer) startSegment() error {
	if w.started {
		if !w.segEnded {
			if err := w.endSegment(); err != nil {
				return err
			}
		}
		w.seq++
	}
	h := wireformat.Header{Seq: w.seq, Writer: w.opts.WriterID, Stream: w.desc, Channels: w.catalog}
	for try := 0; ; try++ {
		if try == 0 && !w.started {
			h.SegmentID = w.segID // drawn by NewWriter
		} else if _, err := io.ReadFull(w.opts.Rand, h.SegmentID[:]); err != nil {
			return fmt.Errorf("segments: segment id: %w", err)
		}
		if wireformat.CopyMayNotFit(&h) {
			// A header too large for a HeaderCopy (a catalog of tens of
			// thousands of channels) goes straight to the output, in
			// pieces, after what is buffered: it is never held whole.
			// One that does not encode is AppendHeader's to report.
			plan, buf, err := wireformat.PlanHeader(&h, w.hdrBuf)
			w.hdrBuf = buf
			if err == nil && !plan.CopyFits() {
				err := w.streamHeader(&h, &plan)
				if errors.Is(err, wireformat.ErrMagicInHeader) && try < 16 {
					continue
				}
				return err
			}
		}
		n := len(w.buf)
		var err error
		w.buf, err = wireformat.AppendHeader(w.buf, &h)
		if errors.Is(err, wireformat.ErrMagicInHeader) && try < 16 {
			continue // the random id or the CRC formed the magic: draw again
		}
		if err != nil {
			return fmt.Errorf("segments: segment header: %w", err)
		}
		hdr := len(w.buf)
		w.buf, err = wireformat.AppendHeaderCopy(w.buf, w.buf[n:])
		if errors.Is(err, wireformat.ErrTooLarge) {
			// Too large for a whole copy: its parity copy.
			w.buf, err = wireformat.AppendHeaderParity(w.buf, w.buf[n:hdr])
		}
		if err != nil {
			return fmt.Errorf("segments: header copy: %w", err)
		}
		w.started, w.rotate, w.segEnded = true, false, false
		w.segID, w.seed = h.SegmentID, h.Seed()
		w.segBytes, w.segContent, w.segStart = int64(len(w.buf)-n), 0, w.opts.Now()
		w.segHead = w.segBytes
		w.seg.reset()
		if len(w.buf) < writeChunk {
			return nil
		}
		// A large header (a catalog of tens of thousands of channels)
		// goes out at once, and the buffer it grew is let go, so that
		// it is not held, nor copied again, with the records after it.
		err = w.writeBuf()
		if cap(w.buf) > 4*writeChunk {
			w.buf = make([]byte, 0, writeChunk)
		}
		return err
	}
}

// streamHeader writes the header h of a new segment, planned, straight to
// the output (wireformat.HeaderPlan.Write), after the buffer, and starts
// the segment. A full file system cuts the file back to where the header
// began, as salvage does for a record.
func (w *Writer) streamHeader(h *wireformat.Header, plan *wireformat.HeaderPlan) error {
	if err := w.writeBuf(); err != nil {
		return err
	}
	out := &writeErr{w: w.w}
	n, buf, err := plan.Write(out, w.hdrBuf)
	w.hdrBuf = buf
	switch {
	case out.err != nil:
		w.err = fmt.Errorf("segments: write: %w", w.salvageHeader(n, out.err))
		return w.err
	case errors.Is(err, wireformat.ErrMagicInHeader):
		return err
	case err != nil:
		return fmt.Errorf("segments: segment header: %w", err)
	}
	// Its parity copy goes out with the records after it.
	k := len(w.buf)
	if w.buf, err = plan.AppendParity(w.buf); err != nil {
		return fmt.Errorf("segments: header copy: %w", err)
	}
	w.started, w.rotate, w.segEnded = true, false, false
	w.segID, w.seed = h.SegmentID, h.Seed()
	w.bufSeed = w.seed
	w.segBytes, w.segContent, w.segStart = n+int64(len(w.buf)-k), 0, w.opts.Now()
	w.segHead = w.segBytes
	w.seg.reset()
	if cap(w.buf) > 4*writeChunk {
		w.buf = make([]byte, 0, writeChunk)
	}
	return nil
}

// writeErr is an io.Writer that keeps the first error of the one it wraps.
type writeErr struct {
	w   io.Writer
	err error
}

func (e *writeErr) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil && e.err == nil {
		e.err = err
	}
	return n, err
}

// endSegment appends the current segment's SegmentSummary. A summary too
// large for its record (a stream of very many channels) leaves out its
// kept frames, then its channel counts.
func (w *Writer) endSegment() error {
	sum := w.seg.summary(w.segID, w.seq, w.segBytes)
	for try := 0; ; try++ {
		var err error
		n := len(w.buf)
		w.buf, err = wireformat.AppendSummary(w.buf, sum)
		switch {
		case err == nil:
			w.segBytes += int64(len(w.buf) - n)
			return nil
		case errors.Is(err, wireformat.ErrTooLarge) && try == 0:
			sum.Kept, sum.KeptAll = nil, false
		case errors.Is(err, wireformat.ErrTooLarge) && try == 1:
			sum.Channels = nil
		default:
			return fmt.Errorf("segments: segment summary: %w", err)
		}
	}
}

// keep asks WriterOptions.Keep about frame f.
func (w *Writer) keep(f frames.Frame) Keep {
	if w.opts.Keep == nil {
		return KeepNone
	}
	return w.opts.Keep(f.Channel, f.Payload)
}

// check returns the error that a write call must return before doing
// anything.
func (w *Writer) check() error {
	if w.closed {
		return ErrClosed
	}
	return w.err
}

// beginRecord starts the first segment, or a new segment if the current
// one is full (SegmentSize bytes, or SegmentContent bytes of records
// uncompressed) or a channel was declared since it started. It is called
// before every record but StreamEnded.
func (w *Writer) beginRecord() error {
	if w.started && w.segRecords() < w.opts.SegmentSize && w.segContent < w.opts.SegmentContent && !w.rotate && !w.segEnded {
		return nil
	}
	if err := w.startSegment(); err != nil {
		w.err = err
		return err
	}
	return nil
}

// segRecords returns the bytes of the current segment's records, its
// header and HeaderCopy left out: SegmentSize counts those, so that a
// header near the 16 MiB limit does not start a segment (and write itself
// again) at every record (ds-format(5) "SEGMENT ROTATION").
func (w *Writer) segRecords() int64 { return w.segBytes - w.segHead }

// endRecord accounts for a record of n bytes, content bytes uncompressed,
// and writes the buffer out if it is large.
func (w *Writer) endRecord(n, content int) error {
	w.segBytes += int64(n)
	w.segContent += int64(content)
	if len(w.buf) >= writeChunk {
		return w.writeBuf()
	}
	return nil
}

func (w *Writer) writeBuf() error {
	if len(w.buf) == 0 || w.err != nil {
		return w.err
	}
	n, err := w.w.Write(w.buf)
	if err != nil {
		err = w.salvage(n, err) // a full file system keeps what fit
	}
	w.buf, w.bufSeed = w.buf[:0], w.seed
	if err != nil {
		w.err = fmt.Errorf("segments: write: %w", err)
	}
	return w.err
}

// DeclareChannel records a channel that appeared after the writer started:
// it is in the catalog of every later segment header, and if the current
// segment's header is already written, the next record (or flush) starts a
// new segment; ds writes no ChannelDeclared records. d must be of the
// writer's stream (else an error wrapping wireformat.ErrWrongStream). Declaring an id again with the same
// descriptor does nothing; with another descriptor it is [ErrConflict].
// After Close it returns [ErrClosed].
func (w *Writer) DeclareChannel(d frames.ChannelDescriptor) error {
	if err := w.check(); err != nil {
		return err
	}
	i, found, err := w.lookup(d)
	if err != nil || found {
		return err
	}
	// The descriptor goes into every later header: refuse, and write
	// nothing, for one that does not encode or is larger than a record.
	body, err := wireformat.AppendChannelBody(nil, &d)
	if err != nil {
		return fmt.Errorf("segments: %w", err)
	}
	if len(body) > wireformat.DefaultMaxRecordSize {
		return fmt.Errorf("segments: channel %d: %w: descriptor of %d bytes", d.ID, wireformat.ErrTooLarge, len(body))
	}
	if w.started {
		// The header is out: frames written before the declaration go out
		// in this segment, and the next record starts a new one whose
		// header names the channel. One flipped byte then never leaves a
		// channel nameless beyond its own segment.
		if err := w.flushBlocks(); err != nil {
			return err
		}
		w.rotate = true
	}
	w.catalog = slices.Insert(w.catalog, i, d)
	return nil
}

// WriteFrame writes one frame of the writer's stream. Its channel need not
// have been declared. The payload is copied; the caller may reuse it. It
// returns an error wrapping wireformat.ErrTooLarge, and writes nothing, if
// the payload exceeds wireformat.MaxPayloadSize. After Close it returns
// [ErrClosed].
func (w *Writer) WriteFrame(f frames.Frame) error {
	if err := w.check(); err != nil {
		return err
	}
	if len(f.Payload) > wireformat.MaxPayloadSize {
		return fmt.Errorf("segments: frame at position %d: %w: payload of %d bytes (at most %d)", f.Position, wireformat.ErrTooLarge, len(f.Payload), wireformat.MaxPayloadSize)
	}
	if w.opts.Compression == CompressZstd {
		size := wireformat.InnerFrameSize(f, w.blockNext)
		if size <= w.opts.BlockSize {
			if len(w.block)+size > w.opts.BlockSize {
				if err := w.endBlock(); err != nil {
					return err
				}
				size = wireformat.InnerFrameSize(f, w.blockNext)
			}
			if w.block == nil {
				// Grown by append up to BlockSize, then reused: a writer
				// of a few small frames does not hold a whole block.
				w.block = make([]byte, 0, min(w.opts.BlockSize, 64<<10))
			}
			w.block = wireformat.AppendInnerFrame(w.block, f, w.blockNext)
			w.blockNext = f.Position + 1
			w.plainLen += size + wireformat.RecordOverhead
			w.open.add(f, w.keep(f))
			return nil
		}
		if err := w.flushBlocks(); err != nil { // too large for a block: plain
			return err
		}
	}
	if err := w.beginRecord(); err != nil {
		return err
	}
	n := len(w.buf)
	var err error
	if w.buf, err = wireformat.AppendFrame(w.buf, w.seed, f); err != nil {
		return fmt.Errorf("segments: %w", err)
	}
	w.seg.add(f, w.keep(f))
	return w.endRecord(len(w.buf)-n, len(w.buf)-n)
}

// A pendingBlock is a closed block being compressed in the background.
// The compressing goroutine owns content and body until done is closed.
type pendingBlock struct {
	content  []byte // inner records
	plainLen int    // their size as plain records
	stats    segStats
	stored   bool // not compressed: written out as plain records
	codec    wireformat.BlockCodec
	body     []byte // the Block record body, once done
	err      error
	done     chan struct{}
}

// endBlock closes the open block and starts compressing it in the
// background; blocks are written out in order by drainOne. With
// GOMAXPROCS > 1 compression thus runs beside the producer and on several
// blocks at once.
func (w *Writer) endBlock() error { return w.closeBlock(nil) }

// closeBlock is endBlock; with copied not nil, the block's stored body is
// copied, not compressed (CopyBlock).
func (w *Writer) closeBlock(copied []byte) error {
	if len(w.block) == 0 {
		return nil
	}
	// Write out what is already compressed, without waiting.
	for len(w.pending) > 0 && isDone(w.pending[0]) {
		if err := w.drainOne(); err != nil {
			return err
		}
	}
	store, codec := false, wireformat.BlockZstdFast
	switch n := len(w.pending); {
	case w.opts.StoreWhenBusy && n >= busyBlocks+storedBlocks:
		if err := w.drainOne(); err != nil { // bounded memory: wait after all
			return err
		}
	case w.opts.StoreWhenBusy:
		codec, store = w.chooseCodec()
	case n >= w.maxPending:
		if err := w.drainOne(); err != nil {
			return err
		}
	}
	var p *pendingBlock
	if n := len(w.free); n > 0 {
		p, w.free = w.free[n-1], w.free[:n-1]
	} else {
		p = &pendingBlock{}
	}
	p.content, w.block = w.block, p.content[:0]
	p.stats, w.open = w.open, p.stats
	w.open.reset()
	p.plainLen, w.plainLen, w.blockNext = w.plainLen, 0, 0
	p.done = make(chan struct{})
	p.stored, p.codec = store && copied == nil, codec
	w.pending = append(w.pending, p)
	if copied != nil {
		p.body, p.err = append(p.body[:0], copied...), nil
		close(p.done)
		return nil
	}
	if p.stored {
		close(p.done)
		return nil
	}
	go func() {
		p.body, p.err = compressBlock(p.body[:0], p.content, p.codec)
		close(p.done)
	}()
	return nil
}

// compressBlock compresses a closed block in the background: a variable
// so that tests can hold compression back (TestWriterCodecChoice).
var compressBlock = wireformat.AppendBlockBodyWith

// chooseCodec chooses, for a writer with StoreWhenBusy, how to write a
// closed block, by how far compression is behind its producer: zstd's
// default level while fewer blocks than cores are being compressed with
// zstd (a burst that fits the queue is compressed as well as zstd -3
// does), its fastest level while fewer than busyBlocks are, then S2 (four
// times as fast, 1.5 times the size on log text) until busyBlocks +
// storedBlocks blocks are pending (closeBlock then waits for the oldest);
// and plain records whenever Busy says the producer falls behind, so that
// the writer, not the compressors, gets the CPU before its queue drops
// anything. It reports the codec and whether to store the block plain
// instead.
//
// Measured on two shared cores (cat(1) of 512 MiB of varied log text
// under ds wrap, 16 runs): 1.9 to 3.1 times the size of zstd -3 of the
// text, 0 frames dropped; storing plain once busyBlocks blocks were being
// compressed made 4.0 to 4.3 times; sending blocks to S2 when Busy, not
// storing them, made 1.8 to 2.1 times but dropped frames in 1 run of 4.
func (w *Writer) chooseCodec() (wireformat.BlockCodec, bool) {
	zstd := 0
	for _, p := range w.pending {
		if !p.stored && p.codec != wireformat.BlockS2 && !isDone(p) {
			zstd++
		}
	}
	switch {
	case w.opts.Busy != nil && w.opts.Busy():
		return wireformat.BlockZstdFast, true
	case zstd >= busyBlocks:
		return wireformat.BlockS2, false
	case zstd < runtime.GOMAXPROCS(0):
		return wireformat.BlockZstd, false
	}
	return wireformat.BlockZstdFast, false
}

// With StoreWhenBusy, up to busyBlocks blocks are compressed with zstd at
// once (more than the cores: a block waits for a core rather than going to
// S2 at the first burst), then blocks go to S2 or, when Busy, are stored
// plain; busyBlocks+storedBlocks bounds the blocks pending. With 1 MiB
// blocks that is at most 16 MiB of blocks.
const (
	busyBlocks   = 8
	storedBlocks = 8
)

func isDone(p *pendingBlock) bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// flushBlocks closes the open block and writes out every pending one.
func (w *Writer) flushBlocks() error {
	if err := w.endBlock(); err != nil {
		return err
	}
	for len(w.pending) > 0 {
		if err := w.drainOne(); err != nil {
			return err
		}
	}
	return nil
}

// drainOne waits for the oldest pending block and appends it to the
// output: as a Block record of the current segment, or as plain records
// when compression does not make it smaller (a few small frames per
// flush).
func (w *Writer) drainOne() error {
	p := w.pending[0]
	<-p.done
	w.pending = slices.Delete(w.pending, 0, 1)
	w.free = append(w.free, p)
	if p.err != nil {
		w.err = fmt.Errorf("segments: %w", p.err)
		return w.err
	}
	if !p.stored && len(p.body)+wireformat.RecordOverhead < p.plainLen {
		if err := w.appendRecord(wireformat.Record{Type: wireformat.TypeBlock, Body: p.body}, len(p.content)); err != nil {
			return err
		}
		w.seg.merge(&p.stats)
		return nil
	}
	// Stored plain. When the block's records cannot fill the segment
	// (escaping at most doubles one), the block's counts, made as its
	// frames were written, hold for the segment; otherwise the segment may
	// rotate inside the block and each frame is counted where it lands.
	counted := w.started && !w.rotate && w.segRecords()+2*int64(p.plainLen) < w.opts.SegmentSize &&
		w.segContent+2*int64(p.plainLen) < w.opts.SegmentContent
	next := frames.Position(0)
	for content := p.content; len(content) > 0; {
		rec, size, err := wireformat.ParseInner(content)
		var f frames.Frame
		if err == nil {
			f, err = wireformat.ParseInnerFrameBody(rec.Body, next)
		}
		if err != nil {
			w.err = fmt.Errorf("segments: own block content: %w", err)
			return w.err
		}
		content, next = content[size:], f.Position+1
		if err := w.beginRecord(); err != nil {
			return err
		}
		n := len(w.buf)
		if w.buf, err = wireformat.AppendFrame(w.buf, w.seed, f); err != nil {
			w.err = fmt.Errorf("segments: %w", err)
			return w.err
		}
		if !counted {
			w.seg.add(f, w.keep(f))
		}
		if err := w.endRecord(len(w.buf)-n, len(w.buf)-n); err != nil {
			return err
		}
	}
	if counted {
		w.seg.merge(&p.stats)
	}
	return nil
}

// appendRecord appends rec to the output in the current segment, starting
// a new one first if it is full. content is the record's uncompressed
// size for SegmentContent: a Block's content size; < 0 means the
// record's own size.
func (w *Writer) appendRecord(rec wireformat.Record, content int) error {
	if err := w.beginRecord(); err != nil {
		return err
	}
	n := len(w.buf)
	var err error
	if w.buf, err = wireformat.AppendRecord(w.buf, w.seed, rec); err != nil {
		w.err = fmt.Errorf("segments: %w", err)
		return w.err
	}
	if content < 0 {
		content = len(w.buf) - n
	}
	return w.endRecord(len(w.buf)-n, content)
}

// WriteEvent writes one datastream event of the writer's stream:
// ChannelDeclared as [Writer.DeclareChannel], Frame as [Writer.WriteFrame],
// StreamEnded as [Writer.Close]. A StreamDeclared event must describe the
// writer's stream exactly and writes nothing (the headers carry the
// descriptor). An event of another stream is an error wrapping
// wireformat.ErrWrongStream. After Close it returns [ErrClosed].
func (w *Writer) WriteEvent(e frames.Event) error {
	if err := w.check(); err != nil {
		return err
	}
	switch e.Kind {
	case frames.EventStreamDeclared:
		if e.Stream == nil || e.Stream.Stream != w.desc.Stream || e.Stream.Origin != w.desc.Origin ||
			(e.Stream.Label == nil) != (w.desc.Label == nil) || (e.Stream.Label != nil && *e.Stream.Label != *w.desc.Label) {
			return fmt.Errorf("segments: StreamDeclared event does not match the writer's stream %s: %w", w.desc.Stream, wireformat.ErrWrongStream)
		}
		return nil
	case frames.EventChannelDeclared:
		if e.Channel == nil {
			return errors.New("segments: ChannelDeclared event without descriptor")
		}
		return w.DeclareChannel(*e.Channel)
	case frames.EventFrame:
		if e.Frame.Channel.Stream != w.desc.Stream {
			return fmt.Errorf("segments: frame of stream %s, writer is of %s: %w", e.Frame.Channel.Stream, w.desc.Stream, wireformat.ErrWrongStream)
		}
		return w.WriteFrame(frames.Frame{Channel: e.Frame.Channel.Channel, Position: e.Frame.Position, Payload: e.Frame.Payload})
	case frames.EventStreamEnded:
		if e.Ended != w.desc.Stream {
			return fmt.Errorf("segments: StreamEnded of stream %s, writer is of %s: %w", e.Ended, w.desc.Stream, wireformat.ErrWrongStream)
		}
		return w.Close()
	}
	return fmt.Errorf("segments: unknown event kind %v", e.Kind)
}

// EndSegment ends the current segment: it closes the open block, writes
// the segment's SegmentSummary and writes everything buffered to the
// underlying io.Writer. The next record starts a new segment, whose header
// carries the next sequence number ([Writer.NextSeq]) and the full
// catalog; until then the writer writes nothing, and a writer left here
// has written a whole, summarised capture of its stream without a
// StreamEnded record (ds merge ends a stream's segment this way before it
// writes another stream's). Before the first segment header, and right
// after another EndSegment, it does nothing. After Close it returns
// [ErrClosed].
func (w *Writer) EndSegment() error {
	if err := w.check(); err != nil {
		return err
	}
	if err := w.flushBlocks(); err != nil {
		return err
	}
	if !w.started || w.segEnded {
		return w.writeBuf()
	}
	if w.rotate {
		// Channels declared since the header: a header that names them,
		// so that the capture ends knowing them.
		if err := w.beginRecord(); err != nil {
			return err
		}
	}
	if err := w.endSegment(); err != nil {
		w.err = err
		return err
	}
	w.segEnded = true
	return w.writeBuf()
}

// EndBlock closes the open zstd block, if any: its compression starts in
// the background, and the next frame starts a new block. ds merge ends a
// block where a block of its input starts, so that it can copy that block
// whole ([Writer.CopyBlock]). With CompressNone it does nothing. After
// Close it returns [ErrClosed].
func (w *Writer) EndBlock() error {
	if err := w.check(); err != nil {
		return err
	}
	return w.endBlock()
}

// CopyBlock closes the open zstd block, whose records are those of a Block
// record of another capture, and writes body, that record's stored body
// (codec, uncompressed size, compressed records, as [Reader.Block] gives
// it), instead of compressing them again: ds merge writes the frames of an
// input block unchanged, in order, from the start of a block (after
// [Writer.EndBlock]), and copies the block. frames is the number of frames
// the block holds. When body cannot be the open block's (the writer stores
// plain records, its codec is not zstd, its uncompressed size is not the
// open block's, or frames is not the open block's count), the block is
// closed and compressed as EndBlock does. Equal sizes mean equal records:
// the frames are re-encoded from those read from the block, and an
// encoding of the same frames that differed would differ in size (a
// varint longer than it need be, a record the frames do not account for).
// The writer copies body. After Close it returns [ErrClosed].
func (w *Writer) CopyBlock(body []byte, frames int) error {
	if err := w.check(); err != nil {
		return err
	}
	if w.opts.Compression != CompressZstd || len(body) < 2 || body[0] != wireformat.CodecZstd || w.open.frames != uint64(frames) {
		return w.endBlock()
	}
	if size, k := binary.Uvarint(body[1:]); k <= 0 || size != uint64(len(w.block)) {
		return w.endBlock()
	}
	return w.closeBlock(body)
}

// Reset makes w a writer of stream desc, as NewWriter(the same io.Writer,
// desc, catalog, opts) would, keeping the buffers w has grown: a writer of
// many streams in turn (ds merge) allocates them once. What w was writing
// must be out: after Close or EndSegment (else the records buffered are
// lost). On error w is unchanged.
func (w *Writer) Reset(desc frames.StreamDescriptor, catalog []frames.ChannelDescriptor, opts WriterOptions) error {
	return w.reset(desc, catalog, opts, false)
}

// reset is Reset; shared is newWriter's.
func (w *Writer) reset(desc frames.StreamDescriptor, catalog []frames.ChannelDescriptor, opts WriterOptions, shared bool) error {
	return w.resetTo(w.w, desc, catalog, opts, shared)
}

// resetTo is reset to another output, out (a store's next chunk file).
func (w *Writer) resetTo(out io.Writer, desc frames.StreamDescriptor, catalog []frames.ChannelDescriptor, opts WriterOptions, shared bool) error {
	nw, err := newWriter(out, desc, catalog, opts, shared)
	if err != nil {
		return err
	}
	nw.buf, nw.block = w.buf[:0], w.block[:0]
	nw.free = append(w.free, w.pending...)
	nw.seg.chans, nw.open.chans = w.seg.chans[:0], w.open.chans[:0]
	*w = *nw
	return nil
}

// NextSeq returns the sequence number that the next segment header the
// writer starts will carry: WriterOptions.FirstSeq before the first, and
// one more than the current segment's after it.
func (w *Writer) NextSeq() uint64 {
	if !w.started {
		return w.seq
	}
	return w.seq + 1
}

// WriteTrimmed writes a Trimmed record (ds-format(5) "Trimmed") in the
// current segment, starting one if needed, after every frame written
// before it: the writer's stream was trimmed by a store, which deleted its
// frames below position h, and a reader hides any that remain. A store
// writes one at the head of a trimmed stream it reads out
// ([Store.OpenStream]). After Close it returns [ErrClosed].
func (w *Writer) WriteTrimmed(h frames.Position) error {
	if err := w.check(); err != nil {
		return err
	}
	if err := w.flushBlocks(); err != nil {
		return err
	}
	return w.appendRecord(wireformat.Record{Type: wireformat.TypeTrimmed, Body: wireformat.AppendTrimmedBody(nil, h)}, -1)
}

// Flush ends the open block and writes every buffered record to the
// underlying io.Writer. Call it at every drain tick: a reader then sees
// every record written so far. A segment that has reached
// WriterOptions.SegmentAge is ended here, with its summary, and the next
// record starts a new one. After Close it returns [ErrClosed].
func (w *Writer) Flush() error {
	if err := w.check(); err != nil {
		return err
	}
	if err := w.flushBlocks(); err != nil {
		return err
	}
	if !w.started || w.rotate {
		// Nothing written yet, or channels declared since the header: a
		// header, so that a reader sees the stream and every channel
		// declared so far.
		if err := w.beginRecord(); err != nil {
			return err
		}
	}
	if !w.segEnded && w.opts.SegmentAge > 0 && w.opts.Now().Sub(w.segStart) >= w.opts.SegmentAge {
		if err := w.endSegment(); err != nil {
			w.err = err
			return err
		}
		w.segEnded = true
	}
	return w.writeBuf()
}

// Sync flushes, then commits the underlying io.Writer to stable storage if
// it has a Sync method (an *os.File has). A failed sync is sticky.
func (w *Writer) Sync() error {
	if err := w.Flush(); err != nil {
		return err
	}
	if s, ok := w.w.(interface{ Sync() error }); ok {
		if err := s.Sync(); err != nil {
			w.err = fmt.Errorf("segments: sync: %w", err)
			return w.err
		}
	}
	return nil
}

// Close ends the stream: it writes a StreamEnded record and flushes. It
// does not close the underlying io.Writer. Calling Close again returns the
// result of the first call; any other method then returns [ErrClosed].
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	if w.err == nil {
		err := w.flushBlocks()
		if err == nil && (!w.started || w.rotate || w.segEnded) {
			err = w.beginRecord() // a header to name the channels declared last
		}
		if err == nil {
			// StreamEnded never starts a segment otherwise: it and the
			// summary end the current one.
			n := len(w.buf)
			w.buf, _ = wireformat.AppendRecord(w.buf, w.seed, wireformat.Record{Type: wireformat.TypeStreamEnded})
			w.segBytes += int64(len(w.buf) - n)
			w.seg.ended = true
			if w.err = w.endSegment(); w.err == nil {
				_ = w.writeBuf()
			}
		}
	}
	w.closed = true
	return w.err
}

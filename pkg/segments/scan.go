package segments

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// SegmentHeader is what [Scan] reports of a segment header.
type SegmentHeader struct {
	// Stream is the segment's stream.
	Stream frames.StreamDescriptor
	// Channels is the full catalog known when the segment started; nil
	// when that catalog is large and, byte for byte, the last one given
	// to the sink for the stream in this input (Scan reads with
	// ReaderOptions.SkipRepeatedCatalogs): it declares nothing new.
	Channels []frames.ChannelDescriptor
	// Seq is the header's sequence number: 0 for its writer's first
	// segment of the stream, one more at each rotation. A stream whose
	// first segment read has Seq > 0 lacks the frames its writer wrote
	// before (see [ItemStart]).
	Seq uint64
	// Writer is the writer identity, e.g. "ds 0.1.0".
	Writer string
	// Offset is the input offset of the header, in bytes.
	Offset int64
}

// Sink receives what [Scan] reads from a capture, in file order.
type Sink interface {
	// Header reports a segment header: the stream, its full catalog and
	// the header's sequence number. h.Channels may be retained.
	Header(h SegmentHeader)
	// Channel reports a ChannelDeclared record.
	Channel(d frames.ChannelDescriptor)
	// Frame reports a frame of stream s. f.Payload is valid only during the
	// call: Scan reuses its storage for the next frame.
	Frame(s frames.StreamID, f frames.Frame)
	// Ended reports a StreamEnded record.
	Ended(s frames.StreamID)
	// Trimmed reports a Trimmed record of stream s at horizon before
	// (ds-format(5) "Trimmed"). With store, the input is a store's
	// read-out ([ScanOptions].Store): the store deleted the frames of s
	// below before (ds trim), and readers hide any that remain
	// ([Assembler.Trim]). Without, the record is in a capture file,
	// where it hides nothing: positions below before that are absent
	// are trimmed, not lost, and frames below it are shown
	// ([Assembler.TrimCapture]).
	Trimmed(s frames.StreamID, before frames.Position, store bool)
	// Damage reports bytes [offset, end) that could not be read; torn is
	// set when the input ended inside a record (a writer that was killed).
	// Adjacent damaged ranges come as one (err then says how many records
	// it spans, and unwraps to the first one's cause); a torn tail always
	// comes on its own.
	Damage(offset, end int64, torn bool, err error)
}

// ScanOptions configures [Scan].
type ScanOptions struct {
	// Follow waits for a growing input to grow instead of stopping at its
	// end, until ctx is done (tail -f).
	Follow bool
	// MaxRecordSize overrides the reader's record size limit (0: default).
	MaxRecordSize int
	// Offset is the input offset of r's first byte, when r is part of a
	// capture (a Span): header offsets and damaged ranges are
	// reported from it.
	Offset int64
	// SkipBefore makes the reader skip the frames of records that start
	// before this input offset (ReaderOptions.SkipBefore): ds
	// tail reads a segment's header and its last blocks only.
	SkipBefore int64
	// IdleAfter is how long the input must stay quiet, with everything it
	// had handed over, before a sink that is an [Idler] gets Idle(true):
	// ds uses 300 ms for live inputs (pipes, -f), so that a partial last
	// line shows. 0 means never.
	IdleAfter time.Duration
	// Store says that r is a store's read-out ([Store.OpenStream]): its
	// Trimmed records are the store's, reported with store set (see
	// [Sink]). Without it, r is a capture file, whose Trimmed records
	// hide nothing.
	Store bool
	// CaptureTrimmed, if set and Store is not, is called when Scan
	// returns, once for each stream of which the input held a Trimmed
	// record and frames below its horizon: the highest horizon, and how
	// many positions below it the input held frames of (shown, not
	// hidden). ds says so on stderr.
	CaptureTrimmed func(s frames.StreamID, before frames.Position, frames uint64)
}

// Idler is implemented by sinks that want to know when their input has
// paused. [Scan], [ScanAny] and the views' merge of live inputs
// (views.Merge) call Idle(false) when they have handed over everything
// the input had so far (the reader waits for more: write out what was
// printed), and Idle(true) when, after that, the input stayed quiet for
// ScanOptions.IdleAfter or views.MergeOptions.IdleAfter (show what is
// held back, such as a line without its newline yet). Idle is called on
// the goroutine that calls the sink's other methods, between them.
type Idler interface {
	Idle(quiet bool)
}

// Scan reads one capture from r and reports everything in it to sink. It
// returns nil at the end of the input (damage is reported to the sink, not
// returned), ctx.Err() when ctx ends, and otherwise the I/O error that
// stopped it.
//
// A damaged range is reported once the reader has gone past it, so that a
// truncated record at the very end (a torn tail) can be told from one cut
// short by the next good record, and so that damaged ranges that follow
// each other without a gap (a run of bad records) are reported as one:
// whatever the input, Scan holds at most two ranges back.
//
// Reading and decompressing run in a goroutine of their own, a batch of
// entries ahead of the sink (at most scanBatches batches of about 1 MiB of
// payloads and scanBatchItems entries each), so that a view renders while
// the next blocks are decoded. A batch is handed over as soon as the
// reader asks for more input, so that a live pipe's frames reach the
// sink as they arrive; a sink that is an [Idler] is then told (see
// [ScanOptions].IdleAfter). When ctx ends, Scan returns at once, even if
// the reader is blocked reading r (it stops at its next read).
func Scan(ctx context.Context, r io.Reader, opts ScanOptions, sink Sink) error {
	return scan(ctx, r, opts, sink, false)
}

// scan is [Scan], and with anyFormat [ScanAny].
func scan(ctx context.Context, r io.Reader, opts ScanOptions, sink Sink, anyFormat bool) error {
	feed := &batchFeed{r: r, full: make(chan *scanBatch, scanBatches), free: make(chan *scanBatch, scanBatches), stop: make(chan struct{})}
	for range scanBatches {
		feed.free <- &scanBatch{}
	}
	full := feed.full
	defer close(feed.stop)
	go readBatches(ctx, feed, opts, anyFormat)
	var d damageRuns
	var below *belowCount
	if !opts.Store && opts.CaptureTrimmed != nil {
		below = &belowCount{streams: make(map[frames.StreamID]*belowStream)}
		defer below.report(opts.CaptureTrimmed)
	}
	idler, _ := sink.(Idler)
	drained := true // the reader asked for input after the last batch (before the first, too)
	for {
		var b *scanBatch
		select {
		case b = <-full:
		default:
			if idler != nil && drained {
				idler.Idle(false)
			}
			var err error
			if b, err = nextBatch(ctx, full, idler, drained, opts.IdleAfter); err != nil {
				d.flush(sink, false)
				return err
			}
		}
		if b == nil {
			return nil // unreachable: the reader ends with a terminal item
		}
		drained = b.drained
		for i := range b.items {
			it := &b.items[i]
			if it.err != nil {
				if it.err == io.EOF {
					d.flush(sink, true)
					return nil
				}
				var ce *CorruptError
				if errors.As(it.err, &ce) {
					d.add(sink, ce)
					continue
				}
				d.flush(sink, false)
				return it.err
			}
			d.flush(sink, false)
			e := &it.e
			switch e.Kind {
			case EntrySegment:
				h := e.Header
				sink.Header(SegmentHeader{Stream: h.Stream, Channels: h.Channels, Seq: h.Seq, Writer: h.Writer, Offset: e.Offset})
			case EntryChannel:
				sink.Channel(*e.Channel)
			case EntryFrame:
				e.Frame.Payload = b.arena[it.off : it.off+it.n : it.off+it.n]
				if below != nil {
					below.frame(e.Stream, e.Frame.Position)
				}
				sink.Frame(e.Stream, e.Frame)
			case EntryStreamEnded:
				sink.Ended(e.Stream)
			case EntryTrimmed:
				if below != nil {
					below.trimmed(e.Stream, e.Frame.Position)
				}
				sink.Trimmed(e.Stream, e.Frame.Position, opts.Store)
			}
		}
		// Cleared, not just cut: an entry left in the array would keep
		// its header's catalog alive (11 MB for a 16 MiB header) until
		// its slot was reused.
		clear(b.items)
		b.items, b.arena = b.items[:0], b.arena[:0]
		feed.free <- b
	}
}

// nextBatch waits for the reader's next batch (nil once it is done) or
// for ctx to end. After a drained batch, an idler that waits idleAfter
// (> 0) for it gets Idle(true).
func nextBatch(ctx context.Context, full chan *scanBatch, idler Idler, drained bool, idleAfter time.Duration) (*scanBatch, error) {
	if idler != nil && drained && idleAfter > 0 {
		t := time.NewTimer(idleAfter)
		select {
		case b := <-full:
			t.Stop()
			return b, nil
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
			idler.Idle(true)
		}
	}
	select {
	case b := <-full:
		return b, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Batches of entries between the reader goroutine of [Scan] and its sink.
const (
	scanBatches    = 3
	scanBatchItems = 4096
	scanBatchArena = 1 << 20
)

// scanBatch is entries read ahead, their payloads in arena; drained says
// that the reader asked for more input after them.
type scanBatch struct {
	items   []scanItem
	arena   []byte
	drained bool
}

// scanItem is one entry, or the error Next returned instead.
type scanItem struct {
	e      Entry
	off, n int // the frame's payload in arena
	err    error
}

// batchFeed is the input of the reader of [Scan], and where that reader's
// goroutine fills batches: whenever the reader asks for more input, the
// entries read so far are handed over first (the reader has returned
// everything it could from what it had, and may now wait, for a pipe or
// a file followed), and so are full batches.
type batchFeed struct {
	r          io.Reader
	full, free chan *scanBatch
	stop       chan struct{}
	b          *scanBatch // being filled; nil between batches
}

// errScanStopped ends the reader of a [Scan] that has returned.
var errScanStopped = errors.New("segments: scan stopped")

// Read hands the entries read so far over, then reads r.
func (f *batchFeed) Read(p []byte) (int, error) {
	if f.b != nil && len(f.b.items) > 0 && !f.send(true) {
		return 0, errScanStopped
	}
	return f.r.Read(p)
}

// ReadingFile reports the file under its input (a FileInput).
func (f *batchFeed) ReadingFile() (io.ReaderAt, int64, int64, bool) { return fileAt(f.r) }

// take makes sure there is a batch to fill; false once Scan has returned.
func (f *batchFeed) take() bool {
	if f.b != nil {
		return true
	}
	select {
	case f.b = <-f.free:
		return true
	case <-f.stop:
		return false
	}
}

// send hands the batch over; false once Scan has returned.
func (f *batchFeed) send(drained bool) bool {
	f.b.drained = drained
	select {
	case f.full <- f.b:
		f.b = nil
		return true
	case <-f.stop:
		return false
	}
}

// entrySource is what [Scan] reads entries from: a Reader, or an
// importer of another format ([ScanAny]). NextView returns the next
// entry (its payload valid until the next call), a *CorruptError
// for a damaged range (not sticky), io.EOF at the end, or another error,
// which ends the input.
type entrySource interface {
	NextView(e *Entry) error
}

// readBatches reads the input into batches until an error other than
// damage (io.EOF included), which ends the last batch. With anyFormat,
// it detects the input's format first ([ScanAny]).
func readBatches(ctx context.Context, f *batchFeed, opts ScanOptions, anyFormat bool) {
	defer close(f.full)
	src, err := openSource(ctx, f, opts, anyFormat)
	if err != nil {
		if f.take() {
			f.b.items = append(f.b.items, scanItem{err: err})
			f.send(false)
		}
		return
	}
	var e Entry
	for {
		err := src.NextView(&e)
		if !f.take() {
			return
		}
		b := f.b
		// The item is filled in place: an Entry is 128 bytes, copied
		// once a frame.
		b.items = append(b.items, scanItem{})
		it := &b.items[len(b.items)-1]
		it.e, it.err = e, err
		if err == nil && e.Kind == EntryFrame {
			it.off, it.n = len(b.arena), len(e.Frame.Payload)
			b.arena = append(b.arena, e.Frame.Payload...)
			it.e.Frame.Payload = nil
		}
		if err != nil && !isCorrupt(err) {
			f.send(false) // the last
			return
		}
		if (len(b.items) >= scanBatchItems || len(b.arena) >= scanBatchArena) && !f.send(false) {
			return
		}
	}
}

// isCorrupt reports whether err is a *CorruptError (damage, not the end of
// the input). It is apart so that its target escapes only on errors: in
// readBatches' loop it was one allocation a frame.
func isCorrupt(err error) bool {
	var ce *CorruptError
	return errors.As(err, &ce)
}

// damageRuns holds the damaged ranges [Scan] has not reported yet: run,
// adjacent ranges merged, and last, the latest, which may yet turn out to
// be a torn tail.
type damageRuns struct {
	run  damageRun
	last *CorruptError
}

// damageRun is a run of n adjacent damaged ranges [offset, end); err is
// the first one's cause.
type damageRun struct {
	offset, end int64
	err         error
	n           int
}

// add takes the next damaged range.
func (d *damageRuns) add(sink Sink, ce *CorruptError) {
	if d.last != nil {
		d.merge(sink, d.last) // something follows it: not a tail
		if d.last.End != ce.Offset {
			d.report(sink)
		}
	}
	d.last = ce
}

// merge adds ce to the run, reporting the run first if ce does not
// continue it.
func (d *damageRuns) merge(sink Sink, ce *CorruptError) {
	if d.run.n > 0 && d.run.end == ce.Offset {
		d.run.end = ce.End
		d.run.n++
		return
	}
	d.report(sink)
	d.run = damageRun{offset: ce.Offset, end: ce.End, err: ce.Err, n: 1}
}

// flush reports everything held; at the end of input (tail), a last
// range cut short by the end is a torn tail.
func (d *damageRuns) flush(sink Sink, tail bool) {
	if last := d.last; last != nil {
		d.last = nil
		if tail && errors.Is(last.Err, io.ErrUnexpectedEOF) {
			d.report(sink)
			sink.Damage(last.Offset, last.End, true, last.Err)
			return
		}
		d.merge(sink, last)
	}
	d.report(sink)
}

func (d *damageRuns) report(sink Sink) {
	if d.run.n == 0 {
		return
	}
	err := d.run.err
	if d.run.n > 1 {
		err = &RunError{Err: err, Records: d.run.n}
	}
	sink.Damage(d.run.offset, d.run.end, false, err)
	d.run = damageRun{}
}

// RunError is the cause [Scan] reports for adjacent damaged ranges
// reported as one: Records ranges (bad headers or records) in a row, the
// first of which failed with Err.
type RunError struct {
	Err     error
	Records int
}

// Error returns the first range's cause and how many followed it.
func (e *RunError) Error() string {
	return fmt.Sprintf("%v, and %d more damaged records right after it", e.Err, e.Records-1)
}

// Unwrap returns the first range's cause.
func (e *RunError) Unwrap() error { return e.Err }

// belowCount counts, for [ScanOptions].CaptureTrimmed, the positions of
// each stream of a capture below the horizon of its Trimmed records,
// wherever the record is: the positions read are kept as runs (one run
// per stream for a capture in order).
type belowCount struct {
	streams map[frames.StreamID]*belowStream
	last    *belowStream
}

type belowStream struct {
	id      frames.StreamID
	pos     checkPositions
	horizon frames.Position
}

func (b *belowCount) stream(s frames.StreamID) *belowStream {
	if b.last != nil && b.last.id == s {
		return b.last
	}
	st := b.streams[s]
	if st == nil {
		st = &belowStream{id: s}
		b.streams[s] = st
	}
	b.last = st
	return st
}

func (b *belowCount) frame(s frames.StreamID, p frames.Position) { b.stream(s).pos.add(p) }

func (b *belowCount) trimmed(s frames.StreamID, h frames.Position) {
	st := b.stream(s)
	st.horizon = max(st.horizon, h)
}

// report calls f for each stream with a horizon and positions below it,
// in order of stream.
func (b *belowCount) report(f func(frames.StreamID, frames.Position, uint64)) {
	sts := slices.Collect(maps.Values(b.streams))
	slices.SortFunc(sts, func(x, y *belowStream) int {
		return cmp.Or(cmp.Compare(x.id.Node, y.id.Node), cmp.Compare(x.id.Life, y.id.Life))
	})
	for _, st := range sts {
		if st.horizon == 0 {
			continue
		}
		if n := st.pos.clip(st.horizon); n > 0 {
			f(st.id, st.horizon, n)
		}
	}
}

package segments

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"runtime"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// EntryKind says what an [Entry] holds.
type EntryKind uint8

const (
	// EntrySegment is a segment header: Entry.Header. A header that
	// failed its checks but was recovered from its HeaderCopy record
	// (ds-format(5) "Resynchronisation") comes after the *CorruptError of
	// the header's byte range, at the offset of the copy, which then
	// gives every field of Entry.Header.
	EntrySegment EntryKind = iota + 1
	// EntryChannel is a ChannelDeclared record: Entry.Channel.
	EntryChannel
	// EntryFrame is a Frame record: Entry.Frame.
	EntryFrame
	// EntryStreamEnded is a StreamEnded record of Entry.Stream.
	EntryStreamEnded
	// EntrySummary is a SegmentSummary record, the last of its segment:
	// Entry.Summary. It is what the segment's writer says the segment
	// holds; the entries before it are what it holds.
	EntrySummary
	// EntryUnknown is a record this reader cannot interpret and skipped:
	// a reserved record type (Entry.Type), or a Block of an unknown codec
	// (Entry.Err wraps wireformat.ErrUnknownCodec). Experimental record
	// types are skipped without an entry.
	EntryUnknown
	// EntryTrimmed is a Trimmed record (ds-format(5) "Trimmed"): the
	// store the input was read from deleted Entry.Stream's frames below
	// position Entry.Frame.Position (the horizon H; the rest of Frame is
	// zero), and a reader hides any that remain. A store's read-out of a
	// trimmed stream starts with one (see [Store.OpenStream]).
	EntryTrimmed
)

var entryKindNames = [...]string{"", "Segment", "Channel", "Frame", "StreamEnded", "Summary", "Unknown", "Trimmed"}

// String returns "Segment", "Channel", "Frame", "StreamEnded", "Summary",
// "Unknown" or "Trimmed".
func (k EntryKind) String() string {
	if k >= 1 && int(k) < len(entryKindNames) {
		return entryKindNames[k]
	}
	return fmt.Sprintf("EntryKind(%d)", uint8(k))
}

// Entry is one item of a capture, as returned by [Reader.Next]. Exactly the
// fields of its Kind are set, plus Offset and Stream.
type Entry struct {
	Kind EntryKind
	// Offset is the input offset of the header or record, in bytes. Records
	// read from a Block share the offset of the block.
	Offset int64
	// Stream is the stream of the segment the entry belongs to.
	Stream frames.StreamID

	Header  *wireformat.Header        // EntrySegment
	Channel *frames.ChannelDescriptor // EntryChannel
	Frame   frames.Frame              // EntryFrame; EntryTrimmed: Position only (the horizon)
	Summary *wireformat.Summary       // EntrySummary
	Type    wireformat.RecordType     // EntryUnknown: the record type
	Err     error                     // EntryUnknown: why it was skipped, if not for its type
}

// Defaults of [ReaderOptions].
const (
	// DefaultPollInterval is how long a following reader waits at the end
	// of input before it reads again.
	DefaultPollInterval = 100 * time.Millisecond
)

// Buffer sizes of a Reader, in bytes. The buffer starts small, so that
// reading a short capture costs little, doubles while reads fill it, up to
// readBufferSize, and grows beyond only to hold the largest header or
// record met, within the limits.
const (
	initialBufferSize = 4 << 10
	readBufferSize    = 1 << 20
)

// ReaderOptions configures a [Reader]. The zero value is valid.
type ReaderOptions struct {
	// MaxRecordSize is the largest stored record body accepted, in bytes: 0
	// means wireformat.DefaultMaxRecordSize (4 MiB); it is capped at
	// wireformat.MaxRecordSize. Longer records are damage.
	MaxRecordSize int
	// Follow makes the reader wait for more input at its end instead of
	// returning io.EOF, like tail -f (ds-format(5) "Following a growing
	// file"). It is meant for regular files that another process appends
	// to; an incomplete record at the end is awaited, not reported.
	Follow bool
	// PollInterval is how long a following reader waits before it reads
	// again at the end of input: 0 means DefaultPollInterval.
	PollInterval time.Duration
	// Context, if not nil, ends a following reader's waits: Next then
	// returns Context.Err(). It is not consulted otherwise.
	Context context.Context
	// Offset is the input offset of src's first byte, for a reader of
	// part of a capture (a [Span]): entry offsets and damaged ranges are
	// reported from it.
	Offset int64
	// SkipSummaries makes the reader skip SegmentSummary records without
	// decoding them (after their CRC), as readers of the frames (ds log)
	// do: they count the frames themselves.
	SkipSummaries bool
	// SkipRepeatedCatalogs makes the reader leave undecoded a large
	// header catalog that repeats, byte for byte, the last one it decoded
	// (of the same stream): the entry's Header has CatalogRepeated set and
	// Channels nil (wireformat.ParseHeaderRepeats). For a consumer that
	// keeps what each header declared, the first declaration winning (the
	// views, by Scan): a capture of 16 MiB headers then costs one decoded
	// catalog, once.
	SkipRepeatedCatalogs bool
	// SkipBefore makes the reader skip the frames of records that start
	// before this input offset, and the Blocks there without decompressing
	// them (their CRC is still checked): ds tail reads a segment's header
	// and its last blocks only. Headers and every other record are
	// returned as usual.
	SkipBefore int64
}

// A Reader reads a DSS capture (ds-format(5)): any sequence of segments of
// any streams, from a file, a pipe or a concatenation of captures. It
// reports every segment header, channel declaration, frame and stream end
// in input order, resynchronises after damage and reports the damaged
// ranges, and reads every input to its end.
//
// A segment header that fails its checks is recovered from the
// HeaderCopy record after it when the damage is one flipped bit
// (ds-format(5) "Resynchronisation"): only the header's byte range is then
// reported, and the segment is read on.
//
// A Reader buffers its input. Its buffer grows only as input arrives, to
// at most the largest header or record it must hold plus 1 MiB (at least
// 2 MiB; while it recovers a damaged header, the header and its copy), and
// returns to 2 MiB once a larger header is read. It decompresses a Block
// in a goroutine of its own while its caller works through the previous
// one, when that block is already buffered whole, so it holds two blocks'
// contents and one compressed body. Whatever lengths the input claims, a
// Reader holds about 5 MiB for ordinary captures, and at most about
// 42 MiB for a header of wireformat.MaxHeaderSize that is really there,
// the decoded header it returns included (TestReaderMemoryLargeHeader). It
// is not safe for concurrent use.
type Reader struct {
	src          io.Reader
	max          int
	follow       bool
	pollInterval time.Duration
	ctx          context.Context

	buf  []byte
	r, w int                     // unread input is buf[r:w]
	base int64                   // input offset of buf[0]
	memo *wireformat.CatalogMemo // SkipRepeatedCatalogs
	eof  bool                    // src returned io.EOF and nothing was read since
	err  error                   // sticky: a read error or the follow context's error

	inSeg  bool            // the reader is in a readable segment
	stream frames.StreamID // its stream
	seed   uint32          // its CRC seed
	// recovered is the segment entry of a damaged header recovered from
	// its HeaderCopy, returned after the header's damage.
	recovered *Entry

	block     []byte // content of the Block being returned
	blockBuf  []byte // storage for block, reused
	blockPos  int
	blockOff  int64
	blockNext frames.Position // position expected after the block's last frame
	blockBody []byte          // the Block record's stored body, for Block
	blockSize int             // len(block) when it started
	inBlock   bool            // the entry last returned came from the block

	scanning bool // resync is running: keep idx.origin buffered
	idx      crcIndex

	skipBefore    int64 // ReaderOptions.SkipBefore
	skipSummaries bool  // ReaderOptions.SkipSummaries
	alias         bool  // NextView: payloads alias buf and block

	// The next block, decompressed ahead, and the buffers it swaps with
	// blockBuf.
	ahead     *aheadBlock
	spare     []byte
	aheadBody []byte
}

// NewReader returns a Reader of src. It reads nothing yet: the first call
// to [Reader.Next] does.
func NewReader(src io.Reader, opts ReaderOptions) *Reader {
	r := &Reader{src: src, max: opts.MaxRecordSize, follow: opts.Follow, pollInterval: opts.PollInterval, ctx: opts.Context, base: opts.Offset, skipBefore: opts.SkipBefore, skipSummaries: opts.SkipSummaries}
	if opts.SkipRepeatedCatalogs {
		r.memo = &wireformat.CatalogMemo{}
	}
	if r.max <= 0 {
		r.max = wireformat.DefaultMaxRecordSize
	}
	r.max = min(r.max, wireformat.MaxRecordSize)
	if r.pollInterval <= 0 {
		r.pollInterval = DefaultPollInterval
	}
	if r.ctx == nil {
		r.ctx = context.Background()
	}
	return r
}

// Next returns the next entry of the capture. The frame payload it returns
// belongs to the caller.
//
// At the end of input it returns io.EOF, if the input ends at a segment or
// record boundary (an empty input is an empty capture). Damaged or
// truncated input yields a *[CorruptError] with the damaged byte range,
// after every complete entry before it; it is not sticky: the next call
// goes on after the range. A torn tail is a *CorruptError wrapping
// io.ErrUnexpectedEOF, followed by io.EOF. A segment of a newer major
// version is a *CorruptError wrapping wireformat.ErrUnknownVersion.
// Errors reading the input, and the context's error of a following reader,
// are sticky: every later call returns them.
//
// Checksums are verified before Next returns an entry: a Block's records
// are returned only after the whole block has been decoded and checked.
func (r *Reader) Next() (Entry, error) {
	var e Entry
	err := r.NextInto(&e)
	return e, err
}

// NextInto is [Reader.Next] for hot loops: it stores the entry in *e and
// reuses the storage of e.Frame.Payload for the payload of a frame, so the
// payload of the entry previously read into e is overwritten. Every other
// field of *e is replaced.
func (r *Reader) NextInto(e *Entry) error {
	r.alias = false
	return r.next(e)
}

// NextView is [Reader.NextInto] without a copy of the payload: a frame's
// payload aliases the reader's buffers and is valid only until the next
// call. Views that render a frame at once read this way.
func (r *Reader) NextView(e *Entry) error {
	r.alias = true
	return r.next(e)
}

func (r *Reader) next(e *Entry) error {
	payload := e.Frame.Payload[:0]
	if r.alias {
		payload = nil
	}
	*e = Entry{}
	r.inBlock = false
	if r.recovered != nil {
		*e, r.recovered = *r.recovered, nil
		return nil
	}
	for {
		if r.err != nil {
			return r.err
		}
		if r.blockPos < len(r.block) {
			if r.nextInner(e, payload) {
				r.inBlock = true
				return nil
			}
			continue
		}
		err := r.fill(1)
		if err == io.EOF {
			if r.follow {
				if err := r.wait(); err != nil {
					return err
				}
				continue
			}
			return io.EOF
		}
		if err != nil {
			return err
		}
		var done bool
		if !r.inSeg || r.buf[r.r] == wireformat.Magic[0] {
			done, err = r.readHeader(e)
		} else {
			done, err = r.readRecord(e, payload)
		}
		if done || err != nil {
			return err
		}
	}
}

// Block returns the stored body of the Block record (codec, uncompressed
// size, compressed records; ds-format(5) "Block") that the entry last
// returned was read from, and the size of the block's records
// uncompressed; ok is false when that entry was not read from a Block.
// The body aliases the reader's buffers: it is valid until the next call.
// ds merge writes a block it copies unchanged without compressing it
// again ([Writer.CopyBlock]).
func (r *Reader) Block() (body []byte, size int, ok bool) {
	if !r.inBlock {
		return nil, 0, false
	}
	return r.blockBody, r.blockSize, true
}

// Buffered reports how many bytes of input the reader holds that it has
// not returned yet (of its buffer and of the block it is returning): while
// it is more than 0, the next call reads nothing from its source, unless
// what it holds is an incomplete record.
func (r *Reader) Buffered() int { return r.w - r.r + len(r.block) - r.blockPos }

// pos returns the input offset of the next unread byte.
func (r *Reader) pos() int64 { return r.base + int64(r.r) }

// seek sets the read position to input offset p, which must be buffered.
func (r *Reader) seek(p int64) { r.r = int(p - r.base) }

// data returns input[a:b], which must be buffered.
func (r *Reader) data(a, b int64) []byte { return r.buf[a-r.base : b-r.base] }

// fill makes at least n bytes available at buf[r:], reading as needed. It
// returns io.EOF if the input ends first (all of it then being buffered),
// or a sticky read error.
func (r *Reader) fill(n int) error {
	empty := 0
	for r.w-r.r < n {
		if r.eof {
			return io.EOF
		}
		if r.err != nil {
			return r.err
		}
		r.makeRoom(n)
		m, err := r.src.Read(r.buf[r.w:])
		r.w += m
		switch {
		case err == io.EOF:
			r.eof = true
		case err != nil:
			r.err = fmt.Errorf("segments: read: %w", err)
		case m == 0:
			if empty++; empty >= 100 {
				r.err = fmt.Errorf("segments: read: %w", io.ErrNoProgress)
			}
		}
	}
	return nil
}

// makeRoom makes room in buf to read into, on the way to holding n bytes
// from r.r. It drops input before r.r (and, during a scan, before the
// checkpoint index's origin), and grows buf by doubling while reads fill it
// and the bytes it must keep need it, so that memory follows the input
// actually read, not the lengths it claims.
func (r *Reader) makeRoom(n int) {
	if r.buf == nil {
		r.buf = make([]byte, initialBufferSize)
		return
	}
	if r.w < len(r.buf) {
		return
	}
	keep := r.r
	if r.scanning {
		keep = min(keep, int(r.idx.origin-r.base))
	}
	live := r.w - keep
	if live > len(r.buf)/2 || len(r.buf) < readBufferSize {
		// Doubling keeps copying linear in the input read; the cap keeps
		// the buffer within what the n bytes need and one read's worth
		// (a 16 MiB header costs 17 MiB, not 32 MiB).
		want := max(r.r-keep+n+readBufferSize, 2*readBufferSize)
		size := min(2*len(r.buf), want)
		if size < want && want > 2*readBufferSize && r.srcHolds(n-(r.w-r.r)) {
			// The input is a file that holds the bytes the n need: no
			// length claimed them, they are there, so grow to all of
			// them at once (for a 16 MiB header 17 MiB, not 8.5 and then
			// 17 MiB, 25.5 MiB at the copy).
			size = want
		}
		if size < want && 2*size > want {
			// Near a large want, grow to half of it, then to all of it:
			// the old buffer and the new one together never hold more
			// than 1.5 times want (for a 16 MiB header 25 MiB, where
			// 16 MiB and then 17 MiB held 33 MiB).
			size = (want + 1) / 2
		}
		grown := make([]byte, size)
		r.w = copy(grown, r.buf[keep:r.w])
		r.buf = grown
	} else {
		r.w = copy(r.buf, r.buf[keep:r.w])
	}
	r.base += int64(keep)
	r.r -= keep
}

// srcHolds reports whether the input is known to hold at least need more
// bytes beyond those read from it: a regular file or a section, directly
// or through the wrappers of Scan and ScanAny (see fileAt), holds what
// lies between its next byte and its end (what a reader following a
// growing file sees now).
func (r *Reader) srcHolds(need int) bool {
	_, next, end, ok := fileAt(r.src)
	return ok && end-next >= int64(need)
}

// shrink drops a buffer grown for a large header or record once it has
// been read: the unread input moves to a buffer of ordinary size, so that
// a reader past a 16 MiB header no longer holds 17 MiB.
func (r *Reader) shrink() {
	if len(r.buf) <= 2*readBufferSize || r.w-r.r > readBufferSize {
		return
	}
	b := make([]byte, 2*readBufferSize)
	r.w = copy(b, r.buf[r.r:r.w])
	r.base += int64(r.r)
	big := len(r.buf) >= collectAfterBuffer
	r.buf, r.r = b, 0
	if big {
		// The header's decoded form was just made beside the buffer; what
		// the caller makes of it next (a view's state of each channel)
		// would come on top of both. Collected now, the buffer's pages
		// are reused for it instead: a 16 MiB header's reader peaks at
		// the buffer and the decoded header (ds-format(5) "SIZE LIMITS"),
		// not at that and the caller's state too. Rare (a header of
		// several MiB), and a few ms.
		runtime.GC()
	}
}

// collectAfterBuffer is the buffer size, in bytes, from which [Reader.shrink]
// runs the garbage collector after dropping it.
const collectAfterBuffer = 8 << 20

// wait waits for more input in follow mode.
func (r *Reader) wait() error {
	if err := r.ctx.Err(); err != nil {
		r.err = err
		return err
	}
	t := time.NewTimer(r.pollInterval)
	defer t.Stop()
	select {
	case <-r.ctx.Done():
		r.err = r.ctx.Err()
		return r.err
	case <-t.C:
	}
	r.eof = false
	return nil
}

// readHeader reads the segment header at the read position. It reports
// whether *e holds an entry.
func (r *Reader) readHeader(e *Entry) (bool, error) {
	x := r.pos()
	triedAt := false
	for {
		h, n, err := wireformat.ParseHeaderRepeats(r.buf[r.r:r.w], r.memo)
		if err == io.ErrUnexpectedEOF && n > largeHeader && r.w-r.r >= wireformat.HeaderPrefixSize && !triedAt {
			triedAt = true
			ok, err := r.readHeaderAt(x, n, &h)
			if _, _, _, file := fileAt(r.src); err == nil && !ok && !file && !r.follow && fieldsFitPiece(r.buf[r.r:r.w]) {
				ok, err = r.readHeaderChunks(x, n, &h)
			}
			if err != nil {
				return false, err
			}
			if ok {
				r.inSeg, r.stream, r.seed = true, h.Stream.Stream, h.Seed()
				*e = Entry{Kind: EntrySegment, Offset: x, Stream: h.Stream.Stream, Header: &h}
				return true, nil
			}
		}
		if err == io.ErrUnexpectedEOF {
			if err = r.fill(n); err == nil {
				continue
			}
			if err != io.EOF {
				return false, err
			}
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			if !errors.Is(err, wireformat.ErrBadMagic) {
				// A magic starts a real header (the writers' invariant):
				// its segment is lost up to the next magic.
				r.inSeg = false
			}
			return r.damaged(x, err)
		}
		r.seek(x + int64(n))
		r.inSeg, r.stream, r.seed = true, h.Stream.Stream, h.Seed()
		if n > readBufferSize {
			r.shrink()
		}
		*e = Entry{Kind: EntrySegment, Offset: x, Stream: h.Stream.Stream, Header: &h}
		return true, nil
	}
}

// largeHeader is the header size, in bytes, from which a Reader of a
// file decodes a header from the file a piece at a time
// ([wireformat.ParseHeaderAt]) instead of reading it whole into its
// buffer.
const largeHeader = 2 * readBufferSize

// readHeaderAt decodes the header of n bytes at input offset x, of which
// the buffer holds the start, from the file under the input, a piece at a
// time, into *h, and moves the read position past it. It reports false,
// having read nothing, where the input is not a regular file that holds
// the whole header, or the header is not one ParseHeaderAt answers for
// (damage among them): the caller then reads it whole.
func (r *Reader) readHeaderAt(x int64, n int, h *wireformat.Header) (bool, error) {
	f, next, size, ok := fileAt(r.src)
	if !ok {
		return false, nil
	}
	end := r.base + int64(r.w) // the input offset of the file's byte at next
	unread := x + int64(n) - end
	at := next - (end - x) // the header's file offset
	if at < 0 || size-at < int64(n) {
		return false, nil
	}
	got, ok := wireformat.ParseHeaderAt(f, at, n, r.memo)
	if !ok {
		return false, nil
	}
	// Past the header: what the buffer holds of it is dropped, the rest
	// read and dropped (the input may be a pipe-like wrapper of the file
	// that must see every byte, or a bufio.Reader over it).
	r.base, r.r, r.w = x+int64(n), 0, 0
	if len(r.buf) == 0 {
		r.buf = make([]byte, initialBufferSize)
	}
	for unread > 0 {
		m, err := r.src.Read(r.buf[:min(int64(len(r.buf)), unread)])
		unread -= int64(m)
		switch {
		case unread == 0:
		case err == io.EOF:
			r.err = fmt.Errorf("segments: read: %w: the file ended inside a segment header it held a moment before", io.ErrUnexpectedEOF)
			return false, r.err
		case err != nil:
			r.err = fmt.Errorf("segments: read: %w", err)
			return false, r.err
		}
	}
	*h = got
	return true, nil
}

// readHeaderChunks reads the header of n bytes at input offset x, of
// which the buffer holds the start, from an input that is not a file (a
// pipe), into pieces of [wireformat.HeaderPiece] bytes, as many as the
// input delivers (memory follows the input read, not the length
// claimed), and decodes it from them ([wireformat.ParseHeaderAt]): the
// buffer does not grow to the header, nor is the header copied as it
// grows (a 16 MiB header cost 25 MiB of buffers beside its descriptors).
// It reports false where the input ends first or the header is not one
// ParseHeaderAt answers for (damage among them): its bytes are then put in
// the buffer, read position x, for the caller to read whole as before.
func (r *Reader) readHeaderChunks(x int64, n int, h *wireformat.Header) (bool, error) {
	var c chunkedBytes
	held := r.buf[r.r:r.w]
	for rest := held; len(rest) > 0; {
		k := min(len(rest), wireformat.HeaderPiece)
		c.chunks = append(c.chunks, append(make([]byte, 0, wireformat.HeaderPiece), rest[:k]...))
		rest = rest[k:]
	}
	c.n = len(held)
	var rerr error
	for c.n < n && rerr == nil {
		if len(c.chunks) == 0 || len(c.chunks[len(c.chunks)-1]) == cap(c.chunks[len(c.chunks)-1]) {
			c.chunks = append(c.chunks, make([]byte, 0, wireformat.HeaderPiece))
		}
		last := &c.chunks[len(c.chunks)-1]
		want := min(cap(*last)-len(*last), n-c.n)
		m, err := io.ReadFull(r.src, (*last)[len(*last):len(*last)+want])
		*last = (*last)[:len(*last)+m]
		c.n += m
		rerr = err
	}
	if rerr == nil {
		if got, ok := wireformat.ParseHeaderAt(&c, 0, n, r.memo); ok {
			r.base, r.r, r.w = x+int64(n), 0, 0
			*h = got
			return true, nil
		}
	}
	// Back into the buffer, as fill would have read it.
	buf := make([]byte, max(c.n+readBufferSize, len(r.buf)))
	w := 0
	for _, b := range c.chunks {
		w += copy(buf[w:], b)
	}
	r.buf, r.base, r.r, r.w = buf, x, 0, w
	switch {
	case rerr == io.EOF || rerr == io.ErrUnexpectedEOF:
		r.eof = true
	case rerr != nil:
		r.err = fmt.Errorf("segments: read: %w", rerr)
		return false, r.err
	}
	return false, nil
}

// fieldsFitPiece reports whether the start of a header, b, says that its
// fields before the catalog (segment id, sequence number, writer
// identity) fit in a piece, as ParseHeaderAt needs: a header of a 16 MiB
// writer identity is read whole at once rather than into pieces first.
func fieldsFitPiece(b []byte) bool {
	at := wireformat.HeaderPrefixSize + 8
	if len(b) <= at {
		return false
	}
	_, k := binary.Uvarint(b[at:])
	if k <= 0 {
		return false
	}
	w, k2 := binary.Uvarint(b[at+k:])
	return k2 > 0 && w < wireformat.HeaderPiece/2
}

// chunkedBytes is bytes held in pieces, read as an io.ReaderAt.
type chunkedBytes struct {
	chunks [][]byte // each of cap wireformat.HeaderPiece, all full but the last
	n      int
}

func (c *chunkedBytes) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off >= int64(c.n) {
		return 0, io.EOF
	}
	done := 0
	for done < len(p) && off < int64(c.n) {
		b := c.chunks[off/wireformat.HeaderPiece][off%wireformat.HeaderPiece:]
		k := copy(p[done:], b)
		done += k
		off += int64(k)
	}
	if done < len(p) {
		return done, io.EOF
	}
	return done, nil
}

// fileAt returns what src reads as an io.ReaderAt, the offset in it of
// the next byte src's Read returns, and where what it holds ends, where
// src is a regular file, a section of any io.ReaderAt (io.SectionReader:
// the views read a stream's sections of a file so), or a wrapper of
// either that says (a FileInput).
func fileAt(src io.Reader) (io.ReaderAt, int64, int64, bool) {
	switch s := src.(type) {
	case FileInput:
		return s.ReadingFile()
	case *os.File:
		fi, err := s.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			return nil, 0, 0, false
		}
		off, err := s.Seek(0, io.SeekCurrent)
		if err != nil {
			return nil, 0, 0, false
		}
		return s, off, fi.Size(), true
	case *io.SectionReader:
		outer, base, n := s.Outer()
		off, err := s.Seek(0, io.SeekCurrent)
		if err != nil {
			return nil, 0, 0, false
		}
		return outer, base + off, base + n, true
	}
	return nil, 0, 0, false
}

// A FileInput is an input of a [Reader] that reads a regular file (or
// any io.ReaderAt: a section of a capture, a store's chunk) and can say
// which, the offset in it of the next byte its Read returns, and where
// what it holds ends (ok false where it cannot say now). A Reader decodes
// a large segment header of such an input from it a piece at a time
// ([wireformat.ParseHeaderAt]) instead of holding its bytes: for a header
// of 16 MiB, 16 MiB less at the peak (issue 21 item 5). An *os.File and
// an *io.SectionReader are such inputs without saying; a wrapper of one
// implements it to keep that, and must pass every byte the Reader reads
// past the header through Read as before.
type FileInput interface {
	ReadingFile() (f io.ReaderAt, next, end int64, ok bool)
}

// readRecord reads the record at the read position. It reports whether *e
// holds an entry.
func (r *Reader) readRecord(e *Entry, payload []byte) (bool, error) {
	x := r.pos()
	for {
		rec, n, err := wireformat.ParseRecord(r.buf[r.r:r.w], r.seed, r.max)
		if err == io.ErrUnexpectedEOF {
			if err = r.fill(n); err == nil {
				continue
			}
			if err != io.EOF {
				return false, err
			}
			return r.damaged(x, io.ErrUnexpectedEOF)
		}
		if errors.Is(err, wireformat.ErrBadEscape) {
			r.seek(x + int64(n)) // sound framing: skip just this record
			return false, &CorruptError{Offset: x, End: x + int64(n), Err: err}
		}
		if err != nil {
			return r.damaged(x, err)
		}
		r.seek(x + int64(n))
		if x < r.skipBefore && (rec.Type == wireformat.TypeBlock || rec.Type == wireformat.TypeFrame) {
			return false, nil
		}
		if rec.Type == wireformat.TypeBlock {
			return r.startBlock(x, n, rec.Body, e)
		}
		ok, err := r.decode(e, payload, rec, x, false)
		if err != nil {
			return false, &CorruptError{Offset: x, End: x + int64(n), Err: err}
		}
		return ok, nil
	}
}

// decode fills *e from a record other than a Block, or from an inner
// record of a block (inner). It reports whether the record yields an entry
// (experimental records do not).
func (r *Reader) decode(e *Entry, payload []byte, rec wireformat.Record, off int64, inner bool) (bool, error) {
	stream := r.stream
	switch {
	case rec.Type == wireformat.TypeFrame:
		var f frames.Frame
		var err error
		if inner {
			f, err = wireformat.ParseInnerFrameBody(rec.Body, r.blockNext)
			r.blockNext = f.Position + 1
		} else {
			f, err = wireformat.ParseFrameBody(rec.Body)
		}
		if err != nil {
			return false, err
		}
		if !r.alias {
			f.Payload = append(payload, f.Payload...)
		}
		e.Kind, e.Offset, e.Stream, e.Frame = EntryFrame, off, stream, f
	case rec.Type == wireformat.TypeChannelDeclared:
		d, err := r.parseChannel(rec.Body)
		if err != nil {
			return false, err
		}
		*e = Entry{Kind: EntryChannel, Offset: off, Stream: stream, Channel: &d}
	case rec.Type == wireformat.TypeStreamEnded:
		*e = Entry{Kind: EntryStreamEnded, Offset: off, Stream: stream}
	case rec.Type == wireformat.TypeTrimmed:
		h, err := wireformat.ParseTrimmedBody(rec.Body)
		if err != nil {
			return false, err
		}
		*e = Entry{Kind: EntryTrimmed, Offset: off, Stream: stream, Frame: frames.Frame{Position: h}}
	case rec.Type == wireformat.TypeHeaderCopy:
		// What the header said: needed only when the header is damaged
		// (recoverHeader).
		return false, nil
	case rec.Type == wireformat.TypeSummary && r.skipSummaries:
		return false, nil
	case rec.Type == wireformat.TypeSummary:
		sum, err := wireformat.ParseSummaryBody(rec.Body)
		if err != nil {
			return false, err
		}
		*e = Entry{Kind: EntrySummary, Offset: off, Stream: stream, Summary: &sum}
	case rec.Type.Reserved():
		*e = Entry{Kind: EntryUnknown, Offset: off, Stream: stream, Type: rec.Type}
	default: // experimental
		return false, nil
	}
	return true, nil
}

func (r *Reader) parseChannel(body []byte) (frames.ChannelDescriptor, error) {
	d, err := wireformat.ParseChannelBody(body)
	if err == nil && d.Stream != r.stream {
		err = fmt.Errorf("%w: %w: channel %d is of %s, segment of %s", wireformat.ErrBadBody, wireformat.ErrWrongStream, d.ID, d.Stream, r.stream)
	}
	return d, err
}

// startBlock decodes and checks the Block record of n bytes at offset x,
// whose records Next then returns one by one. It reports whether *e holds
// an entry: a block of an unknown codec.
func (r *Reader) startBlock(x int64, n int, body []byte, e *Entry) (bool, error) {
	var content []byte
	var err error
	if a := r.ahead; a != nil && a.off == x && a.n == n {
		// Decoded ahead, beside the caller's work on the previous block.
		<-a.done
		content, err = a.content, a.err
		r.ahead, r.aheadBody = nil, a.body
		r.spare, r.blockBuf = r.blockBuf, content[:0]
	} else {
		r.dropAhead()
		content, err = wireformat.DecodeBlock(r.blockBuf[:0], body)
		if cap(content) > cap(r.blockBuf) {
			r.blockBuf = content[:0]
		}
	}
	if errors.Is(err, wireformat.ErrUnknownCodec) {
		*e = Entry{Kind: EntryUnknown, Offset: x, Stream: r.stream, Type: wireformat.TypeBlock, Err: err}
		return true, nil
	}
	if err == nil {
		err = r.checkBlock(content)
	}
	if err != nil {
		return false, &CorruptError{Offset: x, End: x + int64(n), Err: err}
	}
	r.block, r.blockPos, r.blockOff, r.blockNext = content, 0, x, 0
	r.blockBody, r.blockSize = body, len(content)
	r.startAhead()
	return false, nil
}

// aheadBlock is the next Block record, being decompressed by a goroutine
// of its own while the reader's caller works on the current block.
type aheadBlock struct {
	off     int64 // input offset of the record
	n       int   // its size
	body    []byte
	content []byte
	err     error
	done    chan struct{}
}

// startAhead starts decompressing the record at the read position if it
// is a Block that is already buffered whole (a reader never reads ahead
// for it: on a pipe that could wait for input). Its CRC is checked when
// the reader gets to it, before the result is used.
func (r *Reader) startAhead() {
	// Only an unescaped Block, whole in the buffer; its CRC is checked
	// once, when the reader gets to it.
	b := r.buf[r.r:r.w]
	if r.ahead != nil || len(b) < 5 || r.pos() < r.skipBefore || b[0] != byte(wireformat.TypeBlock) {
		return
	}
	size := int(binary.LittleEndian.Uint32(b[1:]))
	n := size + wireformat.RecordOverhead
	if size > r.max || n > len(b) {
		return
	}
	a := &aheadBlock{off: r.pos(), n: n, body: append(r.aheadBody[:0], b[5:5+size]...), done: make(chan struct{})}
	dst := r.spare[:0]
	r.ahead, r.spare, r.aheadBody = a, nil, nil
	go func() {
		a.content, a.err = wireformat.DecodeBlock(dst, a.body)
		close(a.done)
	}()
}

// dropAhead waits for a block decompressed ahead that the reader will not
// use (it resynchronised elsewhere) and takes its buffers back.
func (r *Reader) dropAhead() {
	if a := r.ahead; a != nil {
		<-a.done
		r.ahead, r.spare, r.aheadBody = nil, a.content[:0], a.body
	}
}

// checkBlock checks every inner record of a block before any is returned.
func (r *Reader) checkBlock(content []byte) error {
	for len(content) > 0 {
		rec, n, err := wireformat.ParseInner(content)
		if err == io.ErrUnexpectedEOF {
			return fmt.Errorf("%w: block ends inside an inner record", wireformat.ErrBadBody)
		}
		if err != nil {
			return err
		}
		switch rec.Type {
		case wireformat.TypeFrame:
			_, err = wireformat.ParseFrameBody(rec.Body) // as an inner frame, the same checks
		case wireformat.TypeChannelDeclared:
			_, err = r.parseChannel(rec.Body)
		case wireformat.TypeTrimmed:
			_, err = wireformat.ParseTrimmedBody(rec.Body)
		}
		if err != nil {
			return err
		}
		content = content[n:]
	}
	return nil
}

// nextInner fills *e from the next record of the current block, checked by
// checkBlock. It reports whether the record yields an entry.
func (r *Reader) nextInner(e *Entry, payload []byte) bool {
	rec, n, _ := wireformat.ParseInner(r.block[r.blockPos:])
	r.blockPos += n
	var ok bool
	if rec.Type == wireformat.TypeFrame {
		// The common case, without decode's switch: checkBlock checked
		// the body.
		f, _ := wireformat.ParseInnerFrameBody(rec.Body, r.blockNext)
		r.blockNext = f.Position + 1
		if !r.alias {
			f.Payload = append(payload, f.Payload...)
		}
		e.Kind, e.Offset, e.Stream, e.Frame = EntryFrame, r.blockOff, r.stream, f
		ok = true
	} else {
		ok, _ = r.decode(e, payload, rec, r.blockOff, true)
	}
	if r.blockPos >= len(r.block) {
		r.block, r.blockPos = nil, 0
	}
	return ok
}

// damaged handles a header or record at offset x that failed with cause:
// it resynchronises and returns the *CorruptError for the damaged range.
//
// In follow mode, when the input ends before a resume point, the verdict
// waits for more input: an incomplete header or record may yet complete,
// and the bytes after damage say where it ends. The reader goes back to x
// and waits, as long as x is still buffered (input ending inside the
// record at x drops nothing from the buffer; a long scan may); otherwise it
// reports the range up to the first candidate the end of input left open.
func (r *Reader) damaged(x int64, cause error) (bool, error) {
	h, at, end, c := r.recoverHeader(x)
	switch {
	case r.err != nil:
		return false, r.err
	case c == valid:
		r.seek(end)
		r.inSeg, r.stream, r.seed = true, h.Stream.Stream, h.Seed()
		if end-x > readBufferSize {
			r.shrink()
		}
		r.recovered = &Entry{Kind: EntrySegment, Offset: at, Stream: h.Stream.Stream, Header: &h}
		if errors.Is(cause, io.ErrUnexpectedEOF) {
			// The length field ran past the end of input, but the
			// segment goes on: it is the length that is damaged.
			cause = fmt.Errorf("%w: segment header length runs past its HeaderCopy", wireformat.ErrTooLarge)
		}
		return false, &CorruptError{Offset: x, End: at, Err: fmt.Errorf("%w; %w", cause, ErrHeaderRepaired)}
	case c == needMore && r.follow && x >= r.base:
		r.seek(x)
		return false, r.wait()
	}
	resume, found, err := r.resync(x + 1)
	if err != nil {
		return false, err
	}
	if !found && r.follow && x >= r.base {
		r.seek(x)
		return false, r.wait()
	}
	r.seek(resume)
	return false, &CorruptError{Offset: x, End: resume, Err: cause}
}

// recoverHeader tries to recover the segment whose header, at input
// offset x, failed its checks, from the HeaderCopy record that writers put
// right after each header (ds-format(5) "Resynchronisation"). It is
// tried only where the bytes at x are the magic and major version 1 but
// for at most one bit, for one flipped bit anywhere in a header leaves the
// other fields whole: the HeaderCopy starts where the header's length
// field says the header ends or, when that field is what was damaged,
// where the lengths of the body's own fields say it does. The copy is
// taken if it is a HeaderCopy record that checks under the seed of the
// segment id it carries, that id is the damaged header's but for at most
// one bit, and its body decodes; a parity copy (of a header too large
// for a whole one), if it repairs the header body the buffer holds before
// it. It returns the header, the copy's
// offset and end, and valid; needMore when the input ended before a
// candidate could be checked; invalid otherwise. It reads as needed and
// leaves the read position at x.
func (r *Reader) recoverHeader(x int64) (h wireformat.Header, at, end int64, c candidate) {
	r.seek(x)
	const idEnd = wireformat.HeaderPrefixSize + 8 // the segment id ends the fixed fields
	if r.fill(idEnd) != nil {
		if r.w > r.r && nearHeader(r.buf[r.r:r.w]) {
			return h, 0, 0, needMore
		}
		return h, 0, 0, invalid
	}
	b := r.buf[r.r:r.w]
	if !nearHeader(b) {
		return h, 0, 0, invalid
	}
	id := binary.LittleEndian.Uint64(b[wireformat.HeaderPrefixSize:])
	more := false
	stated := int64(-1)
	if size := binary.LittleEndian.Uint32(b[10:]); size <= wireformat.MaxHeaderSize {
		stated = x + wireformat.HeaderOverhead + int64(size)
		if h, end, c = r.checkCopy(x, stated, id); c == valid {
			return h, stated, end, valid
		}
		more = c == needMore
	}
	// The length field may be what was damaged: the body's fields say
	// where the body ends.
	for {
		body := r.buf[r.r+wireformat.HeaderPrefixSize : r.w]
		n, err := wireformat.HeaderFieldsSize(body)
		if err == io.ErrUnexpectedEOF {
			if r.fill(wireformat.HeaderPrefixSize+n) != nil {
				return h, 0, 0, needMore
			}
			continue
		}
		if err != nil {
			break
		}
		if at = x + wireformat.HeaderOverhead + int64(n); at != stated {
			if h, end, c = r.checkCopy(x, at, id); c == valid {
				return h, at, end, valid
			}
			more = more || c == needMore
		}
		break
	}
	return h, 0, 0, candidateIf(more)
}

// candidateIf returns needMore if more, else invalid.
func candidateIf(more bool) candidate {
	if more {
		return needMore
	}
	return invalid
}

// nearHeader reports whether b, at least 9 bytes long (or all there is),
// starts with the magic and major version 1 but for at most one bit.
func nearHeader(b []byte) bool {
	want := wireformat.Magic + string(rune(wireformat.MajorVersion))
	diff := 0
	for i := range min(len(b), len(want)) {
		diff += bits.OnesCount8(b[i] ^ want[i])
	}
	return diff <= 1
}

// checkCopy checks for a HeaderCopy record at input offset at for the
// damaged header at x (the read position) whose segment id field holds
// id: see recoverHeader. It returns the header the copy holds, or, for a
// parity copy, the header repaired with it, and the record's end.
func (r *Reader) checkCopy(x, at int64, id uint64) (wireformat.Header, int64, candidate) {
	var h wireformat.Header
	head := int(at-x) + 5
	if r.fill(head) != nil {
		return h, 0, needMore
	}
	b := r.data(at, at+5)
	tag := b[0]
	size := int(binary.LittleEndian.Uint32(b[1:]))
	if wireformat.RecordType(tag&^wireformat.EscapedFlag) != wireformat.TypeHeaderCopy || b[4] != 0 || size > r.max || size < 10 {
		return h, 0, invalid
	}
	n := wireformat.RecordOverhead + size
	if r.fill(head+n-5) != nil {
		return h, 0, needMore
	}
	rec := r.data(at, at+int64(n))
	// The copy's segment id: body bytes 2–9, after the version bytes
	// (stored 89 00 for 89 when escaped).
	var copyID [8]byte
	for i, j := 0, 7; i < len(copyID); i, j = i+1, j+1 {
		if j >= len(rec)-4 {
			return h, 0, invalid
		}
		copyID[i] = rec[j]
		if tag&wireformat.EscapedFlag != 0 && rec[j] == 0x89 {
			j++
		}
	}
	if bits.OnesCount64(binary.LittleEndian.Uint64(copyID[:])^id) > 1 {
		return h, 0, invalid
	}
	parsed, _, err := wireformat.ParseRecord(rec, wireformat.Seed(copyID), r.max)
	if err != nil {
		return h, 0, invalid
	}
	if wireformat.IsHeaderParity(parsed.Body) {
		// A header too large for a whole copy: its body is where the
		// candidate says, and is repaired in the buffer.
		p, err := wireformat.ParseHeaderParity(parsed.Body)
		if err != nil || int64(p.BodyLen) != at-x-wireformat.HeaderOverhead {
			return h, 0, invalid
		}
		body := r.data(x+wireformat.HeaderPrefixSize, x+wireformat.HeaderPrefixSize+int64(p.BodyLen))
		if h, _, err = p.Recover(body); err != nil {
			return h, 0, invalid
		}
		return h, at + int64(n), valid
	}
	if h, err = wireformat.ParseHeaderCopy(parsed.Body); err != nil {
		return h, 0, invalid
	}
	return h, at + int64(n), valid
}

// validTag[c] reports whether c can start a record: its type is valid.
var validTag = func() (t [256]bool) {
	for c := range t {
		t[c] = wireformat.RecordType(c &^ wireformat.EscapedFlag).Valid()
	}
	return t
}()

// scanAhead is how many bytes a resynchronising scan keeps buffered ahead
// of its position.
const scanAhead = 4 << 10

type candidate uint8

const (
	invalid  candidate = iota
	valid              // a resume point
	needMore           // incomplete at the end of input
)

// resync scans input from offset from for the first resume point of
// ds-format(5) "Resynchronisation": a valid header, or, inside a segment, a
// record valid under its seed, or, outside one, the magic and a major
// version other than 1. It returns the point and true, or, when input ends first, the
// offset where reading should go on and false: the end of input, or in
// follow mode the first candidate that was incomplete at the end of input.
func (r *Reader) resync(from int64) (int64, bool, error) {
	r.scanning = true
	defer func() { r.scanning = false }()
	r.idx.reset(from)
	undetermined := int64(-1)
	// Inside a segment, a header found by the scan may lie in the payload
	// of the damaged record itself (a DSS capture captured as a payload,
	// whose escape byte was hit: 89 00 → 89 89). Such a header is taken
	// only if no record valid under this segment's seed follows it within
	// the longest extent the damaged record (which starts at from-1) can
	// have: a real next segment has another seed, so none would.
	hdr, hdrLimit := int64(-1), int64(0)
	for pos := from; ; {
		if hdr >= 0 && pos >= hdrLimit {
			return hdr, true, nil
		}
		r.seek(pos)
		if hdr < 0 {
			r.idx.trim(pos)
		}
		if err := r.fill(scanAhead); err != nil && err != io.EOF {
			return 0, false, err
		}
		b := r.buf[r.r:r.w]
		if len(b) == 0 {
			break
		}
		limit := len(b)
		if !r.eof {
			limit -= wireformat.HeaderPrefixSize // check those after a refill
		}
		i := r.findCandidate(b, limit)
		if i < 0 {
			pos += int64(limit)
			continue
		}
		cand := pos + int64(i)
		isHeader := b[i] == wireformat.Magic[0]
		if hdr >= 0 && (isHeader || cand >= hdrLimit) {
			if cand >= hdrLimit {
				return hdr, true, nil
			}
			pos = cand + 1
			continue
		}
		switch r.checkCandidate(cand) {
		case valid:
			if isHeader && r.inSeg {
				hdr = cand
				hdrLimit = from - 1 + int64(wireformat.RecordOverhead) + int64(r.max)
				pos = cand + 1
				continue
			}
			return cand, true, nil
		case needMore:
			if undetermined < 0 {
				undetermined = cand
			}
		}
		if r.err != nil {
			return 0, false, r.err
		}
		pos = cand + 1
	}
	if hdr >= 0 {
		return hdr, true, nil
	}
	if r.follow && undetermined >= 0 {
		return undetermined, false, nil
	}
	return r.base + int64(r.w), false, nil
}

// findCandidate returns the index in b[:limit] of the first byte that may
// start a resume point, judging by the bytes of b at hand, or -1.
func (r *Reader) findCandidate(b []byte, limit int) int {
	magic := wireformat.Magic
	for i := 0; i < limit; i++ {
		c := b[i]
		if c == magic[0] {
			if n := min(len(magic), len(b)-i); string(b[i:i+n]) == magic[:n] {
				return i
			}
			continue
		}
		if !r.inSeg {
			j := bytes.IndexByte(b[i+1:limit], magic[0])
			if j < 0 {
				return -1
			}
			i += j
			continue
		}
		if !validTag[c] {
			continue
		}
		if i+5 <= len(b) && (b[i+4] != 0 || int(binary.LittleEndian.Uint32(b[i+1:])) > r.max) {
			continue
		}
		return i
	}
	return -1
}

// checkCandidate checks whether a header or record that is valid for
// resynchronisation starts at input offset c, reading as needed.
func (r *Reader) checkCandidate(c int64) candidate {
	r.seek(c)
	if r.buf[r.r] == wireformat.Magic[0] {
		if r.fill(wireformat.HeaderPrefixSize) != nil {
			return needMore
		}
		b := r.buf[r.r:r.w]
		if string(b[:len(wireformat.Magic)]) != wireformat.Magic {
			return invalid
		}
		if b[len(wireformat.Magic)] != wireformat.MajorVersion {
			// A segment of another version, which readHeader reports;
			// but inside a segment, where one damaged byte of an escaped
			// record (89 00 44 53 …) can forge a magic, only a header
			// whose CRC checks is a resume point.
			if !r.inSeg {
				return valid
			}
			return invalid
		}
		size := binary.LittleEndian.Uint32(b[10:])
		if size > wireformat.MaxHeaderSize {
			return invalid
		}
		if n := wireformat.HeaderOverhead + int(size); n > largeHeader {
			if ok, known := r.checkHeaderAt(c, n); ok {
				return valid
			} else if known {
				return invalid
			}
		}
		end := c + wireformat.HeaderPrefixSize + int64(size)
		return r.checkCRC(c, end, 0)
	}
	if r.fill(5) != nil {
		return needMore
	}
	b := r.buf[r.r:r.w]
	size := binary.LittleEndian.Uint32(b[1:])
	if b[4] != 0 || int(size) > r.max {
		return invalid
	}
	return r.checkCRC(c, c+5+int64(size), r.seed)
}

// checkHeaderAt checks the candidate header of n bytes at input offset c
// from the file under the input, a piece at a time
// ([wireformat.HeaderCheckAt]), so that a scan does not read a large
// header (up to 16 MiB) into its buffer to check it. known is false where
// the input is not a regular file that holds the whole header: the caller
// then checks it in the buffer.
func (r *Reader) checkHeaderAt(c int64, n int) (valid, known bool) {
	f, next, size, ok := fileAt(r.src)
	if !ok {
		return false, false
	}
	at := next - (r.base + int64(r.w) - c) // the header's file offset
	if at < 0 || size-at < int64(n) {
		return false, false
	}
	return wireformat.HeaderCheckAt(f, at, n), true
}

// checkCRC reports whether input[end:end+4] holds CRC32C(seed prefix ‖
// input[c:end]), reading as needed.
func (r *Reader) checkCRC(c, end int64, seed uint32) candidate {
	if r.fill(int(end+4-c)) != nil {
		return needMore
	}
	stored := binary.LittleEndian.Uint32(r.data(end, end+4))
	if r.idx.rangeCRC(seed, c, end, r.data) != stored {
		return invalid
	}
	return valid
}

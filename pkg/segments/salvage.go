package segments

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"syscall"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// A full file system must not cost what reached it (issue 21 item 9,
// ds-format(5) "FULL FILE SYSTEM"). A write that fails with ENOSPC,
// EDQUOT or EFBIG has usually written part of the buffer: whole records,
// then the first bytes of one (most often a zstd block of up to 1 MiB of
// records, all of which its one CRC then loses). When the io.Writer is a
// file that can be truncated (an *os.File), the writer salvages:
//
//  1. it cuts the file back to the end of the last whole record written;
//  2. it writes the records that did not fit again, one at a time, each
//     in as few bytes as it can: a Block record whose frames do not fit
//     is written as two blocks of half its frames each, and so on down
//     to a plain Frame record, in order, until one does not fit;
//  3. it cuts the file back to the end of the last record that fit.
//
// The file then ends at a record boundary, after every frame that fit in
// the space there was, in position order, each under its CRC: readers see
// a capture that did not end (no StreamEnded), never a torn block. The
// write error stays sticky: the frames after the last one that fit are
// lost, and the capture says so (ds wrap exits 125).

// truncatable is an io.Writer whose output can be cut back: an *os.File.
// Seek(0, io.SeekEnd) gives its size.
type truncatable interface {
	io.Writer
	Truncate(size int64) error
	Seek(offset int64, whence int) (int64, error)
}

// isFull reports whether err says the file system (or the user's quota,
// or the file size limit) has no room for more.
func isFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EFBIG)
}

// cuttable returns the output and its size when the write that failed
// with err, n bytes of it written, can be cut back: err says the file
// system is full and the output is a regular file that can be truncated
// (not a device such as /dev/full, nor a pipe) holding at least n bytes.
func (w *Writer) cuttable(n int64, err error) (truncatable, int64, bool) {
	t, ok := w.w.(truncatable)
	if !ok || !isFull(err) {
		return nil, 0, false
	}
	if st, ok := w.w.(interface{ Stat() (fs.FileInfo, error) }); ok {
		if fi, serr := st.Stat(); serr != nil || !fi.Mode().IsRegular() {
			return nil, 0, false
		}
	}
	end, serr := t.Seek(0, io.SeekEnd)
	if serr != nil || end < n {
		return nil, 0, false
	}
	return t, end, true
}

// salvageHeader handles the failed write of a streamed segment header
// (Writer.streamHeader), of which n bytes reached w.w with err: on a full
// file system, a regular file is cut back to where the header began, the
// end of the last whole record before it. It returns the error the writer
// keeps, as salvage does.
func (w *Writer) salvageHeader(n int64, err error) error {
	t, end, ok := w.cuttable(n, err)
	if !ok {
		return err
	}
	size := end - n
	if terr := t.Truncate(size); terr != nil {
		return fmt.Errorf("%w (and cutting the torn header off failed: %v)", err, terr)
	}
	if _, serr := t.Seek(size, io.SeekStart); serr != nil {
		return fmt.Errorf("%w (and cutting the torn header off failed: %v)", err, serr)
	}
	return fmt.Errorf("%w: the file keeps what fit, %d bytes ending at a record boundary; what came after is lost", err, size)
}

// A salvaged is what [Writer.salvage] kept of the buffer whose write
// failed.
type salvaged struct {
	size int64           // the file's size once cut back
	any  bool            // a frame is in the buffer's records that stay
	last frames.Position // the position of the last of them
}

// salvage handles the failed write of w.buf, of which the first n bytes
// reached w.w with err. It returns the error the writer keeps: err itself
// when nothing can be salvaged (the output is not a file, or err is not a
// full file system), else err with what the file now holds.
func (w *Writer) salvage(n int, err error) error {
	t, end, ok := w.cuttable(int64(n), err)
	if !ok {
		return err
	}
	s := salvager{t: t, start: end - int64(n)}
	s.run(w.buf, w.bufSeed, n)
	if s.err != nil {
		return fmt.Errorf("%w (and cutting the torn record off failed: %v)", err, s.err)
	}
	if !s.kept.any {
		return fmt.Errorf("%w: the file keeps what fit, %d bytes ending at a record boundary; what came after is lost", err, s.kept.size)
	}
	return fmt.Errorf("%w: the file keeps what fit, %d bytes ending at a record boundary after position %d; what came after is lost", err, s.kept.size, s.kept.last)
}

// A salvager rewrites, one record at a time, the records of a buffer
// that did not fit, to a file cut back to a record boundary.
type salvager struct {
	t     truncatable
	start int64 // the file offset of the buffer's first byte
	off   int64 // the file's size: the end of the last whole record
	kept  salvaged
	err   error // a Truncate or Seek that failed: stop
	full  bool  // a record did not fit: stop
	cut0  bool  // the file was cut back to the first record not wholly written
	tmp   []byte
}

// run walks buf, whose first n bytes were written at s.start: records of
// the segment whose CRC seed is seed, or segment headers (which set the
// seed of the records after them). The records wholly within n stay; the
// file is cut after them, and the rest are put again.
func (s *salvager) run(buf []byte, seed uint32, n int) {
	pos := 0
	for pos < len(buf) && !s.full && s.err == nil {
		var size int
		var rec wireformat.Record
		header := bytes.HasPrefix(buf[pos:], []byte(wireformat.Magic))
		var err error
		if header {
			var h wireformat.Header
			h, size, err = wireformat.ParseHeader(buf[pos:])
			seed = h.Seed()
		} else {
			rec, size, err = wireformat.ParseRecord(buf[pos:], seed, wireformat.MaxRecordSize)
		}
		if err != nil {
			break // the writer's own buffer does not parse: write nothing more
		}
		if pos+size <= n {
			if !header {
				s.seen(rec) // on disk whole
			}
			pos += size
			continue
		}
		if !s.cut0 {
			s.cut0 = true
			s.cut(s.start + int64(pos)) // off with the torn record
		}
		if header || rec.Type != wireformat.TypeBlock {
			s.put(buf[pos : pos+size])
		} else {
			s.putBlock(buf[pos:pos+size], rec.Body, seed)
		}
		pos += size
	}
	if !s.cut0 {
		s.cut(s.start + int64(min(pos, n)))
	}
}

// cut truncates the file to size.
func (s *salvager) cut(size int64) {
	if s.err != nil {
		return
	}
	if err := s.t.Truncate(size); err != nil {
		s.err = err
		return
	}
	if _, err := s.t.Seek(size, io.SeekStart); err != nil {
		s.err = err
		return
	}
	s.off = size
	s.kept.size = size
}

// put writes one record; if it does not fit, the file is cut back to
// where it began and put reports false.
func (s *salvager) put(rec []byte) bool {
	if s.full || s.err != nil {
		return false
	}
	if _, err := s.t.Write(rec); err != nil {
		s.full = true
		s.cut(s.off)
		return false
	}
	s.off += int64(len(rec))
	s.kept.size = s.off
	return true
}

// putBlock writes the Block record raw (body: its stored body) of the
// segment seeded seed; if it does not fit, its frames are written as two
// blocks of half of them, recursively, down to plain Frame records.
func (s *salvager) putBlock(raw, body []byte, seed uint32) {
	fs, err := blockFrames(body)
	if err != nil { // keep the block whole or not at all
		s.put(raw)
		return
	}
	if s.put(raw) {
		s.count(fs)
		return
	}
	// The block did not fit: its frames in smaller pieces. What follows
	// it is put only if all of them fit.
	s.full = false
	if !s.putFrames(fs, seed) {
		s.full = true
	}
}

// putFrames writes fs in order as compactly as pieces allow, and reports
// whether all of them fit.
func (s *salvager) putFrames(fs []frames.Frame, seed uint32) bool {
	if len(fs) == 0 || s.err != nil {
		return s.err == nil
	}
	if len(fs) == 1 {
		rec, err := wireformat.AppendFrame(s.tmp[:0], seed, fs[0])
		s.tmp = rec
		if err != nil || !s.put(rec) {
			s.full = true
			return false
		}
		s.count(fs)
		return true
	}
	var content []byte
	next := frames.Position(0)
	for _, f := range fs {
		content = wireformat.AppendInnerFrame(content, f, next)
		next = f.Position + 1
	}
	rec, err := wireformat.AppendBlock(s.tmp[:0], seed, content)
	s.tmp = rec
	if err == nil && s.put(rec) {
		s.count(fs)
		return true
	}
	s.full = false
	half := len(fs) / 2
	return s.putFrames(fs[:half], seed) && s.putFrames(fs[half:], seed)
}

func (s *salvager) count(fs []frames.Frame) {
	s.kept.any, s.kept.last = true, fs[len(fs)-1].Position
}

// seen counts the frames of rec, a record of the buffer on disk whole.
func (s *salvager) seen(rec wireformat.Record) {
	switch rec.Type {
	case wireformat.TypeFrame:
		if f, err := wireformat.ParseFrameBody(rec.Body); err == nil {
			s.kept.any, s.kept.last = true, f.Position
		}
	case wireformat.TypeBlock:
		if fs, err := blockFrames(rec.Body); err == nil && len(fs) > 0 {
			s.count(fs)
		}
	}
}

// blockFrames decodes the frames of a Block record's stored body; it
// returns an error if any inner record is not a frame.
func blockFrames(body []byte) ([]frames.Frame, error) {
	content, err := wireformat.DecodeBlock(nil, body)
	if err != nil {
		return nil, err
	}
	var fs []frames.Frame
	next := frames.Position(0)
	for c := content; len(c) > 0; {
		rec, size, err := wireformat.ParseInner(c)
		if err == nil && rec.Type != wireformat.TypeFrame {
			err = errors.New("not a frame")
		}
		var f frames.Frame
		if err == nil {
			f, err = wireformat.ParseInnerFrameBody(rec.Body, next)
		}
		if err != nil {
			return nil, err
		}
		fs, next, c = append(fs, f), f.Position+1, c[size:]
	}
	return fs, nil
}

package segments

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// Spilling: when an [Assembler] holds more than its memory bound, every
// stream's held frames are sorted by (position, arrival) and written to one
// new temporary file, each stream's frames as one run; a stream then reads
// its runs back in order, merged with what it holds in memory, as the
// positions before them arrive (sort(1)'s external merge, done lazily).
//
// A spill file is unlinked as soon as it is made, so that nothing is left
// behind by a crash; it is closed when its last run is read. Its records
// are private to the process: position u64, arrival u64, payload hash u64,
// channel u32, payload length u32 (all little-endian), payload.

const (
	spillRecordHeader = 32
	spillWriteBuffer  = 64 << 10
	spillReadBuffer   = 16 << 10
	// maxSpillBuffers bounds the runs that keep a read buffer at once;
	// past it the least recently filled one gives its buffer up.
	maxSpillBuffers = 128
	// spillFanIn is how many spill files of one level are merged into one
	// of the next (sort(1)'s merge passes): each frame spilled is
	// rewritten once per level, O(log n) times, and the files open stay
	// few (at most spillFanIn-1 per level).
	spillFanIn = 8
)

type spillFile struct {
	f     *os.File
	runs  int // runs not yet read to their end
	level int // 0: spilled from memory; L+1: merged from files of level L
}

// spillRun is one stream's frames in one spill file: [off, end) is what is
// left after head, the run's lowest frame (its payload at headOff).
type spillRun struct {
	file     *spillFile
	off, end int64
	head     heldFrame // payload not loaded
	headOff  int64
	headLen  int
	buf      []byte // bytes [bufOff, bufOff+len(buf)) of the file
	bufOff   int64
	buffered bool // in spillState.buffered
}

// spillState is an Assembler's spill files and counters.
type spillState struct {
	hashAll  bool // AssemblerOptions.Compare: streams hash from their start
	err      error
	frames   uint64
	bytes    int64
	files    []*spillFile
	buffered []*spillRun // runs holding a read buffer, oldest first
	scratch  []byte      // the payload of the frame popped last
}

// spillAll writes what every stream holds in memory to a new spill file,
// one run per stream. On an error it records it and leaves everything in
// memory.
func (a *Assembler) spillAll() {
	sp := &a.spill
	f, err := os.CreateTemp(a.tempDir, "ds-spill-*")
	if err != nil {
		sp.err = fmt.Errorf("spilling held frames to a temporary file: %w", err)
		return
	}
	_ = os.Remove(f.Name()) // unlinked: the open file lives on
	w := bufio.NewWriterSize(f, spillWriteBuffer)
	type section struct {
		st         *assembly
		start, end int64
	}
	var secs []section
	var off int64
	for _, st := range a.holders {
		hs := st.held
		slices.SortFunc(hs.pending, func(x, y heldFrame) int {
			switch {
			case x.less(&y):
				return -1
			case y.less(&x):
				return 1
			}
			return 0
		})
		start := off
		for i := range hs.pending {
			off += writeSpillRecord(w, &hs.pending[i])
		}
		secs = append(secs, section{st, start, off})
	}
	if err := w.Flush(); err != nil {
		f.Close()
		sp.err = fmt.Errorf("spilling held frames to a temporary file: %w", err)
		return
	}
	file := &spillFile{f: f}
	sp.files = append(sp.files, file)
	for _, sec := range secs {
		st := sec.st
		hs := st.held
		sp.frames += uint64(len(hs.pending))
		for i := range hs.pending {
			sp.bytes += int64(len(hs.pending[i].f.Payload))
		}
		if sec.end > sec.start {
			r := &spillRun{file: file, off: sec.start, end: sec.end}
			if sp.loadHead(r) {
				file.runs++
				hs.pushRun(r)
			}
		}
		if cap(hs.pending) >= 64 {
			clear(hs.pending) // keep the capacity: the stream is likely to hold again
			hs.pending = hs.pending[:0]
			clear(hs.hashes)
		} else {
			hs.pending, hs.hashes = nil, nil // many small holders: keep them small
		}
	}
	for len(a.holders) > 0 {
		st := a.holders[len(a.holders)-1]
		a.account(st, -st.held.bytes)
	}
	if file.runs == 0 {
		sp.closeFile(file)
	}
	a.mergeLevels()
}

// mergeLevels merges the spill files of a level into one of the next
// while a level has spillFanIn of them.
func (a *Assembler) mergeLevels() {
	sp := &a.spill
	for level := 0; sp.err == nil; level++ {
		var sel []*spillFile
		higher := false
		for _, f := range sp.files {
			switch {
			case f.level == level:
				sel = append(sel, f)
			case f.level > level:
				higher = true
			}
		}
		if len(sel) >= spillFanIn {
			a.compactSpill(sel, level+1)
		} else if !higher {
			return
		}
	}
}

// compactSpill merges every stream's runs in the files sel into one run
// each, in one new file of the given level. On an error it records it;
// the runs already merged are then lost with that error.
func (a *Assembler) compactSpill(sel []*spillFile, level int) {
	sp := &a.spill
	f, err := os.CreateTemp(a.tempDir, "ds-spill-*")
	if err != nil {
		sp.err = fmt.Errorf("merging spill files: %w", err)
		return
	}
	_ = os.Remove(f.Name())
	w := bufio.NewWriterSize(f, spillWriteBuffer)
	file := &spillFile{f: f, level: level}
	type merged struct {
		hs         *holding
		start, end int64
	}
	var out []merged
	var off int64
	for _, st := range a.order {
		hs := st.held
		if hs == nil || len(hs.runs) == 0 {
			continue
		}
		// The stream's runs in sel, in a heap of their own; the others
		// stay.
		part := &holding{}
		keep := hs.runs[:0]
		for _, r := range hs.runs {
			if slices.Contains(sel, r.file) {
				part.pushRun(r)
			} else {
				keep = append(keep, r)
			}
		}
		clear(hs.runs[len(keep):])
		hs.runs = keep
		for i := len(hs.runs)/2 - 1; i >= 0; i-- {
			hs.runDown(i)
		}
		if len(part.runs) == 0 {
			continue
		}
		start := off
		for len(part.runs) > 0 {
			x, ok := sp.pop(part)
			if !ok {
				f.Close()
				return
			}
			off += writeSpillRecord(w, &x)
		}
		out = append(out, merged{hs, start, off})
	}
	if err := w.Flush(); err != nil {
		f.Close()
		sp.err = fmt.Errorf("merging spill files: %w", err)
		return
	}
	sp.files = append(sp.files, file)
	for _, m := range out {
		r := &spillRun{file: file, off: m.start, end: m.end}
		if sp.loadHead(r) {
			file.runs++
			m.hs.pushRun(r)
		}
	}
	if file.runs == 0 {
		sp.closeFile(file)
	}
}

// writeSpillRecord writes x as a spill record and returns its size. A
// write error is kept by w, for its Flush.
func writeSpillRecord(w *bufio.Writer, x *heldFrame) int64 {
	var hdr [spillRecordHeader]byte
	binary.LittleEndian.PutUint64(hdr[0:], uint64(x.f.Position))
	binary.LittleEndian.PutUint64(hdr[8:], x.seq)
	binary.LittleEndian.PutUint64(hdr[16:], x.hash)
	binary.LittleEndian.PutUint32(hdr[24:], uint32(x.f.Channel))
	binary.LittleEndian.PutUint32(hdr[28:], uint32(len(x.f.Payload)))
	w.Write(hdr[:])
	w.Write(x.f.Payload)
	return spillRecordHeader + int64(len(x.f.Payload))
}

// read returns n bytes of r's file at off, valid until the next read.
func (sp *spillState) read(r *spillRun, off int64, n int) ([]byte, error) {
	if off >= r.bufOff && off+int64(n) <= r.bufOff+int64(len(r.buf)) {
		return r.buf[off-r.bufOff : off-r.bufOff+int64(n)], nil
	}
	if n > spillReadBuffer {
		b := make([]byte, n)
		if k, err := r.file.f.ReadAt(b, off); k < n {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		return b, nil
	}
	if !r.buffered {
		if len(sp.buffered) >= maxSpillBuffers {
			old := sp.buffered[0]
			sp.buffered = sp.buffered[1:]
			old.buf, old.buffered = nil, false
		}
		sp.buffered = append(sp.buffered, r)
		r.buffered = true
	}
	if r.buf == nil {
		r.buf = make([]byte, spillReadBuffer)
	}
	m := int(min(int64(spillReadBuffer), r.end-off))
	r.buf = r.buf[:cap(r.buf)][:m]
	r.bufOff = off
	if k, err := r.file.f.ReadAt(r.buf, off); k < m {
		r.buf = r.buf[:0]
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return r.buf[:n], nil
}

// loadHead reads the header of the run's next record into r.head; false
// (with sp.err set) on a read error.
func (sp *spillState) loadHead(r *spillRun) bool {
	b, err := sp.read(r, r.off, spillRecordHeader)
	if err != nil {
		sp.fail(err)
		return false
	}
	r.head = heldFrame{
		f: frames.Frame{
			Position: frames.Position(binary.LittleEndian.Uint64(b[0:])),
			Channel:  frames.ChannelID(binary.LittleEndian.Uint32(b[24:])),
		},
		seq:  binary.LittleEndian.Uint64(b[8:]),
		hash: binary.LittleEndian.Uint64(b[16:]),
	}
	r.headLen = int(binary.LittleEndian.Uint32(b[28:]))
	r.headOff = r.off + spillRecordHeader
	r.off = r.headOff + int64(r.headLen)
	if r.off > r.end {
		sp.fail(fmt.Errorf("record past the end of its run at offset %d", r.headOff))
		return false
	}
	return true
}

func (sp *spillState) fail(err error) {
	if sp.err == nil {
		sp.err = fmt.Errorf("reading held frames back from a spill file: %w", err)
	}
}

// pop removes the lowest run's head from hs and returns it, its payload
// in sp.scratch (valid until the next pop); false on a read error, which
// abandons that run (sp.err says so).
func (sp *spillState) pop(hs *holding) (heldFrame, bool) {
	r := hs.runs[0]
	x := r.head
	b, err := sp.read(r, r.headOff, r.headLen)
	if err != nil {
		sp.fail(err)
		sp.dropRun(hs)
		return heldFrame{}, false
	}
	sp.scratch = append(sp.scratch[:0], b...)
	x.f.Payload = sp.scratch
	if r.off < r.end && sp.loadHead(r) {
		hs.runDown(0)
	} else {
		sp.dropRun(hs)
	}
	return x, true
}

// dropRun removes hs's lowest run, closing its file after its last run.
func (sp *spillState) dropRun(hs *holding) {
	r := hs.runs[0]
	n := len(hs.runs) - 1
	hs.runs[0] = hs.runs[n]
	hs.runs[n] = nil
	hs.runs = hs.runs[:n]
	if n > 0 {
		hs.runDown(0)
	}
	if r.buffered {
		if i := slices.Index(sp.buffered, r); i >= 0 {
			sp.buffered = slices.Delete(sp.buffered, i, i+1)
		}
	}
	r.buf = nil
	r.file.runs--
	if r.file.runs == 0 {
		sp.closeFile(r.file)
	}
}

func (sp *spillState) closeFile(f *spillFile) {
	f.f.Close()
	if i := slices.Index(sp.files, f); i >= 0 {
		sp.files = slices.Delete(sp.files, i, i+1)
	}
}

// close closes every spill file still open.
func (sp *spillState) close() error {
	var first error
	for _, f := range sp.files {
		if err := f.f.Close(); err != nil && first == nil {
			first = err
		}
	}
	sp.files, sp.buffered = nil, nil
	return first
}

// The min-heap of a stream's runs by their heads.

func (hs *holding) pushRun(r *spillRun) {
	hs.runs = append(hs.runs, r)
	for i := len(hs.runs) - 1; i > 0; {
		p := (i - 1) / 2
		if !hs.runs[i].head.less(&hs.runs[p].head) {
			break
		}
		hs.runs[p], hs.runs[i] = hs.runs[i], hs.runs[p]
		i = p
	}
}

func (hs *holding) runDown(i int) {
	h := hs.runs
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		if r := l + 1; r < len(h) && h[r].head.less(&h[l].head) {
			l = r
		}
		if !h[l].head.less(&h[i].head) {
			return
		}
		h[i], h[l] = h[l], h[i]
		i = l
	}
}

package proc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// pipeBufferSize is the capacity asked of the kernel for the child's output
// pipes (F_SETPIPE_SZ; the default is 64 KiB). A bigger pipe lets the child
// run ahead of ds between reads. Failure to enlarge is ignored.
const pipeBufferSize = 1 << 20

// finalDrainReads bounds the non-blocking read rounds made when the drain
// stops early, so that a grandchild writing without pause cannot keep Run
// from returning.
const finalDrainReads = 16

// noWakePoll bounds each poll of a reader that could not create its wake-up
// eventfd: it then notices the child's exit by looking every noWakePoll.
const noWakePoll = 10 * time.Millisecond

// ChannelStats counts what one channel submitted to the [Producer].
type ChannelStats struct {
	// ID is the channel id the producer handed out; 0 if never registered
	// (stderr in PTY mode).
	ID frames.ChannelID
	// Frames counts accepted submissions.
	Frames int64
	// Bytes counts the payload bytes of accepted submissions.
	Bytes int64
	// DroppedFrames counts submissions the producer refused (SubmitBytes
	// returned false: its queue was full).
	DroppedFrames int64
	// DroppedBytes counts the payload bytes of refused submissions.
	DroppedBytes int64
	// PassThroughErr is the first error returned by the pass-through writer
	// (Options.Stdout or Options.Stderr). After it, pass-through of this
	// channel stops. If it is EPIPE (ds's own output is a pipe whose reader
	// went away: ds wrap … | head), capture of the channel stops too and
	// its pipe is closed, so the child gets SIGPIPE as it would without ds;
	// after any other error capture goes on.
	PassThroughErr error
}

func (s *ChannelStats) submit(p Producer, payload []byte) {
	n := int64(len(payload))
	if p.SubmitBytes(s.ID, payload) {
		s.Frames++
		s.Bytes += n
		return
	}
	s.DroppedFrames++
	s.DroppedBytes += n
}

// framer cuts a byte stream into text frames (ARCHITECTURE.md §4): a frame ends at
// the last newline that fits in MaxFrameSize bytes, so one read of many lines
// becomes few frames; bytes with no newline wait in pending (never more than
// maxFrame bytes) until a newline, the idle flush, EOF, or until pending plus
// new bytes reach maxFrame.
type framer struct {
	p        Producer
	stats    *ChannelStats
	maxFrame int
	alloc    func(n int) []byte // Options.Alloc; nil means make
	pending  []byte             // a partial line: no '\n', len < maxFrame (but see held)
	gen      uint64             // counts the times pending went from empty to non-empty
	// hold makes readFrom keep complete lines (pending[:held]) in the
	// buffer, while it is less than half full, instead of cutting a frame
	// at every read: the reader cuts them once they have waited
	// Options.Coalesce (cutHeld). Fewer, larger frames compress better
	// (frame headers between lines break zstd's matches) and cost less.
	hold    bool
	held    int
	heldGen uint64 // counts the times held went from 0 to more
}

func newFramer(p Producer, stats *ChannelStats, maxFrame int) *framer {
	return &framer{p: p, stats: stats, maxFrame: maxFrame}
}

// write frames data. data is not retained.
func (f *framer) write(data []byte) {
	for len(data) > 0 {
		room := f.maxFrame - len(f.pending) // > 0 by the invariant
		k := min(room, len(data))
		if j := bytes.LastIndexByte(data[:k], '\n'); j >= 0 {
			f.emit(data[:j+1])
			data = data[j+1:]
			continue
		}
		if k == room {
			// A full frame without a newline: a long line is cut at maxFrame.
			f.emit(data[:k])
			data = data[k:]
			continue
		}
		if f.pending == nil {
			f.pending = make([]byte, 0, f.maxFrame)
		}
		if len(f.pending) == 0 {
			f.gen++
		}
		f.pending = append(f.pending, data...)
		return
	}
}

// emit submits pending+b as one frame in a fresh slice (SubmitBytes takes
// ownership) and empties pending.
func (f *framer) emit(b []byte) {
	var payload []byte
	switch {
	case f.alloc != nil:
		payload = append(append(f.alloc(len(f.pending) + len(b))[:0], f.pending...), b...)
	case len(b) == 0:
		payload = bytes.Clone(f.pending)
	default:
		// A full slice expression forces append to allocate; growslice does
		// not zero the bytes it is about to copy over.
		payload = append(f.pending[:len(f.pending):len(f.pending)], b...)
	}
	f.pending = f.pending[:0]
	f.held = 0
	f.stats.submit(f.p, payload)
}

// readFrom makes one read(2) of fd straight into the buffer that holds the
// pending partial line, at most up to maxFrame bytes in all, and frames what
// it got by the same rule as write. pass is called with the new bytes
// before anything of them is submitted (pass-through; the other output's
// partial line). A frame of at least half the buffer is submitted as the
// buffer itself, without a copy (the rest of the read starts the next
// buffer); a smaller one is copied out into a buffer of its size, so a
// short line never pins a large buffer. It returns read(2)'s result.
func (f *framer) readFrom(fd int, pass func(b []byte)) (int, error) {
	if cap(f.pending) < f.maxFrame {
		f.pending = append(f.newBuffer(), f.pending...)
	}
	old := len(f.pending)
	n, err := unix.Read(fd, f.pending[old:f.maxFrame])
	if n <= 0 {
		return n, err
	}
	data := f.pending[old : old+n]
	pass(data)
	f.pending = f.pending[:old+n]
	k := f.held // the end of the last complete line: where a frame may end
	if j := bytes.LastIndexByte(data, '\n'); j >= 0 {
		k = old + j + 1
	}
	switch {
	case len(f.pending) == f.maxFrame && k == 0:
		f.cut(f.maxFrame) // a long line is cut at maxFrame
		return n, err
	case k > f.held && f.hold && k < f.maxFrame/2 && len(f.pending) < f.maxFrame:
		if f.held == 0 {
			f.heldGen++
		}
		f.held = k
	case k > 0 && (k > f.held || len(f.pending) == f.maxFrame):
		f.cut(k)
		return n, err
	}
	if old == 0 {
		f.gen++
	}
	return n, err
}

// cutHeld submits the complete lines readFrom holds, if any; the partial
// line after them stays.
func (f *framer) cutHeld() {
	if f.held > 0 {
		f.cut(f.held)
	}
}

// newBuffer returns an empty buffer for maxFrame bytes.
func (f *framer) newBuffer() []byte {
	if f.alloc != nil {
		return f.alloc(f.maxFrame)[:0]
	}
	return make([]byte, 0, f.maxFrame)
}

// cut submits pending[:k] as a frame and keeps pending[k:] as the partial
// line (see readFrom).
func (f *framer) cut(k int) {
	buf := f.pending
	var payload []byte
	if k >= cap(buf)/2 {
		payload = buf[:k]
		f.pending = append(f.newBuffer(), buf[k:]...)
	} else {
		if f.alloc != nil {
			payload = append(f.alloc(k)[:0], buf[:k]...)
		} else {
			payload = bytes.Clone(buf[:k])
		}
		f.pending = buf[:copy(buf, buf[k:])]
	}
	f.held = 0
	if len(f.pending) > 0 {
		f.gen++
	}
	f.stats.submit(f.p, payload)
}

// flush submits a pending partial line, if any.
func (f *framer) flush() {
	if len(f.pending) > 0 {
		f.emit(nil)
	}
}

// capture is one output of the child (a pipe, or the PTY master): the file
// ds reads, its pass-through writer and the framer of its channel. All the
// captures of a child are served by one [reader].
type capture struct {
	name  string   // "stdout" or "stderr", for the drain record
	f     *os.File // closed by finishCapture (or by the reader on EPIPE)
	w     io.Writer
	fr    *framer
	stats ChannelStats
	r     *reader // the reader serving this capture; nil until startReader

	fd    int       // f's descriptor while the reader polls it; -1 at EOF or once closed
	since time.Time // when the current partial line began (idle flush)
	gen   uint64    // fr.gen at since
	// heldSince is when fr began to hold complete lines (Coalesce).
	heldSince time.Time
	heldGen   uint64      // fr.heldGen at heldSince
	gone      func() bool // Options.StdoutGone, for stdout only
	// broken: the pass-through writer failed with EPIPE; reading ends and
	// the file is closed so that the child sees the broken pipe too.
	broken bool
}

func newCapture(name string, f *os.File, w io.Writer, p Producer, ch frames.ChannelID, o *Options) *capture {
	c := &capture{name: name, f: f, w: w, fd: -1}
	c.stats.ID = ch
	c.fr = newFramer(p, &c.stats, o.MaxFrameSize)
	c.fr.alloc = o.Alloc
	c.fr.hold = o.Coalesce > 0
	if name == "stdout" {
		c.gone = o.StdoutGone
	}
	return c
}

// Drain stop reasons: the "reason" field of a drain_timeout record, and
// [Result].DrainReason.
const (
	// DrainReasonIdle: after the child exited, its outputs stayed open but
	// carried nothing for Options.DrainIdle.
	DrainReasonIdle = "idle"
	// DrainReasonTimeout: the outputs were still open Options.DrainTimeout
	// after the child exited (output kept coming, or DrainIdle is off).
	DrainReasonTimeout = "timeout"
)

// reader is the one capture goroutine of a child. It waits on all the
// child's outputs at once with poll(2) and reads them in the order they
// become readable; outputs readable in the same poll are read in the order
// the child wrote them, as an inotify watch on each pipe tells (stdout
// first where it cannot tell), so that pass-through and capture keep the
// order of the child's writes.
//
// Idle flush costs no timer and no extra syscall: the poll timeout is the
// time left until the pending partial line is IdleFlush old, and the clock
// is read once per poll, only while a partial line is pending or after the
// child's exit. After the exit the same poll timeout enforces DrainIdle and
// DrainTimeout (see the package doc, Draining).
type reader struct {
	caps         []*capture    // in read order: stdout, then stderr
	hold         time.Duration // Options.Coalesce; <= 0: none
	idle         time.Duration
	drainIdle    time.Duration // <= 0: wait for EOF or drainTimeout
	drainTimeout time.Duration
	wakeFD       int // eventfd written by childExited; -1 if none
	// notifyFD is an inotify instance watching every output for IN_MODIFY
	// (-1 if none): its events come in the order of the child's writes
	// across the pipes, which poll(2) cannot tell (see writeOrder).
	notifyFD int
	wds      [2]int32 // watch descriptor of each capture, by caps index
	// gate, until closed, holds back the first data read: the reader may
	// start before the child, whose started record must come first.
	gate  chan struct{}
	evbuf []byte
	order [2]*capture
	// runs is the sequence of captures written to, as writeOrder read it
	// from the events, with consecutive writes to one capture as one run.
	runs    []int
	scratch [2][]byte // interleave's reads
	gotLast [2]bool   // interleave got data of each output in the round before
	exited  atomic.Bool
	done    chan struct{}
	pfds    [3]unix.PollFd
	ready   [2]*capture

	// Set by run before done is closed.
	reason string        // "" (every output reached EOF), DrainReasonIdle or DrainReasonTimeout
	waited time.Duration // from noticing the exit to the stop; set when reason != ""
}

// startReader starts the reader goroutine of caps (in read order).
func startReader(caps []*capture, o *Options) *reader {
	r := &reader{
		caps: caps, hold: o.Coalesce, idle: o.IdleFlush, drainIdle: o.DrainIdle, drainTimeout: o.DrainTimeout,
		wakeFD: -1, notifyFD: -1, done: make(chan struct{}),
		gate: make(chan struct{}),
	}
	if fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err == nil {
		r.wakeFD = fd
	}
	for _, c := range caps {
		c.r = r
		_ = withFD(c.f, func(fd int) error {
			c.fd = fd
			return unix.SetNonblock(fd, true)
		})
	}
	if len(caps) == 2 {
		r.watchWrites()
	}
	go r.run()
	return r
}

// watchWrites sets up the inotify instance that orders writes across the
// two pipes. Every write(2) to a pipe queues an IN_MODIFY event on an
// inotify watch of it (vfs_write calls fsnotify_modify) before the write
// returns to the child, so when both pipes hold data, the one whose event
// comes first in the one inotify queue was written first. Best effort: with
// no /proc, no inotify instance left (fs.inotify.max_user_instances) or a
// kernel that does not notify on pipes, the reader falls back to stdout
// first, as poll alone gives.
func (r *reader) watchWrites() {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return
	}
	for i, c := range r.caps {
		wd, err := unix.InotifyAddWatch(fd, "/proc/self/fd/"+strconv.Itoa(c.fd), unix.IN_MODIFY)
		if err != nil || c.fd < 0 {
			unix.Close(fd)
			return
		}
		r.wds[i] = int32(wd)
	}
	r.notifyFD = fd
	r.evbuf = make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
}

// writeOrder returns the captures in the order to read them: by the last
// write event of each since the events were last read. The last, not the
// first: a reader woken by a write can read the data before the writer
// queues its event (pipe_write wakes readers before vfs_write notifies),
// so the oldest event of a pipe may be stale, for data already read; its
// newest event is always for data still unread. The order is exact while
// ds keeps up with the child (at most one unread write per pipe); a
// reader that fell further behind cannot tell more. Captures with no event
// (or all, when the queue overflowed or there is no inotify) follow in
// caps order, stdout first. The result is valid until the next call.
func (r *reader) writeOrder() []*capture {
	r.runs = r.runs[:0]
	r.readEvents()
	return r.writeOrderOf(r.runs)
}

// readEvents reads the write events queued so far and appends their runs
// to r.runs (consecutive writes to one capture are one run). A queue
// overflow empties r.runs: the order is then unknown.
func (r *reader) readEvents() {
	if r.notifyFD < 0 {
		return
	}
	overflow := false
	for {
		n, err := unix.Read(r.notifyFD, r.evbuf)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			break
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			// struct inotify_event: wd, mask, cookie, len, name[len].
			b := r.evbuf[off:]
			wd := int32(binary.NativeEndian.Uint32(b[0:]))
			mask := binary.NativeEndian.Uint32(b[4:])
			off += unix.SizeofInotifyEvent + int(binary.NativeEndian.Uint32(b[12:]))
			if mask&unix.IN_Q_OVERFLOW != 0 {
				overflow = true
			}
			for i, w := range r.wds {
				if wd == w && mask&unix.IN_MODIFY != 0 && (len(r.runs) == 0 || r.runs[len(r.runs)-1] != i) {
					r.runs = append(r.runs, i)
				}
			}
		}
	}
	if overflow {
		r.runs = r.runs[:0]
	}
}

// interleaveMax bounds what interleave reads of each output, in bytes.
const interleaveMax = 64 << 10

// interleave handles the case the write order alone cannot: ds has fallen
// more than one write behind, and the events say the child wrote to both
// outputs in turn several times (runs like stderr, stdout, stderr: a
// shell's echo builtins, microseconds apart). Reading each pipe whole
// would give one output's writes together. When each run's write is one
// line (the lines each output holds are as many as its runs; the first run
// may be a stale event, for data read before), the lines are handed on in
// the order of the runs, which is the order the child wrote them.
// Otherwise everything read is handed on in write order (see writeOrder).
// It reads both outputs once and reports whether it got data; an output
// that ended is left for readOnce to see.
func (r *reader) interleave() bool {
	var lines [2][][]byte
	var ended [2]bool
	got := false
	prev := r.gotLast
	r.gotLast = [2]bool{}
	for i, c := range r.caps {
		if cap(r.scratch[i]) == 0 {
			r.scratch[i] = make([]byte, interleaveMax)
		}
		n, err := unix.Read(c.fd, r.scratch[i][:interleaveMax])
		if n <= 0 {
			// 0 is EOF; EAGAIN or EINTR, nothing yet; any other error
			// ends the output too (as in readOnce).
			ended[i] = err != unix.EAGAIN && err != unix.EINTR
			continue
		}
		got = true
		r.gotLast[i] = true
		for b := r.scratch[i][:n]; len(b) > 0; {
			j := bytes.IndexByte(b, '\n') + 1
			if j == 0 {
				j = len(b)
			}
			lines[i] = append(lines[i], b[:j])
			b = b[j:]
		}
	}
	// The events of every write whose data was just read are queued now,
	// but for the very last write, whose writer may not have queued its
	// event yet.
	r.readEvents()
	runs := r.runs
	var count [2]int
	for _, i := range runs {
		count[i]++
	}
	if len(runs) > 0 {
		// An event for data read in the round before can only be first.
		if first := runs[0]; prev[first] && len(lines[first]) == count[first]-1 {
			runs, count[first] = runs[1:], count[first]-1
		}
	}
	for i := range 2 {
		if len(lines[i]) == count[i]+1 && len(lines[1-i]) == count[1-i] {
			runs = append(runs, i) // the last write, its event not yet queued
			count[i]++
		}
	}
	for i := range 2 {
		// One write fewer than lines, and the last line is a progress bar
		// (it holds a CR): its newline likely came in a write of its own,
		// after a write to the other output (printf '\rprogress 3/3';
		// echo FAIL >&2; echo). Split the line before its newline.
		if k := len(lines[i]); k > 0 && k == count[i]-1 {
			if l := lines[i][k-1]; len(l) > 1 && l[len(l)-1] == '\n' && bytes.IndexByte(l, '\r') >= 0 {
				lines[i] = append(lines[i][:k-1], l[:len(l)-1], l[len(l)-1:])
			}
		}
	}
	if len(lines[0]) == count[0] && len(lines[1]) == count[1] {
		var next [2]int
		for _, i := range runs {
			r.handOn(r.caps[i], lines[i][next[i]])
			next[i]++
		}
	} else {
		for _, c := range r.writeOrderOf(runs) {
			i := 0
			if c == r.caps[1] {
				i = 1
			}
			if len(lines[i]) > 0 {
				r.handOn(c, r.scratch[i][:sum(lines[i])]) // all it read, whole
			}
		}
	}
	for i, c := range r.caps {
		switch {
		case c.broken && c.fd >= 0:
			// As in readOnce: the child's next write gets SIGPIPE.
			c.fr.flush()
			c.f.Close()
			c.fd = -1
		case ended[i] && c.fd >= 0:
			c.fr.flush()
			c.fd = -1
		}
	}
	return got
}

// sum returns the total length of bs.
func sum(bs [][]byte) int {
	n := 0
	for _, b := range bs {
		n += len(b)
	}
	return n
}

// bothRuns reports whether r.runs holds writes to both outputs.
func (r *reader) bothRuns() bool {
	for _, i := range r.runs {
		if i != r.runs[0] {
			return true
		}
	}
	return false
}

// writeOrderOf orders the captures by the last run of each in runs (see
// writeOrder): a capture with no run after the ones with, stdout first
// where runs say nothing. The result is valid until the next call.
func (r *reader) writeOrderOf(runs []int) []*capture {
	if len(r.caps) < 2 {
		return r.caps
	}
	last := [2]int{-1, -1}
	for k, i := range runs {
		last[i] = k
	}
	r.order = [2]*capture{r.caps[0], r.caps[1]}
	if last[1] >= 0 && (last[0] < 0 || last[1] < last[0]) {
		r.order = [2]*capture{r.caps[1], r.caps[0]}
	}
	return r.order[:]
}

// small reports whether both outputs together hold less than
// interleaveMax bytes (FIONREAD): little enough to read through
// interleave, which orders the writes line by line, instead of the
// zero-copy path, which a child writing fast needs.
func (r *reader) small() bool {
	total := 0
	for _, c := range r.caps {
		k, err := unix.IoctlGetInt(c.fd, unix.TIOCINQ)
		if err != nil {
			return false
		}
		total += k
	}
	return total < interleaveMax
}

// handOn passes b, read from c, through and frames it (the copying path:
// interleave's lines are short). After a broken pass-through (EPIPE) what
// was read is still framed; interleave closes the output after.
func (r *reader) handOn(c *capture, b []byte) {
	r.pass(c, b)
	c.fr.write(b)
}

// openGate lets the reader hand on what it reads: call once the started (or
// spawn_failed) record was submitted.
func (r *reader) openGate() { close(r.gate) }

// childExited tells the reader that the child has exited: from now on it
// stops once the outputs are quiet for DrainIdle, or at DrainTimeout.
func (r *reader) childExited() {
	r.exited.Store(true)
	if r.wakeFD >= 0 {
		var one [8]byte
		binary.NativeEndian.PutUint64(one[:], 1)
		_, _ = unix.Write(r.wakeFD, one[:])
	}
}

// close releases the wake-up eventfd and the inotify instance; call after
// done.
func (r *reader) close() {
	if r.wakeFD >= 0 {
		unix.Close(r.wakeFD)
		r.wakeFD = -1
	}
	if r.notifyFD >= 0 {
		unix.Close(r.notifyFD)
		r.notifyFD = -1
	}
}

// open returns the captures still open when the reader stopped.
func (r *reader) open() []*capture {
	var out []*capture
	for _, c := range r.caps {
		if c.fd >= 0 {
			out = append(out, c)
		}
	}
	return out
}

func (r *reader) run() {
	defer close(r.done)
	defer runtime.KeepAlive(r.caps) // the files own the descriptors polled
	exited := false
	var exitAt, lastData time.Time
	for {
		n := r.pollSet()
		if n == 0 {
			break // every output at EOF
		}
		timeout := time.Duration(-1) // none
		var now time.Time
		if exited || (r.idle > 0 || r.hold > 0) && r.anyPending() {
			now = time.Now()
		}
		for _, c := range r.caps {
			if r.hold > 0 && c.fr.held > 0 {
				if left, ok := due(&c.heldSince, &c.heldGen, c.fr.heldGen, r.hold, now); ok {
					c.fr.cutHeld()
				} else {
					timeout = minTimeout(timeout, left)
				}
			}
			if r.idle > 0 && len(c.fr.pending) > 0 {
				if left, ok := due(&c.since, &c.gen, c.fr.gen, r.idle, now); ok {
					c.fr.flush()
				} else {
					timeout = minTimeout(timeout, left)
				}
			}
		}
		npoll := n
		if exited {
			if left := exitAt.Add(r.drainTimeout).Sub(now); left <= 0 {
				r.reason = DrainReasonTimeout
			} else {
				timeout = minTimeout(timeout, left)
			}
			if r.drainIdle > 0 && r.reason == "" {
				if left := lastData.Add(r.drainIdle).Sub(now); left <= 0 {
					r.reason = DrainReasonIdle
				} else {
					timeout = minTimeout(timeout, left)
				}
			}
			if r.reason != "" {
				r.waited = now.Sub(exitAt)
				r.drainAvailable()
				break
			}
		} else if r.wakeFD >= 0 {
			r.pfds[npoll] = unix.PollFd{Fd: int32(r.wakeFD), Events: unix.POLLIN}
			npoll++
		} else {
			timeout = minTimeout(timeout, noWakePoll)
		}
		if _, err := unix.Poll(r.pfds[:npoll], pollMS(timeout)); err != nil {
			if err != unix.EINTR {
				time.Sleep(time.Millisecond) // ENOMEM: try again, without spinning
			}
			continue
		}
		if !exited && r.exited.Load() {
			exited = true
			exitAt = time.Now()
			lastData = exitAt
		}
		got := false
		order := r.writeOrder()
		if n == 2 && r.notifyFD >= 0 && r.bothRuns() && r.small() {
			got = r.interleave()
			order = nil // both outputs were read this round
		}
		for _, c := range order {
			for i := range n {
				if r.ready[i] == c && r.pfds[i].Revents != 0 && r.readOnce(c) {
					got = true
				}
			}
		}
		if got && exited {
			lastData = time.Now()
		}
	}
	for _, c := range r.caps {
		c.fr.flush()
	}
}

func (r *reader) anyPending() bool {
	for _, c := range r.caps {
		if len(c.fr.pending) > 0 {
			return true
		}
	}
	return false
}

// readOnce makes one read of c and handles it. It reports whether it got
// data.
func (r *reader) readOnce(c *capture) bool {
	n, err := c.fr.readFrom(c.fd, func(b []byte) { r.pass(c, b) })
	if r.gate != nil && err != unix.EAGAIN {
		<-r.gate // EOF or an error: nothing was read to hold back
		r.gate = nil
	}
	if err == nil && n > 0 {
		if c.gone != nil && c.gone() {
			c.broken = true
		}
		if c.broken {
			// The child writes into a pipe nobody reads any more: as
			// without ds, its next write gets SIGPIPE (or EIO on a pty).
			c.fr.flush()
			c.f.Close()
			c.fd = -1
		}
		return true
	}
	if err == unix.EAGAIN || err == unix.EINTR {
		return false
	}
	// 0 is EOF (every writer of the pipe closed); EIO comes from a PTY
	// master whose slave is closed; any other error ends the output too.
	c.fr.flush()
	c.fd = -1
	return false
}

// pass handles b, just read from c, before it is framed: it waits for the
// gate, submits the partial line of the other output, so that capture order
// is read order (at most one output has a partial line at any time), and
// passes b through.
func (r *reader) pass(c *capture, b []byte) {
	if r.gate != nil {
		<-r.gate
		r.gate = nil
	}
	for _, o := range r.caps {
		if o != c {
			o.fr.flush()
		}
	}
	if c.w != nil {
		if _, err := c.w.Write(b); err != nil {
			c.stats.PassThroughErr = err
			c.w = nil
			c.broken = errors.Is(err, syscall.EPIPE)
		}
	}
}

// pollSet fills pfds and ready with the outputs still open and returns
// how many there are.
func (r *reader) pollSet() int {
	n := 0
	for _, c := range r.caps {
		if c.fd >= 0 {
			r.pfds[n] = unix.PollFd{Fd: int32(c.fd), Events: unix.POLLIN}
			r.ready[n] = c
			n++
		}
	}
	return n
}

// drainAvailable reads what is already in the outputs without waiting, in
// at most finalDrainReads poll rounds.
func (r *reader) drainAvailable() {
	for range finalDrainReads {
		n := r.pollSet()
		if n == 0 {
			return
		}
		k, err := unix.Poll(r.pfds[:n], 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil || k == 0 {
			return
		}
		for i := range n {
			if r.pfds[i].Revents != 0 {
				r.readOnce(r.ready[i])
			}
		}
	}
}

// due is one timer of a capture (Coalesce, IdleFlush): it restarts at now
// when the framer's generation gen moved past seen, and reports whether d
// has passed since, or else how much of d is left.
func due(since *time.Time, seen *uint64, gen uint64, d time.Duration, now time.Time) (time.Duration, bool) {
	if gen != *seen {
		*seen, *since = gen, now
	}
	left := since.Add(d).Sub(now)
	return left, left <= 0
}

// minTimeout returns the smaller of two poll timeouts; negative means none.
func minTimeout(a, b time.Duration) time.Duration {
	if a < 0 || b < a {
		return b
	}
	return a
}

// pollMS converts a timeout to poll's milliseconds, rounding up so that a
// deadline is never polled for early and spun on.
func pollMS(d time.Duration) int {
	if d < 0 {
		return -1
	}
	return int((d + time.Millisecond - 1) / time.Millisecond)
}

package proc

import (
	"bytes"
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// readBufferSize is the size of each capture read. Large reads mean few
// syscalls and few frames; see the package doc for the framing rule.
const readBufferSize = 256 << 10

// pipeBufferSize is the capacity asked of the kernel for the child's output
// pipes (F_SETPIPE_SZ; the default is 64 KiB). A bigger pipe lets the child
// run ahead of ds between reads. Failure to enlarge is ignored.
const pipeBufferSize = 1 << 20

// finalDrainReads bounds the non-blocking reads made after a drain timeout,
// so that a grandchild writing without pause cannot keep Run from returning.
const finalDrainReads = 16

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

// framer cuts a byte stream into text frames (DESIGN.md §4): a frame ends at
// the last newline that fits in MaxFrameSize bytes, so one read of many lines
// becomes few frames; bytes with no newline wait in pending (never more than
// maxFrame bytes) until a newline, the idle flush, EOF, or until pending plus
// new bytes reach maxFrame.
type framer struct {
	p        Producer
	stats    *ChannelStats
	maxFrame int
	alloc    func(n int) []byte // Options.Alloc; nil means make
	pending  []byte             // a partial line: no '\n', len < maxFrame
	gen      uint64             // counts the times pending went from empty to non-empty
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
	f.stats.submit(f.p, payload)
}

// flush submits a pending partial line, if any.
func (f *framer) flush() {
	if len(f.pending) > 0 {
		f.emit(nil)
	}
}

// capture reads one output file of the child (a pipe, or the PTY master),
// copies every chunk to the pass-through writer at once, and frames it.
type capture struct {
	name  string // "stdout" or "stderr", for the drain_timeout record
	f     *os.File
	w     io.Writer   // pass-through; nil = quiet
	wmu   *sync.Mutex // serialises writers shared with the other capture; may be nil
	fr    *framer
	stats ChannelStats
	idle  time.Duration
	stop  atomic.Bool
	done  chan struct{}
	// broken: the pass-through writer failed with EPIPE; the capture ends
	// and closes its end so that the child sees the broken pipe too.
	broken bool
}

func newCapture(name string, f *os.File, w io.Writer, wmu *sync.Mutex, p Producer, ch frames.ChannelID, o *Options) *capture {
	c := &capture{name: name, f: f, w: w, wmu: wmu, idle: o.IdleFlush, done: make(chan struct{})}
	c.stats.ID = ch
	c.fr = newFramer(p, &c.stats, o.MaxFrameSize)
	c.fr.alloc = o.Alloc
	return c
}

// run is the capture goroutine. It returns at EOF (every writer of the pipe
// closed), on a read error, or soon after stopReading.
//
// Idle flush: a read deadline is armed for IdleFlush after the moment the
// current partial line began. It is armed at most once per IdleFlush, not at
// every read, so a fast writer pays nothing for it; when it fires, the
// partial line is flushed if it is old enough, else the deadline is moved.
func (c *capture) run() {
	defer close(c.done)
	buf := make([]byte, readBufferSize)
	armed := false      // a read deadline is set
	var since time.Time // when the current partial line began
	var gen uint64      // c.fr.gen at since
	for {
		// Checked after every deadline this goroutine sets, so that the
		// deadline set by stopReading is never overwritten unnoticed.
		if c.stop.Load() {
			break
		}
		n, err := c.f.Read(buf)
		if n > 0 {
			c.consume(buf[:n])
			if c.broken {
				// The child writes into a pipe nobody reads any more: as
				// without ds, its next write gets SIGPIPE (or EIO on a pty).
				c.fr.flush()
				c.f.Close()
				return
			}
			if c.idle > 0 && len(c.fr.pending) > 0 {
				if c.fr.gen != gen {
					gen, since = c.fr.gen, time.Now()
				}
				if !armed {
					_ = c.f.SetReadDeadline(since.Add(c.idle))
					armed = true
				}
			}
		}
		if err == nil {
			continue
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			if c.stop.Load() {
				break
			}
			armed = false
			if len(c.fr.pending) > 0 && c.fr.gen == gen && time.Now().Before(since.Add(c.idle)) {
				_ = c.f.SetReadDeadline(since.Add(c.idle)) // not old enough yet
				armed = true
				continue
			}
			c.fr.flush()
			_ = c.f.SetReadDeadline(time.Time{})
			continue
		}
		// io.EOF; EIO from a PTY master whose slave is closed; os.ErrClosed.
		break
	}
	if c.stop.Load() {
		c.drainAvailable(buf)
	}
	c.fr.flush()
}

// stopReading makes run return soon: used after the drain timeout, when a
// grandchild still holds the write end open. Before returning, run reads
// what is already buffered without waiting.
func (c *capture) stopReading() {
	c.stop.Store(true)
	_ = c.f.SetReadDeadline(time.Now())
}

// drainAvailable reads what is already in the pipe without blocking.
func (c *capture) drainAvailable(buf []byte) {
	_ = c.f.SetReadDeadline(time.Time{})
	rc, err := c.f.SyscallConn()
	if err != nil {
		return
	}
	for range finalDrainReads {
		var n int
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			n, rerr = unix.Read(int(fd), buf)
			return true // never wait
		})
		if err != nil || rerr != nil || n <= 0 {
			return
		}
		c.consume(buf[:n])
	}
}

func (c *capture) consume(b []byte) {
	if c.w != nil {
		if c.wmu != nil {
			c.wmu.Lock()
		}
		_, err := c.w.Write(b)
		if c.wmu != nil {
			c.wmu.Unlock()
		}
		if err != nil {
			c.stats.PassThroughErr = err
			c.w = nil
			c.broken = errors.Is(err, syscall.EPIPE)
		}
	}
	c.fr.write(b)
}

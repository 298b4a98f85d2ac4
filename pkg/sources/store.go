package sources

import (
	"context"
	"hash"
	"hash/crc64"
	"io"
	"sync"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// A store (ds ingest) is read by the views like a capture: a store
// directory named as an input stands for one input per stream of the
// store ([Set.ExpandStore]), each read as the DSS byte stream that
// segments.Store.OpenStream gives, so the time-ordered merge of the views
// interleaves the streams of a store as it does separate files. Such an
// input is named "STORE (NODE#LIFE)" in headers and messages.

// A StreamRef is what the name of a store's stream input stands for: the
// stream ID of the store Store.
type StreamRef struct {
	Store *Store
	ID    frames.StreamID
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
func (r StreamRef) state(maxAge time.Duration) storeState {
	streams, err := r.Store.Streams(maxAge)
	if err != nil {
		return storeState{}
	}
	for _, ss := range streams {
		if ss.Desc.Stream == r.ID {
			return storeState{true, ss.Frames, ss.Bytes, ss.Chunks, ss.Before, ss.Ended}
		}
	}
	return storeState{}
}

// A StreamReader reads the stream of a store input: the byte stream of
// segments.Store.OpenStream, opened at the first Read. Once followed
// ([StreamReader.Follow]), it does not end at the end of that: it waits
// for the stream to change in the store (new chunks, a trim; the store is
// listed every [PollInterval]), opens it again and goes on with the bytes
// that were not read. The store's byte stream of a stream is its chunks
// in order of their first positions, so a chunk that comes after the last
// one read only appends: when what was read is still the start of the new
// byte stream (a CRC-64 of it says so), only the rest is read; otherwise
// (a chunk of lower positions came, or a trim deleted the first ones) the
// whole byte stream is read again, and its frames that were read already
// are copies that the views drop.
//
// Read and Close may be called from different goroutines.
type StreamReader struct {
	// mu serialises Read and Close: a follower's scan may still be in
	// Read (waiting for the store to change, until ctx ends) when its
	// input is closed.
	mu     sync.Mutex
	ref    StreamRef
	ctx    context.Context // set: follow the stream
	rc     io.ReadCloser
	opened bool
	n      int64       // bytes read of the current byte stream
	sum    hash.Hash64 // of those bytes
	seen   storeState  // the stream's state before it was opened
}

// storeTable is the CRC-64 table of StreamReader, built on first use so
// that a ds command that reads no store does not pay for it at start-up.
var storeTable = sync.OnceValue(func() *crc64.Table { return crc64.MakeTable(crc64.ECMA) })

// NewReader returns a reader of the stream's byte stream, from its start;
// the caller closes it.
func (r StreamRef) NewReader() *StreamReader {
	return &StreamReader{ref: r, sum: crc64.New(storeTable())}
}

// Follow makes r wait, at the end of the stream, for more until ctx ends
// (Read then returns ctx.Err()). Call it before Read is called from
// another goroutine.
func (r *StreamReader) Follow(ctx context.Context) { r.ctx = ctx }

// Read implements io.Reader. It ends with io.EOF at the end of the
// stream, unless followed; an error of the store is returned as it is.
func (r *StreamReader) Read(p []byte) (int, error) {
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
func (r *StreamReader) open() error {
	r.seen = r.ref.state(PollInterval / 2)
	rc, err := r.ref.Store.st.OpenStream(r.ref.ID)
	if err != nil {
		return err
	}
	r.rc, r.opened = rc, true
	return nil
}

// wait polls the store until the stream changes, and opens it again
// after what was read (or from its start: see StreamReader).
func (r *StreamReader) wait() error {
	t := time.NewTicker(PollInterval)
	defer t.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return r.ctx.Err()
		case <-t.C:
		}
		st := r.ref.state(PollInterval / 2)
		if !st.found || st == r.seen {
			continue
		}
		rc, err := r.ref.Store.st.OpenStream(r.ref.ID)
		if err != nil {
			return err
		}
		prefix := crc64.New(storeTable())
		if _, err := io.CopyN(prefix, rc, r.n); err == nil && prefix.Sum64() == r.sum.Sum64() {
			r.rc, r.seen = rc, st
			return nil
		}
		rc.Close()
		if rc, err = r.ref.Store.st.OpenStream(r.ref.ID); err != nil {
			return err
		}
		r.rc, r.seen, r.n = rc, st, 0
		r.sum.Reset()
		return nil
	}
}

// ReadingFile reports the chunk file being read, and where in it the next
// byte is, as the store's reader says ([segments.FileInput]): a reader of
// the stream then decodes a large segment header from the file a piece at
// a time.
func (r *StreamReader) ReadingFile() (io.ReaderAt, int64, int64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if fi, ok := r.rc.(segments.FileInput); ok {
		return fi.ReadingFile()
	}
	return nil, 0, 0, false
}

// Close closes what is open; the store stays open (its [Set] holds it).
func (r *StreamReader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rc != nil {
		err := r.rc.Close()
		r.rc = nil
		return err
	}
	return nil
}

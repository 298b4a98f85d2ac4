package segments

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// growingFile reads like a regular file that another process appends to:
// at its current end, Read returns io.EOF, and later reads return what was
// appended since.
type growingFile struct {
	mu   sync.Mutex
	data []byte
	off  int
	eofs int // reads at the end since the last append
}

func (f *growingFile) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.off == len(f.data) {
		f.eofs++
		return 0, io.EOF
	}
	n := copy(p, f.data[f.off:])
	f.off += n
	return n, nil
}

func (f *growingFile) append(b []byte) {
	f.mu.Lock()
	f.data = append(f.data, b...)
	f.eofs = 0
	f.mu.Unlock()
}

// waitRead waits (up to 20 s: a loaded machine) until a following reader
// has read all f holds and come back for more twice: it has handed over
// what it could and polls, waiting.
func (f *growingFile) waitRead(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
		f.mu.Lock()
		idle := f.eofs >= 2
		f.mu.Unlock()
		if idle {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the reader did not read to the end of the file within 20 s")
		}
	}
}

// follow reads f in follow mode in the background until ctx ends.
func follow(ctx context.Context, f io.Reader) <-chan readResult {
	out := make(chan readResult, 1)
	go func() {
		r := NewReader(f, ReaderOptions{Follow: true, PollInterval: time.Millisecond, Context: ctx})
		res, err := collect(r, -1)
		if err != nil {
			res.err = err
		}
		out <- res
	}()
	return out
}

// TestFollowGrowingFile appends a capture in random pieces, splitting
// headers and records, while a following reader reads it: it waits for
// incomplete records instead of reporting them, and reads everything.
func TestFollowGrowingFile(t *testing.T) {
	for _, cfg := range sweepConfigs {
		t.Run(cfg.name, func(t *testing.T) {
			data := sweepCapture(t, cfg.opts)
			want := readAll(t, data, ReaderOptions{})
			f := &growingFile{}
			ctx, cancel := context.WithCancel(context.Background())
			done := follow(ctx, f)
			rng := rand.New(rand.NewPCG(1, 1))
			for rest := data; len(rest) > 0; {
				n := min(len(rest), 1+rng.IntN(200))
				f.append(rest[:n])
				rest = rest[n:]
				time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond)
			}
			f.waitRead(t)
			cancel()
			got := <-done
			if !errors.Is(got.err, context.Canceled) {
				t.Errorf("final error %v, want context.Canceled", got.err)
			}
			if len(got.corrupt) > 0 || !sameEntries(want.entries, got.entries) {
				t.Errorf("got\n%s\nwant\n%s", dump(got), dump(want))
			}
		})
	}
}

// TestFollowDamage: damage in a growing file is reported once the bytes
// after it prove it, and reading goes on; an incomplete tail is awaited.
func TestFollowDamage(t *testing.T) {
	c := newBuilder(t)
	h := c.header(descS)
	bad := c.frame(1, 0, "flipped")
	c.flip(bad + 7)
	good := c.frame(1, 1, "good")
	tail := c.frame(1, 2, "never finished")
	f := &growingFile{}
	f.append(c.b[:good+3]) // the damaged record and part of the next
	ctx, cancel := context.WithCancel(context.Background())
	done := follow(ctx, f)
	f.waitRead(t)
	f.append(c.b[good+3 : tail+5])
	f.waitRead(t)
	cancel()
	got := <-done
	checkOrder(t, got, []expect{entryAt(EntrySegment, h), corruptAt(bad, good, wireformat.ErrChecksum), entryAt(EntryFrame, good)})
	if !errors.Is(got.err, context.Canceled) {
		t.Errorf("final error %v, want context.Canceled", got.err)
	}
}

// TestFollowCancelled: a reader waiting at the end of input returns the
// context's error, and keeps returning it.
func TestFollowCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r := NewReader(&growingFile{}, ReaderOptions{Follow: true, Context: ctx, PollInterval: time.Hour})
	go func() {
		time.Sleep(10 * time.Millisecond)
		cancel()
	}()
	if _, err := r.Next(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Next = %v, want context.Canceled", err)
	}
	if _, err := r.Next(); !errors.Is(err, context.Canceled) {
		t.Fatalf("second Next = %v, want context.Canceled", err)
	}
	// A deadline works the same way.
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	r = NewReader(&growingFile{data: []byte(wireformat.Magic)}, ReaderOptions{Follow: true, Context: ctx})
	if _, err := r.Next(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next on a torn header = %v, want context.DeadlineExceeded", err)
	}
}

// checkOrder is checkResults without the final io.EOF.
func checkOrder(t *testing.T, res readResult, want []expect) {
	t.Helper()
	res.err = io.EOF
	checkResults(t, res, want)
}

package segments

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"maps"

	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// FuzzReader reads arbitrary input: the reader must not panic, must end
// with io.EOF, report ordered, non-empty damaged ranges inside the input,
// keep its buffer proportional to the input, and whatever it reads must
// re-encode (through Writers) to captures that read the same. `go test`
// runs it on the fixtures; fuzz it with
// `go test -run='^$' -fuzz=FuzzReader -fuzztime=2m ./pkg/segments`.
func FuzzReader(f *testing.F) {
	// Small seeds only: the fuzzer minimises every input that finds new
	// coverage, at a cost that grows with the square of its size.
	fx := fixtures(f)
	for _, name := range slices.Sorted(maps.Keys(fx)) {
		if len(fx[name]) <= 2048 {
			f.Add(fx[name])
		}
	}
	f.Add([]byte{})
	f.Add(writeEvents(f, descS, catalogS, WriterOptions{Compression: CompressZstd, BlockSize: 512, SegmentSize: 1024}, logEvents(streamS, 12)))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkReader(t, data)
		checkReader(t, withCRCs(data))
	})
}

// withCRCs returns data with the CRC of every header and record it holds
// made right, walking it as a capture for as long as the lengths fit:
// checksums would otherwise stop the fuzzer from reaching what they guard.
func withCRCs(data []byte) []byte {
	data = bytes.Clone(data)
	var seed uint32
	for off := 0; off+5 <= len(data); {
		if data[off] == wireformat.Magic[0] {
			if off+wireformat.HeaderPrefixSize > len(data) {
				break
			}
			n := wireformat.HeaderPrefixSize + int(binary.LittleEndian.Uint32(data[off+10:]))
			if n < wireformat.HeaderPrefixSize+8 || off+n+4 > len(data) {
				break
			}
			binary.LittleEndian.PutUint32(data[off+n:], crc32.Checksum(data[off:off+n], castagnoli))
			seed = crc32.Checksum(data[off+wireformat.HeaderPrefixSize:off+wireformat.HeaderPrefixSize+8], castagnoli)
			off += n + 4
			continue
		}
		n := 5 + int(binary.LittleEndian.Uint32(data[off+1:]))
		if n < 5 || off+n+4 > len(data) {
			break
		}
		binary.LittleEndian.PutUint32(data[off+n:], crc32.Update(seed, castagnoli, data[off:off+n]))
		off += n + 4
	}
	return data
}

func checkReader(t *testing.T, data []byte) {
	t.Helper()
	r := NewReader(bytes.NewReader(data), ReaderOptions{})
	res := readFrom(t, r, len(data))
	if res.err != io.EOF {
		t.Fatalf("final error %v", res.err)
	}
	if c := cap(r.buf); c > 2*len(data)+2*readBufferSize {
		t.Fatalf("%d bytes of input grew the buffer to %d", len(data), c)
	}
	end := int64(0)
	for _, it := range res.order {
		switch it := it.(type) {
		case *CorruptError:
			if it.Offset < end || it.End > int64(len(data)) {
				t.Fatalf("damaged range [%d, %d) after offset %d, input of %d bytes", it.Offset, it.End, end, len(data))
			}
			end = it.End
		case Entry:
			if it.Offset < end || it.Offset >= int64(len(data)) {
				t.Fatalf("entry at %d, after offset %d, input of %d bytes", it.Offset, end, len(data))
			}
			end = it.Offset
		}
	}
	fed, again := reencode(t, res.entries)
	res2 := readAll(t, again, ReaderOptions{})
	if res2.err != io.EOF || len(res2.corrupt) > 0 {
		t.Fatalf("re-encoded capture: %v, %v", res2.corrupt, res2.err)
	}
	read := toEvents(res2.entries)
	for _, s := range streamsOf(fed) {
		if want, got := eventsOf(fed, s), eventsOf(read, s); !sameEvents(want, got) {
			t.Fatalf("stream %s re-encoded (-fed +read):\n%s", s, cmp.Diff(want, got, eventCmp))
		}
	}
}

// reencode writes entries again, one Writer per stream, and returns the
// events the writers accepted (in the form toEvents gives) and the
// concatenated output.
func reencode(t *testing.T, entries []Entry) ([]frames.Event, []byte) {
	type out struct {
		w      *Writer
		buf    bytes.Buffer
		closed bool
	}
	outs := map[frames.StreamID]*out{}
	var order []*out
	var fed []frames.Event
	declared := map[frames.ChannelRef]bool{}
	declare := func(o *out, d frames.ChannelDescriptor) {
		ref := frames.ChannelRef{Stream: d.Stream, Channel: d.ID}
		if declared[ref] || o.closed {
			return
		}
		if err := o.w.DeclareChannel(d); err == nil {
			declared[ref] = true
			fed = append(fed, frames.ChannelDeclaredEvent(d))
		}
	}
	for _, e := range entries {
		o := outs[e.Stream]
		if o == nil && e.Kind != EntrySegment {
			continue
		}
		switch e.Kind {
		case EntrySegment:
			if o == nil {
				o = &out{}
				w, err := NewWriter(&o.buf, e.Header.Stream, nil, WriterOptions{Rand: detRand(1)})
				if err != nil {
					t.Fatal(err)
				}
				o.w = w
				outs[e.Stream] = o
				order = append(order, o)
				fed = append(fed, frames.StreamDeclaredEvent(e.Header.Stream))
			}
			for _, d := range e.Header.Channels {
				declare(o, d)
			}
		case EntryChannel:
			declare(o, *e.Channel)
		case EntryFrame:
			if !o.closed && o.w.WriteFrame(e.Frame) == nil {
				fed = append(fed, frameEvent(e.Stream, e.Frame))
			}
		case EntryStreamEnded:
			if !o.closed {
				if err := o.w.Close(); err != nil {
					t.Fatal(err)
				}
				o.closed = true
				fed = append(fed, frames.StreamEndedEvent(e.Stream))
			}
		}
	}
	var all []byte
	for _, o := range order {
		if !o.closed {
			if err := o.w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		all = append(all, o.buf.Bytes()...)
	}
	return fed, all
}

func eventStream(e frames.Event) frames.StreamID {
	switch e.Kind {
	case frames.EventStreamDeclared:
		return e.Stream.Stream
	case frames.EventChannelDeclared:
		return e.Channel.Stream
	case frames.EventFrame:
		return e.Frame.Channel.Stream
	}
	return e.Ended
}

func streamsOf(evs []frames.Event) []frames.StreamID {
	var out []frames.StreamID
	for _, e := range evs {
		if s := eventStream(e); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func eventsOf(evs []frames.Event, s frames.StreamID) []frames.Event {
	var out []frames.Event
	for _, e := range evs {
		if eventStream(e) == s {
			out = append(out, e)
		}
	}
	return out
}

// sameEvents is cmp.Equal for events, without reflection: fuzzing runs it
// millions of times.
func sameEvents(a, b []frames.Event) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Kind != y.Kind {
			return false
		}
		switch x.Kind {
		case frames.EventStreamDeclared:
			if x.Stream.Stream != y.Stream.Stream || x.Stream.Origin != y.Stream.Origin || !sameString(x.Stream.Label, y.Stream.Label) {
				return false
			}
		case frames.EventChannelDeclared:
			if !sameDescriptor(*x.Channel, *y.Channel) {
				return false
			}
		case frames.EventFrame:
			if x.Frame.Channel != y.Frame.Channel || x.Frame.Position != y.Frame.Position || !bytes.Equal(x.Frame.Payload, y.Frame.Payload) {
				return false
			}
		case frames.EventStreamEnded:
			if x.Ended != y.Ended {
				return false
			}
		}
	}
	return true
}

func sameString(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

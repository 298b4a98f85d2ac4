package segments

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// Test vocabulary: stream S = node-alpha#1 with the channels of
// ARCHITECTURE.md §8 (C1 JSON, C2 and C3 text), and a second stream T.
var (
	streamS = frames.StreamID{Node: "node-alpha", Life: 1}
	streamT = frames.StreamID{Node: "node-beta", Life: 1732953600123456789}
	descS   = frames.StreamDescriptor{Stream: streamS}
	descT   = frames.StreamDescriptor{Stream: streamT, Label: ptr("beta"), Origin: frames.OriginBootstrap}
)

func ptr[T any](v T) *T { return &v }

func channel(s frames.StreamID, id frames.ChannelID) frames.ChannelDescriptor {
	switch id {
	case 1:
		return frames.ChannelDescriptor{Stream: s, ID: 1, Name: "host.resource", Content: frames.JSONRecord("host.resource")}
	case 2:
		return frames.ChannelDescriptor{Stream: s, ID: 2, Name: "proc.trainer.stdout", Content: frames.TextStream()}
	case 3:
		return frames.ChannelDescriptor{Stream: s, ID: 3, Name: "membership", Label: ptr("peers"), Content: frames.TextStream()}
	}
	return frames.ChannelDescriptor{Stream: s, ID: id, Name: fmt.Sprintf("chan.%d", id), Content: frames.Bytes()}
}

// detRand is a deterministic source of segment ids.
func detRand(seed uint64) io.Reader {
	return rand.NewChaCha8([32]byte{0: byte(seed), 1: byte(seed >> 8)})
}

// writeEvents writes evs (frames and declarations of desc.Stream, and
// StreamEnded) with a new Writer and returns the capture.
func writeEvents(t testing.TB, desc frames.StreamDescriptor, catalog []frames.ChannelDescriptor, opts WriterOptions, evs []frames.Event) []byte {
	t.Helper()
	var buf bytes.Buffer
	if opts.Rand == nil {
		opts.Rand = detRand(1)
	}
	w, err := NewWriter(&buf, desc, catalog, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range evs {
		if err := w.WriteEvent(ev); err != nil {
			t.Fatalf("event %d (%v): %v", i, ev.Kind, err)
		}
		if i%7 == 6 {
			if err := w.Flush(); err != nil && !errors.Is(err, ErrClosed) {
				t.Fatal(err)
			}
		}
	}
	if err := w.Flush(); err != nil && !errors.Is(err, ErrClosed) {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readResult is everything a Reader returned for an input.
type readResult struct {
	entries []Entry
	corrupt []*CorruptError
	order   []any // entries and *CorruptErrors in the order returned
	err     error // the final error: io.EOF, or a sticky one
}

// readAll reads data to its end. It fails the test if the reader does not
// terminate within a generous number of calls.
func readAll(t testing.TB, data []byte, opts ReaderOptions) readResult {
	t.Helper()
	return readFrom(t, NewReader(bytes.NewReader(data), opts), len(data))
}

func readFrom(t testing.TB, r *Reader, size int) readResult {
	t.Helper()
	res, err := collect(r, 2*size+100)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// collect calls r.Next until it returns an error other than a
// *CorruptError. It returns an error of its own if that takes more than
// limit calls (limit < 0: no limit) or if a damaged range is empty.
func collect(r *Reader, limit int) (readResult, error) {
	var res readResult
	for calls := 0; ; calls++ {
		if limit >= 0 && calls > limit {
			return res, fmt.Errorf("reader makes no progress after %d calls", calls)
		}
		e, err := r.Next()
		var ce *CorruptError
		switch {
		case err == nil:
			res.entries = append(res.entries, e)
			res.order = append(res.order, e)
		case errors.As(err, &ce):
			if ce.End <= ce.Offset {
				return res, fmt.Errorf("corrupt range [%d, %d) is empty", ce.Offset, ce.End)
			}
			res.corrupt = append(res.corrupt, ce)
			res.order = append(res.order, ce)
		default:
			res.err = err
			return res, nil
		}
	}
}

// toEvents turns entries into the datastream events they carry: each
// stream's first header declares the stream, header catalogs and
// ChannelDeclared records declare channels (each once), then frames and
// stream ends.
func toEvents(entries []Entry) []frames.Event {
	var out []frames.Event
	declared := map[frames.StreamID]map[frames.ChannelID]bool{}
	declare := func(d frames.ChannelDescriptor) {
		if !declared[d.Stream][d.ID] {
			declared[d.Stream][d.ID] = true
			out = append(out, frames.ChannelDeclaredEvent(d))
		}
	}
	for _, e := range entries {
		switch e.Kind {
		case EntrySegment:
			if declared[e.Stream] == nil {
				declared[e.Stream] = map[frames.ChannelID]bool{}
				out = append(out, frames.StreamDeclaredEvent(e.Header.Stream))
			}
			for _, d := range e.Header.Channels {
				declare(d)
			}
		case EntryChannel:
			declare(*e.Channel)
		case EntryFrame:
			out = append(out, frameEvent(e.Stream, e.Frame))
		case EntryStreamEnded:
			out = append(out, frames.StreamEndedEvent(e.Stream))
		}
	}
	return out
}

func frameEvent(s frames.StreamID, f frames.Frame) frames.Event {
	return frames.FrameEvent(frames.FrameDelivery{Channel: frames.ChannelRef{Stream: s, Channel: f.Channel}, Position: f.Position, Payload: f.Payload})
}

// headerEvents are the events a capture of desc with catalog starts with.
func headerEvents(desc frames.StreamDescriptor, catalog []frames.ChannelDescriptor) []frames.Event {
	out := []frames.Event{frames.StreamDeclaredEvent(desc)}
	for _, d := range catalog {
		out = append(out, frames.ChannelDeclaredEvent(d))
	}
	return out
}

// dump renders a read result as text, one line per entry or error in the
// order the reader returned them, for golden files.
func dump(res readResult) string {
	var b strings.Builder
	for _, it := range res.order {
		switch it := it.(type) {
		case Entry:
			fmt.Fprintf(&b, "%6d  %s\n", it.Offset, dumpEntry(it))
		case *CorruptError:
			fmt.Fprintf(&b, "%6d  %s\n", it.Offset, dumpCorrupt(it))
		}
	}
	fmt.Fprintf(&b, "end: %v\n", res.err)
	return b.String()
}

func dumpCorrupt(ce *CorruptError) string {
	return fmt.Sprintf("CORRUPT [%d, %d) %v", ce.Offset, ce.End, ce.Err)
}

func dumpEntry(e Entry) string {
	switch e.Kind {
	case EntrySegment:
		h := e.Header
		var names []string
		for _, d := range h.Channels {
			names = append(names, fmt.Sprintf("%d=%s(%s)", d.ID, d.Name, d.Content))
		}
		label := "-"
		if h.Stream.Label != nil {
			label = *h.Stream.Label
		}
		return fmt.Sprintf("segment %s seq=%d v%d.%d id=%x writer=%q label=%s origin=%s channels=[%s]",
			e.Stream, h.Seq, h.Major, h.Minor, h.SegmentID, h.Writer, label, h.Stream.Origin, strings.Join(names, " "))
	case EntryChannel:
		return fmt.Sprintf("channel %s %d %s (%s)", e.Stream, e.Channel.ID, e.Channel.Name, e.Channel.Content)
	case EntryFrame:
		p := e.Frame.Payload
		suffix := ""
		if len(p) > 64 {
			p, suffix = p[:64], fmt.Sprintf("… (%d bytes)", len(e.Frame.Payload))
		}
		return fmt.Sprintf("frame %s ch=%d pos=%d %q%s", e.Stream, e.Frame.Channel, e.Frame.Position, p, suffix)
	case EntryStreamEnded:
		return fmt.Sprintf("ended %s", e.Stream)
	case EntryTrimmed:
		return fmt.Sprintf("trimmed %s below %d", e.Stream, e.Frame.Position)
	case EntrySummary:
		sum := e.Summary
		pos := "none"
		if sum.First != nil {
			pos = fmt.Sprintf("%d–%d", *sum.First, *sum.Last)
		}
		return fmt.Sprintf("summary %s seq=%d length=%d frames=%d bytes=%d positions=%s ordered=%v ended=%v channels=%d kept=%d", e.Stream, sum.Seq, sum.Length, sum.Frames, sum.Bytes, pos, sum.Ordered, sum.Ended, len(sum.Channels), len(sum.Kept))
	case EntryUnknown:
		if e.Err != nil {
			return fmt.Sprintf("unknown %s %v: %v", e.Stream, e.Type, e.Err)
		}
		return fmt.Sprintf("unknown %s %v", e.Stream, e.Type)
	}
	return fmt.Sprintf("entry kind %d", e.Kind)
}

// span is the byte range of one header or record of a capture.
type span struct {
	start, end int64
	header     bool
}

// spans walks a valid capture with package wireformat and returns the byte
// range of every header and record.
func spans(t testing.TB, data []byte) []span {
	t.Helper()
	var out []span
	var seed uint32
	for off := 0; off < len(data); {
		if data[off] == wireformat.Magic[0] {
			h, n, err := wireformat.ParseHeader(data[off:])
			if err != nil {
				t.Fatalf("spans: header at %d: %v", off, err)
			}
			seed = h.Seed()
			out = append(out, span{int64(off), int64(off + n), true})
			off += n
			continue
		}
		_, n, err := wireformat.ParseRecord(data[off:], seed, 0)
		if err != nil {
			t.Fatalf("spans: record at %d: %v", off, err)
		}
		out = append(out, span{int64(off), int64(off + n), false})
		off += n
	}
	return out
}

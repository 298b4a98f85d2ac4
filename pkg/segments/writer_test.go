package segments

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// failWriter accepts limit bytes, then fails every write.
type failWriter struct {
	limit  int
	n      int
	writes int
	closed bool
	syncs  int
}

var errDiskFull = errors.New("disk full")

func (w *failWriter) Write(p []byte) (int, error) {
	w.writes++
	if w.n+len(p) > w.limit {
		k := max(0, w.limit-w.n)
		w.n += k
		return k, errDiskFull
	}
	w.n += len(p)
	return len(p), nil
}

func (w *failWriter) Close() error { w.closed = true; return nil }
func (w *failWriter) Sync() error  { w.syncs++; return nil }

func TestWriterNewWriterErrors(t *testing.T) {
	tests := []struct {
		name    string
		catalog []frames.ChannelDescriptor
		opts    WriterOptions
		wantErr error
	}{
		{name: "channel of another stream", catalog: []frames.ChannelDescriptor{channel(streamT, 1)}, wantErr: wireformat.ErrWrongStream},
		{name: "conflicting ids", catalog: []frames.ChannelDescriptor{c1, {Stream: streamS, ID: 1, Name: "other"}}, wantErr: ErrConflict},
		{name: "writer id with a newline", opts: WriterOptions{WriterID: "ds\n"}},
		{name: "unknown compression", opts: WriterOptions{Compression: 9}},
		{name: "failing id source", opts: WriterOptions{Rand: strings.NewReader("short")}, wantErr: io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewWriter(io.Discard, descS, tt.catalog, tt.opts)
			if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
	// The same descriptor twice is one channel.
	if _, err := NewWriter(io.Discard, descS, []frames.ChannelDescriptor{c1, c1}, WriterOptions{}); err != nil {
		t.Errorf("repeated descriptor: %v", err)
	}
}

func TestWriterStickyError(t *testing.T) {
	fw := &failWriter{limit: 500}
	w, err := NewWriter(fw, descS, nil, WriterOptions{Rand: detRand(1)})
	if err != nil {
		t.Fatal(err)
	}
	var first error
	for i := range 10000 {
		if err := w.WriteFrame(frames.Frame{Channel: 1, Position: frames.Position(i), Payload: bytes.Repeat([]byte("x"), 100)}); err != nil {
			first = err
			break
		}
	}
	if !errors.Is(first, errDiskFull) {
		t.Fatalf("first error = %v, want disk full", first)
	}
	writes := fw.writes
	for _, call := range []func() error{
		func() error { return w.WriteFrame(frames.Frame{Channel: 1}) },
		func() error { return w.DeclareChannel(c2) },
		w.Flush, w.Sync,
	} {
		if err := call(); err != first {
			t.Errorf("later call: %v, want the first error %v", err, first)
		}
	}
	if err := w.Close(); err != first {
		t.Errorf("Close: %v, want %v", err, first)
	}
	if fw.writes != writes {
		t.Errorf("%d writes after the error", fw.writes-writes)
	}
}

func TestWriterClose(t *testing.T) {
	fw := &failWriter{limit: 1 << 20}
	w, err := NewWriter(fw, descS, []frames.ChannelDescriptor{c1}, WriterOptions{Rand: detRand(1)})
	if err != nil {
		t.Fatal(err)
	}
	if fw.writes != 0 {
		t.Errorf("NewWriter wrote %d times", fw.writes)
	}
	if err := w.WriteFrame(frames.Frame{Channel: 1, Payload: []byte("a")}); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil || fw.syncs != 1 || fw.writes != 1 {
		t.Fatalf("Sync: %v, %d syncs, %d writes", err, fw.syncs, fw.writes)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if fw.closed {
		t.Error("Close closed the underlying writer")
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	for name, call := range map[string]func() error{
		"WriteFrame":     func() error { return w.WriteFrame(frames.Frame{Channel: 1}) },
		"DeclareChannel": func() error { return w.DeclareChannel(c2) },
		"Flush":          w.Flush,
		"Sync":           w.Sync,
		"WriteEvent":     func() error { return w.WriteEvent(frames.StreamEndedEvent(streamS)) },
	} {
		if err := call(); !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}

// TestWriterArgumentErrors checks that bad arguments write nothing and do
// not poison the writer.
func TestWriterArgumentErrors(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, descS, []frames.ChannelDescriptor{c1}, WriterOptions{Rand: detRand(1)})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		call    func() error
		wantErr error
	}{
		{"channel of another stream", func() error { return w.DeclareChannel(channel(streamT, 2)) }, wireformat.ErrWrongStream},
		{"conflicting declaration", func() error {
			return w.DeclareChannel(frames.ChannelDescriptor{Stream: streamS, ID: 1, Name: "host.resource", Content: frames.TextStream()})
		}, ErrConflict},
		{"payload too large", func() error {
			return w.WriteFrame(frames.Frame{Channel: 1, Payload: make([]byte, wireformat.MaxPayloadSize+1)})
		}, wireformat.ErrTooLarge},
		{"frame event of another stream", func() error {
			return w.WriteEvent(frameEvent(streamT, frames.Frame{Channel: 1}))
		}, wireformat.ErrWrongStream},
		{"stream declared differently", func() error { return w.WriteEvent(frames.StreamDeclaredEvent(descT)) }, wireformat.ErrWrongStream},
		{"stream ended of another stream", func() error { return w.WriteEvent(frames.StreamEndedEvent(streamT)) }, wireformat.ErrWrongStream},
		{"declaration without descriptor", func() error { return w.WriteEvent(frames.Event{Kind: frames.EventChannelDeclared}) }, nil},
		{"zero event", func() error { return w.WriteEvent(frames.Event{}) }, nil},
	}
	for _, tt := range tests {
		if err := tt.call(); err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.wantErr)
		}
	}
	// Still usable; a repeated identical declaration and the stream's own
	// StreamDeclared write nothing.
	for _, ev := range []frames.Event{frames.StreamDeclaredEvent(descS), frames.ChannelDeclaredEvent(c1), frameEvent(streamS, frames.Frame{Channel: 1, Payload: []byte("ok")})} {
		if err := w.WriteEvent(ev); err != nil {
			t.Fatalf("%v: %v", ev.Kind, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	res := readAll(t, buf.Bytes(), ReaderOptions{})
	want := []frames.Event{frames.StreamDeclaredEvent(descS), frames.ChannelDeclaredEvent(c1), frameEvent(streamS, frames.Frame{Channel: 1, Payload: []byte("ok")}), frames.StreamEndedEvent(streamS)}
	if diff := cmp.Diff(want, toEvents(res.entries), eventCmp); diff != "" || len(res.entries) != 4 {
		t.Errorf("%d entries; events (-want +got):\n%s", len(res.entries), diff)
	}
}

// recordTypes lists the record types of a capture in order ("H" for a
// header).
func recordTypes(t *testing.T, data []byte) string {
	t.Helper()
	var out []string
	var seed uint32
	for _, s := range spans(t, data) {
		if s.header {
			h, _, _ := wireformat.ParseHeader(data[s.start:])
			seed = h.Seed()
			out = append(out, "H")
			continue
		}
		rec, _, _ := wireformat.ParseRecord(data[s.start:], seed, 0)
		out = append(out, rec.Type.String())
	}
	return strings.Join(out, " ")
}

func TestWriterBlocks(t *testing.T) {
	line := []byte("2026-11-30T08:00:00Z INFO request served path=/api/v1/items status=200\n")
	t.Run("many frames per flush are compressed", func(t *testing.T) {
		var evs []frames.Event
		for i := range 2000 {
			evs = append(evs, frameEvent(streamS, frames.Frame{Channel: 2, Position: frames.Position(i), Payload: line}))
		}
		var buf bytes.Buffer
		w, _ := NewWriter(&buf, descS, nil, WriterOptions{Compression: CompressZstd, Rand: detRand(1)})
		for _, ev := range evs {
			if err := w.WriteEvent(ev); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if got := recordTypes(t, buf.Bytes()); got != "H HeaderCopy Block StreamEnded SegmentSummary" {
			t.Errorf("records: %s", got)
		}
		if buf.Len() > len(line)*len(evs)/10 {
			t.Errorf("%d bytes of payload compressed to %d", len(line)*len(evs), buf.Len())
		}
	})
	t.Run("one small frame per flush is written plain", func(t *testing.T) {
		var buf bytes.Buffer
		w, _ := NewWriter(&buf, descS, nil, WriterOptions{Compression: CompressZstd, Rand: detRand(1)})
		for i := range 3 {
			if err := w.WriteFrame(frames.Frame{Channel: 2, Position: frames.Position(i), Payload: []byte("tick\n")}); err != nil {
				t.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		if got := recordTypes(t, buf.Bytes()); got != "H HeaderCopy Frame Frame Frame" {
			t.Errorf("records: %s", got)
		}
	})
	t.Run("a frame larger than a block is written plain", func(t *testing.T) {
		var buf bytes.Buffer
		w, _ := NewWriter(&buf, descS, nil, WriterOptions{Compression: CompressZstd, BlockSize: 1024, Rand: detRand(1)})
		for i, p := range [][]byte{line, bytes.Repeat(line, 20), line} {
			if err := w.WriteFrame(frames.Frame{Channel: 2, Position: frames.Position(i), Payload: p}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.DeclareChannel(c1); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if got := recordTypes(t, buf.Bytes()); got != "H HeaderCopy Frame Frame Frame SegmentSummary H HeaderCopy StreamEnded SegmentSummary" {
			t.Errorf("records: %s", got)
		}
	})
}

// TestWriterRotationLargeHeader writes frames under a header larger than
// the segment size (a catalog of 60 000 channels, about 2.4 MiB, with a
// segment size of 1 MiB): the header does not count towards the segment
// size, so the frames share one segment until their own records reach it.
// Before, every record started a segment that wrote the header again (a
// 16 MiB catalog made a 10 MB text capture 184 MB).
func TestWriterRotationLargeHeader(t *testing.T) {
	cat := make([]frames.ChannelDescriptor, 60_000)
	for i := range cat {
		cat[i] = frames.ChannelDescriptor{Stream: streamS, ID: frames.ChannelID(i + 1), Name: fmt.Sprintf("proc.job-%d.stdout", i+1), Content: frames.TextStream()}
	}
	var buf bytes.Buffer
	capped := writerFunc(func(p []byte) (int, error) {
		if buf.Len()+len(p) > 32<<20 {
			return 0, fmt.Errorf("the capture of 3 MB of records is over 32 MiB")
		}
		return buf.Write(p)
	})
	w, err := NewWriter(capped, descS, cat, WriterOptions{SegmentSize: 1 << 20, Rand: detRand(1)})
	if err != nil {
		t.Fatal(err)
	}
	line := bytes.Repeat([]byte{'x'}, 99)
	for i := range 30_000 { // 3 MB of records: 3 segments
		if err := w.WriteFrame(frames.Frame{Channel: frames.ChannelID(i%100 + 1), Position: frames.Position(i), Payload: line}); err != nil {
			t.Fatal(err)
		}
		if i%1000 == 0 {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n := countHeaders(spans(t, buf.Bytes())); n < 3 || n > 4 {
		t.Errorf("%d segments of 3 MB of records at a segment size of 1 MiB, want 3 or 4 (%d bytes)", n, buf.Len())
	}
}

func TestWriterRotation(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, descS, []frames.ChannelDescriptor{c1}, WriterOptions{SegmentSize: 1000, Rand: detRand(1)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if i == 50 {
			if err := w.DeclareChannel(c2); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.WriteFrame(frames.Frame{Channel: 1, Position: frames.Position(i), Payload: bytes.Repeat([]byte{'x'}, 50)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var ids [][8]byte
	start, head := int64(0), int64(0)
	for _, s := range spans(t, buf.Bytes()) {
		if !s.header {
			continue
		}
		h, _, _ := wireformat.ParseHeader(buf.Bytes()[s.start:])
		if int(h.Seq) != len(ids) {
			t.Errorf("segment %d has sequence number %d", len(ids), h.Seq)
		}
		for _, id := range ids {
			if id == h.SegmentID {
				t.Errorf("segment id %x reused", id)
			}
		}
		ids = append(ids, h.SegmentID)
		// The header and its copy (not counted), the segment size, one
		// more record, and the summary that ends it.
		if len(ids) > 1 && s.start-start > 2*head+1000+100+300 {
			t.Errorf("segment at %d is %d bytes, segment size 1000", start, s.start-start)
		}
		start, head = s.start, s.end-s.start
	}
	if len(ids) < 5 {
		t.Errorf("%d segments, want several", len(ids))
	}
}

// TestWriterStoreWhenBusy: a writer that never waits on compression stores
// some blocks plain when it outruns the compressors, and the capture reads
// back exactly, frame for frame, whichever way each block went.
func TestWriterStoreWhenBusy(t *testing.T) {
	payload := bytes.Repeat([]byte("a log line that compresses well, more or less\n"), 64)
	var evs []frames.Event
	for i := range 2000 {
		p := append(strconv.AppendInt(nil, int64(i), 10), payload...)
		evs = append(evs, frameEvent(streamS, frames.Frame{Channel: 2, Position: frames.Position(i), Payload: p}))
	}
	evs = append(evs, frames.StreamEndedEvent(streamS))
	data := writeEvents(t, descS, []frames.ChannelDescriptor{channel(streamS, 2)}, WriterOptions{Compression: CompressZstd, StoreWhenBusy: true, BlockSize: 64 << 10}, evs)
	res := readAll(t, data, ReaderOptions{})
	if len(res.corrupt) != 0 {
		t.Fatalf("damage in a fresh capture: %v", res.corrupt)
	}
	got := toEvents(res.entries)
	var frs []frames.Event
	for _, ev := range got {
		if ev.Kind == frames.EventFrame {
			frs = append(frs, ev)
		}
	}
	if len(frs) != 2000 {
		t.Fatalf("read back %d frames, want 2000", len(frs))
	}
	for i, ev := range frs {
		if ev.Frame.Position != frames.Position(i) || !bytes.Equal(ev.Frame.Payload, evs[i].Frame.Payload) {
			t.Fatalf("frame %d: position %d, payload %.20q", i, ev.Frame.Position, ev.Frame.Payload)
		}
	}
	if len(data) > len(payload)*2000 {
		t.Fatalf("capture of %d bytes is larger than its payloads (%d): nothing was compressed", len(data), len(payload)*2000)
	}
}

// TestWriterRotationContent: a capture that compresses well still starts
// a new segment every SegmentContent bytes of records uncompressed, not
// only every SegmentSize bytes stored.
func TestWriterRotationContent(t *testing.T) {
	var buf bytes.Buffer
	const content = 64 << 10
	w, err := NewWriter(&buf, descS, []frames.ChannelDescriptor{c2}, WriterOptions{Compression: CompressZstd, BlockSize: 8 << 10, SegmentContent: content, Rand: detRand(1)})
	if err != nil {
		t.Fatal(err)
	}
	line := []byte("y\n")
	const n = 200_000 // 1.2 MiB of inner records, a few KiB compressed
	for i := range n {
		if err := w.WriteFrame(frames.Frame{Channel: 2, Position: frames.Position(i), Payload: line}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	var segments int
	var size int64 // uncompressed content of the current segment
	check := func() {
		// The limit, and the block that crossed it.
		if size > content+8<<10 {
			t.Errorf("segment %d holds %d bytes of records uncompressed, SegmentContent %d", segments, size, content)
		}
	}
	var seed uint32
	for _, s := range spans(t, data) {
		if s.header {
			check()
			segments++
			size = 0
			seed = headerSeed(t, data, s)
			continue
		}
		rec, _, err := wireformat.ParseRecord(data[s.start:], seed, 0)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Type == wireformat.TypeBlock {
			content, err := wireformat.DecodeBlock(nil, rec.Body)
			if err != nil {
				t.Fatal(err)
			}
			size += int64(len(content))
		}
	}
	check()
	if want := n * 4 / content; segments < want {
		t.Errorf("%d bytes in %d segments, want at least %d", len(data), segments, want)
	}
	res, err := collect(NewReader(bytes.NewReader(data), ReaderOptions{}), -1)
	if err != nil || len(res.corrupt) > 0 || len(res.entries) < n {
		t.Fatalf("read back: %v, %v, %d entries", err, res.corrupt, len(res.entries))
	}
}

// TestWriterRotationAge: a segment that has reached SegmentAge is ended
// at the next flush (its summary is written), and the next record starts
// a new one; the clock is the writer's Now.
func TestWriterRotationAge(t *testing.T) {
	var buf bytes.Buffer
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	w, err := NewWriter(&buf, descS, []frames.ChannelDescriptor{c2}, WriterOptions{Rand: detRand(1), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	write := func(pos frames.Position) {
		t.Helper()
		if err := w.WriteFrame(frames.Frame{Channel: 2, Position: pos, Payload: []byte("tick\n")}); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	write(0)
	now = now.Add(DefaultSegmentAge - time.Second)
	write(1)
	if got := recordTypes(t, buf.Bytes()); got != "H HeaderCopy Frame Frame" {
		t.Fatalf("before SegmentAge: %s", got)
	}
	now = now.Add(time.Second)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := recordTypes(t, buf.Bytes()); got != "H HeaderCopy Frame Frame SegmentSummary" {
		t.Fatalf("at SegmentAge: %s", got)
	}
	now = now.Add(time.Hour) // idle: flushes write nothing more
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	write(2)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := recordTypes(t, buf.Bytes()); got != "H HeaderCopy Frame Frame SegmentSummary H HeaderCopy Frame StreamEnded SegmentSummary" {
		t.Fatalf("after it: %s", got)
	}
	var seqs []uint64
	for _, e := range readAll(t, buf.Bytes(), ReaderOptions{}).entries {
		if e.Kind == EntrySegment {
			seqs = append(seqs, e.Header.Seq)
		}
	}
	if fmt.Sprint(seqs) != "[0 1]" {
		t.Errorf("sequence numbers %v", seqs)
	}
}

// writerFunc is an io.Writer made of a function.
type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// blockCodecs returns the codec byte of each Block record of a capture,
// in order, and the number of frames stored as plain records.
func blockCodecs(t *testing.T, data []byte) (codecs []byte, plain int) {
	t.Helper()
	var seed uint32
	for b := data; len(b) > 0; {
		if bytes.HasPrefix(b, []byte(wireformat.Magic)) {
			h, n, err := wireformat.ParseHeader(b)
			if err != nil {
				t.Fatal(err)
			}
			seed, b = h.Seed(), b[n:]
			continue
		}
		rec, n, err := wireformat.ParseRecord(b, seed, 0)
		if err != nil {
			t.Fatal(err)
		}
		switch rec.Type {
		case wireformat.TypeBlock:
			codecs = append(codecs, rec.Body[0])
		case wireformat.TypeFrame:
			plain++
		}
		b = b[n:]
	}
	return codecs, plain
}

// TestWriterCodecChoice: a writer that never waits on compression
// (StoreWhenBusy) compresses with zstd's default level while it keeps up
// (seq(1)'s output: far smaller than the fastest level makes it), sends
// blocks to S2 while busyBlocks are being compressed with zstd, stores
// them plain while Busy says its producer falls behind, and waits once
// busyBlocks+storedBlocks are pending; every frame reads back, whatever
// its block's codec.
func TestWriterCodecChoice(t *testing.T) {
	const blockSize = 64 << 10
	seqFrame := func(i int) frames.Frame {
		return frames.Frame{Channel: 2, Position: frames.Position(i), Payload: strconv.AppendInt(nil, int64(i+1), 10)}
	}
	// write writes the next n seq frames, counting them in *next.
	writeN := func(w *Writer, next *int, n int) error {
		for range n {
			if err := w.WriteFrame(seqFrame(*next)); err != nil {
				return err
			}
			*next++
		}
		return nil
	}
	write := func(t *testing.T, w *Writer, next *int, n int) {
		t.Helper()
		if err := writeN(w, next, n); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("keeping up: zstd's default level", func(t *testing.T) {
		// seq(1)'s output as ds wrap reads it: 1000 lines a frame.
		lines := func(i int) frames.Frame {
			var p []byte
			for k := i*1000 + 1; k <= (i+1)*1000; k++ {
				p = strconv.AppendInt(p, int64(k), 10)
				p = append(p, '\n')
			}
			return frames.Frame{Channel: 2, Position: frames.Position(i), Payload: p}
		}
		capture := func(opts WriterOptions) []byte {
			var buf bytes.Buffer
			opts.Compression, opts.BlockSize, opts.Rand = CompressZstd, blockSize, detRand(1)
			w, err := NewWriter(&buf, descS, []frames.ChannelDescriptor{c2}, opts)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 100 {
				if err := w.WriteFrame(lines(i)); err != nil {
					t.Fatal(err)
				}
				if i%10 == 9 {
					if err := w.Flush(); err != nil { // each block done before the next
						t.Fatal(err)
					}
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			return buf.Bytes()
		}
		data, fast := capture(WriterOptions{StoreWhenBusy: true}), capture(WriterOptions{})
		codecs, plain := blockCodecs(t, data)
		t.Logf("100 000 lines of seq: %d bytes at the default level, %d at the fastest (%d blocks)", len(data), len(fast), len(codecs))
		if plain != 0 || bytes.ContainsFunc(codecs, func(r rune) bool { return r != wireformat.CodecZstd }) {
			t.Fatalf("codecs %v, %d plain frames, want zstd only", codecs, plain)
		}
		if len(data)*2 > len(fast) {
			t.Errorf("%d bytes, want under half of the fastest level's %d", len(data), len(fast))
		}
		res := readAll(t, data, ReaderOptions{})
		i := 0
		for _, e := range res.entries {
			if e.Kind == EntryFrame {
				if !bytes.Equal(e.Frame.Payload, lines(i).Payload) {
					t.Fatalf("frame %d differs", i)
				}
				i++
			}
		}
		if i != 100 || len(res.corrupt) != 0 {
			t.Fatalf("%d frames read back, damage %v", i, res.corrupt)
		}
	})

	t.Run("behind: S2, then plain, then waiting", func(t *testing.T) {
		// zstd compression is held back until release is closed: its
		// blocks stay in flight, as on a machine whose cores are busy.
		release := make(chan struct{})
		orig := compressBlock
		compressBlock = func(dst, content []byte, c wireformat.BlockCodec) ([]byte, error) {
			if c != wireformat.BlockS2 {
				<-release
			}
			return orig(dst, content, c)
		}
		defer func() { compressBlock = orig }()
		var busy atomic.Bool
		var buf bytes.Buffer
		w, err := NewWriter(&buf, descS, []frames.ChannelDescriptor{c2}, WriterOptions{Compression: CompressZstd, StoreWhenBusy: true, Busy: busy.Load, BlockSize: blockSize, Rand: detRand(1)})
		if err != nil {
			t.Fatal(err)
		}
		next := 0
		// A block is about 9 000 of these frames (7 bytes of record
		// each); busyBlocks of them go to zstd and stay there.
		write(t, w, &next, (busyBlocks+2)*9_500)
		if n := len(w.pending); n < busyBlocks+1 {
			t.Fatalf("%d blocks pending, want more than %d", n, busyBlocks)
		}
		busy.Store(true)
		write(t, w, &next, 2*9_500) // stored plain
		busy.Store(false)
		// Past the bound, closeBlock waits for the oldest zstd block:
		// release it from another goroutine once the writer is stuck.
		done := make(chan error)
		go func() { done <- writeN(w, &next, (storedBlocks+2)*9_500) }()
		select {
		case <-done:
			t.Fatal("the writer did not wait with busyBlocks+storedBlocks blocks pending")
		case <-time.After(100 * time.Millisecond): // a floor: waiting is what is checked
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		codecs, plain := blockCodecs(t, buf.Bytes())
		t.Logf("codecs %v, %d frames plain", codecs, plain)
		if len(codecs) < busyBlocks+2 || bytes.Count(codecs, []byte{wireformat.CodecS2}) == 0 {
			t.Errorf("codecs %v: want zstd, then S2", codecs)
		}
		for i := range busyBlocks {
			if codecs[i] != wireformat.CodecZstd {
				t.Errorf("block %d: codec %d, want zstd (%v)", i, codecs[i], codecs)
			}
		}
		if plain == 0 {
			t.Error("no frame stored plain while Busy")
		}
		checkSeq(t, buf.Bytes(), next)
	})
}

// checkSeq checks that a capture holds exactly seq frames 0..n-1.
func checkSeq(t *testing.T, data []byte, n int) {
	t.Helper()
	res := readAll(t, data, ReaderOptions{})
	if len(res.corrupt) != 0 {
		t.Fatalf("damage: %v", res.corrupt)
	}
	i := 0
	for _, e := range res.entries {
		if e.Kind != EntryFrame {
			continue
		}
		if e.Frame.Position != frames.Position(i) || string(e.Frame.Payload) != strconv.Itoa(i+1) {
			t.Fatalf("frame %d: position %d, payload %q", i, e.Frame.Position, e.Frame.Payload)
		}
		i++
	}
	if i != n {
		t.Fatalf("%d frames read back, want %d", i, n)
	}
}

// TestWriterStreamsLargeHeader: a header too large for a HeaderCopy goes to
// the output in pieces, never whole in memory (the writer's only large
// allocation is its copy of the catalog; it held each 7 MB header, and
// copied it with the first block after it), reads back as any header,
// and a file system that fills up in the middle of it is cut back to
// where it began: the capture keeps every frame before it.
func TestWriterStreamsLargeHeader(t *testing.T) {
	cat := make([]frames.ChannelDescriptor, 60_000)
	for i := range cat {
		cat[i] = frames.ChannelDescriptor{Stream: streamS, ID: frames.ChannelID(i + 1), Name: fmt.Sprintf("proc.job-%d.stdout", i+1), Content: frames.TextStream()}
	}
	// 1000 frames of 11 bytes of record, a segment every 4 KiB of them:
	// several segments, each under a header of about 7 MB.
	write := func(out io.Writer, n int) error {
		w, err := NewWriter(out, descS, cat, WriterOptions{Rand: detRand(1), SegmentSize: 4 << 10})
		if err != nil {
			return err
		}
		for i := range n {
			if err := w.WriteFrame(frames.Frame{Channel: 1, Position: frames.Position(i), Payload: []byte("a line\n")}); err != nil {
				return err
			}
		}
		return w.Close()
	}
	var buf bytes.Buffer
	buf.Grow(96 << 20) // the output's own growth is not the writer's
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if err := write(&buf, 1000); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	small := uint64(0)
	for i := range after.BySize {
		small += uint64(after.BySize[i].Size) * (after.BySize[i].Mallocs - before.BySize[i].Mallocs)
	}
	large := after.TotalAlloc - before.TotalAlloc - small
	res := readAll(t, buf.Bytes(), ReaderOptions{MaxRecordSize: 16 << 20})
	if len(res.corrupt) != 0 {
		t.Fatalf("damage: %v", res.corrupt)
	}
	var headers, frs, first int
	for _, e := range res.entries {
		switch e.Kind {
		case EntrySegment:
			headers++
			if !cmp.Equal(e.Header.Channels, cat) {
				t.Fatalf("header %d: %d channels, want the %d written", headers, len(e.Header.Channels), len(cat))
			}
		case EntryFrame:
			frs++
			if headers == 1 {
				first++
			}
		}
	}
	if headers < 3 || frs != 1000 {
		t.Fatalf("%d headers, %d frames; want 3 or more, 1000", headers, frs)
	}
	header := buf.Len() / headers
	clone := uint64(len(cat)) * uint64(unsafe.Sizeof(cat[0]))
	t.Logf("capture of %d bytes: %d bytes in large objects (the catalog's copy: %d)", buf.Len(), large, clone)
	if large > clone*5/4+2<<20 {
		t.Errorf("%d bytes allocated in large objects for headers of about %d, want about the catalog's copy (%d)", large, header, clone)
	}

	// The file system fills up in the middle of the second header.
	f := &fullFile{size: header + header/2}
	err := write(f, 1000)
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "keeps what fit") {
		t.Fatalf("full in the header: %v", err)
	}
	res = readAll(t, f.data, ReaderOptions{MaxRecordSize: 16 << 20})
	frs = 0
	for _, e := range res.entries {
		if e.Kind == EntryFrame {
			frs++
		}
	}
	if len(res.corrupt) != 0 || res.err != io.EOF || frs != first {
		t.Fatalf("after the cut: %d bytes, %d frames, damage %v, end %v; want the %d of the first segment", len(f.data), frs, res.corrupt, res.err, first)
	}
}

// TestWriterHeaderCopyUpToTheLimit: every header whose HeaderCopy fits in
// a record (its body + 2 bytes within DefaultMaxRecordSize) is followed by
// it, and only larger ones, written in pieces, by a parity copy instead:
// a header of 3 MB once lost its copy to an estimate of its size (found
// by review).
func TestWriterHeaderCopyUpToTheLimit(t *testing.T) {
	for _, n := range []int{20_000, 30_000, 36_000, 38_000, 40_000, 45_000} {
		cat := make([]frames.ChannelDescriptor, n)
		for i := range cat {
			cat[i] = frames.ChannelDescriptor{Stream: streamS, ID: frames.ChannelID(i + 1), Name: fmt.Sprintf("c%d", i+1), Content: frames.TextStream()}
		}
		var buf bytes.Buffer
		w, err := NewWriter(&buf, descS, cat, WriterOptions{Rand: detRand(1)})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WriteFrame(frames.Frame{Channel: 1, Payload: []byte("x\n")}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		b := buf.Bytes()
		h, size, err := wireformat.ParseHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		rec, _, err := wireformat.ParseRecord(b[size:], h.Seed(), 16<<20)
		if err != nil {
			t.Fatal(err)
		}
		body := size - wireformat.HeaderOverhead
		fits := 2+body <= wireformat.DefaultMaxRecordSize
		parity := rec.Type == wireformat.TypeHeaderCopy && wireformat.IsHeaderParity(rec.Body)
		whole := rec.Type == wireformat.TypeHeaderCopy && !parity
		t.Logf("%d channels: header body of %d bytes, copy fits %v, next record %v (parity %v)", n, body, fits, rec.Type, parity)
		if whole != fits || parity == fits {
			t.Errorf("%d channels, header body of %d bytes: HeaderCopy %v, parity copy %v; want %v, %v", n, body, whole, parity, fits, !fits)
		}
	}
}

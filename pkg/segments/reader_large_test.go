package segments

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"unsafe"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/wireformat"
	"github.com/google/go-cmp/cmp"
)

// largeHeaderCapture returns a capture of several segments, each under a
// header of about 4.8 MB (40 000 channels: too large for a HeaderCopy,
// followed by its parity copy), and the header's size.
func largeHeaderCapture(t *testing.T) ([]byte, int) {
	t.Helper()
	cat := make([]frames.ChannelDescriptor, 40_000)
	for i := range cat {
		cat[i] = frames.ChannelDescriptor{Stream: streamS, ID: frames.ChannelID(i + 1), Name: fmt.Sprintf("proc.job-%d.stdout", i+1), Content: frames.TextStream()}
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, descS, cat, WriterOptions{Rand: detRand(3), SegmentSize: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 600 {
		if err := w.WriteFrame(frames.Frame{Channel: frames.ChannelID(i%40 + 1), Position: frames.Position(i), Payload: fmt.Appendf(nil, "line %d\n", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, n, err := wireformat.ParseHeader(buf.Bytes())
	if err != nil || n <= largeHeader {
		t.Fatalf("first header: %d bytes, %v (want over %d)", n, err, largeHeader)
	}
	return buf.Bytes(), n
}

// TestReaderLargeHeaderFromFile: a Reader of a file (the file itself,
// wrapped as ds's readers wrap it, at an offset) decodes its large
// headers from the file a piece at a time, and returns exactly what it
// returns for the same bytes in memory (entries, damage and offsets), with
// and without SkipRepeatedCatalogs, for a sound capture and for damaged
// ones (a catalog byte, a CRC, a length field, a torn header); reading the
// sound file, it allocates no buffer of a header's size.
func TestReaderLargeHeaderFromFile(t *testing.T) {
	data, hsize := largeHeaderCapture(t)
	damaged := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(data)) }
	second := hsize + bytes.Index(data[hsize:], []byte(wireformat.Magic))
	inputs := []struct {
		name string
		b    []byte
	}{
		{"sound", data},
		{"catalog byte", damaged(func(b []byte) []byte { b[hsize/2] ^= 1; return b })},
		{"second header's catalog byte", damaged(func(b []byte) []byte { b[second+hsize/3] ^= 0x40; return b })},
		{"CRC", damaged(func(b []byte) []byte { b[hsize-1] ^= 0x80; return b })},
		{"length", damaged(func(b []byte) []byte { b[12] ^= 1; return b })},
		{"torn in the second header", data[:second+hsize/2]},
	}
	dir := t.TempDir()
	const lead = 1000 // bytes before the capture in the file
	for _, in := range inputs {
		path := filepath.Join(dir, "capture.dss")
		if err := os.WriteFile(path, append(bytes.Repeat([]byte{'x'}, lead), in.b...), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, skip := range []bool{false, true} {
			opts := ReaderOptions{SkipRepeatedCatalogs: skip, Offset: lead}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			want := readFrom(t, NewReader(bytes.NewReader(in.b), opts), len(in.b))
			runtime.ReadMemStats(&after)
			inMemory := largeAllocated(&before, &after)
			headers := 0
			for _, e := range want.entries {
				if e.Kind == EntrySegment {
					headers++
				}
			}
			for _, wrap := range []struct {
				name string
				src  func(f *os.File) io.Reader
			}{
				{"file", func(f *os.File) io.Reader { return f }},
				{"counted", func(f *os.File) io.Reader { return &CountingReader{R: f} }},
				{"buffered", func(f *os.File) io.Reader { return bufferedReader{bufio.NewReaderSize(f, 64<<10), f} }},
				{"with a prefix", func(f *os.File) io.Reader {
					pre := make([]byte, 100)
					if _, err := io.ReadFull(f, pre); err != nil {
						t.Fatal(err)
					}
					return &prefixReader{pre: pre, r: bufferedReader{bufio.NewReaderSize(f, 64<<10), f}}
				}},
			} {
				f, err := os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.Seek(lead, io.SeekStart); err != nil {
					t.Fatal(err)
				}
				src := wrap.src(f)
				runtime.GC()
				runtime.ReadMemStats(&before)
				got := readFrom(t, NewReader(src, opts), len(in.b))
				runtime.ReadMemStats(&after)
				f.Close()
				name := fmt.Sprintf("%s, %s, SkipRepeatedCatalogs %v", in.name, wrap.name, skip)
				if diff := cmp.Diff(summarize(want), summarize(got)); diff != "" {
					t.Errorf("%s: (-in memory +from the file):\n%s", name, diff)
				}
				// In memory, each header is read into a buffer of its size
				// or more; from the file, into pieces of 1 MiB.
				// In memory, each header is read into a buffer of its size
				// or more; from the file, a piece of 1 MiB at a time: each
				// header costs its descriptors and 2 MiB at most.
				limit := uint64(headers) * (40_000*uint64(unsafe.Sizeof(frames.ChannelDescriptor{})) + 2<<20)
				if large := largeAllocated(&before, &after); in.name == "sound" && large > limit {
					t.Errorf("%s: %d bytes allocated in objects over 32 KiB (in memory: %d), want at most %d (%d headers of %d bytes)", name, large, inMemory, limit, headers, hsize)
				}
			}
		}
	}
}

// summarize is what a readResult says, comparable: each entry's kind,
// offset, stream, header, channel and frame, and each damage's range and
// error text.
func summarize(r readResult) []string {
	var out []string
	for _, o := range r.order {
		switch o := o.(type) {
		case Entry:
			s := fmt.Sprintf("entry %d at %d of %s: frame %d %d %q", o.Kind, o.Offset, o.Stream, o.Frame.Channel, o.Frame.Position, o.Frame.Payload)
			if o.Header != nil {
				s += fmt.Sprintf(" header %d %x repeated %v, %d channels, last %v", o.Header.Seq, o.Header.SegmentID, o.Header.CatalogRepeated, len(o.Header.Channels), o.Header.Channels[max(len(o.Header.Channels)-1, 0):])
			}
			out = append(out, s)
		case *CorruptError:
			out = append(out, fmt.Sprintf("damage %d-%d: %v", o.Offset, o.End, o.Err))
		}
	}
	return append(out, fmt.Sprintf("end: %v", r.err))
}

// largeAllocated returns the bytes allocated between two MemStats in
// objects larger than the largest size class (32 KiB).
func largeAllocated(before, after *runtime.MemStats) uint64 {
	small := uint64(0)
	for i := range after.BySize {
		small += uint64(after.BySize[i].Size) * (after.BySize[i].Mallocs - before.BySize[i].Mallocs)
	}
	return after.TotalAlloc - before.TotalAlloc - small
}

// TestLargeHeaderSections: a Reader of a section of any io.ReaderAt (the
// views read a stream's sections of a capture so, through their own
// ReaderAts) and a BackWalker decode large headers from it a piece at a
// time, and return what a Reader of the bytes in memory does; a damaged
// header is still read whole and reported the same.
func TestLargeHeaderSections(t *testing.T) {
	data, hsize := largeHeaderCapture(t)
	damaged := bytes.Clone(data)
	damaged[hsize/2] ^= 1
	for _, in := range []struct {
		name string
		b    []byte
	}{{"sound", data}, {"catalog byte", damaged}} {
		want := readFrom(t, NewReader(bytes.NewReader(in.b), ReaderOptions{}), len(in.b))
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		sr := io.NewSectionReader(onlyReaderAt{bytes.NewReader(in.b)}, 0, int64(len(in.b)))
		got := readFrom(t, NewReader(&CountingReader{R: sr}, ReaderOptions{}), len(in.b))
		runtime.ReadMemStats(&after)
		if diff := cmp.Diff(summarize(want), summarize(got)); diff != "" {
			t.Errorf("%s: (-bytes +section):\n%s", in.name, diff)
		}
		headers := 0
		for _, e := range want.entries {
			if e.Kind == EntrySegment {
				headers++
			}
		}
		limit := uint64(headers) * (40_000*uint64(unsafe.Sizeof(frames.ChannelDescriptor{})) + 2<<20)
		if large := largeAllocated(&before, &after); in.name == "sound" && large > limit {
			t.Errorf("%s: %d bytes allocated in objects over 32 KiB, want at most %d (%d headers of %d bytes)", in.name, large, limit, headers, hsize)
		}
	}

	// The walk from the end: the same headers as a whole read gives,
	// without a buffer of a header's size.
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	w := NewBackWalker(bytes.NewReader(data), int64(len(data)))
	var spans []Span
	for {
		sp, err := w.Prev()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		spans = append(spans, sp)
	}
	runtime.ReadMemStats(&after)
	if len(spans) < 2 {
		t.Fatalf("%d spans", len(spans))
	}
	for _, sp := range spans {
		h, _, err := wireformat.ParseHeader(data[sp.Offset:])
		if err != nil || sp.Header == nil || !cmp.Equal(*sp.Header, h) {
			t.Fatalf("span at %d: header differs from ParseHeader's (%v)", sp.Offset, err)
		}
	}
	limit := uint64(len(spans)) * (40_000*uint64(unsafe.Sizeof(frames.ChannelDescriptor{})) + 2<<20)
	if large := largeAllocated(&before, &after); large > limit {
		t.Errorf("walk: %d bytes allocated in objects over 32 KiB, want at most %d (%d headers of %d bytes)", large, limit, len(spans), hsize)
	}
}

// onlyReaderAt hides every method of its io.ReaderAt but ReadAt.
type onlyReaderAt struct{ r io.ReaderAt }

func (o onlyReaderAt) ReadAt(b []byte, off int64) (int, error) { return o.r.ReadAt(b, off) }

// TestLargeHeaderPipe: from an input that is not a file (a pipe), a large
// header is read into pieces as it arrives and decoded from them: the
// entries, damage and offsets are those of the file, for sound and
// damaged captures, and the sound one allocates each header's bytes
// once (not a buffer grown by doubling to it, old and new both held).
func TestLargeHeaderPipe(t *testing.T) {
	data, hsize := largeHeaderCapture(t)
	second := hsize + bytes.Index(data[hsize:], []byte(wireformat.Magic))
	cut := func(f func(b []byte)) []byte { b := bytes.Clone(data); f(b); return b }
	dir := t.TempDir()
	for _, in := range []struct {
		name string
		b    []byte
	}{
		{"sound", data},
		{"catalog byte", cut(func(b []byte) { b[hsize/2] ^= 1 })},
		{"length", cut(func(b []byte) { b[12] ^= 1 })},
		{"torn in the second header", data[:second+hsize/2]},
	} {
		path := filepath.Join(dir, "c.dss")
		if err := os.WriteFile(path, in.b, 0o644); err != nil {
			t.Fatal(err)
		}
		read := func(pipe bool) (readResult, uint64) {
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var src io.Reader = f
			if pipe {
				src = struct{ io.Reader }{f}
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			res := readFrom(t, NewReader(src, ReaderOptions{}), len(in.b))
			runtime.ReadMemStats(&after)
			return res, largeAllocated(&before, &after)
		}
		want, _ := read(false)
		got, large := read(true)
		if diff := cmp.Diff(summarize(want), summarize(got)); diff != "" {
			t.Errorf("%s: (-file +pipe):\n%s", in.name, diff)
		}
		headers := uint64(0)
		for _, e := range want.entries {
			if e.Kind == EntrySegment {
				headers++
			}
		}
		limit := headers * (40_000*uint64(unsafe.Sizeof(frames.ChannelDescriptor{})) + uint64(hsize) + 2<<20)
		if in.name == "sound" && large > limit {
			t.Errorf("%s: %d bytes allocated in objects over 32 KiB, want at most %d (%d headers of %d bytes)", in.name, large, limit, headers, hsize)
		}
	}
}

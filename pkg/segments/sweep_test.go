package segments

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"
	"testing/iotest"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// sweepCapture is a multi-segment capture of stream S: a declared catalog,
// a channel declared midway, text and JSON frames, payloads holding DSS
// bytes (escaped records), and StreamEnded.
func sweepCapture(t testing.TB, opts WriterOptions) []byte {
	t.Helper()
	var evs []frames.Event
	for i := range 30 {
		var p []byte
		switch i % 5 {
		case 0:
			p = []byte(fmt.Sprintf(`{"cpu_pct":%d.5,"mem_mb":%d}`, 12+i, 1024+i))
		case 3:
			p = []byte("captured " + wireformat.Magic + " bytes")
		default:
			p = []byte(fmt.Sprintf("line %d of the trainer's output\n", i))
		}
		if i == 15 {
			evs = append(evs, frames.ChannelDeclaredEvent(channel(streamS, 3)))
		}
		evs = append(evs, frameEvent(streamS, frames.Frame{Channel: frames.ChannelID(1 + i%3), Position: frames.Position(i), Payload: p}))
	}
	evs = append(evs, frames.StreamEndedEvent(streamS))
	return writeEvents(t, descS, []frames.ChannelDescriptor{channel(streamS, 1), channel(streamS, 2)}, opts, evs)
}

var sweepConfigs = []struct {
	name string
	opts WriterOptions
}{
	{"plain", WriterOptions{SegmentSize: 400}},
	{"zstd", WriterOptions{Compression: CompressZstd, BlockSize: 300, SegmentSize: 250}},
}

// spanEnds maps the offset of every header and record to its end.
func spanEnds(sp []span) map[int64]int64 {
	m := map[int64]int64{}
	for _, s := range sp {
		m[s.start] = s.end
	}
	return m
}

// skipUnderRace skips a sweep under the race detector: the sweeps decode
// one goroutine's input many thousand times, which the detector slows
// tenfold and cannot fault (no goroutines are shared); make test runs
// them without it (make scripts, beside the testscripts).
func skipUnderRace(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("a decoding sweep: run without -race (make scripts, make sweeps)")
	}
}

// TestTruncationSweep cuts a valid capture at every length: the reader
// returns every entry whose record is complete before the cut, and reports
// a cut inside a header or record as a torn tail at that record's offset,
// then io.EOF. Nothing else, no panic, no silent short read.
func TestTruncationSweep(t *testing.T) {
	skipUnderRace(t)
	for _, cfg := range sweepConfigs {
		t.Run(cfg.name, func(t *testing.T) {
			data := sweepCapture(t, cfg.opts)
			sp := spans(t, data)
			if headers := countHeaders(sp); headers < 3 {
				t.Fatalf("capture has %d segments, want several", headers)
			}
			ends := spanEnds(sp)
			full := readAll(t, data, ReaderOptions{})
			if full.err != io.EOF || len(full.corrupt) > 0 {
				t.Fatalf("full capture: %v, %v", full.corrupt, full.err)
			}
			k := 0 // sp[k] is the span holding the cut
			for cut := 0; cut <= len(data); cut++ {
				for k < len(sp) && sp[k].end <= int64(cut) {
					k++
				}
				res := readAll(t, data[:cut], ReaderOptions{})
				var want []Entry
				for _, e := range full.entries {
					if ends[e.Offset] <= int64(cut) {
						want = append(want, e)
					}
				}
				if !sameEntries(want, res.entries) {
					t.Fatalf("cut %d: got %d entries, want %d", cut, len(res.entries), len(want))
				}
				if res.err != io.EOF {
					t.Fatalf("cut %d: final error %v, want io.EOF", cut, res.err)
				}
				atBoundary := k == len(sp) || sp[k].start == int64(cut)
				switch {
				case atBoundary && len(res.corrupt) != 0:
					t.Fatalf("cut %d at a record boundary: %v", cut, res.corrupt)
				case !atBoundary && (len(res.corrupt) != 1 || !errors.Is(res.corrupt[0], io.ErrUnexpectedEOF) ||
					res.corrupt[0].Offset != sp[k].start || res.corrupt[0].End != int64(cut)):
					t.Fatalf("cut %d inside [%d, %d): got %v, want a torn tail at %d", cut, sp[k].start, sp[k].end, res.corrupt, sp[k].start)
				}
			}
		})
	}
}

func countHeaders(sp []span) int {
	n := 0
	for _, s := range sp {
		if s.header {
			n++
		}
	}
	return n
}

// sameEntries compares entries by what they carry (not pointers).
func sameEntries(a, b []Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameEntry(a[i], b[i]) {
			return false
		}
	}
	return true
}

func sameEntry(a, b Entry) bool {
	if a.Kind == EntryFrame && b.Kind == EntryFrame {
		return a.Offset == b.Offset && a.Stream == b.Stream && a.Frame.Channel == b.Frame.Channel &&
			a.Frame.Position == b.Frame.Position && bytes.Equal(a.Frame.Payload, b.Frame.Payload)
	}
	return a.Offset == b.Offset && dumpEntry(a) == dumpEntry(b)
}

// TestBitFlipSweep damages every byte of a multi-segment capture in several
// ways. Each time the reader loses at most the record (or block) holding
// the byte, or that segment if the byte is in a header; it reads every
// other frame unchanged and in order, reports a damaged range holding the
// byte, and never yields a frame that was not written.
func TestBitFlipSweep(t *testing.T) {
	skipUnderRace(t)
	damages := []struct {
		name  string
		apply func(byte) byte
	}{
		{"xor ff", func(b byte) byte { return b ^ 0xFF }},
		{"xor 01", func(b byte) byte { return b ^ 0x01 }},
		{"xor 80", func(b byte) byte { return b ^ 0x80 }},
		{"set 89", func(byte) byte { return 0x89 }},
		{"set 00", func(byte) byte { return 0 }},
	}
	if testing.Short() || raceEnabled {
		damages = damages[:2]
	}
	for _, cfg := range sweepConfigs {
		t.Run(cfg.name, func(t *testing.T) {
			data := sweepCapture(t, cfg.opts)
			sp := spans(t, data)
			full := readAll(t, data, ReaderOptions{})
			type located struct {
				e       Entry
				span    int // index in sp of its record
				segment int // index in sp of its segment's header
			}
			var framesIn []located
			si, seg := 0, 0
			for _, e := range full.entries {
				for sp[si].start != e.Offset {
					si++
				}
				if sp[si].header {
					seg = si
				}
				if e.Kind == EntryFrame {
					framesIn = append(framesIn, located{e, si, seg})
				}
			}
			k := 0
			for i := range data {
				for sp[k].end <= int64(i) {
					k++
				}
				for _, d := range damages {
					damaged := bytes.Clone(data)
					damaged[i] = d.apply(damaged[i])
					if damaged[i] == data[i] {
						continue
					}
					res := readAll(t, damaged, ReaderOptions{})
					if res.err != io.EOF {
						t.Fatalf("byte %d %s: final error %v", i, d.name, res.err)
					}
					covered := false
					for _, ce := range res.corrupt {
						covered = covered || (ce.Offset <= int64(i) && int64(i) < ce.End)
					}
					if !covered {
						t.Fatalf("byte %d %s: no damaged range holds it: %v", i, d.name, res.corrupt)
					}
					var got []Entry
					for _, e := range res.entries {
						if e.Kind == EntryFrame {
							got = append(got, e)
						}
					}
					j := 0
					for _, f := range framesIn {
						if j < len(got) && sameEntry(f.e, got[j]) {
							j++
							continue
						}
						lost := f.span == k || (sp[k].header && f.segment == k)
						if !lost {
							t.Fatalf("byte %d %s (in [%d, %d)): frame at %d lost: %s\ncorrupt: %v", i, d.name, sp[k].start, sp[k].end, f.e.Offset, dumpEntry(f.e), res.corrupt)
						}
					}
					if j != len(got) {
						t.Fatalf("byte %d %s: frame that was not written (or out of order): %s", i, d.name, dumpEntry(got[j]))
					}
				}
			}
		})
	}
}

// TestReadThroughSlowReaders reads captures through readers that return
// one byte, or half of what is asked, at a time.
func TestReadThroughSlowReaders(t *testing.T) {
	for _, cfg := range sweepConfigs {
		data := sweepCapture(t, cfg.opts)
		want := readAll(t, data, ReaderOptions{})
		torn := data[:len(data)-3]
		wantTorn := readAll(t, torn, ReaderOptions{})
		for name, wrap := range map[string]func(io.Reader) io.Reader{
			"one byte": iotest.OneByteReader, "half": iotest.HalfReader, "data+EOF": iotest.DataErrReader,
		} {
			got := readFrom(t, NewReader(wrap(bytes.NewReader(data)), ReaderOptions{}), len(data))
			if !sameEntries(want.entries, got.entries) || got.err != io.EOF || len(got.corrupt) != 0 {
				t.Errorf("%s %s: %d entries, %v, %v", cfg.name, name, len(got.entries), got.corrupt, got.err)
			}
			got = readFrom(t, NewReader(wrap(bytes.NewReader(torn)), ReaderOptions{}), len(torn))
			if dump(got) != dump(wantTorn) {
				t.Errorf("%s %s, torn:\n%s\nwant\n%s", cfg.name, name, dump(got), dump(wantTorn))
			}
		}
	}
}

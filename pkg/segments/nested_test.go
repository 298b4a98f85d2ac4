package segments

import (
	"bytes"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// nestedCapture is a small capture of stream T whose bytes hold no 0x89
// but the header magic's, so that, captured as a payload, its only escaped
// byte pair is the one in front of its magic.
func nestedCapture(t *testing.T) []byte {
	for seed := uint64(100); ; seed++ {
		evs := []frames.Event{
			frameEvent(streamT, frames.Frame{Channel: 9, Position: 0, Payload: []byte("inner frame one\n")}),
			frameEvent(streamT, frames.Frame{Channel: 9, Position: 1, Payload: []byte("inner frame two\n")}),
		}
		data := writeEvents(t, descT, nil, WriterOptions{Rand: detRand(seed)}, evs)
		if bytes.Count(data, []byte{0x89}) == 1 {
			return data
		}
	}
}

// A DSS capture held in a payload (ds wrap -- cat x.dss) must not be
// resynchronised into when one byte of the outer record is damaged: flipping
// the escape byte of its magic (89 00 → 89 89) leaves a real magic and a
// valid header inside the damaged record. The flip may cost that record
// only; no frame of the inner stream may appear, and the damaged range must
// cover the flipped byte. (Found by review: the reader used to take the
// inner header and lose the rest of the outer segment.)
func TestNestedCaptureEscapeFlip(t *testing.T) {
	inner := nestedCapture(t)
	evs := []frames.Event{
		frameEvent(streamS, frames.Frame{Channel: 2, Position: 0, Payload: []byte("before\n")}),
		frameEvent(streamS, frames.Frame{Channel: 2, Position: 1, Payload: inner}),
		frameEvent(streamS, frames.Frame{Channel: 2, Position: 2, Payload: []byte("after 1\n")}),
		frameEvent(streamS, frames.Frame{Channel: 2, Position: 3, Payload: []byte("after 2\n")}),
	}
	data := writeEvents(t, descS, nil, WriterOptions{}, evs)
	i := bytes.Index(data, []byte{0x89, 0x00, 'D', 'S', 'S'})
	if i < 0 {
		t.Fatal("no escaped magic in the outer capture")
	}
	for _, flip := range []byte{0x89, 0xFF, 0x01} {
		bad := bytes.Clone(data)
		bad[i+1] = flip
		res := readAll(t, bad, ReaderOptions{})
		var positions []frames.Position
		for _, e := range res.entries {
			if e.Kind == EntryFrame {
				if e.Stream != streamS {
					t.Fatalf("flip to %#x: a frame of the inner stream came out: %s", flip, dumpEntry(e))
				}
				positions = append(positions, e.Frame.Position)
			}
		}
		if len(positions) != 3 || positions[0] != 0 || positions[1] != 2 || positions[2] != 3 {
			t.Fatalf("flip to %#x: frames at %v, want 0, 2, 3", flip, positions)
		}
		covered := false
		for _, ce := range res.corrupt {
			if ce.Offset <= int64(i+1) && int64(i+1) < ce.End {
				covered = true
			}
		}
		if !covered {
			t.Fatalf("flip to %#x at %d: not inside any damaged range %v", flip, i+1, res.corrupt)
		}
	}
}

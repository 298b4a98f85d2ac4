package segments

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// stClockStore holds streamS at positions 0..9 with clock readings at 0
// (1000 ns), 5 (2000 ns) and 8 (3000 ns), and streamT without a clock.
func stClockStore(t *testing.T) *Store {
	s := stNewStore(t)
	clock := frames.ChannelDescriptor{Stream: streamS, ID: 1, Name: frames.ClockChannel, Content: frames.JSONRecord(frames.ClockChannel)}
	var frs []frames.Frame
	for p := frames.Position(0); p <= 9; p++ {
		f := frames.Frame{Channel: 2, Position: p, Payload: fmt.Appendf(nil, "line %d\n", p)}
		if ns := map[frames.Position]int64{0: 1000, 5: 2000, 8: 3000}[p]; ns != 0 {
			f = frames.Frame{Channel: 1, Position: p, Payload: fmt.Appendf(nil, `{"unix_ns":%d,"mono_ns":1}`, ns)}
		}
		frs = append(frs, f)
	}
	stIngest(t, s, "s", stCapture(t, descS, []frames.ChannelDescriptor{clock, channel(streamS, 2)}, frs, false), nil)
	stIngest(t, s, "t", stCapture(t, descT, []frames.ChannelDescriptor{channel(streamT, 2)}, stFrames(streamT, stRange(0, 3)...), false), nil)
	return s
}

func TestStorePlanTrimBefore(t *testing.T) {
	s := stClockStore(t)
	horizons := func(p TrimPlan) map[frames.StreamID]frames.Position {
		m := map[frames.StreamID]frames.Position{}
		for _, r := range p.Reports {
			m[r.Stream] = r.Before
		}
		return m
	}
	plan, err := s.PlanTrimBefore(TrimBefore{Position: 3})
	if err != nil || len(plan.Reports) != 2 || len(plan.Untimed) != 0 {
		t.Fatalf("position 3: %+v %v", plan, err)
	}
	if h := horizons(plan); h[streamS] != 3 || h[streamT] != 3 {
		t.Errorf("position 3: horizons %v", h)
	}
	for _, tc := range []struct {
		tt   TrimTime
		want frames.Position
	}{
		{TrimTime{UnixNS: 500}, 0},
		{TrimTime{UnixNS: 1000}, 0},
		{TrimTime{UnixNS: 1500}, 5},
		{TrimTime{UnixNS: 3000}, 8},
		{TrimTime{UnixNS: 3001}, 10}, // every reading before: one past the last frame
		{TrimTime{FromStart: true, Offset: 1500 * time.Nanosecond}, 8},
	} {
		plan, err := s.PlanTrimBefore(TrimBefore{Time: &tc.tt})
		if err != nil {
			t.Fatal(err)
		}
		if h := horizons(plan); len(h) != 1 || h[streamS] != tc.want {
			t.Errorf("%+v: horizons %v, want %s at %d", tc.tt, h, streamS, tc.want)
		}
		if !slices.Equal(plan.Untimed, []frames.StreamID{streamT}) {
			t.Errorf("%+v: untimed %v, want %s", tc.tt, plan.Untimed, streamT)
		}
	}
	// Streams named: each once, in order; one not held is ErrNoStream.
	plan, err = s.PlanTrimBefore(TrimBefore{Streams: []frames.StreamID{streamT, streamS, streamT}, Position: 2})
	if err != nil || len(plan.Reports) != 2 || plan.Reports[0].Stream != streamT || plan.Reports[1].Stream != streamS {
		t.Fatalf("streams T, S, T: %+v %v", plan, err)
	}
	_, err = s.PlanTrimBefore(TrimBefore{Streams: []frames.StreamID{{Node: "x", Life: 9}}, Position: 2})
	if !errors.Is(err, ErrNoStream) || err.Error() != s.Dir()+": no stream x#9 in this store" {
		t.Errorf("stream not held: %v", err)
	}
}

func TestStorePassedConsumers(t *testing.T) {
	s := stClockStore(t)
	if err := s.SaveConsumer("a", map[frames.StreamID]frames.Position{streamS: 4}); err != nil {
		t.Fatal(err)
	}
	plan, err := s.PlanTrimBefore(TrimBefore{Position: 5})
	if err != nil {
		t.Fatal(err)
	}
	passed, err := s.PassedConsumers(plan.Reports)
	if err != nil {
		t.Fatal(err)
	}
	// a has read S to 4: a horizon of 5 keeps what it needs; it has not
	// read T at all.
	want := []PassedConsumer{{Stream: streamT, Before: 5, Consumer: "a"}}
	if !slices.Equal(passed, want) {
		t.Fatalf("passed %+v, want %+v", passed, want)
	}
	if got := passed[0].String(); got != `node-beta#1732953600123456789: trimming below position 5 would pass consumer "a", which has not read this stream` {
		t.Errorf("String: %s", got)
	}
	plan, _ = s.PlanTrimBefore(TrimBefore{Streams: []frames.StreamID{streamS}, Position: 7})
	passed, err = s.PassedConsumers(plan.Reports)
	if err != nil || len(passed) != 1 || !passed[0].Read || passed[0].Cursor != 4 {
		t.Fatalf("S to 7: %+v %v", passed, err)
	}
	if got := passed[0].String(); got != `node-alpha#1: trimming below position 7 would pass consumer "a", whose saved cursor is 4 (it still needs 5 on)` {
		t.Errorf("String: %s", got)
	}
	// A plan that raises no horizon passes nobody.
	if _, err := s.Trim(streamS, 7); err != nil {
		t.Fatal(err)
	}
	if passed, err := s.PassedConsumers(plan.Reports); err != nil || len(passed) != 0 {
		t.Errorf("after the trim: %+v %v", passed, err)
	}
}

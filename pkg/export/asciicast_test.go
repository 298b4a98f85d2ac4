package export

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// castHeader is an asciicast v2 header, as the spec lists its fields.
type castHeader struct {
	Version       int               `json:"version"`
	Width         int               `json:"width"`
	Height        int               `json:"height"`
	Timestamp     *int64            `json:"timestamp"`
	Duration      *float64          `json:"duration"`
	IdleTimeLimit *float64          `json:"idle_time_limit"`
	Command       string            `json:"command"`
	Title         string            `json:"title"`
	Env           map[string]string `json:"env"`
	Theme         json.RawMessage   `json:"theme"`
}

// castEvent is one event line: [time, code, data].
type castEvent struct {
	Time float64
	Code string
	Data string
}

// parseCast decodes an asciicast v2 file strictly: a header of known
// fields with version 2 and a positive size, then events of three
// elements each (a time that never decreases, a known code, data that is
// a string of UTF-8), and nothing else.
func parseCast(t testing.TB, cast string) (castHeader, []castEvent) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(cast))
	sc.Buffer(nil, 16<<20)
	if !sc.Scan() {
		t.Fatal("empty asciicast")
	}
	var h castHeader
	dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		t.Fatalf("header %s: %v", sc.Text(), err)
	}
	if h.Version != 2 || h.Width <= 0 || h.Height <= 0 {
		t.Fatalf("header %s: want version 2 and a positive width and height", sc.Text())
	}
	var evs []castEvent
	prev := 0.0
	for n := 2; sc.Scan(); n++ {
		var raw []json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil || len(raw) != 3 {
			t.Fatalf("line %d %s: want [time, code, data] (%v)", n, sc.Text(), err)
		}
		var ev castEvent
		if err := json.Unmarshal(raw[0], &ev.Time); err != nil || ev.Time < prev || math.IsNaN(ev.Time) {
			t.Fatalf("line %d %s: time not a number at or after %v (%v)", n, sc.Text(), prev, err)
		}
		prev = ev.Time
		if err := json.Unmarshal(raw[1], &ev.Code); err != nil || !strings.Contains("o i m r", ev.Code) || len(ev.Code) != 1 {
			t.Fatalf("line %d %s: unknown event code", n, sc.Text())
		}
		if err := json.Unmarshal(raw[2], &ev.Data); err != nil || !utf8.ValidString(ev.Data) {
			t.Fatalf("line %d %s: data not a UTF-8 string (%v)", n, sc.Text(), err)
		}
		evs = append(evs, ev)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return h, evs
}

// TestAsciicastParsesAndTimesMatchClock exports the standard run and
// checks the file as asciicast v2, and that each output event's time is
// its frame's time in ds log --json=frames, less the first one's.
func TestAsciicastParsesAndTimesMatchClock(t *testing.T) {
	path := writeCapture(t, t.TempDir(), standardRun()...)
	cast, stderr, res := export(t, Options{Format: Asciicast, Title: "a run"}, path)
	if stderr != "" {
		t.Errorf("stderr %q", stderr)
	}
	h, evs := parseCast(t, cast)
	if h.Width != 80 || h.Height != 24 || h.Timestamp == nil || *h.Timestamp != fixtureStart/1e9 ||
		h.Command != "make -j2 'test it'" || h.Title != "a run" {
		t.Errorf("header %+v", h)
	}
	if res.Records != uint64(len(evs)) || res.Streams != 1 {
		t.Errorf("result %+v, %d events", res, len(evs))
	}

	// The frames of the text channels, as ds log --json=frames has them.
	var times []float64
	start := time.Time{}
	for _, line := range strings.Split(strings.TrimSpace(logJSON(t, true, path)), "\n") {
		var o struct {
			Channel string
			Time    time.Time
			Gap     json.RawMessage
		}
		if err := json.Unmarshal([]byte(line), &o); err != nil {
			t.Fatal(err)
		}
		if start.IsZero() {
			start = o.Time
		}
		switch {
		case o.Gap != nil: // a note has no "time": it is where the previous frame is
			times = append(times, times[len(times)-1])
		case strings.HasSuffix(o.Channel, ".stdout") || strings.HasSuffix(o.Channel, ".stderr"):
			times = append(times, o.Time.Sub(start).Seconds())
		}
	}
	if len(times) != len(evs) {
		t.Fatalf("%d events, %d text frames and gaps in ds log --json=frames:\n%s", len(evs), len(times), cast)
	}
	for i, ev := range evs {
		if math.Abs(ev.Time-times[i]) > 1e-6 {
			t.Errorf("event %d %+v: time %v, want %v (the clock record's)", i, ev, ev.Time, times[i])
		}
	}

	want := []castEvent{
		{0, "o", "building\r\n"},
		{0.01, "o", "warning: unused x\r\n"},
		{0.01, "o", "half a "},
		{0.26, "o", "line\r\nprice 10 "},
		{0.26, "o", "€\r\n"},
		{0.260005, "m", "position 10 missing (1 frame)"},
		{0.260005, "o", "bad \uFFFD byte\r\n"},
	}
	if diff := cmp.Diff(want, evs); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

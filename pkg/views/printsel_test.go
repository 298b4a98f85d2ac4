package views

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// clockAt is a datastream.clock record (channel 3 of printItems) at s
// seconds after the Unix epoch.
func clockFrame(pos uint64, s int64) frames.Frame {
	return on(3, pos, `{"unix_ns":`+strconv.FormatInt(s*1e9, 10)+`,"mono_ns":0}`)
}

// A line split across frames is found by -g, whole, in text and in JSON
// lines, and --json prints it once with its first and last position.
func TestGrepJoinedLine(t *testing.T) {
	frs := []frames.Frame{on(2, 0, "all good\nFA"), on(2, 1, "IL: x"), on(2, 2, "y\nok\n")}
	re, err := CompileGrep("fail")
	if err != nil {
		t.Fatal(err)
	}
	got := printItems(t, LogOptions{Select: Selection{Grep: re}}, frs...)
	if want := "     0  proc.trainer.stdout  FAIL: xy\n"; got != want {
		t.Fatalf("text: got %q, want %q", got, want)
	}
	got = printItems(t, LogOptions{Format: FormatJSON, Select: Selection{Grep: re}}, frs...)
	want := `{"stream":"node-alpha#1","node":"node-alpha","life":1,"position":0,"last_position":2,"channel":"proc.trainer.stdout","channel_id":2,"content":"TextStream","text":"FAIL: xy\n"}` + "\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("json (-want +got):\n%s", diff)
	}
	// Smart case: an upper-case letter makes the match exact.
	re, _ = CompileGrep("Fail")
	if got := printItems(t, LogOptions{Select: Selection{Grep: re}}, frs...); got != "" {
		t.Fatalf("Fail matched %q", got)
	}
}

// --json prints one object per line, the bytes exact; --json=frames one
// per frame.
func TestJSONLines(t *testing.T) {
	frs := []frames.Frame{clockFrame(0, 1), on(2, 1, "a\r\nb"), on(2, 2, "c\n\xff\n"), on(2, 3, "tail")}
	got := printItems(t, LogOptions{Format: FormatJSON}, frs...)
	const head = `{"stream":"node-alpha#1","node":"node-alpha","life":1,`
	const ch = `,"channel":"proc.trainer.stdout","channel_id":2,"content":"TextStream",`
	const tm = `"time":"1970-01-01T00:00:01Z"}` + "\n"
	want := head + `"position":1,"last_position":1` + ch + `"text":"a\r\n",` + tm +
		head + `"position":1,"last_position":2` + ch + `"text":"bc\n",` + tm +
		head + `"position":2,"last_position":2` + ch + `"text":"\ufffd\n","bytes_b64":"/wo=","utf8":false,` + tm +
		head + `"position":3,"last_position":3` + ch + `"text":"tail","partial":true,` + tm
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	got = printItems(t, LogOptions{Format: FormatJSON, JSONFrames: true}, frs...)
	if n := strings.Count(got, "\n"); n != 3 {
		t.Fatalf("--json=frames: %d objects, want 3:\n%s", n, got)
	}
}

func TestPositionsClipGaps(t *testing.T) {
	r := PositionRange{From: 2, To: 6}
	got := printItems(t, LogOptions{Select: Selection{Positions: &r}},
		on(2, 0, "zero\n"), on(2, 3, "three\n"), on(2, 8, "eight\n"))
	want := "" +
		"     ~  gap                  position 2 missing (1 frame)\n" +
		"     3  proc.trainer.stdout  three\n" +
		"     ~  gap                  positions 4–6 missing (3 frames)\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

func TestParsePositionRange(t *testing.T) {
	for _, tt := range []struct {
		in       string
		from, to frames.Position
		bad      bool
	}{
		{"3-5", 3, 5, false}, {"7", 7, 7, false}, {"4-", 4, ^frames.Position(0), false}, {"-9", 0, 9, false},
		{"5-3", 0, 0, true}, {"x", 0, 0, true}, {"-", 0, 0, true}, {"1-2-3", 0, 0, true},
	} {
		r, err := ParsePositionRange(tt.in)
		if (err != nil) != tt.bad || !tt.bad && (r.From != tt.from || r.To != tt.to) {
			t.Errorf("%q: %+v, %v", tt.in, r, err)
		}
	}
}

// --since +5s is 5 s after the first clock reading; frames before a
// stream's first reading are not placed in time.
func TestSinceFromStart(t *testing.T) {
	b, err := ParseTimeBound("+5s", time.Now(), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	p := NewPrinter(&out, LogOptions{Select: Selection{Since: &b}})
	p.Stream(frames.StreamDescriptor{Stream: S})
	p.Channel(frames.ChannelDescriptor{Stream: S, ID: 2, Name: "out", Content: frames.TextStream()})
	p.Channel(frames.ChannelDescriptor{Stream: S, ID: 3, Name: "datastream.clock", Content: frames.JSONRecord("datastream.clock")})
	a := segments.NewAssembler(0, p.Item)
	for _, f := range []frames.Frame{on(2, 0, "before any clock\n"), clockFrame(1, 100), on(2, 2, "at 100\n"),
		clockFrame(3, 104), on(2, 4, "at 104\n"), clockFrame(5, 105), on(2, 6, "at 105\n"), clockFrame(7, 200), on(2, 8, "at 200\n")} {
		a.Add(S, f)
	}
	a.Flush()
	p.Close()
	want := "     6  out               at 105\n     8  out               at 200\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

func TestParseTimeBound(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		in   string
		want time.Time
		rel  time.Duration
	}{
		{"-10m", now.Add(-10 * time.Minute), 0},
		{"+30s", time.Time{}, 30 * time.Second},
		{"@1764583200", time.Unix(1764583200, 0), 0},
		{"2026-12-01 09:30", time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC), 0},
		{"2026-12-01 09:30:05.5", time.Date(2026, 12, 1, 9, 30, 5, 5e8, time.UTC), 0},
		{"2026-11-30", time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), 0},
		{"08:15", time.Date(2026, 12, 1, 8, 15, 0, 0, time.UTC), 0},
		{"2026-12-01T10:00:00+01:00", time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), 0},
		{"yesterday", time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), 0},
	} {
		b, err := ParseTimeBound(tt.in, now, time.UTC)
		if err != nil {
			t.Errorf("%q: %v", tt.in, err)
			continue
		}
		if tt.rel != 0 {
			if !b.FromStart || b.Offset != tt.rel {
				t.Errorf("%q: %+v", tt.in, b)
			}
			continue
		}
		if b.FromStart || b.UnixNS != tt.want.UnixNano() {
			t.Errorf("%q: %v, want %v", tt.in, time.Unix(0, b.UnixNS).UTC(), tt.want)
		}
	}
	for _, bad := range []string{"", "soon", "+x", "-5", "2026-13-01", "@NaN", "@1e30", "@x"} {
		if _, err := ParseTimeBound(bad, now, time.UTC); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestTimeColumn(t *testing.T) {
	frs := []frames.Frame{on(2, 0, "early\n"), clockFrame(1, 100), on(2, 2, "a\n"), clockFrame(3, 103), on(2, 4, "b\n")}
	for _, tt := range []struct {
		mode TimeMode
		want string
	}{
		{TimeWall, "" +
			"     0  -                           proc.trainer.stdout  early\n" +
			"     2  1970-01-01T00:01:40.000000Z  proc.trainer.stdout  a\n" +
			"     4  1970-01-01T00:01:43.000000Z  proc.trainer.stdout  b\n"},
		{TimeSinceStart, "" +
			"     0            -  proc.trainer.stdout  early\n" +
			"     2    +0.000000  proc.trainer.stdout  a\n" +
			"     4    +3.000000  proc.trainer.stdout  b\n"},
		{TimeDelta, "" +
			"     0            -  proc.trainer.stdout  early\n" +
			"     2    +0.000000  proc.trainer.stdout  a\n" +
			"     4    +3.000000  proc.trainer.stdout  b\n"},
		{TimeUnix, "" +
			"     0                     -  proc.trainer.stdout  early\n" +
			"     2         100.000000000  proc.trainer.stdout  a\n" +
			"     4         103.000000000  proc.trainer.stdout  b\n"},
	} {
		got := printItems(t, LogOptions{Time: tt.mode, UTC: true}, frs...)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("mode %d (-want +got):\n%s", tt.mode, diff)
		}
	}
}

// A run given a cursor shows what follows it, says when frames after it
// are gone (trimmed), and reports the cursor of what it printed.
func TestCursorResume(t *testing.T) {
	print := func(after segments.Cursor, fs ...frames.Frame) (string, segments.Cursor) {
		var out bytes.Buffer
		p := NewPrinter(&out, LogOptions{Select: Selection{After: after}})
		sink := NewLogSink(p, 0)
		sink.Header(segments.SegmentHeader{Stream: frames.StreamDescriptor{Stream: S}, Channels: []frames.ChannelDescriptor{{Stream: S, ID: 2, Name: "out", Content: frames.TextStream()}}})
		for _, f := range fs {
			sink.Frame(S, f)
		}
		sink.A.Flush()
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		return out.String(), p.Cursor()
	}
	got, cur := print(nil, on(2, 0, "a\n"), on(2, 1, "b\n"))
	if got != "     0  out               a\n     1  out               b\n" || cur[S] != 1 {
		t.Fatalf("first run %q, cursor %v", got, cur)
	}
	got, cur = print(cur, on(2, 0, "a\n"), on(2, 1, "b\n"), on(2, 2, "c\n"))
	if got != "     2  out               c\n" || cur[S] != 2 {
		t.Fatalf("second run %q, cursor %v", got, cur)
	}
	// The input now starts at 6: 3..5 went while the reader was away.
	got, cur = print(cur, on(2, 6, "g\n"))
	want := "" +
		"     ~  trimmed           positions 3–5 after the cursor are no longer in the input (3 frames)\n" +
		"     6  out               g\n"
	if diff := cmp.Diff(want, got); diff != "" || cur[S] != 6 {
		t.Fatalf("third run (-want +got):\n%s\ncursor %v", diff, cur)
	}
	// A stream the run did not see keeps its entry.
	other := frames.StreamID{Node: "gone", Life: 1}
	_, cur = print(segments.Cursor{other: 9, S: 6}, on(2, 7, "h\n"))
	if cur[other] != 9 || cur[S] != 7 {
		t.Fatalf("cursor %v", cur)
	}
}

func TestSelectionFilters(t *testing.T) {
	s2 := frames.StreamID{Node: "node-beta", Life: 2}
	print := func(sel Selection) (string, []string) {
		var out bytes.Buffer
		p := NewPrinter(&out, LogOptions{Select: sel})
		p.Stream(frames.StreamDescriptor{Stream: S})
		p.Stream(frames.StreamDescriptor{Stream: s2, Origin: frames.OriginBootstrap})
		for _, s := range []frames.StreamID{S, s2} {
			p.Channel(frames.ChannelDescriptor{Stream: s, ID: 1, Name: "app.log", Content: frames.TextStream()})
			p.Channel(frames.ChannelDescriptor{Stream: s, ID: 2, Name: "app.metrics", Content: frames.JSONRecord("m")})
			p.Item(segments.Item{Kind: segments.ItemFrame, Stream: s, Frame: on(1, 0, "line\n")})
			p.Item(segments.Item{Kind: segments.ItemFrame, Stream: s, Frame: on(2, 1, `{"v":1}`)})
			p.Item(segments.Item{Kind: segments.ItemGap, Stream: s, Gap: segments.Gap{From: 2, To: 2, Count: 1}})
		}
		p.Close()
		return out.String(), p.Unmatched()
	}
	got, un := print(Selection{Nodes: []frames.NodeID{"node-beta"}, Contents: []frames.ContentKind{frames.KindJSONRecord}})
	want := "" +
		"     1  app.metrics       {\"v\":1}\n" +
		"     ~  gap               position 2 missing (1 frame)\n"
	if diff := cmp.Diff(want, got); diff != "" || len(un) != 0 {
		t.Fatalf("(-want +got):\n%s\nunmatched %v", diff, un)
	}
	got, _ = print(Selection{Origins: []frames.StreamOrigin{frames.OriginBootstrap}, Channels: []frames.ChannelFilter{frames.NameChannel("app.log")}})
	if !strings.Contains(got, "     0  app.log") || strings.Contains(got, "node-alpha") || strings.Contains(got, "metrics") {
		t.Fatalf("origin+channel:\n%s", got)
	}
	_, un = print(Selection{Channels: []frames.ChannelFilter{frames.NameChannel("nosuch"), frames.PrefixChannels("app.")},
		Nodes: []frames.NodeID{"n9"}, Streams: []frames.StreamID{S}})
	// A channel counts as matched only in a stream that is shown.
	if diff := cmp.Diff([]string{"-c nosuch", "-c app.*", "--node n9"}, un); diff != "" {
		t.Fatalf("unmatched (-want +got):\n%s", diff)
	}
}

// The stream column is on from the first line when the printer is told of
// several streams, and the output is not held back to decide.
func TestStreamColumnExpected(t *testing.T) {
	var out bytes.Buffer
	p := NewPrinter(&out, LogOptions{})
	s2 := frames.StreamID{Node: "node-beta", Life: 2}
	p.Expect([]frames.StreamID{S, s2})
	p.Channel(frames.ChannelDescriptor{Stream: S, ID: 1, Name: "a", Content: frames.TextStream()})
	p.Item(segments.Item{Kind: segments.ItemFrame, Stream: S, Frame: on(1, 0, "one\n")})
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "node-alpha       0  a                 one\n" {
		t.Fatalf("first line %q (node names are unambiguous: the node alone)", got)
	}
	// One stream: no column, and the first line is out at once.
	out.Reset()
	p = NewPrinter(&out, LogOptions{})
	p.Channel(frames.ChannelDescriptor{Stream: S, ID: 1, Name: "a", Content: frames.TextStream()})
	p.Item(segments.Item{Kind: segments.ItemFrame, Stream: S, Frame: on(1, 0, "one\n")})
	p.Flush()
	if got := out.String(); got != "     0  a                 one\n" {
		t.Fatalf("single stream %q", got)
	}
}

// FuzzJSONLinesExact: however a text channel's bytes are cut into frames,
// the "text" (or "bytes_b64") of ds log --json's per-line objects, in
// order, are those bytes exactly: lines are joined across frames and
// nothing is added or lost. Every object has a "text", lossy where the
// line is not UTF-8.
func FuzzJSONLinesExact(f *testing.F) {
	f.Add([]byte("one\ntwo\r\nthree"), []byte{2, 5})
	f.Add([]byte("\xff\xfe\n\n\r\rx\n"), []byte{1, 1, 1})
	f.Add([]byte("a\x1b[2Jb\u202ec\n"), []byte{0, 3})
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		var frs []frames.Frame
		rest := data
		for i := 0; len(rest) > 0; i++ {
			n := len(rest)
			if i < len(cuts) {
				n = min(n, int(cuts[i])+1)
			}
			frs = append(frs, on(2, uint64(len(frs)), string(rest[:n])))
			rest = rest[n:]
		}
		out := printItems(t, LogOptions{Format: FormatJSON}, frs...)
		var got []byte
		for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			if line == "" {
				continue
			}
			var obj struct {
				Text  *string `json:"text"`
				Bytes []byte  `json:"bytes_b64"`
			}
			if err := json.Unmarshal([]byte(line), &obj); err != nil {
				t.Fatalf("not JSON: %q: %v", line, err)
			}
			if obj.Text == nil {
				// jq 'select(.text|test("FAIL"))' must work on every line.
				t.Fatalf("no text: %q", line)
			}
			if obj.Bytes != nil {
				// Not UTF-8: "text" is the lossy form, a U+FFFD
				// for each bad byte.
				if want := string([]rune(string(obj.Bytes))); *obj.Text != want {
					t.Fatalf("text %q of bytes %q, want %q", *obj.Text, obj.Bytes, want)
				}
				got = append(got, obj.Bytes...)
			} else {
				got = append(got, *obj.Text...)
			}
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("joined %q, want %q\n%s", got, data, out)
		}
	})
}

// FuzzParseTimeBound: no input makes ParseTimeBound or
// ParsePositionRange panic (segments.FuzzParseCursor fuzzes cursors).
func FuzzParseTimeBound(f *testing.F) {
	f.Add("n1#7=42,we%20ird#1=0")
	f.Add("%zz#1=1")
	f.Add("@1e300")
	f.Fuzz(func(t *testing.T, s string) {
		ParseTimeBound(s, time.Unix(1764583200, 0), time.UTC)
		ParsePositionRange(s)
	})
}

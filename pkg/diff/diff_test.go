package diff

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/sources"
	"github.com/ds-telemetry/ds/pkg/viewer"
)

// fixture is a run as ds wrap --host records it, at made-up times.
type fixture struct {
	node  string
	label string
	life  uint64
	// steps: "MS out|err TEXT", a line at MS ms after the start.
	steps []string
	exit  int // exit code; -N: killed by signal N
	user  int64
	rss   int64
	cpu   []float64 // host.cpu total_percent samples
	mem   []uint64  // host.mem used bytes samples (of 8 GiB)
	gapAt int       // a position left out (a gap) when > 0
}

const fixtureStart = int64(1_764_584_000_000_000_000)

func writeFixture(t testing.TB, dir, name string, fx fixture) string {
	t.Helper()
	s := frames.StreamID{Node: frames.NodeID(fx.node), Life: frames.Life(fx.life)}
	ch := func(id frames.ChannelID, name string, c frames.ChannelContent) frames.ChannelDescriptor {
		return frames.ChannelDescriptor{Stream: s, ID: id, Name: name, Content: c}
	}
	cat := []frames.ChannelDescriptor{
		ch(1, frames.ClockChannel, frames.JSONRecord("datastream.clock")),
		ch(2, "proc."+fx.label+".stdout", frames.TextStream()),
		ch(3, "proc."+fx.label+".stderr", frames.TextStream()),
		ch(4, "proc."+fx.label+".lifecycle", frames.JSONRecord("proc.lifecycle")),
		ch(5, "host.cpu", frames.JSONRecord("host.cpu")),
		ch(6, "host.mem", frames.JSONRecord("host.mem")),
	}
	var buf bytes.Buffer
	w, err := segments.NewWriter(&buf, frames.StreamDescriptor{Stream: s}, cat, segments.WriterOptions{Compression: segments.CompressNone})
	if err != nil {
		t.Fatal(err)
	}
	pos := frames.Position(0)
	put := func(id frames.ChannelID, payload string) {
		if fx.gapAt > 0 && pos == frames.Position(fx.gapAt) {
			pos++
		}
		if err := w.WriteFrame(frames.Frame{Channel: id, Position: pos, Payload: []byte(payload)}); err != nil {
			t.Fatal(err)
		}
		pos++
	}
	clock := func(ms int64) {
		put(1, fmt.Sprintf(`{"unix_ns":%d,"mono_ns":%d}`, fixtureStart+ms*1e6, ms*1e6+1))
	}
	clock(0)
	put(4, `{"event":"started","pid":4242,"argv":["make","test"],"cwd":"/src"}`)
	for i, c := range fx.cpu {
		put(5, fmt.Sprintf(`{"schema":"host.cpu.v1","seq":%d,"host":{"total_percent":%g}}`, i, c))
	}
	for i, m := range fx.mem {
		put(6, fmt.Sprintf(`{"schema":"host.mem.v1","seq":%d,"total_bytes":8589934592,"available_bytes":%d,"used_percent":%.1f}`, i, 8589934592-m, float64(m)*100/8589934592))
	}
	last := int64(-1)
	var end int64
	for _, st := range fx.steps {
		var ms int64
		var which, text string
		if _, err := fmt.Sscanf(st, "%d %s", &ms, &which); err != nil {
			t.Fatalf("step %q: %v", st, err)
		}
		text = strings.SplitN(st, " ", 3)[2]
		if ms != last {
			clock(ms)
			last = ms
		}
		id := frames.ChannelID(2)
		if which == "err" {
			id = 3
		}
		put(id, text+"\n")
		end = ms
	}
	end += 100
	clock(end)
	status := fmt.Sprintf(`{"kind":"code","value":%d}`, fx.exit)
	if fx.exit < 0 {
		status = fmt.Sprintf(`{"kind":"signal","value":%d}`, -fx.exit)
	}
	put(4, fmt.Sprintf(`{"event":"exited","status":%s,"wall_ns":%d,"user_ns":%d,"sys_ns":250000000,"max_rss_bytes":%d}`, status, end*1e6, fx.user, fx.rss))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// diffFiles reads and compares two inputs.
func diffFiles(t *testing.T, a, b string, opts Options) (*Result, string) {
	t.Helper()
	var stderr bytes.Buffer
	r := &viewer.Inputs{Set: sources.NewSet(sources.Options{}), Stderr: &stderr}
	ra, err := Read(context.Background(), r, a, opts)
	if err != nil {
		t.Fatalf("Read %s: %v (%s)", a, err, stderr.String())
	}
	rb, err := Read(context.Background(), r, b, opts)
	if err != nil {
		t.Fatalf("Read %s: %v (%s)", b, err, stderr.String())
	}
	return Compare(ra, rb, opts), stderr.String()
}

var (
	runA = fixture{node: "ci", label: "make", life: 1, user: 1_500_000_000, rss: 50 << 20,
		cpu: []float64{20, 55.5, 40}, mem: []uint64{1 << 30, 3 << 29},
		steps: []string{
			"0 out make: entering /tmp/go-build123/src",
			"100 out compiling a.c",
			"200 out compiling b.c",
			"12200 out linking app (took 12.0s)",
			"12300 out running 5 tests",
			"12300 out ok test_parse 0.01s",
			"12400 out ok test_eval 0.02s",
			"12400 err warning: cache 3fa9c21e stale",
			"12500 out ok test_print 0.01s",
			"12500 out done",
		}}
	runB = fixture{node: "ci", label: "build", life: 2, exit: 2, user: 4_000_000_000, rss: 80 << 20,
		cpu: []float64{30, 99}, mem: []uint64{2 << 30},
		steps: []string{
			"0 out make: entering /tmp/go-build987/src",
			"100 out compiling a.c",
			"200 out compiling b.c",
			"40200 out linking app (took 40.0s)",
			"40300 out running 6 tests",
			"40300 out ok test_parse 0.03s",
			"40400 out FAIL test_eval: want 3, got 4",
			"40400 err warning: cache 9bc01d2f stale",
			"40500 out ok test_print 0.01s",
			"40500 out ok test_new 0.01s",
			"40600 out done",
		}}
)

var update = os.Getenv("DS_UPDATE") != ""

// golden compares got with the file at path (DS_UPDATE=1 writes it).
func golden(t *testing.T, path, got string) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (DS_UPDATE=1 writes it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (DS_UPDATE=1 rewrites it); got:\n%s", path, got)
	}
}

func TestDiffGolden(t *testing.T) {
	dir := t.TempDir()
	writeFixture(t, dir, "a.dss", runA)
	writeFixture(t, dir, "b.dss", runB)
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	a, b := "a.dss", "b.dss"
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"basic", Options{Context: 3, Timing: 10, TimingMinNS: 1e9}},
		{"context1", Options{Context: 1, Timing: 2, TimingMinNS: 1e9}},
		{"exact", Options{Context: 0, Matcher: Matcher{Exact: true}}},
		{"ignore", Options{Context: 1, Matcher: Matcher{Ignore: []*regexp.Regexp{regexp.MustCompile(`^ok .*`), regexp.MustCompile(`running`)}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, stderr := diffFiles(t, a, b, tc.opts)
			if stderr != "" {
				t.Errorf("stderr %q", stderr)
			}
			var text, js bytes.Buffer
			if err := res.WriteText(&text, false); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join(wd, "testdata", tc.name+".txt"), text.String())
			if err := res.WriteJSON(&js); err != nil {
				t.Fatal(err)
			}
			if !json.Valid(js.Bytes()) {
				t.Fatalf("invalid JSON:\n%s", js.String())
			}
			golden(t, filepath.Join(wd, "testdata", tc.name+".json"), js.String())
		})
	}
}

func TestDiffSame(t *testing.T) {
	dir := t.TempDir()
	a := writeFixture(t, dir, "a.dss", runA)
	// Another run of the same job: other numbers, ids, temporary
	// directory and times, another label; the same lines once masked.
	other := runA
	other.life, other.label = 9, "make2"
	other.steps = append([]string(nil), runA.steps...)
	other.steps[0] = "0 out make: entering /tmp/go-build555/src"
	other.steps[7] = "12400 err warning: cache 77aa0b1c stale"
	other.steps[5] = "12300 out ok test_parse 0.09s"
	b := writeFixture(t, dir, "b.dss", other)
	res, _ := diffFiles(t, a, b, Options{Context: 3})
	if !res.Same || res.Removed+res.Added != 0 || len(res.Hunks) != 0 {
		t.Errorf("same job: Same %v, removed %d, added %d, %d hunks", res.Same, res.Removed, res.Added, len(res.Hunks))
	}
	res, _ = diffFiles(t, a, b, Options{Context: 3, Matcher: Matcher{Exact: true}})
	if res.Same || res.Removed != 3 || res.Added != 3 {
		t.Errorf("--exact: Same %v, removed %d, added %d; want 3 and 3", res.Same, res.Removed, res.Added)
	}
	// The exit status alone makes runs differ.
	other.steps, other.exit = runA.steps, -9
	c := writeFixture(t, dir, "c.dss", other)
	res, _ = diffFiles(t, a, c, Options{})
	if res.Same || !res.ExitDiffers || res.Removed+res.Added != 0 {
		t.Errorf("exit status: Same %v, ExitDiffers %v", res.Same, res.ExitDiffers)
	}
}

func TestDiffLossesAndColor(t *testing.T) {
	dir := t.TempDir()
	a := writeFixture(t, dir, "a.dss", runA)
	g := runA
	g.gapAt = 12
	g.steps = append([]string(nil), runA.steps...)
	g.steps[1] = "100 out compiling \x1b[31ma.c\x1b[0m \x1b[2J"
	b := writeFixture(t, dir, "b.dss", g)
	res, _ := diffFiles(t, a, b, Options{Context: 0})
	if res.B.Losses.Gaps != 1 {
		t.Errorf("losses %+v, want 1 gap", res.B.Losses)
	}
	var plain, color bytes.Buffer
	res.WriteText(&plain, false)
	res.WriteText(&color, true)
	if !strings.Contains(plain.String(), "capture losses  none") || !strings.Contains(plain.String(), `compiling \x1b[31ma.c\x1b[0m \x1b[2J`) {
		t.Errorf("plain output lacks the losses row or the escaped line:\n%s", plain.String())
	}
	if !strings.Contains(color.String(), "\x1b[32m+") || !strings.Contains(color.String(), "compiling \x1b[31ma.c\x1b[0m \\x1b[2J") {
		t.Errorf("coloured output: want a green + line with the line's SGR passed and the rest escaped:\n%q", color.String())
	}
}

func TestReadLimit(t *testing.T) {
	dir := t.TempDir()
	a := writeFixture(t, dir, "a.dss", runA)
	r := &viewer.Inputs{Set: sources.NewSet(sources.Options{}), Stderr: &bytes.Buffer{}}
	_, err := Read(context.Background(), r, a, Options{MaxLines: 4})
	var le *LimitError
	if !errorsAs(err, &le) || le.Max != 4 {
		t.Fatalf("Read with MaxLines 4: %v, want a *LimitError", err)
	}
}

func errorsAs(err error, target **LimitError) bool {
	le, ok := err.(*LimitError)
	if ok {
		*target = le
	}
	return ok
}

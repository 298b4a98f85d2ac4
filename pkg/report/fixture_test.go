package report

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/sources"
	"github.com/ds-telemetry/ds/pkg/viewer"
)

// run is what writeRun writes: a process's run as ds wrap --host 1s
// records it.
type run struct {
	lines   []string // stdout lines, one frame each, a tick apart
	stderr  []string // stderr lines, after the stdout lines
	samples int      // host.cpu and host.mem samples, one a second
	exit    int      // the exit code
	gapAt   int      // a position left out (a gap) when > 0
}

// fixtureStart is the fixture's first clock reading, ns since the Unix
// epoch.
const fixtureStart = int64(1_764_584_000_000_000_000)

// writeRun writes r as a capture file in dir and returns its path. Time
// advances 10 ms a frame; host samples are spread over the run.
func writeRun(t testing.TB, dir string, r run) string {
	t.Helper()
	s := frames.StreamID{Node: "ci-7", Life: 42}
	ch := func(id frames.ChannelID, name string, c frames.ChannelContent) frames.ChannelDescriptor {
		return frames.ChannelDescriptor{Stream: s, ID: id, Name: name, Content: c}
	}
	cat := []frames.ChannelDescriptor{
		ch(1, frames.ClockChannel, frames.JSONRecord("datastream.clock")),
		ch(2, "proc.make.stdout", frames.TextStream()),
		ch(3, "proc.make.stderr", frames.TextStream()),
		ch(4, "proc.make.lifecycle", frames.JSONRecord("proc.lifecycle")),
		ch(5, "host.cpu", frames.JSONRecord("host.cpu")),
		ch(6, "host.mem", frames.JSONRecord("host.mem")),
	}
	var buf bytes.Buffer
	w, err := segments.NewWriter(&buf, frames.StreamDescriptor{Stream: s}, cat, segments.WriterOptions{Compression: segments.CompressZstd})
	if err != nil {
		t.Fatal(err)
	}
	pos := frames.Position(0)
	ns := fixtureStart
	put := func(id frames.ChannelID, payload string) {
		if r.gapAt > 0 && pos == frames.Position(r.gapAt) {
			pos++ // assigned, never stored
		}
		if err := w.WriteFrame(frames.Frame{Channel: id, Position: pos, Payload: []byte(payload)}); err != nil {
			t.Fatal(err)
		}
		pos++
	}
	tick := func() {
		put(1, fmt.Sprintf(`{"unix_ns":%d,"mono_ns":%d}`, ns, ns-fixtureStart+1))
		ns += 10_000_000
	}
	total := len(r.lines) + len(r.stderr)
	every := max(total/max(r.samples, 1), 1)
	sample := 0
	hostSample := func() {
		if sample >= r.samples {
			return
		}
		sample++
		ms := ns / 1e6
		put(5, fmt.Sprintf(`{"schema":"host.cpu.v1","seq":%d,"sample_unix_ms":%d,"host":{"logical_cpus":2,"total_percent":%d}}`, sample, ms, 10*sample%100))
		put(6, fmt.Sprintf(`{"schema":"host.mem.v1","seq":%d,"sample_unix_ms":%d,"used_percent":%d.5}`, sample, ms, 20+sample))
	}
	tick()
	put(4, `{"event":"started","pid":4242,"argv":["make","-j2","test"],"cwd":"/src"}`)
	for i, l := range r.lines {
		if i%every == 0 {
			hostSample()
		}
		tick()
		put(2, l+"\n")
	}
	for _, l := range r.stderr {
		tick()
		put(3, l+"\n")
	}
	for sample < r.samples {
		tick()
		hostSample()
	}
	tick()
	put(4, fmt.Sprintf(`{"event":"exited","status":{"kind":"code","value":%d},"exit_code":%d,"wall_ns":%d,"user_ns":1500000000,"sys_ns":250000000,"max_rss_bytes":52428800}`, r.exit, r.exit, ns-fixtureStart))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "run.dss")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// buildPage builds the page of the named inputs with opts.
func buildPage(t testing.TB, opts Options, names ...string) (string, Result, string) {
	t.Helper()
	var out, stderr bytes.Buffer
	r := &viewer.Inputs{Set: sources.NewSet(sources.Options{}), Stderr: &stderr}
	res, err := Build(context.Background(), r, names, opts, &out)
	if err != nil {
		t.Fatalf("Build: %v (stderr %q)", err, stderr.String())
	}
	if int64(out.Len()) != res.Bytes {
		t.Errorf("Result.Bytes %d, wrote %d", res.Bytes, out.Len())
	}
	return out.String(), res, stderr.String()
}

package export

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
	"github.com/ds-telemetry/ds/pkg/views"
)

// fixtureStart is the fixture's first clock reading, ns since the Unix
// epoch (2025-12-01T10:13:20Z).
const fixtureStart = int64(1_764_584_000_000_000_000)

// fixtureStream is the fixture's stream.
var fixtureStream = frames.StreamID{Node: "ci-7", Life: 42}

// step is one thing the fixture writes: a frame of channel ch (a clock
// reading when ch is 1: advance is then the ns since the previous one),
// or a position left out (gap).
type step struct {
	ch      frames.ChannelID
	payload string
	advance int64
	gap     bool
}

func tick(advanceNS int64) step     { return step{ch: 1, advance: advanceNS} }
func out(s string) step             { return step{ch: 2, payload: s} }
func errOut(s string) step          { return step{ch: 3, payload: s} }
func life(s string) step            { return step{ch: 4, payload: s} }
func raw(s string) step             { return step{ch: 5, payload: s} }
func gapStep() step                 { return step{gap: true} }
func stepBack(advanceNS int64) step { return step{ch: 1, advance: advanceNS, payload: "back"} }

// writeCapture writes the steps as a capture file in dir, of a process
// labelled make (channels datastream.clock, proc.make.stdout, .stderr,
// .lifecycle and a Bytes channel app.blob), and returns its path. A
// clock reading's mono_ns always advances by advance; stepBack sets the
// wall clock back 10 s as well.
func writeCapture(t testing.TB, dir string, steps ...step) string {
	t.Helper()
	return writeStream(t, filepath.Join(dir, "run.dss"), fixtureStream, 0, steps...)
}

// writeStream is writeCapture of stream s to path, its clock offset
// by offsetNS.
func writeStream(t testing.TB, path string, s frames.StreamID, offsetNS int64, steps ...step) string {
	t.Helper()
	ch := func(id frames.ChannelID, name string, c frames.ChannelContent) frames.ChannelDescriptor {
		return frames.ChannelDescriptor{Stream: s, ID: id, Name: name, Content: c}
	}
	cat := []frames.ChannelDescriptor{
		ch(1, frames.ClockChannel, frames.JSONRecord("datastream.clock")),
		ch(2, "proc.make.stdout", frames.TextStream()),
		ch(3, "proc.make.stderr", frames.TextStream()),
		ch(4, "proc.make.lifecycle", frames.JSONRecord("proc.lifecycle")),
		ch(5, "app.blob", frames.Bytes()),
	}
	label := "make"
	var buf bytes.Buffer
	w, err := segments.NewWriter(&buf, frames.StreamDescriptor{Stream: s, Label: &label}, cat, segments.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pos := frames.Position(0)
	wall, mono := fixtureStart+offsetNS, int64(1_000_000)
	for _, st := range steps {
		if st.gap {
			pos++
			continue
		}
		p := st.payload
		if st.ch == 1 {
			wall, mono = wall+st.advance, mono+st.advance
			if st.payload == "back" {
				wall -= 10e9
			}
			p = fmt.Sprintf(`{"unix_ns":%d,"mono_ns":%d}`, wall, mono)
		}
		if err := w.WriteFrame(frames.Frame{Channel: st.ch, Position: pos, Payload: []byte(p)}); err != nil {
			t.Fatal(err)
		}
		pos++
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// standardRun is the fixture most tests export: a run of make with
// stdout and stderr lines, a line split across frames, a UTF-8
// character split across frames, a byte that is not UTF-8, a gap and a
// bytes frame.
func standardRun() []step {
	return []step{
		tick(0),
		life(`{"event":"started","pid":4242,"argv":["make","-j2","test it"],"cwd":"/src","label":"make"}`),
		out("building\n"),
		tick(10_000_000),
		errOut("warning: unused x\n"),
		out("half a "),
		tick(250_000_000),
		out("line\nprice 10 \xe2\x82"),
		out("\xac\n"),
		tick(5_000),
		gapStep(),
		out("bad \xff byte\n"),
		raw("\x00\x01blob"),
		tick(1_500_000_000),
		life(`{"event":"exited","status":{"kind":"code","value":2},"exit_code":2}`),
	}
}

// export runs Write on the named inputs and returns what it wrote and
// its stderr.
func export(t testing.TB, opts Options, names ...string) (string, string, Result) {
	t.Helper()
	var w, stderr bytes.Buffer
	r := &viewer.Inputs{Set: sources.NewSet(sources.Options{}), Stderr: &stderr}
	res, err := Write(context.Background(), r, names, opts, &w)
	if err != nil {
		t.Fatalf("Write: %v (stderr %q)", err, stderr.String())
	}
	return w.String(), stderr.String(), res
}

// logJSON returns what ds log --json (--json=frames with frames) prints
// of the named inputs.
func logJSON(t testing.TB, framesMode bool, names ...string) string {
	t.Helper()
	var w, stderr bytes.Buffer
	r := &viewer.Inputs{Set: sources.NewSet(sources.Options{}), Stdout: &w, Stderr: &stderr}
	if _, err := r.Log(context.Background(), names, views.LogOptions{Format: views.FormatJSON, JSONFrames: framesMode}, false); err != nil {
		t.Fatalf("Log: %v (stderr %q)", err, stderr.String())
	}
	return w.String()
}

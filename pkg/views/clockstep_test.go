package views

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// clockRec is a datastream.clock payload.
func clockRec(unix, mono int64) string {
	return fmt.Sprintf(`{"unix_ns":%d,"mono_ns":%d}`, unix, mono)
}

const t0 = int64(1732953600000000000)

// A step is the wall clock moving more than ClockStepTolerance beyond the
// monotonic clock between two readings (issue 22 item 3).
func TestClockStepper(t *testing.T) {
	ms := int64(1e6)
	tests := []struct {
		name     string
		payloads []string
		want     []ClockStep
	}{
		{"clocks move alike", []string{clockRec(t0, 0), clockRec(t0+100*ms, 100*ms), clockRec(t0+3600e9, 3600e9)}, nil},
		{"jitter below the tolerance", []string{clockRec(t0, 0), clockRec(t0+150*ms, 100*ms), clockRec(t0+150*ms, 150*ms)}, nil},
		{"set back 5 s", []string{clockRec(t0, 0), clockRec(t0+100*ms-5e9, 100*ms)},
			[]ClockStep{{Position: 1, After: 0, StepNS: -5e9, ElapsedNS: 100 * ms, FromUnixNS: t0, ToUnixNS: t0 + 100*ms - 5e9}}},
		{"a machine that slept an hour", []string{clockRec(t0, 0), clockRec(t0+3600e9+ms, ms)},
			[]ClockStep{{Position: 1, After: 0, StepNS: 3600e9, ElapsedNS: ms, FromUnixNS: t0, ToUnixNS: t0 + 3600e9 + ms}}},
		{"against the previous reading", []string{clockRec(t0, 0), clockRec(t0-2e9+ms, ms), clockRec(t0-2e9+2*ms, 2*ms), clockRec(t0+3*ms, 3*ms)},
			[]ClockStep{
				{Position: 1, After: 0, StepNS: -2e9, ElapsedNS: ms, FromUnixNS: t0, ToUnixNS: t0 - 2e9 + ms},
				{Position: 3, After: 2, StepNS: 2e9, ElapsedNS: ms, FromUnixNS: t0 - 2e9 + 2*ms, ToUnixNS: t0 + 3*ms},
			}},
		{"a monotonic clock that stands still is none", []string{clockRec(t0, 0), clockRec(t0+5e9, 0), clockRec(t0-5e9, 0)}, nil},
		{"no mono_ns: no step", []string{`{"unix_ns":1732953600000000000}`, `{"unix_ns":1732953500000000000}`}, nil},
		{"monotonic clock going back: another clock, no step", []string{clockRec(t0, 5e9), clockRec(t0-10e9, 0)}, nil},
		{"a record that does not decode is skipped", []string{clockRec(t0, 0), `{"unix_ns":"x"}`, clockRec(t0+ms-1e9, ms)},
			[]ClockStep{{Position: 2, After: 0, StepNS: -1e9, ElapsedNS: ms, FromUnixNS: t0, ToUnixNS: t0 + ms - 1e9}}},
		{"the writer's form and any other decode alike", []string{clockRec(t0, 0), `{ "mono_ns": 1000000, "unix_ns": 1732953590001000000, "x": 1 }`},
			[]ClockStep{{Position: 1, StepNS: -10e9, ElapsedNS: ms, FromUnixNS: t0, ToUnixNS: t0 - 10e9 + ms}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c clockStepper
			var got []ClockStep
			for i, p := range tt.payloads {
				r, ok := decodeClockReading(frames.Position(i), []byte(p))
				if !ok {
					continue
				}
				if s, ok := c.next(r); ok {
					got = append(got, s)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			// clockRuns finds the same steps from the readings in any
			// order.
			for seed := range uint64(20) {
				rng := rand.New(rand.NewPCG(seed, 1))
				var runs clockRuns
				budget := 100
				for _, i := range rng.Perm(len(tt.payloads)) {
					if r, ok := decodeClockReading(frames.Position(i), []byte(tt.payloads[i])); ok {
						runs.add(r, &budget)
					}
				}
				var any []ClockStep
				runs.steps(func(s ClockStep) { any = append(any, s) })
				if diff := cmp.Diff(tt.want, any); diff != "" {
					t.Errorf("seed %d (-want +got):\n%s", seed, diff)
				}
			}
		})
	}
}

func TestClockStepString(t *testing.T) {
	s := ClockStep{Position: 5, After: 3, StepNS: -5e9, ElapsedNS: 1e8, FromUnixNS: t0, ToUnixNS: t0 - 49e8}
	if got, want := s.String(), "wall clock stepped back 5s at position 5 (it moved -4.9s while the monotonic clock moved 100ms)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	s.StepNS = 25e8
	if got := s.String(); !strings.HasPrefix(got, "wall clock stepped forward 2.5s at position 5") {
		t.Errorf("String() = %q", got)
	}
}

// A long capture of many readings, with two steps, fed to clockRuns a
// segment at a time from its end, and as summaries give it (each
// segment's first and last reading): the steps are found, at most as
// many runs held as there are steps and segments.
func TestClockRunsFromTheEnd(t *testing.T) {
	const n, per = 1000, 37 // readings, readings per segment
	var rs []clockReading
	offset := t0
	for i := range n {
		switch i {
		case 300:
			offset -= 5e9
		case 700:
			offset += 2e9
		}
		mono := int64(i) * 1e8
		rs = append(rs, clockReading{pos: frames.Position(i * 3), unix: offset + mono, mono: mono})
	}
	want := []frames.Position{900, 2100}
	for _, ends := range []bool{false, true} {
		var runs clockRuns
		budget := 1000
		for hi := n; hi > 0; hi -= per {
			lo := max(0, hi-per)
			seg := rs[lo:hi]
			if ends {
				seg = []clockReading{seg[0], seg[len(seg)-1]}
			}
			for _, r := range seg {
				if !runs.add(r, &budget) {
					t.Fatal("out of budget")
				}
			}
		}
		var got []frames.Position
		var steps []int64
		runs.steps(func(s ClockStep) {
			got = append(got, s.Position)
			steps = append(steps, s.StepNS)
		})
		if !ends {
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("every reading: steps at (-want +got):\n%s", diff)
			}
		} else if len(got) != 2 || got[0] < want[0] || got[1] < want[1] || got[0] > want[1] {
			t.Errorf("ends only: steps at %v, want at or after %v", got, want)
		}
		if diff := cmp.Diff([]int64{-5e9, 2e9}, steps); diff != "" {
			t.Errorf("ends %v: step sizes (-want +got):\n%s", ends, diff)
		}
		if len(runs.runs) != 3 {
			t.Errorf("ends %v: %d runs held, want 3", ends, len(runs.runs))
		}
	}
	// The budget bounds the runs: readings that need one more are not
	// taken.
	var runs clockRuns
	budget := 2
	for i := range 10 {
		runs.add(clockReading{pos: frames.Position(i), unix: t0 + int64(i)*10e9, mono: int64(i)}, &budget)
	}
	if len(runs.runs) != 2 || budget != 0 {
		t.Errorf("%d runs, budget %d; want 2 and 0", len(runs.runs), budget)
	}
}

// clockStepFrames is a job whose wall clock is set back 5 s between the
// clock records at positions 3 and 5 (as testdata/clockstep.dss).
func clockStepFrames() []frames.Frame {
	ms := int64(1e6)
	return []frames.Frame{
		on(3, 0, clockRec(t0, 0)),
		on(1, 1, "one\n"),
		on(3, 2, clockRec(t0+100*ms, 100*ms)),
		on(1, 3, "two\n"),
		on(3, 4, clockRec(t0+200*ms-5e9, 200*ms)),
		on(2, 5, "three\n"),
		on(3, 6, clockRec(t0+300*ms-5e9, 300*ms)),
		on(1, 7, "four\n"),
	}
}

// ds log shows a step of the wall clock in place, whatever -c selects,
// and --time=delta and --time=since-start measure across it by the
// monotonic clock.
func TestLogClockStep(t *testing.T) {
	note := "wall clock stepped back 5s at position 4 (it moved -4.9s while the monotonic clock moved 100ms)"
	got, losses := printJob(t, LogOptions{}, clockStepFrames()...)
	want := "" +
		"     1  proc.job.stdout   one\n" +
		"     3  proc.job.stdout   two\n" +
		"     ~  clock             " + note + "\n" +
		"     5  proc.job.stderr   three\n" +
		"     7  proc.job.stdout   four\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if want := (Losses{ClockSteps: 1}); losses != want {
		t.Errorf("losses = %+v, want %+v", losses, want)
	}
	got, _ = printJob(t, LogOptions{Time: TimeDelta, Channels: []frames.ChannelFilter{frames.NameChannel("proc.job.stdout")}}, clockStepFrames()...)
	want = "" +
		"     1    +0.000000  proc.job.stdout   one\n" +
		"     3    +0.100000  proc.job.stdout   two\n" +
		"     ~    +0.100000  clock             " + note + "\n" +
		"     7    +0.100000  proc.job.stdout   four\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("--time=delta -c proc.job.stdout (-want +got):\n%s", diff)
	}
	// --time=since-start measures by the monotonic clock too: no jump
	// back by the step.
	got, _ = printJob(t, LogOptions{Time: TimeSinceStart, Channels: []frames.ChannelFilter{frames.NameChannel("proc.job.stdout")}}, clockStepFrames()...)
	want = "" +
		"     1    +0.000000  proc.job.stdout   one\n" +
		"     3    +0.100000  proc.job.stdout   two\n" +
		"     ~    +0.200000  clock             " + note + "\n" +
		"     7    +0.300000  proc.job.stdout   four\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("--time=since-start -c proc.job.stdout (-want +got):\n%s", diff)
	}
	// The wall clock column shows what the clock read.
	got, _ = printJob(t, LogOptions{Time: TimeUnix}, clockStepFrames()...)
	if !strings.Contains(got, "1732953595.200000000  proc.job.stderr   three") {
		t.Errorf("--time=unix:\n%s", got)
	}
	got, _ = printJob(t, LogOptions{Format: FormatJSON}, clockStepFrames()...)
	wantJSON := `{"stream":"node-alpha#1","node":"node-alpha","life":1,"clock_step":{"position":4,"after":2,"step_ns":-5000000000,"elapsed_ns":100000000,"from_unix_ns":1732953600100000000,"to_unix_ns":1732953595200000000},"text":"` + note + `"}` + "\n"
	if !strings.Contains(got, wantJSON) {
		t.Errorf("--json lacks %s:\n%s", wantJSON, got)
	}
	if got, _ = printJob(t, LogOptions{Format: FormatCat}, clockStepFrames()...); got != "one\ntwo\nthree\nfour\n" {
		t.Errorf("--cat = %q", got)
	}
	// Outside --positions, the step is not shown.
	got, losses = printJob(t, LogOptions{Select: Selection{Positions: &PositionRange{From: 5, To: 7}}}, clockStepFrames()...)
	if strings.Contains(got, "clock") || losses.ClockSteps != 0 {
		t.Errorf("--positions 5-7 shows the step at 4:\n%s", got)
	}
}

// ds gaps lists a step as a finding, which ds gaps --check fails on.
func TestGapsClockStep(t *testing.T) {
	g := NewGaps(0)
	g.Segment(frames.StreamDescriptor{Stream: S}, jobChannels)
	for _, f := range clockStepFrames() {
		g.Frame(S, f)
	}
	g.Ended(S)
	var text, js bytes.Buffer
	if err := g.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := g.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	want := "node-alpha#1  clock-step  wall clock stepped back 5s at position 4 (it moved -4.9s while the monotonic clock moved 100ms)\n"
	if diff := cmp.Diff(want, text.String()); diff != "" {
		t.Errorf("text (-want +got):\n%s", diff)
	}
	wantJSON := `{"stream":"node-alpha#1","node":"node-alpha","life":1,"clock_step":{"position":4,"after":2,"step_ns":-5000000000,"elapsed_ns":100000000,"from_unix_ns":1732953600100000000,"to_unix_ns":1732953595200000000}}` + "\n"
	if diff := cmp.Diff(wantJSON, js.String()); diff != "" {
		t.Errorf("json (-want +got):\n%s", diff)
	}
	tot := g.Totals()
	if tot.ClockSteps != 1 || tot.Losses() != 1 || tot.String() != "1 problem: 1 clock step" {
		t.Errorf("totals %+v: Losses %d, %q", tot, tot.Losses(), tot)
	}
	if !FindingClockStep.IsLoss() || FindingClockStep.String() != "clock-step" {
		t.Errorf("FindingClockStep: IsLoss %v, %q", FindingClockStep.IsLoss(), FindingClockStep)
	}
}

// ds info counts the steps, and says the same of a capture read from its
// summaries as of one read record by record.
func TestInfoClockStep(t *testing.T) {
	s := frames.StreamID{Node: "info", Life: 9}
	cat := []frames.ChannelDescriptor{
		{Stream: s, ID: 1, Name: frames.ClockChannel, Content: frames.JSONRecord(frames.ClockChannel)},
		{Stream: s, ID: 3, Name: "proc.job.stdout", Content: frames.TextStream()},
	}
	var buf bytes.Buffer
	w, err := segments.NewWriter(&buf, frames.StreamDescriptor{Stream: s}, cat, segments.WriterOptions{SegmentSize: 8 << 10, Compression: segments.CompressZstd, BlockSize: 2 << 10, Keep: keepLikeWrap})
	if err != nil {
		t.Fatal(err)
	}
	pos := frames.Position(0)
	offset := t0
	for i := range 3000 {
		if i%10 == 0 {
			switch i {
			case 1000:
				offset -= 5e9
			case 2000:
				offset += 3e9
			}
			mono := int64(i) * 1e7
			if err := w.WriteFrame(frames.Frame{Channel: 1, Position: pos, Payload: []byte(clockRec(offset+mono, mono))}); err != nil {
				t.Fatal(err)
			}
			pos++
		}
		if err := w.WriteFrame(frames.Frame{Channel: 3, Position: pos, Payload: fmt.Appendf(nil, "line %d %016x\n", i, uint64(i)*0x9e3779b97f4a7c15)}); err != nil {
			t.Fatal(err)
		}
		pos++
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	scan, fromEnd, n := infoBoth(t, buf.Bytes())
	if n < 4 {
		t.Fatalf("%d segments summarised, want several", n)
	}
	st := scan[0]
	if st.ClockStepCount != 2 || len(st.ClockSteps) != 2 || st.ClockSteps[0].StepNS != -5e9 || st.ClockSteps[1].StepNS != 3e9 || st.ClockSteps[0].Position != 1100 {
		t.Fatalf("scanned: %d steps %+v", st.ClockStepCount, st.ClockSteps)
	}
	// From summaries, the steps are placed at the first reading read
	// after them, and are as large.
	fe := fromEnd[0]
	if fe.ClockStepCount != 2 || fe.ClockSteps[0].StepNS != -5e9 || fe.ClockSteps[1].StepNS != 3e9 || fe.ClockSteps[0].Position < 1100 || fe.ClockSteps[1].Position < st.ClockSteps[1].Position {
		t.Errorf("from the end: %d steps %+v", fe.ClockStepCount, fe.ClockSteps)
	}
	var text bytes.Buffer
	if err := WriteInfoText(&text, nil, scan); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"  clock steps    2 (the wall clock jumped: times after a step are off by it)\n",
		"                 wall clock stepped back 5s at position 1100 (it moved -4.9s while the monotonic clock moved 100ms)\n",
		"                 wall clock stepped forward 3s at position 2200",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("ds info lacks %q:\n%s", want, text.String())
		}
	}
	// A capture without steps says nothing of them.
	scan, _, _ = infoBoth(t, wrapLikeCapture(t, 2000, 8<<10, keepLikeWrap))
	if scan[0].ClockStepCount != 0 || scan[0].ClockSteps != nil {
		t.Errorf("no step: %+v", scan[0].ClockSteps)
	}
}

// LogOptions.CatFrames hands over the frames --cat would write, with
// their steady time: a step of the wall clock does not move it back.
func TestCatFramesSteady(t *testing.T) {
	type got struct {
		ns int64
		b  string
	}
	var gotFrames []got
	out, _ := printJob(t, LogOptions{Format: FormatCat, CatFrames: func(ns int64, b []byte, _ CatChannel) {
		gotFrames = append(gotFrames, got{ns, string(b)})
	}}, clockStepFrames()...)
	if out != "" {
		t.Errorf("CatFrames: the printer wrote %q", out)
	}
	ms := int64(1e6)
	want := []got{{t0, "one\n"}, {t0 + 100*ms, "two\n"}, {t0 + 200*ms, "three\n"}, {t0 + 300*ms, "four\n"}}
	if diff := cmp.Diff(want, gotFrames, cmp.AllowUnexported(got{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

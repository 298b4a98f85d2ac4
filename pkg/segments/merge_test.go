package segments

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// capSpec describes a capture for the merge tests: one stream's frames,
// written in the order given, then StreamEnded if ended.
type capSpec struct {
	desc     frames.StreamDescriptor
	catalog  []frames.ChannelDescriptor
	opts     WriterOptions
	trim     frames.Position // a Trimmed record first, when > 0
	store    bool            // the input is a store's read-out (MergeInput.Store)
	frames   []frames.Frame
	ended    bool
	segments int // frames per segment (EndSegment between), 0: one
}

// build writes the capture.
func (c capSpec) build(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	opts := c.opts
	if opts.Rand == nil {
		opts.Rand = detRand(7)
	}
	w, err := NewWriter(&buf, c.desc, c.catalog, opts)
	if err != nil {
		t.Fatal(err)
	}
	if c.trim > 0 {
		if err := w.WriteTrimmed(c.trim); err != nil {
			t.Fatal(err)
		}
	}
	for i, f := range c.frames {
		if c.segments > 0 && i > 0 && i%c.segments == 0 {
			if err := w.EndSegment(); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	if c.ended {
		err = w.Close()
	} else {
		err = w.Flush()
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// textFramesAt returns frames at positions from..to on channel 2, payload
// "line N\n".
func textFramesAt(from, to uint64) []frames.Frame {
	var fs []frames.Frame
	for p := from; p <= to; p++ {
		fs = append(fs, frames.Frame{Channel: 2, Position: frames.Position(p), Payload: fmt.Appendf(nil, "line %d\n", p)})
	}
	return fs
}

func inputsOf(named map[string][]byte, order ...string) []MergeInput {
	var ins []MergeInput
	for _, name := range order {
		data := named[name]
		ins = append(ins, MergeInput{Name: name, Open: func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(data)), nil
		}})
	}
	return ins
}

// merged runs Merge with a deterministic segment id source and returns
// the output, the report and the warnings.
func merged(t testing.TB, ins []MergeInput, opts MergeOptions) ([]byte, MergeReport, []error) {
	t.Helper()
	var out bytes.Buffer
	var warns []error
	opts.Warn = func(err error) { warns = append(warns, err) }
	if opts.Rand == nil {
		opts.Rand = detRand(3)
	}
	rep, err := Merge(ins, &out, opts)
	if err != nil {
		t.Fatalf("Merge: %v", err)
	}
	return out.Bytes(), rep, warns
}

// outline renders a capture as lines: "seg S seq=N [ids]", "S p ch payload",
// "ended S", "trimmed S H"; summaries are left out. It fails on damage.
func outline(t testing.TB, data []byte) []string {
	t.Helper()
	res := readAll(t, data, ReaderOptions{SkipSummaries: true})
	if len(res.corrupt) > 0 || res.err != io.EOF {
		t.Fatalf("output damaged: %v, %v", res.corrupt, res.err)
	}
	var out []string
	for _, e := range res.entries {
		switch e.Kind {
		case EntrySegment:
			var ids []string
			for _, d := range e.Header.Channels {
				ids = append(ids, fmt.Sprint(d.ID))
			}
			out = append(out, fmt.Sprintf("seg %s seq=%d [%s]", e.Stream, e.Header.Seq, strings.Join(ids, " ")))
		case EntryFrame:
			out = append(out, fmt.Sprintf("%s %d %d %q", e.Stream, e.Frame.Position, e.Frame.Channel, e.Frame.Payload))
		case EntryStreamEnded:
			out = append(out, "ended "+e.Stream.String())
		case EntryTrimmed:
			out = append(out, fmt.Sprintf("trimmed %s %d", e.Stream, e.Frame.Position))
		}
	}
	return out
}

// framesOf keeps the frame lines of an outline.
func framesOf(lines []string) []string {
	var out []string
	for _, l := range lines {
		if !strings.HasPrefix(l, "seg ") && !strings.HasPrefix(l, "ended ") && !strings.HasPrefix(l, "trimmed ") {
			out = append(out, l)
		}
	}
	return out
}

func wantFrames(s frames.StreamID, fs []frames.Frame) []string {
	var out []string
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%s %d %d %q", s, f.Position, f.Channel, f.Payload))
	}
	return out
}

func catS() []frames.ChannelDescriptor {
	return []frames.ChannelDescriptor{channel(streamS, 1), channel(streamS, 2)}
}

// The case of the issue: a holds frames 0–103, b holds 54–163 and the
// StreamEnded record. Both orders give every frame once, in order, the
// stream ended after its last frame, and the same bytes.
func TestMergeOverlappingCopies(t *testing.T) {
	for _, comp := range []Compression{CompressNone, CompressZstd} {
		t.Run(comp.String(), func(t *testing.T) {
			caps := map[string][]byte{
				"a.dss": capSpec{desc: descS, catalog: catS(), opts: WriterOptions{Compression: comp}, frames: textFramesAt(0, 103)}.build(t),
				"b.dss": capSpec{desc: descS, catalog: catS(), opts: WriterOptions{Compression: comp}, frames: textFramesAt(54, 163), ended: true}.build(t),
			}
			ab, repAB, warnAB := merged(t, inputsOf(caps, "a.dss", "b.dss"), MergeOptions{Compression: comp})
			ba, repBA, warnBA := merged(t, inputsOf(caps, "b.dss", "a.dss"), MergeOptions{Compression: comp})
			want := append([]string{"seg node-alpha#1 seq=0 [1 2]"}, wantFrames(streamS, textFramesAt(0, 163))...)
			want = append(want, "ended node-alpha#1")
			for name, got := range map[string][]byte{"a b": ab, "b a": ba} {
				if diff := diffLines(outline(t, got), want); diff != "" {
					t.Errorf("merge %s:\n%s", name, diff)
				}
			}
			// Plain records are the same bytes whatever the order; zstd
			// blocks copied from an input follow its blocks.
			if comp == CompressNone && !bytes.Equal(ab, ba) {
				t.Errorf("the two orders give different bytes (%d and %d)", len(ab), len(ba))
			}
			for _, rep := range []MergeReport{repAB, repBA} {
				if rep.Frames != 164 || rep.Duplicates != 50 || rep.Conflicts != 0 || rep.Gaps != 0 || rep.Streams != 1 || rep.Inputs != 2 || rep.Damaged {
					t.Errorf("report %+v, want 164 frames, 50 duplicates, 1 stream, 2 inputs", rep)
				}
			}
			if len(warnAB)+len(warnBA) > 0 {
				t.Errorf("warnings: %v %v", warnAB, warnBA)
			}
		})
	}
}

// diffLines returns "" when got equals want, else the first difference.
func diffLines(got, want []string) string {
	for i := range max(len(got), len(want)) {
		g, w := "<none>", "<none>"
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			return fmt.Sprintf("line %d: got %s, want %s (%d lines, want %d)", i, g, w, len(got), len(want))
		}
	}
	return ""
}

func TestMerge(t *testing.T) {
	descS2 := frames.StreamDescriptor{Stream: frames.StreamID{Node: "node-alpha", Life: 2}}
	s2 := descS2.Stream
	same := func(p uint64) frames.Frame {
		return frames.Frame{Channel: 2, Position: frames.Position(p), Payload: []byte("same line\n")}
	}
	shuffled := textFramesAt(0, 299)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	mixed := []frames.Frame{
		{Channel: 1, Position: 0, Payload: []byte(`{"cpu":1}`)},
		{Channel: 2, Position: 1, Payload: []byte("one\n")},
		{Channel: 1, Position: 2, Payload: []byte(`{"cpu":2}`)},
		{Channel: 2, Position: 3, Payload: []byte("two\n")},
	}
	tests := []struct {
		name   string
		caps   map[string]capSpec
		order  []string
		opts   MergeOptions
		want   []string // the outline
		report func(MergeReport) string
		warns  []string // substrings of the warnings, in order
	}{
		{
			name: "identity not content",
			caps: map[string]capSpec{"a": {desc: descS, catalog: catS(), frames: []frames.Frame{same(0), same(1), same(2)}}},
			want: append([]string{"seg node-alpha#1 seq=0 [1 2]"}, wantFrames(streamS, []frames.Frame{same(0), same(1), same(2)})...),
			report: func(r MergeReport) string {
				if r.Frames != 3 || r.Duplicates != 0 {
					return "want 3 frames, no duplicate"
				}
				return ""
			},
		},
		{
			name: "conflict written after the winner",
			caps: map[string]capSpec{
				"a": {desc: descS, catalog: catS(), frames: []frames.Frame{fr2(0, "x"), fr2(1, "first\n"), fr2(2, "z")}},
				"b": {desc: descS, catalog: catS(), frames: []frames.Frame{fr2(1, "second\n")}},
			},
			order: []string{"a", "b"},
			want:  []string{"seg node-alpha#1 seq=0 [1 2]", `node-alpha#1 0 2 "x"`, `node-alpha#1 1 2 "first\n"`, `node-alpha#1 2 2 "z"`, `node-alpha#1 1 2 "second\n"`},
			report: func(r MergeReport) string {
				if r.Frames != 3 || r.Conflicts != 1 {
					return "want 3 frames, 1 conflict"
				}
				return ""
			},
			warns: []string{"b: stream node-alpha#1, position 1: a different payload"},
		},
		{
			name: "lives never merge",
			caps: map[string]capSpec{
				"a": {desc: descS, catalog: catS(), frames: textFramesAt(0, 1)},
				"b": {desc: descS2, catalog: []frames.ChannelDescriptor{channel(s2, 2)}, frames: textFramesAt(0, 1)},
			},
			order: []string{"a", "b"},
			want: slices.Concat([]string{"seg node-alpha#1 seq=0 [1 2]"}, wantFrames(streamS, textFramesAt(0, 1)),
				[]string{"seg node-alpha#2 seq=0 [2]"}, wantFrames(s2, textFramesAt(0, 1))),
			report: func(r MergeReport) string {
				if r.Streams != 2 || r.Frames != 4 || r.Duplicates != 0 {
					return "want 2 streams, 4 frames"
				}
				return ""
			},
		},
		{
			name: "stream filter",
			caps: map[string]capSpec{
				"a": {desc: descS, catalog: catS(), frames: textFramesAt(0, 1)},
				"b": {desc: descS2, catalog: []frames.ChannelDescriptor{channel(s2, 2)}, frames: textFramesAt(0, 1)},
			},
			order: []string{"a", "b"},
			opts:  MergeOptions{Select: func(d frames.StreamDescriptor) bool { return d.Stream.Life == 2 }},
			want:  append([]string{"seg node-alpha#2 seq=0 [2]"}, wantFrames(s2, textFramesAt(0, 1))...),
		},
		{
			name: "channel filter: the head left out starts at seq 1",
			caps: map[string]capSpec{"a": {desc: descS, catalog: catS(), frames: mixed, ended: true}},
			opts: MergeOptions{Channels: func(_ frames.StreamID, d frames.ChannelDescriptor) bool {
				return d.Content.Kind == frames.KindTextStream
			}},
			want: []string{"seg node-alpha#1 seq=1 [2]", `node-alpha#1 1 2 "one\n"`, `node-alpha#1 3 2 "two\n"`, "ended node-alpha#1"},
			report: func(r MergeReport) string {
				if r.Frames != 2 || r.Gaps != 0 {
					return "want 2 frames, no gap"
				}
				return ""
			},
		},
		{
			name: "frame filter cuts the end: no StreamEnded",
			caps: map[string]capSpec{"a": {desc: descS, catalog: catS(), frames: textFramesAt(0, 9), ended: true}},
			opts: MergeOptions{Frame: func(_ frames.StreamID, d *frames.ChannelDescriptor, f frames.Frame) bool {
				return d != nil && d.ID == 2 && f.Position <= 3
			}},
			want: append([]string{"seg node-alpha#1 seq=0 [1 2]"}, wantFrames(streamS, textFramesAt(0, 3))...),
		},
		{
			name: "StreamEnded once, after the last frame",
			caps: map[string]capSpec{
				"a": {desc: descS, catalog: catS(), frames: textFramesAt(0, 4), ended: true},
				"b": {desc: descS, catalog: catS(), frames: textFramesAt(3, 6)},
				"c": {desc: descS, catalog: catS(), frames: textFramesAt(0, 6), ended: true},
			},
			order: []string{"a", "b", "c"},
			want:  slices.Concat([]string{"seg node-alpha#1 seq=0 [1 2]"}, wantFrames(streamS, textFramesAt(0, 6)), []string{"ended node-alpha#1"}),
			report: func(r MergeReport) string {
				if r.Duplicates != 9 {
					return "want 9 duplicates"
				}
				return ""
			},
		},
		{
			name: "unsorted input",
			caps: map[string]capSpec{"a": {desc: descS, catalog: catS(), frames: shuffled, ended: true, segments: 37}},
			want: slices.Concat([]string{"seg node-alpha#1 seq=0 [1 2]"}, wantFrames(streamS, textFramesAt(0, 299)), []string{"ended node-alpha#1"}),
		},
		{
			name: "gap counted, not written",
			caps: map[string]capSpec{"a": {desc: descS, catalog: catS(), frames: slices.Concat(textFramesAt(0, 1), textFramesAt(5, 6))}},
			want: slices.Concat([]string{"seg node-alpha#1 seq=0 [1 2]"}, wantFrames(streamS, slices.Concat(textFramesAt(0, 1), textFramesAt(5, 6)))),
			report: func(r MergeReport) string {
				if r.Gaps != 1 || r.Missing != 3 {
					return "want 1 gap of 3"
				}
				return ""
			},
		},
		{
			name: "head missing in every input: seq 1",
			caps: map[string]capSpec{"a": {desc: descS, catalog: catS(), opts: WriterOptions{FirstSeq: 4}, frames: textFramesAt(10, 12)}},
			want: append([]string{"seg node-alpha#1 seq=1 [1 2]"}, wantFrames(streamS, textFramesAt(10, 12))...),
		},
		{
			name: "trimmed: the horizon first, frames below it dropped",
			caps: map[string]capSpec{
				"a": {desc: descS, catalog: catS(), frames: textFramesAt(0, 9)},
				"b": {desc: descS, catalog: catS(), trim: 5, store: true, frames: textFramesAt(5, 11)},
			},
			order: []string{"b", "a"},
			want:  slices.Concat([]string{"seg node-alpha#1 seq=0 [1 2]", "trimmed node-alpha#1 5"}, wantFrames(streamS, textFramesAt(5, 11))),
			report: func(r MergeReport) string {
				if r.Trimmed != 5 || r.Gaps != 0 {
					return "want 5 trimmed, no gap"
				}
				return ""
			},
		},
		{
			// A capture file's Trimmed record hides nothing: the frames
			// below it are merged, and the output keeps the record.
			name: "trimmed capture: the frames below the horizon kept",
			caps: map[string]capSpec{
				"a": {desc: descS, catalog: catS(), frames: textFramesAt(0, 9)},
				"b": {desc: descS, catalog: catS(), trim: 5, frames: textFramesAt(5, 11)},
			},
			order: []string{"b", "a"},
			want:  slices.Concat([]string{"seg node-alpha#1 seq=0 [1 2]", "trimmed node-alpha#1 5"}, wantFrames(streamS, textFramesAt(5, 11)), wantFrames(streamS, textFramesAt(0, 4))),
			report: func(r MergeReport) string {
				if r.Trimmed != 0 || r.Gaps != 0 || r.Frames != 12 {
					return "want 12 frames, none trimmed, no gap"
				}
				return ""
			},
		},
		{
			name: "a stream without frames is kept",
			caps: map[string]capSpec{"a": {desc: descT, catalog: []frames.ChannelDescriptor{channel(streamT, 2)}, ended: true}},
			want: []string{"seg node-beta#1732953600123456789 seq=0 [2]", "ended node-beta#1732953600123456789"},
		},
		{
			name: "catalogs unified",
			caps: map[string]capSpec{
				"a": {desc: descS, catalog: []frames.ChannelDescriptor{channel(streamS, 2)}, frames: textFramesAt(0, 1)},
				"b": {desc: descS, catalog: []frames.ChannelDescriptor{channel(streamS, 1), channel(streamS, 2)}, frames: []frames.Frame{{Channel: 1, Position: 2, Payload: []byte("{}")}}},
			},
			order: []string{"a", "b"},
			want:  slices.Concat([]string{"seg node-alpha#1 seq=0 [2]"}, wantFrames(streamS, textFramesAt(0, 1)), []string{"seg node-alpha#1 seq=1 [1 2]", `node-alpha#1 2 1 "{}"`}),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			named := map[string][]byte{}
			for name, c := range tc.caps {
				named[name] = c.build(t)
			}
			order := tc.order
			if order == nil {
				order = []string{"a"}
			}
			ins := inputsOf(named, order...)
			for i := range ins {
				ins[i].Store = tc.caps[ins[i].Name].store
			}
			out, rep, warns := merged(t, ins, tc.opts)
			if diff := diffLines(outline(t, out), tc.want); diff != "" {
				t.Errorf("%s\n%s", diff, strings.Join(outline(t, out), "\n"))
			}
			if tc.report != nil {
				if msg := tc.report(rep); msg != "" {
					t.Errorf("report %+v: %s", rep, msg)
				}
			}
			if len(warns) != len(tc.warns) {
				t.Fatalf("warnings %v, want %d", warns, len(tc.warns))
			}
			for i, w := range tc.warns {
				if !strings.Contains(warns[i].Error(), w) {
					t.Errorf("warning %q, want it to hold %q", warns[i], w)
				}
			}
		})
	}
}

func fr2(p uint64, payload string) frames.Frame {
	return frames.Frame{Channel: 2, Position: frames.Position(p), Payload: []byte(payload)}
}

func TestMergeCatalogConflict(t *testing.T) {
	other := channel(streamS, 2)
	other.Name = "proc.other.stdout"
	named := map[string][]byte{
		"a.dss": capSpec{desc: descS, catalog: catS(), frames: textFramesAt(0, 1)}.build(t),
		"b.dss": capSpec{desc: descS, catalog: []frames.ChannelDescriptor{other}, frames: textFramesAt(2, 3)}.build(t),
		"c.dss": capSpec{desc: frames.StreamDescriptor{Stream: streamS, Label: ptr("x")}, frames: textFramesAt(2, 3)}.build(t),
	}
	for _, tc := range []struct {
		second, want string
	}{
		{"b.dss", `stream node-alpha#1, channel 2 is described differently by a.dss and b.dss: "proc.trainer.stdout" (TextStream), then "proc.other.stdout" (TextStream)`},
		{"c.dss", `stream node-alpha#1 is described differently by a.dss and c.dss: origin RemoteNode, no label, then origin RemoteNode, label "x"`},
	} {
		_, err := Merge(inputsOf(named, "a.dss", tc.second), io.Discard, MergeOptions{})
		var ce *CatalogConflictError
		if !errors.As(err, &ce) || err.Error() != tc.want {
			t.Errorf("error %v, want %s", err, tc.want)
		}
	}
}

func TestMergeNotDSS(t *testing.T) {
	named := map[string][]byte{
		"a.dss":   capSpec{desc: descS, catalog: catS(), frames: textFramesAt(0, 1)}.build(t),
		"x.txt":   []byte("just some text\nand more\n"),
		"empty":   nil,
		"missing": nil,
	}
	_, err := Merge(inputsOf(named, "a.dss", "empty", "x.txt"), io.Discard, MergeOptions{})
	if !errors.Is(err, ErrNotDSS) || !strings.HasPrefix(err.Error(), "x.txt: ") {
		t.Errorf("error %v, want x.txt: %v", err, ErrNotDSS)
	}
	ins := inputsOf(named, "a.dss")
	ins = append(ins, MergeInput{Name: "gone.dss", Open: func() (io.ReadCloser, error) { return nil, errors.New("no such file") }})
	_, err = Merge(ins, io.Discard, MergeOptions{})
	if err == nil || err.Error() != "gone.dss: no such file" {
		t.Errorf("error %v, want gone.dss: no such file", err)
	}
}

// Damage costs only the damaged records, each range is reported with its
// input and offsets, and a torn tail is told apart.
func TestMergeDamage(t *testing.T) {
	good := capSpec{desc: descS, catalog: catS(), frames: textFramesAt(0, 49), ended: true}.build(t)
	flipped := bytes.Clone(good)
	// The middle of frame 20's record (plain records, each "line N\n").
	at := bytes.Index(flipped, []byte("line 20\n"))
	flipped[at+2] ^= 0xFF
	torn := good[:len(good)-5]
	named := map[string][]byte{"flip.dss": flipped, "torn.dss": torn}
	out, rep, warns := merged(t, inputsOf(named, "flip.dss", "torn.dss"), MergeOptions{})
	if !rep.Damaged || rep.DamageCount != 2 || len(rep.Damage) != 2 {
		t.Fatalf("report %+v, want 2 damaged ranges", rep)
	}
	d0, d1 := rep.Damage[0], rep.Damage[1]
	if d0.Input != "flip.dss" || d0.Torn || d0.Offset >= int64(at) || d0.End <= int64(at) {
		t.Errorf("first damage %+v, want flip.dss around %d", d0, at)
	}
	if d1.Input != "torn.dss" || !d1.Torn || d1.End != int64(len(torn)) {
		t.Errorf("second damage %+v, want the torn tail of torn.dss", d1)
	}
	if len(warns) != 2 || !strings.Contains(warns[0].Error(), "flip.dss: bytes ") || !strings.Contains(warns[1].Error(), "torn.dss: torn tail at byte ") {
		t.Errorf("warnings %v", warns)
	}
	// Frame 20 is lost in one copy, not in the other: everything is there.
	if diff := diffLines(framesOf(outline(t, out)), wantFrames(streamS, textFramesAt(0, 49))); diff != "" {
		t.Error(diff)
	}
}

// A memory budget too small for the input's disorder makes the assembler
// spill, and the output is the same, byte for byte.
func TestMergeSpillSameBytes(t *testing.T) {
	fs := textFramesAt(0, 19999)
	for i := range fs {
		fs[i].Payload = fmt.Appendf(nil, "%s %s\n", fs[i].Payload[:len(fs[i].Payload)-1], strings.Repeat("x", 60))
	}
	rand.New(rand.NewPCG(3, 4)).Shuffle(len(fs), func(i, j int) { fs[i], fs[j] = fs[j], fs[i] })
	named := map[string][]byte{"a": capSpec{desc: descS, catalog: catS(), opts: WriterOptions{Compression: CompressZstd}, frames: fs, ended: true}.build(t)}
	opts := MergeOptions{Compression: CompressZstd, TempDir: t.TempDir()}
	big, repBig, _ := merged(t, inputsOf(named, "a"), opts)
	opts.Memory = 64 << 10
	small, repSmall, _ := merged(t, inputsOf(named, "a"), opts)
	if repBig.SpilledFrames != 0 || repSmall.SpilledFrames == 0 {
		t.Errorf("spilled %d and %d frames, want 0 and some", repBig.SpilledFrames, repSmall.SpilledFrames)
	}
	if !bytes.Equal(big, small) {
		t.Errorf("outputs differ: %d and %d bytes", len(big), len(small))
	}
	if repSmall.Frames != 20000 || repSmall.Gaps != 0 {
		t.Errorf("report %+v", repSmall)
	}
}

// The output's summaries keep what Keep says, and Progress sees every
// byte.
func TestMergeKeepAndProgress(t *testing.T) {
	named := map[string][]byte{"a": capSpec{desc: descS, catalog: catS(), frames: mixed4(), ended: true}.build(t)}
	var last int64
	var cats [][]frames.ChannelDescriptor
	out, _, _ := merged(t, inputsOf(named, "a"), MergeOptions{
		Progress: func(n int64) { last = n },
		Keep: func(cat []frames.ChannelDescriptor) func(frames.ChannelID, []byte) Keep {
			cats = append(cats, cat)
			return func(ch frames.ChannelID, _ []byte) Keep {
				if ch == 1 {
					return KeepFrame
				}
				return KeepNone
			}
		},
	})
	if last != int64(len(named["a"])) {
		t.Errorf("progress ended at %d, want %d", last, len(named["a"]))
	}
	if len(cats) != 1 || len(cats[0]) != 2 {
		t.Errorf("Keep given catalogs %v", cats)
	}
	res := readAll(t, out, ReaderOptions{})
	kept := 0
	for _, e := range res.entries {
		if e.Kind == EntrySummary {
			kept += len(e.Summary.Kept)
		}
	}
	if kept != 2 {
		t.Errorf("summaries keep %d frames, want the 2 of channel 1", kept)
	}
}

func mixed4() []frames.Frame {
	return []frames.Frame{
		{Channel: 1, Position: 0, Payload: []byte(`{"cpu":1}`)},
		{Channel: 2, Position: 1, Payload: []byte("one\n")},
		{Channel: 1, Position: 2, Payload: []byte(`{"cpu":2}`)},
		{Channel: 2, Position: 3, Payload: []byte("two\n")},
	}
}

// Segments of several streams interleaved in one input come out one
// stream's segment at a time, never mixed, each stream whole; a stream
// that ended is ended in its last segment.
func TestMergeInterleavedStreams(t *testing.T) {
	var cat []byte
	for part := range 3 {
		for _, d := range []frames.StreamDescriptor{descS, descT} {
			c := capSpec{desc: d, catalog: []frames.ChannelDescriptor{channel(d.Stream, 2)}, opts: WriterOptions{FirstSeq: uint64(part)},
				frames: textFramesAt(uint64(10*part), uint64(10*part+9)), ended: part == 2}
			cat = append(cat, c.build(t)...)
		}
	}
	out, rep, _ := merged(t, inputsOf(map[string][]byte{"cat": cat}, "cat"), MergeOptions{})
	if rep.Streams != 2 || rep.Frames != 60 {
		t.Errorf("report %+v", rep)
	}
	var got []string
	for _, l := range outline(t, out) {
		if strings.HasPrefix(l, "seg ") || strings.HasPrefix(l, "ended ") {
			got = append(got, l)
		}
	}
	want := []string{
		"seg node-alpha#1 seq=0 [2]", "seg node-beta#1732953600123456789 seq=0 [2]",
		"seg node-alpha#1 seq=1 [2]", "seg node-beta#1732953600123456789 seq=1 [2]",
		"seg node-alpha#1 seq=2 [2]", "ended node-alpha#1",
		"seg node-beta#1732953600123456789 seq=2 [2]", "ended node-beta#1732953600123456789",
	}
	if diff := diffLines(got, want); diff != "" {
		t.Errorf("%s\n%s", diff, strings.Join(got, "\n"))
	}
	// Every segment's records are of its header's stream, and the
	// summaries agree with them.
	spansOK(t, out)
}

// spansOK checks that the walk from the end finds every segment of a
// capture summarised.
func spansOK(t *testing.T, data []byte) {
	t.Helper()
	sp, err := NewBackWalker(bytes.NewReader(data), int64(len(data))).All()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sp {
		if s.Summary == nil {
			t.Errorf("segment at %d has no usable summary", s.Offset)
		}
	}
}

// blockBodies returns the stored bodies of a capture's Block records.
func blockBodies(t testing.TB, data []byte) [][]byte {
	t.Helper()
	var out [][]byte
	r := NewReader(bytes.NewReader(data), ReaderOptions{})
	last := int64(-1)
	for {
		e, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if body, _, ok := r.Block(); ok && e.Offset != last {
			out, last = append(out, bytes.Clone(body)), e.Offset
		}
	}
}

// Blocks of inputs in order are copied, not compressed again; blocks
// whose frames are not all written as they come (a duplicate, a filter,
// disorder) are compressed as usual, and the frames are the same either
// way.
func TestMergeCopiesBlocks(t *testing.T) {
	var fs []frames.Frame
	for i := range 30000 {
		fs = append(fs, frames.Frame{Channel: 2, Position: frames.Position(i), Payload: fmt.Appendf(nil, "line %d of a capture in order, %x\n", i, i*7919)})
	}
	in := capSpec{desc: descS, catalog: catS(), opts: WriterOptions{Compression: CompressZstd}, frames: fs, ended: true}.build(t)
	inBlocks := blockBodies(t, in)
	if len(inBlocks) < 2 {
		t.Fatalf("input has %d blocks; want several", len(inBlocks))
	}
	out, _, _ := merged(t, inputsOf(map[string][]byte{"a": in}, "a"), MergeOptions{Compression: CompressZstd})
	outBlocks := blockBodies(t, out)
	if len(outBlocks) != len(inBlocks) {
		t.Fatalf("%d blocks out, %d in", len(outBlocks), len(inBlocks))
	}
	for i := range inBlocks {
		if !bytes.Equal(inBlocks[i], outBlocks[i]) {
			t.Errorf("block %d was not copied", i)
		}
	}
	if diff := diffLines(framesOf(outline(t, out)), wantFrames(streamS, fs)); diff != "" {
		t.Error(diff)
	}
	spansOK(t, out)

	// The input twice: the second copy's frames are duplicates, nothing of
	// it is written; with a filter nothing is copied, and the frames are
	// those kept.
	out2, rep, _ := merged(t, inputsOf(map[string][]byte{"a": in}, "a", "a"), MergeOptions{Compression: CompressZstd})
	if !bytes.Equal(out, out2) || rep.Duplicates != 30000 {
		t.Errorf("merging the input twice: %d duplicates, output the same: %v", rep.Duplicates, bytes.Equal(out, out2))
	}
	odd := func(_ frames.StreamID, _ *frames.ChannelDescriptor, f frames.Frame) bool { return f.Position%2 == 1 }
	out3, _, _ := merged(t, inputsOf(map[string][]byte{"a": in}, "a"), MergeOptions{Compression: CompressZstd, Frame: odd})
	var want []frames.Frame
	for _, f := range fs {
		if f.Position%2 == 1 {
			want = append(want, f)
		}
	}
	if diff := diffLines(framesOf(outline(t, out3)), wantFrames(streamS, want)); diff != "" {
		t.Error(diff)
	}
	for _, b := range blockBodies(t, out3) {
		for _, ib := range inBlocks {
			if bytes.Equal(b, ib) {
				t.Fatal("a block of the filtered output is an input block")
			}
		}
	}
}

func BenchmarkMerge(b *testing.B) {
	const n = 200_000
	var fs []frames.Frame
	for i := range n {
		fs = append(fs, frames.Frame{Channel: frames.ChannelID(i%3 + 1), Position: frames.Position(i),
			Payload: fmt.Appendf(nil, `{"seq":%d,"worker":%d,"msg":"handled request %016x in %d ms"}`+"\n", i, i%3, uint64(i)*0x9e3779b97f4a7c15, i%97)})
	}
	named := map[string][]byte{}
	var names []string
	for k := range 4 {
		d := frames.StreamDescriptor{Stream: frames.StreamID{Node: frames.NodeID(fmt.Sprintf("n%d", k)), Life: 1}}
		cat := []frames.ChannelDescriptor{channel(d.Stream, 1), channel(d.Stream, 2), channel(d.Stream, 3)}
		name := fmt.Sprintf("in%d", k)
		named[name] = capSpec{desc: d, catalog: cat, opts: WriterOptions{Compression: CompressZstd}, frames: fs, ended: true}.build(b)
		names = append(names, name)
	}
	ins := inputsOf(named, names...)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		rep, err := Merge(ins, io.Discard, MergeOptions{Compression: CompressZstd})
		if err != nil || rep.Frames != 4*n {
			b.Fatal(err, rep.Frames)
		}
	}
	b.ReportMetric(float64(4*n*b.N)/b.Elapsed().Seconds(), "frames/s")
}

// FuzzMerge merges arbitrary bytes cut in two inputs: no panic, and when
// the merge succeeds its output is a clean capture holding the frames the
// report counts, each stream's in position order (conflicting copies
// aside).
func FuzzMerge(f *testing.F) {
	a := capSpec{desc: descS, catalog: catS(), frames: textFramesAt(0, 20), ended: true}.build(f)
	b := capSpec{desc: descT, catalog: []frames.ChannelDescriptor{channel(streamT, 2)}, opts: WriterOptions{Compression: CompressZstd}, frames: textFramesAt(5, 30), trim: 3}.build(f)
	f.Add(append(bytes.Clone(a), b...), uint16(len(a)))
	f.Add(append(bytes.Clone(b), a...), uint16(len(b)/2))
	f.Add([]byte("not a capture"), uint16(3))
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		k := min(int(cut), len(data))
		ins := inputsOf(map[string][]byte{"x": data[:k], "y": data[k:]}, "x", "y", "x")
		var out bytes.Buffer
		rep, err := Merge(ins, &out, MergeOptions{Compression: CompressZstd, Memory: 1 << 16, TempDir: t.TempDir(), Rand: detRand(1)})
		if err != nil {
			return
		}
		res := readAll(t, out.Bytes(), ReaderOptions{SkipSummaries: true})
		if len(res.corrupt) > 0 || res.err != io.EOF {
			t.Fatalf("output damaged: %v %v", res.corrupt, res.err)
		}
		n := uint64(0)
		last := map[frames.StreamID]frames.Position{}
		for _, e := range res.entries {
			if e.Kind != EntryFrame {
				continue
			}
			n++
			if p, ok := last[e.Stream]; ok && e.Frame.Position <= p && rep.Conflicts == 0 {
				t.Fatalf("stream %s: position %d after %d", e.Stream, e.Frame.Position, p)
			}
			last[e.Stream] = max(last[e.Stream], e.Frame.Position)
		}
		if n < rep.Frames || n > rep.Frames+rep.Conflicts {
			t.Fatalf("output holds %d frames, report says %d (+%d conflicts)", n, rep.Frames, rep.Conflicts)
		}
	})
}

// A merge stops when its context is done, with the context's error.
func TestMergeContext(t *testing.T) {
	in := capSpec{desc: descS, catalog: catS(), frames: textFramesAt(0, 99)}.build(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Merge(inputsOf(map[string][]byte{"a": in}, "a"), io.Discard, MergeOptions{Context: ctx})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want %v", err, context.Canceled)
	}
}

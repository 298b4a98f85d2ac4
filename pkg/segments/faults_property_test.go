package segments_test

// Property tests of merge and the store through the fault-injection
// transport (issue 10, item 6; ARCHITECTURE.md §6): captures of generated
// streams (see assemble_property_test.go) are cut into files anywhere,
// their segments dropped, duplicated, reordered and delayed, and merged
// (segments.Merge) or ingested (Store.Ingest) in any order; the frames
// that come out must be exactly what the pieces hold, whatever their
// order, and merging or ingesting again must change nothing.
//
// A failing case prints its seed and the transport's script. To run one
// case again: DS_PROPERTY_SEED=N go test ./pkg/segments -run 'TestProperty…'.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/segments/internal/faults"
)

// propRead is what a reader finds in a capture, per stream.
type propRead struct {
	frames  map[frames.StreamID][]frames.Frame // in input order, copies included
	ended   map[frames.StreamID]bool
	headSeq map[frames.StreamID]uint64 // sequence number of the stream's first header
	damaged bool
	err     error // a read error other than damage
}

// readCapture reads data with a segments.Reader.
func readCapture(data []byte) propRead {
	res := propRead{frames: map[frames.StreamID][]frames.Frame{}, ended: map[frames.StreamID]bool{}, headSeq: map[frames.StreamID]uint64{}}
	r := segments.NewReader(bytes.NewReader(data), segments.ReaderOptions{})
	for {
		e, err := r.Next()
		if err == io.EOF {
			return res
		}
		var ce *segments.CorruptError
		if errors.As(err, &ce) {
			res.damaged = true
			continue
		}
		if err != nil {
			res.err = err
			return res
		}
		switch e.Kind {
		case segments.EntrySegment:
			if _, ok := res.headSeq[e.Stream]; !ok {
				res.headSeq[e.Stream] = e.Header.Seq
			}
		case segments.EntryFrame:
			res.frames[e.Stream] = append(res.frames[e.Stream], e.Frame)
		case segments.EntryStreamEnded:
			res.ended[e.Stream] = true
		}
	}
}

// distinct returns the first copy of each position of fs, in position
// order.
func distinct(fs []frames.Frame) []frames.Frame {
	seen := map[frames.Position]bool{}
	var out []frames.Frame
	for _, f := range fs {
		if !seen[f.Position] {
			seen[f.Position] = true
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b frames.Frame) int {
		switch {
		case a.Position < b.Position:
			return -1
		case a.Position > b.Position:
			return 1
		}
		return 0
	})
	return out
}

// sameFrames compares two frame lists (position, channel, payload) and
// says where they differ first.
func sameFrames(got, want []frames.Frame) (bool, string) {
	for i := range max(len(got), len(want)) {
		if i >= len(got) || i >= len(want) || got[i].Position != want[i].Position || got[i].Channel != want[i].Channel || !bytes.Equal(got[i].Payload, want[i].Payload) {
			show := func(fs []frames.Frame) string {
				var b strings.Builder
				for _, f := range fs[min(i, len(fs)):min(i+4, len(fs))] {
					fmt.Fprintf(&b, " %d/ch%d/%dB", f.Position, f.Channel, len(f.Payload))
				}
				return b.String()
			}
			return false, fmt.Sprintf("at frame %d of %d (want %d):\n  got %s\n  want%s", i, len(got), len(want), show(got), show(want))
		}
	}
	return true, ""
}

// mergeFiles merges files with segments.Merge (deterministic segment ids,
// small segments) and returns the output.
func mergeFiles(files [][]byte, opts segments.MergeOptions) ([]byte, segments.MergeReport, error) {
	var inputs []segments.MergeInput
	for i, f := range files {
		inputs = append(inputs, segments.MergeInput{Name: fmt.Sprintf("in%d.dss", i), Open: func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(f)), nil
		}})
	}
	var out bytes.Buffer
	rep, err := segments.Merge(inputs, &out, opts)
	return out.Bytes(), rep, err
}

// mergeOpts are the options of the merges of a case: the output's
// segment ids drawn from seed, so that two merges can be compared byte
// for byte.
// mergedInAnotherOrder merges inputs again, shuffled, and says how the
// result differs from res for the streams of world (frames, end, and with
// headSeq the first sequence number): "" when it does not.
func mergedInAnotherOrder(rng *rand.Rand, inputs [][]byte, opts segments.MergeOptions, res propRead, world []propStream, headSeq bool) string {
	other := slices.Clone(inputs)
	rng.Shuffle(len(other), func(i, j int) { other[i], other[j] = other[j], other[i] })
	out2, _, err := mergeFiles(other, opts)
	if err != nil {
		return fmt.Sprintf("merge in another order: %v", err)
	}
	res2 := readCapture(out2)
	for _, st := range world {
		s := st.desc.Stream
		if ok, diff := sameFrames(res2.frames[s], res.frames[s]); !ok {
			return fmt.Sprintf("stream %s: merged in another order, the frames differ %s", s, diff)
		}
		if res2.ended[s] != res.ended[s] || headSeq && res2.headSeq[s] != res.headSeq[s] {
			return fmt.Sprintf("stream %s: merged in another order, ended %v → %v, first sequence number %d → %d", s, res.ended[s], res2.ended[s], res.headSeq[s], res2.headSeq[s])
		}
	}
	return ""
}

func mergeOpts(seed uint64, memory int, tmp string) segments.MergeOptions {
	return segments.MergeOptions{
		SegmentSize: 512, Memory: memory, TempDir: tmp,
		Rand: propRand{rand.New(rand.NewPCG(seed, 7))},
	}
}

// checkCanonical checks that a merge's output is canonical: every stream's
// frames in strictly ascending position order, each position once.
func checkCanonical(out propRead) error {
	if out.damaged || out.err != nil {
		return fmt.Errorf("the output does not read back cleanly (damaged %v, %v)", out.damaged, out.err)
	}
	for s, fs := range out.frames {
		for i := 1; i < len(fs); i++ {
			if fs[i].Position <= fs[i-1].Position {
				return fmt.Errorf("stream %s: position %d after %d in the output", s, fs[i].Position, fs[i-1].Position)
			}
		}
	}
	return nil
}

// checkIdempotent merges out (the output of a merge) again, alone and
// twice: the frames of every stream, their ends and first sequence
// numbers must stay the same, and the second copy must count as
// duplicates. Byte for byte, the output of a merge is not always a fixed
// point (streams are ended, and frames held until the end of input are
// written, in order of first appearance in the inputs, which a shuffled
// input sets), but the output of merging it is: merging that once more
// must give the same bytes.
func checkIdempotent(seed uint64, tmp string, out []byte, total uint64) error {
	res := readCapture(out)
	for i, files := range [][][]byte{{out}, {out, out}} {
		again, rep, err := mergeFiles(files, mergeOpts(seed, 0, tmp))
		if err != nil {
			return fmt.Errorf("merge of the output (%d copies): %v", i+1, err)
		}
		got := readCapture(again)
		for s, fs := range res.frames {
			if ok, diff := sameFrames(got.frames[s], fs); !ok {
				return fmt.Errorf("stream %s: the output merged again (%d copies) holds other frames %s", s, i+1, diff)
			}
			if got.ended[s] != res.ended[s] || got.headSeq[s] != res.headSeq[s] {
				return fmt.Errorf("stream %s: the output merged again (%d copies): ended %v → %v, first sequence number %d → %d", s, i+1, res.ended[s], got.ended[s], res.headSeq[s], got.headSeq[s])
			}
		}
		if want := uint64(i) * total; rep.Duplicates != want || rep.Frames != total {
			return fmt.Errorf("the output merged again (%d copies): %d frames, %d duplicates; want %d, %d", i+1, rep.Frames, rep.Duplicates, total, want)
		}
		third, _, err := mergeFiles([][]byte{again}, mergeOpts(seed, 0, tmp))
		if err != nil {
			return fmt.Errorf("merge of the output merged again: %v", err)
		}
		if !bytes.Equal(third, again) {
			return fmt.Errorf("the output merged again (%d copies), merged once more, differs byte for byte (%d bytes, was %d)", i+1, len(third), len(again))
		}
	}
	return nil
}

// groupFiles splits pieces into files of consecutive pieces, at random.
func groupFiles(rng *rand.Rand, pieces [][]byte) [][]byte {
	var files [][]byte
	var cur []byte
	for i, p := range pieces {
		cur = append(cur, p...)
		if i == len(pieces)-1 || rng.IntN(3) == 0 {
			files = append(files, cur)
			cur = nil
		}
	}
	return files
}

// Through segments.Merge, segment by segment: the segments of every
// stream's capture go through the transport (dropped, duplicated,
// reordered, delayed) and are grouped into files. Merging the files, in
// the transport's order and in another, gives the same frames per stream:
// those of the merge of the original captures, less the frames of the
// segments lost, each position once, in order, with their payloads
// (unknown channels whole); a stream ends (StreamEnded) when a delivered
// segment ended it; a stream whose first segment was lost starts at
// sequence number 1. Merging the output again, or the output twice,
// changes nothing (see checkIdempotent).
func TestPropertyMergeSegments(t *testing.T) {
	tmp := propTempDir(t)
	for _, seed := range propCases(t, 100) {
		tr := faults.New(seed, 0)
		rng := tr.Rand()
		world := propWorld(rng, true)
		segs := propSegments(t, rng, world)
		tr = faults.New(seed, len(segs))
		tr.Random(1+rng.IntN(4), rng.IntN(3) > 0)
		got := faults.Apply(tr.Order(), segs)
		var pieces, originals [][]byte
		for _, sd := range got {
			pieces = append(pieces, sd.data)
		}
		for _, sd := range segs {
			originals = append(originals, sd.data)
		}
		files := groupFiles(rng, pieces)
		memory := propMemory(rng)
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("seed %d (DS_PROPERTY_SEED=%d), memory %d, %d files, streams%s\nscript: %v\n%s", seed, seed, memory, len(files), propDescribe(world), tr.Script(), fmt.Sprintf(format, args...))
		}

		out, rep, err := mergeFiles(files, mergeOpts(seed, memory, tmp))
		if err != nil {
			fail("merge: %v", err)
		}
		full, _, err := mergeFiles([][]byte{bytes.Join(originals, nil)}, mergeOpts(seed, 0, tmp))
		if err != nil {
			fail("merge of the originals: %v", err)
		}
		res, whole := readCapture(out), readCapture(full)
		if err := checkCanonical(res); err != nil {
			fail("%v", err)
		}
		var total uint64
		for _, st := range world {
			s := st.desc.Stream
			delivered := map[frames.Position]bool{}
			first, ended := false, false
			for _, sd := range got {
				if sd.stream == s {
					first = first || sd.seq == 0
					for _, p := range sd.positions {
						delivered[p] = true
					}
				}
			}
			for _, p := range pieces {
				r := readCapture(p)
				ended = ended || r.ended[s]
			}
			var want []frames.Frame
			for _, f := range whole.frames[s] {
				if delivered[f.Position] {
					want = append(want, f)
				}
			}
			if ok, diff := sameFrames(res.frames[s], want); !ok {
				fail("stream %s: the merge differs from the merge of the originals less the segments lost %s", s, diff)
			}
			if ok, diff := sameFrames(want, distinct(want)); !ok || len(want) != len(delivered) {
				fail("stream %s: the merge of the originals is not each frame once %s", s, diff)
			}
			for _, f := range want {
				if !bytes.Equal(f.Payload, st.frames[f.Position].Payload) || f.Channel != st.frames[f.Position].Channel {
					fail("stream %s position %d: not the frame its writer wrote", s, f.Position)
				}
			}
			total += uint64(len(want))
			if res.ended[s] != ended {
				fail("stream %s: ended %v in the output, %v in the pieces", s, res.ended[s], ended)
			}
			if seq, ok := res.headSeq[s]; ok && len(want) > 0 && (seq == 1) != (!first && want[0].Position > 0) {
				fail("stream %s: output starts with sequence number %d; first segment delivered %v, lowest position %d", s, seq, first, want[0].Position)
			}
		}
		if rep.Frames != total || rep.Damaged || rep.Conflicts != 0 {
			fail("report %+v, want %d frames, no damage, no conflict", rep, total)
		}

		// Any order of the files.
		if msg := mergedInAnotherOrder(rng, files, mergeOpts(seed, propMemory(rng), tmp), res, world, true); msg != "" {
			fail("%s", msg)
		}

		if err := checkIdempotent(seed, tmp, out, total); err != nil {
			fail("%v", err)
		}
	}
}

// cutWorld writes every stream of the world and interleaves their
// segments at random into one capture, as one transport would carry
// them.
func cutWorld(t *testing.T, rng *rand.Rand, world []propStream) []byte {
	segs := propSegments(t, rng, world)
	// Each stream's segments keep their order; the streams interleave.
	next := map[frames.StreamID]int{}
	var byStream [][]segmentDelivery
	index := map[frames.StreamID]int{}
	for _, sd := range segs {
		i, ok := index[sd.stream]
		if !ok {
			i = len(byStream)
			index[sd.stream] = i
			byStream = append(byStream, nil)
		}
		byStream[i] = append(byStream[i], sd)
	}
	var out []byte
	for {
		var open []int
		for i, ss := range byStream {
			if next[ss[0].stream] < len(ss) {
				open = append(open, i)
			}
		}
		if len(open) == 0 {
			return out
		}
		ss := byStream[open[rng.IntN(len(open))]]
		out = append(out, ss[next[ss[0].stream]].data...)
		next[ss[0].stream]++
	}
}

// isCaptureBytes reports whether a piece holds a segment header or starts
// like one: what segments.Merge accepts as a DSS capture.
func isCaptureBytes(p []byte) bool {
	return len(p) == 0 || bytes.HasPrefix(p, []byte("\x89DSS\r\n\x1a\n")) || bytes.Contains(p, []byte("\x89DSS\r\n\x1a\n")) && len(readCapture(p).headSeq) > 0
}

// Through segments.Merge, cut anywhere: one capture of all streams is cut
// into files at any byte offset (inside segment headers and records,
// next to StreamEnded records), the files duplicated, reordered and
// delayed by the transport. Merging them in any order gives the same
// frames per stream: every frame a reader finds in some file (the frames
// of a segment cut in two are lost as damage, reported), each position
// once, in order; merging the output again changes nothing. A piece without
// any segment header is no capture: Merge refuses it (ErrNotDSS).
func TestPropertyMergeCuts(t *testing.T) {
	tmp := propTempDir(t)
	refused := 0
	for _, seed := range propCases(t, 120) {
		tr := faults.New(seed, 0)
		rng := tr.Rand()
		world := propWorld(rng, true)
		data := cutWorld(t, rng, world)
		places, err := faults.Places(data)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		cut := faults.New(seed, 0)
		pieces := cut.Cut(data, places, 1+rng.IntN(6))
		tr = faults.New(seed, len(pieces))
		tr.Random(1+rng.IntN(3), false)
		files := faults.Apply(tr.Order(), pieces)
		memory := propMemory(rng)
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("seed %d (DS_PROPERTY_SEED=%d), memory %d, streams%s\ncut: %v\nscript: %v\n%s", seed, seed, memory, propDescribe(world), cut.Script(), tr.Script(), fmt.Sprintf(format, args...))
		}
		var inputs [][]byte
		want := map[frames.StreamID][]frames.Frame{}
		damaged := false
		for _, f := range files {
			if !isCaptureBytes(f) {
				if refused < 20 {
					refused++
					if _, _, err := mergeFiles([][]byte{f}, mergeOpts(seed, 0, tmp)); !errors.Is(err, segments.ErrNotDSS) {
						fail("a piece without a segment header: merge error %v, want ErrNotDSS", err)
					}
				}
				continue
			}
			inputs = append(inputs, f)
			r := readCapture(f)
			damaged = damaged || r.damaged
			for s, fs := range r.frames {
				want[s] = append(want[s], fs...)
			}
		}
		out, rep, err := mergeFiles(inputs, mergeOpts(seed, memory, tmp))
		if err != nil {
			fail("merge: %v", err)
		}
		res := readCapture(out)
		if err := checkCanonical(res); err != nil {
			fail("%v", err)
		}
		for _, st := range world {
			s := st.desc.Stream
			exp := distinct(want[s])
			if ok, diff := sameFrames(res.frames[s], exp); !ok {
				fail("stream %s: the merge differs from the frames the pieces hold %s", s, diff)
			}
			for _, f := range exp {
				if !bytes.Equal(f.Payload, st.frames[f.Position].Payload) {
					fail("stream %s position %d: not the frame its writer wrote", s, f.Position)
				}
			}
		}
		if rep.Damaged != damaged {
			fail("report says damaged %v; reading the pieces, %v", rep.Damaged, damaged)
		}
		if msg := mergedInAnotherOrder(rng, inputs, mergeOpts(seed, propMemory(rng), tmp), res, world, false); msg != "" {
			fail("%s", msg)
		}
		if err := checkIdempotent(seed, tmp, out, rep.Frames); err != nil {
			fail("%v", err)
		}
	}
}

// storeFrames reads every stream of a store back (Store.OpenStream).
func storeFrames(t *testing.T, st *segments.Store) (map[frames.StreamID][]frames.Frame, map[frames.StreamID]bool) {
	t.Helper()
	list, err := st.Streams()
	if err != nil {
		t.Fatal(err)
	}
	out := map[frames.StreamID][]frames.Frame{}
	ended := map[frames.StreamID]bool{}
	for _, ss := range list {
		rc, err := st.OpenStream(ss.Desc.Stream)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		r := readCapture(data)
		if r.damaged || r.err != nil {
			t.Fatalf("stream %s of the store does not read back cleanly (%v)", ss.Desc.Stream, r.err)
		}
		out[ss.Desc.Stream] = distinct(r.frames[ss.Desc.Stream])
		if len(out[ss.Desc.Stream]) != len(r.frames[ss.Desc.Stream]) {
			t.Fatalf("stream %s of the store holds a position twice", ss.Desc.Stream)
		}
		ended[ss.Desc.Stream] = ss.Ended
	}
	return out, ended
}

// ingestAll makes a store in a new directory and ingests the files into
// it, in order.
func ingestAll(t *testing.T, dir string, files [][]byte) (*segments.Store, error) {
	t.Helper()
	st, err := segments.CreateStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range files {
		if _, err := st.Ingest(context.Background(), fmt.Sprintf("in%d.dss", i), bytes.NewReader(f), segments.IngestOptions{}); err != nil {
			return st, fmt.Errorf("ingest of in%d.dss: %w", i, err)
		}
	}
	return st, nil
}

// Through the store: the pieces of a capture (segments dropped,
// duplicated, reordered, delayed, then cut anywhere into files) ingested
// into a store in the transport's order, and into another store in
// another order and twice, give the same stored frames per stream: the
// frames of the merge of the same pieces, each position once, and the
// same ends (StreamEnded); ingesting the same files again stores nothing
// and changes no stream of the store (frames, chunks, bytes, end).
func TestPropertyStoreIngest(t *testing.T) {
	tmp := propTempDir(t)
	root := propTempDir(t)
	for _, seed := range propCases(t, 60) {
		tr := faults.New(seed, 0)
		rng := tr.Rand()
		world := propWorld(rng, true)
		segs := propSegments(t, rng, world)
		tr = faults.New(seed, len(segs))
		tr.Random(1+rng.IntN(3), rng.IntN(2) == 0)
		var data []byte
		for _, sd := range faults.Apply(tr.Order(), segs) {
			data = append(data, sd.data...)
		}
		places, _ := faults.Places(data)
		cut := faults.New(seed, 0)
		var files [][]byte
		for _, f := range cut.Cut(data, places, rng.IntN(4)) {
			if isCaptureBytes(f) && len(f) > 0 {
				files = append(files, f)
			}
		}
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("seed %d (DS_PROPERTY_SEED=%d), streams%s\nscript: %v\ncut: %v\n%s", seed, seed, propDescribe(world), tr.Script(), cut.Script(), fmt.Sprintf(format, args...))
		}
		merged, _, err := mergeFiles(files, mergeOpts(seed, 0, tmp))
		if err != nil {
			fail("merge: %v", err)
		}
		want := readCapture(merged)

		dir := fmt.Sprintf("%s/%d-a", root, seed)
		a, err := ingestAll(t, dir, files)
		if err != nil {
			fail("%v", err)
		}
		gotA, endedA := storeFrames(t, a)
		// Idempotence: the same files again change nothing, not even a
		// file of the store.
		before, err := a.Streams()
		if err != nil {
			fail("%v", err)
		}
		for i, f := range files {
			rep, err := a.Ingest(context.Background(), fmt.Sprintf("again%d.dss", i), bytes.NewReader(f), segments.IngestOptions{})
			if err != nil {
				fail("ingest again: %v", err)
			}
			if rep.Frames != 0 || rep.Conflicts != 0 {
				fail("ingest of in%d.dss again stored %d frames, %d conflicts", i, rep.Frames, rep.Conflicts)
			}
		}
		after, err := a.Streams()
		if err != nil {
			fail("%v", err)
		}
		if !reflect.DeepEqual(before, after) {
			fail("the same files ingested again changed the store:\n  before %+v\n  after  %+v", before, after)
		}
		a.Close()
		other := slices.Clone(files)
		rng.Shuffle(len(other), func(i, j int) { other[i], other[j] = other[j], other[i] })
		b, err := ingestAll(t, fmt.Sprintf("%s/%d-b", root, seed), append(other, files...))
		if err != nil {
			fail("%v", err)
		}
		gotB, endedB := storeFrames(t, b)
		b.Close()
		for _, st := range world {
			s := st.desc.Stream
			if ok, diff := sameFrames(gotA[s], want.frames[s]); !ok {
				fail("stream %s: the store holds other frames than the merge of the same pieces %s", s, diff)
			}
			if ok, diff := sameFrames(gotB[s], gotA[s]); !ok {
				fail("stream %s: ingested in another order and twice, the store holds other frames %s", s, diff)
			}
			if len(want.frames[s]) > 0 && (endedA[s] != want.ended[s] || endedB[s] != endedA[s]) {
				fail("stream %s: ended %v in the store, %v in the other store, %v in the merge", s, endedA[s], endedB[s], want.ended[s])
			}
		}
		os.RemoveAll(dir)
		os.RemoveAll(fmt.Sprintf("%s/%d-b", root, seed))
	}
}

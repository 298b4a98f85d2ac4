package segments_test

// Property tests of the Assembler (ARCHITECTURE.md §6, ARCHITECTURE.md cases 3):
// streams of several nodes and lives are generated at random, delivered
// through the fault-injection transport (pkg/segments/internal/faults) —
// frames or whole segments dropped, duplicated, reordered, delayed — and
// assembled; what comes out must be exactly what the deliveries allow,
// whatever their order.
//
// A failing case prints its seed and the transport's script. To run one
// case again: DS_PROPERTY_SEED=N go test ./pkg/segments -run 'TestProperty…'.

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/segments/internal/faults"
)

// propCases returns the seeds of a property test: n of them (n/10 with
// -short, n/20 under the race detector, which slows them about tenfold;
// n times DS_PROPERTY_SCALE when it is set, for a longer hunt), or the
// one given by DS_PROPERTY_SEED.
func propCases(t *testing.T, n int) []uint64 {
	if s := os.Getenv("DS_PROPERTY_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("DS_PROPERTY_SEED=%q: %v", s, err)
		}
		return []uint64{seed}
	}
	if s := os.Getenv("DS_PROPERTY_SCALE"); s != "" {
		k, err := strconv.ParseFloat(s, 64)
		if err != nil || k <= 0 {
			t.Fatalf("DS_PROPERTY_SCALE=%q: want a positive number", s)
		}
		n = max(int(float64(n)*k), 1)
	}
	switch {
	case propRace:
		n = max(n/20, 1)
	case testing.Short():
		n = max(n/10, 1)
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = uint64(i)
	}
	return seeds
}

// propRace says whether the test binary was built with the race
// detector (its build settings say so).
var propRace = func() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}()

// propStream is one generated stream: its descriptor, the channels it
// declares (and when), and the frames its writer assigned, at positions
// 0..len(frames)-1.
type propStream struct {
	desc     frames.StreamDescriptor
	catalog  []frames.ChannelDescriptor // declared before the first frame
	late     []propDecl                 // declared after some frames
	frames   []frames.Frame
	ended    bool
	unknown  frames.ChannelID // a channel with frames and no descriptor (0: none)
	segSize  int64
	compress segments.Compression
}

// propDecl is a channel declared before the frame at index at.
type propDecl struct {
	at int
	d  frames.ChannelDescriptor
}

// propContents are the content classes channels are drawn from.
var propContents = []frames.ChannelContent{
	frames.TextStream(), frames.Bytes(), frames.JSONRecord("host.cpu"), {Kind: frames.KindJSONRecord},
}

// propNodes are node names, some of them awkward (a '#', non-ASCII).
var propNodes = []frames.NodeID{"node-alpha", "n#1", "ünïcode", "b"}

// propWorld generates one to four streams: one to three nodes, the first
// with up to three lives; each stream with one to three declared channels
// of random content classes, sometimes a channel without a descriptor,
// sometimes a channel declared part-way, and StreamEnded on some. With
// small, streams are shorter.
func propWorld(rng *rand.Rand, small bool) []propStream {
	nodes := 1 + rng.IntN(3)
	var out []propStream
	for n := range nodes {
		lives := 1
		if n == 0 {
			lives = 1 + rng.IntN(3)
		}
		base := rng.Uint64N(1 << 62)
		for l := range lives {
			id := frames.StreamID{Node: propNodes[(n+int(base))%len(propNodes)], Life: frames.Life(base + uint64(l))}
			out = append(out, propNewStream(rng, id, small))
		}
	}
	// Node names are drawn with a rotation: two "nodes" may share a name,
	// which makes more lives of one node, never one stream twice.
	seen := map[frames.StreamID]bool{}
	kept := out[:0]
	for _, s := range out {
		if !seen[s.desc.Stream] {
			seen[s.desc.Stream] = true
			kept = append(kept, s)
		}
	}
	return kept
}

func propNewStream(rng *rand.Rand, id frames.StreamID, small bool) propStream {
	st := propStream{
		desc:     frames.StreamDescriptor{Stream: id, Origin: frames.StreamOrigin(rng.IntN(3))},
		segSize:  int64(64 + rng.IntN(600)),
		compress: segments.Compression(rng.IntN(2)),
		ended:    rng.IntN(2) == 0,
	}
	if rng.IntN(3) == 0 {
		label := "label " + strconv.Itoa(rng.IntN(10))
		st.desc.Label = &label
	}
	maxFrames := 80
	if small {
		maxFrames = 30
	}
	n := rng.IntN(maxFrames + 1)
	nch := 1 + rng.IntN(3)
	var chans []frames.ChannelID
	for i := range nch {
		d := frames.ChannelDescriptor{Stream: id, ID: frames.ChannelID(i + 1), Name: fmt.Sprintf("ch.%d", i+1), Content: propContents[rng.IntN(len(propContents))]}
		if i > 0 && n > 0 && rng.IntN(3) == 0 {
			st.late = append(st.late, propDecl{at: rng.IntN(n), d: d})
		} else {
			st.catalog = append(st.catalog, d)
		}
		chans = append(chans, d.ID)
	}
	if rng.IntN(3) == 0 {
		st.unknown = frames.ChannelID(90 + rng.IntN(10))
		chans = append(chans, st.unknown)
	}
	var prev []byte
	for p := range n {
		ch := chans[rng.IntN(len(chans))]
		var payload []byte
		switch {
		case ch == st.unknown:
			// An unknown channel's payload is bytes no view can name:
			// it must survive whole.
			payload = make([]byte, 100+rng.IntN(200))
			for i := range payload {
				payload[i] = byte(i * 7)
			}
			payload[0] = byte(p)
		case prev != nil && rng.IntN(6) == 0:
			payload = bytes.Clone(prev) // the same bytes at another position: two frames
		case rng.IntN(10) == 0:
			payload = []byte("\x89DSS\r\n\x1a\n") // DSS bytes in a payload
		default:
			payload = make([]byte, rng.IntN(40))
			for i := range payload {
				payload[i] = byte(rng.IntN(256))
			}
		}
		prev = payload
		st.frames = append(st.frames, frames.Frame{Channel: ch, Position: frames.Position(p), Payload: payload})
	}
	return st
}

// propRand is a deterministic source of segment ids.
type propRand struct{ rng *rand.Rand }

func (r propRand) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = byte(r.rng.Uint32())
	}
	return len(b), nil
}

// capture writes the stream as a DSS capture of small segments, as its
// writer would: channels declared part-way start new segments, flushes
// come at random, and the stream is ended (StreamEnded) or left open.
func (st propStream) capture(t testing.TB, rng *rand.Rand) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := segments.NewWriter(&buf, st.desc, st.catalog, segments.WriterOptions{
		SegmentSize: st.segSize, Compression: st.compress, BlockSize: 64 + rng.IntN(300), Rand: propRand{rng},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range st.frames {
		for _, d := range st.late {
			if d.at == i {
				if err := w.DeclareChannel(d.d); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
		if rng.IntN(8) == 0 {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if st.ended {
		err = w.Close()
	} else {
		err = w.Flush()
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// propDelivery is one frame of one stream, as a transport delivers it.
type propDelivery struct {
	s frames.StreamID
	f frames.Frame
}

func (d propDelivery) String() string { return fmt.Sprintf("%s@%d", d.s, d.f.Position) }

// interleave returns the frames of all streams, each stream's in order,
// the streams interleaved at random (as several producers' frames arrive
// at one store).
func interleave(rng *rand.Rand, world []propStream) []propDelivery {
	next := make([]int, len(world))
	var out []propDelivery
	for {
		var open []int
		for i, st := range world {
			if next[i] < len(st.frames) {
				open = append(open, i)
			}
		}
		if len(open) == 0 {
			return out
		}
		i := open[rng.IntN(len(open))]
		out = append(out, propDelivery{world[i].desc.Stream, world[i].frames[next[i]]})
		next[i]++
	}
}

// propItem is an Item as a test keeps it: the payload copied.
type propItem struct {
	kind segments.ItemKind
	pos  frames.Position
	ch   frames.ChannelID
	data string
	gap  segments.Gap
}

func (it propItem) String() string {
	switch it.kind {
	case segments.ItemFrame:
		return fmt.Sprintf("%d", it.pos)
	case segments.ItemGap:
		return fmt.Sprintf("gap%d-%d(%d)", it.gap.From, it.gap.To, it.gap.Count)
	case segments.ItemTrimmed:
		return fmt.Sprintf("trimmed%d-%d(%d)", it.gap.From, it.gap.To, it.gap.Count)
	case segments.ItemStart:
		return fmt.Sprintf("start%d", it.pos)
	case segments.ItemLate:
		return fmt.Sprintf("late%d", it.pos)
	case segments.ItemConflict:
		return fmt.Sprintf("conflict%d", it.pos)
	}
	return fmt.Sprintf("kind%d", it.kind)
}

// propRun is what one assembly gave: the items of each stream, in order.
type propRun struct {
	items map[frames.StreamID][]propItem
	order []frames.StreamID // Streams()
	stats map[frames.StreamID]segments.StreamStats
	spill uint64
}

// assemble feeds deliveries (and, per stream, a trim horizon first) to a
// new Assembler and flushes it.
func assemble(t *testing.T, opts segments.AssemblerOptions, trims map[frames.StreamID]frames.Position, ds ...[]propDelivery) propRun {
	t.Helper()
	run := propRun{items: map[frames.StreamID][]propItem{}, stats: map[frames.StreamID]segments.StreamStats{}}
	a := segments.NewAssemblerWith(opts, func(it segments.Item) {
		// The payload is valid during the call only.
		run.items[it.Stream] = append(run.items[it.Stream], propItem{kind: it.Kind, pos: it.Frame.Position, ch: it.Frame.Channel, data: string(it.Frame.Payload), gap: it.Gap})
	})
	for s, h := range trims {
		a.Trim(s, h)
	}
	for _, d := range ds {
		for _, x := range d {
			a.Add(x.s, x.f)
		}
	}
	a.Flush()
	if err := a.Err(); err != nil {
		t.Fatalf("assembler: %v", err)
	}
	run.order = a.Streams()
	for _, s := range run.order {
		run.stats[s] = a.Stats(s)
	}
	run.spill, _ = a.Spilled()
	if err := a.Close(); err != nil {
		t.Fatalf("assembler close: %v", err)
	}
	return run
}

// expectItems returns the items a stream's deliveries must give: the
// distinct positions delivered at or above the trim horizon, ascending,
// with the first copy's payload, and an interior gap for each hole between
// them; no leading or trailing gap; ItemTrimmed first when there is a
// horizon (also for a stream trimmed whole: a view says so).
func expectItems(ds []propDelivery, s frames.StreamID, horizon frames.Position) []propItem {
	first := map[frames.Position]frames.Frame{}
	for _, d := range ds {
		if d.s != s || d.f.Position < horizon {
			continue
		}
		if _, ok := first[d.f.Position]; !ok {
			first[d.f.Position] = d.f
		}
	}
	var pos []frames.Position
	for p := range first {
		pos = append(pos, p)
	}
	slices.Sort(pos)
	var out []propItem
	if horizon > 0 {
		out = append(out, propItem{kind: segments.ItemTrimmed, gap: segments.Gap{From: 0, To: horizon - 1, Count: uint64(horizon)}})
	}
	for i, p := range pos {
		if i > 0 && p > pos[i-1]+1 {
			out = append(out, propItem{kind: segments.ItemGap, gap: segments.Gap{From: pos[i-1] + 1, To: p - 1, Count: uint64(p - pos[i-1] - 1)}})
		}
		f := first[p]
		out = append(out, propItem{kind: segments.ItemFrame, pos: p, ch: f.Channel, data: string(f.Payload)})
	}
	return out
}

// sameItems compares two item lists, and says where they differ first.
func sameItems(a, b []propItem) (bool, string) {
	for i := range max(len(a), len(b)) {
		if i >= len(a) || i >= len(b) || a[i] != b[i] {
			return false, fmt.Sprintf("at item %d:\n  got  %v\n  want %v", i, a[min(i, len(a)):min(i+5, len(a))], b[min(i, len(b)):min(i+5, len(b))])
		}
	}
	return true, ""
}

// propTempDir returns a new directory for spill files and stores: in
// memory (/dev/shm) where there is one, since tests with small memory
// budgets make a spill file for every few frames, and a store syncs every
// commit; else a test directory.
func propTempDir(t *testing.T) string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "ds-prop-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}

// propMemory draws the assembler's memory budget: mostly the default,
// sometimes small enough that held frames are spilled to files now and
// then, and now and then so small that every frame held is spilled (each
// spill makes a file: those cases are kept few, for time).
func propMemory(rng *rand.Rand) int {
	switch rng.IntN(32) {
	case 0:
		return 1 + rng.IntN(1024)
	case 1, 2, 3, 4, 5, 6:
		return 4096 + rng.IntN(16384)
	}
	return 0
}

func propDescribe(world []propStream) string {
	var b strings.Builder
	for _, st := range world {
		fmt.Fprintf(&b, " %s:%d frames", st.desc.Stream, len(st.frames))
		if st.unknown != 0 {
			fmt.Fprintf(&b, " (unknown channel %d)", st.unknown)
		}
	}
	return b.String()
}

// Through the Assembler, frame by frame (ARCHITECTURE.md §6): whatever the
// transport does — drops, duplicates, reversed windows, permutations,
// delays — each stream comes out as its distinct delivered positions in
// order, each with its first copy's payload (unknown channels whole, the
// same bytes at two positions as two frames), with a gap exactly where
// assigned frames were lost between two delivered ones, no leading or
// trailing gap, nothing late, no stream merged with another life of its
// node, duplicates counted only for positions delivered more than once.
// Feeding everything twice (idempotence) or in another order (order
// independence) gives the same items; a small memory budget, which
// spills held frames to files, changes nothing.
func TestPropertyAssemblerFrames(t *testing.T) {
	spilled := uint64(0)
	tmp := propTempDir(t)
	for _, seed := range propCases(t, 1500) {
		tr := faults.New(seed, 0)
		rng := tr.Rand()
		world := propWorld(rng, false)
		sent := interleave(rng, world)
		tr = faults.New(seed, len(sent))
		tr.Random(1+rng.IntN(4), rng.IntN(3) > 0)
		got := faults.Apply(tr.Order(), sent)
		opts := segments.AssemblerOptions{Memory: propMemory(rng), TempDir: tmp}
		trims := map[frames.StreamID]frames.Position{}
		for _, st := range world {
			if len(st.frames) > 0 && rng.IntN(6) == 0 {
				trims[st.desc.Stream] = frames.Position(rng.IntN(len(st.frames) + 1))
			}
		}
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("seed %d (DS_PROPERTY_SEED=%d), memory %d, trims %v, streams%s\nscript: %v\n%s", seed, seed, opts.Memory, trims, propDescribe(world), tr.Script(), fmt.Sprintf(format, args...))
		}

		once := assemble(t, opts, trims, got)
		spilled += once.spill
		delivered := map[frames.StreamID]int{}
		below := map[frames.StreamID]uint64{}
		for _, d := range got {
			delivered[d.s]++
			if d.f.Position < trims[d.s] {
				below[d.s]++
			}
		}
		for _, st := range world {
			s := st.desc.Stream
			want := expectItems(got, s, trims[s])
			if ok, diff := sameItems(once.items[s], want); !ok {
				fail("stream %s: items differ from the deliveries %s", s, diff)
			}
			stats := once.stats[s]
			distinct := uint64(0)
			for _, it := range want {
				if it.kind == segments.ItemFrame {
					distinct++
				}
			}
			dups := uint64(delivered[s]) - distinct - below[s]
			if stats.Frames != distinct || stats.Duplicates != dups || stats.Conflicts != 0 || stats.Late != 0 || stats.Trimmed != below[s] {
				fail("stream %s: stats %+v; want %d frames, %d duplicates, %d trimmed, no conflict, nothing late", s, stats, distinct, dups, below[s])
			}
		}
		for s := range once.items {
			if !slices.ContainsFunc(world, func(st propStream) bool { return st.desc.Stream == s }) {
				fail("items of stream %s, which was never sent", s)
			}
		}

		twice := assemble(t, opts, trims, got, got)
		for _, st := range world {
			s := st.desc.Stream
			if ok, diff := sameItems(twice.items[s], once.items[s]); !ok {
				fail("stream %s: fed twice, the items differ %s", s, diff)
			}
		}

		other := slices.Clone(got)
		rng.Shuffle(len(other), func(i, j int) { other[i], other[j] = other[j], other[i] })
		perm := assemble(t, segments.AssemblerOptions{Memory: propMemory(rng), TempDir: tmp}, trims, other)
		for _, st := range world {
			s := st.desc.Stream
			if ok, diff := sameItems(perm.items[s], once.items[s]); !ok {
				fail("stream %s: in another order, the items differ %s", s, diff)
			}
		}
	}
	if spilled == 0 && os.Getenv("DS_PROPERTY_SEED") == "" {
		t.Fatal("no case spilled a frame: the small memory budgets do not reach the spill files")
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Fatalf("spill files left behind: %v", left)
	}
}

// Conflicts (ARCHITECTURE.md case 3.2, ARCHITECTURE.md §6): a different payload for a
// delivered identity, in any order and any number of copies, never
// replaces the first copy to arrive; with AssemblerOptions.Compare each
// later copy that differs from the winner is reported as a conflict
// (ItemConflict, StreamStats.Conflicts), and identical copies as
// duplicates.
func TestPropertyAssemblerConflicts(t *testing.T) {
	tmp := propTempDir(t)
	for _, seed := range propCases(t, 1000) {
		tr := faults.New(seed, 0)
		rng := tr.Rand()
		world := propWorld(rng, true)
		sent := interleave(rng, world)
		// Forge other payloads for some identities.
		for _, d := range slices.Clone(sent) {
			if rng.IntN(4) == 0 {
				f := d.f
				f.Payload = append(bytes.Clone(f.Payload), byte(1+rng.IntN(255)))
				sent = append(sent, propDelivery{d.s, f})
			}
		}
		tr = faults.New(seed, len(sent))
		tr.Random(1+rng.IntN(4), false)
		got := faults.Apply(tr.Order(), sent)
		opts := segments.AssemblerOptions{Memory: propMemory(rng), TempDir: tmp, Compare: 1 << 14}
		run := assemble(t, opts, nil, got)
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("seed %d (DS_PROPERTY_SEED=%d), memory %d, streams%s\nscript: %v\n%s", seed, seed, opts.Memory, propDescribe(world), tr.Script(), fmt.Sprintf(format, args...))
		}
		for _, st := range world {
			s := st.desc.Stream
			winner := map[frames.Position]string{}
			conflicts, dups := uint64(0), uint64(0)
			for _, d := range got {
				if d.s != s {
					continue
				}
				w, ok := winner[d.f.Position]
				switch {
				case !ok:
					winner[d.f.Position] = string(d.f.Payload)
				case w == string(d.f.Payload):
					dups++
				default:
					conflicts++
				}
			}
			var nconf uint64
			for _, it := range run.items[s] {
				switch it.kind {
				case segments.ItemFrame:
					if it.data != winner[it.pos] {
						fail("stream %s position %d: payload %q, the first copy delivered was %q", s, it.pos, it.data, winner[it.pos])
					}
				case segments.ItemConflict:
					nconf++
					if it.data == winner[it.pos] {
						fail("stream %s position %d: the winning payload reported as a conflict", s, it.pos)
					}
				case segments.ItemLate, segments.ItemStart:
					fail("stream %s: unexpected %v", s, it)
				}
			}
			stats := run.stats[s]
			if stats.Conflicts != conflicts || nconf != conflicts || stats.Duplicates != dups || stats.Frames != uint64(len(winner)) {
				fail("stream %s: stats %+v, %d ItemConflict; want %d frames, %d conflicts, %d duplicates", s, stats, nconf, len(winner), conflicts, dups)
			}
		}
	}
}

// segmentDelivery is one segment of a capture, as a transport delivers
// it, with what it holds.
type segmentDelivery struct {
	stream    frames.StreamID
	seq       uint64
	positions []frames.Position
	data      []byte
}

// propSegments writes every stream of the world and splits the captures
// into segments.
func propSegments(t *testing.T, rng *rand.Rand, world []propStream) []segmentDelivery {
	t.Helper()
	var out []segmentDelivery
	for _, st := range world {
		data := st.capture(t, rng)
		segs, err := faults.Segments(data)
		if err != nil {
			t.Fatalf("stream %s: %v", st.desc.Stream, err)
		}
		for _, seg := range segs {
			r := segments.NewReader(bytes.NewReader(seg), segments.ReaderOptions{})
			sd := segmentDelivery{stream: st.desc.Stream, data: seg}
			for {
				e, err := r.Next()
				if err != nil {
					break
				}
				switch e.Kind {
				case segments.EntrySegment:
					sd.seq = e.Header.Seq
				case segments.EntryFrame:
					sd.positions = append(sd.positions, e.Frame.Position)
				}
			}
			out = append(out, sd)
		}
	}
	return out
}

// Through the reader and the Assembler, segment by segment: captures of
// small segments, whole segments dropped, duplicated, reordered and
// delayed, concatenated into one input as a transport would hand them on
// and read back (segment headers to Assembler.Segment, frames to Add):
// each stream comes out as the positions of the segments delivered, with
// gaps exactly where segments were lost between them; a stream whose
// first segment (sequence number 0) was lost starts with ItemStart at its
// lowest position delivered, and no other does; the result is the same
// for any order of the segments, and for the segments delivered twice.
func TestPropertyAssemblerSegments(t *testing.T) {
	tmp := propTempDir(t)
	for _, seed := range propCases(t, 200) {
		tr := faults.New(seed, 0)
		rng := tr.Rand()
		world := propWorld(rng, false)
		segs := propSegments(t, rng, world)
		tr = faults.New(seed, len(segs))
		tr.Random(1+rng.IntN(4), rng.IntN(3) > 0)
		got := faults.Apply(tr.Order(), segs)
		opts := segments.AssemblerOptions{Memory: propMemory(rng), TempDir: tmp}
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("seed %d (DS_PROPERTY_SEED=%d), memory %d, streams%s\nscript: %v\n%s", seed, seed, opts.Memory, propDescribe(world), tr.Script(), fmt.Sprintf(format, args...))
		}
		read := func(segs []segmentDelivery, opts segments.AssemblerOptions) propRun {
			var all []byte
			for _, sd := range segs {
				all = append(all, sd.data...)
			}
			run := propRun{items: map[frames.StreamID][]propItem{}, stats: map[frames.StreamID]segments.StreamStats{}}
			a := segments.NewAssemblerWith(opts, func(it segments.Item) {
				run.items[it.Stream] = append(run.items[it.Stream], propItem{kind: it.Kind, pos: it.Frame.Position, ch: it.Frame.Channel, data: string(it.Frame.Payload), gap: it.Gap})
			})
			defer a.Close()
			if err := feedCapture(a, all); err != nil {
				fail("reading the delivered segments: %v", err)
			}
			a.Flush()
			if err := a.Err(); err != nil {
				fail("assembler: %v", err)
			}
			for _, s := range a.Streams() {
				run.stats[s] = a.Stats(s)
			}
			return run
		}
		run := read(got, opts)
		for _, st := range world {
			s := st.desc.Stream
			var ds []propDelivery
			first := false
			for _, sd := range got {
				if sd.stream != s {
					continue
				}
				first = first || sd.seq == 0
				for _, p := range sd.positions {
					ds = append(ds, propDelivery{s, st.frames[p]})
				}
			}
			want := expectItems(ds, s, 0)
			if len(want) > 0 && want[0].pos > 0 && !first {
				want = append([]propItem{{kind: segments.ItemStart, pos: want[0].pos}}, want...)
			}
			if ok, diff := sameItems(run.items[s], want); !ok {
				fail("stream %s: items differ from the segments delivered %s", s, diff)
			}
			if stats := run.stats[s]; stats.Late != 0 || stats.Conflicts != 0 {
				fail("stream %s: stats %+v", s, stats)
			}
		}
		twice := read(append(slices.Clone(got), got...), opts)
		other := slices.Clone(got)
		rng.Shuffle(len(other), func(i, j int) { other[i], other[j] = other[j], other[i] })
		perm := read(other, segments.AssemblerOptions{Memory: propMemory(rng), TempDir: tmp})
		for _, st := range world {
			s := st.desc.Stream
			if ok, diff := sameItems(twice.items[s], run.items[s]); !ok {
				fail("stream %s: segments delivered twice, the items differ %s", s, diff)
			}
			if ok, diff := sameItems(perm.items[s], run.items[s]); !ok {
				fail("stream %s: segments in another order, the items differ %s", s, diff)
			}
		}
	}
}

// Issue 10's reproduction, scaled down: a capture split at a segment
// header and read second half first. A frame that arrives more than
// 65,536 frames late was taken for an identical duplicate without having
// been seen; now every frame comes out, once, in order, whatever the
// distance, within a memory budget that forces spills (and through
// Merge as through the Assembler).
func TestPropertyLateBeyondHistory(t *testing.T) {
	n := 150_000
	if testing.Short() || propRace {
		n = 70_000 // still past 65,536
	}
	s := frames.StreamID{Node: "big", Life: 1}
	st := propStream{desc: frames.StreamDescriptor{Stream: s}, segSize: 64 << 10, ended: true,
		catalog: []frames.ChannelDescriptor{{Stream: s, ID: 1, Name: "out", Content: frames.TextStream()}}}
	for p := range n {
		st.frames = append(st.frames, frames.Frame{Channel: 1, Position: frames.Position(p), Payload: []byte(strconv.Itoa(p) + "\n")})
	}
	data := st.capture(t, rand.New(rand.NewPCG(1, 2)))
	segs, err := faults.Segments(data)
	if err != nil {
		t.Fatal(err)
	}
	half := len(segs) / 2
	first, last := bytes.Join(segs[:half], nil), bytes.Join(segs[half:], nil)

	tmp := propTempDir(t)
	var got []frames.Position
	a := segments.NewAssemblerWith(segments.AssemblerOptions{Memory: 1 << 20, TempDir: tmp}, func(it segments.Item) {
		if it.Kind != segments.ItemFrame {
			t.Fatalf("item %v at %d", it.Kind, it.Frame.Position)
		}
		got = append(got, it.Frame.Position)
	})
	for _, part := range [][]byte{last, first} {
		if err := feedCapture(a, part); err != nil {
			t.Fatal(err)
		}
	}
	a.Flush()
	if err := a.Err(); err != nil {
		t.Fatal(err)
	}
	stats := a.Stats(s)
	spilled, _ := a.Spilled()
	a.Close()
	if len(got) != n || !slices.IsSorted(got) || got[0] != 0 || stats.Duplicates != 0 || stats.Late != 0 || stats.Gaps != 0 {
		t.Fatalf("%d of %d frames, stats %+v", len(got), n, stats)
	}
	if spilled == 0 {
		t.Fatal("nothing spilled: the memory budget does not bite")
	}

	out, rep, err := mergeFiles([][]byte{last, first}, segments.MergeOptions{Memory: 1 << 20, TempDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	res := readCapture(out)
	if err := checkCanonical(res); err != nil {
		t.Fatal(err)
	}
	if len(res.frames[s]) != n || rep.Frames != uint64(n) || rep.Duplicates != 0 || rep.Gaps != 0 || !res.ended[s] {
		t.Fatalf("merge: %d of %d frames, report %+v, ended %v", len(res.frames[s]), n, rep, res.ended[s])
	}
}

// feedCapture reads a capture's segment headers and frames into a, as a
// view's sink does; it returns the first error of the reader but io.EOF.
func feedCapture(a *segments.Assembler, capture []byte) error {
	r := segments.NewReader(bytes.NewReader(capture), segments.ReaderOptions{})
	var e segments.Entry
	for {
		if err := r.NextView(&e); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		switch e.Kind {
		case segments.EntrySegment:
			a.Segment(e.Stream, e.Header.Seq)
		case segments.EntryFrame:
			a.Add(e.Stream, e.Frame)
		}
	}
}

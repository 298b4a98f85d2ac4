package segments

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ds-telemetry/ds/pkg/catalogfile"
	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// stCapture returns a capture of desc holding frs (in the order given),
// with the catalog chans, ended with StreamEnded when ended.
func stCapture(t testing.TB, desc frames.StreamDescriptor, chans []frames.ChannelDescriptor, frs []frames.Frame, ended bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, desc, chans, WriterOptions{Rand: detRand(uint64(len(frs))), Compression: CompressZstd})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range frs {
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	if ended {
		err = w.Close()
	} else {
		err = w.Flush()
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// stFrames returns frames at the given positions on channel 2, each with
// the payload "<stream> line <pos>".
func stFrames(id frames.StreamID, positions ...frames.Position) []frames.Frame {
	var out []frames.Frame
	for _, p := range positions {
		out = append(out, frames.Frame{Channel: 2, Position: p, Payload: fmt.Appendf(nil, "%s line %d\n", id, p)})
	}
	return out
}

func stRange(lo, hi frames.Position) []frames.Position {
	var out []frames.Position
	for p := lo; p <= hi; p++ {
		out = append(out, p)
	}
	return out
}

// stRead is what a store's read-out of one stream holds.
type stRead struct {
	horizon frames.Position
	frames  []frames.Frame // visible (at or above the horizon), by position
	raw     int            // frames in the byte stream, hidden ones included
	ended   bool
	chans   []frames.ChannelDescriptor
}

// stReadStream reads stream id out of s, failing on damage, and on a
// position stored twice.
func stReadStream(t testing.TB, s *Store, id frames.StreamID) stRead {
	t.Helper()
	rc, err := s.OpenStream(id)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var out stRead
	seen := map[frames.Position]bool{}
	r := NewReader(rc, ReaderOptions{})
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("read %s: %v", id, err)
		}
		if e.Stream != id {
			t.Fatalf("read %s: entry of %s", id, e.Stream)
		}
		switch e.Kind {
		case EntrySegment:
			out.chans = e.Header.Channels
		case EntryTrimmed:
			out.horizon = max(out.horizon, e.Frame.Position)
		case EntryFrame:
			out.raw++
			if seen[e.Frame.Position] {
				t.Fatalf("%s: position %d stored twice", id, e.Frame.Position)
			}
			seen[e.Frame.Position] = true
			out.frames = append(out.frames, e.Frame)
		case EntryStreamEnded:
			out.ended = true
		}
	}
	out.frames = slices.DeleteFunc(out.frames, func(f frames.Frame) bool { return f.Position < out.horizon })
	slices.SortFunc(out.frames, func(a, b frames.Frame) int { return cmp.Compare(a.Position, b.Position) })
	return out
}

func stPositions(frs []frames.Frame) []frames.Position {
	var out []frames.Position
	for _, f := range frs {
		out = append(out, f.Position)
	}
	return out
}

func stNewStore(t testing.TB) *Store {
	t.Helper()
	s, err := CreateStore(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// stIngest ingests data as one input and returns the report; warnings
// are collected in *warns when warns is not nil.
func stIngest(t testing.TB, s *Store, name string, data []byte, warns *[]error) IngestReport {
	t.Helper()
	rep, err := s.Ingest(context.Background(), name, bytes.NewReader(data), IngestOptions{Warn: func(err error) {
		if warns != nil {
			*warns = append(*warns, err)
		}
	}})
	if err != nil {
		t.Fatalf("ingest %s: %v", name, err)
	}
	return rep
}

var stChans = []frames.ChannelDescriptor{channel(streamS, 1), channel(streamS, 2)}

func TestStoreCreateOpen(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "a", "b", "store")
	if IsStore(dir) {
		t.Fatal("IsStore before creation")
	}
	if _, err := OpenStore(dir); !errors.Is(err, ErrNotStore) {
		t.Fatalf("OpenStore of nothing: %v, want ErrNotStore", err)
	}
	s, err := CreateStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.Dir() != dir || !IsStore(dir) {
		t.Fatalf("Dir %q, IsStore %v", s.Dir(), IsStore(dir))
	}
	for _, name := range []string{"ds-store", "lock", "streams", "consumers", "tmp"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("store lacks %s: %v", name, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "ds-store")); string(b) != "ds-store 1\n" {
		t.Errorf("marker %q", b)
	}
	s.Close()
	// Again: opened, not refused.
	s, err = CreateStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = OpenStore(dir); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// An empty directory becomes a store.
	empty := filepath.Join(root, "empty")
	os.Mkdir(empty, 0o755)
	if s, err = CreateStore(empty); err != nil {
		t.Fatalf("empty directory: %v", err)
	}
	s.Close()

	notEmpty := filepath.Join(root, "full")
	os.Mkdir(notEmpty, 0o755)
	os.WriteFile(filepath.Join(notEmpty, "notes.txt"), []byte("x"), 0o644)
	if _, err := CreateStore(notEmpty); !errors.Is(err, ErrNotStore) || !strings.Contains(err.Error(), "notes.txt") {
		t.Errorf("non-empty directory: %v", err)
	}
	if _, err := OpenStore(notEmpty); !errors.Is(err, ErrNotStore) {
		t.Errorf("OpenStore of a plain directory: %v", err)
	}
	file := filepath.Join(root, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	if _, err := CreateStore(file); !errors.Is(err, ErrNotStore) {
		t.Errorf("CreateStore of a file: %v", err)
	}
	if _, err := OpenStore(file); !errors.Is(err, ErrNotStore) {
		t.Errorf("OpenStore of a file: %v", err)
	}
	newer := filepath.Join(root, "newer")
	os.Mkdir(newer, 0o755)
	os.WriteFile(filepath.Join(newer, "ds-store"), []byte("ds-store 2\n"), 0o644)
	if _, err := OpenStore(newer); !errors.Is(err, ErrStoreFormat) || !strings.Contains(err.Error(), "version") {
		t.Errorf("store of version 2: %v", err)
	}
	if !IsStore(newer) {
		t.Error("a store of another version is still a store")
	}
}

func TestStoreIngestReadBack(t *testing.T) {
	s := stNewStore(t)
	fs := stFrames(streamS, stRange(0, 99)...)
	chansT := []frames.ChannelDescriptor{channel(streamT, 2)}
	ft := stFrames(streamT, stRange(0, 9)...)
	data := slices.Concat(stCapture(t, descS, stChans, fs, true), stCapture(t, descT, chansT, ft, false))
	var acked []Commit
	rep, err := s.Ingest(context.Background(), "run.dss", bytes.NewReader(data), IngestOptions{Acked: func(c Commit) { acked = append(acked, c) }})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Frames != 110 || rep.Duplicates != 0 || rep.Conflicts != 0 || rep.Damaged {
		t.Errorf("report %+v", rep)
	}
	// A commit at S's StreamEnded, one at the end.
	if len(acked) != 2 || rep.Commits != 2 {
		t.Fatalf("commits %+v", acked)
	}
	if acked[0].Frames != 100 || !slices.Equal(acked[0].Streams, []frames.StreamID{streamS}) || acked[0].Offset <= 0 {
		t.Errorf("first commit %+v", acked[0])
	}
	if acked[1].Frames != 10 || acked[1].Offset != int64(len(data)) || acked[1].Input != "run.dss" {
		t.Errorf("last commit %+v (input %d bytes)", acked[1], len(data))
	}
	got := stReadStream(t, s, streamS)
	if !slices.EqualFunc(got.frames, fs, func(a, b frames.Frame) bool { return a.Position == b.Position && bytes.Equal(a.Payload, b.Payload) }) || !got.ended || got.horizon != 0 {
		t.Errorf("stream S read back: %d frames, ended %v, horizon %d", len(got.frames), got.ended, got.horizon)
	}
	if len(got.chans) != 2 || got.chans[1].Name != "proc.trainer.stdout" {
		t.Errorf("catalog in the chunk header: %+v", got.chans)
	}
	streams, err := s.Streams()
	if err != nil {
		t.Fatal(err)
	}
	if len(streams) != 2 || streams[0].Desc.Stream != streamS || streams[1].Desc != descT && streams[1].Desc.Stream != streamT {
		t.Fatalf("streams %+v", streams)
	}
	if a := streams[0]; a.Frames != 100 || !a.Ended || a.Chunks != 1 || a.Bytes <= 0 || a.Before != 0 {
		t.Errorf("S: %+v", a)
	}
	if chans, err := s.Channels(streamS); err != nil || len(chans) != 2 || chans[1].Name != "proc.trainer.stdout" {
		t.Errorf("Channels(S) = %+v, %v", chans, err)
	}
	if _, err := s.Channels(frames.StreamID{Node: "node-none", Life: 1}); !errors.Is(err, ErrNoStream) {
		t.Errorf("Channels of a stream not held: %v, want ErrNoStream", err)
	}
	if b := streams[1]; b.Frames != 10 || b.Ended || b.Desc.Label == nil || *b.Desc.Label != "beta" || b.Desc.Origin != frames.OriginBootstrap {
		t.Errorf("T: %+v", b)
	}
	// Names survive: the catalog file.
	cat, err := catalogfile.ReadFile(filepath.Join(s.Dir(), "streams", StreamDirName(streamS), "catalog.json"))
	if err != nil {
		t.Fatal(err)
	}
	if ch, ok := cat.LookupName(streamS, "host.resource"); !ok || ch.Descriptor.ID != 1 || ch.Source != "run.dss" {
		t.Errorf("catalog.json: %+v %v", ch, ok)
	}
	if _, err := s.OpenStream(frames.StreamID{Node: "nobody", Life: 1}); !errors.Is(err, ErrNoStream) {
		t.Errorf("OpenStream of an unknown stream: %v", err)
	}
}

func TestStoreIdempotent(t *testing.T) {
	s := stNewStore(t)
	data := stCapture(t, descS, stChans, stFrames(streamS, stRange(0, 499)...), true)
	if rep := stIngest(t, s, "a", data, nil); rep.Frames != 500 {
		t.Fatalf("first ingest %+v", rep)
	}
	before := stListFiles(t, s.Dir())
	var commits []Commit
	rep, err := s.Ingest(context.Background(), "a", bytes.NewReader(data), IngestOptions{Acked: func(c Commit) { commits = append(commits, c) }})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Frames != 0 || rep.Duplicates != 500 || rep.Conflicts != 0 {
		t.Errorf("second ingest %+v", rep)
	}
	for _, c := range commits {
		if len(c.Streams) != 0 {
			t.Errorf("a commit of nothing new changed %v", c.Streams)
		}
	}
	if after := stListFiles(t, s.Dir()); !slices.Equal(before, after) {
		t.Errorf("the same capture twice changed the store:\n%v\n%v", before, after)
	}
	if got := stReadStream(t, s, streamS); len(got.frames) != 500 || got.raw != 500 {
		t.Errorf("%d frames (%d raw)", len(got.frames), got.raw)
	}
}

// stListFiles lists the files of dir (relative paths and sizes), tmp/ left
// out.
func stListFiles(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() || strings.HasPrefix(rel, "tmp"+string(filepath.Separator)) {
			return nil
		}
		fi, _ := d.Info()
		out = append(out, fmt.Sprintf("%s %d", rel, fi.Size()))
		return nil
	})
	return out
}

// TestStoreOrderIndependence cuts two streams into random pieces at
// random frame boundaries, copies some pieces twice, drops the StreamEnded
// record into any piece, and ingests the pieces in a random order, as
// separate inputs and as concatenations: the store always ends up with
// the same frames, each once, and the end.
func TestStoreOrderIndependence(t *testing.T) {
	const n = 300
	chansT := []frames.ChannelDescriptor{channel(streamT, 2)}
	allS := stFrames(streamS, stRange(0, n-1)...)
	allT := stFrames(streamT, stRange(0, n/3)...)
	runs := 12
	if testing.Short() {
		runs = 4
	}
	for seed := range uint64(runs) {
		rng := rand.New(rand.NewPCG(seed, 99))
		var pieces [][]byte
		for _, st := range []struct {
			desc  frames.StreamDescriptor
			chans []frames.ChannelDescriptor
			all   []frames.Frame
		}{{descS, stChans, allS}, {descT, chansT, allT}} {
			perm := slices.Clone(st.all)
			if seed%2 == 1 {
				rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
			}
			endPiece := -1
			for len(perm) > 0 {
				k := 1 + rng.IntN(min(len(perm), n/5))
				piece := perm[:k]
				perm = perm[k:]
				ended := endPiece < 0 && rng.IntN(4) == 0 || len(perm) == 0 && endPiece < 0
				if ended {
					endPiece = len(pieces)
				}
				p := stCapture(t, st.desc, st.chans, piece, ended)
				pieces = append(pieces, p)
				if rng.IntN(3) == 0 {
					pieces = append(pieces, p) // a duplicated delivery
				}
			}
		}
		rng.Shuffle(len(pieces), func(i, j int) { pieces[i], pieces[j] = pieces[j], pieces[i] })
		s := stNewStore(t)
		for i := 0; i < len(pieces); {
			k := 1 + rng.IntN(3) // one input of up to 3 pieces, concatenated
			data := slices.Concat(pieces[i:min(i+k, len(pieces))]...)
			i += k
			var warns []error
			rep := stIngest(t, s, fmt.Sprintf("piece%d", i), data, &warns)
			if rep.Conflicts != 0 || rep.Damaged || len(warns) > 0 {
				t.Fatalf("seed %d: %+v %v", seed, rep, warns)
			}
		}
		for _, want := range []struct {
			id  frames.StreamID
			all []frames.Frame
		}{{streamS, allS}, {streamT, allT}} {
			got := stReadStream(t, s, want.id)
			if !slices.EqualFunc(got.frames, want.all, func(a, b frames.Frame) bool {
				return a.Position == b.Position && a.Channel == b.Channel && bytes.Equal(a.Payload, b.Payload)
			}) {
				t.Fatalf("seed %d: %s read back %v", seed, want.id, stPositions(got.frames))
			}
			if !got.ended {
				t.Errorf("seed %d: %s: the end was not stored", seed, want.id)
			}
		}
	}
}

func TestStoreConflicts(t *testing.T) {
	s := stNewStore(t)
	a := []frames.Frame{{Channel: 1, Position: 0, Payload: []byte("a")}, {Channel: 1, Position: 1, Payload: []byte("one")}}
	stIngest(t, s, "first.dss", stCapture(t, descS, stChans, a, false), nil)
	// Position 0 again with another payload, position 1 on another
	// channel, position 2 twice in one batch with two payloads.
	b := []frames.Frame{{Channel: 1, Position: 0, Payload: []byte("b")}, {Channel: 2, Position: 1, Payload: []byte("one")},
		{Channel: 1, Position: 2, Payload: []byte("x")}, {Channel: 1, Position: 2, Payload: []byte("y")}, {Channel: 1, Position: 2, Payload: []byte("x")}}
	var warns []error
	rep := stIngest(t, s, "second.dss", stCapture(t, descS, stChans, b, false), &warns)
	if rep.Frames != 1 || rep.Conflicts != 3 || rep.Duplicates != 1 {
		t.Errorf("report %+v", rep)
	}
	if len(warns) != 3 {
		t.Fatalf("warnings %v", warns)
	}
	var fc *FrameConflictError
	if !errors.As(warns[0], &fc) || fc.Input != "second.dss" || fc.Stream != streamS || !strings.HasPrefix(warns[0].Error(), "second.dss: node-alpha#1 position") {
		t.Errorf("warning %v", warns[0])
	}
	var positions []frames.Position
	for _, w := range warns {
		errors.As(w, &fc)
		positions = append(positions, fc.Position)
	}
	slices.Sort(positions)
	if !slices.Equal(positions, []frames.Position{0, 1, 2}) {
		t.Errorf("conflicts at %v", positions)
	}
	got := stReadStream(t, s, streamS)
	want := []string{"a", "one", "x"}
	for i, f := range got.frames {
		if string(f.Payload) != want[i] || f.Channel != 1 {
			t.Errorf("position %d: channel %d %q, want the first copy %q", f.Position, f.Channel, f.Payload, want[i])
		}
	}
	if len(got.frames) != 3 {
		t.Errorf("%d frames", len(got.frames))
	}
}

func TestStoreCatalogConflict(t *testing.T) {
	s := stNewStore(t)
	stIngest(t, s, "first.dss", stCapture(t, descS, stChans, stFrames(streamS, 0, 1), false), nil)
	other := []frames.ChannelDescriptor{channel(streamS, 1), {Stream: streamS, ID: 2, Name: "proc.other.stdout", Content: frames.TextStream()}}
	chansT := []frames.ChannelDescriptor{channel(streamT, 2)}
	data := slices.Concat(stCapture(t, descS, other, stFrames(streamS, 2, 3), false), stCapture(t, descT, chansT, stFrames(streamT, 0), false))
	rep, err := s.Ingest(context.Background(), "second.dss", bytes.NewReader(data), IngestOptions{})
	if !errors.Is(err, catalogfile.ErrConflict) || !strings.Contains(err.Error(), "second.dss: stream node-alpha#1") {
		t.Fatalf("err %v", err)
	}
	if rep.Frames != 1 {
		t.Errorf("report %+v: T's frame should be stored", rep)
	}
	if got := stReadStream(t, s, streamS); !slices.Equal(stPositions(got.frames), []frames.Position{0, 1}) {
		t.Errorf("S holds %v", stPositions(got.frames))
	}
	if got := stReadStream(t, s, streamT); len(got.frames) != 1 {
		t.Errorf("T holds %v", stPositions(got.frames))
	}
	// A conflict inside one input: the stream is refused from there on.
	s2 := stNewStore(t)
	data = slices.Concat(stCapture(t, descS, stChans, stFrames(streamS, 0), false), stCapture(t, descS, other, stFrames(streamS, 1), false))
	if _, err := s2.Ingest(context.Background(), "x", bytes.NewReader(data), IngestOptions{}); !errors.Is(err, catalogfile.ErrConflict) {
		t.Errorf("conflict within an input: %v", err)
	}
	// A stream descriptor that differs (another label) is a conflict too.
	relabelled := descS
	relabelled.Label = ptr("other")
	if _, err := s.Ingest(context.Background(), "y", bytes.NewReader(stCapture(t, relabelled, stChans, stFrames(streamS, 9), false)), IngestOptions{}); !errors.Is(err, catalogfile.ErrConflict) {
		t.Errorf("descriptor conflict: %v", err)
	}
}

// stTrimStore is ARCHITECTURE.md cases 6's store: S with positions 0..9, one frame
// each, in the chunks 0–2, 3–6 and 7–9.
func stTrimStore(t *testing.T) *Store {
	s := stNewStore(t)
	for _, r := range [][2]frames.Position{{0, 2}, {3, 6}, {7, 9}} {
		stIngest(t, s, "in", stCapture(t, descS, stChans, stFrames(streamS, stRange(r[0], r[1])...), false), nil)
	}
	if ss, _ := s.Streams(); len(ss) != 1 || ss[0].Chunks != 3 {
		t.Fatalf("setup: %+v", ss)
	}
	return s
}

func TestStoreTrim(t *testing.T) {
	s := stTrimStore(t)
	// A horizon below everything deletes nothing, idempotently.
	for range 2 {
		rep, err := s.Trim(streamS, 0)
		if err != nil || rep != (TrimReport{Stream: streamS}) {
			t.Fatalf("trim --before 0: %+v %v", rep, err)
		}
	}
	plan, err := s.PlanTrim(streamS, 5)
	if err != nil || plan != (TrimReport{Stream: streamS, Before: 5, Frames: 5, Files: 1}) {
		t.Fatalf("plan: %+v %v", plan, err)
	}
	if got := stReadStream(t, s, streamS); got.horizon != 0 || len(got.frames) != 10 {
		t.Fatal("a plan changed the store")
	}
	rep, err := s.Trim(streamS, 5)
	if err != nil || rep != (TrimReport{Stream: streamS, Before: 5, Frames: 5, Files: 1}) {
		t.Fatalf("trim --before 5: %+v %v", rep, err)
	}
	got := stReadStream(t, s, streamS)
	if got.horizon != 5 || !slices.Equal(stPositions(got.frames), stRange(5, 9)) {
		t.Errorf("after trim: horizon %d, %v", got.horizon, stPositions(got.frames))
	}
	if got.raw != 7 {
		t.Errorf("chunk 3–6 straddles the horizon and stays: %d raw frames, want 7", got.raw)
	}
	ss, _ := s.Streams()
	if ss[0].Before != 5 || ss[0].Frames != 5 || ss[0].Chunks != 2 {
		t.Errorf("Streams after trim: %+v", ss[0])
	}
	// The same trim again, and a lower one: 0, the horizon stays.
	for _, h := range []frames.Position{5, 3, 0} {
		if rep, err := s.Trim(streamS, h); err != nil || rep != (TrimReport{Stream: streamS, Before: 5}) {
			t.Errorf("trim --before %d again: %+v %v", h, rep, err)
		}
	}
	// A frame below the horizon arriving again is dropped, counted.
	rep2 := stIngest(t, s, "late", stCapture(t, descS, stChans, stFrames(streamS, 1, 4, 5), false), nil)
	if rep2.Trimmed != 2 || rep2.Duplicates != 1 || rep2.Frames != 0 {
		t.Errorf("ingest below the horizon: %+v", rep2)
	}
	// Up to 7: frames 5 and 6 go, and chunk 3–6 with them.
	if rep, err := s.Trim(streamS, 7); err != nil || rep != (TrimReport{Stream: streamS, Before: 7, Frames: 2, Files: 1}) {
		t.Errorf("trim --before 7: %+v %v", rep, err)
	}
	if got := stReadStream(t, s, streamS); got.horizon != 7 || !slices.Equal(stPositions(got.frames), stRange(7, 9)) || got.raw != 3 {
		t.Errorf("after trim 7: %+v", got)
	}
	// Past everything: every chunk goes, the horizon stays.
	if rep, err := s.Trim(streamS, 100); err != nil || rep != (TrimReport{Stream: streamS, Before: 100, Frames: 3, Files: 1}) {
		t.Errorf("trim --before 100: %+v %v", rep, err)
	}
	ss, _ = s.Streams()
	if ss[0].Frames != 0 || ss[0].Chunks != 0 || ss[0].Before != 100 {
		t.Errorf("emptied: %+v", ss[0])
	}
	if _, err := s.Trim(streamT, 5); !errors.Is(err, ErrNoStream) {
		t.Errorf("trim of an unknown stream: %v", err)
	}
}

// TestStoreTrimStraddle trims inside one chunk twice: the frames counted
// are those newly hidden, never twice.
func TestStoreTrimStraddle(t *testing.T) {
	s := stNewStore(t)
	stIngest(t, s, "in", stCapture(t, descS, stChans, stFrames(streamS, stRange(0, 9)...), false), nil)
	for _, c := range []struct {
		h      frames.Position
		frames uint64
		files  int
	}{{3, 3, 0}, {6, 3, 0}, {6, 0, 0}, {10, 4, 1}} {
		rep, err := s.Trim(streamS, c.h)
		if err != nil || rep.Frames != c.frames || rep.Files != c.files {
			t.Errorf("trim %d: %+v %v, want %d frames, %d files", c.h, rep, err, c.frames, c.files)
		}
		ss, _ := s.Streams()
		if want := 10 - uint64(min(c.h, 10)); ss[0].Frames != want {
			t.Errorf("after trim %d: Streams says %d frames, want %d", c.h, ss[0].Frames, want)
		}
	}
}

func TestStoreTrimBytes(t *testing.T) {
	s := stNewStore(t)
	chansT := []frames.ChannelDescriptor{channel(streamT, 2)}
	// S: chunks 0–9, 10–19; then T: 0–9; then S: 20–29. Older first.
	big := func(id frames.StreamID, lo, hi frames.Position) []frames.Frame {
		var out []frames.Frame
		rng := rand.New(rand.NewPCG(uint64(lo), 1))
		for p := lo; p <= hi; p++ {
			b := make([]byte, 1000)
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			out = append(out, frames.Frame{Channel: 2, Position: p, Payload: b})
		}
		return out
	}
	steps := []struct {
		desc  frames.StreamDescriptor
		chans []frames.ChannelDescriptor
		lo    frames.Position
	}{{descS, stChans, 0}, {descS, stChans, 10}, {descT, chansT, 0}, {descS, stChans, 20}}
	now := time.Now().Add(-time.Hour)
	for i, st := range steps {
		// T ends; S does not: S's newest chunk is never deleted.
		stIngest(t, s, "in", stCapture(t, st.desc, st.chans, big(st.desc.Stream, st.lo, st.lo+9), st.desc.Stream == streamT), nil)
		// Make the ages distinct whatever the file system's clock grain.
		dir := filepath.Join(s.Dir(), "streams", StreamDirName(st.desc.Stream), "chunks")
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), fmt.Sprintf("%020d-", st.lo)) {
				os.Chtimes(filepath.Join(dir, e.Name()), now.Add(time.Duration(i)*time.Minute), now.Add(time.Duration(i)*time.Minute))
			}
		}
	}
	ss, _ := s.Streams()
	var total int64
	for _, st := range ss {
		total += st.Bytes
	}
	chunk := total / 4
	// Keep about two chunks' worth: S 0–9 and S 10–19 go (the oldest).
	plan, err := s.PlanTrimBytes(total - chunk - chunk/2)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Reports) != 1 || plan.Reports[0] != (TrimReport{Stream: streamS, Before: 20, Frames: 20, Files: 2}) {
		t.Fatalf("plan %+v", plan)
	}
	if plan.Bytes > total-chunk-chunk/2 || plan.Bytes < chunk {
		t.Errorf("plan leaves %d bytes, want at most %d", plan.Bytes, total-chunk-chunk/2)
	}
	reps, err := s.TrimBytes(total - chunk - chunk/2)
	if err != nil || !slices.Equal(reps, plan.Reports) {
		t.Fatalf("TrimBytes %+v %v, plan was %+v", reps, err, plan)
	}
	// Keep less than a chunk: T 0–9 goes (T ended); S 20–29, the newest
	// chunk of a stream that has not ended, stays, whatever the budget.
	reps, err = s.TrimBytes(chunk / 2)
	if err != nil || len(reps) != 1 || reps[0] != (TrimReport{Stream: streamT, Before: 10, Frames: 10, Files: 1}) {
		t.Fatalf("TrimBytes to nothing: %+v %v", reps, err)
	}
	plan, err = s.PlanTrimBytes(0)
	if err != nil || len(plan.Reports) != 0 || plan.Bytes < chunk/2 {
		t.Errorf("nothing left to trim but the live chunk: %+v %v", plan, err)
	}
	if rd := stReadStream(t, s, streamS); len(rd.frames) != 10 || rd.frames[0].Position != 20 {
		t.Errorf("S after the trims: %d frames, want 20–29", len(rd.frames))
	}
}

func TestStoreConsumers(t *testing.T) {
	s := stNewStore(t)
	if _, found, err := s.Consumer("c1"); found || err != nil {
		t.Fatalf("unsaved consumer: %v %v", found, err)
	}
	if err := s.SaveConsumer("c1", map[frames.StreamID]frames.Position{streamS: 5}); err != nil {
		t.Fatal(err)
	}
	// A save below is a silent no-op; another stream is added.
	if err := s.SaveConsumer("c1", map[frames.StreamID]frames.Position{streamS: 3, streamT: 0}); err != nil {
		t.Fatal(err)
	}
	cur, found, err := s.Consumer("c1")
	if err != nil || !found || len(cur) != 2 || cur[streamS] != 5 || cur[streamT] != 0 {
		t.Errorf("cursor %v %v %v, want S 5, T 0", cur, found, err)
	}
	if err := s.SaveConsumer("c1", map[frames.StreamID]frames.Position{streamS: 8}); err != nil {
		t.Fatal(err)
	}
	if cur, _, _ := s.Consumer("c1"); cur[streamS] != 8 || cur[streamT] != 0 {
		t.Errorf("after save 8: %v", cur)
	}
	// Dangerous and case-only-different names are distinct and stay in
	// consumers/.
	names := []string{"C1", "../../escape", "/", "a\x00b", strings.Repeat("x", 10000), ".hidden", ""}
	for i, name := range names {
		err := s.SaveConsumer(name, map[frames.StreamID]frames.Position{streamS: frames.Position(100 + i)})
		if name == "" {
			if err == nil {
				t.Error("an empty consumer name was accepted")
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
	}
	for i, name := range names[:len(names)-1] {
		if cur, found, err := s.Consumer(name); err != nil || !found || cur[streamS] != frames.Position(100+i) {
			t.Errorf("%.20q: %v %v %v", name, cur, found, err)
		}
	}
	list, err := s.Consumers()
	if err != nil {
		t.Fatal(err)
	}
	want := append([]string{"c1"}, names[:len(names)-1]...)
	slices.Sort(want)
	if !slices.Equal(list, want) {
		t.Errorf("Consumers() = %.60q", list)
	}
	entries, _ := os.ReadDir(filepath.Join(s.Dir(), "consumers"))
	if len(entries) != len(want) {
		t.Errorf("%d consumer files for %d consumers", len(entries), len(want))
	}
	stNothingOutside(t, s)
}

// stNothingOutside checks that the store's parent holds nothing but the
// store.
func stNothingOutside(t *testing.T, s *Store) {
	t.Helper()
	entries, _ := os.ReadDir(filepath.Dir(s.Dir()))
	if len(entries) != 1 || entries[0].Name() != filepath.Base(s.Dir()) {
		t.Errorf("files beside the store: %v", entries)
	}
}

func TestStoreDangerousNodeNames(t *testing.T) {
	s := stNewStore(t)
	nodes := []frames.NodeID{"../../escape", "..", ".", "/", "/etc/passwd", "a/b", "a\x00b", "", frames.NodeID(strings.Repeat("n", 10000)),
		"Node", "node", "NODE", "node~0123456789abcdef", "névé", ".hidden", "-dash", "con", "a\\b"}
	for i, node := range nodes {
		id := frames.StreamID{Node: node, Life: 7}
		desc := frames.StreamDescriptor{Stream: id}
		chans := []frames.ChannelDescriptor{{Stream: id, ID: 1, Name: "x", Content: frames.TextStream()}}
		fr := []frames.Frame{{Channel: 1, Position: 0, Payload: fmt.Appendf(nil, "frame of node %d", i)}}
		stIngest(t, s, "in", stCapture(t, desc, chans, fr, false), nil)
		// Another life of the same node is another directory.
		id2 := frames.StreamID{Node: node, Life: 8}
		chans[0].Stream = id2
		stIngest(t, s, "in", stCapture(t, frames.StreamDescriptor{Stream: id2}, chans, fr, false), nil)
	}
	entries, err := os.ReadDir(filepath.Join(s.Dir(), "streams"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2*len(nodes) {
		t.Errorf("%d stream directories for %d streams", len(entries), 2*len(nodes))
	}
	for _, e := range entries {
		if n := e.Name(); !e.IsDir() || len(n) > 49 || strings.HasPrefix(n, ".") || strings.ToLower(n) != n {
			t.Errorf("stream directory %q", n)
		}
	}
	ss, err := s.Streams()
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 2*len(nodes) {
		t.Fatalf("Streams: %d", len(ss))
	}
	for i, node := range nodes {
		got := stReadStream(t, s, frames.StreamID{Node: node, Life: 7})
		if len(got.frames) != 1 || string(got.frames[0].Payload) != fmt.Sprintf("frame of node %d", i) {
			t.Errorf("node %.20q: %v", node, got.frames)
		}
	}
	stNothingOutside(t, s)
	if n := StreamDirName(frames.StreamID{Node: "Node", Life: 7}); !strings.HasPrefix(n, "node~") || len(n) != 21 {
		t.Errorf("StreamDirName(Node#7) = %q", n)
	}
	if n := StreamDirName(frames.StreamID{Node: "../x", Life: 7}); !strings.HasPrefix(n, "_._x~") {
		t.Errorf("StreamDirName(../x#7) = %q", n)
	}
}

// TestStoreConcurrentIngest runs ingesters of overlapping captures at once,
// each with its own Store (its own lock file descriptor, as another
// process would have) or sharing one: the store ends with the union, each
// frame once.
func TestStoreConcurrentIngest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s0, err := CreateStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s0.Close()
	const workers = 4
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := s0
			if w%2 == 1 {
				s1, err := OpenStore(dir)
				if err != nil {
					errs <- err
					return
				}
				defer s1.Close()
				s = s1
			}
			// Worker w: positions w*50 .. w*50+149, in pieces of 10.
			for lo := frames.Position(w * 50); lo < frames.Position(w*50+150); lo += 10 {
				data := stCapture(t, descS, stChans, stFrames(streamS, stRange(lo, lo+9)...), false)
				if _, err := s.Ingest(context.Background(), fmt.Sprint("w", w), bytes.NewReader(data), IngestOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := stReadStream(t, s0, streamS)
	if !slices.Equal(stPositions(got.frames), stRange(0, 3*50+149)) {
		t.Errorf("union: %v", stPositions(got.frames))
	}
	ss, _ := s0.Streams()
	if ss[0].Frames != 300 {
		t.Errorf("Streams: %+v", ss[0])
	}
}

// TestStoreLiveInput feeds a pipe: what is written is committed within the
// commit interval while the pipe stays open, and ending the context
// commits what is buffered.
func TestStoreLiveInput(t *testing.T) {
	s := stNewStore(t)
	pr, pw := io.Pipe()
	defer pw.Close()
	acked := make(chan Commit, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var rep IngestReport
	go func() {
		var err error
		rep, err = s.Ingest(ctx, "-", pr, IngestOptions{CommitInterval: 50 * time.Millisecond, Acked: func(c Commit) { acked <- c }})
		done <- err
	}()
	data := stCapture(t, descS, stChans, stFrames(streamS, stRange(0, 9)...), false)
	if _, err := pw.Write(data); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-acked:
		if c.Frames != 10 || c.Input != "-" {
			t.Errorf("commit %+v", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no commit while the pipe is open")
	}
	if got := stReadStream(t, s, streamS); len(got.frames) != 10 {
		t.Errorf("acknowledged frames not readable: %d", len(got.frames))
	}
	// More, then the context ends before the interval: committed anyway.
	more := stCapture(t, descS, stChans, stFrames(streamS, 10, 11), false)
	go pw.Write(more)
	time.Sleep(20 * time.Millisecond)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Ingest after cancel: %v", err)
	}
	if rep.Frames+uint64(0) < 10 {
		t.Errorf("report %+v", rep)
	}
	got := stReadStream(t, s, streamS)
	if len(got.frames) != int(rep.Frames) {
		t.Errorf("report says %d frames, store holds %d", rep.Frames, len(got.frames))
	}
}

func TestStoreDamagedInput(t *testing.T) {
	s := stNewStore(t)
	var data []byte
	for lo := frames.Position(0); lo < 30; lo += 10 {
		data = append(data, stCapture(t, descS, stChans, stFrames(streamS, stRange(lo, lo+9)...), false)...)
	}
	seg := len(data) / 3
	data[seg+seg/2] ^= 0xFF // inside the second capture's records
	data = data[:len(data)-3]
	var warns []error
	rep := stIngest(t, s, "bad.dss", data, &warns)
	if !rep.Damaged || len(warns) < 2 {
		t.Fatalf("report %+v, warnings %v", rep, warns)
	}
	if !strings.HasPrefix(warns[0].Error(), "bad.dss: bytes ") || !strings.Contains(warns[len(warns)-1].Error(), "torn tail") {
		t.Errorf("warnings %v", warns)
	}
	var ce *CorruptError
	if !errors.As(warns[0], &ce) {
		t.Errorf("warning without its CorruptError: %v", warns[0])
	}
	got := stReadStream(t, s, streamS)
	if len(got.frames) == 0 || got.frames[0].Position != 0 || int(rep.Frames) != len(got.frames) || len(got.frames) >= 30 {
		t.Errorf("kept %v", stPositions(got.frames))
	}
}

// TestStoreCrashLeftovers plays what a kill -9 leaves: temporary files
// (removed at the next open), a chunk renamed but not in stream.json's
// index (counted, and read, all the same), and a trim that died after
// writing the horizon (its chunks below are hidden and deleted by the
// next trim).
func TestStoreCrashLeftovers(t *testing.T) {
	s := stTrimStore(t)
	dir := filepath.Join(s.Dir(), "streams", StreamDirName(streamS))
	metaPath := filepath.Join(dir, "stream.json")
	meta, _ := os.ReadFile(metaPath)
	stIngest(t, s, "in", stCapture(t, descS, stChans, stFrames(streamS, 10, 11), true), nil)
	os.WriteFile(metaPath, meta, 0o644) // the index from before the last commit
	os.WriteFile(filepath.Join(s.Dir(), "tmp", "chunk-123.tmp"), []byte("half a chunk"), 0o644)
	s.Close()
	s, err := OpenStore(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Opening deletes nothing (a reader never does); the first change does.
	if entries, _ := os.ReadDir(filepath.Join(s.Dir(), "tmp")); len(entries) != 1 {
		t.Errorf("tmp/ after open: %v, want the leftover still there", entries)
	}
	ss, err := s.Streams()
	if err != nil || ss[0].Frames != 12 || ss[0].Chunks != 4 || !ss[0].Ended {
		t.Errorf("Streams with a stale index: %+v %v", ss, err)
	}
	// A duplicate of the unindexed chunk's frames is still a duplicate.
	if rep := stIngest(t, s, "again", stCapture(t, descS, stChans, stFrames(streamS, 11), false), nil); rep.Duplicates != 1 {
		t.Errorf("re-ingest: %+v", rep)
	}
	if entries, _ := os.ReadDir(filepath.Join(s.Dir(), "tmp")); len(entries) != 0 {
		t.Errorf("tmp/ after a change: %v", entries)
	}
	// A trim that died after its horizon: chunk 0–2 still there.
	os.WriteFile(filepath.Join(dir, "horizon"), []byte("5\n"), 0o644)
	got := stReadStream(t, s, streamS)
	if got.horizon != 5 || !slices.Equal(stPositions(got.frames), stRange(5, 11)) || got.raw != 11-3+1 {
		t.Errorf("read after a half trim: horizon %d %v raw %d", got.horizon, stPositions(got.frames), got.raw)
	}
	if rep, err := s.Trim(streamS, 6); err != nil || rep.Frames != 1 || rep.Files != 1 {
		t.Errorf("the next trim: %+v %v", rep, err)
	}
}

// TestStoreReingestTrimmedReadOut ingests a trimmed stream's read-out into
// another store: the Trimmed record keeps the hidden frames out.
func TestStoreReingestTrimmedReadOut(t *testing.T) {
	s := stTrimStore(t)
	if _, err := s.Trim(streamS, 5); err != nil {
		t.Fatal(err)
	}
	rc, err := s.OpenStream(streamS)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(rc)
	rc.Close()
	s2 := stNewStore(t)
	rep, err := s2.Ingest(context.Background(), "copy", bytes.NewReader(data), IngestOptions{Store: true})
	if err != nil || rep.Frames != 5 || rep.Trimmed != 2 {
		t.Errorf("report %+v, %v", rep, err)
	}
	if got := stReadStream(t, s2, streamS); !slices.Equal(stPositions(got.frames), stRange(5, 9)) || got.horizon != 0 {
		t.Errorf("copy holds %v (horizon %d)", stPositions(got.frames), got.horizon)
	}

	// The same bytes as a capture file (not a store's read-out): its
	// Trimmed record is not this store's word and hides nothing.
	s3 := stNewStore(t)
	if rep := stIngest(t, s3, "capture", data, nil); rep.Frames != 7 || rep.Trimmed != 0 {
		t.Errorf("capture file: report %+v, want the 7 frames it holds stored", rep)
	}
	if got := stReadStream(t, s3, streamS); !slices.Equal(stPositions(got.frames), stRange(3, 9)) {
		t.Errorf("capture file: store holds %v", stPositions(got.frames))
	}
}

// TestStoreTrimHead: a stream whose source kept it only from position 5
// (frames 5–9 ingested) gets horizon 5 and nothing is deleted; a second
// call with a higher horizon is refused (frames 5–9 are stored below it),
// as is one for a stream with frames below the horizon asked; a stream the
// store lacks is ErrNoStream.
func TestStoreTrimHead(t *testing.T) {
	s := stNewStore(t)
	stIngest(t, s, "head", stCapture(t, descS, stChans, stFrames(streamS, stRange(5, 9)...), false), nil)
	if ok, err := s.TrimHead(streamS, 5); !ok || err != nil {
		t.Fatalf("TrimHead(5) = %v, %v", ok, err)
	}
	got := stReadStream(t, s, streamS)
	if got.horizon != 5 || !slices.Equal(stPositions(got.frames), stRange(5, 9)) {
		t.Errorf("after TrimHead: horizon %d, %v", got.horizon, stPositions(got.frames))
	}
	if ok, err := s.TrimHead(streamS, 7); ok || err != nil {
		t.Errorf("TrimHead(7) over stored frames = %v, %v", ok, err)
	}
	if ok, err := s.TrimHead(streamS, 3); ok || err != nil {
		t.Errorf("TrimHead(3) below the horizon = %v, %v", ok, err)
	}
	if got := stReadStream(t, s, streamS); got.horizon != 5 || len(got.frames) != 5 {
		t.Errorf("refused calls changed the stream: horizon %d, %v", got.horizon, stPositions(got.frames))
	}
	if _, err := s.TrimHead(frames.StreamID{Node: "nobody", Life: 1}, 1); !errors.Is(err, ErrNoStream) {
		t.Errorf("unknown stream: %v", err)
	}
}

// FuzzStoreFiles feeds the decoders of a store's small files: no panic,
// and what decodes re-encodes to the same thing.
func FuzzStoreFiles(f *testing.F) {
	f.Add([]byte(`{"version":1,"descriptor":{"stream":{"node":"n1","life":7},"label":null,"origin":"RemoteNode"},"ended":true,"chunks":[{"name":"00000000000000000000-00000000000000000009-0123456789abcdef.dss","frames":10,"horizon":5,"below":5}]}`))
	f.Add([]byte(`{"version":1,"name":"c1","cursor":[{"stream":{"node":"n","life":1},"position":5}]}`))
	f.Add([]byte("42\n"))
	f.Add([]byte("end-0123456789abcdef.dss"))
	f.Add([]byte(`{"version":2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if m, err := parseStoreMeta(b); err == nil {
			out, err := m.marshal()
			if err != nil {
				t.Fatal(err)
			}
			m2, err := parseStoreMeta(out)
			if err != nil {
				t.Fatalf("re-encoded stream.json does not read: %v\n%s", err, out)
			}
			out2, _ := m2.marshal()
			if !bytes.Equal(out, out2) {
				t.Fatalf("stream.json does not round-trip:\n%s\n%s", out, out2)
			}
		}
		if h, err := parseStoreHorizon(b); err == nil {
			if h2, err := parseStoreHorizon(fmt.Appendf(nil, "%d\n", h)); err != nil || h2 != h {
				t.Fatalf("horizon %d re-reads as %d, %v", h, h2, err)
			}
		}
		if c, err := parseStoreConsumer(b); err == nil && c.Name == "" {
			t.Fatal("a consumer without a name")
		}
		if c, ok := parseStoreChunkName(string(b)); ok {
			if c.name != string(b) || !c.empty && c.first > c.last {
				t.Fatalf("chunk name %q: %+v", b, c)
			}
		}
	})
}

// TestTrimmedRecord writes a Trimmed record between frames and reads it
// back in place, plain and inside a block; a malformed one is damage.
func TestTrimmedRecord(t *testing.T) {
	for _, comp := range []Compression{CompressNone, CompressZstd} {
		var buf bytes.Buffer
		w, err := NewWriter(&buf, descS, stChans, WriterOptions{Compression: comp, Rand: detRand(3)})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range stFrames(streamS, 0, 1) {
			w.WriteFrame(f)
		}
		if err := w.WriteTrimmed(300); err != nil {
			t.Fatal(err)
		}
		w.WriteFrame(stFrames(streamS, 2)[0])
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := w.WriteTrimmed(1); !errors.Is(err, ErrClosed) {
			t.Errorf("WriteTrimmed after Close: %v", err)
		}
		res := readAll(t, buf.Bytes(), ReaderOptions{SkipSummaries: true})
		var kinds []string
		for _, e := range res.entries {
			k := e.Kind.String()
			if e.Kind == EntryTrimmed {
				k += fmt.Sprint(e.Frame.Position)
			}
			kinds = append(kinds, k)
		}
		if want := []string{"Segment", "Frame", "Frame", "Trimmed300", "Frame", "StreamEnded"}; !slices.Equal(kinds, want) || len(res.corrupt) > 0 {
			t.Errorf("%v: %v %v", comp, kinds, res.corrupt)
		}
	}
	// A Trimmed record whose body is no uvarint.
	c := newBuilder(t)
	c.header(descS)
	bad := c.record(0x06, []byte{0xFF})
	f := c.frame(1, 0, "a")
	res := readAll(t, c.b, ReaderOptions{})
	if len(res.corrupt) != 1 || res.corrupt[0].Offset != bad || res.corrupt[0].End != f {
		t.Errorf("malformed Trimmed: %v", res.corrupt)
	}
	// Inside a block (another writer may put it there).
	c = newBuilder(t)
	c.header(descS)
	content := wireformat.AppendInner(nil, wireformat.TypeTrimmed, wireformat.AppendTrimmedBody(nil, 7))
	c.block(content)
	badBlock := c.block(wireformat.AppendInner(nil, wireformat.TypeTrimmed, []byte{0x80}))
	res = readAll(t, c.b, ReaderOptions{})
	if len(res.entries) != 2 || res.entries[1].Kind != EntryTrimmed || res.entries[1].Frame.Position != 7 || len(res.corrupt) != 1 || res.corrupt[0].Offset != badBlock {
		t.Errorf("Trimmed in blocks: %v %v", res.entries, res.corrupt)
	}
}

// TestStoreConformance3 plays ARCHITECTURE.md case 3.1, §3.4 and §3.5 through the
// store: frames delivered one capture each, in the transport's order,
// come back each once, in position order, holes where they were lost.
func TestStoreConformance3(t *testing.T) {
	rev := func(ps []frames.Position) []frames.Position { slices.Reverse(ps); return ps }
	var windows []frames.Position // 0..15 without 4..7, reversed in windows of 3
	kept := slices.DeleteFunc(stRange(0, 15), func(p frames.Position) bool { return p >= 4 && p <= 7 })
	for i := 0; i < len(kept); i += 3 {
		windows = append(windows, rev(slices.Clone(kept[i:min(i+3, len(kept))]))...)
	}
	var evensOdds []frames.Position
	for p := frames.Position(0); p < 10; p += 2 {
		evensOdds = append(evensOdds, p)
	}
	for p := frames.Position(1); p < 10; p += 2 {
		evensOdds = append(evensOdds, p)
	}
	for _, c := range []struct {
		name      string
		delivered []frames.Position
		want      []frames.Position
	}{
		{"3.1 drop 1, reverse the rest", []frames.Position{3, 2, 0}, []frames.Position{0, 2, 3}},
		{"3.4 only 3", []frames.Position{3}, []frames.Position{3}},
		{"3.4 0 and 2^64-1", []frames.Position{1<<64 - 1, 0}, []frames.Position{0, 1<<64 - 1}},
		{"3.5 reversed windows of 3", windows, kept},
		{"3.5 evens then odds", evensOdds, stRange(0, 9)},
		{"3.5 full reversal", rev(stRange(0, 15)), stRange(0, 15)},
	} {
		s := stNewStore(t)
		for _, p := range c.delivered {
			stIngest(t, s, "one", stCapture(t, descS, stChans, stFrames(streamS, p), false), nil)
		}
		got := stReadStream(t, s, streamS)
		if !slices.Equal(stPositions(got.frames), c.want) {
			t.Errorf("%s: stored %v, want %v", c.name, stPositions(got.frames), c.want)
		}
		if c.name == "3.4 0 and 2^64-1" {
			if rep, err := s.TrimBytes(0); err != nil || len(rep) != 1 || rep[0].Before != 1 {
				t.Errorf("TrimBytes with a chunk at 2^64-1: %+v %v", rep, err)
			}
		}
	}
}

// TestStoreStreamsLeaveCatalogUnread checks that listing a store's streams
// does not read their catalogs (issue 21 item 5: each view of a store
// whose catalog.json was 37 MB read it twice, 150 to 174 MB and 8 to 16 s),
// and that Channels does, naming the file when it is bad.
func TestStoreStreamsLeaveCatalogUnread(t *testing.T) {
	s := stNewStore(t)
	data := stCapture(t, descS, stChans, stFrames(streamS, stRange(0, 9)...), true)
	if _, err := s.Ingest(context.Background(), "run.dss", bytes.NewReader(data), IngestOptions{}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(s.Dir(), "streams", StreamDirName(streamS), "catalog.json")
	if err := os.WriteFile(path, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	streams, err := s.Streams()
	if err != nil || len(streams) != 1 || streams[0].Frames != 10 {
		t.Fatalf("Streams = %+v, %v; want S with 10 frames", streams, err)
	}
	if _, err := s.Channels(streamS); !errors.Is(err, catalogfile.ErrFormat) || !strings.Contains(err.Error(), path) {
		t.Errorf("Channels with a bad catalog.json: %v, want ErrFormat naming %s", err, path)
	}
}

package segments

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// storeFuzzPaths are the places of a store that FuzzStoreOpen crafts.
var storeFuzzPaths = []string{
	"ds-store", "lock", "tmp", "tmp/x.tmp", "streams", "consumers", "consumers/c1",
	"streams/s", "streams/s/stream.json", "streams/s/catalog.json", "streams/s/horizon",
	"streams/s/chunks", "streams/s/chunks/00000000000000000000-00000000000000000009-0123456789abcdef.dss",
	"streams/s/chunks/end-0123456789abcdef.dss",
}

// FuzzStoreOpen crafts a store tree from its input, a list of operations
// (write a file, make a directory, put a symbolic link to a directory or
// a file outside the store) on the places of storeFuzzPaths, then opens
// it and uses it as every command does: list, read each stream, trim,
// save a consumer, ingest. Nothing may panic, and nothing outside the
// store may change.
func FuzzStoreOpen(f *testing.F) {
	meta := []byte(`{"version":1,"descriptor":{"stream":{"node":"n1","life":7},"label":null,"origin":"RemoteNode"},"ended":false,"chunks":[]}`)
	f.Add(append([]byte{0, 0, 2, 'x'}, append([]byte{1, 4, 0, 1, 7, 0, 2, 11, 1, 0}, meta...)...))
	f.Add([]byte{2, 2, 0})           // tmp a link to a directory
	f.Add([]byte{2, 11, 0})          // chunks a link
	f.Add([]byte{3, 12, 0, 2, 7, 0}) // a chunk a link to a file, stream a link
	f.Add([]byte{0, 8, 4, '{', '}', 'x', 'y'})
	f.Fuzz(func(t *testing.T, ops []byte) {
		root := t.TempDir()
		outside := filepath.Join(root, "outside")
		dir := filepath.Join(root, "store")
		if err := os.MkdirAll(outside, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(outside, "keep"), []byte("keep\n"), 0o644)
		s, err := CreateStore(dir)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		for len(ops) >= 3 {
			op, p := ops[0]%4, filepath.Join(dir, storeFuzzPaths[int(ops[1])%len(storeFuzzPaths)])
			n := min(int(ops[2]), len(ops)-3)
			data := ops[3 : 3+n]
			ops = ops[3+n:]
			os.MkdirAll(filepath.Dir(p), 0o755)
			switch op {
			case 0:
				os.RemoveAll(p)
				os.WriteFile(p, data, 0o644)
			case 1:
				os.MkdirAll(p, 0o755)
			case 2:
				os.RemoveAll(p)
				os.Symlink(outside, p)
			case 3:
				os.RemoveAll(p)
				os.Symlink(filepath.Join(outside, "keep"), p)
			}
		}
		before := storeFuzzTree(t, outside)

		if s, err := OpenStore(dir); err == nil {
			if ss, err := s.Streams(); err == nil {
				for _, st := range ss {
					if rc, err := s.OpenStream(st.Desc.Stream); err == nil {
						io.Copy(io.Discard, io.LimitReader(rc, 1<<20))
						rc.Close()
					}
					s.Trim(st.Desc.Stream, 3)
				}
			}
			s.TrimBytes(1)
			s.SaveConsumer("c1", map[frames.StreamID]frames.Position{streamS: 1})
			s.Consumers()
			s.Ingest(context.Background(), "in", bytes.NewReader(stCapture(t, descS, stChans, stFrames(streamS, 0, 1), true)), IngestOptions{})
			s.Close()
		}
		if after := storeFuzzTree(t, outside); !slices.Equal(before, after) {
			t.Fatalf("outside the store: %q became %q", before, after)
		}
	})
}

// storeFuzzTree lists dir's files with their contents, sorted.
func storeFuzzTree(t *testing.T, dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			out = append(out, p+"="+string(b))
		}
		return nil
	})
	return out
}

package segments

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// outsideDir returns a directory beside the store holding one file,
// "precious", that no store operation may touch.
func outsideDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "outside")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "precious"), []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// listNames returns the names in dir, sorted.
func listNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// replaceWithLink moves path's contents to target (when it exists) and
// puts a symbolic link to target in its place.
func replaceWithLink(t *testing.T, path, target string) {
	t.Helper()
	if entries, err := os.ReadDir(path); err == nil {
		for _, e := range entries {
			if err := os.Rename(filepath.Join(path, e.Name()), filepath.Join(target, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

// TestStoreRefusesLinks crafts stores with a symbolic link where ds keeps
// a directory or a file: every way in refuses the store with an error
// wrapping ErrStoreLink that names the link, and nothing outside the store
// is deleted or written.
func TestStoreRefusesLinks(t *testing.T) {
	streamDir := func(s *Store) string { return filepath.Join(s.Dir(), "streams", StreamDirName(streamS)) }
	cases := []struct {
		name string
		link func(t *testing.T, s *Store, outside string) string // returns the link's path
	}{
		{"tmp", func(t *testing.T, s *Store, outside string) string {
			p := filepath.Join(s.Dir(), "tmp")
			replaceWithLink(t, p, outside)
			return p
		}},
		{"streams", func(t *testing.T, s *Store, outside string) string {
			p := filepath.Join(s.Dir(), "streams")
			replaceWithLink(t, p, outside)
			return p
		}},
		{"consumers", func(t *testing.T, s *Store, outside string) string {
			p := filepath.Join(s.Dir(), "consumers")
			replaceWithLink(t, p, outside)
			return p
		}},
		{"lock", func(t *testing.T, s *Store, outside string) string {
			p := filepath.Join(s.Dir(), "lock")
			os.Remove(p)
			if err := os.Symlink(filepath.Join(outside, "precious"), p); err != nil {
				t.Fatal(err)
			}
			return p
		}},
		{"stream directory", func(t *testing.T, s *Store, outside string) string {
			p := streamDir(s)
			replaceWithLink(t, p, outside)
			return p
		}},
		{"chunks", func(t *testing.T, s *Store, outside string) string {
			p := filepath.Join(streamDir(s), "chunks")
			replaceWithLink(t, p, outside)
			return p
		}},
		{"a chunk", func(t *testing.T, s *Store, outside string) string {
			chunks := filepath.Join(streamDir(s), "chunks")
			names := listNames(t, chunks)
			p := filepath.Join(chunks, names[0])
			if err := os.Rename(p, filepath.Join(outside, names[0])); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(outside, names[0]), p); err != nil {
				t.Fatal(err)
			}
			return p
		}},
		{"stream.json", func(t *testing.T, s *Store, outside string) string {
			p := filepath.Join(streamDir(s), "stream.json")
			if err := os.Rename(p, filepath.Join(outside, "stream.json")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(outside, "stream.json"), p); err != nil {
				t.Fatal(err)
			}
			return p
		}},
	}
	cases = append(cases, struct {
		name string
		link func(t *testing.T, s *Store, outside string) string
	}{"a consumer file", func(t *testing.T, s *Store, outside string) string {
		s2, err := OpenStore(s.Dir())
		if err != nil {
			t.Fatal(err)
		}
		err = s2.SaveConsumer("alerts", map[frames.StreamID]frames.Position{streamS: 2})
		s2.Close()
		if err != nil {
			t.Fatal(err)
		}
		consumers := filepath.Join(s.Dir(), "consumers")
		names := listNames(t, consumers)
		p := filepath.Join(consumers, names[0])
		if err := os.Rename(p, filepath.Join(outside, names[0])); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(outside, names[0]), p); err != nil {
			t.Fatal(err)
		}
		return p
	}})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := stTrimStore(t)
			dir := s.Dir()
			s.Close()
			outside := outsideDir(t)
			link := tc.link(t, s, outside)
			before := listNames(t, outside)

			var errs []error
			s, err := OpenStore(dir)
			if err != nil {
				errs = append(errs, err)
			} else {
				defer s.Close()
				_, err := s.Streams()
				errs = append(errs, err)
				_, err = s.OpenStream(streamS)
				errs = append(errs, err)
				_, err = s.Trim(streamS, 5)
				errs = append(errs, err)
				_, err = s.TrimBytes(1)
				errs = append(errs, err)
				_, err = s.Consumers() // what ds trim --respect-consumers checks
				errs = append(errs, err)
				_, err = s.Ingest(t.Context(), "more", bytes.NewReader(stCapture(t, descS, stChans, stFrames(streamS, 20, 21), true)), IngestOptions{})
				errs = append(errs, err)
			}
			refused := 0
			for _, err := range errs {
				if errors.Is(err, ErrStoreLink) {
					refused++
					if !strings.Contains(err.Error(), link) {
						t.Errorf("error does not name the link %s: %v", link, err)
					}
				}
			}
			if refused == 0 {
				t.Errorf("no call refused the link %s: %v", link, errs)
			}
			if after := listNames(t, outside); !slices.Equal(before, after) {
				t.Errorf("outside the store: %v, then %v", before, after)
			}
			if b, err := os.ReadFile(filepath.Join(outside, "precious")); err != nil || string(b) != "keep me\n" {
				t.Errorf("precious: %q %v", b, err)
			}
		})
	}
}

// TestStoreLinkAfterOpen makes STORE/tmp a link after the store was
// opened (and checked): the first change, which empties tmp, removes
// nothing outside.
func TestStoreLinkAfterOpen(t *testing.T) {
	s := stNewStore(t)
	outside := outsideDir(t)
	replaceWithLink(t, filepath.Join(s.Dir(), "tmp"), outside)
	s.Ingest(t.Context(), "in", bytes.NewReader(stCapture(t, descS, stChans, stFrames(streamS, 0, 1), true)), IngestOptions{})
	if got := listNames(t, outside); !slices.Equal(got, []string{"precious"}) {
		t.Errorf("outside the store after an ingest: %v", got)
	}
}

// TestStoreRefusesFIFOs: a FIFO where a store keeps a file (stream.json,
// catalog.json, a chunk, a consumer's cursor) is refused as not a
// regular file; opening it never waits for a writer (found by a new
// user: ds log STORE hung forever).
func TestStoreRefusesFIFOs(t *testing.T) {
	for _, name := range []string{"stream.json", "catalog.json", "chunk"} {
		t.Run(name, func(t *testing.T) {
			s := stNewStore(t)
			stIngest(t, s, "in", stCapture(t, descS, stChans, stFrames(streamS, stRange(0, 9)...), true), nil)
			dir := filepath.Join(s.Dir(), "streams", StreamDirName(streamS))
			p := filepath.Join(dir, name)
			if name == "chunk" {
				entries, err := os.ReadDir(filepath.Join(dir, "chunks"))
				if err != nil || len(entries) == 0 {
					t.Fatalf("no chunk: %v", err)
				}
				p = filepath.Join(dir, "chunks", entries[0].Name())
			}
			os.Remove(p)
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
			done := make(chan error, 1)
			go func() {
				s2, err := OpenStore(s.Dir())
				if err == nil {
					defer s2.Close()
					_, err = s2.Streams()
				}
				if err == nil {
					_, err = storeReadCatalog(filepath.Join(s2.Dir(), "streams", StreamDirName(streamS)))
				}
				if err == nil {
					var rc io.ReadCloser
					if rc, err = s2.OpenStream(streamS); err == nil {
						_, err = io.Copy(io.Discard, rc)
						rc.Close()
					}
				}
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, ErrStoreFormat) || !strings.Contains(err.Error(), "not a regular file") {
					t.Errorf("got %v, want a not-a-regular-file error", err)
				}
			case <-time.After(60 * time.Second):
				t.Fatal("reading a store with a FIFO in it hangs")
			}
		})
	}
}

// TestStoreMissingChunk: a chunk that stream.json counts frames in and
// that is gone (deleted by hand, lost) makes the read-out fail once the
// chunks there are read, naming it: never a silent end (found by a new
// user: ds check STORE said "ok"). A chunk a trim deleted is no error.
func TestStoreMissingChunk(t *testing.T) {
	s := stNewStore(t)
	stIngest(t, s, "a", stCapture(t, descS, stChans, stFrames(streamS, stRange(0, 4)...), false), nil)
	stIngest(t, s, "b", stCapture(t, descS, stChans, stFrames(streamS, stRange(5, 9)...), true), nil)
	chunks := filepath.Join(s.Dir(), "streams", StreamDirName(streamS), "chunks")
	read := func() (int, error) {
		rc, err := s.OpenStream(streamS)
		if err != nil {
			return 0, err
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		return len(b), err
	}
	if _, err := s.Streams(); err != nil { // writes the index
		t.Fatal(err)
	}
	if _, err := read(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Trim(streamS, 5); err != nil {
		t.Fatal(err)
	}
	if _, err := read(); err != nil {
		t.Fatalf("after a trim: %v", err)
	}
	entries, _ := os.ReadDir(chunks)
	var gone string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "00000000000000000005-") {
			gone = e.Name()
			os.Remove(filepath.Join(chunks, gone))
		}
	}
	if gone == "" {
		t.Fatalf("no chunk 5–9 in %v", entries)
	}
	if _, err := read(); !errors.Is(err, ErrStoreFormat) || !strings.Contains(err.Error(), gone+" is missing") {
		t.Errorf("read with %s gone: %v", gone, err)
	}
}

package sources

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ds-telemetry/ds/pkg/fleet"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// Expand replaces each directory among names by the capture files in it,
// in name order (not recursive; hidden files and files that are not
// captures are skipped, and a directory without any is named on warn:
// "ds: DIR: no capture in this directory"; but a file named *.dss, the
// name of a capture, is kept whatever it holds, so that [Set.Open]
// refuses one that is no capture as it would if it were named: exit 2,
// never a silent skip), and each store ([IsStore]) by
// the inputs of its streams ([Set.ExpandStore]); other names are kept as
// they are ([Set.Open] says what is wrong with them). With follow, it
// also returns the directories and stores to watch for new inputs
// ([PollWatches]). A directory or store that cannot be listed is given to
// fail, and left out.
func (s *Set) Expand(names []string, follow bool, warn io.Writer, fail func(error)) ([]string, []Watch) {
	var paths []string
	var dirs []Watch
	for _, name := range names {
		fi, err := os.Stat(name)
		if name == "-" || fleet.IsURL(name) || err != nil || !fi.IsDir() {
			paths = append(paths, name) // Open says what is wrong
			continue
		}
		if IsStore(name) {
			found, w, err := s.ExpandStore(name)
			if err != nil {
				fail(err)
				continue
			}
			paths = append(paths, found...) // none: an empty capture
			if follow {
				dirs = append(dirs, w)
			}
			continue
		}
		d := &dirWatch{dir: name, known: make(map[string]bool)}
		found, err := d.list(false)
		if err != nil {
			fail(err)
			continue
		}
		if len(found) == 0 {
			fmt.Fprintf(warn, "ds: %s: no capture in this directory\n", name)
		}
		paths = append(paths, found...)
		if follow {
			dirs = append(dirs, d)
		}
	}
	return paths, dirs
}

// dirWatch is a directory followed for new capture files.
type dirWatch struct {
	dir   string
	known map[string]bool // names listed already
}

// Poll implements [Watch]: a new empty file is left for a later look.
func (d *dirWatch) Poll() []string {
	found, _ := d.list(true) // a directory gone for now may be back
	return found
}

// list returns the capture files of the directory it has not listed
// before, in name order: regular files (or links to them) whose name does
// not start with a dot, that are empty, hold a format ds reads or are
// named *.dss (whatever they hold: opening one that is no capture says
// so). With waitEmpty, an empty file is left for a later listing.
func (d *dirWatch) list(waitEmpty bool) ([]string, error) {
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		return nil, err
	}
	var found []string
	for _, e := range entries {
		name := e.Name()
		if d.known[name] || strings.HasPrefix(name, ".") {
			continue
		}
		path := filepath.Join(d.dir, name)
		fi, err := os.Stat(path)
		if err != nil || !fi.Mode().IsRegular() {
			d.known[name] = err == nil
			continue
		}
		if fi.Size() == 0 && waitEmpty {
			continue
		}
		d.known[name] = true
		if strings.HasSuffix(name, CaptureExt) || isCapture(path) {
			found = append(found, path)
		}
	}
	return found, nil
}

// CaptureExt is the file name extension of a capture (ds wrap -o DIR
// names its files so): a directory's file so named is an input whatever
// it holds ([Set.Expand]).
const CaptureExt = ".dss"

// isCapture reports whether the file at path holds a format ds reads (or
// cannot be read: opening it again will say why).
func isCapture(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return true
	}
	defer f.Close()
	_, err = segments.Detect(f)
	return !errors.Is(err, segments.ErrNotCapture)
}

// PollWatches polls the watches every [PollInterval] until ctx ends, and
// calls add with each new input, on its own goroutine. A new empty file
// of a directory is taken once it has its first bytes (ds wrap creates its
// file before it writes).
func PollWatches(ctx context.Context, watches []Watch, add func(name string)) {
	t := time.NewTicker(PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, w := range watches {
			for _, name := range w.Poll() {
				add(name)
			}
		}
	}
}

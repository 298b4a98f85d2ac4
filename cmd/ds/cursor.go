package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ds-telemetry/ds/pkg/views"
)

// readCursorFile returns the cursor saved in name, and whether the file
// exists. A file that holds something other than a cursor is an error: it
// is never taken for "start from the beginning".
func readCursorFile(name string) (views.Cursor, bool, error) {
	b, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	cur, err := views.ParseCursor(string(b))
	if err != nil {
		return nil, true, fmt.Errorf("%s: not a cursor file: %v", name, err)
	}
	return cur, true, nil
}

// writeCursorFile saves cur in name atomically: written to a temporary
// file beside it, synced, then renamed over it, so that a reader (or a
// crash) sees the old cursor or the new one, never a torn one.
func writeCursorFile(name string, cur views.Cursor) error {
	f, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = fmt.Fprintln(f, cur.String())
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, name)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("saving the cursor: %w", err)
	}
	return nil
}

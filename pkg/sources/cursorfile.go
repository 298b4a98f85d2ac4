package sources

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ds-telemetry/ds/pkg/segments"
)

// ReadCursorFile returns the cursor saved in the file name (ds tail
// --cursor-file: its text form, segments.ParseCursor), and whether the
// file exists. A file that holds something other than a cursor is an
// error naming it: it is never taken for "start from the beginning".
func ReadCursorFile(name string) (segments.Cursor, bool, error) {
	b, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	cur, err := segments.ParseCursor(string(b))
	if err != nil {
		return nil, true, fmt.Errorf("%s: not a cursor file: %v", name, err)
	}
	return cur, true, nil
}

// WriteCursorFile saves cur in the file name atomically: written to a
// temporary file beside it, synced, then renamed over it, so that a reader
// (or a crash) sees the old cursor or the new one, never a torn one. An
// error says "saving the cursor".
func WriteCursorFile(name string, cur segments.Cursor) error {
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

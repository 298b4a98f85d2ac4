package segments

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// An OutputFile is a capture file written in place: to a temporary file
// in the directory of the file named (".NAME.tmp-*", mode 0644), which
// [OutputFile.Commit] syncs and renames onto the name, so that a merge
// that fails or is interrupted leaves nothing behind ([OutputFile.Abort])
// and a reader never sees half a file. ds merge and ds recover write OUT
// this way. It is not safe for concurrent use.
type OutputFile struct {
	f    *os.File // the temporary file
	name string
	done bool
}

// CreateOutputFile checks name and creates its temporary file. An
// existing name is refused unless overwrite: with an error that matches
// fs.ErrExist ("NAME exists: not replacing it"). A directory, or a file
// that exists and is not a regular file, is refused whatever overwrite
// says; a name that may be one of the inputs of a merge is safe to
// overwrite, as the inputs are read before Commit.
func CreateOutputFile(name string, overwrite bool) (*OutputFile, error) {
	fi, err := os.Stat(name)
	switch {
	case err == nil && fi.IsDir():
		return nil, fmt.Errorf("%s is a directory: name the capture file to write", name)
	case err == nil && !overwrite:
		return nil, &fs.PathError{Op: "create", Path: name, Err: fs.ErrExist}
	case err == nil && !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file: not replacing it", name)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	f, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".tmp-*")
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return &OutputFile{f: f, name: name}, nil
}

// Name returns the name the file is committed to.
func (o *OutputFile) Name() string { return o.name }

// Write writes to the temporary file.
func (o *OutputFile) Write(p []byte) (int, error) { return o.f.Write(p) }

// Commit syncs and closes the temporary file and renames it onto the
// name. Errors are "write NAME: …"; the temporary file is then removed by
// Abort.
func (o *OutputFile) Commit() error {
	err := o.f.Sync()
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(o.f.Name(), o.name)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", o.name, err)
	}
	o.done = true
	return nil
}

// Abort closes and removes the temporary file unless Commit succeeded.
// It may be called more than once, and after Commit (a deferred Abort).
func (o *OutputFile) Abort() {
	if o.done {
		return
	}
	o.done = true
	o.f.Close()
	os.Remove(o.f.Name())
}

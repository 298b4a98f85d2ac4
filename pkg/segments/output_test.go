package segments

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestOutputFile(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "out.dss")
	o, err := CreateOutputFile(name, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Write([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(name); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("before Commit: %v, want no file", err)
	}
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	o.Abort() // after Commit: nothing
	if b, err := os.ReadFile(name); err != nil || string(b) != "abc" {
		t.Fatalf("after Commit: %q, %v", b, err)
	}
	if _, err := CreateOutputFile(name, false); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("existing file without overwrite: %v, want fs.ErrExist", err)
	}
	o, err = CreateOutputFile(name, true)
	if err != nil {
		t.Fatal(err)
	}
	o.Write([]byte("new"))
	o.Abort()
	if b, _ := os.ReadFile(name); string(b) != "abc" {
		t.Fatalf("after Abort: %q, want the old file", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("after Abort: %d files, want the output only", len(ents))
	}
	if _, err := CreateOutputFile(dir, true); err == nil {
		t.Fatal("a directory: no error")
	}
}

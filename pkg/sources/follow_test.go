package sources

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestFollowFile: a followed file reads what is appended, and says when
// it was truncated or replaced.
func TestFollowFile(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(name, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ff := &FollowFile{File: f, Name: name}
	b, err := io.ReadAll(ff)
	if err != nil || string(b) != "abc" || ff.Off != 3 {
		t.Fatalf("read %q, off %d, err %v", b, ff.Off, err)
	}
	w, err := os.OpenFile(name, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.WriteString("de")
	w.Close()
	if b, err = io.ReadAll(ff); err != nil || string(b) != "de" {
		t.Fatalf("appended: read %q, err %v", b, err)
	}
	if err := os.Truncate(name, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := ff.Read(make([]byte, 8)); !errors.Is(err, ErrTruncated) {
		t.Fatalf("truncated: %v", err)
	}
	ff.Off = 1
	other := name + ".new"
	if err := os.WriteFile(other, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, name); err != nil {
		t.Fatal(err)
	}
	if _, err := ff.Read(make([]byte, 8)); !errors.Is(err, ErrReplaced) {
		t.Fatalf("replaced: %v", err)
	}
}

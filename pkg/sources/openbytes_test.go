package sources

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// OpenBytes hands ds merge an input's bytes as they are: stdin, a file;
// a missing file's error does not repeat the path; a directory is refused.
func TestOpenBytes(t *testing.T) {
	s := NewSet(Options{})
	rc, err := s.OpenBytes("-", strings.NewReader("from stdin"))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(rc); string(b) != "from stdin" {
		t.Errorf("stdin: %q", b)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "x.dss")
	if err := os.WriteFile(p, []byte("bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	rc, err = s.OpenBytes(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "bytes" {
		t.Errorf("file: %q", b)
	}
	if _, err := s.OpenBytes(filepath.Join(dir, "missing.dss"), nil); err == nil || strings.Contains(err.Error(), dir) {
		t.Errorf("missing file: %v (want an error without the path)", err)
	}
	if _, err := s.OpenBytes(dir, nil); err == nil || err.Error() != "is a directory" {
		t.Errorf("directory: %v", err)
	}
}

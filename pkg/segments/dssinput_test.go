package segments

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpenDSSInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dss, err := os.ReadFile(filepath.Join("..", "views", "testdata", "drops.dss"))
	if err != nil {
		t.Fatal(err)
	}
	good := write("good.dss", string(dss))
	r, c, err := OpenDSSInput(good, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(r); len(b) != len(dss) {
		t.Errorf("read %d bytes, want %d", len(b), len(dss))
	}
	c.Close()
	if _, c, err := OpenDSSInput(write("empty.dss", ""), nil); err != nil {
		t.Errorf("empty file: %v", err)
	} else {
		c.Close()
	}
	var de *DSSOnlyError
	text := write("notes.txt", strings.Repeat("hello, world\n", 10))
	if _, _, err := OpenDSSInput(text, nil); !errors.As(err, &de) || de.Other || !errors.Is(err, ErrNotCapture) {
		t.Errorf("text file: %v, want a DSSOnlyError", err)
	}
	if _, _, err := OpenDSSInput(dir, nil); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("directory: %v", err)
	}
	if _, _, err := OpenDSSInput(filepath.Join(dir, "missing"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	// stdin: checked by its first bytes.
	r, c, err = OpenDSSInput("-", strings.NewReader(string(dss)))
	if err != nil || c != nil {
		t.Fatalf("stdin: %v, closer %v", err, c)
	}
	if b, _ := io.ReadAll(r); len(b) != len(dss) {
		t.Errorf("stdin: read %d bytes, want %d", len(b), len(dss))
	}
	if _, _, err := OpenDSSInput("-", strings.NewReader("")); err != nil {
		t.Errorf("empty stdin: %v", err)
	}
	if _, _, err := OpenDSSInput("-", strings.NewReader("hello, world\n")); !errors.As(err, &de) || de.Name != "-" {
		t.Errorf("text on stdin: %v, want a DSSOnlyError", err)
	} else if got := err.Error(); got != "-: not a DSS capture (ds ingest stores DSS captures only)" {
		t.Errorf("text on stdin: %q", got)
	}
}

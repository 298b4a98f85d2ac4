package sources

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

func TestCursorFile(t *testing.T) {
	name := filepath.Join(t.TempDir(), "cur")
	if cur, ok, err := ReadCursorFile(name); cur != nil || ok || err != nil {
		t.Fatalf("missing file: %v %v %v", cur, ok, err)
	}
	want := segments.Cursor{{Node: "n", Life: 1}: 7}
	if err := WriteCursorFile(name, want); err != nil {
		t.Fatal(err)
	}
	cur, ok, err := ReadCursorFile(name)
	if err != nil || !ok || cur.String() != want.String() {
		t.Fatalf("read back %v %v %v", cur, ok, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(name))
	if len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
	if err := os.WriteFile(name, []byte("not a cursor\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := ReadCursorFile(name); !ok || err == nil || !strings.Contains(err.Error(), "not a cursor file") {
		t.Fatalf("bad file: %v %v", ok, err)
	}
	if err := WriteCursorFile(filepath.Join(name, "x"), want); err == nil {
		t.Fatal("saved under a file")
	}
}

func TestInputName(t *testing.T) {
	for in, want := range map[string]string{
		"run.dss":                     "run.dss",
		"-":                           "-",
		"nats://u:secret@host:4222/p": "nats://host:4222/p",
	} {
		if got := InputName(in); got != want {
			t.Errorf("InputName(%q) = %q, want %q", in, got, want)
		}
	}
	if got := InputName("nats://u:secret@"); strings.Contains(got, "secret") {
		t.Errorf("a bad URL keeps its password: %q", got)
	}
}

func TestOpenNATSBadURL(t *testing.T) {
	_, err := NewSet(Options{NATS: NATSOptions{Nodes: []frames.NodeID{"n"}}}).OpenNATS("nats://")
	var ue *URLError
	if !errors.As(err, &ue) {
		t.Fatalf("err %v (%T), want a *URLError", err, err)
	}
}

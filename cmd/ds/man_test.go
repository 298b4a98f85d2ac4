package main

import (
	"os"
	"strings"
	"testing"
)

// TestManPageUpToDate fails when man/ds.1 differs from what the command
// tree generates (cmd/go's TestDocsUpToDate). DS_UPDATE=1 rewrites it.
func TestManPageUpToDate(t *testing.T) {
	root := newRoot(nil, nil, nil)
	root.Version = "" // the manual must not depend on the build
	want := manPage(root)
	const path = "../../man/ds.1"
	if os.Getenv("DS_UPDATE") != "" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run make update)", err)
	}
	if string(got) != want {
		t.Fatalf("man/ds.1 is stale: run `make update` (DS_UPDATE=1 go test ./cmd/ds) and review the diff")
	}
}

// The manual has a subsection for every command, each with its examples,
// rendered verbatim.
func TestManPageHasExamples(t *testing.T) {
	root := newRoot(nil, nil, nil)
	page := manPage(root)
	for _, c := range root.Commands {
		if c.Hidden {
			continue
		}
		_, sec, ok := strings.Cut(page, "\n.SS "+roffEscape(c.Name)+"\n")
		if !ok {
			t.Errorf("man/ds.1 has no subsection for %s", c.Name)
			continue
		}
		sec, _, _ = strings.Cut(sec, "\n.SS ")
		if !strings.Contains(sec, "\n.B EXAMPLES\n") {
			t.Errorf("man/ds.1: %s has no EXAMPLES", c.Name)
		}
		for _, e := range examples[c.Name] {
			if !strings.Contains(sec, "\n.nf\n"+roffEscape(e.Command)+"\n.fi\n") {
				t.Errorf("man/ds.1: %s lacks the example %q", c.Name, e.Command)
			}
		}
	}
}

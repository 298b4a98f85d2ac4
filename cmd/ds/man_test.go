package main

import (
	"os"
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

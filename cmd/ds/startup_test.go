package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkStartup times whole ds processes that do almost nothing, against
// a Go hello-world built the same way, the floor of any Go command (issue 23
// item 4: shell pipelines call ds in loops). It builds both binaries with
// the go command first; ns/op is one process, fork and exec included.
//
//	go test ./cmd/ds -run '^$' -bench Startup -benchtime 200x
func BenchmarkStartup(b *testing.B) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		b.Skip("no go command to build ds with")
	}
	dir := b.TempDir()
	ds := filepath.Join(dir, "ds")
	hello := filepath.Join(dir, "hello")
	if out, err := exec.Command(gobin, "build", "-o", ds, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	src := filepath.Join(dir, "hello.go")
	if err := os.WriteFile(src, []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	if out, err := exec.Command(gobin, "build", "-o", hello, src).CombinedOutput(); err != nil {
		b.Fatalf("go build hello: %v\n%s", err, out)
	}
	small := filepath.Join("..", "..", "testdata", "capture", "small.dss")
	if _, err := os.Stat(small); err != nil {
		b.Fatalf("fixture: %v", err)
	}
	for _, bc := range []struct {
		name string
		argv []string
	}{
		{"hello", []string{hello}},
		{"version", []string{ds, "--version"}},
		{"info", []string{ds, "info", small}},
		{"log", []string{ds, "log", small}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command(bc.argv[0], bc.argv[1:]...)
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v: %v\n%s", bc.argv, err, out)
				}
			}
		})
	}
}

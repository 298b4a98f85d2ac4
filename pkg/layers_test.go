// Package pkg_test enforces the package map of docs/ARCHITECTURE.md §1:
//
//	write path: proc, hostprobe → frames; cmd/ds → capture → segments → wireformat → frames
//	read path:  cmd/ds → viewer → sources → segments; viewer → views → segments → catalogfile → wireformat → frames
//	            cmd/ds → report → viewer, views (ds report's HTML page)
//	            cmd/ds → export → viewer, views (ds export's formats)
//	            cmd/ds → diff → viewer, views (ds diff: two runs compared)
//	            cmd/ds → plot → views (charts); cmd/ds → top → plot, segments (ds top)
//	beside:     sources, cmd/ds → fleet → segments (NATS JetStream; views never import it)
//	            natsd (nats-server, for cmd/ds-natsd and tests only: ds never links it)
//	            textfmt (text for people) under everything, importing nothing
//
// It parses every non-test Go file under pkg/ and cmd/ds in ImportsOnly
// mode (not `go list`, whose result go test would cache) and checks each
// import: a package of pkg/ imports only what its row allows, and cmd/ds
// imports only the entrances of pkg/ (never an internal package).
package pkg_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/ds-telemetry/ds/"

// allowed lists, per package under pkg/, the project packages and the
// third-party modules it may import. Standard library imports are allowed
// except where forbidden below.
var allowed = map[string][]string{
	"frames":      {},
	"textfmt":     {},
	"wireformat":  {"pkg/frames", "github.com/klauspost/compress"},
	"catalogfile": {"pkg/wireformat", "pkg/frames", "pkg/textfmt"},
	"segments":    {"pkg/catalogfile", "pkg/wireformat", "pkg/frames", "pkg/textfmt", "github.com/klauspost/compress"},
	"views":       {"pkg/segments", "pkg/catalogfile", "pkg/frames", "pkg/textfmt", "github.com/tidwall/gjson"},
	"hostprobe":   {"pkg/frames", "pkg/textfmt"},
	"proc":        {"pkg/frames", "github.com/creack/pty", "golang.org/x/sys"},
	"fleet":       {"pkg/segments", "pkg/wireformat", "pkg/frames", "pkg/textfmt", "github.com/nats-io/nats.go"},
	"natsd":       {"github.com/nats-io/nats-server/v2"},
	"capture":     {"pkg/segments", "pkg/wireformat", "pkg/frames"},
	"sources":     {"pkg/segments", "pkg/fleet", "pkg/textfmt", "pkg/wireformat", "pkg/frames", "github.com/nats-io/nats.go"},
	"viewer":      {"pkg/sources", "pkg/views", "pkg/segments", "pkg/fleet", "pkg/frames", "pkg/textfmt"},
	"report":      {"pkg/viewer", "pkg/sources", "pkg/views", "pkg/segments", "pkg/frames", "pkg/textfmt"},
	"play":        {},
	"export":      {"pkg/viewer", "pkg/sources", "pkg/views", "pkg/segments", "pkg/frames", "pkg/textfmt"},
	"diff":        {"pkg/viewer", "pkg/sources", "pkg/views", "pkg/segments", "pkg/frames", "pkg/textfmt"},
	"plot":        {"pkg/views", "pkg/frames", "pkg/textfmt"},
	"top":         {"pkg/plot", "pkg/segments", "pkg/frames", "pkg/textfmt"},
}

// forbiddenStd lists standard packages (and everything below them) a
// package may not import: frames is
// the pure vocabulary and live pipe (no files, no flags, no processes), and
// only hostprobe and proc start processes, and fleet its ds-natsd helper.
var forbiddenStd = map[string][]string{
	"frames":      {"os", "flag", "net", "syscall", "path/filepath", "io/fs"},
	"wireformat":  {"os", "os/exec", "flag", "net"},
	"catalogfile": {"os/exec", "flag", "net"},
	"segments":    {"os/exec", "flag"},
	"views":       {"os/exec", "flag"},
	"hostprobe":   {"flag"},
	"proc":        {"flag"},
	"fleet":       {"flag"},
	"natsd":       {"os/exec"},
	"capture":     {"os/exec", "flag", "net"},
	"sources":     {"os/exec", "flag"},
	"viewer":      {"os/exec", "flag"},
	"report":      {"os", "os/exec", "flag", "net"},
	"export":      {"os", "os/exec", "flag", "net"},
	"diff":        {"os", "os/exec", "flag", "net"},
	"plot":        {"os", "os/exec", "flag", "net", "syscall"},
	"top":         {"os", "os/exec", "flag", "net", "syscall"},
	"textfmt":     {"os", "flag", "net", "syscall"},
	"play":        {"os", "os/exec", "flag", "net", "syscall"},
}

func TestImportDirection(t *testing.T) {
	fset := token.NewFileSet()
	seen := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		pkg := strings.Split(filepath.ToSlash(path), "/")[0]
		seen[pkg] = true
		allow, known := allowed[pkg]
		if !known {
			t.Errorf("%s: package pkg/%s is not in the package map; add it to allowed in layers_test.go and ARCHITECTURE.md §1", path, pkg)
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			switch {
			case strings.Contains(p, "urfave/cli"):
				t.Errorf("%s imports %s: only cmd/ds may touch flags", path, p)
			case strings.HasPrefix(p, module):
				if !hasPrefixIn(strings.TrimPrefix(p, module), allow) {
					t.Errorf("%s imports %s: pkg/%s may import only %v", path, p, pkg, allow)
				}
			case strings.Contains(strings.SplitN(p, "/", 2)[0], "."):
				if !hasPrefixIn(p, allow) {
					t.Errorf("%s imports third-party %s: not allowed for pkg/%s", path, p, pkg)
				}
			default:
				for _, bad := range forbiddenStd[pkg] {
					if p == bad || strings.HasPrefix(p, bad+"/") {
						t.Errorf("%s imports %s: forbidden in pkg/%s", path, p, pkg)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !seen["frames"] {
		t.Fatal("walked no files of pkg/frames: the test is not looking where it should")
	}
}

func hasPrefixIn(p string, prefixes []string) bool {
	for _, pre := range prefixes {
		if p == pre || strings.HasPrefix(p, pre+"/") {
			return true
		}
	}
	return false
}

// TestCmdImports checks that cmd/ds, the command, uses the library through
// its entrances only: each project import is a package directly under
// pkg/ that the package map knows (never an internal package, never
// another command), so that what cmd/ds needs of the engine is exported
// API, documented and tested in its package.
func TestCmdImports(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join("..", "cmd", "ds", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		n++
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			// ds does not link nats-server (issue 23 item 4: its init
			// cost every invocation); ds collect runs it as ds-natsd.
			// No row of allowed but natsd's names it, so this keeps it
			// out of ds altogether.
			if p == module+"pkg/natsd" || strings.HasPrefix(p, "github.com/nats-io/nats-server") {
				t.Errorf("%s imports %s: ds must not link nats-server (ds collect runs it as ds-natsd)", path, p)
			}
			rest, ok := strings.CutPrefix(p, module)
			if !ok {
				continue
			}
			parts := strings.Split(rest, "/")
			if _, known := allowed[parts[len(parts)-1]]; len(parts) != 2 || parts[0] != "pkg" || !known {
				t.Errorf("%s imports %s: cmd/ds may import only the packages directly under pkg/ that the package map knows", path, p)
			}
		}
	}
	if n == 0 {
		t.Fatal("found no files of cmd/ds: the test is not looking where it should")
	}
}

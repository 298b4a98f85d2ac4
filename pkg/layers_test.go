// Package pkg_test enforces the package map of ARCHITECTURE.md §1 and ARCHITECTURE.md §1:
//
//	cmd/ds → views → segments → catalogfile → wireformat → frames
//	         hostprobe → frames;  proc → frames
//	cmd/ds → fleet → segments (NATS JetStream transport; views never import it)
//	cmd/ds → capture → segments (the producers' write path; no NATS, no views)
//	cmd/ds → sources → fleet, segments (the views' inputs; never views)
//
// It parses every non-test Go file under pkg/ in ImportsOnly mode (not
// `go list`, whose result go test would cache) and checks each import.
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
	"wireformat":  {"pkg/frames", "github.com/klauspost/compress"},
	"catalogfile": {"pkg/wireformat", "pkg/frames"},
	"segments":    {"pkg/catalogfile", "pkg/wireformat", "pkg/frames", "github.com/klauspost/compress"},
	"views":       {"pkg/segments", "pkg/catalogfile", "pkg/frames", "github.com/tidwall/gjson"},
	"hostprobe":   {"pkg/frames"},
	"proc":        {"pkg/frames", "github.com/creack/pty", "golang.org/x/sys"},
	"fleet":       {"pkg/segments", "pkg/wireformat", "pkg/frames", "github.com/nats-io/nats.go", "github.com/nats-io/nats-server/v2"},
	"capture":     {"pkg/segments", "pkg/wireformat", "pkg/frames"},
	"sources":     {"pkg/segments", "pkg/fleet", "pkg/wireformat", "pkg/frames", "github.com/nats-io/nats.go"},
}

// forbiddenStd lists standard packages (and everything below them) a
// package may not import: frames is
// the pure vocabulary and live pipe (no files, no flags, no processes), and
// only hostprobe and proc start processes.
var forbiddenStd = map[string][]string{
	"frames":      {"os", "flag", "net", "syscall", "path/filepath", "io/fs"},
	"wireformat":  {"os", "os/exec", "flag", "net"},
	"catalogfile": {"os/exec", "flag", "net"},
	"segments":    {"os/exec", "flag"},
	"views":       {"os/exec", "flag"},
	"hostprobe":   {"flag"},
	"proc":        {"flag"},
	"fleet":       {"os/exec", "flag"},
	"capture":     {"os/exec", "flag", "net"},
	"sources":     {"os/exec", "flag"},
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

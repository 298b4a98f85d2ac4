package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// The README convention: a ```sh block right after an HTML comment that
// starts with "<!-- tested" is run by TestREADMEExamples. Every other
// block is text only.
const readmeTestedMarker = "<!-- tested"

// readmeCommand is one command line of a tested README block.
type readmeCommand struct {
	Line  int      // line number in README.md of its first line
	Shell string   // the command, continuation lines joined
	Needs []string // programs it runs besides ds and the stand-ins
}

// readmeStandIns are the programs the README examples run that the test
// replaces with scripts printing what the README shows (readmeSetup).
var readmeStandIns = map[string]string{
	"make": "#!/bin/sh\n# stand-in for make test: the output README.md shows\necho 'gcc -c foo.c'\necho \"foo.c:3: warning: unused variable 'x'\" >&2\necho 'PASS: 12, FAIL: 0'\n",
	"go":   "#!/bin/sh\n# stand-in for go build -v ./...\necho 'example.com/hello' >&2\n",
}

// testedBlocks returns the commands of README's tested blocks, one slice
// per block. Blank lines and comment lines are skipped; a line ending in
// \ or | continues on the next.
func testedBlocks(readme string) ([][]readmeCommand, error) {
	lines := strings.Split(readme, "\n")
	var blocks [][]readmeCommand
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], readmeTestedMarker) {
			continue
		}
		for i < len(lines) && !strings.Contains(lines[i], "-->") {
			i++
		}
		i++
		if i >= len(lines) || strings.TrimSpace(lines[i]) != "```sh" {
			return nil, fmt.Errorf("README.md:%d: a tested comment must be followed by a ```sh block", i+1)
		}
		var block []readmeCommand
		var cur *readmeCommand
		for i++; ; i++ {
			if i >= len(lines) {
				return nil, fmt.Errorf("README.md: the tested block has no closing ```")
			}
			l := lines[i]
			if strings.TrimSpace(l) == "```" {
				break
			}
			if cur == nil {
				t := strings.TrimSpace(l)
				if t == "" || strings.HasPrefix(t, "#") {
					continue
				}
				block = append(block, readmeCommand{Line: i + 1})
				cur = &block[len(block)-1]
				cur.Shell = l
			} else {
				cur.Shell += "\n" + l
			}
			code := strings.TrimSpace(stripShellComment(l))
			if !strings.HasSuffix(code, "\\") && !strings.HasSuffix(code, "|") {
				cur.Needs = shellPrograms(cur.Shell)
				cur = nil
			}
		}
		if cur != nil {
			return nil, fmt.Errorf("README.md:%d: the tested block ends inside a command", cur.Line)
		}
		blocks = append(blocks, block)
	}
	return blocks, nil
}

// stripShellComment drops a # comment (one outside quotes, at the start of
// a word) from a line of shell.
func stripShellComment(l string) string {
	var quote rune
	for i, r := range l {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (i == 0 || l[i-1] == ' ' || l[i-1] == '\t'):
			return l[:i]
		}
	}
	return l
}

// shellPrograms returns the programs a command line runs (the first word
// of each part of a pipeline or list, outside quotes), except ds, the
// stand-ins and shell builtins.
func shellPrograms(cmd string) []string {
	var parts []string
	var b strings.Builder
	var quote rune
	for _, r := range stripShellComment(strings.ReplaceAll(cmd, "\\\n", " ")) {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '|' || r == ';' || r == '&' || r == '\n':
			parts = append(parts, b.String())
			b.Reset()
			continue
		}
		b.WriteRune(r)
	}
	parts = append(parts, b.String())
	var progs []string
	for _, p := range parts {
		f := strings.Fields(p)
		if len(f) == 0 {
			continue
		}
		switch w := f[0]; {
		case w == "ds", readmeStandIns[w] != "", w == "cd", w == "echo", w == "source", w == "export", w == "test", w == "[":
		default:
			progs = append(progs, w)
		}
	}
	return progs
}

// readmeScript turns a tested block into a testscript script: each
// command is run by bash with pipefail and must exit 0; one that needs a
// program that is not installed, or a terminal (--pty) where there is
// none, is skipped.
func readmeScript(block []readmeCommand) string {
	var b strings.Builder
	b.WriteString("# Generated from README.md by readme_test.go.\n")
	for _, c := range block {
		fmt.Fprintf(&b, "\n# README.md:%d\n", c.Line)
		var conds string
		for _, p := range c.Needs {
			conds += "[exec:" + p + "] "
		}
		if strings.Contains(c.Shell, "--pty") {
			conds += "[pty] "
		}
		fmt.Fprintf(&b, "%sexec bash -o pipefail -c '%s'\n", conds, strings.ReplaceAll(oneLine(c.Shell), "'", "''"))
	}
	return b.String()
}

// oneLine joins the lines of a command for a testscript line, which
// cannot span lines: comments are dropped, and a line's trailing \ too.
func oneLine(cmd string) string {
	lines := strings.Split(cmd, "\n")
	for i, l := range lines {
		l = strings.TrimSpace(stripShellComment(l))
		if i < len(lines)-1 {
			l = strings.TrimSpace(strings.TrimSuffix(l, "\\"))
		}
		lines[i] = l
	}
	return strings.Join(lines, " ")
}

// readmeSetup puts the stand-ins first on PATH and writes the huge.log
// that the examples cat.
func readmeSetup(env *testscript.Env) error {
	bin := filepath.Join(env.WorkDir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		return err
	}
	for name, script := range readmeStandIns {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			return err
		}
	}
	var log strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&log, "%d: a line of a large log, as a long-running service writes it\n", i)
	}
	if err := os.WriteFile(filepath.Join(env.WorkDir, "huge.log"), []byte(log.String()), 0o644); err != nil {
		return err
	}
	env.Setenv("PATH", bin+string(os.PathListSeparator)+env.Getenv("PATH"))
	env.Setenv("NO_COLOR", "1")
	return nil
}

// TestREADMEExamples runs the tested example blocks of README.md against
// this ds, as gojq's CI checks its command examples, so that the README
// cannot show a command that does not work.
func TestREADMEExamples(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := testedBlocks(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) == 0 {
		t.Fatalf("README.md has no tested example block (%s --> before a ```sh block)", readmeTestedMarker)
	}
	dir := t.TempDir()
	for i, block := range blocks {
		name := filepath.Join(dir, fmt.Sprintf("readme_block%d.txtar", i+1))
		if err := os.WriteFile(name, []byte(readmeScript(block)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	testscript.Run(t, testscript.Params{
		Dir:                 dir,
		RequireExplicitExec: true,
		Setup:               readmeSetup,
		Condition: func(cond string) (bool, error) {
			if cond != "pty" {
				return false, fmt.Errorf("unknown condition %q", cond)
			}
			f, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
			if err != nil {
				return false, nil
			}
			return true, f.Close()
		},
	})
}

func TestTestedBlocks(t *testing.T) {
	readme := "# x\n\n```sh\nnot tested\n```\n\n" +
		"<!-- tested: a note\nover lines -->\n```sh\n" +
		"# a comment\n" +
		"ds log run.dss | grep FAIL   # greppable | really\n" +
		"\n" +
		"ds log --json run.dss |\n  jq -r 'select(.a==\"b\") | .c'\n" +
		"ds wrap -o x.dss -- make test\n" +
		"ds series host.net \\\n  --rate run.dss\n" +
		"```\n"
	blocks, err := testedBlocks(readme)
	if err != nil {
		t.Fatal(err)
	}
	want := []readmeCommand{
		{Line: 11, Shell: "ds log run.dss | grep FAIL   # greppable | really", Needs: []string{"grep"}},
		{Line: 13, Shell: "ds log --json run.dss |\n  jq -r 'select(.a==\"b\") | .c'", Needs: []string{"jq"}},
		{Line: 15, Shell: "ds wrap -o x.dss -- make test"},
		{Line: 16, Shell: "ds series host.net \\\n  --rate run.dss"},
	}
	if len(blocks) != 1 || fmt.Sprint(blocks[0]) != fmt.Sprint(want) {
		t.Fatalf("testedBlocks:\n%+v\nwant\n%+v", blocks, want)
	}
	script := readmeScript(blocks[0])
	if !strings.Contains(script, "# README.md:13\n[exec:jq] exec bash -o pipefail -c 'ds log --json run.dss | jq -r ''select(.a==\"b\") | .c'''\n") ||
		!strings.Contains(script, "[exec:grep] exec bash -o pipefail -c 'ds log run.dss | grep FAIL'\n") ||
		!strings.Contains(script, "\nexec bash -o pipefail -c 'ds series host.net --rate run.dss'\n") {
		t.Errorf("readmeScript:\n%s", script)
	}

	for _, bad := range []string{
		"<!-- tested -->\nno block\n",
		"<!-- tested -->\n```sh\nds log x |\n```\n",
		"<!-- tested -->\n```sh\nds log x\n",
	} {
		if _, err := testedBlocks(bad); err == nil {
			t.Errorf("testedBlocks(%q): no error", bad)
		}
	}
}

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// demoScript returns the build script that scripts/demo.sh (make demo)
// wraps, read from the demo itself so that the two never drift apart.
func demoScript(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../scripts/demo.sh")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "<<'EOS'\n")
	body, _, ok2 := strings.Cut(rest, "\nEOS\n")
	if !ok || !ok2 {
		t.Fatal("scripts/demo.sh: no <<'EOS' … EOS build script")
	}
	return body + "\n"
}

// TestDemoOnTerminal: on a terminal, ds wrap of the demo's build prints
// exactly what the build prints without ds (issue: the progress bar and
// the FAIL line used to come out garbled), 20 runs out of 20, and ds log
// shows the progress line before FAIL. The terminal is script(1)'s pty.
func TestDemoOnTerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo 20 times")
	}
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) is not installed")
	}
	dir := t.TempDir()
	build := filepath.Join(dir, "build.sh")
	if err := os.WriteFile(build, []byte(demoScript(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	onTerminal := func(command string) []byte {
		cmd := exec.Command(scriptBin, "-qec", command, "/dev/null")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "DS_TEST_MAIN=1")
		out, _ := cmd.Output() // the build exits 2
		return out
	}
	plain := onTerminal("sh build.sh")
	if !bytes.Contains(plain, []byte("FAIL")) {
		t.Fatalf("the plain run printed %q", plain)
	}
	// One run at a time: 20 at once on a small machine would starve the
	// readers for longer than the build's steps take, the one case in which
	// ds cannot order two pipes (see ds(1) wrap).
	const runs = 20
	got := make([][]byte, runs)
	logs := make([][]byte, runs)
	for i := range runs {
		capture := filepath.Join(dir, fmt.Sprintf("run%d.dss", i))
		got[i] = onTerminal(os.Args[0] + " wrap --label build -o " + capture + " -- sh build.sh")
		cmd := dsCommand("log", "--cat", "-c", "proc.build.stdout", "-c", "proc.build.stderr", capture)
		logs[i], _ = cmd.Output()
	}
	for i := range runs {
		if !bytes.Equal(got[i], plain) {
			t.Errorf("run %d on a terminal:\n%q\nwithout ds:\n%q", i, got[i], plain)
		}
		p, f := bytes.Index(logs[i], []byte("progress 3/3")), bytes.Index(logs[i], []byte("FAIL"))
		if p < 0 || f < p {
			t.Errorf("run %d: ds log --cat puts FAIL before the progress line:\n%q", i, logs[i])
		}
	}
}

package proc

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func init() {
	// The tests look for holders on a machine that may be loaded: a scan
	// cut short at 250 ms would miss them.
	holderScanBudget = time.Minute
}

// startedHolder parses the pid a script printed as its first stdout line,
// and kills that process when the test ends.
func startedHolder(t *testing.T, p *fakeProducer) int {
	t.Helper()
	first, _, _ := strings.Cut(p.text("proc.t.stdout"), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		t.Fatalf("stdout %q: no pid", p.text("proc.t.stdout"))
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

// TestDrainIdleNamesHolder: a background grandchild keeps the outputs open
// after the child exits. Capture stops once they are quiet for DrainIdle,
// long before DrainTimeout, and the drain record names the grandchild.
func TestDrainIdleNamesHolder(t *testing.T) {
	t.Parallel()
	res, p := runSh(t, `sleep 30 & echo $!`, Options{DrainTimeout: 20 * time.Second})
	pid := startedHolder(t, p)
	if got := p.events(t, label); !cmp.Equal(got, []string{"started", "drain_timeout", "exited"}) {
		t.Fatalf("events = %q", got)
	}
	rec := p.lifecycle(t, label)[1]
	want := map[string]any{
		"event":      "drain_timeout",
		"timeout_ns": float64(20 * time.Second),
		"open":       []any{"stdout", "stderr"},
		"reason":     "idle",
		"idle_ns":    float64(DefaultDrainIdle),
		"holders":    []any{map[string]any{"pid": float64(pid), "argv": []any{"sleep", "30"}, "open": []any{"stdout", "stderr"}}},
	}
	delete(rec, "waited_ns")
	if diff := cmp.Diff(want, rec); diff != "" {
		t.Errorf("drain record (-want +got):\n%s", diff)
	}
	if !res.DrainTimedOut || res.DrainReason != DrainReasonIdle || res.ExitCode != 0 {
		t.Errorf("result %+v", res)
	}
	if want := []PipeHolder{{PID: pid, Argv: []string{"sleep", "30"}, Outputs: []string{"stdout", "stderr"}}}; !cmp.Equal(res.DrainHolders, want) {
		t.Errorf("holders = %+v, want %+v", res.DrainHolders, want)
	}
}

// TestDrainTimeoutNamesHolder: with DrainIdle off, capture waits for
// DrainTimeout, and the record says so.
func TestDrainTimeoutNamesHolder(t *testing.T) {
	t.Parallel()
	res, p := runSh(t, `sleep 30 & echo $!`, Options{DrainTimeout: 200 * time.Millisecond, DrainIdle: -1})
	pid := startedHolder(t, p)
	rec := p.lifecycle(t, label)[1]
	if rec["event"] != "drain_timeout" || rec["reason"] != "timeout" || rec["idle_ns"] != float64(0) {
		t.Errorf("drain record %v", rec)
	}
	if !res.DrainTimedOut || res.DrainReason != DrainReasonTimeout || len(res.DrainHolders) != 1 || res.DrainHolders[0].PID != pid {
		t.Errorf("result %+v", res)
	}
}

// TestDrainFollowsFlowingOutput: output that keeps coming after the child
// exited, with gaps well below DrainIdle, is read to EOF although it lasts
// longer than DrainIdle in all. DrainIdle is 5 s, so that a loaded
// machine's gaps stay below it; the output lasts at least 7 s.
func TestDrainFollowsFlowingOutput(t *testing.T) {
	t.Parallel()
	const n = 70
	res, p := runSh(t, fmt.Sprintf(`echo started; (i=0; while [ $i -lt %d ]; do echo x$i; sleep 0.1; i=$((i+1)); done) &`, n),
		Options{DrainTimeout: time.Minute, DrainIdle: 5 * time.Second})
	want := "started\n"
	for i := range n {
		want += fmt.Sprintf("x%d\n", i)
	}
	if got := p.text("proc.t.stdout"); got != want {
		t.Errorf("stdout = %q", got)
	}
	if res.DrainTimedOut || res.DrainReason != "" || res.DrainHolders != nil {
		t.Errorf("result %+v", res)
	}
	if got := p.events(t, label); !cmp.Equal(got, []string{"started", "exited"}) {
		t.Errorf("events = %q", got)
	}
}

// TestDrainIdlePTY: in PTY mode the holder is found by the pty slave.
func TestDrainIdlePTY(t *testing.T) {
	t.Parallel()
	// The grandchild inherits the shell's ignoring of the HUP that the
	// kernel sends when the session leader exits.
	res, p := runSh(t, `trap '' HUP; sleep 30 & echo $!`, Options{PTY: true, DrainTimeout: 20 * time.Second})
	pid := startedHolder(t, p)
	want := []PipeHolder{{PID: pid, Argv: []string{"sleep", "30"}, Outputs: []string{"stdout"}}}
	if !res.DrainTimedOut || res.DrainReason != DrainReasonIdle || !cmp.Equal(res.DrainHolders, want) {
		t.Errorf("result %+v", res)
	}
}

// TestFindHolders runs the /proc scan on a made-up tree.
func TestFindHolders(t *testing.T) {
	root := t.TempDir()
	mk := func(pid string, cmdline string, links ...string) {
		dir := filepath.Join(root, pid, "fd")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if cmdline != "" {
			if err := os.WriteFile(filepath.Join(root, pid, "cmdline"), []byte(cmdline), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for i, l := range links {
			if err := os.Symlink(l, filepath.Join(dir, strconv.Itoa(i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	mk("7", "ds\x00wrap\x00", "pipe:[1]", "pipe:[2]") // self
	mk("12", "sleep\x0030\x00", "/dev/null", "pipe:[2]", "pipe:[1]")
	mk("9", "", "pipe:[2]") // a zombie: no cmdline
	mk("30", "cat\x00", "pipe:[3]", "socket:[1]")
	if err := os.MkdirAll(filepath.Join(root, "self"), 0o755); err != nil {
		t.Fatal(err)
	}
	targets := []holderTarget{{"pipe:[1]", "stdout"}, {"pipe:[2]", "stderr"}}
	got := findHolders(root, targets, 7, time.Minute)
	want := []PipeHolder{
		{PID: 9, Outputs: []string{"stderr"}},
		{PID: 12, Argv: []string{"sleep", "30"}, Outputs: []string{"stdout", "stderr"}},
	}
	if !cmp.Equal(got, want) {
		t.Errorf("holders = %+v, want %+v", got, want)
	}
	if got := findHolders(root, nil, 7, time.Minute); got != nil {
		t.Errorf("no targets: %+v", got)
	}
}

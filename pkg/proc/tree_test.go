package proc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

func TestParseStat(t *testing.T) {
	t.Parallel()
	tail := " 0 0 0 0 0 0 0 20 0 1 0 98765 1000 100"
	tests := []struct {
		in      string
		want    procEntry
		wantErr bool
	}{
		{in: "42 (sleep) S 7 40 30 34816 42 4194304 100" + tail, want: procEntry{PID: 42, PPID: 7, PGRP: 40, SID: 30, State: 'S', Flags: 4194304, StartTicks: 98765}},
		{in: "43 (a (b) c) d) Z 1 1 1 0 -1 4194304 100" + tail, want: procEntry{PID: 43, PPID: 1, PGRP: 1, SID: 1, State: 'Z', Flags: 4194304, StartTicks: 98765}},
		{in: "44 () R 2 3 4 0 -1 0 0" + tail, want: procEntry{PID: 44, PPID: 2, PGRP: 3, SID: 4, State: 'R', StartTicks: 98765}},
		{in: "45 (x) S 1 2 3", wantErr: true},
		{in: "46 sleep S 1 2 3" + tail, wantErr: true},
		{in: "x (sleep) S 1 2 3 4 5 6" + tail, wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tt := range tests {
		got, err := parseStat([]byte(tt.in))
		if (err != nil) != tt.wantErr {
			t.Errorf("parseStat(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if got != tt.want {
			t.Errorf("parseStat(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
	// The real thing.
	e, err := readStat("/proc", os.Getpid())
	if err != nil || e.PID != os.Getpid() || e.PPID != os.Getppid() || e.StartTicks == 0 {
		t.Errorf("readStat(self) = %+v, %v", e, err)
	}
}

func TestTreeOf(t *testing.T) {
	t.Parallel()
	const self, root = 100, 200
	p := func(pid, ppid, pgrp, sid int) procEntry {
		return procEntry{PID: pid, PPID: ppid, PGRP: pgrp, SID: sid, State: 'S', StartTicks: uint64(pid)}
	}
	procs := []procEntry{
		p(1, 0, 1, 1),
		p(self, 1, 50, 50),
		p(root, self, 50, 50),         // the child, in ds's group
		p(201, root, 50, 50),          // its child
		p(202, 201, 50, 50),           // grandchild
		p(203, 202, 50, 50),           // great-grandchild
		p(300, self, 50, 50),          // orphan re-parented to ds
		p(301, 300, 50, 50),           // its child
		p(400, self, 50, 50),          // another child of ds (not adopted)
		p(401, 400, 50, 50),           // its child
		p(500, 1, 500, 500),           // unrelated
		p(600, 1, root, 50),           // re-parented elsewhere, in a group root leads
		p(700, 1, 700, root),          // re-parented elsewhere, in a session root leads
		p(701, 700, 701, root),        // its child
		p(800, 1, 800, 800),           // unrelated
		p(801, 800, 801, 801),         // unrelated
		p(root+1000, 1, 1, self),      // in ds's session: not root's
		p(root+2000, 1, self, 50),     // in ds's group: not root's
		p(root+3000, root+3000, 0, 0), // malformed parent: itself
	}
	adopted := func(e procEntry) bool { return e.PID == 300 }
	var got []int
	for _, e := range treeOf(procs, root, self, adopted) {
		got = append(got, e.PID)
	}
	want := []int{201, 600, 700, 701, 300, 202, 301, 203}
	if !cmp.Equal(got, want) {
		t.Errorf("treeOf = %v, want %v", got, want)
	}
	// Neither ds nor the child itself, whatever the links say.
	procs = append(procs, p(self, root, 50, 50))
	for _, e := range treeOf(procs, root, self, func(procEntry) bool { return true }) {
		if e.PID == self || e.PID == root || e.PID == 1 || e.PID == 500 || e.PID == 800 {
			t.Errorf("treeOf includes %d", e.PID)
		}
	}
}

// procAlive reports whether the process pid with start time start still
// runs (it is gone, a zombie, or the pid was reused otherwise).
func procAlive(pid int, start uint64) bool {
	e, err := readStat("/proc", pid)
	return err == nil && e.StartTicks == start && e.State != 'Z' && e.State != 'X'
}

// waitDead waits until the process is not alive; the test's own timeout is
// the bound.
func waitDead(t *testing.T, what string, pid int, start uint64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for procAlive(pid, start) {
		if time.Now().After(deadline) {
			t.Errorf("%s %d survived", what, pid)
			_ = unix.Kill(pid, unix.SIGKILL) // do not leave it behind
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// treeScript starts, under a child that ignores TERM and INT, a grandchild
// "gc" and an orphan (its parent subshell exits, so it is re-parented to
// ds, the subreaper), both ignoring TERM, prints their pids, then "ready",
// and waits.
const treeScript = `trap '' TERM INT
sleep 300 >/dev/null 2>&1 &
echo "gc $!"
(sleep 300 >/dev/null 2>&1 & echo "orphan $!")
echo ready
wait`

// TestEscalationKillsTree checks that the KILL of an escalation reaches the
// whole tree: a grandchild that ignores TERM and an orphan re-parented to
// ds are killed with the child, and listed in the signal record. It also
// checks that ds is the orphan's subreaper. Not parallel: orphans
// re-parented to the test process count as a Run's only while it is the
// only Run (see killTree).
func TestEscalationKillsTree(t *testing.T) {
	tests := []struct {
		name    string
		trigger func(sigs chan<- os.Signal, cancel func())
		records []string
	}{
		{"grace", func(sigs chan<- os.Signal, _ func()) { sigs <- syscall.SIGTERM },
			[]string{"TERM/15/forwarded", "KILL/9/escalation"}},
		{"second INT", func(sigs chan<- os.Signal, _ func()) { sigs <- syscall.SIGINT; sigs <- syscall.SIGINT },
			[]string{"INT/2/forwarded", "INT/2/forwarded", "KILL/9/escalation"}},
		{"cancel", func(_ chan<- os.Signal, cancel func()) { cancel() },
			[]string{"TERM/15/cancel", "KILL/9/escalation"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newMarkWriter("ready")
			sigs := make(chan os.Signal, 2)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			pids := map[string]int{}
			starts := map[string]uint64{}
			ppid := 0
			go func() {
				waitMarker(t, w)
				for _, line := range strings.Split(w.String(), "\n") {
					if k, v, ok := strings.Cut(line, " "); ok {
						pid, _ := strconv.Atoi(v)
						e, err := readStat("/proc", pid)
						if err != nil {
							t.Errorf("%s %d: %v", k, pid, err)
							continue
						}
						pids[k], starts[k] = pid, e.StartTicks
						if k == "orphan" {
							ppid = e.PPID
						}
					}
				}
				tt.trigger(sigs, cancel)
			}()
			p := &fakeProducer{}
			res, err := Run(ctx, Options{Argv: []string{"sh", "-c", treeScript}, Stdout: w, Producer: p, Label: label,
				Signals: sigs, Grace: 100 * time.Millisecond, DrainTimeout: 100 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			checkExitedLast(t, p, res)
			if res.ExitCode != 137 {
				t.Errorf("exit %d, want 137", res.ExitCode)
			}
			if ppid != os.Getpid() {
				t.Errorf("the orphan's parent is %d, want ds (%d), its subreaper", ppid, os.Getpid())
			}
			if got := sigRecords(t, p); !cmp.Equal(got, tt.records) {
				t.Errorf("signal records = %q, want %q", got, tt.records)
			}
			var desc []any
			for _, m := range p.lifecycle(t, label) {
				if m["source"] == "escalation" {
					desc, _ = m["descendants"].([]any)
				}
			}
			for _, k := range []string{"gc", "orphan"} {
				if pids[k] == 0 {
					t.Fatalf("no %s pid in %q", k, w.String())
				}
				if !slices.Contains(desc, any(float64(pids[k]))) {
					t.Errorf("escalation record's descendants %v lack the %s %d", desc, k, pids[k])
				}
				waitDead(t, k, pids[k], starts[k])
			}
		})
	}
}

// orphanName returns a link to sleep(1) whose base name, unique to the
// test, is the command name (comm) of the processes run through it.
func orphanName(t *testing.T) (link, comm string) {
	t.Helper()
	sleep, err := lookPath("sleep", os.Getenv("PATH"))
	if err != nil {
		t.Skip("no sleep(1)")
	}
	comm = fmt.Sprintf("dso%d", time.Now().UnixNano()%1e9)
	link = filepath.Join(t.TempDir(), comm)
	if err := os.Symlink(sleep, link); err != nil {
		t.Fatal(err)
	}
	return link, comm
}

// procsNamed returns the processes, zombies included, whose comm is comm.
func procsNamed(t *testing.T, comm string) []procEntry {
	t.Helper()
	procs, err := scanProcs("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []procEntry
	for _, e := range procs {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", e.PID)); err == nil && strings.TrimSpace(string(b)) == comm {
			out = append(out, e)
		}
	}
	return out
}

// waitNamed waits until n processes named comm exist (an orphan forked
// before "spawned" may not have reached its exec yet) and returns them; the
// test's own timeout is the bound.
func waitNamed(t *testing.T, comm string, n int) []procEntry {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		found := procsNamed(t, comm)
		if len(found) >= n || time.Now().After(deadline) {
			return found
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitReaped waits until no process named comm is left, not even a zombie;
// the test's own timeout is the bound.
func waitReaped(t *testing.T, comm string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		left := procsNamed(t, comm)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%d processes %s left, e.g. pid %d state %c parent %d (ds is %d)",
				len(left), comm, left[0].PID, left[0].State, left[0].PPID, os.Getpid())
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// orphanScript starts $2 orphans "$1 $3" (each in a subshell that exits at
// once), prints "spawned PID" (its own pid) and waits for a line on stdin.
const orphanScript = `i=0; while [ $i -lt $2 ]; do ("$1" $3 >/dev/null 2>&1 &); i=$((i+1)); done; echo spawned $$; read x`

// TestSubreaperReapsOrphans checks that, during Run, ds is the subreaper of
// the child's orphans and reaps them when they exit: no zombie is left
// whose parent is ds. Not parallel: the test kills the orphans itself.
func TestSubreaperReapsOrphans(t *testing.T) {
	link, comm := orphanName(t)
	const n = 20
	w := newMarkWriter("spawned")
	release := make(chan struct{})
	go func() {
		defer close(release)
		waitMarker(t, w)
		orphans := waitNamed(t, comm, n)
		mine := 0
		for _, e := range orphans {
			if e.PPID == os.Getpid() {
				mine++
			}
			_ = unix.Kill(e.PID, unix.SIGKILL) // they would sleep for 300 s
		}
		if len(orphans) != n || mine != n {
			t.Errorf("%d orphans, %d of them re-parented to ds, want %d and %d", len(orphans), mine, n, n)
		}
		waitReaped(t, comm)
	}()
	res, _ := runCheck(t, Options{Argv: []string{"sh", "-c", orphanScript, "sh", link, strconv.Itoa(n), "300"},
		Stdout: w, Stdin: &stdinAfter{ch: release}})
	if res.ExitCode != 0 {
		t.Errorf("exit %d", res.ExitCode)
	}
	if got := getSubreaper(); got != 0 {
		t.Errorf("still a subreaper (%d) after Run", got)
	}
}

// TestReapAsPID1 runs TestHelperPID1 as PID 1 of a new pid namespace
// (unshare --fork --pid --mount-proc, as in a container without tini), where
// every orphan of the namespace is re-parented to ds.
func TestReapAsPID1(t *testing.T) {
	if _, err := lookPath("unshare", os.Getenv("PATH")); err != nil {
		t.Skip("no unshare(1)")
	}
	probe, _ := runCheck(t, Options{Argv: []string{"unshare", "--fork", "--pid", "--mount-proc", "true"}})
	if probe.ExitCode != 0 {
		t.Skipf("unshare --fork --pid --mount-proc is not permitted here (exit %d)", probe.ExitCode)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	res, _ := runCheck(t, Options{
		Argv:   []string{"unshare", "--fork", "--pid", "--mount-proc", exe, "-test.run=^TestHelperPID1$", "-test.v"},
		Env:    append(os.Environ(), "DS_PROC_HELPER=pid1"),
		Stdout: &out, Stderr: &out,
	})
	if res.ExitCode != 0 || !strings.Contains(out.String(), "--- PASS: TestHelperPID1") {
		t.Errorf("helper exit %d:\n%s", res.ExitCode, out.String())
	}
}

// TestHelperPID1 is run by TestReapAsPID1 only: as PID 1 it runs a child
// that leaves 100 orphans, which exit at once, and checks that none is left
// as a zombie.
func TestHelperPID1(t *testing.T) {
	if os.Getenv("DS_PROC_HELPER") != "pid1" {
		t.Skip("helper process for TestReapAsPID1")
	}
	if os.Getpid() != 1 {
		t.Fatalf("pid %d, want 1", os.Getpid())
	}
	link, _ := orphanName(t)
	w := newMarkWriter("spawned")
	release := make(chan struct{})
	go func() {
		defer close(release)
		waitMarker(t, w)
		// In the namespace, only ds (1), the child and the orphans exist:
		// wait until every orphan is gone, zombies included.
		child, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(w.String(), "spawned")))
		deadline := time.Now().Add(20 * time.Second)
		for {
			procs, err := scanProcs("/proc")
			if err != nil {
				t.Error(err)
				return
			}
			var left []procEntry
			for _, e := range procs {
				if e.PID != 1 && e.PID != child {
					left = append(left, e)
				}
			}
			if len(left) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("%d orphans left, e.g. pid %d state %c parent %d", len(left), left[0].PID, left[0].State, left[0].PPID)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	res, _ := runCheck(t, Options{Argv: []string{"sh", "-c", orphanScript, "sh", link, "100", "0"},
		Stdout: w, Stdin: &stdinAfter{ch: release}})
	if res.ExitCode != 0 {
		t.Errorf("exit %d", res.ExitCode)
	}
}

// stopScripts writes the scripts of TestStopSignalStopsRest into a
// temporary directory and returns the child's: it starts a grandchild "gc"
// and an orphan (in a session of its own, its parent gone, so re-parented
// to ds) that ignore TERM, HUP and INT, and a grandchild "polite" that
// exits on them (its own child, a sleep, dies of them); each prints its
// name and pid once its traps are set. The child itself waits, with no
// trap: a stop signal kills it.
func stopScripts(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"ign.sh":    `trap '' TERM HUP INT; echo "$1 $$"; exec sleep 300` + "\n",
		"polite.sh": `trap 'exit 0' TERM HUP INT; sleep 300 & echo "polite $$"; wait` + "\n",
		"child.sh": `d=$(dirname "$0")
sh "$d/ign.sh" gc </dev/null &
setsid sh -c 'sh "$1" orphan </dev/null &' sh "$d/ign.sh"
sh "$d/polite.sh" </dev/null &
wait
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "child.sh")
}

// TestStopSignalStopsRest checks that a stop signal stops the whole job
// (issue 22 item 7): the child dies of it, what remains of its tree gets
// the signal too (the polite grandchild exits), and what ignores it (a
// grandchild, an orphan in a session of its own) is sent KILL at the
// deadline, Grace after the signal; the records list them (in PTY mode the
// signal went to the child's process group: only the orphan, in a session
// of its own, is sent it again). A child of ds's own (started with os/exec)
// survives. Not parallel: orphans count as the child's only while one Run
// is in progress (see treeWalk).
func TestStopSignalStopsRest(t *testing.T) {
	tests := []struct {
		name    string
		trigger func(sigs chan<- os.Signal, cancel func())
		sig     string
		exit    int
		first   string
		polite  bool // the polite grandchild exits on the signal (it cannot trap an INT that was ignored when it started)
		pty     bool // the signal goes to the child's process group: what is in it had it already
	}{
		{"TERM", func(sigs chan<- os.Signal, _ func()) { sigs <- syscall.SIGTERM }, "TERM/15", 143, "TERM/15/forwarded", true, false},
		{"HUP", func(sigs chan<- os.Signal, _ func()) { sigs <- syscall.SIGHUP }, "HUP/1", 129, "HUP/1/forwarded", true, false},
		{"INT", func(sigs chan<- os.Signal, _ func()) { sigs <- syscall.SIGINT }, "INT/2", 130, "INT/2/forwarded", false, false},
		{"cancel", func(_ chan<- os.Signal, cancel func()) { cancel() }, "TERM/15", 143, "TERM/15/cancel", true, false},
		{"TERM pty", func(sigs chan<- os.Signal, _ func()) { sigs <- syscall.SIGTERM }, "TERM/15", 143, "TERM/15/forwarded", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mine := exec.Command("sleep", "300") // ds's own child, not the job's
			if err := mine.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = mine.Process.Kill(); _ = mine.Wait() }()

			w := newMarkWriter("")
			sigs := make(chan os.Signal, 2)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			pids := map[string]int{}
			starts := map[string]uint64{}
			go func() {
				for _, k := range []string{"gc ", "orphan ", "polite "} {
					w.waitFor(t, k)
				}
				for _, line := range strings.Split(w.String(), "\n") {
					if k, v, ok := strings.Cut(strings.TrimSuffix(line, "\r"), " "); ok {
						pid, _ := strconv.Atoi(v)
						e, err := readStat("/proc", pid)
						if err != nil {
							t.Errorf("%s %d: %v", k, pid, err)
							continue
						}
						pids[k], starts[k] = pid, e.StartTicks
					}
				}
				tt.trigger(sigs, cancel)
			}()
			p := &fakeProducer{}
			res, err := Run(ctx, Options{Argv: []string{"sh", stopScripts(t)}, Stdout: w, Producer: p, Label: label,
				Signals: sigs, TTYSignals: TTYSignalsForward, Grace: time.Second, PTY: tt.pty})
			if err != nil {
				t.Fatal(err)
			}
			checkExitedLast(t, p, res)
			if res.ExitCode != tt.exit {
				t.Errorf("exit %d, want %d", res.ExitCode, tt.exit)
			}
			want := []string{tt.first, tt.sig + "/tree", "KILL/9/escalation"}
			if got := sigRecords(t, p); !cmp.Equal(got, want) {
				t.Errorf("signal records = %q, want %q", got, want)
			}
			lists := map[string][]any{}
			for _, m := range p.lifecycle(t, label) {
				if src, _ := m["source"].(string); src == "tree" || src == "escalation" {
					lists[src], _ = m["descendants"].([]any)
					if n, _ := m["count"].(float64); int(n) != len(lists[src]) {
						t.Errorf("%s record: count %v, %d descendants", src, m["count"], len(lists[src]))
					}
				}
			}
			for _, k := range []string{"gc", "orphan", "polite"} {
				if pids[k] == 0 {
					t.Fatalf("no %s pid in %q", k, w.String())
				}
				sent := k == "orphan" || !tt.pty
				if got := slices.Contains(lists["tree"], any(float64(pids[k]))); got != sent {
					t.Errorf("tree record's descendants %v: %s %d listed %v, want %v", lists["tree"], k, pids[k], got, sent)
				}
				killed := k != "polite" || !tt.polite
				if got := slices.Contains(lists["escalation"], any(float64(pids[k]))); got != killed {
					t.Errorf("escalation record's descendants %v: %s %d listed %v, want %v", lists["escalation"], k, pids[k], got, killed)
				}
				waitDead(t, k, pids[k], starts[k])
			}
			if slices.Contains(lists["tree"], any(float64(mine.Process.Pid))) || !procAliveNow(mine.Process.Pid) {
				t.Errorf("ds's own child %d was signalled", mine.Process.Pid)
			}
		})
	}
}

// procAliveNow reports whether process pid runs (not a zombie).
func procAliveNow(pid int) bool {
	e, err := readStat("/proc", pid)
	return err == nil && e.State != 'Z' && e.State != 'X'
}

// TestExitLongAfterStopLeavesRest checks that a child that exits on its
// own, later than Grace after a stop signal (here its INT trap takes 50 ms,
// Grace is 1 ms), was not stopped by it: what remains of its tree is left
// alone, as after any exit of its own.
func TestExitLongAfterStopLeavesRest(t *testing.T) {
	w := newMarkWriter("ready")
	sigs := make(chan os.Signal, 1)
	go func() { waitMarker(t, w); sigs <- syscall.SIGINT }()
	res, p := runSh(t, `trap 'sleep 0.05; exit 3' INT; sleep 300 </dev/null >/dev/null 2>&1 &
echo "gc $!"; echo ready; wait`, Options{Stdout: w, Signals: sigs, TTYSignals: TTYSignalsForward, Grace: time.Millisecond})
	if res.ExitCode != 3 {
		t.Errorf("exit %d, want 3", res.ExitCode)
	}
	if got := sigRecords(t, p); !cmp.Equal(got, []string{"INT/2/forwarded"}) {
		t.Errorf("signal records = %q", got)
	}
	var gc int
	for _, line := range strings.Split(w.String(), "\n") {
		if v, ok := strings.CutPrefix(line, "gc "); ok {
			gc, _ = strconv.Atoi(v)
		}
	}
	if gc == 0 || !procAliveNow(gc) {
		t.Errorf("grandchild %d is gone (output %q)", gc, w.String())
	}
	if gc > 0 {
		_ = unix.Kill(gc, unix.SIGKILL)
		_, _ = unix.Wait4(gc, nil, 0, nil) // an orphan of this process now that Run has returned
	}
}

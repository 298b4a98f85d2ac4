package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// procEntry holds the fields of /proc/PID/stat that the process tree needs.
type procEntry struct {
	PID, PPID  int
	PGRP, SID  int    // process group and session
	State      byte   // 'R', 'S', 'Z', ...
	Flags      uint64 // the kernel's PF_* flags (field 9)
	StartTicks uint64 // start time after boot in clock ticks: with PID, the process's identity
}

// pfExiting is the kernel's PF_EXITING flag (include/linux/sched.h): the
// process is exiting (it has a fatal signal, or called exit).
const pfExiting = 0x4

// dying reports whether e is dead or on its way out: a zombie, or exiting.
func (e procEntry) dying() bool {
	return e.State == 'Z' || e.State == 'X' || e.Flags&pfExiting != 0
}

// parseStat parses the contents of /proc/PID/stat (proc(5)): "PID (COMM)
// STATE PPID PGRP SESSION TTY TPGID FLAGS …", field 22 being the start time. COMM may hold
// spaces and parentheses, so the fields after it are found from the last ')'.
func parseStat(b []byte) (procEntry, error) {
	var e procEntry
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return e, errors.New("proc: malformed stat: no command name")
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil {
		return e, fmt.Errorf("proc: malformed stat: %w", err)
	}
	f := bytes.Fields(b[end+1:]) // f[0] is field 3, state
	if len(f) < 20 || len(f[0]) != 1 {
		return e, errors.New("proc: malformed stat: too few fields")
	}
	ints := make([]int, 3)
	for i := range ints {
		if ints[i], err = strconv.Atoi(string(f[1+i])); err != nil {
			return e, fmt.Errorf("proc: malformed stat: %w", err)
		}
	}
	flags, err := strconv.ParseUint(string(f[6]), 10, 64)
	if err != nil {
		return e, fmt.Errorf("proc: malformed stat: %w", err)
	}
	start, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return e, fmt.Errorf("proc: malformed stat: %w", err)
	}
	return procEntry{PID: pid, PPID: ints[0], PGRP: ints[1], SID: ints[2], State: f[0][0], Flags: flags, StartTicks: start}, nil
}

// readStat reads and parses root/PID/stat.
func readStat(root string, pid int) (procEntry, error) {
	b, err := os.ReadFile(root + "/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procEntry{}, err
	}
	return parseStat(b)
}

// scanProcs returns every process of root (normally "/proc"); processes
// that vanish meanwhile are left out.
func scanProcs(root string) ([]procEntry, error) {
	pids, err := procPIDs(root)
	if err != nil {
		return nil, err
	}
	out := make([]procEntry, 0, len(pids))
	for _, pid := range pids {
		if e, err := readStat(root, pid); err == nil {
			out = append(out, e)
		}
	}
	return out, nil
}

// procPIDs lists the process ids under root (normally "/proc"): its
// entries whose names are positive numbers.
func procPIDs(root string) ([]int, error) {
	d, err := os.Open(root)
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, err
	}
	pids := make([]int, 0, len(names))
	for _, n := range names {
		if pid, err := strconv.Atoi(n); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// treeOf returns the tree of process root found in procs, root itself
// excluded, parents before their children: root's children, the members of
// a session or process group root leads (its pid, live, can name no other),
// and the children of self (this process, their subreaper) for which adopted
// returns true; then, recursively, the children of all these. self is never
// part of it.
func treeOf(procs []procEntry, root, self int, adopted func(procEntry) bool) []procEntry {
	kids := map[int][]procEntry{}
	for _, e := range procs {
		kids[e.PPID] = append(kids[e.PPID], e)
	}
	seen := map[int]bool{root: true, self: true}
	var out []procEntry
	add := func(e procEntry) {
		if !seen[e.PID] {
			seen[e.PID] = true
			out = append(out, e)
		}
	}
	for _, e := range kids[root] {
		add(e)
	}
	for _, e := range procs {
		if e.SID == root || e.PGRP == root {
			add(e)
		}
	}
	for _, e := range kids[self] {
		if adopted(e) {
			add(e)
		}
	}
	for i := 0; i < len(out); i++ {
		for _, c := range kids[out[i].PID] {
			add(c)
		}
	}
	return out
}

// maxKillPasses bounds the passes of killTree: each finds the processes
// forked before the previous pass's KILL landed.
const maxKillPasses = 8

// A treeWalk finds the process tree of a Run's child (see treeOf) again and
// again, and remembers, by pid and start time, every process it found: a
// process re-parented to this process counts as the child's when this Run
// is the only one in progress (as in ds wrap) or when an earlier look found
// it in the tree; children that a Run started or for which this process
// holds a pidfd never do.
type treeWalk struct {
	root, self int
	single     bool
	known      map[int]uint64 // pid → start time of the processes found in the tree
}

// newTreeWalk returns a walk of the tree of the child root; nil when /proc
// is not that of this process's pid namespace (the tree cannot be found).
func newTreeWalk(root int) *treeWalk {
	if !procIsOurs() {
		return nil
	}
	return &treeWalk{root: root, self: os.Getpid(), single: activeRuns() <= 1, known: map[int]uint64{}}
}

// find returns the tree as it is now, parents before their children
// (zombies included), and remembers its members; an error when /proc
// cannot be read.
func (t *treeWalk) find() ([]procEntry, error) {
	procs, err := scanProcs("/proc")
	if err != nil {
		return nil, err
	}
	held := heldPIDFDs()
	tree := treeOf(procs, t.root, t.self, func(e procEntry) bool {
		if isOwn(e.PID) || held[e.PID] {
			return false
		}
		start, ok := t.known[e.PID]
		return t.single || (ok && start == e.StartTicks)
	})
	for _, e := range tree {
		t.known[e.PID] = e.StartTicks
	}
	return tree, nil
}

// kill sends KILL to every live member of the tree, pass after pass until
// a pass finds no process it has not killed yet (at most maxKillPasses),
// and returns the pids it was sent to, in that order. killRoot, if not nil,
// is called once, after the first look at the tree and before the rest is
// killed, so that the child's children are still found as its children.
func (t *treeWalk) kill(killRoot func()) []int {
	done := map[int]uint64{} // pid → start time of the processes killed or found dead
	var killed []int
	for pass := 0; pass < maxKillPasses; pass++ {
		tree, err := t.find()
		if err != nil {
			break
		}
		if pass == 0 && killRoot != nil {
			killRoot()
			killRoot = nil
		}
		n := 0
		for _, e := range tree {
			if start, ok := done[e.PID]; ok && start == e.StartTicks {
				continue // killed in an earlier pass
			}
			done[e.PID] = e.StartTicks
			if e.State == 'Z' || e.State == 'X' {
				continue // dead already
			}
			if signalProcess(e, unix.SIGKILL) {
				killed = append(killed, e.PID)
				n++
			}
		}
		if n == 0 {
			break
		}
	}
	if killRoot != nil {
		killRoot()
	}
	return killed
}

// killTree sends KILL to the tree of the child root (see [treeWalk]) and
// returns the pids it was sent to, in that order; killRoot, which signals
// the child itself, is called once, after the first look at the tree and
// before the rest is killed. Every kill goes through a pidfd opened after
// checking the process's start time, so a reused pid is never hit. Without
// a /proc of this pid namespace only killRoot is called.
func killTree(root int, killRoot func()) []int {
	t := newTreeWalk(root)
	if t == nil {
		killRoot()
		return nil
	}
	return t.kill(killRoot)
}

// signalProcess sends sig to e if e still exists and is the same process
// (same start time), through a pidfd (Linux 5.3; kill(2) before that), and
// reports whether it was sent.
func signalProcess(e procEntry, sig unix.Signal) bool {
	fd, err := unix.PidfdOpen(e.PID, 0)
	if errors.Is(err, unix.ENOSYS) {
		if cur, err := readStat("/proc", e.PID); err != nil || cur.StartTicks != e.StartTicks {
			return false
		}
		return unix.Kill(e.PID, sig) == nil
	}
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	if cur, err := readStat("/proc", e.PID); err != nil || cur.StartTicks != e.StartTicks {
		return false
	}
	return unix.PidfdSendSignal(fd, sig, nil, 0) == nil
}

// send sends sig to the child: to its process group in PTY mode, where it
// leads its own session and group, as the terminal would; otherwise to the
// child alone (it shares ds's process group), through os.Process, which
// uses a pidfd, so a reused pid is never hit.
func (s *supervisor) send(sig syscall.Signal) error {
	if s.o.PTY {
		return unix.Kill(-s.proc.Pid, sig)
	}
	return s.proc.Signal(sig)
}

// waitExited blocks until the child pid has exited, without reaping it
// (waitid WEXITED|WNOWAIT): until it is reaped, its pid, and the process
// group or session it may lead, cannot be handed to another process. It
// returns false if the wait failed (the child must then be waited for as
// usual).
func waitExited(pid int) bool {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err == nil
	}
}

// signalPending reports whether sig is pending for process pid (in the
// SigPnd or ShdPnd mask of /proc/PID/status): it has been sent, not yet
// delivered.
func signalPending(pid int, sig syscall.Signal) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false
	}
	bit := uint64(1) << (uint(sig) - 1)
	for line := range bytes.Lines(b) {
		for _, key := range []string{"SigPnd:", "ShdPnd:"} {
			if v, ok := bytes.CutPrefix(line, []byte(key)); ok {
				if mask, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 16, 64); err == nil && mask&bit != 0 {
					return true
				}
			}
		}
	}
	return false
}

// stopPoll bounds the time between two looks at the tree while stopRest
// waits for it to be gone; the first looks come sooner.
const stopPoll = 100 * time.Millisecond

// stopRest stops what remains of the child's process tree after the child,
// sent a stop signal (stop), has exited but before it is reaped: every live
// member (see treeWalk) is sent stop.sig, unless it has had it already
// (stopHad) or is dying, and recorded in a signal record with source
// "tree"; stopRest then waits, looking again now and then (and signalling
// any newcomer), until no member is alive, and at stop.deadline sends KILL
// to those left (killTree's passes), recorded with source "escalation". A
// second INT on sigc (ints counts the ones before) sends KILL at once. The
// child is not signalled again. Without a /proc of this pid namespace it
// does nothing.
func (s *supervisor) stopRest(stop stopState, sigc <-chan os.Signal, ints int) {
	t := newTreeWalk(s.proc.Pid)
	if t == nil {
		return
	}
	deadline := time.NewTimer(time.Until(stop.deadline))
	defer deadline.Stop()
	signalled := map[int]uint64{} // pid → start time of the members looked at
	poll := 5 * time.Millisecond
	for {
		tree, err := t.find()
		if err != nil {
			return
		}
		alive := 0
		var sent []int
		for _, e := range tree {
			if e.dying() {
				continue
			}
			alive++
			if start, ok := signalled[e.PID]; ok && start == e.StartTicks {
				continue
			}
			signalled[e.PID] = e.StartTicks
			if s.stopHad(e, stop) || signalPending(e.PID, stop.sig) {
				continue
			}
			if signalProcess(e, unix.Signal(stop.sig)) {
				sent = append(sent, e.PID)
			}
		}
		if len(sent) > 0 {
			s.record(signalRecord{Event: EventSignal, Signal: SignalName(stop.sig), Number: int(stop.sig), Source: SourceTree,
				Descendants: sent, Count: len(sent)})
		}
		if alive == 0 {
			return
		}
		wait := time.NewTimer(poll)
		poll = min(2*poll, stopPoll)
		select {
		case <-wait.C:
			continue
		case <-deadline.C:
		case sig, ok := <-sigc:
			wait.Stop()
			if !ok {
				sigc = nil
				continue
			}
			if sig != syscall.SIGINT {
				continue
			}
			if ints++; ints < 2 {
				continue
			}
		}
		wait.Stop()
		break
	}
	s.killed = true
	if pids := t.kill(nil); len(pids) > 0 {
		s.record(signalRecord{Event: EventSignal, Signal: SignalName(syscall.SIGKILL), Number: int(syscall.SIGKILL), Source: SourceEscalation,
			Descendants: pids, Count: len(pids)})
	}
}

// stopHad reports whether e got the stop signal already, from the same
// sending: in PTY mode a forwarded signal went to the child's process
// group, and a signal the terminal delivered went to ds's.
func (s *supervisor) stopHad(e procEntry, stop stopState) bool {
	switch stop.source {
	case SourceTerminal:
		return e.PGRP == unix.Getpgrp()
	case SourceForwarded, SourceCancel:
		return s.o.PTY && e.PGRP == s.proc.Pid
	}
	return false
}

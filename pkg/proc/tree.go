package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// procEntry holds the fields of /proc/PID/stat that the process tree needs.
type procEntry struct {
	PID, PPID  int
	PGRP, SID  int    // process group and session
	State      byte   // 'R', 'S', 'Z', ...
	StartTicks uint64 // start time after boot in clock ticks: with PID, the process's identity
}

// parseStat parses the contents of /proc/PID/stat (proc(5)): "PID (COMM)
// STATE PPID PGRP SESSION …", field 22 being the start time. COMM may hold
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
	start, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return e, fmt.Errorf("proc: malformed stat: %w", err)
	}
	return procEntry{PID: pid, PPID: ints[0], PGRP: ints[1], SID: ints[2], State: f[0][0], StartTicks: start}, nil
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

// killTree sends KILL to the tree of the child root (see treeOf) and returns
// the pids it was sent to, in that order; killRoot, which signals the child
// itself, is called once, after the first look at the tree and before the
// rest is killed, so that the child's children are still found as its
// children. Processes re-parented to this process count as root's when this
// Run is the only one in progress (as in ds wrap) or when an earlier pass
// found them in the tree; children that a Run started or for which this
// process holds a pidfd never do. Every kill goes through a pidfd opened
// after checking the process's start time, so a reused pid is never hit.
// Without a /proc of this pid namespace only killRoot is called.
func killTree(root int, killRoot func()) []int {
	if !procIsOurs() {
		killRoot()
		return nil
	}
	self := os.Getpid()
	seen := map[int]uint64{} // pid → start time of the processes found in the tree
	single := activeRuns() <= 1
	var killed []int
	for pass := 0; pass < maxKillPasses; pass++ {
		procs, err := scanProcs("/proc")
		if err != nil {
			break
		}
		held := heldPIDFDs()
		tree := treeOf(procs, root, self, func(e procEntry) bool {
			if isOwn(e.PID) || held[e.PID] {
				return false
			}
			start, ok := seen[e.PID]
			return single || (ok && start == e.StartTicks)
		})
		if pass == 0 {
			killRoot()
		}
		n := 0
		for _, e := range tree {
			if start, ok := seen[e.PID]; ok && start == e.StartTicks {
				continue // killed in an earlier pass
			}
			seen[e.PID] = e.StartTicks
			if e.State == 'Z' || e.State == 'X' {
				continue // dead already
			}
			if killProcess(e) {
				killed = append(killed, e.PID)
				n++
			}
		}
		if n == 0 {
			break
		}
	}
	return killed
}

// killProcess sends KILL to e if e still exists and is the same process
// (same start time), through a pidfd (Linux 5.3; kill(2) before that).
func killProcess(e procEntry) bool {
	fd, err := unix.PidfdOpen(e.PID, 0)
	if errors.Is(err, unix.ENOSYS) {
		if cur, err := readStat("/proc", e.PID); err != nil || cur.StartTicks != e.StartTicks {
			return false
		}
		return unix.Kill(e.PID, unix.SIGKILL) == nil
	}
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	if cur, err := readStat("/proc", e.PID); err != nil || cur.StartTicks != e.StartTicks {
		return false
	}
	return unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) == nil
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

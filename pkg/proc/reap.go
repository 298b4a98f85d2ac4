package proc

import (
	"bytes"
	"errors"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The reaper.
//
// While at least one Run is in progress the process is a child subreaper
// (prctl PR_SET_CHILD_SUBREAPER, Linux 3.4): a descendant of the child whose
// parent exits is re-parented to this process rather than to init, as it is
// anyway when this process is PID 1 of a pid namespace. Such orphans are
// this process's children, so when they exit somebody here must wait for
// them or they stay zombies. One goroutine, reapLoop, does that, as tini
// does for a container, woken by SIGCHLD (and every reapPoll, in case a
// wake-up was missed).
//
// The reaper must never take the exit status of a child that somebody waits
// for: Run's own child, waited for by os.Process.Wait through its pidfd, or a
// child that other code of the process started. So it first peeks at an
// exited child without reaping it (waitid P_ALL with WNOWAIT), and reaps it
// (wait4 on that pid) only when it is neither a Run's child (ownPIDs) nor a
// child this process holds a pidfd for (os.StartProcess and os/exec hold one
// from the moment the child exists until it is waited for; see heldPIDFDs).
// A peeked child that is protected ends the pass: waitid would keep
// returning it, and its own waiter reaps it at once; Run kicks the reaper
// when its child has been waited for, and reapPoll covers other waiters.

// reapPoll is how often the reaper looks for zombies without a SIGCHLD.
const reapPoll = time.Second

var (
	// spawnMu is held for reading while a Run starts its child and adds it
	// to ownPIDs, and for writing while the reaper peeks and reaps, so that
	// a child that exits at once is known as Run's before the reaper can see
	// it.
	spawnMu sync.RWMutex

	ownMu   sync.Mutex
	ownPIDs = map[int]int{} // pid of a Run's child not yet waited for → count

	reapMu   sync.Mutex // guards reapRefs, reapPrev, reapStop, reapDone
	reapRefs int        // Runs in progress
	reapPrev int        // the subreaper attribute before the first of them
	reapStop chan struct{}
	reapDone chan struct{}
	reapKick = make(chan struct{}, 1)
)

// acquireReaper makes the process a child subreaper and starts the reaper
// when no Run is in progress yet, and counts one more Run. The returned
// function undoes it for the last Run (restoring the attribute ds had
// before); it may be called more than once.
func acquireReaper() (release func()) {
	reapMu.Lock()
	if reapRefs == 0 {
		reapPrev = getSubreaper()
		if reapPrev == 0 {
			_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
		}
		reapStop, reapDone = make(chan struct{}), make(chan struct{})
		go reapLoop(reapStop, reapDone)
	}
	reapRefs++
	reapMu.Unlock()
	var once sync.Once
	return func() { once.Do(releaseReaper) }
}

func releaseReaper() {
	reapMu.Lock()
	reapRefs--
	if reapRefs > 0 {
		reapMu.Unlock()
		return
	}
	stop, done := reapStop, reapDone
	reapStop, reapDone = nil, nil
	if reapPrev == 0 {
		_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	}
	reapMu.Unlock()
	close(stop)
	<-done
}

// activeRuns returns the number of Runs in progress.
func activeRuns() int {
	reapMu.Lock()
	defer reapMu.Unlock()
	return reapRefs
}

// getSubreaper returns the PR_GET_CHILD_SUBREAPER attribute, 0 on error.
func getSubreaper() int {
	v := new(int32) // on the heap: it does not move while the kernel writes it
	if err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(v)), 0, 0, 0); err != nil {
		return 0
	}
	runtime.KeepAlive(v)
	return int(*v)
}

// addOwn records pid as a Run's child; the caller holds spawnMu for reading.
func addOwn(pid int) {
	ownMu.Lock()
	ownPIDs[pid]++
	ownMu.Unlock()
}

// doneOwn forgets a Run's child once it has been waited for, and kicks the
// reaper, which may have stopped at it.
func doneOwn(pid int) {
	ownMu.Lock()
	if ownPIDs[pid]--; ownPIDs[pid] <= 0 {
		delete(ownPIDs, pid)
	}
	ownMu.Unlock()
	select {
	case reapKick <- struct{}{}:
	default:
	}
}

func isOwn(pid int) bool {
	ownMu.Lock()
	defer ownMu.Unlock()
	return ownPIDs[pid] > 0
}

// reapLoop reaps orphans until stop is closed, then once more, and closes
// done.
func reapLoop(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, unix.SIGCHLD)
	defer signal.Stop(sigc)
	t := time.NewTicker(reapPoll)
	defer t.Stop()
	for {
		reapZombies()
		select {
		case <-stop:
			reapZombies()
			return
		case <-sigc:
		case <-reapKick:
		case <-t.C:
		}
	}
}

// reapZombies reaps every exited child that is not protected (see the
// comment at the top of this file) and returns how many it reaped.
func reapZombies() int {
	spawnMu.Lock()
	defer spawnMu.Unlock()
	n := 0
	for {
		pid, err := peekExited()
		if err != nil || pid <= 0 {
			return n
		}
		if isOwn(pid) || heldPIDFDs()[pid] {
			return n
		}
		var ws unix.WaitStatus
		if _, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil); err != nil && !errors.Is(err, unix.EINTR) {
			return n
		}
		n++
	}
}

// siginfoChild is the start of a siginfo_t for SIGCHLD (as in the runtime's
// internal/syscall/unix): si_signo, si_errno and si_code, padding up to the
// union on 64-bit systems, then si_pid.
type siginfoChild struct {
	Signo int32
	_     [2]int32 // si_errno, si_code (swapped on MIPS)
	_     [is64bit]int32
	Pid   int32
}

const is64bit = ^uint(0) >> 63 // 1 on 64-bit systems, 0 on 32-bit ones

// peekExited returns the pid of an exited child without reaping it, 0 if
// none has exited; ECHILD when there are no children at all.
func peekExited() (int, error) {
	for {
		var info unix.Siginfo // zeroed: si_pid stays 0 when none has exited
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, err
		}
		return int((*siginfoChild)(unsafe.Pointer(&info)).Pid), nil
	}
}

// procIsOurs reports whether /proc describes this process's pid namespace
// (it does not under "unshare --pid" without --mount-proc, where /proc is
// the parent namespace's and its pids are not ours).
func procIsOurs() bool {
	l, err := os.Readlink("/proc/self")
	return err == nil && l == strconv.Itoa(os.Getpid())
}

// heldPIDFDs returns the pids this process holds a pidfd for (from
// /proc/self/fdinfo, Linux 5.4), nil when /proc is not ours.
func heldPIDFDs() map[int]bool {
	if !procIsOurs() {
		return nil
	}
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	var held map[int]bool
	for _, n := range names {
		l, err := os.Readlink("/proc/self/fd/" + n)
		if err != nil || !bytes.Contains([]byte(l), []byte("pidfd")) {
			continue
		}
		info, err := os.ReadFile("/proc/self/fdinfo/" + n)
		if err != nil {
			continue
		}
		for line := range bytes.Lines(info) {
			if v, ok := bytes.CutPrefix(line, []byte("Pid:")); ok {
				if pid, err := strconv.Atoi(string(bytes.TrimSpace(v))); err == nil && pid > 0 {
					if held == nil {
						held = map[int]bool{}
					}
					held[pid] = true
				}
			}
		}
	}
	return held
}

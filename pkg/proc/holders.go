package proc

import (
	"bytes"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// holderScanBudget bounds the time spent looking for the processes that
// hold the child's outputs open (see [PipeHolder]); processes not looked at
// by then are not reported.
var holderScanBudget = 250 * time.Millisecond // a var: the tests raise it (a loaded machine)

// maxCmdline bounds the bytes of /proc/PID/cmdline read for a holder's argv.
const maxCmdline = 4 << 10

// A PipeHolder is a process other than ds that still had one of the child's
// outputs open when capture stopped before EOF, typically a background
// grandchild (cmd & exit). It is found, best effort, by looking through
// /proc/*/fd for the output's pipe (or, in PTY mode, for the pty slave);
// processes ds may not inspect (other users') are missed.
type PipeHolder struct {
	// PID is the holder's process id.
	PID int
	// Argv is its command line from /proc/PID/cmdline, at most 4 KiB of it;
	// nil if it could not be read (the process is gone, or a zombie).
	Argv []string
	// Outputs names what it holds open: "stdout", "stderr" or both.
	Outputs []string
}

// holderRecord is a PipeHolder in a drain_timeout record.
type holderRecord struct {
	PID  int      `json:"pid"`
	Argv []string `json:"argv"`
	Open []string `json:"open"`
}

// drainRecord is the drain_timeout record: the fields it always had, plus
// why and after how long the drain stopped, and who holds the outputs.
type drainRecord struct {
	drainTimeoutRecord
	Reason   string         `json:"reason"`
	IdleNS   int64          `json:"idle_ns"`
	WaitedNS int64          `json:"waited_ns"`
	Holders  []holderRecord `json:"holders"`
}

// outputLink returns what readlink(2) of another process's descriptor for
// the same output as f shows: "pipe:[INODE]" for a pipe, the pty slave's
// path for a PTY master; "" if it cannot tell.
func outputLink(f *os.File, pty bool) string {
	var link string
	_ = withFD(f, func(fd int) error {
		if pty {
			n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
			if err == nil {
				link = "/dev/pts/" + strconv.FormatUint(uint64(n), 10)
			}
			return err
		}
		var st unix.Stat_t
		err := unix.Fstat(fd, &st)
		if err == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO {
			link = "pipe:[" + strconv.FormatUint(st.Ino, 10) + "]"
		}
		return err
	})
	return link
}

// holderTarget is one output to look for: its link as readlink shows it
// (see outputLink) and its name.
type holderTarget struct {
	link, name string
}

// findHolders lists, in pid order, the processes under procRoot (/proc)
// other than self that have a descriptor for one of targets. It gives up
// after budget.
func findHolders(procRoot string, targets []holderTarget, self int, budget time.Duration) []PipeHolder {
	if len(targets) == 0 {
		return nil
	}
	pids, err := procPIDs(procRoot)
	if err != nil {
		return nil
	}
	deadline := time.Now().Add(budget)
	var out []PipeHolder
	for _, pid := range pids {
		if pid == self {
			continue
		}
		if time.Now().After(deadline) {
			break
		}
		dir := procRoot + "/" + strconv.Itoa(pid)
		held := heldOutputs(dir+"/fd", targets)
		if len(held) == 0 {
			continue
		}
		out = append(out, PipeHolder{PID: pid, Argv: readCmdline(dir + "/cmdline"), Outputs: held})
	}
	slices.SortFunc(out, func(a, b PipeHolder) int { return a.PID - b.PID })
	return out
}

// heldOutputs returns the names of the targets, in targets order, that a
// descriptor under fdDir refers to.
func heldOutputs(fdDir string, targets []holderTarget) []string {
	d, err := os.Open(fdDir)
	if err != nil {
		return nil // gone, or not ours to look at
	}
	fds, _ := d.Readdirnames(-1)
	d.Close()
	seen := make([]bool, len(targets))
	for _, fd := range fds {
		link, err := os.Readlink(fdDir + "/" + fd)
		if err != nil {
			continue
		}
		for i, t := range targets {
			if link == t.link {
				seen[i] = true
			}
		}
	}
	var held []string
	for i, t := range targets {
		if seen[i] {
			held = append(held, t.name)
		}
	}
	return held
}

// readCmdline reads a NUL-separated command line, at most maxCmdline bytes.
func readCmdline(name string) []string {
	f, err := os.Open(name)
	if err != nil {
		return nil
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxCmdline))
	if err != nil || len(b) == 0 {
		return nil
	}
	b = bytes.TrimSuffix(b, []byte{0})
	return strings.Split(string(b), "\x00")
}

package main

import (
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// TestProgressChoice: a progress bar shows on a terminal stderr (TERM not
// dumb) unless -q; NO_COLOR has no say in it (issue 22 item 8).
func TestProgressChoice(t *testing.T) {
	tests := []struct {
		terminal, quiet bool
		term            string
		on              bool
	}{
		{true, false, "xterm", true},
		{true, false, "", true},
		{true, true, "xterm", false},
		{false, false, "xterm", false},
		{true, false, "dumb", false},
	}
	for _, tt := range tests {
		if on := progressChoice(tt.terminal, tt.quiet, tt.term); on != tt.on {
			t.Errorf("progressChoice(terminal %v, quiet %v, TERM=%q) = %v, want %v", tt.terminal, tt.quiet, tt.term, on, tt.on)
		}
	}
}

// TestMergeBarNoColor: NO_COLOR set, ds merge's bar still shows on a
// terminal stderr (a pty here); -q hides it.
func TestMergeBarNoColor(t *testing.T) {
	master, slave := openTestPTY(t)
	defer master.Close()
	defer slave.Close()
	t.Setenv("NO_COLOR", "1")
	t.Setenv("TERM", "xterm")
	if b := newMergeBar(slave, 100, false); !b.on {
		t.Error("NO_COLOR=1 turned the progress bar off on a terminal")
	}
	if b := newMergeBar(slave, 100, true); b.on {
		t.Error("-q left the progress bar on")
	}
}

// openTestPTY opens a pseudo-terminal pair (skipping the test where there
// is none).
func openTestPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	n, err := unix.IoctlGetUint32(int(m.Fd()), unix.TIOCGPTN)
	if err == nil {
		err = unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0)
	}
	if err != nil {
		m.Close()
		t.Skipf("no pty: %v", err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.FormatUint(uint64(n), 10), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Skipf("no pty: %v", err)
	}
	return m, s
}

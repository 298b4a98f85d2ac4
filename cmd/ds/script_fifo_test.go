package main

import (
	"os"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"golang.org/x/sys/unix"
)

// fifodrained FIFO: wait until the named pipe FIFO holds no unread byte
// (FIONREAD of the pipe is 0), for at most 60 s. With its writers done,
// that means its reader has read everything: an event to wait for
// instead of a sleep that a loaded machine outlasts. The pipe is opened
// read-write, which neither blocks nor reads anything.
func cmdFifoDrained(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: fifodrained FIFO")
	}
	f, err := os.OpenFile(ts.MkAbs(args[0]), os.O_RDWR|unix.O_NONBLOCK, 0)
	ts.Check(err)
	defer f.Close()
	for deadline := time.Now().Add(60 * time.Second); ; {
		n, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCINQ) // FIONREAD
		ts.Check(err)
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("fifodrained: %s still holds %d unread bytes after 60 s", args[0], n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

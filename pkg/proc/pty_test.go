package proc

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

func TestPTY(t *testing.T) {
	t.Parallel()
	var out markWriter
	res, p := runSh(t, `test -t 1 && echo tty; test -t 2 && echo tty2 >&2; test -t 0 || echo notty0; stty size </dev/tty; printf end`,
		Options{PTY: true, Stdout: &out, Stderr: errWriter{}})
	want := "tty\r\ntty2\r\nnotty0\r\n24 80\r\nend"
	if got := p.text("proc.t.stdout"); got != want {
		t.Errorf("stdout channel = %q, want %q", got, want)
	}
	if out.String() != want {
		t.Errorf("pass-through = %q", out.String())
	}
	if !cmp.Equal(p.names, []string{"proc.t.stdout", "proc.t.lifecycle"}) {
		t.Errorf("channels = %q", p.names)
	}
	st := p.lifecycle(t, label)[0]
	if st["pty"] != true || st["merged_output"] != true {
		t.Errorf("started = %v", st)
	}
	if res.ExitCode != 0 || res.Stderr.Frames != 0 {
		t.Errorf("result %+v", res)
	}
}

func TestPTYExitCodeAndSignal(t *testing.T) {
	t.Parallel()
	res, _ := runSh(t, `exit 3`, Options{PTY: true})
	if res.ExitCode != 3 {
		t.Errorf("exit %d", res.ExitCode)
	}
	w := newMarkWriter("ready")
	sigs := make(chan os.Signal, 1)
	go func() { waitMarker(t, w); sigs <- syscall.SIGTERM }()
	// TERM goes to the child's process group: the background sleep dies too.
	res, p := runSh(t, `trap 'exit 9' TERM; sleep 30 & echo ready; wait`, Options{PTY: true, Stdout: w, Signals: sigs, DrainTimeout: 5e9})
	if res.ExitCode != 9 {
		t.Errorf("result %+v", res)
	}
	// The sleep got TERM too: on a loaded machine it may still hold the
	// pty for a moment when the drain looks (a holder named), but it must
	// be gone soon (20 s, for a loaded machine), not in 30 s.
	for _, h := range res.DrainHolders {
		deadline := time.Now().Add(20 * time.Second)
		for syscall.Kill(h.PID, 0) == nil {
			if time.Now().After(deadline) {
				t.Errorf("holder %+v still alive: TERM did not reach the process group", h)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if got := sigRecords(t, p); !cmp.Equal(got, []string{"TERM/15/forwarded"}) {
		t.Errorf("signal records = %q", got)
	}
}

// TestPTYInteractive plays the user's terminal with a second pty: ds must
// size the child's pty from it, put it in raw mode, copy keystrokes to the
// child, follow a resize, and restore the terminal mode at the end.
func TestPTYInteractive(t *testing.T) {
	t.Parallel()
	userMaster, userTerm, err := openPTY()
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	defer userMaster.Close()
	defer userTerm.Close()
	if err := withFD(userMaster, func(fd int) error {
		return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: 33, Col: 101})
	}); err != nil {
		t.Fatal(err)
	}
	before := termios(t, userTerm)

	w := newMarkWriter("ready")
	sigs := make(chan os.Signal, 1)
	go func() {
		waitMarker(t, w)
		if err := withFD(userMaster, func(fd int) error {
			return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: 50, Col: 132})
		}); err != nil {
			t.Error(err)
		}
		sigs <- syscall.SIGWINCH
		w.waitFor(t, "50 132") // the child's WINCH trap saw the new size
		userMaster.Write([]byte("hello\r"))
	}()
	res, p := runSh(t, `test -t 0 && echo stdin-tty; stty size; trap 'stty size' WINCH; echo ready; while ! read line; do :; done; echo "got:$line"`,
		Options{PTY: true, Stdin: userTerm, Stdout: w, Signals: sigs})
	got := p.text("proc.t.stdout")
	for _, want := range []string{"stdin-tty\r\n", "33 101\r\n", "50 132\r\n", "got:hello\r\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("output %q lacks %q", got, want)
		}
	}
	if res.ExitCode != 0 {
		t.Errorf("exit %d", res.ExitCode)
	}
	if after := termios(t, userTerm); *after != *before {
		t.Errorf("terminal mode not restored:\n%+v\n%+v", before, after)
	}
	if got := sigRecords(t, p); !cmp.Equal(got, []string{"WINCH/28/forwarded"}) {
		t.Errorf("signal records = %q", got)
	}
}

func termios(t *testing.T, f *os.File) *unix.Termios {
	t.Helper()
	var tio *unix.Termios
	if err := withFD(f, func(fd int) (err error) {
		tio, err = unix.IoctlGetTermios(fd, unix.TCGETS)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return tio
}

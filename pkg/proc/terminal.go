package proc

import (
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// withFD runs fn with f's descriptor without switching f to blocking mode
// (os.File.Fd would).
func withFD(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// terminalFile returns v as an *os.File if it is one and refers to a
// terminal.
func terminalFile(v any) (*os.File, bool) {
	f, ok := v.(*os.File)
	if !ok || f == nil {
		return nil, false
	}
	err := withFD(f, func(fd int) error {
		_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
		return err
	})
	return f, err == nil
}

// openPTY opens a pseudo-terminal pair with golang.org/x/sys/unix. The master
// is non-blocking so that the runtime poller serves it: read deadlines (idle
// flush) and Close interrupt a pending Read. The slave is opened without
// becoming ds's controlling terminal.
func openPTY() (master, slave *os.File, err error) {
	mfd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, &os.PathError{Op: "open", Path: "/dev/ptmx", Err: err}
	}
	n, err := unix.IoctlGetUint32(mfd, unix.TIOCGPTN)
	if err == nil {
		err = unix.IoctlSetPointerInt(mfd, unix.TIOCSPTLCK, 0) // unlockpt
	}
	if err != nil {
		unix.Close(mfd)
		return nil, nil, &os.PathError{Op: "ioctl", Path: "/dev/ptmx", Err: err}
	}
	name := "/dev/pts/" + strconv.FormatUint(uint64(n), 10)
	sfd, err := unix.Open(name, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(mfd)
		return nil, nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return os.NewFile(uintptr(mfd), "/dev/ptmx"), os.NewFile(uintptr(sfd), name), nil
}

// defaultWinsize is the PTY size when ds has no terminal to copy it from.
var defaultWinsize = unix.Winsize{Row: 24, Col: 80}

// copyWinsize sets the size of the pty (master) to that of the terminal
// term, or to defaultWinsize when term is nil.
func copyWinsize(master, term *os.File) error {
	ws := defaultWinsize
	if term != nil {
		err := withFD(term, func(fd int) error {
			w, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
			if err == nil {
				ws = *w
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	return withFD(master, func(fd int) error { return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &ws) })
}

// makeRaw puts the terminal term in raw mode, as cfmakeraw(3) and
// golang.org/x/term do, and returns a function restoring the previous mode.
func makeRaw(term *os.File) (restore func(), err error) {
	var old unix.Termios
	err = withFD(term, func(fd int) error {
		t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
		if err != nil {
			return err
		}
		old = *t
		raw := *t
		raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
		raw.Oflag &^= unix.OPOST
		raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
		raw.Cflag &^= unix.CSIZE | unix.PARENB
		raw.Cflag |= unix.CS8
		raw.Cc[unix.VMIN] = 1
		raw.Cc[unix.VTIME] = 0
		return unix.IoctlSetTermios(fd, unix.TCSETS, &raw)
	})
	if err != nil {
		return nil, err
	}
	return func() {
		_ = withFD(term, func(fd int) error { return unix.IoctlSetTermios(fd, unix.TCSETS, &old) })
	}, nil
}

// inTerminalForeground reports whether one of files is ds's controlling
// terminal and ds's process group is in its foreground. Then INT (^C), QUIT
// (^\) and WINCH typed or caused at that terminal are delivered by the
// kernel to the whole group, a child sharing it included. TIOCGPGRP fails on
// a terminal that is not the caller's controlling terminal.
func inTerminalForeground(files ...any) bool {
	for _, v := range files {
		f, ok := terminalFile(v)
		if !ok {
			continue
		}
		var pgrp int
		err := withFD(f, func(fd int) (err error) {
			pgrp, err = unix.IoctlGetInt(fd, unix.TIOCGPGRP)
			return err
		})
		if err == nil && pgrp == unix.Getpgrp() {
			return true
		}
	}
	return false
}

// inputCopier copies a terminal's input to the PTY master until stopped. It
// waits with poll(2) on the terminal and on a wake-up pipe, so that stop
// returns at once even though a terminal read cannot be interrupted.
type inputCopier struct {
	wakeR, wakeW int
	done         chan struct{}
}

func startInputCopy(in, master *os.File) (*inputCopier, error) {
	var infd int
	if err := withFD(in, func(fd int) error { infd = fd; return nil }); err != nil {
		return nil, err
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, err
	}
	c := &inputCopier{wakeR: p[0], wakeW: p[1], done: make(chan struct{})}
	go c.run(infd, master)
	return c, nil
}

func (c *inputCopier) run(infd int, master *os.File) {
	defer close(c.done)
	buf := make([]byte, 32<<10)
	fds := []unix.PollFd{{Fd: int32(infd), Events: unix.POLLIN}, {Fd: int32(c.wakeR), Events: unix.POLLIN}}
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Poll(fds, -1); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		if fds[0].Revents&(unix.POLLIN|unix.POLLHUP|unix.POLLERR) == 0 {
			continue
		}
		n, err := unix.Read(infd, buf)
		if n > 0 {
			if _, werr := master.Write(buf[:n]); werr != nil {
				return
			}
		}
		if n == 0 || (err != nil && !errors.Is(err, unix.EINTR) && !errors.Is(err, unix.EAGAIN)) {
			return // terminal hung up
		}
	}
}

// stop ends the copy and waits for it; input not yet read stays unread.
func (c *inputCopier) stop() {
	_, _ = unix.Write(c.wakeW, []byte{0})
	<-c.done
	unix.Close(c.wakeR)
	unix.Close(c.wakeW)
}

package proc

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// Producer is the part of frames.Producer that proc uses: a channel
// registry and a non-blocking submit. Run calls RegisterChannel from its own
// goroutine only, and SubmitBytes from up to three goroutines at once (one
// per output channel, plus Run's for lifecycle records), so SubmitBytes must
// be safe for concurrent use.
type Producer interface {
	// RegisterChannel declares a channel and returns its stream-local id.
	RegisterChannel(name string, content frames.ChannelContent) (frames.ChannelID, error)
	// SubmitBytes queues one frame. It takes ownership of payload and never
	// blocks; false means the frame was dropped (queue full).
	SubmitBytes(ch frames.ChannelID, payload []byte) bool
}

// Defaults applied by [Run] to zero Options fields.
const (
	// DefaultGrace is the time between TERM and KILL.
	DefaultGrace = 10 * time.Second
	// DefaultIdleFlush is how long a partial line waits for its newline
	// before it is submitted as a frame of its own: half the CLI's 100 ms
	// drain tick, so a prompt or a progress bar shows up within one tick.
	DefaultIdleFlush = 50 * time.Millisecond
	// DefaultCoalesce is how long complete lines read from the child may
	// wait for more output to join them in one frame (see
	// Options.Coalesce).
	DefaultCoalesce = 2 * time.Millisecond
	// DefaultMaxFrameSize is the largest text frame in bytes (256 KiB),
	// and so the largest read: a child writing fast gives frames of a whole
	// read, which go to the producer without a copy (see framer.readFrom).
	DefaultMaxFrameSize = 256 << 10
	// DefaultDrainTimeout bounds the wait for the output pipes after the
	// child has exited.
	DefaultDrainTimeout = 2 * time.Second
	// DefaultDrainIdle is how long, after the child has exited, outputs
	// still held open (by a background grandchild) may stay quiet before
	// capture stops: far above the gaps within a burst of output, far below
	// DefaultDrainTimeout.
	DefaultDrainIdle = 100 * time.Millisecond
)

// TTYSignalMode says what happens, in non-PTY mode, to INT, QUIT and WINCH
// received on Options.Signals. The child then shares ds's process group, so
// when ds is in the foreground of its controlling terminal these signals,
// typed (^C, ^\) or sent on a resize, reach the child from the kernel
// directly; forwarding them as well would deliver them twice.
type TTYSignalMode int

const (
	// TTYSignalsAuto forwards them unless Stdin, Stdout or Stderr is ds's
	// controlling terminal and ds's process group is its foreground group
	// (checked once, at start). A ds whose standard streams are all
	// redirected (CI, tests, kill -INT from a script) forwards them.
	TTYSignalsAuto TTYSignalMode = iota
	// TTYSignalsForward always forwards them (for example when they are
	// known to come from kill(1)).
	TTYSignalsForward
	// TTYSignalsTerminal never forwards them: they are assumed to have come
	// from the terminal. They are still recorded, with source "terminal".
	TTYSignalsTerminal
)

// Options configures [Run]. Zero values select the documented defaults.
type Options struct {
	// Argv is the command and its arguments; Argv[0] is looked up in PATH
	// (the PATH of Env when Env is set) unless it contains a '/'.
	Argv []string
	// Dir is the child's working directory; "" means ds's.
	Dir string
	// Env is the child's environment; nil means ds's (os.Environ).
	Env []string
	// Label names the channels, proc.<label>.*; it is cleaned with
	// [CleanLabel]. "" means [LabelFromCommand] of Argv[0].
	Label string

	// Stdin is the child's standard input. An *os.File is handed to the
	// child itself (so it sees the terminal, or a file it can seek); any
	// other reader is copied through a pipe; nil means /dev/null. In PTY
	// mode, a terminal Stdin is put in raw mode and copied to the pty
	// instead (see the package doc).
	Stdin io.Reader
	// Stdout and Stderr receive the child's output as soon as it is read
	// (pass-through); nil discards it (ds wrap -q). In PTY mode both
	// streams arrive merged on Stdout. Both are written from one goroutine,
	// one call at a time, in the order the output was read (see the package
	// doc), so one writer may serve both without locking.
	Stdout, Stderr io.Writer

	// Producer receives the channel registrations and frames. Required.
	Producer Producer

	// PTY runs the child on a pseudo-terminal (ds wrap --pty).
	PTY bool
	// Grace is the time a child has to exit after TERM, HUP or QUIT
	// (forwarded, or TERM sent on cancellation) before it is sent KILL, and the time the whole job
	// has after the first stop signal (INT, TERM, HUP, QUIT, cancellation)
	// before what remains of its tree is sent KILL (see the package doc,
	// Stopping the job). 0 means DefaultGrace.
	Grace time.Duration
	// IdleFlush is how long a partial line (bytes after the last newline)
	// may wait for its newline before it is submitted as a frame of its
	// own. 0 means DefaultIdleFlush; negative disables the idle flush (a
	// partial line then waits for a newline, MaxFrameSize or EOF).
	IdleFlush time.Duration
	// Coalesce is how long complete lines may wait in ds for more output,
	// to be submitted as one frame of up to half of MaxFrameSize instead of
	// a frame per read. A child writing log lines a few KiB at a time then
	// gives frames of about 100 KiB instead of 4 KiB: a zstd capture about
	// 10% smaller and fewer frames to write and read. It delays capture,
	// never the pass-through, and a frame of another output of the child
	// cuts it short (order is kept). 0 means DefaultCoalesce; negative
	// submits at every read.
	Coalesce time.Duration
	// MaxFrameSize is the largest text frame, in bytes. It also bounds the
	// bytes held per channel. 0 means DefaultMaxFrameSize.
	MaxFrameSize int
	// Alloc, if not nil, supplies the buffer of each output frame: it
	// returns a slice with capacity for at least n bytes (its length is
	// ignored). A caller that knows when the producer is done with a
	// payload (ds wrap, once the frame is written) can recycle buffers
	// through it instead of having proc allocate one per frame, which is
	// most of the capture path's cost. nil means a fresh allocation.
	Alloc func(n int) []byte
	// StdoutGone, if not nil, is asked after each read of the child's
	// stdout whether where that output goes is gone although the
	// pass-through writer did not fail (ds wrap -o -: the capture is the
	// stdout, and its reader went away). A true answer closes the child's
	// stdout as an EPIPE of the pass-through does, so the child gets
	// SIGPIPE at its next write, as it would writing into that pipe itself.
	StdoutGone func() bool
	// DrainTimeout bounds the wait for the output pipes to close after the
	// child exited (a background grandchild may hold them), data or not.
	// 0 means DefaultDrainTimeout.
	DrainTimeout time.Duration
	// DrainIdle stops that wait earlier: once the child has exited,
	// capture stops as soon as its outputs, still open, have carried
	// nothing for DrainIdle; output that keeps flowing is read until EOF
	// or DrainTimeout. 0 means DefaultDrainIdle; negative disables it (wait
	// for EOF or DrainTimeout).
	DrainIdle time.Duration

	// Signals carries the signals ds received (signal.Notify in the CLI).
	// INT, TERM, HUP, QUIT, USR1, USR2 and WINCH are forwarded to the
	// child; other signals are ignored. nil means none.
	Signals <-chan os.Signal
	// TTYSignals decides about INT, QUIT and WINCH in non-PTY mode.
	TTYSignals TTYSignalMode
}

func (o *Options) setDefaults() {
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	if o.IdleFlush == 0 {
		o.IdleFlush = DefaultIdleFlush
	}
	if o.Coalesce == 0 {
		o.Coalesce = DefaultCoalesce
	}
	if o.MaxFrameSize <= 0 {
		o.MaxFrameSize = DefaultMaxFrameSize
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = DefaultDrainTimeout
	}
	if o.DrainIdle == 0 {
		o.DrainIdle = DefaultDrainIdle
	}
}

// Result describes a finished (or never started) child.
type Result struct {
	// Label is the cleaned label used in the channel names.
	Label string
	// PID is the child's process id; 0 if it never started.
	PID int
	// ExitCode is the status ds wrap exits with (ARCHITECTURE.md §5): the
	// child's exit code; 128+N when signal N killed it (KILL → 137,
	// SEGV → 139); ExitNotFound (127) or ExitCannotExecute (126) when it
	// could not be started; ExitFailure (1) when ds failed first.
	ExitCode int
	// Signal is the signal that killed the child, 0 if it exited.
	Signal syscall.Signal
	// CoreDumped reports that the killing signal dumped core.
	CoreDumped bool
	// Wall is the time from start to exit; User and Sys are the CPU times
	// of the child and of the descendants it waited for (getrusage).
	Wall, User, Sys time.Duration
	// MaxRSSBytes is the largest resident set size of the child or of a
	// descendant it waited for, in bytes.
	MaxRSSBytes int64
	// DrainTimedOut reports that capture stopped while an output was still
	// open after the child exited (a background grandchild holding it),
	// for the reason in DrainReason; a drain_timeout record was submitted.
	// What came after the stop is not captured.
	DrainTimedOut bool
	// DrainReason is why capture stopped early: DrainReasonIdle (the open
	// outputs carried nothing for Options.DrainIdle) or DrainReasonTimeout
	// (they were still open at Options.DrainTimeout). "" when every output
	// reached EOF.
	DrainReason string
	// DrainHolders lists, when DrainTimedOut, the processes found holding
	// the outputs open (best effort; see [PipeHolder]), in pid order.
	DrainHolders []PipeHolder
	// Stdout, Stderr and Lifecycle count the frames of each channel
	// (Stderr stays zero in PTY mode, where it is not registered).
	Stdout, Stderr, Lifecycle ChannelStats
}

// Run starts the command of opts, supervises it until it exits and its
// output is drained, and returns its result. It blocks; the caller drains
// the producer meanwhile (ds wrap ticks its endpoint every 100 ms).
//
// Run registers proc.<label>.stdout and .stderr (frames.TextStream; stderr
// not in PTY mode) and proc.<label>.lifecycle
// (frames.JSONRecord(LifecycleSchema)), then submits a started record, the
// output frames, signal records as they happen, and finally an exited
// record, which is always the last submission.
//
// Cancelling ctx asks the child to stop: TERM, then KILL after Grace; Run
// still returns only once the child has exited. Run never prints, never
// exits the process and never closes Stdin, Stdout or Stderr. It does not
// wait for a copy from a non-*os.File Stdin to end: that goroutine ends when
// its Read returns.
//
// A file that execve(2) refuses with ENOEXEC but that is text (a script
// without "#!") is run as "/bin/sh FILE ARGS…", execvp(3)'s rule, as sh(1)
// and env(1) do; the started record then shows argv with "/bin/sh" first
// and path "/bin/sh". A binary one still fails (ExitCannotExecute).
//
// While Run is in progress the process is a child subreaper that reaps the
// orphans of the child, an escalation KILLs the child's whole tree, and a
// child that a stop signal made exit has the rest of its tree sent that
// signal and KILL at the deadline (see the package doc, Process tree and
// Stopping the job); Run may be called concurrently with code
// that starts and waits for its own children through os.StartProcess or
// os/exec (which hold a pidfd), not with code that waits for children it
// has no pidfd for.
//
// The error is nil when the child ran, whatever its status. When the child
// could not be started the error is a *StartError and a spawn_failed record
// was submitted; other errors (ErrNoCommand, ErrNoProducer, a
// *LabelError, a registration error, a pipe or pty failure) come with ExitCode
// ExitFailure. Run may be called concurrently for different children.
func Run(ctx context.Context, opts Options) (Result, error) {
	o := opts
	o.setDefaults()
	res := Result{ExitCode: ExitFailure}
	if len(o.Argv) == 0 {
		return res, ErrNoCommand
	}
	if o.Producer == nil {
		return res, ErrNoProducer
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	var err error
	if o.Label == "" {
		res.Label, err = LabelFromCommand(o.Argv[0])
	} else {
		res.Label, err = CleanLabel(o.Label)
	}
	if err != nil {
		return res, err
	}
	if argv, ok := shellFallback(o.Argv, pathFromEnv(o.Env), o.Dir); ok {
		o.Argv = argv // a script without "#!": execvp(3)'s rule
	}
	s := &supervisor{o: &o, res: &res}
	if err := s.register(); err != nil {
		return res, err
	}
	// Subreaper from before the start: a child that daemonises at once
	// must be re-parented here already. The reaper must know the child
	// before it can see it exit (reap.go).
	defer acquireReaper()()
	spawnMu.RLock()
	err = s.start()
	if s.proc != nil {
		addOwn(s.proc.Pid)
	}
	spawnMu.RUnlock()
	if err != nil {
		return res, err
	}
	s.supervise(ctx)
	return res, nil
}

// supervisor holds the state of one Run.
type supervisor struct {
	o   *Options
	res *Result

	stdoutID, stderrID, lifecycleID frames.ChannelID

	cwd       string
	proc      *os.Process
	startTime time.Time
	caps      []*capture
	master    *os.File // PTY mode
	winTerm   *os.File // terminal whose size the pty copies; nil if none
	restore   func()   // restores a raw terminal; nil if none
	input     *inputCopier
	stdinW    *os.File // write end of the stdin pipe, for a non-file Stdin
	closeOnce sync.Once
	ttySkip   bool // INT, QUIT, WINCH arrive from the terminal: do not forward
	killed    bool // KILL sent
}

func (s *supervisor) register() error {
	p := s.o.Producer
	prefix := "proc." + s.res.Label + "."
	var err error
	if s.stdoutID, err = p.RegisterChannel(prefix+"stdout", frames.TextStream()); err != nil {
		return fmt.Errorf("proc: register channel: %w", err)
	}
	if !s.o.PTY {
		if s.stderrID, err = p.RegisterChannel(prefix+"stderr", frames.TextStream()); err != nil {
			return fmt.Errorf("proc: register channel: %w", err)
		}
	}
	if s.lifecycleID, err = p.RegisterChannel(prefix+"lifecycle", frames.JSONRecord(LifecycleSchema)); err != nil {
		return fmt.Errorf("proc: register channel: %w", err)
	}
	s.res.Stdout.ID = s.stdoutID
	s.res.Stderr.ID = s.stderrID
	s.res.Lifecycle.ID = s.lifecycleID
	return nil
}

// record submits a lifecycle record. When the producer has a reserved lane
// ([ReservedProducer]) the record takes it, so a queue filled by output
// never costs a lifecycle record (the exited record least of all).
func (s *supervisor) record(v any) {
	p := s.o.Producer
	if r, ok := p.(ReservedProducer); ok {
		p = reservedLane{r}
	}
	s.res.Lifecycle.submit(p, marshalRecord(v))
}

// ReservedProducer is a [Producer] with a lane that a full queue never
// refuses (frames.Producer.SubmitReserved). Run submits lifecycle records
// through it when the Producer has it.
type ReservedProducer interface {
	Producer
	// SubmitReserved queues one frame whatever the queue holds; false only
	// when the stream has ended or ch is unknown.
	SubmitReserved(ch frames.ChannelID, payload []byte) bool
}

// reservedLane makes SubmitBytes use the reserved lane.
type reservedLane struct{ ReservedProducer }

func (r reservedLane) SubmitBytes(ch frames.ChannelID, payload []byte) bool {
	return r.SubmitReserved(ch, payload)
}

// start creates the child's files, starts it and the capture goroutines,
// and records started or spawn_failed.
func (s *supervisor) start() error {
	o := s.o
	s.cwd = o.Dir
	if s.cwd == "" {
		s.cwd, _ = os.Getwd()
	} else if abs, aerr := filepath.Abs(s.cwd); aerr == nil {
		s.cwd = abs
	}
	// closeAfter holds the child's ends of pipes and the pty slave: ds's
	// copies must be closed once the child has them, or EOF never comes.
	var closeAfter []*os.File
	defer func() {
		for _, f := range closeAfter {
			f.Close()
		}
	}()
	fail := func(err error) error {
		s.failed(err, ExitFailure)
		s.closeParentEnds()
		return err
	}

	if o.Dir != "" {
		if fi, serr := os.Stat(o.Dir); serr != nil || !fi.IsDir() {
			if serr == nil {
				serr = &os.PathError{Op: "chdir", Path: o.Dir, Err: syscall.ENOTDIR}
			} else if pe, ok := serr.(*os.PathError); ok {
				pe.Op = "chdir"
			}
			s.failed(serr, ExitCannotExecute)
			return &StartError{Argv: o.Argv, ExitCode: ExitCannotExecute, Err: serr}
		}
	}
	path, lerr := lookPath(o.Argv[0], pathFromEnv(o.Env))
	if lerr != nil {
		code, cerr := classifyStartError(lerr, o.Argv[0], o.Dir)
		s.failed(cerr, code)
		return &StartError{Argv: o.Argv, ExitCode: code, Err: cerr}
	}

	// Standard input.
	var stdin *os.File
	inTerm, stdinIsTerm := terminalFile(o.Stdin)
	switch in := o.Stdin.(type) {
	case nil:
	case *os.File:
		if in != nil && !(o.PTY && stdinIsTerm) {
			stdin = in
		}
	default:
		r, w, perr := os.Pipe()
		if perr != nil {
			return fail(fmt.Errorf("proc: stdin pipe: %w", perr))
		}
		closeAfter = append(closeAfter, r)
		stdin, s.stdinW = r, w
	}

	attr := &os.ProcAttr{Dir: o.Dir, Env: o.Env, Sys: &syscall.SysProcAttr{}}
	var stdoutW, stderrW *os.File
	if o.PTY {
		master, slave, perr := openPTY()
		if perr != nil {
			return fail(fmt.Errorf("proc: open pty: %w", perr))
		}
		s.master = master
		closeAfter = append(closeAfter, slave)
		stdoutW, stderrW = slave, slave
		if stdinIsTerm {
			stdin = slave
		}
		// The size comes from the real terminal when there is one.
		if outTerm, ok := terminalFile(o.Stdout); stdinIsTerm {
			s.winTerm = inTerm
		} else if ok {
			s.winTerm = outTerm
		}
		_ = copyWinsize(master, s.winTerm)
		// A new session with the pty as controlling terminal (child fd 1).
		attr.Sys.Setsid = true
		attr.Sys.Setctty = true
		attr.Sys.Ctty = 1
	} else {
		or, ow, perr := os.Pipe()
		if perr != nil {
			return fail(fmt.Errorf("proc: stdout pipe: %w", perr))
		}
		er, ew, perr := os.Pipe()
		if perr != nil {
			or.Close()
			ow.Close()
			return fail(fmt.Errorf("proc: stderr pipe: %w", perr))
		}
		growPipe(or)
		growPipe(er)
		closeAfter = append(closeAfter, ow, ew)
		stdoutW, stderrW = ow, ew
		// ds's read ends belong to the captures, which finishCapture
		// closes. One reader goroutine serves both, stdout first, so the
		// pass-through writers are never called concurrently.
		s.caps = []*capture{
			newCapture("stdout", or, o.Stdout, o.Producer, s.stdoutID, o),
			newCapture("stderr", er, o.Stderr, o.Producer, s.stderrID, o),
		}
		switch o.TTYSignals {
		case TTYSignalsAuto:
			s.ttySkip = inTerminalForeground(o.Stdin, o.Stdout, o.Stderr)
		case TTYSignalsTerminal:
			s.ttySkip = true
		}
	}
	if stdin == nil {
		devnull, derr := os.Open(os.DevNull)
		if derr != nil {
			return fail(fmt.Errorf("proc: %w", derr))
		}
		closeAfter = append(closeAfter, devnull)
		stdin = devnull
	}
	attr.Files = []*os.File{stdin, stdoutW, stderrW}

	// Raw mode before the child starts, so that it never sees the cooked
	// terminal mid-way.
	if o.PTY && stdinIsTerm {
		restore, rerr := makeRaw(inTerm)
		if rerr != nil {
			return fail(fmt.Errorf("proc: terminal raw mode: %w", rerr))
		}
		s.restore = restore
	}

	// The pipes' reader starts polling before the child runs, so that it
	// is waiting for the first write, not catching up with several: only a
	// reader that keeps up can order writes across the pipes (see reader).
	var rd *reader
	if !o.PTY {
		rd = startReader(s.caps, o)
	}
	s.startTime = time.Now()
	p, serr := os.StartProcess(path, o.Argv, attr)
	if serr != nil {
		code, cerr := classifyStartError(serr, path, o.Dir)
		s.failed(cerr, code)
		if rd != nil {
			rd.openGate()
			// The reader sees EOF once the write ends are closed (deferred
			// above); wait for it before the read ends are closed.
			for _, f := range closeAfter {
				f.Close()
			}
			closeAfter = nil
			<-rd.done
			rd.close()
		}
		s.closeParentEnds()
		return &StartError{Argv: o.Argv, ExitCode: code, Err: cerr}
	}
	s.proc = p
	s.res.PID = p.Pid
	s.record(startedRecord{
		Event: EventStarted, PID: p.Pid, Argv: o.Argv, Path: path, Cwd: s.cwd,
		Label: s.res.Label, PTY: o.PTY, MergedOutput: o.PTY,
	})
	if rd != nil {
		rd.openGate()
	}

	if o.PTY {
		s.caps = []*capture{newCapture("stdout", s.master, o.Stdout, o.Producer, s.stdoutID, o)}
		if stdinIsTerm {
			if c, ierr := startInputCopy(inTerm, s.master); ierr == nil {
				s.input = c
			}
		}
	}
	if o.PTY {
		startReader(s.caps, o).openGate()
	}
	if s.stdinW != nil {
		go func() {
			_, _ = io.Copy(s.stdinW, o.Stdin)
			s.closeStdin()
		}()
	}
	return nil
}

// growPipe asks for a bigger pipe buffer; best effort.
func growPipe(f *os.File) {
	_ = withFD(f, func(fd int) error {
		_, err := unix.FcntlInt(uintptr(fd), unix.F_SETPIPE_SZ, pipeBufferSize)
		return err
	})
}

// failed records spawn_failed.
func (s *supervisor) failed(err error, code int) {
	s.res.ExitCode = code
	s.record(spawnFailedRecord{Event: EventSpawnFailed, Error: err.Error(), Argv: s.o.Argv, Cwd: s.cwd, ExitCode: code})
}

// closeParentEnds releases what start created for a child that never ran.
func (s *supervisor) closeParentEnds() {
	for _, c := range s.caps {
		c.f.Close()
	}
	s.caps = nil
	if s.master != nil {
		s.master.Close()
	}
	if s.restore != nil {
		s.restore()
	}
	s.closeStdin()
}

func (s *supervisor) closeStdin() {
	if s.stdinW != nil {
		s.closeOnce.Do(func() { s.stdinW.Close() })
	}
}

type waitResult struct {
	state *os.ProcessState
	err   error
}

// exitEvent says that the child has exited: at, and whether the wait
// already reaped it (w then holds the result).
type exitEvent struct {
	at     time.Time
	reaped bool
	w      waitResult
}

// stopState is what ds was asked when a stop signal (INT, TERM, HUP, QUIT,
// or the context's end) arrived: the signal, to send to what remains of
// the tree once the child has exited; its source (forwarded, terminal,
// cancel); and the deadline, Grace after the first one, by which the whole
// tree is to be gone.
type stopState struct {
	sig      syscall.Signal
	source   string
	deadline time.Time // zero: no stop signal
}

// supervise forwards signals until the child exits, stops what remains of
// its tree when a stop signal came first (stopRest), drains its output and
// records exited.
func (s *supervisor) supervise(ctx context.Context) {
	exitc := make(chan exitEvent, 1)
	go func() {
		// The child is seen to exit without being reaped, so that its pid,
		// and the process group and session it may lead, cannot be reused
		// while what remains of its tree is looked for.
		if waitExited(s.proc.Pid) {
			exitc <- exitEvent{at: time.Now()}
			return
		}
		st, err := s.proc.Wait()
		exitc <- exitEvent{at: time.Now(), reaped: true, w: waitResult{st, err}}
	}()

	var grace *time.Timer
	var graceC <-chan time.Time
	startGrace := func() {
		if grace == nil {
			grace = time.NewTimer(s.o.Grace)
			graceC = grace.C
		}
	}
	var stop stopState
	stopBy := func(sig syscall.Signal, source string) {
		if stop.deadline.IsZero() {
			stop.deadline = time.Now().Add(s.o.Grace)
		}
		stop.sig, stop.source = sig, source
	}
	done := ctx.Done()
	sigc := s.o.Signals
	ints := 0
	var ev exitEvent
loop:
	for {
		select {
		case ev = <-exitc:
			break loop
		case sig, ok := <-sigc:
			if !ok {
				sigc = nil // closed: no more signals
				continue
			}
			ss, ok := sig.(syscall.Signal)
			if !ok {
				continue
			}
			switch ss {
			case syscall.SIGINT:
				ints++
				stopBy(ss, s.forward(ss))
				if ints >= 2 {
					s.kill()
				}
			case syscall.SIGTERM:
				stopBy(ss, s.forward(ss))
				startGrace()
			case syscall.SIGHUP, syscall.SIGQUIT:
				// Stops as TERM does: the terminal hung up, or a quit was
				// asked; only INT, the interactive stop that a CMD may
				// handle and carry on after, waits for a second one.
				stopBy(ss, s.forward(ss))
				startGrace()
			case syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH:
				s.forward(ss)
			}
		case <-done:
			done = nil
			s.signal(syscall.SIGTERM, SourceCancel)
			stopBy(syscall.SIGTERM, SourceCancel)
			startGrace()
		case <-graceC:
			graceC = nil
			s.kill()
		}
	}
	if grace != nil {
		grace.Stop()
	}
	if !ev.reaped && !s.killed && !stop.deadline.IsZero() && ev.at.Before(stop.deadline) {
		s.stopRest(stop, sigc, ints)
	}
	w := ev.w
	if !ev.reaped {
		st, err := s.proc.Wait()
		w = waitResult{st, err}
	}
	doneOwn(s.proc.Pid)
	s.res.Wall = ev.at.Sub(s.startTime)
	s.finishCapture()
	s.exitStatus(w)
	s.record(exitedRecord{
		Event:    EventExited,
		Status:   s.status(),
		ExitCode: s.res.ExitCode,
		WallNS:   s.res.Wall.Nanoseconds(), UserNS: s.res.User.Nanoseconds(), SysNS: s.res.Sys.Nanoseconds(),
		MaxRSSBytes: s.res.MaxRSSBytes,
	})
}

// forward handles a signal ds received and returns the source it was
// recorded with: SourceForwarded, or SourceTerminal when it was left to
// the terminal.
func (s *supervisor) forward(sig syscall.Signal) string {
	if s.o.PTY {
		if sig == syscall.SIGWINCH && s.winTerm != nil {
			// Resizing makes the kernel signal the pty's foreground group.
			_ = copyWinsize(s.master, s.winTerm)
			s.record(signalRecord{Event: EventSignal, Signal: SignalName(sig), Number: int(sig), Source: SourceForwarded})
			return SourceForwarded
		}
	} else if s.ttySkip && (sig == syscall.SIGINT || sig == syscall.SIGQUIT || sig == syscall.SIGWINCH) {
		s.record(signalRecord{Event: EventSignal, Signal: SignalName(sig), Number: int(sig), Source: SourceTerminal})
		return SourceTerminal
	}
	s.signal(sig, SourceForwarded)
	return SourceForwarded
}

// kill sends KILL once, to the child and to the rest of its process tree
// (killTree), and records it with the descendants' pids.
func (s *supervisor) kill() {
	if s.killed {
		return
	}
	s.killed = true
	var err error
	pids := killTree(s.proc.Pid, func() { err = s.send(syscall.SIGKILL) })
	if err != nil && len(pids) == 0 {
		return
	}
	s.record(signalRecord{Event: EventSignal, Signal: SignalName(syscall.SIGKILL), Number: int(syscall.SIGKILL), Source: SourceEscalation,
		Descendants: pids, Count: len(pids)})
}

// signal sends sig to the child (its process group in PTY mode; see send)
// and records it. A child that is already gone is not recorded.
func (s *supervisor) signal(sig syscall.Signal, source string) {
	if err := s.send(sig); err != nil {
		return
	}
	s.record(signalRecord{Event: EventSignal, Signal: SignalName(sig), Number: int(sig), Source: source})
}

// finishCapture tells the reader that the child has exited and waits for
// it to stop: at EOF of every output, or early, once the outputs have been
// quiet for DrainIdle or at DrainTimeout (the reader keeps both bounds).
// Then it releases the outputs, the pty, the terminal and stdin, and, if
// capture stopped early, looks for the processes holding the outputs and
// records drain_timeout.
func (s *supervisor) finishCapture() {
	var r *reader
	if len(s.caps) > 0 {
		r = s.caps[0].r
	}
	var rec *drainRecord
	if r != nil {
		r.childExited()
		<-r.done
		r.close()
		if open := r.open(); len(open) > 0 {
			rec = &drainRecord{
				drainTimeoutRecord: drainTimeoutRecord{Event: EventDrainTimeout, TimeoutNS: s.o.DrainTimeout.Nanoseconds()},
				Reason:             r.reason,
				IdleNS:             max(s.o.DrainIdle, 0).Nanoseconds(),
				WaitedNS:           r.waited.Nanoseconds(),
				Holders:            []holderRecord{},
			}
			var targets []holderTarget
			for _, c := range open {
				rec.Open = append(rec.Open, c.name)
				if link := outputLink(c.f, s.o.PTY); link != "" {
					targets = append(targets, holderTarget{link: link, name: c.name})
				}
			}
			s.res.DrainHolders = findHolders("/proc", targets, os.Getpid(), holderScanBudget)
			for _, h := range s.res.DrainHolders {
				rec.Holders = append(rec.Holders, holderRecord{PID: h.PID, Argv: h.Argv, Open: h.Outputs})
			}
		}
	}
	for _, c := range s.caps {
		c.f.Close()
	}
	if s.input != nil {
		s.input.stop()
	}
	if s.restore != nil {
		s.restore()
	}
	s.closeStdin()
	for _, c := range s.caps {
		switch c.name {
		case "stdout":
			s.res.Stdout = c.stats
		case "stderr":
			s.res.Stderr = c.stats
		}
	}
	if rec != nil {
		s.res.DrainTimedOut = true
		s.res.DrainReason = rec.Reason
		s.record(rec)
	}
}

// exitStatus fills the status fields of the result from the wait.
func (s *supervisor) exitStatus(w waitResult) {
	r := s.res
	if w.err != nil || w.state == nil {
		r.ExitCode = ExitFailure
		return
	}
	ws, _ := w.state.Sys().(syscall.WaitStatus)
	switch {
	case ws.Signaled():
		r.Signal = ws.Signal()
		r.CoreDumped = ws.CoreDump()
		r.ExitCode = 128 + int(r.Signal)
	default:
		r.ExitCode = w.state.ExitCode()
	}
	if ru, ok := w.state.SysUsage().(*syscall.Rusage); ok && ru != nil {
		r.User = time.Duration(ru.Utime.Nano())
		r.Sys = time.Duration(ru.Stime.Nano())
		r.MaxRSSBytes = int64(ru.Maxrss) * 1024 // KiB on Linux
	}
}

func (s *supervisor) status() exitStatus {
	if s.res.Signal != 0 {
		return exitStatus{Kind: "signal", Value: int(s.res.Signal), Name: SignalName(s.res.Signal), CoreDumped: s.res.CoreDumped}
	}
	return exitStatus{Kind: "code", Value: s.res.ExitCode}
}

// Package proc supervises the child process of ds wrap. It is the producer
// side of the pipeline for process output (ARCHITECTURE.md §1): it starts the
// command, passes stdin through, copies the child's stdout and stderr to the
// caller's writers as soon as they are read, and submits the same bytes, and
// the child's lifecycle, as frames to a [Producer] (in ds, a frames.Endpoint's
// producer, which the CLI drains every tick into a capture file). It imports
// frames and the standard library plus golang.org/x/sys/unix; it does not use
// os/exec, flags, os.Exit or the CLI, and prints nothing of its own.
//
// # Channels
//
// [Run] registers, for a label L ([CleanLabel] of Options.Label, or
// [LabelFromCommand] of argv[0]; ARCHITECTURE.md case 5.6):
//
//	proc.L.stdout     TextStream                 the child's stdout bytes, verbatim
//	proc.L.stderr     TextStream                 the child's stderr bytes, verbatim (not in PTY mode)
//	proc.L.lifecycle  JsonRecord "proc.lifecycle" one JSON object per payload, below
//
// # Line framing
//
// Output is read in chunks of up to 256 KiB from pipes enlarged to 1 MiB
// (in the order below, under Order between stdout and stderr).
// Each chunk goes to the pass-through writer first, then is cut into frames
// (ARCHITECTURE.md §4): a frame ends at the last newline within MaxFrameSize bytes,
// so a chunk holding many lines becomes one frame (or a few), not one frame
// per line; views rejoin consecutive frames of a text channel. Bytes after
// the last newline wait as a partial line; they go out with the next newline,
// before a chunk of the other channel (see below),
// or as a frame of their own once the partial line is IdleFlush old (50 ms by
// default; a prompt, or a progress bar redrawn with CR, shows up within one
// drain tick even while it keeps growing), at EOF, or when they reach
// MaxFrameSize (256 KiB by default): a line of any length is
// split into MaxFrameSize frames and no more than MaxFrameSize bytes are held
// per channel. Bytes are never altered: CR, CRLF, NUL and invalid UTF-8 pass
// as they are. A child writing fast gives frames of a whole read (up to
// MaxFrameSize), handed to the producer in the buffer they were read into,
// without a copy. Submission blocks only if the Producer does (ds wrap
// --backpressure, which then slows the child as a pipe would): a frame the
// producer refuses is counted as dropped in [Result]
// (Stdout/Stderr/Lifecycle.DroppedFrames) and nothing else happens, so
// capture never slows the child; only the pass-through writer (the user's
// terminal) can. If a pass-through writer
// fails with EPIPE (ds wrap … | head, and head has exited), that stream's
// pipe is closed so that the child gets SIGPIPE as it would without ds; for
// that the CLI must catch SIGPIPE with signal.Notify, so that a write to a
// broken stdout does not kill ds itself, and not ignore it (signal.Ignore
// would be inherited by the child).
//
// # Order between stdout and stderr
//
// Order within a channel is exact. Between stdout and stderr it is the
// order in which ds hands them on, and pass-through and capture both keep
// it: one goroutine per child waits on both pipes at once (poll(2)) and
// reads whichever is readable. Each chunk goes to its pass-through writer
// at once, so Stdout and Stderr are written in that order from that one
// goroutine (one writer may serve both: ds wrap > f 2>&1). Before a chunk
// of one channel is framed, the pending partial line of the other channel
// is submitted as a frame of its own, so capture order is that order too:
// a progress bar drawn with CR on stdout ("\rprogress 3/3") is captured
// before a "FAIL" line that stderr printed after it, as the terminal shows
// them. At most one channel has a partial line at any time.
//
// Two pipes do not tell the order of writes that are both waiting when ds
// reads. An inotify watch on each pipe does: every write(2) queues an
// IN_MODIFY event before it returns, in one queue for both pipes. When both
// pipes hold data, the one whose last event came first is read first
// (reader.writeOrder); when both hold little (under 64 KiB) and the events
// say the child switched streams several times, the data is split into
// lines and handed on in the order of the events, one line per write, as
// a shell's echo builtins write (reader.interleave). So the child's order
// is kept while ds reads each write before the next two arrive (for writes
// 1 ms or more apart on an idle machine), and for one-line writes even
// when it has fallen behind. It can be lost for a long burst of such
// writes, for several lines in one write next to writes to the other
// stream, or where inotify cannot watch pipes (ds then reads stdout
// first); only PTY mode, where both streams are one, keeps the child's
// order in every case.
//
// # Lifecycle records
//
// The field names are a stable contract (ARCHITECTURE.md §4); readers must ignore
// fields they do not know. Times are in nanoseconds, sizes in bytes.
//
//	{"event":"started","pid":4242,"argv":["make","test"],"path":"/usr/bin/make",
//	 "cwd":"/src","label":"make","pty":false,"merged_output":false}
//	{"event":"spawn_failed","error":"executable file not found in $PATH",
//	 "argv":["mkae"],"cwd":"/src","exit_code":127}
//	{"event":"signal","signal":"TERM","number":15,"source":"forwarded"}
//	{"event":"signal","signal":"TERM","number":15,"source":"tree","descendants":[4250,4251],"count":2}
//	{"event":"signal","signal":"KILL","number":9,"source":"escalation","descendants":[4250],"count":1}
//	{"event":"drain_timeout","timeout_ns":2000000000,"open":["stdout","stderr"],
//	 "reason":"idle","idle_ns":100000000,"waited_ns":100412000,
//	 "holders":[{"pid":4250,"argv":["sleep","60"],"open":["stdout","stderr"]}]}
//	{"event":"exited","status":{"kind":"code","value":2},"exit_code":2,
//	 "wall_ns":1234567,"user_ns":1000000,"sys_ns":200000,"max_rss_bytes":5242880}
//	{"event":"exited","status":{"kind":"signal","value":9,"name":"KILL"},"exit_code":137,…}
//
// started is the first submission and exited the last; exited comes after
// every output frame. path is the resolved executable; merged_output is true
// when stderr is merged into stdout (PTY mode). The status "kind" is "code"
// (value: the exit code) or "signal" (value: the signal number; "name" and,
// when true, "core_dumped" added). exit_code is what ds wrap exits with.
// user_ns, sys_ns and max_rss_bytes come from wait4's rusage and include the
// descendants the child waited for. A signal record's "source" is one of
// "forwarded" (ds sent the signal it received to the child), "terminal" (ds
// received it but did not send it: the terminal delivered it to the child's
// process group already), "escalation" (ds sent KILL after Grace or on a
// second INT, to the child and the rest of its tree, or at the deadline to
// what remained of the tree after the child exited), "cancel" (ds sent TERM
// because Run's context ended) and "tree" (the child exited after a stop
// signal and ds sent that signal on to what remained of its tree; see
// Process tree). descendants lists the pids of the tree's other processes
// that were sent the signal, parents before their children, and count how
// many they are; both are left out when there are none.
// drain_timeout is recorded when capture stopped while outputs were still
// open after the child exited (see Draining below): open lists them;
// reason is "idle" (they carried nothing for idle_ns, Options.DrainIdle)
// or "timeout" (still open at timeout_ns, Options.DrainTimeout); waited_ns
// is the time from the child's exit to the stop; holders lists the
// processes found holding them (pid, argv, and which outputs), possibly
// none. What the outputs carried until the stop is captured, the rest is
// not. (The event keeps its name from when only the timeout existed.)
//
// # Draining
//
// A background grandchild (cmd &, a daemon that did not close its
// descriptors) inherits the child's stdout and stderr and keeps them open
// after the child exits, so EOF may never come. Once the child has exited,
// ds goes on reading while data flows, and stops as soon as the open
// outputs have been quiet for Options.DrainIdle (100 ms by default), or at
// Options.DrainTimeout (2 s) after the exit if data kept coming; what is
// already in the pipes is still read (a bounded number of reads). So such
// a holder costs about DrainIdle, not DrainTimeout, and output written
// after a longer pause is lost. When it stops early, ds looks through
// /proc/*/fd for processes other than itself holding the pipes (by the
// pipe's inode; in PTY mode, by the pty slave's path) and names them, with
// their argv from /proc/PID/cmdline, in the drain_timeout record and
// Result.DrainHolders. The scan is best effort: it is done only then, is
// bounded in time, and misses processes ds may not inspect.
//
// # Exit status
//
// Result.ExitCode follows the shell (ARCHITECTURE.md §5): the child's exit code;
// 128+N when signal N killed it (KILL → 137, SEGV → 139); 127 when the
// command is not found; 126 when it is found but cannot be executed
// (permission denied, not executable, a directory, a missing "#!"
// interpreter) or Options.Dir is unusable; 1 when ds failed first. For 126
// and 127 Run returns a *[StartError] and records spawn_failed.
//
// # Signals
//
// Signals ds receives arrive on Options.Signals. INT, TERM, HUP, QUIT, USR1,
// USR2 and WINCH are forwarded; others are ignored. TERM, HUP and QUIT
// start the Grace timer: a child still running when it fires is sent KILL.
// INT does not (a child may handle ^C and carry on); a second INT
// (^C ^C) sends KILL at once. Cancelling Run's context sends TERM and starts
// the Grace timer. Every signal ds sends, and every one it received but left
// to the terminal, is recorded.
//
// Without a PTY the child stays in ds's process group and session, exactly
// as if the shell had run it: it can read the terminal, and ^C, ^\ and
// window resizes reach it from the kernel directly. Forwarding INT, QUIT or
// WINCH too would deliver them twice (a second ^C means "force quit" to many
// programs), so by default ([TTYSignalsAuto]) these three are not forwarded
// when one of Stdin, Stdout or Stderr is ds's controlling terminal and ds is
// in its foreground process group, only recorded with source "terminal";
// they still count towards the second INT. Without siginfo (os/signal gives
// none) ds cannot tell ^C from kill -INT: the rare kill -INT aimed at an
// interactive ds alone is therefore not passed on, and [TTYSignalsForward]
// overrides the choice. TERM, HUP, USR1 and USR2 normally come from kill(1) aimed at ds and
// are always forwarded. Signals go to the child alone (through a pidfd, so
// a reused pid is never hit); when a stop signal made it exit, the rest of
// its tree gets the signal then, and KILL at the deadline (see Process
// tree).
//
// # Process tree
//
// While Run is in progress ds is a child subreaper (prctl
// PR_SET_CHILD_SUBREAPER; the attribute ds had before is restored when the
// last Run returns): a descendant whose parent exits is re-parented to ds
// rather than to init, as it is anyway when ds is PID 1 of a pid namespace
// (unshare --fork --pid, a container without an init). ds reaps such
// orphans when they exit, woken by SIGCHLD, as tini does, so no zombie is
// left with ds as its parent. It never takes a status somebody waits for: it
// peeks at an exited child (waitid with WNOWAIT) and reaps it only if it is
// neither a Run's child nor a child the process holds a pidfd for (which
// os.StartProcess and os/exec hold until Wait); a program that embeds proc
// and starts children without a pidfd (Linux before 5.4) must not run them
// alongside Run. The KILL of an escalation (after Grace, on a second INT,
// or after Grace once the context ended) is the one signal that goes to the
// whole tree rather than to the child alone: ds looks the tree up in /proc
// (the child's descendants by parent, the members of a session or process
// group the child leads, and the orphans re-parented to ds, with their own
// descendants) before the child dies, and again until no new process turns
// up, and sends each KILL through a pidfd opened after checking its start
// time, so a reused pid is never hit. The signal record lists them:
//
//	{"event":"signal","signal":"KILL","number":9,"source":"escalation","descendants":[4250,4251]}
//
// An orphan counts as the child's when this Run is the only one in progress
// (as in ds wrap) or when ds found it in the tree before; with several Runs
// at once, an orphan whose parent died before the escalation belongs to
// none and is left alone. When /proc is not that of ds's pid namespace
// (unshare --pid without --mount-proc) only the child is killed.
//
// # Stopping the job
//
// INT, TERM, HUP and QUIT, and the end of Run's context, are stop signals:
// they ask the whole job to end, as systemd's KillMode=mixed treats a unit
// it stops. The child gets the signal (as above), and the job has Grace
// from the first stop signal, the deadline, to be gone. When the child
// exits before the deadline, ds, before it reaps the child (so that its pid
// and the process group or session it may lead cannot be reused meanwhile),
// looks up what remains of its tree as for an escalation (the members of a
// session or process group the child leads, the orphans re-parented to ds,
// and their descendants) and sends each live one the last stop signal
// received (TERM for the context's end), through a pidfd after checking its
// start time; a process that has it pending already, is exiting, or got it
// with the child (in PTY mode, the members of the child's process group; a
// signal the terminal delivered, the members of ds's group) is not sent it
// again. These are listed in a signal record with source "tree". ds then
// looks again (every 100 ms at most, signalling any newcomer) until none is
// left, and at the deadline sends KILL to those still there, as many passes
// as it takes, listed in a signal record with source "escalation"; a
// second INT meanwhile does that at once. Only then is the child reaped,
// the output drained and exited recorded, so ds wrap returns at most about
// Grace after the first stop signal. A child still running at the deadline
// is killed with its tree (escalation, above).
//
// What is covered: every descendant that is still linked to the child by
// parent, or re-parented to ds (a daemon that forks twice and calls setsid
// is re-parented to ds, its subreaper), or in a session or group the child
// leads, and, when ds is PID 1 of a pid namespace, every orphan of it. What
// is not: a process the child had started by another program (systemd-run,
// a container runtime, at(1), an ssh server elsewhere), which is not a
// descendant; an orphan whose parent died before the stop when several Runs
// are in progress at once (it belongs to none); a process ds may not signal
// (another user's, after setuid), which is left out of the records; every
// process when /proc is not that of ds's pid namespace; and everything when
// ds itself is killed with KILL. No cgroup is used: one would need a
// delegated cgroup tree, which ds wrap cannot count on. Unrelated processes
// are never signalled: only the child's descendants, by parent, the orphans
// re-parented to ds (which with ds wrap can only be the child's: a child
// ds starts otherwise, through os/exec, holds a pidfd and is left out) and
// the members of the child's own session or group count, and each is
// checked by start time before it is signalled.
//
// A child that exits on its own, without a stop signal or later than Grace
// after the first one (a program that handles ^C and goes on), was not
// stopped: what remains of its tree is left alone and, if it keeps the
// output open, bounded by DrainIdle and DrainTimeout (see Draining). In PTY
// mode a ^C typed on the terminal is input to the child, not a signal to
// ds, so it does not stop the job; the kernel sends HUP to the pty's
// foreground process group when the child, its session leader, exits.
//
// # PTY mode
//
// With Options.PTY the child runs in a new session whose controlling
// terminal is a pseudo-terminal, so it line-buffers and colours its output as
// on a terminal; stdout and stderr are merged, as a terminal shows them, on
// the stdout channel, CRLF line ends included. The pty takes the size of the
// real terminal (Stdin, else Stdout, when it is one; 80x24 otherwise) and is
// resized on WINCH, which makes the kernel signal the child. Other signals
// go to the child's process group. When Stdin is a terminal it is put in raw
// mode (restored before Run returns) and copied to the pty, so ^C reaches
// the child through the pty as a keystroke; otherwise the child's stdin is
// Stdin itself (a file, a pipe or /dev/null), never the pty, so that EOF
// works in scripts and CI.
package proc

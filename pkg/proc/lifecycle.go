package proc

import (
	"bytes"
	"encoding/json"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// LifecycleSchema is the schema name of the lifecycle channel's content,
// frames.JSONRecord(LifecycleSchema) (ARCHITECTURE.md §4).
const LifecycleSchema = "proc.lifecycle"

// Lifecycle event names: the "event" field of a lifecycle record. The
// fields of each record are listed in the package doc.
const (
	// EventStarted: the child was started; always the first record.
	EventStarted = "started"
	// EventSpawnFailed: the child could not be started; the only record.
	EventSpawnFailed = "spawn_failed"
	// EventSignal: ds sent the child a signal, or saw one the terminal sent.
	EventSignal = "signal"
	// EventDrainTimeout: output was still open DrainTimeout after exit.
	EventDrainTimeout = "drain_timeout"
	// EventExited: the child's status and resource use; always the last
	// submission of a Run.
	EventExited = "exited"
)

// Signal sources: the "source" field of a signal record.
const (
	// SourceForwarded: ds received the signal and sent it to the child (in
	// PTY mode, WINCH is forwarded by resizing the pty).
	SourceForwarded = "forwarded"
	// SourceTerminal: ds received the signal but did not send it, because the
	// terminal already delivered it to the child's process group.
	SourceTerminal = "terminal"
	// SourceEscalation: ds sent KILL, after Grace or on a second INT, to
	// the child and the rest of its process tree, whose pids the record's
	// "descendants" lists (see the package doc, Process tree).
	SourceEscalation = "escalation"
	// SourceCancel: ds sent TERM because Run's context was cancelled.
	SourceCancel = "cancel"
	// SourceTree: the child exited after a stop signal (INT, TERM, HUP,
	// QUIT, or the context's end), and ds sent that signal on to what
	// remained of its process tree, whose pids the record's "descendants"
	// lists; what is still running at the deadline, Grace after the first
	// stop signal, is sent KILL (a record with source "escalation"). See
	// the package doc, Process tree.
	SourceTree = "tree"
)

type startedRecord struct {
	Event        string   `json:"event"`
	PID          int      `json:"pid"`
	Argv         []string `json:"argv"`
	Path         string   `json:"path"`
	Cwd          string   `json:"cwd"`
	Label        string   `json:"label"`
	PTY          bool     `json:"pty"`
	MergedOutput bool     `json:"merged_output"`
}

type spawnFailedRecord struct {
	Event    string   `json:"event"`
	Error    string   `json:"error"`
	Argv     []string `json:"argv"`
	Cwd      string   `json:"cwd"`
	ExitCode int      `json:"exit_code"`
}

type signalRecord struct {
	Event  string `json:"event"`
	Signal string `json:"signal"`
	Number int    `json:"number"`
	Source string `json:"source"`
	// Descendants lists the other processes of the child's tree that were
	// sent the signal (KILL on escalation, the stop signal with source
	// "tree"; see the package doc), by pid, parents before their children.
	Descendants []int `json:"descendants,omitempty"`
	// Count is len(Descendants), for readers that want only how many.
	Count int `json:"count,omitempty"`
}

type drainTimeoutRecord struct {
	Event     string   `json:"event"`
	TimeoutNS int64    `json:"timeout_ns"`
	Open      []string `json:"open"`
}

type exitStatus struct {
	Kind       string `json:"kind"` // "code" or "signal"
	Value      int    `json:"value"`
	Name       string `json:"name,omitempty"` // signal name, "KILL"
	CoreDumped bool   `json:"core_dumped,omitempty"`
}

type exitedRecord struct {
	Event       string     `json:"event"`
	Status      exitStatus `json:"status"`
	ExitCode    int        `json:"exit_code"`
	WallNS      int64      `json:"wall_ns"`
	UserNS      int64      `json:"user_ns"`
	SysNS       int64      `json:"sys_ns"`
	MaxRSSBytes int64      `json:"max_rss_bytes"`
}

// marshalRecord encodes v as one JSON value without a trailing newline and
// without HTML escaping, in a fresh slice the caller may hand to SubmitBytes.
func marshalRecord(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only plain strings, ints and bools are encoded: cannot happen.
		panic("proc: encode lifecycle record: " + err.Error())
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// SignalName returns the name of sig without the "SIG" prefix ("TERM",
// "KILL"), as lifecycle records spell it, or "" for an unknown number.
func SignalName(sig syscall.Signal) string {
	return strings.TrimPrefix(unix.SignalName(sig), "SIG")
}

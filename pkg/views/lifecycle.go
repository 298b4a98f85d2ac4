package views

import (
	"encoding/json"
	"strings"
)

// Lifecycle is one proc.LABEL.lifecycle record as the views read it
// (ARCHITECTURE.md §4; pkg/proc writes them, its package doc has the
// shapes): "started", "spawn_failed", "signal", "drain_timeout" and
// "exited" events share it. Every field may be missing: a pointer is nil
// and a slice empty when the record does not carry it, so that a reader
// can tell exit code 0 from no code. Times are nanoseconds, sizes bytes.
type Lifecycle struct {
	Event string   `json:"event"` // "started", "exited", "spawn_failed", …
	PID   int      `json:"pid"`   // started
	Argv  []string `json:"argv"`  // started, spawn_failed
	Cwd   string   `json:"cwd"`   // started, spawn_failed
	PTY   bool     `json:"pty"`   // started: the child ran on a pty
	Error string   `json:"error"` // spawn_failed: why the command did not start
	// Status is how the child ended (exited): a code or a signal.
	Status *LifecycleStatus `json:"status"`
	// ExitCode is the shell's exit status (exited, spawn_failed): the
	// code, or 128+N after signal N, 127 for a command not found.
	ExitCode    *int   `json:"exit_code"`
	WallNS      *int64 `json:"wall_ns"`       // exited: wall time from start to exit
	UserNS      *int64 `json:"user_ns"`       // exited: user CPU time of the child's tree
	SysNS       *int64 `json:"sys_ns"`        // exited: system CPU time
	MaxRSSBytes *int64 `json:"max_rss_bytes"` // exited: peak resident set
	// Forwarded lists the signals ds wrap passed on to the child.
	Forwarded []any `json:"forwarded_signals"`
}

// LifecycleStatus is the "status" of an "exited" record: Kind "code" with
// the exit code as Value, or "signal" with the signal's number as Value
// and its name ("KILL") as Name.
type LifecycleStatus struct {
	Kind  string `json:"kind"`
	Value int    `json:"value"`
	Name  string `json:"name"`
}

// ParseLifecycle decodes a lifecycle record's payload. It returns an
// error, and a zero Lifecycle, for a payload that is not a JSON object
// of that shape (a damaged or foreign record: callers skip it).
func ParseLifecycle(payload []byte) (Lifecycle, error) {
	var l Lifecycle
	if err := json.Unmarshal(payload, &l); err != nil {
		return Lifecycle{}, err
	}
	return l, nil
}

// FailedExit reports whether an "exited" record says the process failed:
// a status other than code 0 (a signal, or a code other than 0), or with
// no status an exit code other than 0. A record with neither is not a
// failure.
func (l *Lifecycle) FailedExit() bool {
	if l.Status == nil {
		return l.ExitCode != nil && *l.ExitCode != 0
	}
	return l.Status.Kind != "code" || l.Status.Value != 0
}

// LifecycleLabel returns LABEL of a channel named proc.LABEL.lifecycle
// (the channel ds wrap --label LABEL declares; ARCHITECTURE.md §5), and
// false for any other name.
func LifecycleLabel(channel string) (string, bool) {
	rest, ok := strings.CutPrefix(channel, "proc.")
	if !ok {
		return "", false
	}
	label, ok := strings.CutSuffix(rest, ".lifecycle")
	if !ok {
		return "", false
	}
	return label, true
}

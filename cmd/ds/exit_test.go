package main

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

func TestExitCode(t *testing.T) {
	tests := []struct {
		err        error
		code       int
		wantStderr string
	}{
		{nil, 0, ""},
		{errors.New("open x.dss: no such file"), 1, "ds: open x.dss: no such file\n"},
		{usagef("unknown command %q", "x"), 2, "ds: unknown command \"x\"\nRun 'ds --help' for usage.\n"},
		{&usageError{err: errors.New("log: --cat and --json cannot be combined"), cmd: "ds log"}, 2, "ds: log: --cat and --json cannot be combined\nRun 'ds log --help' for usage.\n"},
		{&usageError{err: errors.New("log: unknown flag --x; see 'ds log --help'"), cmd: "ds log", hinted: true}, 2, "ds: log: unknown flag --x; see 'ds log --help'\n"},
		{&wrapError{&usageError{err: errors.New("wrap: unknown flag --x; see 'ds wrap --help'"), hinted: true}}, 125, "ds: wrap: unknown flag --x; see 'ds wrap --help'\n"},
		{&corruptError{errors.New("a.dss: torn tail")}, 3, "ds: a.dss: torn tail\n"},
		{fmt.Errorf("wrapped: %w", &corruptError{errors.New("bad")}), 3, "ds: wrapped: bad\n"},
		{&statusError{code: 137}, 137, ""},
	}
	for _, tt := range tests {
		var stderr bytes.Buffer
		if got := exitCode(tt.err, &stderr); got != tt.code || stderr.String() != tt.wantStderr {
			t.Errorf("exitCode(%v) = %d, %q; want %d, %q", tt.err, got, stderr.String(), tt.code, tt.wantStderr)
		}
	}
}

// Flags after arguments work (urfave/cli v3), and urfave never calls os.Exit
// or prints help on stdout for a usage error.
func TestRunUsageErrorNotOnStdout(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"ds", "--nope"}, nil, &stdout, &stderr); code != exitUsage {
		t.Fatalf("code %d", code)
	}
	if stdout.Len() != 0 {
		t.Fatalf("stdout = %q", stdout.String())
	}
}

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestNeeded pins which commands run prepares for a command line.
func TestNeeded(t *testing.T) {
	cmds := newRoot(nil, nil, nil).Commands
	tests := []struct {
		args string
		want string // names, "all" for every command
	}{
		{"ds", "all"},
		{"ds --version", ""},
		{"ds -v", ""},
		{"ds --version log", "all"},
		{"ds --help", "all"},
		{"ds help log", "all"},
		{"ds completion bash", "all"},
		{"ds log x.dss", "log"},
		{"ds log --help", "log"},
		{"ds lgo x.dss", "all"},
		{"ds -- log", "all"},
	}
	for _, tt := range tests {
		got := needed(cmds, strings.Fields(tt.args))
		var names []string
		for _, c := range got {
			names = append(names, c.Name)
		}
		have := strings.Join(names, " ")
		if len(got) == len(cmds) {
			have = "all"
		}
		if have != tt.want {
			t.Errorf("needed(%q) = %q, want %q", tt.args, have, tt.want)
		}
	}
}

// TestNeededChangesNothing runs command lines with the whole tree and with
// what needed keeps: stdout, stderr and the exit status must agree.
func TestNeededChangesNothing(t *testing.T) {
	full := func(args []string) (string, string, int) {
		var stdout, stderr bytes.Buffer
		root := newRoot(strings.NewReader(""), &stdout, &stderr)
		root.Metadata = map[string]any{metaArgs: args}
		code := exitCode(root.Run(context.Background(), args), &stderr)
		return stdout.String(), stderr.String(), code
	}
	for _, line := range []string{
		"ds --version", "ds log --help", "ds help log", "ds lgo x.dss", "ds log --nope",
		"ds tail -n x y.dss", "ds info /nonexistent/x.dss", "ds", "ds wrap --nope -- true",
		"ds series --help", "ds gaps --check /nonexistent",
	} {
		args := strings.Fields(line)
		wantOut, wantErr, wantCode := full(args)
		var stdout, stderr bytes.Buffer
		code := run(args, strings.NewReader(""), &stdout, &stderr)
		if code != wantCode || stdout.String() != wantOut || stderr.String() != wantErr {
			t.Errorf("%s: got exit %d, stdout %q, stderr %q; with every command: exit %d, stdout %q, stderr %q",
				line, code, stdout.String(), stderr.String(), wantCode, wantOut, wantErr)
		}
	}
}

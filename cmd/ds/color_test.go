package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/urfave/cli/v3"
)

// TestColorChoice: --color=auto colours a terminal unless NO_COLOR is set
// to something (https://no-color.org) or TERM is dumb; always and never
// are what they say, NO_COLOR or not.
func TestColorChoice(t *testing.T) {
	tests := []struct {
		when, noColor, term string
		terminal            bool
		on, ok              bool
	}{
		{"auto", "", "xterm-256color", true, true, true},
		{"auto", "", "", true, true, true},
		{"auto", "", "xterm", false, false, true},
		{"auto", "1", "xterm", true, false, true},
		{"auto", "0", "xterm", true, false, true}, // any non-empty value
		{"auto", "", "dumb", true, false, true},
		{"always", "1", "dumb", false, true, true},
		{"always", "", "xterm", false, true, true},
		{"never", "", "xterm", true, false, true},
		{"", "", "xterm", true, false, false},
		{"yes", "", "xterm", true, false, false},
		{"Always", "", "xterm", true, false, false},
	}
	for _, tt := range tests {
		on, ok := colorChoice(tt.when, tt.noColor, tt.term, tt.terminal)
		if on != tt.on || ok != tt.ok {
			t.Errorf("colorChoice(%q, NO_COLOR=%q, TERM=%q, terminal %v) = %v, %v; want %v, %v",
				tt.when, tt.noColor, tt.term, tt.terminal, on, ok, tt.on, tt.ok)
		}
	}
}

// runUseColor parses args with a command holding colorFlag and returns what
// useColor says of w.
func runUseColor(t *testing.T, w io.Writer, args ...string) (bool, error) {
	t.Helper()
	var on bool
	var err error
	cmd := &cli.Command{
		Name:   "log",
		Flags:  []cli.Flag{colorFlag()},
		Writer: io.Discard, ErrWriter: io.Discard,
		Action: func(_ context.Context, c *cli.Command) error {
			on, err = useColor(c, w)
			return nil
		},
	}
	if rerr := cmd.Run(context.Background(), append([]string{"log"}, args...)); rerr != nil {
		t.Fatal(rerr)
	}
	return on, err
}

func TestUseColor(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "xterm")
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, w := range []io.Writer{&bytes.Buffer{}, f} {
		// Neither a buffer nor a regular file is a terminal.
		if on, err := runUseColor(t, w); on || err != nil {
			t.Errorf("default on %T: %v, %v; want off", w, on, err)
		}
		if on, err := runUseColor(t, w, "--color=always"); !on || err != nil {
			t.Errorf("--color=always on %T: %v, %v; want on", w, on, err)
		}
	}
	t.Setenv("NO_COLOR", "1")
	if on, err := runUseColor(t, io.Discard, "--color", "always"); !on || err != nil {
		t.Errorf("--color always with NO_COLOR: %v, %v; want on (the flag wins)", on, err)
	}
	if on, err := runUseColor(t, io.Discard, "--color=never"); on || err != nil {
		t.Errorf("--color=never: %v, %v; want off", on, err)
	}
	_, err = runUseColor(t, io.Discard, "--color=bogus")
	var ue *usageError
	if !errors.As(err, &ue) || err.Error() != `log: --color "bogus": want auto, always or never` {
		t.Errorf("--color=bogus: %v; want a usage error", err)
	}
}

package proc

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestNoShebang checks execvp(3)'s rule: a script without "#!", which
// execve(2) refuses with ENOEXEC, is run by /bin/sh with the file as its
// first operand, as sh(1) and env(1) do.
func TestNoShebang(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "job")
	if err := os.WriteFile(script, []byte("echo \"run $# $1\"\necho err >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		o        Options
		code     int
		stdout   string
		wantArgv []any
	}{
		{"path", Options{Argv: []string{script, "a b"}}, 3, "run 1 a b\n", []any{"/bin/sh", script, "a b"}},
		{"in PATH", Options{Argv: []string{"job"}, Env: []string{"PATH=" + dir}}, 3, "run 0 \n", []any{"/bin/sh", script}},
		{"relative to Dir", Options{Argv: []string{"./job", "x"}, Dir: dir}, 3, "run 1 x\n", []any{"/bin/sh", "./job", "x"}},
		{"empty file", Options{Argv: []string{empty}}, 0, "", []any{"/bin/sh", empty}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, p := runCheck(t, tt.o)
			if res.ExitCode != tt.code {
				t.Errorf("exit %d, want %d", res.ExitCode, tt.code)
			}
			if got := p.text("proc.t.stdout"); got != tt.stdout {
				t.Errorf("stdout = %q, want %q", got, tt.stdout)
			}
			st := p.lifecycle(t, label)[0]
			if st["event"] != "started" || st["path"] != "/bin/sh" || !cmp.Equal(st["argv"], tt.wantArgv) {
				t.Errorf("started = %v", st)
			}
		})
	}
}

func TestUnknownExecFormat(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	misc := filepath.Join(dir, "binfmt_misc")
	if err := os.Mkdir(misc, 0o755); err != nil {
		t.Fatal(err)
	}
	file("binfmt_misc/status", "enabled\n", 0o644)
	file("binfmt_misc/register", "", 0o200)
	file("binfmt_misc/zzz", "enabled\ninterpreter /usr/bin/zzz\nflags: \noffset 2\nmagic 5a5a\nmask ffdf\n", 0o644)
	file("binfmt_misc/foo", "enabled\ninterpreter /usr/bin/foo\nflags: \nextension .foo\n", 0o644)
	file("binfmt_misc/off", "disabled\ninterpreter /usr/bin/off\nflags: \nextension .off\n", 0o644)
	tests := []struct {
		name string
		path string
		want bool
	}{
		{"script", file("script", "echo hi\n", 0o755), true},
		{"empty", file("empty", "", 0o755), true},
		{"NUL after the first line", file("nul2", "echo hi\n\x00\n", 0o755), true},
		{"shebang", file("shebang", "#!/bin/sh\necho hi\n", 0o755), false},
		{"ELF", file("elf", "\x7fELF\x02\x01\x01", 0o755), false},
		{"binary", file("binary", "\x00\x01\x02 not a program", 0o755), false},
		{"not executable", file("noexec", "echo hi\n", 0o644), false},
		{"missing", filepath.Join(dir, "missing"), false},
		{"directory", dir, false},
		{"binfmt magic", file("magic", "..ZZ rest\n", 0o755), false},
		{"binfmt magic under mask", file("magic2", "..Zz rest\n", 0o755), false},
		{"binfmt magic elsewhere", file("magic3", "ZZ rest\n", 0o755), true},
		{"binfmt extension", file("x.foo", "echo hi\n", 0o755), false},
		{"binfmt disabled", file("x.off", "echo hi\n", 0o755), true},
	}
	for _, tt := range tests {
		if got := unknownExecFormat(tt.path, misc); got != tt.want {
			t.Errorf("%s: unknownExecFormat = %v, want %v", tt.name, got, tt.want)
		}
	}
	// binfmt_misc as a whole switched off.
	file("binfmt_misc/status", "disabled\n", 0o644)
	if !unknownExecFormat(filepath.Join(dir, "x.foo"), misc) {
		t.Error("a disabled binfmt_misc still claims x.foo")
	}
}

// TestNoShebangBinaryStays126 checks that a binary file execve refuses is
// not handed to sh.
func TestNoShebangBinaryStays126(t *testing.T) {
	t.Parallel()
	f := filepath.Join(t.TempDir(), "garbage")
	if err := os.WriteFile(f, []byte("\x00\x01\x02\x03 not a program\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := &fakeProducer{}
	res, err := Run(context.Background(), Options{Argv: []string{f}, Producer: p, Label: label})
	if res.ExitCode != 126 || err == nil {
		t.Errorf("exit %d, %v; want 126 and a StartError", res.ExitCode, err)
	}
}

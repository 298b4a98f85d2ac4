package proc

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// lookPath resolves argv0 the way execvp(3) and POSIX shells do: a name
// containing '/' is used as is (relative to the child's directory); any other
// name is searched in the directories of pathEnv. An executable regular file
// wins; if only non-executable candidates exist the error is EACCES (exit
// 126); if none exist it is ErrNotFound (exit 127).
func lookPath(argv0, pathEnv string) (string, error) {
	if strings.Contains(argv0, "/") {
		return argv0, nil
	}
	if argv0 == "" {
		return "", ErrNotFound
	}
	var denied error
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			dir = "." // POSIX: an empty PATH entry is the current directory
		}
		p := dir + "/" + argv0
		fi, err := os.Stat(p)
		if err != nil || fi.IsDir() {
			continue
		}
		if fi.Mode()&0o111 == 0 {
			if denied == nil {
				denied = syscall.EACCES
			}
			continue
		}
		if !filepath.IsAbs(p) {
			// The child changes to Options.Dir before exec: make the
			// path independent of it.
			if abs, err := filepath.Abs(p); err == nil {
				p = abs
			}
		}
		return p, nil
	}
	if denied != nil {
		return "", denied
	}
	return "", ErrNotFound
}

// pathFromEnv returns the PATH the command is searched in: the last PATH=
// entry of env when env is not nil (the child's environment), else ds's own.
func pathFromEnv(env []string) string {
	if env == nil {
		return os.Getenv("PATH")
	}
	p := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			p = v
		}
	}
	return p
}

// classifyStartError maps a failure of lookPath or os.StartProcess to the
// error kept in a StartError and the exit code (ARCHITECTURE.md §5): ENOENT for a
// file that does not exist is 127; anything else (EACCES, ENOEXEC, EISDIR,
// ENOENT for a missing "#!" interpreter, ...) is 126.
func classifyStartError(err error, path, dir string) (int, error) {
	if errors.Is(err, ErrNotFound) {
		return ExitNotFound, err
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Op == "fork/exec" {
		err = pe.Err // the path is already in StartError.Argv
	}
	if errors.Is(err, syscall.ENOENT) {
		p := path
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		if _, serr := os.Stat(p); serr != nil {
			return ExitNotFound, err
		}
		// The file exists: its "#!" interpreter does not.
		return ExitCannotExecute, fmt.Errorf("bad interpreter: %w", err)
	}
	return ExitCannotExecute, err
}

// shellPath is the shell that runs a script without "#!" (execvp(3) and
// POSIX: "the shell is invoked with the command name as its first operand").
const shellPath = "/bin/sh"

// binfmtMiscDir is where binfmt_misc(7) lists the formats registered with
// the kernel beyond ELF and "#!".
const binfmtMiscDir = "/proc/sys/fs/binfmt_misc"

// binprmBufSize is how many leading bytes of a file the kernel looks at to
// choose a format (BINPRM_BUF_SIZE).
const binprmBufSize = 256

// shellFallback applies execvp(3)'s rule for a file that execve(2) refuses
// with ENOEXEC: it is a script without "#!", run by the shell as
// "/bin/sh PATH ARGS…" (sh(1), env(1) and the POSIX shells do the same).
// It returns that argv, with PATH the resolved file (absolute when found in
// pathEnv, else relative to dir as given), and true when argv[0] resolves to
// an executable regular file that execve would refuse: neither ELF, nor
// "#!", nor a format registered in binfmt_misc. A file whose first line
// holds a NUL byte is binary, not a script (bash's rule), and is left to
// fail with ENOEXEC (exit 126). Otherwise it returns nil, false and the
// command is started as it is; every error (not found, permission) is left
// for the start to report.
func shellFallback(argv []string, pathEnv, dir string) ([]string, bool) {
	if len(argv) == 0 {
		return nil, false
	}
	path, err := lookPath(argv[0], pathEnv)
	if err != nil {
		return nil, false
	}
	full := path
	if !filepath.IsAbs(full) && dir != "" {
		full = filepath.Join(dir, full)
	}
	if !unknownExecFormat(full, binfmtMiscDir) {
		return nil, false
	}
	out := make([]string, 0, len(argv)+1)
	out = append(out, shellPath, path)
	return append(out, argv[1:]...), true
}

// unknownExecFormat reports whether file is an executable regular text
// file that execve(2) would refuse with ENOEXEC (see shellFallback), with
// binfmt_misc read from miscDir.
func unknownExecFormat(file, miscDir string) bool {
	if unix.Access(file, unix.X_OK) != nil {
		return false
	}
	f, err := os.Open(file)
	if err != nil {
		return false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	buf := make([]byte, binprmBufSize)
	n, err := io.ReadFull(f, buf)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return false
	}
	head := buf[:n]
	if bytes.HasPrefix(head, []byte("\x7fELF")) || bytes.HasPrefix(head, []byte("#!")) {
		return false
	}
	if binfmtMiscMatch(miscDir, file, head) {
		return false
	}
	line, _, _ := bytes.Cut(head, []byte("\n"))
	return bytes.IndexByte(line, 0) < 0
}

// binfmtMiscMatch reports whether an enabled binfmt_misc(7) entry in dir
// handles file, whose first bytes are head: by magic (at an offset, under a
// mask) or by the extension after the last '.' of its name.
func binfmtMiscMatch(dir, file string, head []byte) bool {
	st, err := os.ReadFile(filepath.Join(dir, "status"))
	if err != nil || strings.TrimSpace(string(st)) != "enabled" {
		return false
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, de := range ents {
		if n := de.Name(); n == "status" || n == "register" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, de.Name()))
		if err != nil {
			continue
		}
		if binfmtEntryMatch(string(b), file, head) {
			return true
		}
	}
	return false
}

// binfmtEntryMatch reports whether the binfmt_misc entry text (the contents
// of /proc/sys/fs/binfmt_misc/NAME) handles file with first bytes head.
func binfmtEntryMatch(entry, file string, head []byte) bool {
	lines := strings.Split(entry, "\n")
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != "enabled" {
		return false
	}
	offset := 0
	var magic, mask []byte
	for _, l := range lines[1:] {
		k, v, _ := strings.Cut(strings.TrimSpace(l), " ")
		switch k {
		case "extension":
			ext := strings.TrimPrefix(v, ".")
			base := filepath.Base(file)
			i := strings.LastIndexByte(base, '.')
			return ext != "" && i >= 0 && base[i+1:] == ext
		case "offset":
			offset, _ = strconv.Atoi(v)
		case "magic":
			magic, _ = hex.DecodeString(v)
		case "mask":
			mask, _ = hex.DecodeString(v)
		}
	}
	if len(magic) == 0 || offset < 0 || offset+len(magic) > len(head) {
		return false
	}
	for i, m := range magic {
		c := head[offset+i]
		if i < len(mask) {
			c &= mask[i]
		}
		if c != m {
			return false
		}
	}
	return true
}

package proc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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
// error kept in a StartError and the exit code (DESIGN.md §5): ENOENT for a
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

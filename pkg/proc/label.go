package proc

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// ErrEmptyLabel is returned (wrapped) by [CleanLabel] and [LabelFromCommand]
// for a label that cleans to nothing, such as "" or "./..".
var ErrEmptyLabel = errors.New("proc: label is empty after cleaning")

// CleanLabel turns a user-supplied label into the form used in channel names
// (proc.<label>.stdout): it trims white space, lower-cases, replaces every run
// of bytes outside [a-z0-9_-] with a single '_', and trims leading and
// trailing '_'. A multi-byte UTF-8 character is such a run. The rule is
// CONFORMANCE.md §5.6: "trainer.0/foo" → "trainer_0_foo",
// "  GPU Worker  " → "gpu_worker". A label that cleans to nothing returns an
// error wrapping [ErrEmptyLabel].
func CleanLabel(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	var b strings.Builder
	b.Grow(len(s))
	run := false // inside a run of disallowed bytes
	for i := 0; i < len(s); i++ {
		c := s[i]
		if ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') || c == '_' || c == '-' {
			b.WriteByte(c)
			run = false
			continue
		}
		if !run {
			b.WriteByte('_')
			run = true
		}
	}
	out := strings.Trim(b.String(), "_")
	if out == "" {
		return "", fmt.Errorf("%w: %q", ErrEmptyLabel, s)
	}
	return out, nil
}

// LabelFromCommand derives the default label of a wrapped command from its
// argv[0]: the base name of the path, then [CleanLabel]
// (CONFORMANCE.md §5.6: "/usr/bin/python3" → "python3",
// "./bin/train.v2" → "train_v2"). It returns an error wrapping
// [ErrEmptyLabel] when nothing usable is left.
func LabelFromCommand(argv0 string) (string, error) {
	base := path.Base(strings.TrimSpace(argv0))
	if base == "." || base == "/" {
		base = ""
	}
	return CleanLabel(base)
}

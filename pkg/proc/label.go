package proc

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// LabelChars describes the characters a cleaned label is made of, for
// messages about a label that was rewritten ("labels are [a-z0-9_-]").
const LabelChars = "[a-z0-9_-]"

// LabelRule states what a cleaned label must be, for messages about a label
// that is refused (see [CleanLabel]).
const LabelRule = "a label needs a letter or digit and must not start with '-'"

var (
	// ErrInvalidLabel is matched (errors.Is) by every [*LabelError]: the
	// label breaks [LabelRule] once cleaned.
	ErrInvalidLabel = errors.New("proc: invalid label")
	// ErrEmptyLabel is wrapped by a [*LabelError] for a label that cleans to
	// nothing, such as "" or "./..". Such an error matches ErrInvalidLabel
	// too.
	ErrEmptyLabel = errors.New("proc: label is empty after cleaning")
)

// A LabelError reports a label that [CleanLabel] refuses.
type LabelError struct {
	Label string // the label as given (for LabelFromCommand, the command's base name)
	Err   error  // ErrEmptyLabel (nothing left after cleaning) or ErrInvalidLabel
}

// Error returns `proc: label "LABEL" is not valid: RULE`.
func (e *LabelError) Error() string {
	return fmt.Sprintf("proc: label %q is not valid: %s", e.Label, LabelRule)
}

// Unwrap returns Err.
func (e *LabelError) Unwrap() error { return e.Err }

// Is reports that every LabelError is an ErrInvalidLabel.
func (e *LabelError) Is(target error) bool { return target == ErrInvalidLabel }

// CleanLabel turns a user-supplied label into the form used in channel names
// (proc.<label>.stdout) and capture file names (<label>-TIME.dss): it trims
// white space, lower-cases, replaces every run of bytes outside [a-z0-9_-]
// with a single '_', and trims leading and trailing '_'. A multi-byte UTF-8
// character is such a run. The rewrite is ARCHITECTURE.md case 5.6:
// "trainer.0/foo" → "trainer_0_foo", "  GPU Worker  " → "gpu_worker".
//
// The cleaned label must then follow [LabelRule]: it must contain a letter
// or a digit (a label of only '-' and '_', such as "--", names nothing), and
// it must not start with '-' (a file named "-x-TIME.dss" or "---TIME.dss"
// reads as an option to every other tool). Otherwise CleanLabel returns a
// *[LabelError], which matches [ErrInvalidLabel], and also [ErrEmptyLabel]
// when nothing is left at all (ARCHITECTURE.md case 5.6: "a label that cleans to
// nothing is an error").
//
// CleanLabel is idempotent; a caller that wants to tell the user about a
// rewrite compares the result with its input.
func CleanLabel(s string) (string, error) {
	in := s
	s = strings.ToLower(strings.TrimSpace(s))
	var b strings.Builder
	b.Grow(len(s))
	run := false   // inside a run of disallowed bytes
	alnum := false // a letter or digit was seen
	for i := 0; i < len(s); i++ {
		c := s[i]
		if ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') || c == '_' || c == '-' {
			alnum = alnum || (c != '_' && c != '-')
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
	switch {
	case out == "":
		return "", &LabelError{Label: in, Err: ErrEmptyLabel}
	case !alnum || out[0] == '-':
		return "", &LabelError{Label: in, Err: ErrInvalidLabel}
	}
	return out, nil
}

// CommandBase returns the part of a command's argv[0] that its default
// label is made from: the base name of the path, white space trimmed, or ""
// when there is none ("/", "."). [LabelFromCommand] is
// CleanLabel(CommandBase(argv0)).
func CommandBase(argv0 string) string {
	base := path.Base(strings.TrimSpace(argv0))
	if base == "." || base == "/" {
		return ""
	}
	return base
}

// LabelFromCommand derives the default label of a wrapped command from its
// argv[0]: [CleanLabel] of [CommandBase] (ARCHITECTURE.md case 5.6:
// "/usr/bin/python3" → "python3", "./bin/train.v2" → "train_v2"). Taking the
// base name is not a rewrite; cleaning it may be ("train.v2" → "train_v2").
// It returns CleanLabel's *[LabelError] when the base name breaks
// [LabelRule].
func LabelFromCommand(argv0 string) (string, error) {
	return CleanLabel(CommandBase(argv0))
}

package main

import (
	"strings"

	"github.com/urfave/cli/v3"
)

// splitAttached rewrites, in the command line args of root (args[0] the
// program), short flags written together as getopt(3) takes them into
// one word each: a short flag with its value attached ("-n1",
// "-cproc.job.stdout") into the flag and its value ("-n", "1"), and
// short flags run together ("-rn2", as journalctl -rn 5) into "-r",
// "-n", "2": urfave/cli takes "-n 1" and "-n=1" only, and refused
// "ds tail -n1" as an unknown flag. Only words made of one-letter flags
// of the command named (and its subcommands) are split, the last of
// which may take a value; a word that is itself a flag of the command,
// the value of a flag, and everything after "--" are left as they are.
// ds wrap's command line is never touched (the child's argv follows
// it).
func splitAttached(root *cli.Command, args []string) []string {
	if len(args) < 2 {
		return args
	}
	cmd, i := root, 1
	for i < len(args) {
		sub := cmd.Command(args[i])
		if sub == nil {
			break
		}
		cmd, i = sub, i+1
	}
	if cmd == root || cmd.Name == "wrap" {
		return args
	}
	short := map[string]bool{}  // one-letter names: whether the flag takes a value
	valued := map[string]bool{} // every name of a flag taking a value
	known := map[string]bool{}  // every name of a flag
	for _, f := range cmd.Flags {
		takes := takesValue(f)
		for _, n := range f.Names() {
			known[n] = true
			if takes {
				valued[n] = true
			}
			if len(n) == 1 {
				short[n] = takes
			}
		}
	}
	var out []string
	for j := i; j < len(args); j++ {
		a := args[j]
		if a == "--" {
			out = append(out, args[j:]...)
			break
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case !strings.HasPrefix(a, "-") || a == "-":
		case known[name]:
			if valued[name] && !hasValue && j+1 < len(args) {
				out = append(out, a)
				j++
				a = args[j] // the flag's value, whatever it looks like
			}
		case !strings.HasPrefix(a, "--") && len(a) > 2:
			if words := splitShort(a, short); words != nil {
				out = append(out, words...)
				continue
			}
		}
		out = append(out, a)
	}
	return append(append([]string{}, args[:i]...), out...)
}

// takesValue reports whether flag f takes the word after it as its value:
// not a bool, nor an optionalValue (--json, --time take theirs only as
// --json=VALUE).
func takesValue(f cli.Flag) bool {
	df, ok := f.(cli.DocGenerationFlag)
	if !ok || !df.TakesValue() {
		return false
	}
	if g, ok := f.(*cli.GenericFlag); ok {
		if b, ok := g.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			return false
		}
	}
	return true
}

// splitShort splits a word of short flags run together ("-rn2") into one
// word a flag, and the value of the last if it takes one (short says
// which take a value); it returns nil when the word is not made so.
func splitShort(a string, short map[string]bool) []string {
	var words []string
	for i := 1; i < len(a); i++ {
		takes, ok := short[a[i:i+1]]
		if !ok {
			return nil
		}
		words = append(words, "-"+a[i:i+1])
		if takes {
			if rest := a[i+1:]; rest != "" {
				if rest[0] == '=' {
					return nil // -n=1: urfave takes it
				}
				words = append(words, rest)
			}
			return words
		}
	}
	return words
}

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/urfave/cli/v3"
)

// runDS runs ds in-process and returns its exit status, stdout and stderr.
func runDS(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(append([]string{"ds"}, args...), strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// commandPaths lists every visible command below ds as the words that name
// it: ["log"], ["completion", "bash"], …
func commandPaths(c *cli.Command, prefix []string) [][]string {
	var out [][]string
	for _, sub := range c.Commands {
		if sub.Hidden {
			continue
		}
		p := append(append([]string(nil), prefix...), sub.Name)
		out = append(out, p)
		out = append(out, commandPaths(sub, p)...)
	}
	return out
}

// Every help screen fits 80 columns, lists -h, and is the same whether
// asked for as ds CMD --help, ds CMD -h or ds help CMD.
func TestHelpFitsAndAgrees(t *testing.T) {
	paths := append([][]string{nil}, commandPaths(newRoot(nil, nil, nil), nil)...)
	for _, p := range paths {
		name := strings.Join(append([]string{"ds"}, p...), " ")
		t.Run(name, func(t *testing.T) {
			code, help, stderr := runDS(t, append(p, "--help")...)
			if code != 0 || stderr != "" {
				t.Fatalf("%s --help: exit %d, stderr %q", name, code, stderr)
			}
			for i, l := range strings.Split(help, "\n") {
				if n := utf8.RuneCountInString(l); n > helpWidth {
					t.Errorf("%s --help line %d is %d columns (over %d):\n%s", name, i+1, n, helpWidth, l)
				}
				if strings.Contains(l, "\t") {
					t.Errorf("%s --help line %d has a tab:\n%s", name, i+1, l)
				}
			}
			if !strings.Contains(help, "\n   -h, --help ") {
				t.Errorf("%s --help does not list -h, --help:\n%s", name, help)
			}
			if !strings.HasPrefix(help, "NAME:\n   "+name+" - ") {
				t.Errorf("%s --help does not start with its NAME:\n%s", name, help)
			}
			for _, other := range [][]string{append(p, "-h"), append([]string{"help"}, p...)} {
				code, got, stderr := runDS(t, other...)
				if code != 0 || stderr != "" || got != help {
					t.Errorf("ds %s: exit %d, stderr %q, output differs from %s --help:\n%s", strings.Join(other, " "), code, stderr, name, got)
				}
			}
		})
	}
}

// The man page and help need an example of every command (the table may
// hold more: commands still being built).
func TestEveryCommandHasExamples(t *testing.T) {
	for _, c := range newRoot(nil, nil, nil).Commands {
		if !c.Hidden && len(examples[c.Name]) == 0 {
			t.Errorf("ds %s has no examples: add them to cmd/ds/examples.go", c.Name)
		}
	}
	for name, ex := range examples {
		for _, e := range ex {
			for _, l := range strings.Split(e.Command, "\n") {
				if n := utf8.RuneCountInString(l); 6+n > helpWidth {
					t.Errorf("example of %s: %q is %d columns, over %d after the indent", name, l, n, helpWidth-6)
				}
			}
			if !strings.HasSuffix(e.Explanation, ":") {
				t.Errorf("example of %s: explanation %q does not end in a colon", name, e.Explanation)
			}
		}
	}
}

// Usage errors: one message on stderr naming what was typed, a pointer to
// help, nothing on stdout, exit 2 (125 for ds wrap).
func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args       []string
		code       int
		wantStderr string
	}{
		{[]string{"log", "--jsn", "x.dss"}, 2, "ds: log: unknown flag --jsn (did you mean --json?); see 'ds log --help'\n"},
		{[]string{"log", "x.dss", "-jsn"}, 2, "ds: log: unknown flag -jsn (did you mean --json?); see 'ds log --help'\n"},
		{[]string{"log", "--jsn=1", "x.dss"}, 2, "ds: log: unknown flag --jsn (did you mean --json?); see 'ds log --help'\n"},
		{[]string{"log", "-x", "x.dss"}, 2, "ds: log: unknown flag -x; see 'ds log --help'\n"},
		{[]string{"log", "--frobnicate", "x.dss"}, 2, "ds: log: unknown flag --frobnicate; see 'ds log --help'\n"},
		{[]string{"log", "x.dss", "--channel"}, 2, "ds: log: flag --channel needs a value (-c, --channel CHANNEL); see 'ds log --help'\n"},
		{[]string{"log", "x.dss", "-c"}, 2, "ds: log: flag -c needs a value (-c, --channel CHANNEL); see 'ds log --help'\n"},
		{[]string{"tail", "-n", "ten", "x.dss"}, 2, "ds: tail: invalid value \"ten\" for -n: not a number; see 'ds tail --help'\n"},
		{[]string{"info", "--json=maybe", "x.dss"}, 2, "ds: info: invalid value \"maybe\" for --json: want true or false; see 'ds info --help'\n"},
		{[]string{"--nope"}, 2, "ds: unknown flag --nope; see 'ds --help'\n"},
		{[]string{"--verison"}, 2, "ds: unknown flag --verison (did you mean --version?); see 'ds --help'\n"},
		{[]string{"lgo", "x.dss"}, 2, "ds: unknown command \"lgo\" — did you mean \"log\"?\nRun 'ds --help' for usage.\n"},
		{[]string{"help", "lgo"}, 2, "ds: unknown command \"lgo\" — did you mean \"log\"?\nRun 'ds --help' for usage.\n"},
		{[]string{"--help", "lgo"}, 2, "ds: unknown command \"lgo\" — did you mean \"log\"?\nRun 'ds --help' for usage.\n"},
		{[]string{"frobnicate"}, 2, "ds: unknown command \"frobnicate\"\nRun 'ds --help' for usage.\n"},
		{[]string{"completion"}, 2, "ds: completion: name a shell: bash, zsh or fish\nRun 'ds completion --help' for usage.\n"},
		{[]string{"completion", "tcsh"}, 2, "ds: completion: unknown shell \"tcsh\" (bash, zsh or fish)\nRun 'ds completion --help' for usage.\n"},
		{[]string{"help", "completion", "tcsh"}, 2, "ds: help: ds completion has no command \"tcsh\"\nRun 'ds completion --help' for usage.\n"},
		{[]string{"completion", "bash", "--zsh"}, 2, "ds: completion bash: unknown flag --zsh; see 'ds completion bash --help'\n"},
		// ds wrap's own usage errors exit 125, never a status its command could give.
		{[]string{"wrap", "--nod", "x", "--", "true"}, 125, "ds: wrap: unknown flag --nod (did you mean --node?); see 'ds wrap --help'\n"},
		{[]string{"wrap", "--flush", "soon", "--", "true"}, 125, "ds: wrap: invalid value \"soon\" for --flush: time: invalid duration \"soon\"; see 'ds wrap --help'\n"},
	}
	for _, tt := range tests {
		code, stdout, stderr := runDS(t, tt.args...)
		if code != tt.code || stderr != tt.wantStderr || stdout != "" {
			t.Errorf("ds %s: exit %d, stdout %q, stderr:\n%s\nwant exit %d, stderr:\n%s", strings.Join(tt.args, " "), code, stdout, stderr, tt.code, tt.wantStderr)
		}
	}
}

// An input named after --help is an input, not a help topic.
func TestHelpAfterArgument(t *testing.T) {
	_, want, _ := runDS(t, "log", "--help")
	code, got, stderr := runDS(t, "log", "run.dss", "--help")
	if code != 0 || stderr != "" || got != want {
		t.Fatalf("ds log run.dss --help: exit %d, stderr %q, output:\n%s", code, stderr, got)
	}
}

func TestSuggest(t *testing.T) {
	cands := []string{"wrap", "emit", "log", "tail", "info", "json", "channel", "c", "n", "help"}
	tests := []struct{ typed, want string }{
		{"lgo", "log"},    // transposition
		{"LOG", "log"},    // case
		{"jsn", "json"},   // deletion
		{"jsonn", "json"}, // insertion
		{"tial", "tail"},
		{"inf", "info"},
		{"chanel", "channel"},
		{"chan", "channel"}, // the start of one name
		{"x", ""},           // one rune: anything would be a guess
		{"frobnicate", ""},
		{"wraplog", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := suggest(cands, tt.typed); got != tt.want {
			t.Errorf("suggest(%q) = %q, want %q", tt.typed, got, tt.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"", "abc", 3}, {"abc", "abc", 0}, {"lgo", "log", 1},
		{"kitten", "sitting", 3}, {"ca", "abc", 3}, {"é", "e", 1}, {"–", "-", 1},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestWrapWords(t *testing.T) {
	got := wrapWords("a bb ccc dddd eeeee", 8)
	want := []string{"a bb ccc", "dddd", "eeeee"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("wrapWords = %q, want %q", got, want)
	}
	if got := wrapWords("averyveryverylongword x", 5); got[0] != "averyveryverylongword" || got[1] != "x" {
		t.Fatalf("a word wider than the width gets a line of its own: %q", got)
	}
}

// The completion scripts name every command and every flag of every
// command, and each is valid for its shell (checked when the shell is
// installed).
func TestCompletionScripts(t *testing.T) {
	root := newRoot(nil, nil, nil)
	for _, sh := range []string{"bash", "zsh", "fish"} {
		code, script, stderr := runDS(t, "completion", sh)
		if code != 0 || stderr != "" || script == "" {
			t.Fatalf("ds completion %s: exit %d, stderr %q, %d bytes", sh, code, stderr, len(script))
		}
		for _, c := range root.Commands {
			if c.Hidden {
				continue
			}
			if !strings.Contains(script, c.Name) {
				t.Errorf("ds completion %s does not mention %s", sh, c.Name)
			}
			for _, f := range c.Flags {
				for _, n := range f.Names() {
					if !strings.Contains(script, n) {
						t.Errorf("ds completion %s does not mention %s's flag %s", sh, c.Name, dashed(n))
					}
				}
			}
		}
		path, err := exec.LookPath(sh)
		if err != nil {
			t.Logf("%s not installed: syntax not checked", sh)
			continue
		}
		file := filepath.Join(t.TempDir(), "ds."+sh)
		if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(path, "-n", file).CombinedOutput(); err != nil {
			t.Errorf("%s -n rejects ds completion %s: %v\n%s", sh, sh, err, out)
		}
	}
}

// The bash script completes commands, the flags of each command, the
// values of flags with a fixed set of them, and the command after ds wrap.
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	_, script, _ := runDS(t, "completion", "bash")
	file := filepath.Join(t.TempDir(), "ds.bash")
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	// A word " = " stands for bash's split of --flag=value at the =:
	// "--time = d" is --time=d with the cursor after d, "--time =" the
	// cursor right after the =.
	tests := []struct {
		line, want string
		exact      bool // the whole reply, not a part of it
	}{
		{line: "ds l", want: "log"},
		{line: "ds -", want: "-h --help -v --version"},
		{line: "ds log --j", want: "--json"},
		{line: "ds log run.dss --cr", want: "--cr-segments"},
		{line: "ds log -c ", want: ""},
		{line: "ds log -- --j", want: ""},
		{line: "ds tail -", want: "-n --lines"},
		{line: "ds wrap --comp", want: "--compress"},
		{line: "ds wrap --compress ", want: "zstd none auto"},
		{line: "ds wrap -o x.dss -- --help", want: ""},
		{line: "ds wrap make -", want: ""},
		{line: "ds completion ", want: "bash zsh fish"},
		{line: "ds help lo", want: "log"},
		// Values after = (issue 22 item 8: --time= offered file names).
		{line: "ds log --time = ", want: "wall utc since-start delta unix", exact: true},
		{line: "ds log --time =", want: "wall utc since-start delta unix", exact: true},
		{line: "ds log --time = d", want: "delta", exact: true},
		{line: "ds tail --time = s", want: "since-start", exact: true},
		{line: "ds log --json = ", want: "frames pretty frames,pretty", exact: true},
		{line: "ds log --time ", want: ""}, // the next word is an input
		{line: "ds wrap --compress = n", want: "none", exact: true},
		{line: "ds wrap --origin = B", want: "Bootstrap", exact: true},
		{line: "ds series --format = c", want: "csv", exact: true},
		{line: "ds merge --compress ", want: "zstd none", exact: true},
		{line: "ds log --color = a", want: "auto always", exact: true},
		// --flag=value is one flag, not the command or an input.
		{line: "ds wrap --label = x ech", want: "echo"},
		{line: "ds log --time = wall --j", want: "--json", exact: true},
	}
	for _, tt := range tests {
		words := strings.Fields(tt.line)
		if strings.HasSuffix(tt.line, " ") {
			words = append(words, "")
		}
		var quoted []string
		for _, w := range words {
			quoted = append(quoted, shQuote(w))
		}
		prog := "source " + shQuote(file) + "\nCOMP_WORDS=(" + strings.Join(quoted, " ") + ")\nCOMP_CWORD=" +
			strconv.Itoa(len(words)-1) + "\n_ds\necho \"${COMPREPLY[*]}\"\n"
		out, err := exec.Command(bash, "--norc", "--noprofile", "-c", prog).Output()
		if err != nil {
			t.Fatalf("%q: %v", tt.line, err)
		}
		got := strings.TrimSpace(string(out))
		if tt.exact && got != tt.want {
			t.Errorf("completing %q: %q, want exactly %q", tt.line, got, tt.want)
			continue
		}
		if !strings.Contains(got, tt.want) || tt.want == "" && got != "" {
			t.Errorf("completing %q: %q, want %q", tt.line, got, tt.want)
		}
	}
}

package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/urfave/cli/v3"
)

// completionShells are the shells ds completion writes scripts for, in the
// order help lists them.
var completionShells = []struct {
	name, usage, load string
	script            func(*cli.Command) string
}{
	{"bash", "print the bash completion script", "source <(ds completion bash)   # in ~/.bashrc", bashCompletion},
	{"zsh", "print the zsh completion script", "source <(ds completion zsh)    # in ~/.zshrc, after compinit", zshCompletion},
	{"fish", "print the fish completion script", "ds completion fish > ~/.config/fish/completions/ds.fish", fishCompletion},
}

// completionCommand is ds completion SHELL. The scripts are generated from
// the command tree, so they offer the commands and flags of the ds that
// printed them, and they complete without running ds. (urfave/cli's own
// completion asks the program at every Tab through a trailing
// --generate-shell-completion word, which ds wrap would take from the
// command line of its child.)
func completionCommand() *cli.Command {
	c := &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script (bash, zsh or fish)",
		UsageText: "ds completion bash|zsh|fish",
		Description: `Prints a script that makes the shell complete ds's commands, their flags,
the values of flags that take a fixed set of them (--compress zstd, and
after = too: --time=delta, --json=frames), file names where a command
takes files, the channel names of the inputs on the command line for
-c/--channel (the script runs ds completion channels INPUT… for them),
and the command line after ds wrap. Load it when the shell starts:

   source <(ds completion bash)   # in ~/.bashrc
   source <(ds completion zsh)    # in ~/.zshrc, after compinit
   ds completion fish > ~/.config/fish/completions/ds.fish

The script lists the commands and flags of the ds that printed it: print
it again after an upgrade (sourcing it at shell start does).`,
		Action: func(_ context.Context, c *cli.Command) error {
			if c.Args().Len() == 0 {
				return usagef("completion: name a shell: bash, zsh or fish")
			}
			return usagef("completion: unknown shell %q (bash, zsh or fish)", c.Args().First())
		},
	}
	for _, sh := range completionShells {
		script := sh.script
		c.Commands = append(c.Commands, &cli.Command{
			Name:        sh.name,
			Usage:       sh.usage,
			UsageText:   "ds completion " + sh.name,
			Description: "Load it with:\n\n   " + sh.load,
			Action: func(_ context.Context, c *cli.Command) error {
				if c.Args().Len() > 0 {
					return usagef("completion %s: takes no arguments", c.Name)
				}
				_, err := fmt.Fprint(c.Root().Writer, script(c.Root()))
				return err
			},
		})
	}
	c.Commands = append(c.Commands, &cli.Command{
		Name:      "channels",
		Usage:     "print the channel names of the inputs, for the completion scripts",
		UsageText: "ds completion channels INPUT…",
		Hidden:    true,
		Description: `Prints the names of the channels of the inputs (read as ds info reads
them: a capture file from its end), one a line, sorted, then the prefixes
ending in .* that -c takes (proc.*, proc.make.*). The completion scripts
run it for -c/--channel.`,
		Action: completionChannelsAction,
	})
	return c
}

// completionChannelsAction is ds completion channels INPUT…: the channel
// names of the inputs and their prefixes (channelWords), one a line.
func completionChannelsAction(ctx context.Context, c *cli.Command) error {
	set, err := newSources(c)
	if err != nil {
		return err
	}
	root := c.Root()
	r := newInputs(set, root.Reader, root.Writer, root.ErrWriter)
	names, err := r.Channels(ctx, c.Args().Slice())
	var b strings.Builder
	for _, w := range channelWords(names) {
		b.WriteString(w + "\n")
	}
	if _, werr := io.WriteString(root.Writer, b.String()); werr != nil && err == nil {
		err = werr
	}
	return err
}

// channelWords returns names (sorted) followed by the prefixes -c takes
// for them, each once and sorted: "proc.make.stdout" adds "proc.*" and
// "proc.make.*".
func channelWords(names []string) []string {
	seen := map[string]bool{}
	var prefixes []string
	for _, n := range names {
		for i := 0; i < len(n); i++ {
			if n[i] != '.' || i == 0 {
				continue
			}
			if p := n[:i] + ".*"; !seen[p] {
				seen[p] = true
				prefixes = append(prefixes, p)
			}
		}
	}
	slices.Sort(prefixes)
	return append(slices.Clip(names), prefixes...)
}

// What the arguments of a command are, for completion.
const (
	argFiles    = "files"    // input files (the default)
	argNone     = "none"     // no arguments (input on stdin)
	argCommand  = "command"  // a command line to run (ds wrap)
	argCommands = "commands" // ds's command names (ds help)
)

// completionArgs says what the arguments of the commands that do not take
// files are; commands with subcommands take their names.
var completionArgs = map[string]string{
	"wrap": argCommand,
	"emit": argNone,
	"host": argNone,
	"help": argCommands,
}

// flagChoices lists the values of flags (by long name, or "command.name"
// where one command's flag differs) that take one of a fixed set, for
// completion; a flag whose value is optional (--time[=WHEN]) takes them
// after = only. A flag whose placeholder is a|b|c takes those.
var flagChoices = map[string][]string{
	"compress":       {"zstd", "none", "auto"},
	"merge.compress": {"zstd", "none"},
	"origin":         {"RemoteNode", "Orchestrator", "Bootstrap"},
	"content":        {"text", "json", "bytes"},
	"format":         {"json", "csv", "tsv"},
	"series.format":  {"json", "csv", "tsv", "svg"},
	"color":          {"auto", "always", "never"},
	"time":           {"wall", "utc", "since-start", "delta", "unix"},
	"json":           {"frames", "pretty", "frames,pretty"},
}

// choicesOf returns flagChoices for flag long of command cmd.
func choicesOf(cmd, long string) []string {
	if c, ok := flagChoices[cmd+"."+long]; ok {
		return c
	}
	return flagChoices[long]
}

// compFlag is a flag as the completion scripts see it.
type compFlag struct {
	flagInfo
	value    bool     // takes a value (in the next word, or after =)
	files    bool     // the value is a file or directory name
	channels bool     // the value is a channel of the inputs (-c of a view)
	choices  []string // the values it takes (after = only when optional), when they are a fixed set
}

// compCommand is a command as the completion scripts see it.
type compCommand struct {
	name, usage string
	flags       []compFlag
	args        string   // argFiles, argNone, argCommand, argCommands or "words"
	words       []string // the subcommands, for args "words"
}

// completionTree lists root's visible commands (and root itself, first,
// with its commands as words) for the script generators.
func completionTree(root *cli.Command) []compCommand {
	var names []string
	for _, c := range root.Commands {
		if !c.Hidden {
			names = append(names, c.Name)
		}
	}
	out := []compCommand{{name: "", flags: compFlags(root), args: "words", words: names}}
	for _, c := range root.Commands {
		if c.Hidden {
			continue
		}
		cc := compCommand{name: c.Name, usage: c.Usage, flags: compFlags(c), args: argFiles}
		if a, ok := completionArgs[c.Name]; ok {
			cc.args = a
		}
		if cc.args == argFiles {
			// A view's -c names a channel of its inputs (ds emit's
			// names the channel it creates).
			for i := range cc.flags {
				if f := &cc.flags[i]; f.value && !f.files && len(f.choices) == 0 && slices.Contains(f.long, "channel") {
					f.channels = true
				}
			}
		}
		if cc.args == argCommands {
			cc.args, cc.words = "words", names
		}
		for _, sub := range c.Commands {
			if !sub.Hidden {
				cc.args = "words"
				cc.words = append(cc.words, sub.Name)
			}
		}
		out = append(out, cc)
	}
	return out
}

func compFlags(c *cli.Command) []compFlag {
	var out []compFlag
	for _, f := range c.VisibleFlags() {
		cf := compFlag{flagInfo: describeFlag(f)}
		if df, ok := f.(cli.DocGenerationFlag); ok && df.TakesValue() && !cf.optional {
			cf.value = true // in the next word (or after =)
		}
		if cf.value || cf.optional {
			ph := cf.placeholder
			switch {
			case strings.Contains(ph, "|"):
				cf.choices = strings.Split(ph, "|")
			case len(cf.long) > 0 && choicesOf(c.Name, cf.long[0]) != nil:
				cf.choices = choicesOf(c.Name, cf.long[0])
			case cf.optional:
			case strings.Contains(ph, "FILE"), strings.Contains(ph, "DIR"), ph == "OUT", strings.Contains(ph, "PATH") && !strings.Contains(cf.usage, "gjson"):
				cf.files = true
			}
		}
		out = append(out, cf)
	}
	return out
}

func (cc compCommand) flagWords() []string {
	var w []string
	for _, f := range cc.flags {
		w = append(w, f.names()...)
	}
	return w
}

func (cc compCommand) valueFlagWords() []string {
	var w []string
	for _, f := range cc.flags {
		if f.value {
			w = append(w, f.names()...)
		}
	}
	return w
}

// bashCompletion is the bash script: a _ds function for complete -F, with
// readline's file name completion as the fallback (complete -o default).
func bashCompletion(root *cli.Command) string {
	var b strings.Builder
	fmt.Fprintf(&b, `# bash completion for ds, generated by ds completion bash (ds %s).
# Load it with: source <(ds completion bash)

# __ds_args FIRST FLAGS VALUE_FLAGS ARGS completes a word of a command whose
# own words start at FIRST: FLAGS are its flags, VALUE_FLAGS those that take
# a value in the next word, ARGS what its arguments are: files (readline
# completes them), none, command (a command line, as ds wrap takes) or a
# list of words.
__ds_args() {
	local first=$1 flags=$2 vflags=" $3 " args=$4
	local cur=${COMP_WORDS[COMP_CWORD]} i w argi=0 dd=0
	for ((i = first; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		if [[ $w == -- ]]; then
			dd=1 argi=$((i + 1))
			break
		fi
		if [[ $w == = ]]; then
			((i++)) # --flag=value: bash splits it at =
			continue
		fi
		if [[ $w == -* ]]; then
			[[ ${COMP_WORDS[i+1]} != = && $vflags == *" $w "* ]] && ((i++))
			continue
		fi
		argi=$i
		break
	done
	if [[ $args == command ]] && ((argi > 0 && argi < COMP_CWORD)); then
		# the command's own arguments: complete them as bash would
		declare -F _command_offset >/dev/null && _command_offset "$argi"
		return
	fi
	# flags: before --, and for ds wrap only before its command
	if [[ $cur == -* ]] && ((dd == 0)) && [[ $args != command || $argi == 0 ]]; then
		COMPREPLY=($(compgen -W "$flags" -- "$cur"))
		return
	fi
	case $args in
	files) ;;
	none) compopt +o default 2>/dev/null ;;
	command) COMPREPLY=($(compgen -c -- "$cur")) ;;
	*) COMPREPLY=($(compgen -W "$args" -- "$cur")) ;;
	esac
}

# __ds_inputs FIRST VALUE_FLAGS prints, one a line, the words of the
# command line from FIRST on that name inputs (not a flag, not a flag's
# value, not the word being completed), for __ds_channels.
__ds_inputs() {
	local first=$1 vflags=" $2 " i w
	for ((i = first; i < ${#COMP_WORDS[@]}; i++)); do
		((i == COMP_CWORD)) && continue
		w=${COMP_WORDS[i]}
		if [[ $w == = ]]; then
			((i++))
			continue
		fi
		if [[ $w == -* ]]; then
			[[ ${COMP_WORDS[i+1]} != = && $vflags == *" $w "* ]] && ((i++))
			continue
		fi
		[[ $w == "~/"* ]] && w=$HOME/${w#"~/"}
		printf '%%s\n' "$w"
	done
}

# __ds_channels FIRST VALUE_FLAGS completes a channel name (for -c) from
# the inputs on the command line: ds completion channels reads them.
__ds_channels() {
	local -a in
	compopt +o default 2>/dev/null
	mapfile -t in < <(__ds_inputs "$1" "$2")
	((${#in[@]})) || return
	local IFS=$'\n' # a name a line, and proc.* not a glob
	mapfile -t COMPREPLY < <(compgen -W "$(command ds completion channels -- "${in[@]}" 2>/dev/null)" -- "$cur")
}

_ds() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
	local i first=1 cmd= eq=
	COMPREPLY=()
	# --flag=value: bash splits the word at =, and the value is completed
	# as the flag's; eq is the flag.
	if [[ $cur == = ]]; then
		eq=$prev cur=
	elif [[ $prev == = ]] && ((COMP_CWORD > 1)); then
		eq=${COMP_WORDS[COMP_CWORD-2]} prev=$eq
	fi
	for ((i = 1; i < COMP_CWORD; i++)); do
		[[ ${COMP_WORDS[i]} == -* ]] && continue
		cmd=${COMP_WORDS[i]} first=$((i + 1))
		break
	done
	case $cmd in
`, root.Version)
	for _, cc := range completionTree(root) {
		fmt.Fprintf(&b, "\t%s)\n", shQuote(cc.name))
		vflags := shQuote(strings.Join(cc.valueFlagWords(), " "))
		var cases, eqCases []string
		for _, f := range cc.flags {
			if !f.value && !(f.optional && len(f.choices) > 0) {
				continue
			}
			pat := strings.Join(f.names(), "|")
			var c string
			switch {
			case f.files:
				c = fmt.Sprintf("\t\t%s) return ;;\n", pat)
			case f.channels:
				c = fmt.Sprintf("\t\t%s) __ds_channels $first %s; return ;;\n", pat, vflags)
			case len(f.choices) > 0:
				c = fmt.Sprintf("\t\t%s) COMPREPLY=($(compgen -W %s -- \"$cur\")); return ;;\n", pat, shQuote(strings.Join(f.choices, " ")))
			default:
				c = fmt.Sprintf("\t\t%s) compopt +o default 2>/dev/null; return ;;\n", pat)
			}
			if f.value {
				cases = append(cases, c)
			} else {
				eqCases = append(eqCases, c) // its value only after =
			}
		}
		if len(cases) > 0 {
			b.WriteString("\t\tcase $prev in\n")
			for _, c := range cases {
				b.WriteString("\t" + c)
			}
			b.WriteString("\t\tesac\n")
		}
		if len(eqCases) > 0 {
			b.WriteString("\t\tcase $eq in\n")
			for _, c := range eqCases {
				b.WriteString("\t" + c)
			}
			b.WriteString("\t\tesac\n")
		}
		args := cc.args
		if args == "words" {
			args = strings.Join(cc.words, " ")
		}
		fmt.Fprintf(&b, "\t\t__ds_args $first %s %s %s\n\t\t;;\n",
			shQuote(strings.Join(cc.flagWords(), " ")), vflags, shQuote(args))
	}
	b.WriteString("\tesac\n}\n\ncomplete -o default -F _ds ds\n")
	return b.String()
}

// zshCompletion is the zsh script: an _ds function for compdef, built on
// _arguments, that also works from $fpath.
func zshCompletion(root *cli.Command) string {
	tree := completionTree(root)
	var b strings.Builder
	fmt.Fprintf(&b, `#compdef ds
# zsh completion for ds, generated by ds completion zsh (ds %s).
# Load it with: source <(ds completion zsh)   (after compinit)
# or save it as _ds in a directory of $fpath.

# __ds_channels completes a channel name (for -c) from the inputs on the
# command line (its words that name files or directories): ds completion
# channels reads them.
__ds_channels() {
	local -a in chans
	local i w
	for ((i = 2; i <= $#words; i++)); do
		((i == CURRENT)) && continue
		w=${words[i]/#\~/$HOME}
		[[ $w == -* ]] && continue
		[[ -e $w ]] && in+=("$w")
	done
	(($#in)) || return 1
	chans=(${(f)"$(command ds completion channels -- "${in[@]}" 2>/dev/null)"})
	compadd -a chans
}

_ds() {
	local curcontext=$curcontext state line ret=1
	typeset -A opt_args
	_arguments -C \
`, root.Version)
	for _, f := range tree[0].flags {
		fmt.Fprintf(&b, "\t\t%s \\\n", zshFlagSpec(f, "(- :)"))
	}
	b.WriteString("\t\t'1: :->command' \\\n\t\t'*:: :->args' && ret=0\n")
	b.WriteString("\tcase $state in\n\tcommand)\n\t\tlocal -a cmds=(\n")
	for _, cc := range tree[1:] {
		fmt.Fprintf(&b, "\t\t\t%s\n", shQuote(strings.ReplaceAll(cc.name, ":", `\:`)+":"+cc.usage))
	}
	b.WriteString("\t\t)\n\t\t_describe -t commands 'ds command' cmds && ret=0\n\t\t;;\n")
	b.WriteString("\targs)\n\t\tcurcontext=${curcontext%:*:*}:ds-$words[1]:\n\t\tcase $words[1] in\n")
	for _, cc := range tree[1:] {
		fmt.Fprintf(&b, "\t\t%s)\n\t\t\t_arguments -S", shQuote(cc.name))
		if cc.args == argCommand {
			b.WriteString(" -A '-*'")
		}
		b.WriteString(" \\\n")
		for _, f := range cc.flags {
			fmt.Fprintf(&b, "\t\t\t\t%s \\\n", zshFlagSpec(f, ""))
		}
		switch cc.args {
		case argFiles:
			b.WriteString("\t\t\t\t'*:input:_files' \\\n")
		case argCommand:
			b.WriteString("\t\t\t\t'1:command:_command_names -e' \\\n\t\t\t\t'*::arguments:_normal' \\\n")
		case "words":
			fmt.Fprintf(&b, "\t\t\t\t%s \\\n", shQuote("1:command:("+strings.Join(cc.words, " ")+")"))
		}
		b.WriteString("\t\t\t\t&& ret=0\n\t\t\t;;\n")
	}
	b.WriteString("\t\tesac\n\t\t;;\n\tesac\n\treturn ret\n}\n\n")
	b.WriteString("if [ \"$funcstack[1]\" = \"_ds\" ]; then\n\t_ds \"$@\"\nelse\n\tcompdef _ds ds\nfi\n")
	return b.String()
}

// zshFlagSpec is f as _arguments takes it, one spec per name joined by
// brace expansion: '(-c --channel)'{-c+,--channel=}'[usage]:CHANNEL: '.
// A flag that may be repeated has no exclusion list and a leading *;
// exclude overrides the exclusion list (ds's own --help and --version).
func zshFlagSpec(f compFlag, exclude string) string {
	var names []string
	for _, n := range f.names() {
		switch {
		case f.optional && strings.HasPrefix(n, "--"):
			n += "=-" // a value only after = (--time=delta)
		case f.value && strings.HasPrefix(n, "--"):
			n += "="
		case f.value:
			n += "+"
		}
		names = append(names, n)
	}
	excl := exclude
	if excl == "" && !f.multi {
		excl = "(" + strings.Join(f.names(), " ") + ")"
	}
	if f.multi {
		excl = "*"
	}
	desc := strings.NewReplacer(`\`, `\\`, `[`, `\[`, `]`, `\]`).Replace(f.help())
	rest := "[" + desc + "]"
	if f.value || f.optional {
		action := " "
		switch {
		case f.files:
			action = "_files"
		case f.channels:
			action = "__ds_channels"
		case len(f.choices) > 0:
			action = "(" + strings.Join(f.choices, " ") + ")"
		}
		sep := ":"
		if f.optional {
			sep = "::" // the value may be left out
		}
		rest += sep + strings.ReplaceAll(f.placeholder, ":", `\:`) + ":" + action
	}
	spec := shQuote(excl)
	if len(names) == 1 {
		spec += names[0]
	} else {
		spec += "{" + strings.Join(names, ",") + "}"
	}
	return spec + shQuote(rest)
}

// fishCompletion is the fish script: complete lines conditioned on the ds
// command on the line (__ds_using).
func fishCompletion(root *cli.Command) string {
	tree := completionTree(root)
	var b strings.Builder
	fmt.Fprintf(&b, `# fish completion for ds, generated by ds completion fish (ds %s).
# Save it with: ds completion fish > ~/.config/fish/completions/ds.fish

# __ds_command prints the ds command on the command line (the first word
# after ds that is not a flag), and fails when there is none yet.
function __ds_command
    set -l words (commandline -opc)
    set -e words[1]
    for w in $words
        switch $w
            case '-*'
                continue
        end
        echo $w
        return 0
    end
    return 1
end

function __ds_using
    set -l c (__ds_command)
    and test "$c" = "$argv[1]"
end

# __ds_channels prints the channel names (for -c) of the inputs on the
# command line (its words that name files or directories), which ds
# completion channels reads.
function __ds_channels
    set -l words (commandline -op)
    set -l in
    for w in $words[2..-1]
        string match -q -- '-*' $w; and continue
        test -e "$w"; and set -a in $w
    end
    test (count $in) -gt 0; and command ds completion channels -- $in 2>/dev/null
end

complete -c ds -e
complete -c ds -n 'not __ds_command' -f
`, root.Version)
	for _, cc := range tree[1:] {
		fmt.Fprintf(&b, "complete -c ds -n 'not __ds_command' -a %s -d %s\n", fishQuote(cc.name), fishQuote(cc.usage))
	}
	for _, f := range tree[0].flags {
		fmt.Fprintf(&b, "complete -c ds -n 'not __ds_command'%s\n", fishFlag(f))
	}
	for _, cc := range tree[1:] {
		cond := fishQuote("__ds_using " + cc.name)
		for _, f := range cc.flags {
			fmt.Fprintf(&b, "complete -c ds -n %s%s\n", cond, fishFlag(f))
			if f.optional && len(f.choices) > 0 && len(f.long) > 0 {
				// A value only after = (--time=delta): whole words.
				opt := "--" + f.long[0] + "="
				var words []string
				for _, c := range f.choices {
					words = append(words, opt+c)
				}
				eqCond := fishQuote("__ds_using " + cc.name + "; and string match -q -- '" + opt + "*' (commandline -ct)")
				fmt.Fprintf(&b, "complete -c ds -n %s -f -a %s\n", eqCond, fishQuote(strings.Join(words, " ")))
			}
		}
		switch cc.args {
		case argNone:
			fmt.Fprintf(&b, "complete -c ds -n %s -f\n", cond)
		case argCommand:
			skip := []string{"--fcs-skip=2", "--"}
			skip = append(skip, cc.valueFlagWords()...)
			fmt.Fprintf(&b, "complete -c ds -n %s -x -a %s\n", cond, fishQuote("(__fish_complete_subcommand "+strings.Join(skip, " ")+")"))
		case "words":
			fmt.Fprintf(&b, "complete -c ds -n %s -f -a %s\n", cond, fishQuote(strings.Join(cc.words, " ")))
		}
	}
	return b.String()
}

// fishFlag is the part of a fish complete line that describes f: its
// names, whether it takes a value (-r, -x without file names) and which.
func fishFlag(f compFlag) string {
	var b strings.Builder
	for _, n := range f.short {
		b.WriteString(" -s " + fishQuote(n))
	}
	for _, n := range f.long {
		b.WriteString(" -l " + fishQuote(n))
	}
	switch {
	case f.value && f.files:
		b.WriteString(" -r -F")
	case f.value && f.channels:
		b.WriteString(" -x -a '(__ds_channels)'")
	case f.value:
		b.WriteString(" -x")
		if len(f.choices) > 0 {
			b.WriteString(" -a " + fishQuote(strings.Join(f.choices, " ")))
		}
	}
	b.WriteString(" -d " + fishQuote(f.help()))
	return b.String()
}

// shQuote quotes s for sh, bash and zsh: single-quoted, each single quote
// in s closed, escaped and reopened.
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// fishQuote quotes s for fish, whose single quotes escape only \ and '.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

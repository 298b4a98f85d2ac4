package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/urfave/cli/v3"
)

// version is set at link time (-ldflags "-X main.version=…"); otherwise it is
// taken from the module build info.
var version = ""

func dsVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "0.1.0-dev"
}

const rootDescription = `ds records what a process, a host or a fleet did into DSS captures and
prints them back. Producers register named channels and submit opaque
bytes; nothing between a producer and a view interprets a payload.

ds help COMMAND, or ds COMMAND --help, shows a command's options and
examples. Flags may follow arguments (ds log run.dss --json); a -- ends
them. Short flags take their value attached (ds tail -n1) and run
together (ds log -rn5), as getopt(3) takes them. ds completion
bash|zsh|fish prints a shell completion script.

EXIT STATUS
   0  success
   1  runtime or I/O failure
   2  usage error
   3  damaged or truncated input (everything readable is still printed)
   4  the inputs read fine but show a loss or a conflict (ds gaps --check;
      damage, 3, wins over it)
ds wrap exits with its command's status instead (125: ds wrap's own
failure). ds diff exits as diff(1) does: 0 same, 1 different, 2 trouble
(usage, an input that cannot be read); 3 damaged input, over 1.`

// helpWidth is the width, in runes, that every help screen fits.
const helpWidth = 80

// metaArgs is the key, in the root command's Metadata, of the command line
// being run: usage errors quote a flag as it was typed.
const metaArgs = "ds.args"

func init() {
	// Every help screen (ds --help, ds CMD --help, ds help CMD) is drawn by
	// helpText, so that they agree and fit in 80 columns. These are the
	// only urfave/cli globals ds sets; they are set once, here.
	cli.HelpPrinter = printHelp
	cli.ShowCommandHelp = showCommandHelp
}

// newRoot builds the command tree. Commands are listed here only once they
// exist.
func newRoot(stdin io.Reader, stdout, stderr io.Writer) *cli.Command {
	root := &cli.Command{
		Name:        "ds",
		Usage:       "capture and read datastream telemetry",
		UsageText:   "ds [--help] [--version] COMMAND [ARGS…]",
		Description: rootDescription,
		Version:     dsVersion(),
		Reader:      stdin,
		Writer:      stdout,
		ErrWriter:   stderr,
		// ds's own help command (helpCommand) stands for urfave's, which
		// would also be added under every command, where "help" and "h"
		// can name input files. Shell completion is generated from the
		// tree (completion.go), not urfave's --generate-shell-completion
		// protocol, which would take that word from ds wrap's child.
		HideHelpCommand: true,
		Commands:        append(commands(), completionCommand(), helpCommand()),
		ExitErrHandler:  func(context.Context, *cli.Command, error) {},
	}
	root.Action = func(_ context.Context, c *cli.Command) error {
		if c.Args().Len() > 0 {
			return unknownCommand(c, c.Args().First())
		}
		return usagef("no command given")
	}
	setUsageErrors(root)
	for _, c := range root.Commands {
		if c.Name == "wrap" {
			// ds wrap's own failures, usage included, exit 125 so that they
			// cannot be taken for the child's status.
			c.OnUsageError = func(_ context.Context, c *cli.Command, err error, _ bool) error {
				return &wrapError{flagUsageError(c, err)}
			}
		}
	}
	return root
}

// setUsageErrors makes every command report a bad flag as a usage error
// (exit 2, one line on stderr naming the flag, see flagUsageError) instead
// of urfave's default of printing help to stdout, and points the usage
// errors of its action at its own help.
func setUsageErrors(c *cli.Command) {
	c.OnUsageError = func(_ context.Context, c *cli.Command, err error, _ bool) error {
		return flagUsageError(c, err)
	}
	if action := c.Action; action != nil {
		c.Action = func(ctx context.Context, c *cli.Command) error {
			err := action(ctx, c)
			var ue *usageError
			if errors.As(err, &ue) && ue.cmd == "" {
				ue.cmd = c.FullName()
			}
			return err
		}
	}
	for _, sub := range c.Commands {
		setUsageErrors(sub)
	}
}

// run is main without os.Exit, for tests: it runs ds with args (args[0] is
// the program name) and returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRoot(stdin, stdout, stderr)
	root.Commands = needed(root.Commands, args)
	root.Metadata = map[string]any{metaArgs: args}
	err := root.Run(context.Background(), splitAttached(root, args))
	return exitCode(err, stderr)
}

// needed returns, of the root's commands, those that running args needs:
// the one args[1] names, none for ds --version, all otherwise (ds alone,
// ds --help, ds help, ds completion, a typo to suggest a name for). Before
// it runs anything, urfave/cli prepares every command in the tree (the help
// text of each flag), which took half of the start-up of ds --version: in a
// shell loop that calls ds for each file, each call pays only for its own
// command (issue 23 item 4).
func needed(cmds []*cli.Command, args []string) []*cli.Command {
	if len(args) < 2 {
		return cmds
	}
	switch name := args[1]; name {
	case "--version", "-v":
		if len(args) == 2 {
			return nil
		}
	case "help", "completion":
	default:
		for _, c := range cmds {
			if c.HasName(name) {
				return []*cli.Command{c}
			}
		}
	}
	return cmds
}

// helpCommand is ds help [COMMAND…]: the help of ds, or of a command.
func helpCommand() *cli.Command {
	return &cli.Command{
		Name:      "help",
		Usage:     "show the help of ds or of a command",
		UsageText: "ds help [COMMAND [SUBCOMMAND]]",
		Description: `ds help COMMAND prints what ds COMMAND --help prints: the command's
usage, description, examples and options. ds help alone prints what
ds --help prints.`,
		Action: func(_ context.Context, c *cli.Command) error {
			root := c.Root()
			target := root
			for _, name := range c.Args().Slice() {
				sub := target.Command(name)
				if sub == nil || sub.Hidden {
					if target == root {
						return unknownCommand(root, name)
					}
					return &usageError{err: fmt.Errorf("help: %s has no command %q", target.FullName(), name), cmd: target.FullName()}
				}
				target = sub
			}
			printHelp(root.Writer, "", target)
			return nil
		},
	}
}

// unknownCommand is the usage error for a command name that c does not
// have, with the nearest name it has when one is close (a typo).
func unknownCommand(c *cli.Command, name string) error {
	var names []string
	for _, sub := range c.Commands {
		if !sub.Hidden {
			names = append(names, sub.Names()...)
		}
	}
	msg := fmt.Sprintf("unknown command %q", name)
	if s := suggest(names, name); s != "" {
		msg += fmt.Sprintf(" — did you mean %q?", s)
	}
	return &usageError{err: errors.New(msg), cmd: c.FullName()}
}

// The messages of urfave/cli v3.14.0's flag parser (command_parse.go,
// command.go) that flagUsageError rewrites.
const (
	urfaveUnknownFlag = "flag provided but not defined: -"
	urfaveNoValue     = "flag needs an argument: "
)

var (
	urfaveBadValue = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?s)^invalid value (".*") for flag -([^\s:]+): (.*)$`)
	})
	strconvPrefix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^strconv\.\w+: parsing ".*?": `) })
)

// flagUsageError rewrites a flag error of urfave/cli into one line that
// names the command, the flag as it was typed, the nearest flag the command
// has (for a typo) and where its help is:
//
//	log: unknown flag --jsn (did you mean --json?); see 'ds log --help'
//	log: flag -c needs a value (-c, --channel CHANNEL); see 'ds log --help'
//	tail: invalid value "x" for -n: not a number; see 'ds tail --help'
func flagUsageError(c *cli.Command, err error) error {
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, urfaveUnknownFlag):
		name := strings.TrimPrefix(msg, urfaveUnknownFlag)
		msg = "unknown flag " + typedFlag(c, name)
		var names []string
		for _, f := range c.VisibleFlags() {
			names = append(names, f.Names()...)
		}
		if s := suggest(names, name); s != "" {
			msg += " (did you mean " + dashed(s) + "?)"
		}
	case strings.HasPrefix(msg, urfaveNoValue):
		typed := strings.TrimPrefix(msg, urfaveNoValue)
		if !strings.HasPrefix(typed, "-") {
			typed = dashed(typed)
		}
		msg = "flag " + typed + " needs a value"
		if f := lookupFlag(c, strings.TrimLeft(typed, "-")); f != nil {
			msg += " (" + describeFlag(f).head() + ")"
		}
	default:
		if m := urfaveBadValue().FindStringSubmatch(msg); m != nil {
			why := strconvPrefix().ReplaceAllString(m[3], "")
			if why == "invalid syntax" {
				why = "not a number"
			}
			if _, ok := lookupFlag(c, m[2]).(*cli.BoolFlag); ok {
				why = "want true or false"
			}
			msg = fmt.Sprintf("invalid value %s for %s: %s", m[1], dashed(m[2]), why)
		}
	}
	name := c.FullName()
	if c.Root() != c {
		msg = strings.TrimPrefix(name, c.Root().Name+" ") + ": " + msg
	}
	return &usageError{err: fmt.Errorf("%s; see '%s --help'", msg, name), cmd: name, hinted: true}
}

// typedFlag returns the flag urfave calls name as the user typed it
// (-jsn or --jsn, without any =VALUE), from the command line that run
// recorded in the root's Metadata.
func typedFlag(c *cli.Command, name string) string {
	args, _ := c.Root().Metadata[metaArgs].([]string)
	if len(args) > 0 {
		args = args[1:]
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		// urfave takes one dash off -x and two off --x.
		var n string
		switch {
		case strings.HasPrefix(a, "--"):
			n = a[2:]
		case strings.HasPrefix(a, "-"):
			n = a[1:]
		default:
			continue
		}
		typed := a
		if i := strings.IndexByte(n, '='); i >= 0 {
			n = n[:i]
			typed = a[:strings.IndexByte(a, '=')]
		}
		if n == name {
			return typed
		}
	}
	return dashed(name)
}

// dashed spells a flag name as help shows it: -c for one rune, --channel
// otherwise.
func dashed(name string) string {
	if utf8.RuneCountInString(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

func lookupFlag(c *cli.Command, name string) cli.Flag {
	for _, f := range c.VisibleFlags() {
		if slices.Contains(f.Names(), name) {
			return f
		}
	}
	return nil
}

// suggest returns the candidate nearest to typed, a likely typo of it, or
// "" when none is near enough: one edit (an insertion, deletion,
// substitution, or transposition of neighbours) per three runes of typed,
// ignoring case, or typed being the start of exactly one candidate. Ties
// go to the earlier candidate.
func suggest(candidates []string, typed string) string {
	t := strings.ToLower(typed)
	n := utf8.RuneCountInString(t)
	best, bestD := "", (n+1)/3+1
	var prefixed []string
	for _, c := range candidates {
		lc := strings.ToLower(c)
		if n >= 2 && strings.HasPrefix(lc, t) && !slices.Contains(prefixed, c) {
			prefixed = append(prefixed, c)
		}
		if d := editDistance(t, lc); d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" && len(prefixed) == 1 {
		best = prefixed[0]
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b,
// in runes: insertions, deletions, substitutions and transpositions of
// adjacent runes each cost 1.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// d[i][j] is the distance between ra[:i] and rb[:j].
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// printHelp is ds's cli.HelpPrinter: it ignores urfave's template and
// writes helpText of the command. A failed write (ds --help | head) is not
// reported.
func printHelp(w io.Writer, _ string, data any) {
	if c, ok := data.(*cli.Command); ok {
		_, _ = io.WriteString(w, helpText(c))
	}
}

// showCommandHelp is ds's cli.ShowCommandHelp, called for ds --help NAME
// and ds CMD --help ARG: the help of c's command NAME when it has one; for
// ds itself, an unknown command is a usage error; under a command, ARG is
// an input (ds log --help run.dss), so the command's own help is shown.
func showCommandHelp(_ context.Context, c *cli.Command, name string) error {
	if sub := c.Command(name); sub != nil {
		printHelp(c.Root().Writer, "", sub)
		return nil
	}
	if c.Root() == c {
		return unknownCommand(c, name)
	}
	printHelp(c.Root().Writer, "", c)
	return nil
}

// helpText renders the help of c, the same for ds CMD --help and ds help
// CMD: NAME, USAGE, (VERSION), DESCRIPTION, EXAMPLES (examples.go),
// COMMANDS and OPTIONS, in urfave's section layout, every line at most
// helpWidth runes (flag and command usages are wrapped in their column,
// description lines too long are wrapped at their own indent). c must
// have been set up by Run (parents linked, the help flag added).
func helpText(c *cli.Command) string {
	var b strings.Builder
	isRoot := c.Root() == c
	name := c.FullName()

	b.WriteString("NAME:\n")
	head := name
	if c.Usage != "" {
		head += " - " + c.Usage
	}
	writeWrapped(&b, head, 3, 3+utf8.RuneCountInString(name)+3)

	b.WriteString("\nUSAGE:\n")
	usage := c.UsageText
	if usage == "" {
		usage = name + " [OPTIONS]"
	}
	for _, l := range strings.Split(strings.TrimSpace(usage), "\n") {
		writeWrapped(&b, strings.TrimSpace(l), 3, 6)
	}

	if isRoot && c.Version != "" && !c.HideVersion {
		fmt.Fprintf(&b, "\nVERSION:\n   %s\n", c.Version)
	}

	if c.Description != "" {
		b.WriteString("\nDESCRIPTION:\n")
		for _, l := range strings.Split(strings.TrimSpace(c.Description), "\n") {
			if strings.TrimSpace(l) == "" {
				b.WriteString("\n")
				continue
			}
			if 3+utf8.RuneCountInString(l) <= helpWidth {
				b.WriteString("   " + l + "\n") // as written: columns kept
				continue
			}
			indent := 3 + len(l) - len(strings.TrimLeft(l, " "))
			writeWrapped(&b, strings.TrimSpace(l), indent, indent)
		}
	}

	if ex := commandExamples(c); len(ex) > 0 {
		b.WriteString("\nEXAMPLES:\n")
		for i, e := range ex {
			if i > 0 {
				b.WriteString("\n")
			}
			writeWrapped(&b, e.Explanation, 3, 3)
			for _, l := range strings.Split(e.Command, "\n") {
				b.WriteString("      " + l + "\n")
			}
		}
	}

	var cmds [][2]string
	for _, sub := range c.Commands {
		if !sub.Hidden {
			cmds = append(cmds, [2]string{strings.Join(sub.Names(), ", "), sub.Usage})
		}
	}
	if len(cmds) > 0 {
		b.WriteString("\nCOMMANDS:\n")
		writeTable(&b, cmds)
	}

	if flags := c.VisibleFlags(); len(flags) > 0 {
		if isRoot {
			b.WriteString("\nGLOBAL OPTIONS:\n")
		} else {
			b.WriteString("\nOPTIONS:\n")
		}
		var infos []flagInfo
		anyShort := false
		for _, f := range flags {
			fi := describeFlag(f)
			infos = append(infos, fi)
			anyShort = anyShort || len(fi.short) > 0
		}
		var rows [][2]string
		for _, fi := range infos {
			h := fi.head()
			if anyShort && len(fi.short) == 0 {
				h = "    " + h
			}
			rows = append(rows, [2]string{h, fi.help()})
		}
		writeTable(&b, rows)
	}
	return b.String()
}

// commandExamples returns the examples of c from the table in examples.go,
// found by c's path below ds ("log", "completion bash").
func commandExamples(c *cli.Command) []example {
	path := c.Path()
	if len(path) < 2 {
		return nil
	}
	return examples[strings.Join(path[1:], " ")]
}

// writeTable writes rows of two columns (a name and what it does) indented
// by 3, the second column wrapped to fit helpWidth; a name wider than the
// name column (at most 30 runes) has its text start on the next line.
func writeTable(b *strings.Builder, rows [][2]string) {
	const maxLeft = 30
	left := 0
	for _, r := range rows {
		if n := utf8.RuneCountInString(r[0]); n > left && n <= maxLeft {
			left = n
		}
	}
	col := 3 + left + 2
	for _, r := range rows {
		name := "   " + r[0]
		lines := wrapWords(r[1], helpWidth-col)
		if len(lines) == 0 {
			b.WriteString(name + "\n")
			continue
		}
		pad := col - utf8.RuneCountInString(name)
		if pad < 2 {
			b.WriteString(name + "\n")
			pad = col
			name = ""
		}
		b.WriteString(name + strings.Repeat(" ", pad) + lines[0] + "\n")
		for _, l := range lines[1:] {
			b.WriteString(strings.Repeat(" ", col) + l + "\n")
		}
	}
}

// writeWrapped writes text word-wrapped to helpWidth, its first line
// indented by first spaces and the others by rest.
func writeWrapped(b *strings.Builder, text string, first, rest int) {
	lines := wrapWords(text, helpWidth-first)
	if len(lines) == 0 {
		return
	}
	b.WriteString(strings.Repeat(" ", first) + lines[0] + "\n")
	// The other lines are rewrapped to their own width.
	for _, l := range wrapWords(strings.Join(lines[1:], " "), helpWidth-rest) {
		b.WriteString(strings.Repeat(" ", rest) + l + "\n")
	}
}

// wrapWords splits text into lines of at most width runes at spaces; a word
// wider than width gets a line of its own.
func wrapWords(text string, width int) []string {
	var lines []string
	line, n := "", 0
	for _, w := range strings.Fields(text) {
		wn := utf8.RuneCountInString(w)
		switch {
		case n == 0:
			line, n = w, wn
		case n+1+wn <= width:
			line, n = line+" "+w, n+1+wn
		default:
			lines = append(lines, line)
			line, n = w, wn
		}
	}
	if n > 0 {
		lines = append(lines, line)
	}
	return lines
}

// flagInfo is what help, the manual and the completion scripts show of a
// flag.
type flagInfo struct {
	short, long []string // names without dashes: one rune, longer
	placeholder string   // the value's name (FILE), "" for a switch
	usage       string   // the usage with its `PLACEHOLDER` quotes removed
	def         string   // the default worth showing, or ""
	multi       bool     // may be repeated
	optional    bool     // the value is optional and only given after =
}

// describeFlag collects a flag's names, value placeholder (the first
// `quoted` word of its usage, else one from its type), usage and default.
// A default is shown unless it is empty, 0, false, [] or the usage already
// says what the default is.
func describeFlag(f cli.Flag) flagInfo {
	var fi flagInfo
	for _, n := range f.Names() {
		if utf8.RuneCountInString(n) == 1 {
			fi.short = append(fi.short, n)
		} else if n != "" {
			fi.long = append(fi.long, n)
		}
	}
	df, ok := f.(cli.DocGenerationFlag)
	if !ok {
		return fi
	}
	fi.usage = df.GetUsage()
	if i := strings.IndexByte(fi.usage, '`'); i >= 0 {
		if j := strings.IndexByte(fi.usage[i+1:], '`'); j >= 0 {
			fi.placeholder = fi.usage[i+1 : i+1+j]
			fi.usage = fi.usage[:i] + fi.placeholder + fi.usage[i+1+j+1:]
		}
	}
	if df.TakesValue() && optionalValueFlag(f) {
		// A value only after = (--json=frames), as optionalValue takes.
		fi.optional = true
	}
	if df.TakesValue() && fi.placeholder == "" {
		switch t := strings.ToLower(df.TypeName()); {
		case strings.Contains(t, "duration"):
			fi.placeholder = "DURATION"
		case strings.Contains(t, "int"), strings.Contains(t, "float"):
			fi.placeholder = "N"
		default:
			fi.placeholder = "VALUE"
		}
	}
	if df.IsDefaultVisible() && !strings.Contains(fi.usage, "default") {
		d := df.GetDefaultText()
		if d == "" && df.TakesValue() {
			d = df.GetValue()
		}
		switch d = strings.Trim(d, `"`); d {
		case "0", "false", "[]":
		default:
			fi.def = d
		}
	}
	if mf, ok := f.(cli.DocGenerationMultiValueFlag); ok && mf.IsMultiValueFlag() {
		fi.multi = true
	}
	return fi
}

// optionalValueFlag reports a flag that stands alone or takes a value after
// = (a cli.GenericFlag whose Value says IsBoolFlag, as optionalValue does).
// It looks at the Value itself, which urfave copies into the flag only
// when the command runs.
func optionalValueFlag(f cli.Flag) bool {
	g, ok := f.(*cli.GenericFlag)
	if !ok {
		return false
	}
	bf, ok := g.Value.(interface{ IsBoolFlag() bool })
	return ok && bf.IsBoolFlag()
}

// names returns the flag's names as typed, the short ones first.
func (fi flagInfo) names() []string {
	var out []string
	for _, n := range fi.short {
		out = append(out, "-"+n)
	}
	for _, n := range fi.long {
		out = append(out, "--"+n)
	}
	return out
}

// head is the flag as help lists it: "-c, --channel CHANNEL", or
// "--json[=VALUE]" for an optional value.
func (fi flagInfo) head() string {
	h := strings.Join(fi.names(), ", ")
	switch {
	case fi.optional:
		h += "[=" + fi.placeholder + "]"
	case fi.placeholder != "":
		h += " " + fi.placeholder
	}
	return h
}

// help is the flag's usage with its default, and "repeatable" for a
// repeatable flag whose usage does not say so.
func (fi flagInfo) help() string {
	s := fi.usage
	if fi.def != "" {
		s += " (default: " + fi.def + ")"
	}
	if fi.multi && !strings.Contains(s, "repeat") {
		s += "; repeatable"
	}
	return s
}

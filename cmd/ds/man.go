package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v3"
)

// manPage renders man/ds.1 (roff -man) from the command tree, so that the
// manual cannot drift from the flags; TestManPageUpToDate compares the two
// and DS_UPDATE=1 rewrites the file.
func manPage(root *cli.Command) string {
	var b strings.Builder
	fmt.Fprintf(&b, ".TH DS 1 \"\" \"ds %s\" \"User Commands\"\n", roffEscape(root.Version))
	b.WriteString(".\\\" Generated from the command tree by cmd/ds/man.go; do not edit.\n")
	fmt.Fprintf(&b, ".SH NAME\nds \\- %s\n", roffEscape(root.Usage))
	fmt.Fprintf(&b, ".SH SYNOPSIS\n.B ds\n[\\-\\-help] [\\-\\-version]\n.I command\n[\\fIargs\\fR...]\n")
	b.WriteString(".SH DESCRIPTION\n")
	writeParagraphs(&b, root.Description)
	b.WriteString(".SH COMMANDS\n")
	for _, c := range root.Commands {
		if c.Hidden {
			continue
		}
		fmt.Fprintf(&b, ".SS %s\n", roffEscape(c.Name))
		fmt.Fprintf(&b, ".B %s\n.PP\n%s.\n", roffEscape(c.UsageText), roffEscape(c.Usage))
		if c.Description != "" {
			b.WriteString(".PP\n")
			writeParagraphs(&b, c.Description)
		}
		for _, f := range c.Flags {
			writeFlag(&b, f)
		}
		for _, sub := range c.Commands {
			if sub.Hidden {
				continue
			}
			fmt.Fprintf(&b, ".TP\n.B %s\n%s.\n", roffEscape(sub.UsageText), roffEscape(sub.Usage))
		}
		writeExamples(&b, examples[c.Name])
	}
	b.WriteString(".SH SEE ALSO\n.BR ds-format (5)\n")
	return b.String()
}

func writeFlag(b *strings.Builder, f cli.Flag) {
	fi := describeFlag(f)
	var parts []string
	for _, n := range fi.names() {
		parts = append(parts, "\\fB"+roffEscape(n)+"\\fR")
	}
	head := strings.Join(parts, ", ")
	switch {
	case fi.optional:
		head += "[=\\fI" + roffEscape(fi.placeholder) + "\\fR]"
	case fi.placeholder != "":
		head += " \\fI" + roffEscape(fi.placeholder) + "\\fR"
	}
	fmt.Fprintf(b, ".TP\n%s\n%s.\n", head, roffEscape(fi.help()))
}

// writeExamples renders a command's examples (examples.go) as the EXAMPLES
// part of its subsection: each explanation, then its command line
// indented, verbatim.
func writeExamples(b *strings.Builder, ex []example) {
	if len(ex) == 0 {
		return
	}
	b.WriteString(".PP\n.B EXAMPLES\n")
	for _, e := range ex {
		fmt.Fprintf(b, ".PP\n%s\n.RS 4\n.nf\n", roffEscape(e.Explanation))
		for _, l := range strings.Split(e.Command, "\n") {
			b.WriteString(roffEscape(l) + "\n")
		}
		b.WriteString(".fi\n.RE\n")
	}
}

// writeParagraphs turns the plain-text descriptions of the help output into
// roff: blank lines separate paragraphs, indented lines are kept verbatim.
func writeParagraphs(b *strings.Builder, text string) {
	for i, para := range strings.Split(strings.TrimSpace(text), "\n\n") {
		if i > 0 {
			b.WriteString(".PP\n")
		}
		lines := strings.Split(para, "\n")
		if len(lines) > 1 && strings.HasPrefix(lines[1], "   ") || strings.HasPrefix(lines[0], "   ") {
			b.WriteString(".nf\n")
			for _, l := range lines {
				b.WriteString(roffEscape(l) + "\n")
			}
			b.WriteString(".fi\n")
			continue
		}
		for _, l := range lines {
			b.WriteString(roffEscape(strings.TrimSpace(l)) + "\n")
		}
	}
}

func roffEscape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			lines[i] = `\&` + l
		}
	}
	return strings.Join(lines, "\n")
}

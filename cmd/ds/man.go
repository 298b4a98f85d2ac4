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
	}
	b.WriteString(".SH SEE ALSO\n.BR ds-format (5)\n")
	return b.String()
}

func writeFlag(b *strings.Builder, f cli.Flag) {
	names := f.Names()
	var parts []string
	for _, n := range names {
		dash := "\\-\\-"
		if len(n) == 1 {
			dash = "\\-"
		}
		parts = append(parts, "\\fB"+dash+roffEscape(n)+"\\fR")
	}
	usage := ""
	def := ""
	if d, ok := f.(cli.DocGenerationFlag); ok {
		usage = d.GetUsage()
		if d.TakesValue() {
			def = d.GetValue()
		}
	}
	placeholder := ""
	if i := strings.Index(usage, "`"); i >= 0 {
		if j := strings.Index(usage[i+1:], "`"); j >= 0 {
			placeholder = usage[i+1 : i+1+j]
			usage = usage[:i] + placeholder + usage[i+1+j+1:]
		}
	}
	head := strings.Join(parts, ", ")
	if placeholder != "" {
		head += " \\fI" + roffEscape(placeholder) + "\\fR"
	}
	fmt.Fprintf(b, ".TP\n%s\n%s", head, roffEscape(usage))
	if def != "" && def != `""` && def != "0" && def != "false" {
		fmt.Fprintf(b, " (default: %s)", roffEscape(strings.Trim(def, `"`)))
	}
	b.WriteString(".\n")
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

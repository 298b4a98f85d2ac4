package main

import (
	"io"
	"os"

	"github.com/mattn/go-isatty"
	"github.com/urfave/cli/v3"
)

// colorFlag is the --color flag of the commands that print a log (ds log,
// ds tail).
func colorFlag() cli.Flag {
	return &cli.StringFlag{
		Name:  "color",
		Value: "auto",
		Usage: "colour the text output: `WHEN` is auto (when stdout is a terminal, NO_COLOR is unset or empty and TERM is not dumb), " +
			"always or never. With colour, a text line's own SGR colours pass through, reset at its end, and ds styles its " +
			"columns and loss lines; every other escape sequence is shown escaped (\\x1b[2J), as is every escape without colour. " +
			"--json and --cat are never coloured",
	}
}

// useColor reads c's --color flag and says whether output to w is
// coloured: always and never say so; auto (the default) colours when w is
// a terminal, NO_COLOR is unset or empty and TERM is not "dumb"
// (https://no-color.org: an explicit flag overrides NO_COLOR). Another
// value is a usage error.
func useColor(c *cli.Command, w io.Writer) (bool, error) {
	when := c.String("color")
	f, _ := w.(*os.File)
	terminal := f != nil && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
	on, ok := colorChoice(when, os.Getenv("NO_COLOR"), os.Getenv("TERM"), terminal)
	if !ok {
		return false, usagef("%s: --color %q: want auto, always or never", c.Name, when)
	}
	return on, nil
}

// colorChoice is useColor's rule: the --color value when, the values of
// NO_COLOR and TERM, and whether the output is a terminal give whether to
// colour, and whether when is valid.
func colorChoice(when, noColor, term string, terminal bool) (on, ok bool) {
	switch when {
	case "always":
		return true, true
	case "never":
		return false, true
	case "auto":
		return terminal && noColor == "" && term != "dumb", true
	}
	return false, false
}

package main

import (
	"context"
	"io"
	"runtime/debug"

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

EXIT STATUS
   0  success
   1  runtime or I/O failure
   2  usage error
   3  damaged or truncated input (everything readable is still printed)`

// newRoot builds the command tree. Commands are listed here only once they
// exist.
func newRoot(stdin io.Reader, stdout, stderr io.Writer) *cli.Command {
	root := &cli.Command{
		Name:                  "ds",
		Usage:                 "capture and read datastream telemetry",
		UsageText:             "ds [--help] [--version] COMMAND [ARGS…]",
		Description:           rootDescription,
		Version:               dsVersion(),
		Reader:                stdin,
		Writer:                stdout,
		ErrWriter:             stderr,
		EnableShellCompletion: false,
		HideHelpCommand:       true,
		Commands:              commands(),
		ExitErrHandler:        func(context.Context, *cli.Command, error) {},
	}
	root.Action = func(_ context.Context, c *cli.Command) error {
		if c.Args().Len() > 0 {
			return usagef("unknown command %q", c.Args().First())
		}
		return usagef("no command given")
	}
	setUsageErrors(root)
	for _, c := range root.Commands {
		if c.Name == "wrap" {
			// ds wrap's own failures, usage included, exit 125 so that they
			// cannot be taken for the child's status.
			c.OnUsageError = func(_ context.Context, _ *cli.Command, err error, _ bool) error {
				return &wrapError{&usageError{err}}
			}
		}
	}
	return root
}

// setUsageErrors makes every command report a bad flag as a usage error
// (exit 2, message on stderr) instead of urfave's default of printing help
// to stdout.
func setUsageErrors(c *cli.Command) {
	c.OnUsageError = func(_ context.Context, _ *cli.Command, err error, _ bool) error {
		return &usageError{err}
	}
	for _, sub := range c.Commands {
		setUsageErrors(sub)
	}
}

// run is main without os.Exit, for tests: it runs ds with args (args[0] is
// the program name) and returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRoot(stdin, stdout, stderr)
	err := root.Run(context.Background(), args)
	return exitCode(err, stderr)
}

package main

import "github.com/urfave/cli/v3"

// commands returns the subcommands that exist, in the order help lists them.
func commands() []*cli.Command {
	return []*cli.Command{wrapCommand(), emitCommand(), hostCommand(), logCommand(), tailCommand(), playCommand(), infoCommand(), gapsCommand(), diffCommand(), reportCommand(), exportCommand(), seriesCommand(), topCommand(), latestCommand(), checkCommand(), mergeCommand(), recoverCommand(), ingestCommand(), trimCommand(), collectCommand(), natsCommand()}
}

package main

import (
	"context"

	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/views"
)

func infoCommand() *cli.Command {
	return &cli.Command{
		Name:      "info",
		Usage:     "summarise captures: streams, channels, gaps, drops, damage",
		UsageText: "ds info [--json] INPUT…",
		Description: `For each input: its size, segments and damaged ranges (torn tail, bytes
skipped). For each stream: node, life, origin, label, first and last
position, frame count and payload bytes, channels (id, name, content,
frames, bytes), interior gaps, duplicates, drops (submissions the writer
refused, which never got a position: how many frames and payload bytes, in
how many places, and where, as ds log shows them; the writer's own counter
when it knows more, and drops by subscribers), whether it ended cleanly (a
StreamEnded record) and how its process exited, and its time span from
datastream.clock records. Drops are "unknown" only when the stream has no
datastream.health record. --json prints the same as one JSON document:
"mux_dropped" and "subscriber_dropped" are the writer's counters (null
without a health record), "drops" the places (the first 100, each
{"before","frames","bytes","reason"}), "drop_count", "dropped_frames" and
"dropped_bytes" (null when a record did not give its bytes).

Exit status 3 when an input is damaged.`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print one JSON document"},
		},
		Action: infoAction,
	}
}

func infoAction(ctx context.Context, c *cli.Command) error {
	root := c.Root()
	info := views.NewInfo(0)
	err := scanInputs(ctx, c.Args().Slice(), root.Reader, root.ErrWriter, false, func(in *input) views.Sink {
		info.File(in.name)
		return info
	}, func(in *input) {
		size := in.size
		if size < 0 || in.live {
			size = in.read // stdin, a pipe, or a file still growing: what was read
		}
		info.FileSize(size)
	})
	files, streams := info.Summary()
	var werr error
	if c.Bool("json") {
		werr = views.WriteInfoJSON(root.Writer, files, streams)
	} else {
		werr = views.WriteInfoText(root.Writer, files, streams)
	}
	if werr != nil && !isEPIPE(werr) && err == nil {
		return werr
	}
	return err
}

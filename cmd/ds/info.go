package main

import (
	"context"

	"github.com/urfave/cli/v3"
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
when it knows more), the frame copies the writer's subscribers (its
outputs) lost, and the positions an output (ds wrap -o nats://…) did not
deliver (datastream.transport records), whether it ended cleanly (a
StreamEnded record) and how its process exited, its time span from
datastream.clock records, and the steps of its wall clock they show (as
ds log and ds gaps show them; read from summaries, which keep the first
and last clock record of each segment, a step is placed at the first
record read after it). Copies an output lost are no loss of this input:
what it lacks shows as gaps. Drops are "unknown" only when the stream has
no datastream.health record. --json prints the same as one JSON document:
"mux_dropped" and "subscriber_dropped" are the writer's counters (null
without a health record), "drops" the places (the first 100, each
{"before","frames","bytes","reason"}), "drop_count", "dropped_frames" and
"dropped_bytes" (null when a record did not give its bytes),
"transport_losses" and "undelivered_frames" (omitted when 0),
"clock_steps" (the first 100, as ds log --json gives them) and
"clock_step_count" (omitted when 0).

A capture file is read from its end, headers and segment summaries only
(ds-format(5), "Reading from the end"), so that ds info of a 10 GiB
capture takes milliseconds; segments without a usable summary (a writer
that was killed, an older writer, a damaged summary) are read record by
record. A summary is never trusted over what it describes: one that does
not agree with itself and with its segment's header is not used. Damage
inside a segment whose summary is used is not seen: --scan reads every
record instead, checking every CRC (as ds log does). Stdin and pipes are
always read record by record.

Exit status 3 when an input is damaged (in what was read).`,
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print one JSON document"},
			&cli.BoolFlag{Name: "scan", Usage: "read every record, checking every CRC, instead of the segment summaries"},
		}, natsFlags()...),
		Action: infoAction,
	}
}

func infoAction(ctx context.Context, c *cli.Command) error {
	limitReadMemory()
	set, err := newSources(c)
	if err != nil {
		return err
	}
	root := c.Root()
	names := c.Args().Slice()
	if len(names) == 0 {
		return usagef("no input given (name capture files, or - for stdin)")
	}
	r := newInputs(set, root.Reader, root.Writer, root.ErrWriter)
	return r.Info(ctx, names, c.Bool("scan"), c.Bool("json"))
}

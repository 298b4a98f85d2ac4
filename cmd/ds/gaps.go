package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/sources"
	"github.com/ds-telemetry/ds/pkg/views"
)

func gapsCommand() *cli.Command {
	return &cli.Command{
		Name:      "gaps",
		Usage:     "list every loss in captures (gaps, drops, damage, missing starts and ends) and what outputs lost",
		UsageText: "ds gaps [--json] [--check] INPUT…",
		Description: `Lists every loss in the inputs (capture files, or - for stdin), and the
notes that are no loss of them, one line each, and nothing when there is
none:

   WHERE  KIND  WHAT

WHERE is the stream (node#life), or the input's name for what concerns an
input. KIND is one of these losses:

   damage      bytes of an input that could not be read, skipped
   torn        the input ends inside a record (a writer killed mid-record)
   start       the stream's first frames are not in the input: its lowest
               position read is not 0 (a capture whose head was cut off,
               a later file of a rotated capture)
   gap         positions the writer assigned that are not in the input;
               with the reason when a transport loss of the stream names
               any of them ("not delivered by OUTPUT: REASON")
   dropped     submissions the writer refused (a full queue), which never
               got a position: how many, their bytes, before which position
               (from its datastream.health records, as ds log shows them)
   conflict    a second, different payload for a position (the first kept)
   unended     no StreamEnded record: the writer did not finish (it was
               killed), so what it wrote after the last position read is
               unknown
   trim-shown  a capture file holds a Trimmed record of the stream and
               frames below its horizon: a store's record, which hides
               nothing in a capture (the views show those frames), in a
               capture not written so (crafted, or spliced)
   clock-step  the stream's wall clock stepped (it was set, or the
               machine slept): between two datastream.clock records it
               moved more than 100 ms beyond the monotonic clock, so the
               times of the frames after it are off by the step; no frame
               is missing, but --check fails on it
   uncompared  copies of positions that could not be compared with
               their first copy, read too long before (more than 16384
               positions back, or past the 8 MiB that hashes may take): a
               conflict among them would not be listed, so --check fails
               on them, as it cannot rule one out (check each input alone,
               or inputs whose copies are close)

or one of these notes, which tell what other copies of a stream lack:
   subscriber  frame copies the writer's subscribers (its outputs) lost,
               from its health counters: before which position (between
               which, for consecutive health records), by whom
   transport   positions an output of the stream (ds wrap -o nats://…)
               did not deliver, and why, from its datastream.transport
               record: missing from a copy read back from that output (a
               gap there, which is the loss), present in any other (the
               capture file)
   live        the input is still being written (ds wrap holds it), so a
               record cut short at its end is no torn tail and its streams
               have not ended yet
   trimmed     positions a store trimmed (ds trim); in a capture file
               that holds a Trimmed record, positions below its horizon
               that the capture lacks

A copy a subscriber lost is either missing from the input, which then has
a gap there, or missing from another output's copy only: no loss of this
input. So ds wrap -o run.dss -o nats://… passes --check on run.dss when
the server was away, and fails on the NATS copy, whose gaps say why.

Input lines come first, in the order given; then each stream's, streams
sorted by node and life, in position order (start first, unended last; a
transport loss at the first position it names, after a gap there).
At most ` + strconv.Itoa(views.MaxListedFindings) + ` damaged ranges, gaps, drops, subscriber drops,
conflicts and transport losses are listed; a "more" line counts the rest.
When there are losses, problems or notes, one line on stderr totals
them: the losses (damage, gaps, drops, unended streams), then the
problems (conflicts, trim-shown, clock steps, copies not compared), then
after "noted:" the subscriber drops and transport losses.

--json prints one JSON object per line, in the shapes ds log --json gives
losses: {"damage":{"file","offset","end","torn_tail","error"}},
{"live":{"file"}}, and after "stream", "node", "life" one of
"start":{"position","segment"}, "gap":{"from","to","count","reason"}
("reason" only when a transport loss gives one),
"dropped":{"before","frames","bytes","reason"} (bytes null when unknown),
"subscriber_dropped":{"from","before","frames","subscribers":[{"name",
"frames"}]} ("from", the first health record, only when several were
merged),
"conflict":{"position","channel","channel_id"}, "unended":{"last_position"}
(null without frames), "trim_shown":{"before","frames"}, "uncompared":{"copies"},
"clock_step":{"position","after","step_ns","elapsed_ns","from_unix_ns",
"to_unix_ns"} (as ds log --json), "transport":{"output","from","to","frames",
"reason","since_unix_ms","until_unix_ms"} (ms since the Unix epoch, 0
when unknown), or "more":{"count"}.

Every record is read and its CRC checked (damage is a loss, and a segment
summary cannot show damage inside its segment), but no payload is decoded
except the writer's datastream.health, datastream.transport (outputs and
reasons cut to 200 bytes) and datastream.clock records. Gaps, drops and damage
concern a whole stream or input, not a channel, so there is no -c;
--node, --stream and --origin select streams (an input's damage is
listed whatever they select).

Exit status: 0, even when there are losses, unless --check is given:
then 4 when there is any loss or conflict (a note is none), and 2 when
--node, --stream or --origin matched no stream (a mistyped name is no
pass). An input that is damaged (a damaged range or a torn tail) gives 3
whatever --check says; an input that cannot be read gives 1, one that is
no capture 2 (the worst of these wins; any of them wins over 4).`,
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object per loss"},
			&cli.BoolFlag{Name: "check", Usage: "exit 4 when there is any loss or conflict (3 on damage still)"},
		}, append(streamFlags(), natsFlags()...)...),
		Action: gapsAction,
	}
}

func gapsAction(ctx context.Context, c *cli.Command) error {
	limitReadMemory()
	set, err := newSources(c)
	if err != nil {
		return err
	}
	ss, err := readStreamSelection(c)
	if err != nil {
		return err
	}
	root := c.Root()
	g := views.NewGaps(0)
	err = scanInputs(ctx, set, c.Args().Slice(), root.Reader, root.ErrWriter, false, func(in *sources.Input) segments.Sink {
		return ss.wrap(g.Input(in.Name, in.Live))
	}, nil)
	unmatched := ss.warn(root.ErrWriter)
	var st *sources.StatusError
	if err != nil && !errors.As(err, &st) {
		return err // a usage error: nothing was read
	}
	var werr error
	if c.Bool("json") {
		werr = g.WriteJSON(root.Writer)
	} else {
		werr = g.WriteText(root.Writer)
	}
	if werr != nil && !isEPIPE(werr) {
		return werr
	}
	t := g.Totals()
	if t.Losses()+t.Noted() > 0 {
		fmt.Fprintf(root.ErrWriter, "ds: %s\n", t)
	}
	switch {
	case err != nil:
		return err // exit 1 (an input could not be read) or 3 (damage)
	case c.Bool("check") && unmatched:
		// A mistyped --node must not pass a CI check as "no loss".
		return &statusError{code: exitUsage}
	case c.Bool("check") && t.Losses() > 0:
		return &statusError{code: exitLoss}
	}
	return nil
}

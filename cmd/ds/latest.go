package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/fleet"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/sources"
	"github.com/ds-telemetry/ds/pkg/views"
)

func latestCommand() *cli.Command {
	return &cli.Command{
		Name:      "latest",
		Usage:     "print the last frame of each channel (a gauge)",
		UsageText: "ds latest [CHANNEL…] [-c CHANNEL]… [--json] INPUT…",
		Description: `Prints the last frame (the highest position) of each channel of each
stream of the inputs, one line per stream and channel, ordered by stream
then channel name:

   STREAM  CHANNEL  POSITION  TIME  PAYLOAD

CHANNEL is an exact name or a pattern whose * matches anything
(proc.*, proc.*.stdout; repeatable, as
arguments or with -c); without one, every channel but the writer's own
datastream.* channels. The arguments before the first one that is - or
names an existing file are channels, the rest inputs; -c names a channel
that could be taken for a file.

TIME is the stream's latest datastream.clock reading at or before the
frame (RFC 3339, UTC), or - when there is none. A record is printed as
compact JSON; text without its final newline, with control bytes and
bytes that are not UTF-8 escaped as \xNN, as ds log prints it; bytes
escaped throughout.

--json prints one object per stream and channel, keys in this order:
"stream", "node", "life", "channel", "content", "position", "time" and
"time_unix_ns" (null when unknown), then "record" (the parsed JSON),
"text", or "bytes_b64" ("invalid_json":true after it when a record is
not JSON), as ds log --json; text that is not UTF-8 has a lossy "text"
(a U+FFFD for each bad byte), then its exact "bytes_b64" and
"utf8":false.

The inputs are read whole, in position order (duplicates collapsed),
keeping only the last payload of each channel: memory does not grow with
the input. A CHANNEL that matches no channel of the inputs is reported
(with the channels there are) and makes the exit status 1; the others
are still printed. Exit status 3 when an input is damaged.`,
		Flags: append([]cli.Flag{
			&cli.StringSliceFlag{Name: "channel", Aliases: []string{"c"}, Usage: "show `CHANNEL` (exact name, or a pattern whose * matches anything: proc.*, proc.*.stdout); repeatable"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object per stream and channel"},
		}, append(streamFlags(), natsFlags()...)...),
		Action: latestAction,
	}
}

func latestAction(ctx context.Context, c *cli.Command) error {
	limitReadMemory()
	set, err := newSources(c)
	if err != nil {
		return err
	}
	patterns, names := splitLatestArgs(c.Args().Slice())
	if len(names) == 0 {
		if len(patterns) == 0 {
			return usagef("latest: no input given (name capture files, or - for stdin)")
		}
		return usagef("latest: no input given: none of %s names a file (name capture files after the channels, or - for stdin)", strings.Join(patterns, ", "))
	}
	patterns = append(slices.Clone(patterns), c.StringSlice("channel")...)
	for _, p := range patterns {
		if p == "" {
			return usagef("latest: empty channel name")
		}
	}
	ss, err := readStreamSelection(c)
	if err != nil {
		return err
	}
	root := c.Root()
	l := views.NewLatest(views.LatestOptions{Channels: channelFilters(patterns)})
	err = scanInputs(ctx, set, names, root.Reader, root.ErrWriter, false, func(*sources.Input) segments.Sink { return ss.wrap(l) }, nil)
	ss.warn(root.ErrWriter)
	l.Flush()
	write := views.WriteLatestText
	if c.Bool("json") {
		write = views.WriteLatestJSON
	}
	if werr := write(root.Writer, l.Entries()); werr != nil {
		return writeErr(werr)
	}
	views.WarnCopies(root.ErrWriter, l.Copies(), "used")
	if un := l.Unmatched(); len(un) > 0 && onlyDamaged(err) {
		channels, more := l.Channels()
		for _, p := range un[:len(un)-1] {
			fmt.Fprintf(root.ErrWriter, "ds: %v\n", noMatch("latest", p, channels, more))
		}
		return noMatch("latest", un[len(un)-1], channels, more)
	}
	return err
}

// splitLatestArgs splits ds latest's arguments into channel patterns and
// inputs: the inputs start at the first argument that is -, a nats://
// URL, or names an existing file or directory.
func splitLatestArgs(args []string) (patterns, inputs []string) {
	for i, a := range args {
		if a == "-" || fleet.IsURL(a) {
			return args[:i], args[i:]
		}
		if _, err := os.Stat(a); err == nil {
			return args[:i], args[i:]
		}
	}
	return args, nil
}

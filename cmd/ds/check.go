package main

import (
	"bufio"
	"context"
	"errors"
	"io"

	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/sources"
)

func checkCommand() *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "verify captures record by record: damage, torn tails, catalog conflicts, summaries",
		UsageText: "ds check [--json] [-q] INPUT…",
		Description: `Reads every record of each input (capture files, directories of captures
as the views take them, stores, or - for stdin), checks every CRC, and
reports what it finds, one line each on stdout:

   FILE: bytes A–B damaged: WHY
          bytes that could not be read (a flipped bit, a bad length,
          bytes that are no DSS), skipped up to the next good record or
          segment; adjacent damaged records make one range
   FILE: torn tail at byte A: WHY
          the input ends inside a record (a writer killed mid-record)
   FILE: stream S: channel N declared as NAME (CONTENT) at byte A and as
          NAME (CONTENT) at byte B
          one channel id of one stream with two descriptors, in segment
          headers or ChannelDeclared records (of this input or, naming it,
          an earlier one)
   FILE: stream S described as (origin O, label L) at byte A and as
          (origin O, label L) at byte B
          one stream with two descriptors in its segment headers
   FILE: byte A: summary of stream S's segment at byte B disagrees with
          its frames: WHAT
          a SegmentSummary whose frame count, payload bytes, first or last
          position, order, StreamEnded flag or per-channel counts differ
          from the frames of its segment, or that names another segment;
          a summary is never trusted over the frames it describes (it is
          compared only for segments read without damage)
   FILE: byte A: record of unknown type T in stream S, skipped
          a record type this ds does not know (a newer writer), or a Block
          of an unknown codec: not damage, its CRC checked
   FILE: stream S: a Trimmed record (positions below H) in a capture
          file, which holds N frames below it: …
          a Trimmed record is a store's, authoritative only in what a
          store reads out; a capture file (crafted, or spliced) that holds
          frames below one shows them, never hides them
   FILE: tail at byte A still being written
          a live capture (a writer holds it): a record cut short at its
          end is no torn tail
   FILE: stream S: N frames, positions A–B, …
          what the input holds of each stream: frames, payload bytes,
          segments, positions first–last, interior gaps (positions missing
          between the first and the last, the first 10 listed), the trim
          horizon of a store (positions below it are trimmed, not a gap),
          duplicates (positions seen before), and whether a StreamEnded
          record was seen
   FILE: ok: … | FILE: N problems: …
          the input's size, segments, streams and frames

Damage, torn tails, catalog conflicts (of channels or of the stream
itself), summaries that disagree and frames below a capture's Trimmed
record are problems; gaps, duplicates and streams without a StreamEnded record are
not (a lossy transport, cat a.dss a.dss, a writer still running). -q
prints the problems only, and nothing for a clean input.

A store (ds ingest) is checked as the views read it: each of its streams
is an input named "STORE (NODE#LIFE)", and offsets are those of the
stream as the store gives it out (its chunk files in position order).
Besides DSS captures, ds check reads the seed system's DSQ1 streams and
legacy envelopes (which have no segment summaries).

ds check is a full read: it reads as fast as ds log --cat, in memory
bounded by the reader's (a few MiB) plus a few hundred bytes per stream
and per run of positions (at most 65536 runs per stream are kept: beyond,
gaps are counted no more and the stream line says so).

Exit status: 0 when every input is clean, 3 when any has a problem, 2 when
an input is not a capture (a *.dss file of a directory named, too) or the
command line is wrong, 1 when an input
cannot be read (the worst wins).`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: `print one JSON object per line: each finding, then each stream, then ` +
				`the input; each object starts with "input" (the name) and "kind", then by kind: ` +
				`damage: "offset", "end" (the bytes [offset, end)), "records", "error"; ` +
				`torn: "offset", "end", "error"; live: "offset"; ` +
				`unknown: "offset", "stream", "type", "error"; ` +
				`conflict: "stream", "channel_id", "first" and "second", each {"input", "offset", "name", "content"}; ` +
				`stream_conflict: "stream", "first" and "second", each {"input", "offset", "origin", "label"}; ` +
				`summary: "offset", "segment_offset", "stream", "seq", "disagrees" (what, in words), ` +
				`"summary" and "segment", each {"frames", "bytes", "first", "last", "ordered", "ended"}; ` +
				`trim_shown: "stream", "before", "frames"; ` +
				`stream: "stream", "node", "life", "segments", "frames", "bytes", "first", "last", "gaps", "missing", ` +
				`"gap_list" (the first 10, each {"from", "to", "count"}), "gaps_counted", "duplicates", "ended", ` +
				`"trimmed_below", "hidden"; ` +
				`input: "format", "bytes", "segments", "streams", "frames", "problems", "ok" ` +
				`(first, last and trimmed_below are null when there is none)`},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print only the problems: nothing for a clean input"},
		},
		Action: checkAction,
	}
}

func checkAction(ctx context.Context, c *cli.Command) error {
	limitReadMemory()
	root := c.Root()
	names := c.Args().Slice()
	if len(names) == 0 {
		return usagef("no input given (name capture files, or - for stdin)")
	}
	opts := checkOptions{JSON: c.Bool("json"), Quiet: c.Bool("quiet")}
	return runCheck(ctx, opts, names, root.Reader, root.Writer, root.ErrWriter)
}

// checkOptions are ds check's flags.
type checkOptions struct {
	JSON  bool // one JSON object per finding
	Quiet bool // problems only
}

// runCheck checks each named input (see checkCommand) and returns the
// worst outcome: an input that cannot be read (exit 1), one that is no
// capture (exit 2), a problem found (exit 3).
func runCheck(ctx context.Context, opts checkOptions, names []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var o sources.Outcome
	bw := bufio.NewWriterSize(stdout, 64<<10)
	out := segments.NewCheckPrinter(bw, opts.JSON, opts.Quiet)
	ck := segments.NewChecker() // across inputs: a stream split over files is one stream
	set := envSources()
	for _, name := range expandNames(set, names, stderr, &o) {
		in, err := set.Open(context.Background(), name, stdin, false)
		if err != nil {
			o.Fail(stderr, err)
			continue
		}
		out.Store = in.Store != nil
		// A nats:// input's segments skipped for naming another stream
		// than their subject: said on stderr, and a problem (exit 3).
		skipped := in.Reporter(nil, stderr)
		rep, err := ck.Check(ctx, in.R, in.Name, segments.CheckOptions{
			Format: in.Format, Sniff: in.File == nil, Live: in.Live, Store: in.Store != nil,
			Finding: func(f segments.Finding) { out.Finding(in.Name, f) },
		})
		in.Close()
		if err != nil {
			if errors.Is(err, context.Canceled) {
				break
			}
			o.Fail(stderr, sources.InputError(in.Name, err))
			if errors.Is(err, segments.ErrNotCapture) {
				continue
			}
		}
		out.Report(in.Name, rep, err == nil)
		if rep.Problems > 0 || skipped.Damaged {
			o.Damage()
		}
		if out.Err() != nil {
			break
		}
	}
	werr := out.Err()
	if err := bw.Flush(); err != nil && werr == nil {
		werr = err
	}
	if werr != nil && !isEPIPE(werr) {
		return werr
	}
	return o.Err()
}

// Package views is the read side of the datastream and the only place that
// decodes payloads (ARCHITECTURE.md §9; ARCHITECTURE.md §1). It sits at the end of the
// pipeline:
//
//	capture files → segments.Reader → views (assemble, render) → cmd/ds
//
// Inputs: [segments.ScanAny] tells a DSS capture, the seed system's DSQ1 transport
// stream and legacy delivery envelopes apart by their first bytes
// ([segments.ErrNotCapture] for anything else) and reports all three through the
// same [segments.Sink]; [Merge] reads several inputs at once and hands one sink the
// entry with the least time (its stream's latest clock reading in its
// input), ties in input order, so that captures made at the same time
// interleave and a stream split over files is rebuilt whole. [segments.Scan] tells
// an [segments.Idler] sink when its input has nothing more for now, so that a live
// pipe is printed as it arrives.
//
// What a view shows is a [Selection]: stream filters (node, stream,
// origin), channel filters (name or prefix, content class), -g on the
// rendered line, position and time bounds, and a [segments.Cursor] to resume
// after. The [Printer] applies it and reports the cursor of what it
// printed; [SelectStreams] gives the stream filters to views without a
// printer (ds gaps, ds series, ds latest).
//
// [segments.Assembler] (segments.Assembler: ingest lives below the views) rebuilds
// each stream by position, collapses duplicates (first wins), reports
// conflicting duplicates and derives interior gaps (ARCHITECTURE.md §9). It
// identifies frames by position: a repeated position is a duplicate only
// if that position was seen; payloads are hashed only where a conflict
// can be told from a copy cheaply (see [segments.Assembler]). It never guesses a
// gap: frames after a hole are held until the end of input (or until a
// live input goes quiet), so any input order gives the same output. The
// renderers turn the assembled frames into what ds log and ds info print,
// resolving channel names from the catalog carried in segment headers and
// ChannelDeclared records. A view
// never fails because one payload is unknown or invalid: such payloads are
// shown raw, escaped (ARCHITECTURE.md rule 8.3).
//
// Frames carry no timestamp. A frame's time is the latest
// datastream.clock reading that precedes it in its stream (by position);
// frames before the first reading have none. The writer records each drain
// tick's clock reading before the frames that tick takes, so that reading
// is an upper bound on when each of them arrived, within one flush
// interval.
//
// Each datastream.clock record pairs the wall clock with the monotonic
// clock: the wall clock moving more than [ClockStepTolerance] beyond the
// monotonic clock between two records of a stream is a step (see
// [ClockStep]), which ds log shows in place, ds gaps lists and ds info
// counts; --time=delta measures across it by the monotonic clock.
//
// Losses are shown in place, as items of their stream: gaps (positions
// assigned but never stored, from the [segments.Assembler]) and drops (submissions
// the writer refused, which never got a position, see [Drop]), read from
// the datastream.health records: a record carrying "loss" says how many
// frames and bytes were refused immediately before its position; for
// records of older writers, without "loss", an increase of the cumulative
// mux_dropped counter is shown at the record that shows it. Transport
// losses (positions an output of the stream that leaves the machine, ds
// wrap -o nats://…, did not deliver, see [TransportLoss]) are read from
// the datastream.transport records the writer submits once the output
// delivers again, and shown at the record's position, after the range it
// names: a copy read back from that output has a gap there, any other
// copy holds the positions. All three concern the whole stream, so
// channel filters do not hide them; a record that does not decode is no
// loss, only a record.
//
// A loss is counted where frames are missing: the gaps, drops, damage,
// missing starts and ends of the input read. What an output of the
// stream lost, the frame copies its subscribers lost (the health
// records' subscriber counters) and its transport losses, is a note, not
// a loss of the input ([FindingKind.IsLoss]): such a copy is either
// missing from the input, which then has a gap there (a loss, with the
// reason the transport loss gives it), or missing from another output's
// copy only. So the capture file of ds wrap -o run.dss -o nats://… passes
// ds gaps --check after an outage of the server, and the copy read back
// from NATS does not. [Gaps] lists consecutive subscriber drops of the
// same subscribers as one finding, so that an outage is one line.
//
// The text renderer joins a text channel's consecutive frames until a
// newline, so that a line split across frames is shown once, whole, at the
// position where it started. That never reorders lines across the
// channels of a stream: before anything of the stream is printed at a
// position (a line of another channel, a record, a gap, a drop), the
// partial lines held from before that position are printed as they are,
// unfinished, and the rest of such a line becomes a line of its own. A
// line the stream never finished is printed, as it is, when the stream
// ends. Hidden channels (the writer's own, by default) cut nothing. The
// text format marks a row printed before its newline with a trailing "…"
// and the row that continues it with a leading one; --json says
// "partial" and "continues" (see lineMark).
//
// Reading takes bounded memory whatever the input (ARCHITECTURE.md §7), because
// nothing here keeps payloads in memory beyond the assembler's bound:
//
//   - the [segments.Assembler] holds out-of-order frames in memory up to
//     [segments.DefaultMemory] (8 MiB) across all streams; past it they are spilled
//     to an unlinked temporary file (as sort(1) does) and read back in
//     order. A stream whose first segment read is not its writer's first
//     (a capture whose head was cut off) waits for its head until the
//     end of input, then starts with an [segments.ItemStart]; ds info and ds tail
//     start it at once (AssemblerOptions.Eager);
//   - per stream it keeps a few hundred bytes of state (about 250 in the
//     Assembler, about 300 more in an [Info], plus one small entry per
//     channel), and more only for what it holds or remembers of gaps;
//   - [segments.Scan] reports a run of adjacent damaged ranges as one, and [Info]
//     lists the first 100 gaps, drops, exits and damaged ranges and counts
//     the rest.
//
// Large captures are read from their end where that is all a view needs.
// [Info.AddSummary] takes a segment from the SegmentSummary its writer
// ended it with (found by segments.BackWalker), when the summary says
// everything Info reports: frames and bytes per channel, positions
// complete and in order, and copies of the clock, health and lifecycle
// records it decodes; any other segment is read record by record. [Tail]
// renders only the segments that hold the end of a capture, skipping the
// records and zstd blocks before the point it starts from. ds log and ds
// gaps read every record and use no summary.
//
// The other views: [Gaps] lists every loss with its reason, and the notes
// (ds gaps),
// [Series] turns a JSON channel into rows of gjson paths (ds series),
// [Latest] keeps the last frame of each channel of each stream (ds
// latest). Payload bytes shown to a terminal go through one escaper
// (terminal.go): no control sequence of a capture reaches the reader's
// terminal, and SGR colour passes only when asked for.
//
// views reads only; it never writes files.
package views

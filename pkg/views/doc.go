// Package views is the read side of the datastream and the only place that
// decodes payloads (spec §8; DESIGN.md §1). It sits at the end of the
// pipeline:
//
//	capture files → segments.Reader → views (assemble, render) → cmd/ds
//
// [Assembler] is streaming ingest: it rebuilds each stream by position,
// collapses duplicates (first wins), reports conflicting duplicates and
// derives interior gaps (spec §7). The renderers turn the assembled frames
// into what ds log and ds info print, resolving channel names from the
// catalog carried in segment headers and ChannelDeclared records. A view
// never fails because one payload is unknown or invalid: such payloads are
// shown raw, escaped (spec §8.3).
//
// Frames carry no timestamp. A frame's time is the latest
// datastream.clock reading that precedes it in its stream (by position);
// frames before the first reading have none. The writer records each drain
// tick's clock reading before the frames that tick takes, so that reading
// is an upper bound on when each of them arrived, within one flush
// interval.
//
// Losses are shown in place, as items of their stream: gaps (positions
// assigned but never stored, from the [Assembler]) and drops (submissions
// the writer refused, which never got a position, see [Drop]), read from
// the datastream.health records: a record carrying "loss" says how many
// frames and bytes were refused immediately before its position; for
// records of older writers, without "loss", an increase of the cumulative
// mux_dropped counter is shown at the record that shows it. Both concern
// the whole stream, so channel filters do not hide them.
//
// The text renderer joins a text channel's consecutive frames until a
// newline, so that a line split across frames is shown once, whole, at the
// position where it started. That never reorders lines across the
// channels of a stream: before anything of the stream is printed at a
// position (a line of another channel, a record, a gap, a drop), the
// partial lines held from before that position are printed as they are,
// unfinished, and the rest of such a line becomes a line of its own. A
// line the stream never finished is printed, as it is, when the stream
// ends. Hidden channels (the writer's own, by default) cut nothing.
//
// views reads only; it never writes files.
package views

// Package top is ds top: a live view of a growing capture or of ds host's
// output. A [Model] is a segments.Sink that keeps the latest state of
// what it is fed: per stream, the last host.cpu, host.mem, host.net and
// host.gpu samples (hostprobe's host.*.v1 records; every field may be
// missing) with a short history of each gauge, the state of each
// process ds wrap ran (proc.*.lifecycle), and the last lines of the text
// channels. [Model.Render] draws a frame of that state at a given size,
// with nothing depending on the clock, so a frame is a pure function of
// what was fed (golden tests). [Run] is the loop that redraws it: in
// place on a terminal (alternate screen, hidden cursor, q to quit), or as
// plain snapshots one per tick otherwise; its ticker, keys and redraw
// signals are given, so tests drive it without a clock.
//
// Like the views, top decodes payloads (ARCHITECTURE.md §1: only views
// decode; top is one, above segments): a record that does not decode, or
// a field it lacks, is left out, never an error (rule 5.4, 5.6).
package top

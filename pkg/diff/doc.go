// Package diff is ds diff: what changed between two runs of the same job,
// read from their captures through the views (pkg/viewer, pkg/views: the
// decoded lines with their times, the lifecycle and host records), never
// from text.
//
// [Read] reads one run: the lines the selection picks (by default every
// text channel's: a ds wrap capture's stdout and stderr), each with its
// key, time and position, and what its proc.*.lifecycle records (command,
// exit status, wall, user and system time, max RSS) and host.* samples
// (peaks of CPU, memory, GPU) said. [Compare] matches the lines of two
// runs by their keys ([Match]: patience diff over Myers, bounded; see
// lcs.go), groups the lines only in one run into unified-diff hunks, and
// finds the steps, from a line both runs have to the next, whose time
// changed most. [Result.WriteText] and [Result.WriteJSON] render it.
//
// Lines match by their normalised text ([Normalize]: numbers, hex ids,
// dates and times, durations, temporary directories masked) on the same
// channel (proc.LABEL.X matched as proc.*.X), unless [Matcher] Exact is
// set; Ignore masks more, and leaves out a line it masks whole. A line is
// shown as it is, escaped for a terminal as ds log shows it; at most 4
// KiB of it is kept for showing (all of it is matched).
//
// Times are each run's own: a line's time is its stream's latest
// datastream.clock reading before it (an upper bound within one flush
// interval, 100 ms by default), shown as seconds since the run's first
// reading. Memory is linear in the lines (about 40 bytes a line beside
// their kept bytes), bounded by Options.MaxLines per run.
package diff

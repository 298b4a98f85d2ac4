// Package viewer runs the views over the inputs: it is the read driver of
// ds(1)'s ds log, ds tail, ds gaps, ds info, ds series and ds latest, and
// it joins the two layers that must not know each other (docs/
// ARCHITECTURE.md §1): sources, which turns input names into readers, and
// views, which decodes and prints what they hold.
//
//	input names ─► sources ─► segments (scan, assembler) ─► views ─► stdout
//	                     └──────────── viewer drives ────────────┘
//
// [Inputs] holds what one command reads with: its [sources.Set], stdin,
// stdout and stderr. [Inputs.Scan] reads named inputs into sinks, one
// input directly and several merged by time (views.Merge), following
// them with -f; [Inputs.Log] prints their merged log as ds log does;
// [Inputs.Tail], [Inputs.Follow] and [Inputs.Consumer] are ds tail (the
// last lines, read from a capture file's end; -f; --consumer).
//
// Every driver keeps going past a bad input and reports the worst outcome
// of its inputs in an [sources.Outcome]: an input that could not be read
// (sources.Failed), one that holds no capture (sources.NotCapture), damage
// (sources.Damaged). A *sources.StatusError carries that outcome as an error; the
// command maps it to an exit status (1, 2, 3). Errors are reported on the
// Stderr given, one line each, "ds: " first. Nothing here installs signal
// handlers: a read that follows (-f) runs until the context that
// [Inputs.Interruptible] gives it ends.
package viewer

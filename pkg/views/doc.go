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
// views reads only; it never writes files.
package views

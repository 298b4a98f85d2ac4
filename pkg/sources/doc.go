// Package sources turns the inputs named on a view's command line into
// readers: the input layer of the views (ds(1): ds log, ds tail, ds gaps,
// ds info, ds series, ds latest, and ds merge, ds check for their inputs).
// In the pipeline it sits between what was stored (capture files, stores,
// a JetStream stream; see docs/ARCHITECTURE.md) and the views' decoders:
//
//	capture files, stores, nats:// ─► sources ─► segments (scan) ─► views
//
// An input name is a capture file, "-" (stdin), a directory of capture
// files, a store directory (ds ingest's: one input per stream, named
// "STORE (NODE#LIFE)"), or a nats://HOST[:PORT][/PREFIX] URL (the
// JetStream stream producers publish to).
//
// A [Set] holds the inputs of one command: the stores it opened and the
// names of their streams' inputs; create one per command with [NewSet],
// passing [Options] (how nats:// inputs are opened). There is no
// process-wide state. [Set.Expand] turns the names into inputs (a
// directory into its capture files, a store into its streams), and
// [Set.Open] opens one as an [Input]: its reader, its size, whether a
// writer still holds it (live), the format it holds (segments.Detect).
// [Input.Scan] reads it into a segments.Sink (segments.ScanAny, any
// format), following a growing file with -f; a [DamageReporter] in front
// of the sink says on stderr which byte ranges were damaged. A file of no
// format ds reads is a *[NotCaptureError] ([InputError] names the input in
// an error).
//
// Following (ds log -f, ds tail -f): a [FollowFile] reads a capture file
// as it grows and says when it was truncated or replaced
// ([ErrTruncated], [ErrReplaced]); a [StreamReader] follows a store's
// stream as chunks are ingested; a [Watch] finds the new inputs of a
// store ([StoreWatch]) or a directory. What is followed is looked at
// again every [PollInterval].
//
// Cursors: a [Consumer] reads stores as a named consumer, resuming from
// and saving its cursor in each store; [ReadCursorFile] and
// [WriteCursorFile] keep a cursor in a file (ds tail --cursor-file).
//
// Errors are returned, never printed; notes meant for the user (a store
// trimmed past a consumer's cursor) go to the io.Writer given. A nats://
// URL that does not parse is a *[URLError].
package sources

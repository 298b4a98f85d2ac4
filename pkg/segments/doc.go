// Package segments writes and reads DSS captures, the segment files and
// byte streams of ds (specification: man/ds-format.5, ds-format(5)). It is
// the transport and ingest stage of the pipeline (ARCHITECTURE.md §1):
//
//	producers → endpoint/catalog → mux → fanout → transport → ingest → views
//	                                              └──── segments ────┘
//
// A [Writer] turns one stream's events (channel declarations, frames, the
// stream's end) into segments: a self-describing header (magic
// 89 44 53 53 0D 0A 1A 0A, version, writer identity, stream descriptor, full
// catalog) followed by CRC32C-protected records, plain or batched in zstd
// blocks, with a new segment every few MiB. It never seeks, so it writes to
// files, pipes and sockets alike; it buffers until [Writer.Flush], which a
// producer calls at every drain tick.
//
// A [Reader] reads any sequence of segments of any streams: a file, stdin,
// or `cat a.dss b.dss`. It returns entries in input order with
// [Reader.Next], which ends with io.EOF at a clean end. Damage does not stop
// it: a torn tail, a flipped byte or bytes that are not DSS are reported as
// a *[CorruptError] carrying the damaged byte range [Offset, End), and
// reading goes on at the next good record or segment. A payload holding DSS
// bytes is never taken for records; no length field makes it allocate more
// than the documented maxima; every input is read to its end.
//
// [Scan] reads one capture into a [Sink] (headers, channels, frames,
// stream ends, trims and damaged ranges, adjacent ones merged into one
// [RunError]), a batch of entries ahead of the sink, and tells a sink that
// is an [Idler] when a live input pauses. [ScanAny] does the same for any
// input ds reads: [Detect] tells a DSS capture from the seed system's
// DSQ1 transport stream and its legacy delivery envelopes by their first
// bytes ([ErrNotCapture] for anything else), and the importers turn the
// other two formats into the same entries. The views render what a Sink
// receives; ds ingest and ds check read through the same calls.
//
// A [Checker] reads inputs record by record for ds check and returns
// what it finds as data ([Finding]s and a [CheckReport]): damaged ranges,
// torn tails, descriptors that conflict across inputs, summaries that
// disagree with their segments, and each stream's positions and gaps.
//
// A [Store] is a directory of streams that [Store.Ingest] grows from
// captures (ds ingest): each stream rebuilt by position, every frame kept
// once whatever order, copies and cuts it arrives in, crash-safe, locked
// against concurrent ingesters, trimmed to a horizon ([Store.Trim], ds
// trim) and read back as DSS ([Store.OpenStream]), with named consumers'
// cursors ([Store.SaveConsumer]). Its directory layout is documented on
// [Store].
//
// [Merge] rebuilds any set of captures into one (ds merge, ds recover),
// written in place through an [OutputFile]; [Store.PlanTrimBefore] and
// [Store.PassedConsumers] plan a trim by position or time and check it
// against the consumers' cursors (ds trim). [ParseSize] reads the byte
// sizes of ds's flags.
//
// Encoding of single records lives in package wireformat, whose sentinel
// errors (wireformat.ErrChecksum, ErrBadMagic, ErrUnknownVersion, …) the
// CorruptError wraps. Payloads are opaque here: only views decode them.
package segments

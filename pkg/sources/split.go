package sources

import (
	"context"
	"io"

	"github.com/ds-telemetry/ds/pkg/segments"
)

// Streams returns where the streams of the input lie when it is a DSS
// capture file of more than one stream (segments.Layout: one entry per
// stream, in the order of their first segment in the file), so that a
// view reads each stream as an input of its own and merges them by time,
// as it merges files (ds(1) ds log: a merged capture reads as its inputs
// do). It returns nil for a capture file of one stream, for a file that
// is not DSS, for stdin, a pipe, a store's stream or a nats:// input
// (which are read once, in their own order), and when the file cannot be
// walked (the error is the scan's to report).
func (in *Input) Streams() []segments.StreamSections {
	if in.File == nil || in.Size <= 0 || in.Format != segments.InputDSS || in.Store != nil {
		return nil
	}
	streams, _, err := segments.Layout(in.File, in.Size)
	if err != nil || len(streams) < 2 {
		return nil
	}
	return streams
}

// ScanSections reads the sections secs of the input's file into sink
// (segments.ScanSections), trusting a Trimmed record as [Input.Scan]
// does; it returns the bytes read and the first error. Calls for
// different sections may run at once (the file is read with ReadAt);
// BytesRead is not set: the caller adds up what they return.
func (in *Input) ScanSections(ctx context.Context, opts segments.ScanOptions, secs []segments.Section, sink segments.Sink, warn io.Writer) (int64, error) {
	opts = in.TrimTrust(opts, warn)
	opts.Follow = false
	return segments.ScanSections(ctx, in.File, in.Size, secs, opts, sink)
}

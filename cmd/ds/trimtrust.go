package main

import (
	"fmt"
	"io"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// trimTrust returns opts for reading input in: a store's stream is its
// read-out, whose Trimmed record hides the frames below it; in a capture
// file a Trimmed record hides nothing, and when the file holds frames
// below one, stderr says so (ds-format(5) "Trimmed").
func trimTrust(opts segments.ScanOptions, in *input, stderr io.Writer) segments.ScanOptions {
	if in.store != nil {
		opts.Store = true
		return opts
	}
	opts.CaptureTrimmed = func(s frames.StreamID, before frames.Position, n uint64) {
		fmt.Fprintf(stderr, "ds: %s: a Trimmed record of stream %s (positions below %d) in a capture file: %s below it %s shown, not hidden\n",
			in.name, ingestSafe(s.String()), before, plural(n, "frame"), isAre(n))
	}
	return opts
}

// isAre returns "is" for 1, "are" otherwise.
func isAre(n uint64) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// Package export writes ds export's formats: a capture's lines in the
// formats of other tools (ds(1) "ds export").
//
// [Write] reads the inputs with the read path of the views
// (viewer.Inputs.Scan: merged by time, as ds log reads them) into a
// views.Printer whose LogOptions.Entries hands over what ds log --json
// would print, each with its stream's clock time, and encodes those
// entries. Nothing here parses ds's text output. The formats:
//
//   - [Asciicast]: asciicast v2 (https://docs.asciinema.org/manual/asciicast/v2/),
//     for asciinema play and its web player. A header line, then one
//     event [TIME, "o", DATA] per frame of a text channel, stdout and
//     stderr alike, in the order ds log prints them (frames are not
//     joined into lines, so a progress bar plays as it was drawn). TIME
//     is seconds since the first clock reading of the inputs, with
//     microseconds, by the wall clock less its steps (views.Entry
//     SteadyNS: a clock set back or forward, which ds log shows, does not
//     make a jump); it never decreases (an event of a stream behind
//     another in time is shown at the time of the previous event). DATA
//     is the frame's bytes as a JSON string: a UTF-8 character split
//     across frames is joined, every other byte that is not UTF-8 becomes
//     U+FFFD. A capture made without a pty (its proc.lifecycle "started"
//     record lacks "pty":true, or is not among what is exported) has
//     each LF not after a CR written CR LF, as a terminal's line
//     discipline would have. Gaps, drops, transport losses and damaged
//     ranges are marker events [TIME, "m", MESSAGE]. The header has
//     width and height (Options.Width, Height; 80×24 by default: ds does
//     not record a window size), timestamp (the first clock reading, Unix
//     seconds), command (the argv of the first proc.lifecycle "started"
//     record, joined with spaces, each argument quoted as a shell needs)
//     and title (Options.Title) when known.
//   - [OTLP]: OpenTelemetry logs in the OTLP/JSON encoding
//     (https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding):
//     each output line is one complete ExportLogsServiceRequest holding
//     one LogRecord, so that lines can be posted one by one to an
//     OTLP/HTTP endpoint (/v1/logs) or read by the collector's
//     otlpjsonfile receiver. See [OTLP] for the mapping.
//   - [CSV] and [TSV]: one row per text line, record, bytes frame and
//     note (gap, drop, transport loss, start, trimmed range, damage). See
//     [CSV] for the columns.
//
// What is exported is what ds log shows (views.Selection; the writer's
// own datastream.* channels are hidden unless named), lines and records
// alike, except that asciicast takes only text channels.
package export

// Package report writes ds report's page: one self-contained HTML file of
// captures, for a person to read in a browser (ds(1) "ds report").
//
// [Build] reads the inputs with the read path of the views
// (viewer.Inputs.Scan: merged by time, as ds log reads them) and feeds
// every input to three places at once: a views.Printer whose
// LogOptions.Entries hands over the objects ds log --json would print
// (lines joined across frames, records, gaps, drops, transport losses,
// damaged ranges, each with its stream's clock time); a views.Info, the
// summary of ds info --json; and the host charts, which read the host.cpu,
// host.mem, host.net and host.gpu records (hostprobe's host.*.v1) as they
// come. Nothing here parses ds's text output.
//
// The page: a summary per stream (command, exit, time, resource use,
// losses with their reasons, damage), inline SVG charts on the log's time
// axis (ms since the first clock reading), and the log, one element per
// line with the id NODE#LIFE/POSITION (the first line of each position),
// its time as data-t (ms from the same origin). Payload bytes are always
// text: HTML's special characters are escaped, a line's SGR colours become
// spans of the page's classes, every other control byte, escape sequence,
// bidi control and byte that is not UTF-8 is shown escaped. A
// Content-Security-Policy lets the page load nothing and run only its own
// script (by its SHA-256), which is written for it (page.js, page.css),
// with no library.
//
// A page is kept under a size budget ([Options].MaxBytes): the log's
// first and last 45 % are kept, and of its middle the lines that matter
// (errors, lifecycle events, losses) while they fit in a tenth; each
// range left off is named in place and in the summary with the ds log
// command that prints it ([Elided]).
package report

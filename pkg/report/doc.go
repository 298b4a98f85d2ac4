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
// axis (ms since the first clock reading; past 2000 samples a series is
// drawn with the smallest and largest of each pixel column), and the
// log. The log is data, not markup: one JSON array a row, [KIND, STREAM,
// POSITION, TIME, TEXT], in a <script type="application/json"> element
// (every '<' written \u003c, so that no payload can end it), which the
// page's script draws as text nodes, only the rows in view (virtual
// scrolling, rows of a fixed height): a page of a million rows opens in
// about a second. A row's address is NODE#LIFE/POSITION. Payload bytes
// are always text: a line's SGR colours become segments of the page's
// classes, every other control byte, escape sequence, bidi control and
// byte that is not UTF-8 is shown escaped. A Content-Security-Policy
// lets the page load nothing and run only its own script (by its
// SHA-256), which is written for it (page.js, page.css), with no
// library.
//
// A page is kept under a size budget ([Options].MaxBytes): the log's
// first and last 45 % are kept, and of its middle the lines that matter
// (errors, lifecycle events, losses) while they fit in a tenth; each
// range left off is named in place and in the summary with the ds log
// command that prints it ([Elided]).
package report

package report

import (
	"bufio"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ds-telemetry/ds/pkg/textfmt"
	"github.com/ds-telemetry/ds/pkg/views"
)

// The page's style and script, written by us (no library), inlined.
var (
	//go:embed page.css
	pageCSS string
	//go:embed page.js
	pageJS string
)

// csp is the page's Content-Security-Policy: it loads nothing, from
// anywhere, and runs no script but its own (by hash), so that even a
// payload that got past the escaping would run nothing.
var csp = func() string {
	sum := sha256.Sum256([]byte(pageJS))
	return "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}()

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// write writes the page: head, summary, charts, log, script. It returns
// the bytes written.
func (b *builder) write(w io.Writer, files []views.FileSummary, streams []views.StreamSummary) (int64, error) {
	tail := b.finishTail()
	b.closeRun()
	cw := &countWriter{w: w}
	bw := bufio.NewWriterSize(cw, 256<<10)
	h := make([]byte, 0, 64<<10)
	h = append(h, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<meta http-equiv=\"Content-Security-Policy\" content=\""...)
	h = append(h, csp...)
	h = append(h, "\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>ds report: "...)
	h = appendHTML(h, []byte(b.title()))
	h = append(h, "</title>\n<style>\n"...)
	h = append(h, pageCSS...)
	h = b.appendChannelCSS(h)
	h = append(h, "</style></head>\n<body>\n<header><h1>"...)
	h = appendHTML(h, []byte(b.title()))
	h = append(h, "</h1>\n<nav><input id=\"q\" type=\"search\" placeholder=\"search the log (regexp; case-insensitive unless it has upper case)\" autocomplete=\"off\">"+
		"<label><input id=\"only\" type=\"checkbox\"> only matches</label><span id=\"count\"></span>"+
		"<button id=\"prev\" type=\"button\" title=\"previous match (Shift+Enter)\">↑</button><button id=\"next\" type=\"button\" title=\"next match (Enter)\">↓</button>"+
		"<button id=\"first-error\" type=\"button\">first error</button><button id=\"next-error\" type=\"button\">next error</button>"+
		"<button id=\"exit\" type=\"button\">exit</button><button id=\"first-loss\" type=\"button\">first loss</button></nav></header>\n<main>\n"...)
	h = b.appendSummary(h, files, streams)
	lo, hi := b.span()
	if len(b.host.order) > 0 || b.host.samples > 0 {
		h = append(h, "<section id=\"charts\"><h2>Host</h2>\n"...)
		multi := false
		for _, s := range b.host.order {
			multi = multi || s.st != b.host.order[0].st
		}
		h = b.host.appendCharts(h, lo, hi, b.t0, b.marks, multi)
		h = append(h, "<div class=\"axis\"><span>"...)
		h = appendSince(h, lo, b.t0)
		h = append(h, " s</span><span>"...)
		h = appendSince(h, hi, b.t0)
		h = append(h, " s</span></div></section>\n"...)
	}
	h = append(h, "<section id=\"log\"><h2>Log</h2>\n<div id=\"view\" tabindex=\"0\"><div id=\"rows\"></div></div>\n<pre id=\"detail\" hidden></pre>\n"...)
	h = append(h, "<noscript><p>The log is data this page's script shows: it needs JavaScript (ds log prints it).</p></noscript></section>\n</main>\n<div id=\"tip\" hidden></div>\n"...)
	// The log's rows, as data: the first element says what the rows'
	// numbers refer to (appendMeta), each row follows after a comma.
	h = append(h, "<script id=\"ds-data\" type=\"application/json\">["...)
	h = b.appendMeta(h)
	h = append(h, '\n')
	bw.Write(h)
	bw.Write(b.head)
	bw.Write(b.mid)
	for _, r := range tail {
		bw.Write(r)
	}
	t := make([]byte, 0, 16<<10)
	t = append(t, "]</script>\n<script>"...)
	t = append(t, pageJS...)
	t = append(t, "</script>\n</body></html>\n"...)
	bw.Write(t)
	err := bw.Flush()
	return cw.n, err
}

// appendMeta appends the object that says what the rows' numbers are:
// {"streams": [NODE#LIFE, …] (a row's STREAM indexes it), "kinds":
// [[CLASSES, WORD], …] (a row's KIND: its classes, and the word of its
// kind column)}.
func (b *builder) appendMeta(h []byte) []byte {
	h = append(h, `{"streams":[`...)
	for i, st := range b.order {
		if i > 0 {
			h = append(h, ',')
		}
		h = textfmt.AppendJSONString(h, st.id.String(), true)
	}
	h = append(h, `],"kinds":[`...)
	var cls []byte
	for i, k := range b.kinds {
		if i > 0 {
			h = append(h, ',')
		}
		cls = append(cls[:0], 'l')
		for j, name := range flagClasses {
			if k.flags&(1<<j) != 0 {
				cls = append(append(cls, ' '), name...)
			}
		}
		if k.class >= 0 {
			cls = append(cls, " c"...)
			cls = strconv.AppendInt(cls, int64(k.class), 10)
		}
		h = append(h, '[')
		h = textfmt.AppendJSONString(h, string(cls), true)
		h = append(h, ',')
		h = textfmt.AppendJSONString(h, whatWords[k.what], true)
		h = append(h, ']')
	}
	return append(h, "]}"...)
}

// span returns the time axis of the charts: the log's first and last
// clock reading, widened to the samples.
func (b *builder) span() (lo, hi int64) {
	lo, hi = b.tmin, b.t1
	slo, shi := b.host.span()
	if slo != 0 && (lo == 0 || slo < lo) {
		lo = slo
	}
	hi = max(hi, shi)
	return lo, hi
}

// title is the page's title: the command of the first process, or the
// inputs.
func (b *builder) title() string {
	for _, st := range b.order {
		for _, p := range st.procs {
			if p.started != nil && len(p.started.Argv) > 0 {
				return textfmt.ShellJoin(p.started.Argv)
			}
		}
	}
	return strings.Join(b.opts.Inputs, " ")
}

// appendChannelCSS appends the rules that name the channels in the log's
// channel column (the column is written once per channel, here, not per
// line). With several streams, the node comes first.
func (b *builder) appendChannelCSS(h []byte) []byte {
	streamOf := make(map[*chanState]*streamState)
	for _, st := range b.order {
		for _, c := range st.chans {
			streamOf[c] = st
		}
	}
	multi := len(b.order) > 1
	for _, c := range b.chans {
		if c.host != "" {
			continue
		}
		name := c.name
		if name == "" {
			name = "(no descriptor)"
		}
		if st := streamOf[c]; multi && st != nil {
			name = string(st.id.Node) + " " + name
		}
		h = append(h, ".c"...)
		h = strconv.AppendInt(h, int64(c.class), 10)
		h = append(h, ">i::before{content:\""...)
		h = appendCSSString(h, name)
		h = append(h, "\"}\n"...)
	}
	return h
}

// appendCSSString appends s for a CSS string: every character but
// letters, digits, '.', '_' and '-' as a CSS escape, so that nothing in
// a channel name can end the string or the style element.
func appendCSSString(b []byte, s string) []byte {
	for _, r := range s {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			b = append(b, byte(r))
			continue
		}
		b = append(b, '\\')
		b = strconv.AppendInt(b, int64(r), 16)
		b = append(b, ' ')
	}
	return b
}

// appendSummary appends the summary: one table per stream, the inputs
// with their damage, the losses with links to where they are in the log,
// and the elided ranges.
func (b *builder) appendSummary(h []byte, files []views.FileSummary, streams []views.StreamSummary) []byte {
	h = append(h, "<section id=\"summary\"><h2>Summary</h2>\n"...)
	if len(streams) == 0 {
		h = append(h, "<p>The inputs hold no stream.</p>\n"...)
	}
	for _, s := range streams {
		h = append(h, "<div class=\"stream\"><h3>"...)
		h = appendHTML(h, []byte(s.Stream))
		if s.Label != nil {
			h = append(h, " <small>"...)
			h = appendHTML(h, []byte(*s.Label))
			h = append(h, "</small>"...)
		}
		h = append(h, "</h3><table>\n"...)
		var st *streamState
		for _, x := range b.order {
			if x.id.String() == s.Stream {
				st = x
			}
		}
		if st != nil {
			for _, p := range st.procs {
				h = appendProc(h, p)
			}
		}
		if s.Exits != nil && (st == nil || len(st.procs) == 0) {
			for _, e := range s.Exits {
				h = row2(h, "exit", e.Channel+": "+e.Kind+" "+strconv.Itoa(e.Value), e.ExitCode != 0)
			}
		}
		if s.DurationNS != nil {
			h = row2(h, "time", seconds(*s.DurationNS)+", "+clockText(s.TimeStart)+" – "+clockText(s.TimeEnd), false)
		}
		h = row2(h, "frames", textfmt.Nouns(s.Frames, "frame")+", "+textfmt.Bytes(s.Bytes)+" of payload, "+textfmt.Nouns(uint64(len(s.Channels)), "channel")+", "+textfmt.Nouns(uint64(s.Segments), "segment"), false)
		h = row2(h, "losses", lossText(s), s.GapCount+s.DropCount+s.TransportLosses+s.Conflicts > 0)
		h = append(h, "</table></div>\n"...)
	}
	h = append(h, "<div class=\"files\"><h3>Inputs</h3><table>\n"...)
	for _, f := range files {
		what := textfmt.Bytes(uint64(max(f.Bytes, 0)))
		h = row2(h, f.Name, what, false)
	}
	h = append(h, "</table></div>\n"...)
	if len(b.damage) > 0 {
		h = append(h, "<div class=\"notes\"><h3>Damage</h3><ul>\n"...)
		for _, n := range b.damage {
			h = appendNoteItem(h, n)
		}
		h = append(h, "</ul></div>\n"...)
	}
	if len(b.losses) > 0 {
		h = append(h, "<div class=\"notes\"><h3>Losses</h3><ul>\n"...)
		for _, n := range b.losses {
			h = appendNoteItem(h, n)
		}
		if b.nlosses > uint64(len(b.losses)) {
			h = append(h, "<li>… and "...)
			h = strconv.AppendUint(h, b.nlosses-uint64(len(b.losses)), 10)
			h = append(h, " more (ds gaps lists them)</li>\n"...)
		}
		h = append(h, "</ul></div>\n"...)
	}
	if b.errors > 0 {
		h = append(h, "<p class=\"errors\">"...)
		h = append(h, textfmt.Nouns(b.errors, "line")...)
		h = append(h, " read like errors (error, fatal, fail, panic, exception, traceback); <b>first error</b> jumps to the first.</p>\n"...)
	}
	if len(b.elisions) > 0 {
		h = append(h, "<div class=\"notes\" id=\"elisions\"><h3>Elided</h3><p>"...)
		h = append(h, textfmt.Nouns(b.elided, "line")...)
		h = append(h, " of "...)
		h = strconv.AppendUint(h, b.lines, 10)
		h = append(h, " are left off to keep the page under "...)
		h = append(h, sizeText(b.opts.MaxBytes)...)
		h = append(h, " (ds report --max-size); lines that read like errors, lifecycle events and losses are kept while they fit. To see them:</p><ul>\n"...)
		for i, e := range b.elisions {
			if i == 100 {
				h = append(h, "<li>…</li>\n"...)
				break
			}
			h = append(h, "<li><a href=\"#elided-"...)
			h = strconv.AppendInt(h, int64(i+1), 10)
			h = append(h, "\">"...)
			h = append(h, textfmt.Nouns(e.Lines, "line")...)
			h = append(h, "</a>: <code>"...)
			h = appendHTML(h, []byte(e.Command))
			h = append(h, "</code></li>\n"...)
		}
		h = append(h, "</ul></div>\n"...)
	}
	return append(h, "</section>\n"...)
}

// appendProc appends the rows of one process: command, exit, resources.
func appendProc(h []byte, p *procState) []byte {
	if p.started != nil {
		h = row2(h, "command", textfmt.ShellJoin(p.started.Argv), false)
		if p.started.Cwd != "" {
			h = row2(h, "directory", p.started.Cwd, false)
		}
	}
	switch {
	case p.failed != nil:
		h = row2(h, "exit", "could not start: "+p.failed.Error, true)
	case p.exited != nil:
		h = append(h, "<tr><th>exit</th><td"...)
		if p.exited.FailedExit() {
			h = append(h, " class=\"bad\""...)
		}
		h = append(h, ">"...)
		if p.exitRow != "" {
			h = append(h, "<a href=\"#"...)
			h = appendHTML(h, []byte(fragment(p.exitRow)))
			h = append(h, "\">"...)
		}
		h = appendHTML(h, []byte(exitText(p.exited)))
		if p.exitRow != "" {
			h = append(h, "</a>"...)
		}
		h = append(h, "</td></tr>\n"...)
		if u := usageText(p.exited); u != "" {
			h = row2(h, "resources", strings.TrimPrefix(u, " after "), false)
		}
	case p.started != nil:
		h = row2(h, "exit", "no exit recorded (still running when the capture ended, or ds was killed)", true)
	}
	return h
}

// row2 appends a table row th, td (bad: styled as a failure).
func row2(h []byte, th, td string, bad bool) []byte {
	h = append(h, "<tr><th>"...)
	h = appendHTML(h, []byte(th))
	h = append(h, "</th><td"...)
	if bad {
		h = append(h, " class=\"bad\""...)
	}
	h = append(h, ">"...)
	h = appendHTML(h, []byte(td))
	return append(h, "</td></tr>\n"...)
}

// appendNoteItem appends a list item of a loss or damage, linked to its
// row when it has one.
func appendNoteItem(h []byte, n note) []byte {
	h = append(h, "<li>"...)
	if n.rowID != "" {
		h = append(h, "<a href=\"#"...)
		h = appendHTML(h, []byte(fragment(n.rowID)))
		h = append(h, "\">"...)
	}
	if n.stream != "" {
		h = appendHTML(h, []byte(n.stream))
		h = append(h, ": "...)
	}
	h = appendHTML(h, []byte(n.text))
	if n.rowID != "" {
		h = append(h, "</a>"...)
	}
	return append(h, "</li>\n"...)
}

// fragment returns a row id as a URL fragment: '#', '%' and what a URL
// cannot hold percent-encoded.
func fragment(id string) string {
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		c := id[i]
		if c <= 0x20 || c >= 0x7f || c == '#' || c == '%' || c == '"' || c == '<' || c == '>' || c == '`' {
			b.WriteString("%" + strings.ToUpper(strconv.FormatInt(int64(c)>>4, 16)+strconv.FormatInt(int64(c)&15, 16)))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// lossText says what a stream lost, with the reasons.
func lossText(s views.StreamSummary) string {
	var parts []string
	if s.GapCount > 0 {
		parts = append(parts, textfmt.Nouns(s.GapCount, "gap")+" ("+textfmt.Nouns(s.MissingFrames, "frame")+" missing)")
	}
	if s.DropCount > 0 {
		var reasons []string
		for _, d := range s.Drops {
			if !slices.Contains(reasons, d.Reason) {
				reasons = append(reasons, d.Reason)
			}
		}
		parts = append(parts, textfmt.Nouns(s.DroppedFrames, "frame")+" dropped in "+textfmt.Nouns(s.DropCount, "place")+" ("+strings.Join(reasons, ", ")+")")
	}
	if s.TransportLosses > 0 {
		parts = append(parts, textfmt.Nouns(s.TransportLosses, "transport loss")+" ("+textfmt.Nouns(s.UndeliveredFrames, "frame")+" not delivered by an output)")
	}
	if s.Conflicts > 0 {
		parts = append(parts, textfmt.Nouns(s.Conflicts, "conflict"))
	}
	if s.LateFrames > 0 {
		parts = append(parts, textfmt.Nouns(s.LateFrames, "late frame"))
	}
	if s.HeadMissing {
		parts = append(parts, "its start is not in the inputs")
	}
	if s.HealthRecords == 0 {
		parts = append(parts, "no health record (drops unknown)")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// clockText shows an RFC 3339 time of the summary in UTC, to the ms.
func clockText(s *string) string {
	if s == nil {
		return "?"
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		return *s
	}
	return t.UTC().Format("2006-01-02 15:04:05.000Z")
}

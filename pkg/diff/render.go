package diff

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ds-telemetry/ds/pkg/textfmt"
	"github.com/ds-telemetry/ds/pkg/views"
)

// SGR styles of the text output with colour.
const (
	sgrBold  = "\x1b[1m"
	sgrRed   = "\x1b[31m"
	sgrGreen = "\x1b[32m"
	sgrCyan  = "\x1b[36m"
	sgrReset = "\x1b[0m"
)

// textWriter is the text output being written: w, and whether it is
// coloured.
type textWriter struct {
	w     *bufio.Writer
	color bool
}

func (t *textWriter) styled(style, s string) string {
	if !t.color || style == "" || s == "" {
		return s
	}
	return style + s + sgrReset
}

// WriteText writes the diff for people to w: a header with both runs
// side by side (command, exit status, time, CPU, memory, host peaks,
// lines, losses) and the change, the hunks (unified-diff marks, both
// line numbers, both times since each run's start, channel, text), and
// the steps whose time changed most. With color, removed lines are red,
// added ones green, and a line's own SGR colours pass (see
// views.AppendTerminal); without, everything a terminal would act on is
// escaped. It returns the first write error.
func (r *Result) WriteText(w io.Writer, color bool) error {
	t := &textWriter{w: bufio.NewWriterSize(w, 64<<10), color: color}
	r.writeHeader(t)
	r.writeHunks(t)
	r.writeTimings(t)
	return t.w.Flush()
}

func (r *Result) writeHeader(t *textWriter) {
	an, bn := textfmt.Escape(r.A.Input), textfmt.Escape(r.B.Input)
	fmt.Fprintf(t.w, "%s\n", t.styled(sgrBold, "--- "+an+streamList(r.A.Streams)))
	fmt.Fprintf(t.w, "%s\n", t.styled(sgrBold, "+++ "+bn+streamList(r.B.Streams)))
	rows := [][4]string{{"", an, bn, "change"}}
	pa, pb := r.A.Processes, r.B.Processes
	for i := 0; i < max(len(pa), len(pb)); i++ {
		var a, b *Process
		if i < len(pa) {
			a = &pa[i]
		}
		if i < len(pb) {
			b = &pb[i]
		}
		suffix := ""
		if len(pa) > 1 || len(pb) > 1 {
			suffix = " " + strconv.Itoa(i+1)
		}
		rows = append(rows, [4]string{"command" + suffix, command(a), command(b), ""})
		ea, eb := exitText(a), exitText(b)
		ch := ""
		if (a == nil) != (b == nil) || a != nil && !a.Exit.equal(b.Exit) {
			ch = "differs"
		}
		rows = append(rows, [4]string{"exit" + suffix, ea, eb, ch})
		get := func(p *Process, f func(*Process) *int64) *int64 {
			if p == nil {
				return nil
			}
			return f(p)
		}
		for _, u := range []struct {
			name  string
			f     func(*Process) *int64
			bytes bool
		}{
			{"wall time", func(p *Process) *int64 { return p.WallNS }, false},
			{"user CPU", func(p *Process) *int64 { return p.UserNS }, false},
			{"system CPU", func(p *Process) *int64 { return p.SysNS }, false},
			{"max RSS", func(p *Process) *int64 { return p.MaxRSSBytes }, true},
		} {
			va, vb := get(a, u.f), get(b, u.f)
			if va == nil && vb == nil {
				continue
			}
			if u.bytes {
				rows = append(rows, [4]string{u.name + suffix, bytesText(va), bytesText(vb), bytesDelta(va, vb)})
			} else {
				rows = append(rows, [4]string{u.name + suffix, durText(va), durText(vb), durDelta(va, vb)})
			}
		}
	}
	if len(pa) == 0 && len(pb) == 0 {
		rows = append(rows, [4]string{"duration", durText(r.A.DurationNS), durText(r.B.DurationNS), durDelta(r.A.DurationNS, r.B.DurationNS)})
	}
	ha, hb := r.A.Host, r.B.Host
	if ha.CPUPercent != nil || hb.CPUPercent != nil {
		rows = append(rows, [4]string{"host CPU peak", pctText(ha.CPUPercent), pctText(hb.CPUPercent), pctDelta(ha.CPUPercent, hb.CPUPercent)})
	}
	if ha.MemUsedBytes != nil || hb.MemUsedBytes != nil {
		ua, ub := u64ptr(ha.MemUsedBytes), u64ptr(hb.MemUsedBytes)
		rows = append(rows, [4]string{"host mem peak", bytesText(ua) + pctParen(ha.MemUsedPercent), bytesText(ub) + pctParen(hb.MemUsedPercent), bytesDelta(ua, ub)})
	}
	if ha.GPUPercent != nil || hb.GPUPercent != nil {
		rows = append(rows, [4]string{"GPU peak", pctText(ha.GPUPercent), pctText(hb.GPUPercent), pctDelta(ha.GPUPercent, hb.GPUPercent)})
	}
	if ha.GPUMemMiB != nil || hb.GPUMemMiB != nil {
		rows = append(rows, [4]string{"GPU mem peak", mibText(ha.GPUMemMiB), mibText(hb.GPUMemMiB), mibDelta(ha.GPUMemMiB, hb.GPUMemMiB)})
	}
	lines := "same"
	if r.Removed+r.Added > 0 {
		lines = fmt.Sprintf("%d only in %s, %d only in %s", r.Removed, an, r.Added, bn)
	}
	rows = append(rows, [4]string{"lines", linesText(r.A), linesText(r.B), lines})
	if r.A.Losses.any() || r.B.Losses.any() {
		rows = append(rows, [4]string{"capture losses", lossText(r.A.Losses), lossText(r.B.Losses), "lines may be missing there"})
	}
	var wd [3]int
	for _, row := range rows {
		for i := range wd {
			wd[i] = max(wd[i], utf8.RuneCountInString(row[i]))
		}
	}
	for k, row := range rows {
		var b strings.Builder
		for i := 0; i < 3; i++ {
			b.WriteString(row[i])
			b.WriteString(strings.Repeat(" ", wd[i]-utf8.RuneCountInString(row[i])+2))
		}
		b.WriteString(row[3])
		s := strings.TrimRight(b.String(), " ")
		if k == 0 {
			s = t.styled(sgrBold, s)
		}
		fmt.Fprintf(t.w, "%s\n", s)
	}
	if r.Approximate {
		fmt.Fprintf(t.w, "note: a part too long and too different to compare line by line is shown as replaced\n")
	}
}

func streamList(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return "  " + textfmt.Escape(strings.Join(s, " "))
}

func command(p *Process) string {
	if p == nil {
		return "-"
	}
	if len(p.Argv) == 0 {
		return textfmt.Escape(p.Label)
	}
	s := textfmt.ShellJoin(p.Argv)
	if n := utf8.RuneCountInString(s); n > 40 {
		s = string([]rune(s)[:39]) + "…"
	}
	return textfmt.Escape(s)
}

func exitText(p *Process) string {
	if p == nil || p.Exit == nil {
		return "-"
	}
	switch p.Exit.Kind {
	case "code":
		return "code " + strconv.Itoa(p.Exit.Value)
	case "signal":
		return "signal " + strconv.Itoa(p.Exit.Value)
	case "spawn_failed":
		return "could not start"
	}
	return p.Exit.Kind
}

func linesText(s Summary) string {
	if s.IgnoredLines > 0 {
		return fmt.Sprintf("%d (%d ignored)", s.Lines, s.IgnoredLines)
	}
	return strconv.Itoa(s.Lines)
}

func lossText(l Losses) string {
	var parts []string
	for _, p := range []struct {
		n    int
		what string
	}{{l.Gaps, "gap"}, {l.Drops, "drop"}, {l.Transport, "transport loss"}, {l.Damage, "damaged range"}} {
		if p.n > 0 {
			parts = append(parts, textfmt.Nouns(uint64(p.n), p.what))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// durString says ns as a Go duration, rounded to what matters: 1.235s,
// 45.1ms, 2m3.5s.
func durString(ns int64) string {
	d := time.Duration(ns)
	a := d
	if a < 0 {
		a = -a
	}
	switch {
	case a >= time.Second:
		d = d.Round(time.Millisecond)
	case a >= time.Millisecond:
		d = d.Round(10 * time.Microsecond)
	case a >= time.Microsecond:
		d = d.Round(time.Microsecond)
	}
	return d.String()
}

func durText(ns *int64) string {
	if ns == nil {
		return "-"
	}
	return durString(*ns)
}

func durDelta(a, b *int64) string {
	if a == nil || b == nil {
		return ""
	}
	d := *b - *a
	if d == 0 {
		return ""
	}
	s := durString(d)
	if d > 0 {
		s = "+" + s
	}
	if *a > 0 && *b > 0 && d != 0 {
		s += fmt.Sprintf(" (×%.2f)", float64(*b)/float64(*a))
	}
	return s
}

func bytesText(n *int64) string {
	if n == nil || *n < 0 {
		return "-"
	}
	return textfmt.Bytes(uint64(*n))
}

func bytesDelta(a, b *int64) string {
	if a == nil || b == nil || *a < 0 || *b < 0 {
		return ""
	}
	d := *b - *a
	if d == 0 {
		return ""
	}
	if d < 0 {
		return "-" + textfmt.Bytes(uint64(-d))
	}
	return "+" + textfmt.Bytes(uint64(d))
}

func u64ptr(p *uint64) *int64 {
	if p == nil {
		return nil
	}
	v := int64(min(*p, 1<<63-1))
	return &v
}

func pctText(p *float64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatFloat(*p, 'f', 1, 64) + "%"
}

func pctParen(p *float64) string {
	if p == nil {
		return ""
	}
	return " (" + pctText(p) + ")"
}

func pctDelta(a, b *float64) string {
	if a == nil || b == nil || *a == *b {
		return ""
	}
	return fmt.Sprintf("%+.1f points", *b-*a)
}

func mibText(p *float64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatFloat(*p, 'f', 0, 64) + " MiB"
}

func mibDelta(a, b *float64) string {
	if a == nil || b == nil || *a == *b {
		return ""
	}
	return fmt.Sprintf("%+.0f MiB", *b-*a)
}

// sinceText says a line's time as seconds since its run's start, to the
// ms: "+12.345"; "-" without a time.
func sinceText(ns, t0 int64) string {
	if ns == 0 || t0 == 0 {
		return "-"
	}
	ms := (ns - t0) / 1e6
	sign := "+"
	if ms < 0 {
		sign, ms = "-", -ms
	}
	return fmt.Sprintf("%s%d.%03d", sign, ms/1000, ms%1000)
}

// lineOf returns line number n (1-based) of run r.
func (r *Run) lineOf(n int) *line { return &r.lines[n-1] }

// appendLineText appends a line's text as shown: escaped, with a note of
// the bytes not kept.
func (r *Run) appendLineText(b []byte, l *line, color bool) []byte {
	b = views.AppendTerminal(b, r.text[l.off:l.off+int(l.n)], color)
	if l.full > l.n {
		b = fmt.Appendf(b, " … (%d more bytes)", l.full-l.n)
	}
	return b
}

func (r *Run) channelName(l *line) string { return r.chans[l.ch].name }

func (r *Result) writeHunks(t *textWriter) {
	if len(r.Hunks) == 0 {
		return
	}
	wa, wb, ta, tb, wc := 1, 1, 1, 1, 1
	for _, h := range r.Hunks {
		for _, hl := range h.Lines {
			if hl.A > 0 {
				wa = max(wa, len(strconv.Itoa(hl.A)))
				ta = max(ta, len(sinceText(r.a.lineOf(hl.A).ns, r.a.t0)))
				wc = max(wc, utf8.RuneCountInString(textfmt.Escape(shortChannel(r.a.channelName(r.a.lineOf(hl.A))))))
			}
			if hl.B > 0 {
				wb = max(wb, len(strconv.Itoa(hl.B)))
				tb = max(tb, len(sinceText(r.b.lineOf(hl.B).ns, r.b.t0)))
				wc = max(wc, utf8.RuneCountInString(textfmt.Escape(shortChannel(r.b.channelName(r.b.lineOf(hl.B))))))
			}
		}
	}
	var b []byte
	for _, h := range r.Hunks {
		fmt.Fprintf(t.w, "\n%s\n", t.styled(sgrCyan, fmt.Sprintf("@@ -%s +%s @@", hunkRange(h.AStart, h.ALines), hunkRange(h.BStart, h.BLines))))
		for _, hl := range h.Lines {
			b = b[:0]
			style := ""
			switch hl.Op {
			case OpRemove:
				style = sgrRed
			case OpAdd:
				style = sgrGreen
			}
			if t.color && style != "" {
				b = append(b, style...)
			}
			b = append(b, byte(hl.Op))
			var run *Run
			var l *line
			b = appendNum(b, hl.A, wa)
			b = append(b, ' ')
			b = appendNum(b, hl.B, wb)
			b = append(b, "  "...)
			at, bt := "", ""
			if hl.A > 0 {
				run, l = r.a, r.a.lineOf(hl.A)
				at = sinceText(l.ns, r.a.t0)
			}
			if hl.B > 0 {
				bl := r.b.lineOf(hl.B)
				bt = sinceText(bl.ns, r.b.t0)
				if run == nil {
					run, l = r.b, bl
				}
			}
			b = appendLeft(b, at, ta)
			b = append(b, ' ')
			b = appendLeft(b, bt, tb)
			b = append(b, "  "...)
			ch := textfmt.Escape(shortChannel(run.channelName(l)))
			b = append(b, ch...)
			b = append(b, strings.Repeat(" ", wc-utf8.RuneCountInString(ch)+2)...)
			b = run.appendLineText(b, l, t.color)
			if t.color && style != "" {
				b = append(b, sgrReset...)
			}
			b = append(b, '\n')
			t.w.Write(b)
		}
	}
}

func hunkRange(start, n int) string {
	if n == 1 {
		return strconv.Itoa(start)
	}
	return strconv.Itoa(start) + "," + strconv.Itoa(n)
}

// appendNum appends n right-aligned in width w, blanks for 0.
func appendNum(b []byte, n, w int) []byte {
	s := ""
	if n > 0 {
		s = strconv.Itoa(n)
	}
	b = append(b, strings.Repeat(" ", w-len(s))...)
	return append(b, s...)
}

// appendLeft appends s right-aligned in width w.
func appendLeft(b []byte, s string, w int) []byte {
	b = append(b, strings.Repeat(" ", max(w-len(s), 0))...)
	return append(b, s...)
}

func (r *Result) writeTimings(t *textWriter) {
	if !r.timingOn {
		return
	}
	fmt.Fprintf(t.w, "\n%s\n", t.styled(sgrBold, "timing: the steps whose time changed most, from a line both runs have to the next"))
	if len(r.Timings) == 0 {
		if r.a.t0 == 0 || r.b.t0 == 0 {
			fmt.Fprintf(t.w, "no clock records: the lines have no time\n")
		} else {
			fmt.Fprintf(t.w, "no step changed by %s or more\n", durString(r.timingMin))
		}
		return
	}
	rows := [][]string{}
	for _, tm := range r.Timings {
		from := "start"
		text := ""
		if tm.A > 0 {
			from = strconv.Itoa(tm.A) + "/" + strconv.Itoa(tm.B)
			l := r.a.lineOf(tm.A)
			text = textfmt.Escape(shortChannel(r.a.channelName(l))) + "  " + string(r.a.appendLineText(nil, l, false))
		}
		if tm.ANext == 0 {
			if text != "" {
				text += "  "
			}
			text += "(to the end)"
		}
		ch := durString(tm.ChangeNS)
		if tm.ChangeNS > 0 {
			ch = "+" + ch
		}
		rows = append(rows, []string{durString(tm.ANS), "→", durString(tm.BNS), ch, from, text})
	}
	var wd [5]int
	for _, row := range rows {
		for i := range wd {
			wd[i] = max(wd[i], utf8.RuneCountInString(row[i]))
		}
	}
	for k, row := range rows {
		var b strings.Builder
		b.WriteString("  ")
		for i := 0; i < 5; i++ {
			pad := strings.Repeat(" ", wd[i]-utf8.RuneCountInString(row[i]))
			switch i {
			case 3:
				style := sgrRed
				if r.Timings[k].ChangeNS < 0 {
					style = sgrGreen
				}
				b.WriteString(pad + t.styled(style, row[i]))
			case 4:
				b.WriteString(row[i] + pad)
			default:
				b.WriteString(pad + row[i])
			}
			b.WriteString(" ")
			if i >= 2 {
				b.WriteString(" ")
			}
		}
		b.WriteString(row[5])
		fmt.Fprintf(t.w, "%s\n", strings.TrimRight(b.String(), " "))
	}
}

// jsonLine is a line of a hunk in the JSON output.
type jsonLine struct {
	Op        string  `json:"op"`
	A         *int    `json:"a"`
	B         *int    `json:"b"`
	APosition *uint64 `json:"a_position,omitempty"`
	BPosition *uint64 `json:"b_position,omitempty"`
	ATime     *string `json:"a_time,omitempty"`
	BTime     *string `json:"b_time,omitempty"`
	// ASinceNS, BSinceNS: ns since each run's start.
	ASinceNS  *int64 `json:"a_since_ns,omitempty"`
	BSinceNS  *int64 `json:"b_since_ns,omitempty"`
	Channel   string `json:"channel"`
	Text      string `json:"text"`
	UTF8      *bool  `json:"utf8,omitempty"`
	BytesB64  string `json:"bytes_b64,omitempty"`
	Truncated *int   `json:"more_bytes,omitempty"`
}

type jsonTiming struct {
	A        int    `json:"a"`
	B        int    `json:"b"`
	ANext    int    `json:"a_next"`
	BNext    int    `json:"b_next"`
	ANS      int64  `json:"a_ns"`
	BNS      int64  `json:"b_ns"`
	ChangeNS int64  `json:"change_ns"`
	Channel  string `json:"channel,omitempty"`
	Text     string `json:"text,omitempty"`
}

// WriteJSON writes the diff to w as one JSON document (see ds(1) ds
// diff): "a" and "b" the summaries, "same", "exit_differs", "removed",
// "added", "approximate", "timings" (line numbers 0 for the start and the
// end, times in ns) and "hunks", each with its lines ("op" " ", "-" or
// "+"; "a" and "b" line numbers, null on the side a line is not in;
// positions, times, channel, "text"). The field order is stable. It
// returns the first write error.
func (r *Result) WriteJSON(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	put := func(name string, v any, last bool) {
		fmt.Fprintf(bw, "  %q: %s", name, marshal(v, "  ", "  "))
		if !last {
			bw.WriteString(",")
		}
		bw.WriteString("\n")
	}
	bw.WriteString("{\n")
	put("a", r.A, false)
	put("b", r.B, false)
	put("same", r.Same, false)
	put("exit_differs", r.ExitDiffers, false)
	put("removed", r.Removed, false)
	put("added", r.Added, false)
	put("approximate", r.Approximate, false)
	tms := []jsonTiming{}
	for _, tm := range r.Timings {
		jt := jsonTiming{A: tm.A, B: tm.B, ANext: tm.ANext, BNext: tm.BNext, ANS: tm.ANS, BNS: tm.BNS, ChangeNS: tm.ChangeNS}
		if tm.A > 0 {
			l := r.a.lineOf(tm.A)
			jt.Channel = r.a.channelName(l)
			jt.Text = string(r.a.text[l.off : l.off+int(l.n)])
		}
		tms = append(tms, jt)
	}
	put("timings", tms, false)
	bw.WriteString("  \"hunks\": [")
	for i, h := range r.Hunks {
		if i > 0 {
			bw.WriteString(",")
		}
		fmt.Fprintf(bw, "\n    {\"a_start\": %d, \"a_lines\": %d, \"b_start\": %d, \"b_lines\": %d, \"lines\": [", h.AStart, h.ALines, h.BStart, h.BLines)
		for k, hl := range h.Lines {
			if k > 0 {
				bw.WriteString(",")
			}
			bw.WriteString("\n      ")
			bw.Write(marshal(r.jsonLine(hl), "", ""))
		}
		bw.WriteString("\n    ]}")
	}
	if len(r.Hunks) > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteString("]\n}\n")
	return bw.Flush()
}

// marshal encodes v as JSON, indented when indent is not empty, without
// escaping <, > and & (the text is no HTML); v is always encodable.
func marshal(v any, prefix, indent string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent(prefix, indent)
	}
	enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func (r *Result) jsonLine(hl HunkLine) jsonLine {
	jl := jsonLine{Op: string(hl.Op)}
	var run *Run
	var l *line
	side := func(n int, rr *Run, num **int, pos **uint64, tm **string, since **int64) {
		if n == 0 {
			return
		}
		ln := rr.lineOf(n)
		*num = &n
		p := uint64(ln.pos)
		*pos = &p
		if ln.ns != 0 {
			s := time.Unix(0, ln.ns).UTC().Format(time.RFC3339Nano)
			*tm = &s
			if rr.t0 != 0 {
				d := ln.ns - rr.t0
				*since = &d
			}
		}
		if run == nil {
			run, l = rr, ln
		}
	}
	side(hl.A, r.a, &jl.A, &jl.APosition, &jl.ATime, &jl.ASinceNS)
	side(hl.B, r.b, &jl.B, &jl.BPosition, &jl.BTime, &jl.BSinceNS)
	jl.Channel = run.channelName(l)
	text := run.text[l.off : l.off+int(l.n)]
	jl.Text = string(text)
	if !utf8.Valid(text) {
		f := false
		jl.UTF8 = &f
		jl.BytesB64 = base64.StdEncoding.EncodeToString(text)
	}
	if l.full > l.n {
		m := int(l.full - l.n)
		jl.Truncated = &m
	}
	return jl
}

package top

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ds-telemetry/ds/pkg/plot"
	"github.com/ds-telemetry/ds/pkg/textfmt"
)

// RenderOptions configures [Model.Render].
type RenderOptions struct {
	// Width is the frame's width in cells (at least 40); Height its
	// height in lines: 0 for no limit (a plain snapshot: every panel,
	// and at most Lines text lines).
	Width, Height int
	// Lines is how many text lines a frame without a height shows (0:
	// 10; less than 0: none, ds top --lines 0).
	Lines int
	// Color styles the frame (ANSI SGR): titles bold, gauges green,
	// yellow or red by level, stderr lines' channel red.
	Color bool
	// Location is the time zone of the times shown (nil: UTC).
	Location *time.Location
	// Status is said in the header ("input ended", "following").
	Status string
}

// Render draws the model's state as one frame: lines of at most Width
// cells, each ending in "\n", at most Height of them when Height is set.
// A header says what is shown; then, per stream with host samples (in
// the order first seen), its panels: CPU (total, user, system, iowait,
// load, a bar and a sparkline of the total), one bar per core as space
// allows, memory, network rates (every interface but lo, summed, then
// each), each GPU; then the processes ds wrap ran, and the last lines of
// the text channels, as many as fit (the newest last). Everything that
// came from the input is escaped (textfmt.Escape). A value a record
// lacks is shown as "–". The frame depends only on the state and opts.
func (m *Model) Render(opts RenderOptions) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	w := max(opts.Width, 40)
	r := &renderer{w: w, color: opts.Color, loc: opts.Location}
	if r.loc == nil {
		r.loc = time.UTC
	}
	// Fixed part: the header, the panels, the processes.
	head := []string{m.header(r, opts.Status)}
	var cores [][]string // per host, its core rows, inserted if room
	var top [][]string   // per host, its panel lines
	multi := len(m.order) > 1
	for _, h := range m.order {
		var ls []string
		if multi {
			ls = append(ls, r.rule("── "+textfmt.Escape(string(h.node))+" "))
		}
		ls = append(ls, r.cpuLine(h)...)
		cores = append(cores, r.coreRows(h))
		ls = append(ls, r.memLine(h)...)
		ls = append(ls, r.netLines(h)...)
		ls = append(ls, r.gpuLines(h)...)
		top = append(top, ls)
	}
	var procs []string
	labels := make(map[string]int)
	for _, p := range m.procs {
		labels[p.label]++
	}
	for _, p := range m.procs {
		if p.state == "declared" {
			continue // no event yet
		}
		procs = append(procs, r.procLine(p, labels[p.label] > 1))
	}
	fixed := len(head) + len(procs)
	for _, ls := range top {
		fixed += len(ls)
	}
	if len(m.order) == 0 && len(m.lines) == 0 && len(procs) == 0 {
		head = append(head, "waiting for host samples or text lines…")
		fixed++
	}
	// What room is left goes to the cores, then to the text lines.
	room := math.MaxInt
	if opts.Height > 0 {
		room = opts.Height - fixed
	}
	nlines := opts.Lines
	switch {
	case nlines < 0:
		nlines = 0
	case nlines == 0:
		nlines = 10
	}
	var out []string
	out = append(out, head...)
	for i, ls := range top {
		cpuN := 1
		if multi {
			cpuN = 2
		}
		out = append(out, ls[:min(cpuN, len(ls))]...)
		want := len(cores[i])
		if opts.Height > 0 {
			keep := room
			if len(m.lines) > 0 {
				keep = room - min(len(m.lines)+1, 4) // leave a few text lines
			}
			want = min(want, max(keep, 0))
		}
		out = append(out, cores[i][:want]...)
		room -= want
		out = append(out, ls[min(cpuN, len(ls)):]...)
	}
	out = append(out, procs...)
	if opts.Height > 0 {
		nlines = room - 1 // the rule above them
	}
	if nlines > 0 && len(m.lines) > 0 {
		out = append(out, r.rule("── last lines "))
		for _, l := range m.lines[max(len(m.lines)-nlines, 0):] {
			out = append(out, r.textLine(l, len(m.nodes) > 1))
		}
	}
	if opts.Height > 0 && len(out) > opts.Height {
		out = out[:opts.Height]
	}
	var b strings.Builder
	for _, l := range out {
		b.WriteString(strings.TrimRight(l, " "))
		b.WriteByte('\n')
	}
	return b.String()
}

// header is the frame's first line.
func (m *Model) header(r *renderer, status string) string {
	s := "ds top"
	if status != "" {
		s += " (" + status + ")"
	}
	var latest float64
	for _, h := range m.order {
		latest = max(latest, h.lastMS)
	}
	if len(m.order) == 1 {
		s += "  " + textfmt.Escape(string(m.order[0].node))
	}
	if latest > 0 {
		s += "  " + time.UnixMilli(int64(latest)).In(r.loc).Format("2006-01-02 15:04:05")
	}
	s += "  " + textfmt.Nouns(uint64(len(m.streams)), "stream") + ", " + textfmt.Nouns(m.frames, "frame")
	if m.damaged > 0 {
		s += ", " + textfmt.Nouns(uint64(m.damaged), "damaged range")
	}
	return r.title(s)
}

// renderer holds what every line of a frame is drawn with.
type renderer struct {
	w     int
	color bool
	loc   *time.Location
}

// fit cuts s (plain text, no escapes) to the frame's width.
func (r *renderer) fit(s string) string {
	if utf8.RuneCountInString(s) <= r.w {
		return s
	}
	return string([]rune(s)[:r.w-1]) + "…"
}

// title is s bold, cut to the width.
func (r *renderer) title(s string) string {
	s = r.fit(s)
	if r.color {
		return "\x1b[1m" + s + "\x1b[0m"
	}
	return s
}

// rule is s, a section's title, then a rule to the frame's width.
func (r *renderer) rule(s string) string {
	return r.title(s + strings.Repeat("─", max(r.w-utf8.RuneCountInString(s), 0)))
}

// barWidth is the width of a panel's gauge.
func (r *renderer) barWidth() int { return min(max((r.w-40)/3, 10), 40) }

// gauge is "LABEL  12.5% ▕██▎      ▏" for a percentage (nil: none).
func (r *renderer) gauge(label string, pct *float64, width int) string {
	v := "     –"
	frac := math.NaN()
	if pct != nil && !math.IsNaN(*pct) {
		v = fmt.Sprintf("%5.1f%%", *pct)
		frac = *pct / 100
	}
	bar := plot.Bar(frac, width)
	if r.color && !math.IsNaN(frac) {
		c := "32"
		switch {
		case frac >= 0.9:
			c = "31"
		case frac >= 0.7:
			c = "33"
		}
		bar = "\x1b[" + c + "m" + bar + "\x1b[0m"
	}
	return fmt.Sprintf("%-5s %s ▕%s▏", label, v, bar)
}

// gaugeWidth is the cells a gauge with a bar of bw cells takes.
func gaugeWidth(bw int) int { return 15 + bw }

// line joins a gauge (of gw visible cells) and details, and puts the
// sparkline hist in what room is left.
func (r *renderer) line(gauge string, gw int, details string, hist []float64, lo, hi float64) string {
	details = r.fitTo(details, r.w-gw)
	s := gauge + details
	room := r.w - gw - utf8.RuneCountInString(details) - 2
	if len(hist) > 1 && room >= 8 {
		h := hist[max(len(hist)-room, 0):]
		if math.IsNaN(hi) {
			hi = 0
			for _, v := range h {
				if !math.IsNaN(v) {
					hi = max(hi, v)
				}
			}
		}
		s += "  " + plot.Sparkline(h, lo, hi)
	}
	return s
}

// fitTo cuts s to n cells.
func (r *renderer) fitTo(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

func (r *renderer) cpuLine(h *host) []string {
	if h.cpu == nil {
		return nil
	}
	c := h.cpu.Host
	bw := r.barWidth()
	g := r.gauge("CPU", c.TotalPct, bw)
	d := fmt.Sprintf(" usr %s sys %s io %s", pct(c.UserPct), pct(c.SystemPct), pct(c.IowaitPct))
	if c.Load1 != nil {
		d += fmt.Sprintf("  load %s %s %s", num(c.Load1), num(c.Load5), num(c.Load15))
	}
	if c.LogicalCPUs != nil {
		d += fmt.Sprintf("  %d cpus", *c.LogicalCPUs)
	}
	return []string{r.line(g, gaugeWidth(bw), d, h.cpuHist, 0, 100)}
}

// coreRows are the per-core bars, as many to a row as fit.
func (r *renderer) coreRows(h *host) []string {
	if h.cpu == nil || len(h.cpu.Cores) == 0 {
		return nil
	}
	const bw = 10
	cell := 4 + 1 + bw + 2 + 5 // "  12 ▕██████████▏ 100%"
	per := max((r.w-2)/(cell+1), 1)
	var rows []string
	var cur []string
	for i, c := range h.cpu.Cores {
		n := i
		if c.CPU != nil {
			n = *c.CPU
		}
		frac := math.NaN()
		v := "   –"
		switch {
		case c.Online != nil && !*c.Online:
			v = " off"
		case c.TotalPct != nil:
			frac, v = *c.TotalPct/100, fmt.Sprintf("%3.0f%%", *c.TotalPct)
		}
		bar := plot.Bar(frac, bw)
		if r.color && !math.IsNaN(frac) {
			bar = "\x1b[32m" + bar + "\x1b[0m"
		}
		cur = append(cur, fmt.Sprintf("%4d ▕%s▏ %s", n, bar, v))
		if len(cur) == per {
			rows = append(rows, " "+strings.Join(cur, " "))
			cur = nil
		}
	}
	if len(cur) > 0 {
		rows = append(rows, " "+strings.Join(cur, " "))
	}
	return rows
}

func (r *renderer) memLine(h *host) []string {
	if h.mem == nil {
		return nil
	}
	m := h.mem
	bw := r.barWidth()
	g := r.gauge("MEM", m.UsedPct, bw)
	d := ""
	if m.TotalBytes != nil && m.AvailableBytes != nil {
		d = fmt.Sprintf(" %s of %s used", plot.FormatValue(*m.TotalBytes-*m.AvailableBytes, "B"), plot.FormatValue(*m.TotalBytes, "B"))
	}
	if m.SwapTotalBytes != nil && *m.SwapTotalBytes > 0 {
		d += "  swap " + pct(m.SwapUsedPct)
	}
	return []string{r.line(g, gaugeWidth(bw), d, h.memHist, 0, 100)}
}

func (r *renderer) netLines(h *host) []string {
	if h.net == nil {
		return nil
	}
	rx, tx, ok := h.net.totals()
	s := "NET  "
	if ok {
		s += fmt.Sprintf(" rx %s  tx %s", plot.FormatValue(rx, "B/s"), plot.FormatValue(tx, "B/s"))
	} else {
		s += " rx –  tx –"
	}
	out := []string{r.line(s, utf8.RuneCountInString(s), "", h.netHist, 0, math.NaN())}
	for _, i := range h.net.Interfaces {
		if i.Name == "lo" {
			continue
		}
		out = append(out, r.fit(fmt.Sprintf("  %-12s rx %-12s tx %s", textfmt.Escape(i.Name), rate(i.RxPerS), rate(i.TxPerS))))
	}
	return out
}

func (r *renderer) gpuLines(h *host) []string {
	if h.gpu == nil {
		return nil
	}
	var out []string
	bw := r.barWidth()
	for n, g := range h.gpu.GPUs {
		if g.Index != nil {
			n = *g.Index
		}
		gg := r.gauge(fmt.Sprintf("GPU%d", n), g.UtilPct, bw)
		d := ""
		if g.MemUsed != nil && g.MemTotal != nil {
			d += fmt.Sprintf(" mem %s/%s MiB", num(g.MemUsed), num(g.MemTotal))
		}
		if g.TempC != nil {
			d += fmt.Sprintf("  %s °C", num(g.TempC))
		}
		if g.PowerW != nil {
			d += fmt.Sprintf("  %s W", num(g.PowerW))
		}
		if g.Name != "" {
			d += "  " + textfmt.Escape(g.Name)
		}
		out = append(out, gg+r.fitTo(d, r.w-gaugeWidth(bw)))
	}
	return out
}

// procLine is a process's state; with multi (another process has its
// label), its stream too.
func (r *renderer) procLine(p *proc, multi bool) string {
	s := "PROC  " + textfmt.Escape(p.label)
	if multi {
		s += " (" + textfmt.Escape(p.stream.String()) + ")"
	}
	switch p.state {
	case "running":
		s += fmt.Sprintf(": running, pid %d", p.pid)
	case "exited":
		if p.signal != "" {
			s += ": killed by " + textfmt.Escape(p.signal)
		} else if p.code != nil {
			s += fmt.Sprintf(": exited %d", *p.code)
		} else {
			s += ": exited"
		}
	case "failed":
		s += ": could not start: " + textfmt.Escape(p.message)
	default:
		s += ": " + p.state
	}
	return r.fit(s)
}

func (r *renderer) textLine(l Line, multi bool) string {
	name := textfmt.Escape(l.Channel)
	if multi {
		name = textfmt.Escape(string(l.Stream.Node)) + " " + name
	}
	text := textfmt.Escape(strings.ReplaceAll(l.Text, "\t", "    "))
	s := r.fit(name + "  " + text)
	if r.color {
		c := "2"
		if strings.HasSuffix(l.Channel, ".stderr") {
			c = "31"
		}
		if n := len(name); len(s) >= n {
			s = "\x1b[" + c + "m" + s[:n] + "\x1b[0m" + s[n:]
		}
	}
	return s
}

// pct is a percentage to one decimal, "–" for none.
func pct(v *float64) string {
	if v == nil {
		return "–"
	}
	return strconv.FormatFloat(*v, 'f', 1, 64) + "%"
}

// num is a number, "–" for none.
func num(v *float64) string {
	if v == nil {
		return "–"
	}
	return plot.FormatValue(*v, "")
}

// rate is a byte rate, "–" for none.
func rate(v *float64) string {
	if v == nil {
		return "–"
	}
	return plot.FormatValue(*v, "B/s")
}

package plot

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// SVGOptions configures [AppendSVG].
type SVGOptions struct {
	// Width and Height are the drawing's size in px (its viewBox and
	// size); 0 means 800 and 300. They are raised to at least 200 and
	// 120.
	Width, Height int
	// Location is the time zone of the x labels (nil: UTC).
	Location *time.Location
	// Fragment leaves out the XML declaration, for an SVG inline in
	// HTML (ds report's charts).
	Fragment bool
}

// svgPalette is the stroke of each series, in turn.
var svgPalette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"}

// MinSVGWidth and MinSVGHeight are the smallest SVG [AppendSVG] draws, in
// px: a smaller size is raised to them.
const MinSVGWidth, MinSVGHeight = 200, 120

// AppendSVG appends c as an SVG image: an XML declaration (unless
// o.Fragment), then one <svg> element (xmlns, viewBox "0 0 W H") holding
// a <title> (c.Title), the plot area, five y grid lines labelled with
// their values (FormatValue, c.Unit), five x labels (times in
// o.Location, or sample numbers), one <polyline class="series"> per
// unbroken run of each series (a NaN value ends a run; data-series says
// which series, counting from 0, and data-label its label), and a
// legend. Each series is drawn from [Buckets] of one per px of the plot
// area: a column holding one point gives one vertex, one holding more
// its first, smallest, largest and last value (repeats dropped), so the
// drawing stays small whatever the number of points. Text is escaped
// (and what XML cannot hold, such as control characters, replaced by
// U+FFFD), so any label is safe.
func AppendSVG(b []byte, c Chart, o SVGOptions) []byte {
	w, h := o.Width, o.Height
	if w == 0 {
		w = 800
	}
	if h == 0 {
		h = 300
	}
	w, h = max(w, MinSVGWidth), max(h, MinSVGHeight)
	const left, right, top = 80, 20, 30
	legendRows := (len(c.Series) + 2) / 3
	bottom := 40 + 18*legendRows
	pw, ph := max(w-left-right, 10), max(h-top-bottom, 10)
	if !o.Fragment {
		b = append(b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"...)
	}
	b = append(b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 `...)
	b = strconv.AppendInt(b, int64(w), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(h), 10)
	b = append(b, `" width="`...)
	b = strconv.AppendInt(b, int64(w), 10)
	b = append(b, `" height="`...)
	b = strconv.AppendInt(b, int64(h), 10)
	b = append(b, `" font-family="sans-serif" font-size="12">`+"\n"...)
	b = append(b, `<title>`...)
	b = appendXML(b, c.Title)
	b = append(b, "</title>\n"...)
	b = append(b, `<rect width="100%" height="100%" fill="white"/>`+"\n"...)
	b = append(b, `<text x="`...)
	b = strconv.AppendInt(b, left, 10)
	b = append(b, `" y="18" font-weight="bold">`...)
	b = appendXML(b, c.Title)
	b = append(b, "</text>\n"...)
	lo, hi, ok := c.yRange()
	x0, x1, xok := c.xRange()
	if !ok || !xok {
		b = append(b, `<text x="`...)
		b = strconv.AppendInt(b, left, 10)
		b = append(b, `" y="50">no values to plot</text>`+"\n</svg>\n"...)
		return b
	}
	px := func(col int) float64 { return float64(left) + float64(col) + 0.5 }
	py := func(v float64) float64 {
		f := (hi - v) / (hi - lo)
		return float64(top) + min(max(f, 0), 1)*float64(ph)
	}
	num := func(b []byte, f float64) []byte { return strconv.AppendFloat(b, f, 'f', 1, 64) }
	// Grid and y labels.
	b = append(b, `<g class="y-axis" stroke="#ddd">`+"\n"...)
	for i := 0; i <= 4; i++ {
		v := lo + (hi-lo)*float64(4-i)/4
		y := py(v)
		b = append(b, `<line x1="`...)
		b = strconv.AppendInt(b, left, 10)
		b = append(b, `" x2="`...)
		b = strconv.AppendInt(b, int64(left+pw), 10)
		b = append(b, `" y1="`...)
		b = num(b, y)
		b = append(b, `" y2="`...)
		b = num(b, y)
		b = append(b, `"/><text x="`...)
		b = strconv.AppendInt(b, left-6, 10)
		b = append(b, `" y="`...)
		b = num(b, y+4)
		b = append(b, `" text-anchor="end" stroke="none" fill="#333">`...)
		b = appendXML(b, FormatValue(v, c.Unit))
		b = append(b, "</text>\n"...)
	}
	b = append(b, "</g>\n"...)
	// Axes and x labels.
	b = append(b, `<g class="x-axis" fill="#333">`+"\n"...)
	b = append(b, `<path d="M`...)
	b = strconv.AppendInt(b, left, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, top, 10)
	b = append(b, `V`...)
	b = strconv.AppendInt(b, int64(top+ph), 10)
	b = append(b, `H`...)
	b = strconv.AppendInt(b, int64(left+pw), 10)
	b = append(b, `" stroke="#333" fill="none"/>`+"\n"...)
	ticks := 5
	if x1 == x0 {
		ticks = 1
	}
	for i := 0; i < ticks; i++ {
		x, col := x0, 0
		if ticks > 1 {
			x = x0 + (x1-x0)*int64(i)/int64(ticks-1)
			col = (pw - 1) * i / (ticks - 1)
		}
		anchor := "middle"
		switch {
		case ticks > 1 && i == 0:
			anchor = "start"
		case ticks > 1 && i == ticks-1:
			anchor = "end"
		}
		b = append(b, `<text x="`...)
		b = num(b, px(col))
		b = append(b, `" y="`...)
		b = strconv.AppendInt(b, int64(top+ph+16), 10)
		b = append(b, `" text-anchor="`...)
		b = append(b, anchor...)
		b = append(b, `">`...)
		b = appendXML(b, c.xLabel(x, x1-x0, o.Location))
		b = append(b, "</text>\n"...)
	}
	b = append(b, "</g>\n"...)
	// The series.
	b = append(b, `<g class="series" fill="none" stroke-width="1.5" stroke-linejoin="round">`+"\n"...)
	for si, s := range c.Series {
		color := svgPalette[si%len(svgPalette)]
		open := false
		var last string
		vertex := func(col int, v float64) {
			var p []byte
			p = num(p, px(col))
			p = append(p, ',')
			p = num(p, py(v))
			if string(p) == last {
				return
			}
			if last != "" {
				b = append(b, ' ')
			}
			b = append(b, p...)
			last = string(p)
		}
		end := func() {
			if open {
				b = append(b, "\"/>\n"...)
				open = false
			}
		}
		for col, bk := range Buckets(s, x0, x1, pw) {
			if bk.N == 0 {
				continue
			}
			if !bk.Joined {
				end()
			}
			if !open {
				b = append(b, `<polyline class="series" data-series="`...)
				b = strconv.AppendInt(b, int64(si), 10)
				b = append(b, `" data-label="`...)
				b = appendXML(b, s.Label)
				b = append(b, `" stroke="`...)
				b = append(b, color...)
				b = append(b, `" points="`...)
				open, last = true, ""
			}
			vertex(col, bk.First)
			if bk.N > 1 {
				lo, hi := bk.Min, bk.Max
				if bk.Last < bk.First {
					lo, hi = hi, lo // falling: the top first
				}
				vertex(col, lo)
				vertex(col, hi)
				vertex(col, bk.Last)
			}
		}
		end()
	}
	b = append(b, "</g>\n"...)
	// The legend, three to a row.
	b = append(b, `<g class="legend">`+"\n"...)
	for si, s := range c.Series {
		x := left + (si%3)*(pw/3)
		y := top + ph + 34 + 18*(si/3)
		b = append(b, `<rect x="`...)
		b = strconv.AppendInt(b, int64(x), 10)
		b = append(b, `" y="`...)
		b = strconv.AppendInt(b, int64(y-9), 10)
		b = append(b, `" width="12" height="3" fill="`...)
		b = append(b, svgPalette[si%len(svgPalette)]...)
		b = append(b, `"/><text x="`...)
		b = strconv.AppendInt(b, int64(x+16), 10)
		b = append(b, `" y="`...)
		b = strconv.AppendInt(b, int64(y-4), 10)
		b = append(b, `">`...)
		b = appendXML(b, s.Label)
		b = append(b, "</text>\n"...)
	}
	b = append(b, "</g>\n</svg>\n"...)
	return b
}

// appendXML appends s escaped for XML text and attribute values: & < >
// " and ' as entities; runes XML 1.0 cannot hold (control characters
// but tab, newline and CR; bytes that are not UTF-8; U+FFFE, U+FFFF)
// as U+FFFD.
func appendXML(b []byte, s string) []byte {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == '&':
			b = append(b, "&amp;"...)
		case r == '<':
			b = append(b, "&lt;"...)
		case r == '>':
			b = append(b, "&gt;"...)
		case r == '"':
			b = append(b, "&quot;"...)
		case r == '\'':
			b = append(b, "&#39;"...)
		case r == '\t' || r == '\n' || r == '\r':
			b = append(b, "&#"...)
			b = strconv.AppendInt(b, int64(r), 10)
			b = append(b, ';')
		case r == utf8.RuneError && n <= 1, r < 0x20, r >= 0xD800 && r <= 0xDFFF, r == 0xFFFE, r == 0xFFFF:
			b = utf8.AppendRune(b, utf8.RuneError)
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return b
}

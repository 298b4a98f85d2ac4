package plot

import (
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// TextOptions configures [AppendText].
type TextOptions struct {
	// Width and Height are the drawing's size in terminal cells (columns
	// and lines), everything included: title, y labels, axes, legend.
	// They are raised to at least MinWidth and MinHeight.
	Width, Height int
	// Color colours each series (ANSI SGR, 8 colours) and the title.
	Color bool
	// Location is the time zone of the x labels (nil: UTC).
	Location *time.Location
}

// MinWidth and MinHeight are the smallest drawing [AppendText] makes.
const MinWidth, MinHeight = 20, 6

// palette is the SGR colour of each series, in turn.
var palette = []string{"36", "33", "35", "32", "34", "31", "96", "93"}

// marks is the character of each series, in turn, on a chart of several
// series drawn without colour (gnuplot's dumb terminal does the same):
// braille dots would make them all alike. A cell shows the mark of the
// last series drawn in it.
var marks = []byte{'*', '+', 'x', 'o', '#', '@', '%', '='}

// AppendText appends c drawn for a terminal, in o.Height lines of at
// most o.Width cells, each ending in "\n": the title; the plot, one
// braille cell (U+2800…U+28FF, 2×4 dots) per column and line, its y
// axis labelled with the top, middle and bottom values (FormatValue,
// with c.Unit); the x axis, labelled with the first, middle and last
// time (in o.Location) or sample number; then the legend, "⣿ label" per
// series, wrapped. Each series is drawn from [Buckets] of two per cell:
// a vertical stroke from each column's minimum to its maximum, joined to
// the previous column's last value unless a NaN broke the line. Where
// series cross, a cell takes the colour of the last one drawn. A chart
// with no value says so under its title. Labels are the caller's:
// escape what came from input first.
func AppendText(b []byte, c Chart, o TextOptions) []byte {
	w, h := max(o.Width, MinWidth), max(o.Height, MinHeight)
	b = appendStyled(b, o.Color, "1", fit(c.Title, w))
	b = append(b, '\n')
	lo, hi, ok := c.yRange()
	x0, x1, xok := c.xRange()
	if !ok || !xok {
		b = append(b, "(no values to plot)\n"...)
		return b
	}
	mono := !o.Color && len(c.Series) > 1
	legend := legendLines(c, w, o.Color, mono)
	if maxLegend := h - 5; len(legend) > maxLegend {
		// No room for every entry: the first ones that fit, then how
		// many more there are.
		k := len(c.Series)
		for k > 0 && len(legend) > maxLegend-1 {
			k--
			legend = legendLines(Chart{Series: c.Series[:k]}, w, o.Color, mono)
		}
		more := len(c.Series) - k
		legend = append(legend, fit("… "+strconv.Itoa(more)+" more series", w))
	}
	rows := max(h-3-len(legend), 2)
	labels := []string{FormatValue(hi, c.Unit), FormatValue((hi+lo)/2, c.Unit), FormatValue(lo, c.Unit)}
	lw := 0
	for _, l := range labels {
		lw = max(lw, utf8.RuneCountInString(l))
	}
	cols := max(w-lw-2, 8)
	cv := newCanvas(cols, rows)
	for si, s := range c.Series {
		cv.series(si, Buckets(s, x0, x1, cols*2), lo, hi)
	}
	mid := -1
	if rows >= 5 {
		mid = (rows - 1) / 2
	}
	for r := 0; r < rows; r++ {
		label, tick := "", "│"
		switch r {
		case 0:
			label, tick = labels[0], "┤"
		case mid:
			label, tick = labels[1], "┤"
		case rows - 1:
			label, tick = labels[2], "┤"
		}
		b = append(b, strings.Repeat(" ", lw-utf8.RuneCountInString(label))...)
		b = append(b, label...)
		b = append(b, ' ')
		b = append(b, tick...)
		b = cv.appendRow(b, r, o.Color, mono)
		for len(b) > 0 && b[len(b)-1] == ' ' {
			b = b[:len(b)-1]
		}
		b = append(b, '\n')
	}
	b = append(b, strings.Repeat(" ", lw+1)...)
	b = append(b, "└"...)
	b = append(b, strings.Repeat("─", cols)...)
	b = append(b, '\n')
	b = append(b, xAxis(&c, x0, x1, lw+2, cols, o.Location)...)
	b = append(b, '\n')
	for _, l := range legend {
		b = append(b, l...)
		b = append(b, '\n')
	}
	return b
}

// xAxis is the line of x labels under a plot of cols columns that
// starts at column indent.
func xAxis(c *Chart, x0, x1 int64, indent, cols int, loc *time.Location) string {
	line := []rune(strings.Repeat(" ", indent+cols))
	put := func(at int, s string) bool {
		r := []rune(s)
		if at < 0 || at+len(r) > len(line) {
			return false
		}
		for i := max(at-1, 0); i < min(at+len(r)+1, len(line)); i++ {
			if line[i] != ' ' {
				return false
			}
		}
		copy(line[at:], r)
		return true
	}
	first := c.xLabel(x0, x1-x0, loc)
	put(indent, first)
	if x1 > x0 {
		last := c.xLabel(x1, x1-x0, loc)
		put(indent+cols-utf8.RuneCountInString(last), last)
		m := x0 + (x1-x0)/2
		ml := c.xLabel(m, x1-x0, loc)
		put(indent+cols/2-utf8.RuneCountInString(ml)/2, ml)
	}
	return strings.TrimRight(string(line), " ")
}

// legendLines returns the legend: "⣿ label" per series (with mono, the
// series' mark instead of ⣿), as many on a line as fit in w cells.
func legendLines(c Chart, w int, color, mono bool) []string {
	var lines []string
	var cur []byte
	n := 0
	for i, s := range c.Series {
		label := fit(s.Label, w-2)
		lw := 2 + utf8.RuneCountInString(label)
		if n > 0 && n+2+lw > w {
			lines = append(lines, string(cur))
			cur, n = nil, 0
		}
		if n > 0 {
			cur = append(cur, "  "...)
			n += 2
		}
		if mono {
			cur = append(cur, marks[i%len(marks)])
		} else {
			cur = appendStyled(cur, color, palette[i%len(palette)], "⣿")
		}
		cur = append(cur, ' ')
		cur = append(cur, label...)
		n += lw
	}
	if n > 0 {
		lines = append(lines, string(cur))
	}
	return lines
}

// fit cuts s to at most w runes, marking a cut with "…".
func fit(s string, w int) string {
	if utf8.RuneCountInString(s) <= w {
		return s
	}
	r := []rune(s)
	if w < 1 {
		return ""
	}
	return string(r[:w-1]) + "…"
}

// appendStyled appends s in SGR style sgr when color is set.
func appendStyled(b []byte, color bool, sgr, s string) []byte {
	if !color {
		return append(b, s...)
	}
	b = append(b, "\x1b["...)
	b = append(b, sgr...)
	b = append(b, 'm')
	b = append(b, s...)
	return append(b, "\x1b[0m"...)
}

// canvas is a grid of braille cells: cols×rows cells of 2×4 dots.
type canvas struct {
	cols, rows int
	dots       []uint8 // per cell, the braille bits
	color      []int8  // per cell, the series drawn last (-1: none)
}

func newCanvas(cols, rows int) *canvas {
	cv := &canvas{cols: cols, rows: rows, dots: make([]uint8, cols*rows), color: make([]int8, cols*rows)}
	for i := range cv.color {
		cv.color[i] = -1
	}
	return cv
}

// brailleBit is the bit of dot (x, y) of a cell, x in 0..1, y in 0..3.
var brailleBit = [2][4]uint8{{0x01, 0x02, 0x04, 0x40}, {0x08, 0x10, 0x20, 0x80}}

// set turns on dot (x, y) of the whole grid (0, 0 top left) for series si.
func (cv *canvas) set(x, y, si int) {
	if x < 0 || y < 0 || x >= cv.cols*2 || y >= cv.rows*4 {
		return
	}
	i := (y/4)*cv.cols + x/2
	cv.dots[i] |= brailleBit[x%2][y%4]
	cv.color[i] = int8(si % len(palette))
}

// line draws dots from (x0, y0) to (x1, y1) (Bresenham).
func (cv *canvas) line(x0, y0, x1, y1, si int) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := 1, 1
	if x0 > x1 {
		sx = -1
	}
	if y0 > y1 {
		sy = -1
	}
	e := dx + dy
	for {
		cv.set(x0, y0, si)
		if x0 == x1 && y0 == y1 {
			return
		}
		if e2 := 2 * e; e2 >= dy {
			e += dy
			x0 += sx
		} else {
			e += dx
			y0 += sy
		}
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// series draws series si from its buckets (one per dot column), on the
// y range [lo, hi].
func (cv *canvas) series(si int, bs []Bucket, lo, hi float64) {
	h := cv.rows*4 - 1
	y := func(v float64) int {
		f := (hi - v) / (hi - lo)
		return int(math.Round(min(max(f, 0), 1) * float64(h)))
	}
	prev := -1
	for x, bk := range bs {
		if bk.N == 0 {
			continue
		}
		if bk.Joined && prev >= 0 {
			cv.line(prev, y(bs[prev].Last), x, y(bk.First), si)
		}
		cv.line(x, y(bk.Max), x, y(bk.Min), si)
		prev = x
	}
}

// appendRow appends row r of the grid: braille cells, in their series'
// colour with color; with mono, each cell that has a dot as the mark of
// the series drawn last in it.
func (cv *canvas) appendRow(b []byte, r int, color, mono bool) []byte {
	cur := int8(-1)
	for c := 0; c < cv.cols; c++ {
		i := r*cv.cols + c
		d := cv.dots[i]
		if d == 0 {
			if cur >= 0 {
				b = append(b, "\x1b[0m"...)
				cur = -1
			}
			b = append(b, ' ')
			continue
		}
		if mono {
			b = append(b, marks[int(cv.color[i])%len(marks)])
			continue
		}
		if color && cv.color[i] != cur {
			cur = cv.color[i]
			b = append(b, "\x1b["...)
			b = append(b, palette[cur]...)
			b = append(b, 'm')
		}
		b = utf8.AppendRune(b, rune(0x2800+int(d)))
	}
	if cur >= 0 {
		b = append(b, "\x1b[0m"...)
	}
	return b
}

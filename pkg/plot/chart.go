package plot

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// Series is one line of a chart: Label names it in the legend; X[i] and
// Values[i] are a point: X a time in ns since the Unix epoch (a sample
// number when the chart's IndexX is set), Values a number, NaN for no
// value (the line breaks there). X need not be sorted, but a line joins
// points in the order given; infinite values are ignored.
type Series struct {
	Label  string
	X      []int64
	Values []float64
}

// Chart is what [AppendText] and [AppendSVG] draw.
type Chart struct {
	// Title heads the chart (a channel name); Unit is the y values'
	// ("%", "B/s", "MiB"; see [UnitOf]), shown with the y labels.
	Title, Unit string
	Series      []Series
	// IndexX says X holds sample numbers, not times.
	IndexX bool
	// XMin and XMax fix the x axis (a run's time axis, shared by several
	// charts) when XMax > XMin; otherwise it spans the points. Points
	// outside it are not drawn.
	XMin, XMax int64
}

// Bucket is one column of a drawing: the points of a series whose x
// falls in it. N counts them (0: the column is empty); Min, Max, First
// and Last are their smallest, largest, first and last value (in the
// order given). Joined says the line comes into this column from the
// last non-empty column before it: no NaN lies between them.
type Bucket struct {
	N                     int
	Min, Max, First, Last float64
	Joined                bool
}

// Buckets returns s's points in n columns spanning [x0, x1]: x0 is the
// middle of column 0 and x1 of column n-1 (all in column 0 when x1 <= x0).
// Points outside [x0, x1] are left out; a NaN value breaks the line
// (the next point's Joined is false). It reads each point once. n < 1
// gives nil.
func Buckets(s Series, x0, x1 int64, n int) []Bucket {
	if n < 1 {
		return nil
	}
	out := make([]Bucket, n)
	prev, broken := -1, false
	span := float64(x1 - x0)
	for i, x := range s.X {
		if i >= len(s.Values) {
			break
		}
		v := s.Values[i]
		if math.IsNaN(v) {
			broken = true
			continue
		}
		if math.IsInf(v, 0) || x < x0 || x > x1 {
			continue
		}
		col := 0
		if span > 0 {
			col = int(math.Round(float64(x-x0) / span * float64(n-1)))
		}
		b := &out[col]
		if b.N == 0 {
			b.Min, b.Max, b.First = v, v, v
			b.Joined = prev >= 0 && prev != col && !broken
		} else {
			b.Min, b.Max = min(b.Min, v), max(b.Max, v)
		}
		b.N++
		b.Last = v
		prev, broken = col, false
	}
	return out
}

// xRange returns the x axis: XMin and XMax when set, else the smallest
// and largest x of the chart's points (those with a value or not), and
// false when it has none.
func (c *Chart) xRange() (lo, hi int64, ok bool) {
	if c.XMax > c.XMin {
		return c.XMin, c.XMax, true
	}
	for _, s := range c.Series {
		for i, x := range s.X {
			if i >= len(s.Values) {
				break
			}
			if !ok || x < lo {
				lo = x
			}
			if !ok || x > hi {
				hi = x
			}
			ok = true
		}
	}
	return lo, hi, ok
}

// yRange returns the range the y axis spans: the values' smallest and
// largest, widened when they are equal; 0 to 100 for percentages that
// fit. ok is false when there is no value.
func (c *Chart) yRange() (lo, hi float64, ok bool) {
	for _, s := range c.Series {
		for _, v := range s.Values {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			if !ok {
				lo, hi, ok = v, v, true
				continue
			}
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	if !ok {
		return 0, 1, false
	}
	if c.Unit == "%" && lo >= 0 && hi <= 100 {
		return 0, 100, true
	}
	if lo == hi {
		d := math.Abs(lo) * 0.1
		if d == 0 {
			d = 1
		}
		if lo >= 0 && lo-d < 0 {
			return 0, hi + d, true
		}
		return lo - d, hi + d, true
	}
	return lo, hi, true
}

// Points counts the points of the chart with a value.
func (c *Chart) Points() int {
	n := 0
	for _, s := range c.Series {
		for i := range s.X {
			if i < len(s.Values) && !math.IsNaN(s.Values[i]) {
				n++
			}
		}
	}
	return n
}

// UnitOf guesses the unit of a field from its name, as ds host names
// its fields: …_percent "%", …_bytes_per_s "B/s", …_per_s "/s",
// …_bytes "B", …_mib "MiB", …_ms "ms", …_c "°C", …_w "W"; "" for other
// names. path is a gjson path: its last member counts
// ("gpus.#.temperature_c" is in °C).
func UnitOf(path string) string {
	name := path
	if i := strings.LastIndexAny(name, ".)"); i >= 0 {
		name = name[i+1:]
	}
	name = strings.ToLower(name)
	switch {
	case strings.HasSuffix(name, "percent") || strings.HasSuffix(name, "_pct"):
		return "%"
	case strings.HasSuffix(name, "bytes_per_s"):
		return "B/s"
	case strings.HasSuffix(name, "_per_s"):
		return "/s"
	case strings.HasSuffix(name, "bytes"):
		return "B"
	case strings.HasSuffix(name, "_mib"):
		return "MiB"
	case strings.HasSuffix(name, "_ms"):
		return "ms"
	case strings.HasSuffix(name, "_c"):
		return "°C"
	case strings.HasSuffix(name, "_w"):
		return "W"
	}
	return ""
}

// FormatValue writes v for an axis or a gauge: bytes ("B", "B/s") in
// binary units ("9.8 KiB/s"), other numbers with up to four significant
// digits ("12.5", "0.0012", "1.2e+09"), then the unit ("50%", "61 °C").
func FormatValue(v float64, unit string) string {
	if unit == "B" || unit == "B/s" {
		units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
		u, a := 0, math.Abs(v)
		for a >= 1024 && u+1 < len(units) {
			a /= 1024
			v /= 1024
			u++
		}
		s := strconv.FormatFloat(v, 'f', 1, 64)
		if u == 0 {
			s = strconv.FormatFloat(v, 'f', -1, 64)
			if a >= 10 || a == 0 {
				s = strconv.FormatFloat(v, 'f', 0, 64)
			}
		}
		return s + " " + units[u] + strings.TrimPrefix(unit, "B")
	}
	s := formatNumber(v)
	switch unit {
	case "":
		return s
	case "%", "/s":
		return s + unit
	}
	return s + " " + unit
}

// formatNumber writes v with up to four significant digits.
func formatNumber(v float64) string {
	a := math.Abs(v)
	if a != 0 && (a >= 1e7 || a < 1e-3) {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	prec := 0
	switch {
	case a == 0:
	case a < 1:
		prec = 4
	case a < 10:
		prec = 3
	case a < 100:
		prec = 2
	case a < 1000:
		prec = 1
	}
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// timeLabels returns the format of the x labels of a span of ns
// nanoseconds.
func timeLayout(ns int64) string {
	switch {
	case ns < 10e9:
		return "15:04:05.000"
	case ns < 24*3600e9:
		return "15:04:05"
	}
	return "2006-01-02 15:04"
}

// xLabel writes x as the chart's x axis says it.
func (c *Chart) xLabel(x, span int64, loc *time.Location) string {
	if c.IndexX {
		return strconv.FormatInt(x, 10)
	}
	if loc == nil {
		loc = time.UTC
	}
	return time.Unix(0, x).In(loc).Format(timeLayout(span))
}

package plot

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/views"
)

const t0 = 1732953600000000000 // 2024-11-30T08:00:00Z

var nan = math.NaN()

func TestBuckets(t *testing.T) {
	tests := []struct {
		name string
		s    Series
		n    int
		want []Bucket
	}{
		{"one per column", Series{X: []int64{0, 1, 2}, Values: []float64{1, 2, 3}}, 3,
			[]Bucket{{N: 1, Min: 1, Max: 1, First: 1, Last: 1}, {N: 1, Min: 2, Max: 2, First: 2, Last: 2, Joined: true}, {N: 1, Min: 3, Max: 3, First: 3, Last: 3, Joined: true}}},
		{"min and max per column", Series{X: []int64{0, 1, 2, 3}, Values: []float64{5, 1, 9, 4}}, 2,
			[]Bucket{{N: 2, Min: 1, Max: 5, First: 5, Last: 1}, {N: 2, Min: 4, Max: 9, First: 9, Last: 4, Joined: true}}},
		{"a NaN breaks the line", Series{X: []int64{0, 1, 2}, Values: []float64{1, nan, 3}}, 3,
			[]Bucket{{N: 1, Min: 1, Max: 1, First: 1, Last: 1}, {}, {N: 1, Min: 3, Max: 3, First: 3, Last: 3}}},
		{"sparse points are joined across empty columns", Series{X: []int64{0, 10}, Values: []float64{1, 2}}, 5,
			[]Bucket{{N: 1, Min: 1, Max: 1, First: 1, Last: 1}, {}, {}, {}, {N: 1, Min: 2, Max: 2, First: 2, Last: 2, Joined: true}}},
		{"infinity is no point", Series{X: []int64{0, 1}, Values: []float64{math.Inf(1), 2}}, 2,
			[]Bucket{{}, {N: 1, Min: 2, Max: 2, First: 2, Last: 2}}},
		{"no columns", Series{X: []int64{0}, Values: []float64{1}}, 0, nil},
	}
	for _, tt := range tests {
		x0, x1 := int64(0), int64(0)
		if len(tt.s.X) > 0 {
			x1 = tt.s.X[len(tt.s.X)-1]
		}
		got := Buckets(tt.s, x0, x1, tt.n)
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, d)
		}
	}
}

// testChart is two series over a minute: a sine in percent and a ramp
// with a hole (NaN) in the middle.
func testChart() Chart {
	var a, b Series
	a.Label, b.Label = "host.total_percent", "cores.#.total_percent[1]"
	for i := 0; i <= 60; i++ {
		x := int64(t0 + i*1e9)
		a.X = append(a.X, x)
		a.Values = append(a.Values, 50+40*math.Sin(float64(i)/6))
		b.X = append(b.X, x)
		v := float64(i)
		if i >= 25 && i < 35 {
			v = nan
		}
		b.Values = append(b.Values, v)
	}
	return Chart{Title: "host.cpu", Unit: "%", Series: []Series{a, b}}
}

// golden compares got with testdata/name (DS_UPDATE=1 rewrites it).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if os.Getenv("DS_UPDATE") != "" {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s (-want +got):\n%s", name, d)
	}
}

func TestAppendText(t *testing.T) {
	got := AppendText(nil, testChart(), TextOptions{Width: 60, Height: 14})
	golden(t, "text.golden", got)
	checkSize(t, got, 60, 14)
	if bytes.Contains(got, []byte("\x1b")) {
		t.Error("escape sequences without Color")
	}
	col := AppendText(nil, testChart(), TextOptions{Width: 60, Height: 14, Color: true})
	if !bytes.Contains(col, []byte("\x1b[36m")) || !bytes.Contains(col, []byte("\x1b[33m")) {
		t.Errorf("no series colours with Color:\n%s", col)
	}
	// Small sizes are raised to the minimum; nothing overflows.
	checkSize(t, AppendText(nil, testChart(), TextOptions{Width: 1, Height: 1}), MinWidth, MinHeight)
	// No values: said, not drawn.
	empty := AppendText(nil, Chart{Title: "x", Series: []Series{{Label: "a", X: []int64{1}, Values: []float64{nan}}}}, TextOptions{Width: 40, Height: 10})
	if string(empty) != "x\n(no values to plot)\n" {
		t.Errorf("empty chart %q", empty)
	}
	// Sample numbers on the x axis.
	idx := AppendText(nil, Chart{Title: "n", IndexX: true, Series: []Series{{Label: "v", X: []int64{0, 1, 2}, Values: []float64{3, 1, 2}}}}, TextOptions{Width: 40, Height: 8})
	if !regexp.MustCompile(`(?m)^ +0 +1 +2$`).Match(idx) {
		t.Errorf("index axis:\n%s", idx)
	}
}

// checkSize checks that out has h lines of at most w runes.
func checkSize(t *testing.T, out []byte, w, h int) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != h {
		t.Errorf("%d lines, want %d:\n%s", len(lines), h, out)
	}
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > w {
			t.Errorf("line of %d runes, want at most %d: %q", n, w, l)
		}
	}
}

// bigSeries is n points of a noisy ramp, one per ms.
func bigSeries(n int) Series {
	s := Series{Label: "big", X: make([]int64, n), Values: make([]float64, n)}
	for i := range n {
		s.X[i] = t0 + int64(i)*1e6
		s.Values[i] = float64(i%1000) + float64(i)/1000
	}
	return s
}

// A million points draw at the terminal's size, from one bucket per dot
// column (no timing: the work is one pass).
func TestAppendTextMillion(t *testing.T) {
	out := AppendText(nil, Chart{Title: "big", Series: []Series{bigSeries(1e6)}}, TextOptions{Width: 100, Height: 30})
	checkSize(t, out, 100, 30)
}

// svgDoc is what the tests read of an SVG.
type svgDoc struct {
	XMLName xml.Name `xml:"svg"`
	ViewBox string   `xml:"viewBox,attr"`
	Title   string   `xml:"title"`
	Groups  []struct {
		Class string `xml:"class,attr"`
		Lines []struct {
			Series string `xml:"data-series,attr"`
			Label  string `xml:"data-label,attr"`
			Points string `xml:"points,attr"`
		} `xml:"polyline"`
		Texts []string `xml:"text"`
	} `xml:"g"`
}

func parseSVG(t *testing.T, b []byte) svgDoc {
	t.Helper()
	var doc svgDoc
	d := xml.NewDecoder(bytes.NewReader(b))
	if err := d.Decode(&doc); err != nil {
		t.Fatalf("not valid XML: %v\n%s", err, b)
	}
	// Nothing after the root but white space.
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after the root: %v", err)
		}
		if cd, ok := tok.(xml.CharData); !ok || len(bytes.TrimSpace(cd)) > 0 {
			t.Fatalf("after the root: %#v", tok)
		}
	}
	return doc
}

func (d svgDoc) group(class string) (g struct {
	Class string `xml:"class,attr"`
	Lines []struct {
		Series string `xml:"data-series,attr"`
		Label  string `xml:"data-label,attr"`
		Points string `xml:"points,attr"`
	} `xml:"polyline"`
	Texts []string `xml:"text"`
}) {
	for _, g := range d.Groups {
		if g.Class == class {
			return g
		}
	}
	return g
}

func TestAppendSVG(t *testing.T) {
	c := testChart()
	c.Title = `host.cpu <&> "x" ` + "\x1b[2J\xff"
	b := AppendSVG(nil, c, SVGOptions{})
	if !bytes.HasPrefix(b, []byte(`<?xml version="1.0" encoding="UTF-8"?>`)) {
		t.Errorf("no XML declaration: %.60s", b)
	}
	doc := parseSVG(t, b)
	if doc.ViewBox != "0 0 800 300" {
		t.Errorf("viewBox %q", doc.ViewBox)
	}
	if want := "host.cpu <&> \"x\" \uFFFD[2J\uFFFD"; doc.Title != want {
		t.Errorf("title %q, want %q", doc.Title, want)
	}
	lines := doc.group("series").Lines
	// Series 0 is one run of 61 points (one per column: fewer points than
	// px); series 1 two runs, 25 and 26 points, parted by its hole.
	var counts []int
	for _, l := range lines {
		counts = append(counts, len(strings.Fields(l.Points)))
	}
	if d := cmp.Diff([]int{61, 25, 26}, counts); d != "" {
		t.Errorf("points per polyline (-want +got):\n%s", d)
	}
	if lines[0].Label != "host.total_percent" || lines[2].Series != "1" {
		t.Errorf("polylines %+v", lines)
	}
	if y := doc.group("y-axis").Texts; len(y) != 5 || y[0] != "100%" || y[4] != "0%" {
		t.Errorf("y labels %q", y)
	}
	if x := doc.group("x-axis").Texts; len(x) != 5 || x[0] != "08:00:00" || x[4] != "08:01:00" {
		t.Errorf("x labels %q", x)
	}
	if l := doc.group("legend").Texts; len(l) != 2 {
		t.Errorf("legend %q", l)
	}

	// A fragment has no declaration and still parses.
	f := AppendSVG(nil, testChart(), SVGOptions{Width: 1000, Height: 200, Fragment: true})
	if bytes.HasPrefix(f, []byte("<?xml")) {
		t.Error("fragment has an XML declaration")
	}
	if doc := parseSVG(t, f); doc.ViewBox != "0 0 1000 200" {
		t.Errorf("fragment viewBox %q", doc.ViewBox)
	}

	// A million points: at most four vertices per px column.
	big := parseSVG(t, AppendSVG(nil, Chart{Title: "big", Series: []Series{bigSeries(1e6)}}, SVGOptions{}))
	n := 0
	for _, l := range big.group("series").Lines {
		n += len(strings.Fields(l.Points))
	}
	if n == 0 || n > 4*700 {
		t.Errorf("a million points drew %d vertices, want 1..%d", n, 4*700)
	}

	// A fixed x axis: the labels span it, points outside are not drawn.
	fixed := testChart()
	fixed.XMin, fixed.XMax = t0+30e9, t0+90e9
	doc = parseSVG(t, AppendSVG(nil, fixed, SVGOptions{}))
	if x := doc.group("x-axis").Texts; x[0] != "08:00:30" || x[4] != "08:01:30" {
		t.Errorf("fixed x labels %q", x)
	}
	if n := len(strings.Fields(doc.group("series").Lines[0].Points)); n != 31 {
		t.Errorf("fixed axis: %d points of series 0, want 31", n)
	}

	// No values.
	none := parseSVG(t, AppendSVG(nil, Chart{Title: "none"}, SVGOptions{}))
	if len(none.group("series").Lines) != 0 {
		t.Error("an empty chart has lines")
	}
}

func TestSparklineBar(t *testing.T) {
	if got := Sparkline([]float64{0, 50, 100, nan, 200, -5}, 0, 100); got != "▁▅█ █▁" {
		t.Errorf("Sparkline %q", got)
	}
	if got := Sparkline([]float64{3, 3}, 3, 3); got != "▁▁" {
		t.Errorf("flat Sparkline %q", got)
	}
	for _, tt := range []struct {
		f    float64
		w    int
		want string
	}{{0, 4, "    "}, {1, 4, "████"}, {0.5, 4, "██  "}, {0.5625, 4, "██▎ "}, {2, 2, "██"}, {nan, 2, "  "}, {0.5, 0, ""}} {
		if got := Bar(tt.f, tt.w); got != tt.want {
			t.Errorf("Bar(%v, %d) = %q, want %q", tt.f, tt.w, got, tt.want)
		}
	}
}

func TestFormatValueUnitOf(t *testing.T) {
	for _, tt := range []struct {
		v    float64
		unit string
		want string
	}{
		{12.5, "%", "12.5%"}, {100, "%", "100%"}, {0, "", "0"}, {0.00123, "", "0.0012"}, {1234.6, "", "1235"},
		{1.5e9, "", "1.5e+09"}, {10000, "B/s", "9.8 KiB/s"}, {512, "B", "512 B"}, {3 << 30, "B", "3.0 GiB"},
		{61, "°C", "61 °C"}, {-2.5, "W", "-2.5 W"}, {200, "/s", "200/s"},
	} {
		if got := FormatValue(tt.v, tt.unit); got != tt.want {
			t.Errorf("FormatValue(%v, %q) = %q, want %q", tt.v, tt.unit, got, tt.want)
		}
	}
	for path, want := range map[string]string{
		"host.total_percent": "%", "interfaces.#(name==\"eth0\").rx_bytes_per_s": "B/s", "rx_packets_per_s": "/s",
		"total_bytes": "B", "gpus.#.memory_used_mib": "MiB", "gpus.#.temperature_c": "°C", "gpus.#.power_w": "W",
		"interval_ms": "ms", "host.load1": "", "seq": "",
	} {
		if got := UnitOf(path); got != want {
			t.Errorf("UnitOf(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestCollector(t *testing.T) {
	a := frames.StreamID{Node: "n1", Life: 1}
	b := frames.StreamID{Node: "n\x1b", Life: 2}
	num := func(v float64) views.SeriesValue { return views.SeriesValue{Num: v, OK: true} }
	arr := func(vs ...views.SeriesValue) views.SeriesValue { return views.SeriesValue{IsArray: true, Elems: vs} }
	c := NewCollector([]string{"x_bytes", "g"}, true)
	c.Point(views.SeriesPoint{Stream: a, Channel: "c", Values: []views.SeriesValue{num(9), arr(num(1))}}) // no time: left out
	c.Point(views.SeriesPoint{Stream: a, Channel: "c", TimeNS: t0, Values: []views.SeriesValue{num(1), arr(num(1), num(2))}})
	c.Point(views.SeriesPoint{Stream: a, Channel: "c", TimeNS: t0 + 1e9, Values: []views.SeriesValue{{}, arr(num(3), num(4))}})
	c.Point(views.SeriesPoint{Stream: b, Channel: "c", TimeNS: t0 + 2e9, Values: []views.SeriesValue{num(5), {}}})
	ch := c.Chart("c")
	if ch.Unit != "" || ch.IndexX {
		t.Errorf("unit %q (fields disagree), IndexX %v", ch.Unit, ch.IndexX)
	}
	var labels []string
	for _, s := range ch.Series {
		labels = append(labels, s.Label)
	}
	// g of stream b is no array: a series of its own (all NaN).
	want := []string{"x_bytes n1#1", "g[0] n1#1", "g[1] n1#1", `x_bytes n\x1b#2`, `g n\x1b#2`}
	if d := cmp.Diff(want, labels); d != "" {
		t.Errorf("labels (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]int64{t0, t0 + 1e9}, ch.Series[0].X); d != "" {
		t.Errorf("x of the first series (-want +got):\n%s", d)
	}
	if v := ch.Series[0].Values; len(v) != 2 || v[0] != 1 || !math.IsNaN(v[1]) {
		t.Errorf("values of the first series %v, want [1 NaN]", v)
	}
	if c.Untimed() != 1 || c.Rows() != 4 || ch.Points() != 6 {
		t.Errorf("untimed %d, rows %d, points %d", c.Untimed(), c.Rows(), ch.Points())
	}
	one := NewCollector([]string{"x_bytes"}, true)
	one.Point(views.SeriesPoint{Stream: a, Values: []views.SeriesValue{num(1)}})
	one.Point(views.SeriesPoint{Stream: a, Values: []views.SeriesValue{num(2)}})
	if ch := one.Chart("t"); !ch.IndexX || ch.Unit != "B/s" || ch.Series[0].Label != "x_bytes" || len(ch.Series[0].X) != 2 {
		t.Errorf("chart without times %+v", ch)
	}
}

// A row after lost frames (SeriesPoint.Resumed) breaks the lines of its
// channel and stream only.
func TestCollectorResumed(t *testing.T) {
	a := frames.StreamID{Node: "n1", Life: 1}
	b := frames.StreamID{Node: "n2", Life: 1}
	num := func(v float64) []views.SeriesValue { return []views.SeriesValue{{Num: v, OK: true}} }
	c := NewCollector([]string{"v"}, false)
	c.Point(views.SeriesPoint{Stream: a, Channel: "c", TimeNS: t0, Values: num(1)})
	c.Point(views.SeriesPoint{Stream: b, Channel: "c", TimeNS: t0, Values: num(5)})
	c.Point(views.SeriesPoint{Stream: a, Channel: "c", TimeNS: t0 + 1e9, Resumed: true, Values: num(2)})
	ch := c.Chart("c")
	if v := ch.Series[0].Values; len(v) != 3 || !math.IsNaN(v[1]) || v[2] != 2 {
		t.Errorf("a's values %v, want [1 NaN 2]", v)
	}
	if v := ch.Series[1].Values; len(v) != 1 {
		t.Errorf("b's values %v, want [5]", v)
	}
	if bs := Buckets(ch.Series[0], t0, t0+1e9, 2); bs[1].Joined {
		t.Error("the line goes on across the loss")
	}
}

// BenchmarkAppendText draws a chart of a million points (one pass over
// them, to buckets, then the cells).
func BenchmarkAppendText(b *testing.B) {
	c := Chart{Title: "big", Series: []Series{bigSeries(1e6)}}
	b.ReportAllocs()
	for b.Loop() {
		AppendText(nil, c, TextOptions{Width: 120, Height: 40})
	}
}

// BenchmarkAppendSVG writes the SVG of a million points.
func BenchmarkAppendSVG(b *testing.B) {
	c := Chart{Title: "big", Series: []Series{bigSeries(1e6)}}
	b.ReportAllocs()
	for b.Loop() {
		AppendSVG(nil, c, SVGOptions{})
	}
}

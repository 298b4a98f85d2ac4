package report

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
)

// This file holds the host charts: the samples of host.cpu, host.mem,
// host.net and host.gpu (hostprobe's host.*.v1 records, as ds wrap
// --host records them), one series per value and stream, drawn as inline
// SVG on the log's time axis.

// charts collects the host samples.
type charts struct {
	samples int
	byKey   map[string]*series
	order   []*series
	counts  map[string]int // records per chart
}

// series is one line of a chart: its times (ns since the Unix epoch)
// and values.
type series struct {
	chart string // "cpu", "mem", "net", "gpu"
	name  string // what the line is ("busy", "rx", "gpu0 util")
	st    *streamState
	t     []int64
	v     []float64
}

// chartSpec says how a chart is drawn.
type chartSpec struct {
	id, title, unit string
	ymax            float64 // 0: the largest value
}

var chartSpecs = []chartSpec{
	{"cpu", "CPU busy (host.cpu)", "%", 100},
	{"mem", "Memory used (host.mem)", "%", 100},
	{"net", "Network, all interfaces but lo (host.net)", "B/s", 0},
	{"gpu", "GPU utilization and memory (host.gpu)", "%", 100},
}

// hostSample is the part of the host.*.v1 records the charts read; every
// field may be missing (ARCHITECTURE.md §4: defaults, unknown ones
// ignored).
type hostSample struct {
	SampleUnixMS *float64 `json:"sample_unix_ms"`
	Host         struct {
		TotalPct *float64 `json:"total_percent"`
	} `json:"host"`
	UsedPct    *float64 `json:"used_percent"`
	Interfaces []struct {
		Name     string   `json:"name"`
		RxPerS   *float64 `json:"rx_bytes_per_s"`
		TxPerS   *float64 `json:"tx_bytes_per_s"`
		Loopback bool     `json:"loopback"`
	} `json:"interfaces"`
	GPUs []struct {
		Index    *int     `json:"index"`
		UUID     string   `json:"uuid"`
		UtilPct  *float64 `json:"utilization_gpu_percent"`
		MemUsed  *float64 `json:"memory_used_mib"`
		MemTotal *float64 `json:"memory_total_mib"`
	} `json:"gpus"`
}

// add takes one host record of stream st, of chart kind; clockNS is the
// stream's clock reading before it, its time when it has no
// sample_unix_ms. A record that does not decode is not charted.
func (c *charts) add(st *streamState, kind string, payload []byte, clockNS int64) {
	var s hostSample
	if json.Unmarshal(payload, &s) != nil {
		return
	}
	ns := clockNS
	if s.SampleUnixMS != nil && *s.SampleUnixMS > 0 {
		ns = int64(*s.SampleUnixMS * 1e6)
	}
	if ns == 0 {
		return
	}
	if c.counts == nil {
		c.counts = make(map[string]int)
	}
	c.counts[kind]++
	c.samples++
	switch kind {
	case "cpu":
		if s.Host.TotalPct != nil {
			c.point(st, kind, "busy", ns, *s.Host.TotalPct)
		}
	case "mem":
		if s.UsedPct != nil {
			c.point(st, kind, "used", ns, *s.UsedPct)
		}
	case "net":
		var rx, tx float64
		seen := false
		for _, i := range s.Interfaces {
			if i.Name == "lo" || i.Loopback || i.RxPerS == nil || i.TxPerS == nil {
				continue
			}
			rx, tx, seen = rx+*i.RxPerS, tx+*i.TxPerS, true
		}
		if seen {
			c.point(st, kind, "rx", ns, rx)
			c.point(st, kind, "tx", ns, tx)
		}
	case "gpu":
		for n, g := range s.GPUs {
			name := "gpu" + strconv.Itoa(n)
			if g.Index != nil {
				name = "gpu" + strconv.Itoa(*g.Index)
			}
			if g.UtilPct != nil {
				c.point(st, kind, name+" util", ns, *g.UtilPct)
			}
			if g.MemUsed != nil && g.MemTotal != nil && *g.MemTotal > 0 {
				c.point(st, kind, name+" mem", ns, 100**g.MemUsed / *g.MemTotal)
			}
		}
	}
}

// point adds value v at time ns to the series name of chart kind of st.
func (c *charts) point(st *streamState, kind, name string, ns int64, v float64) {
	key := kind + "\x00" + name + "\x00" + strconv.Itoa(st.index)
	s := c.byKey[key]
	if s == nil {
		if c.byKey == nil {
			c.byKey = make(map[string]*series)
		}
		s = &series{chart: kind, name: name, st: st}
		c.byKey[key] = s
		c.order = append(c.order, s)
	}
	s.t = append(s.t, ns)
	s.v = append(s.v, v)
}

// span returns the first and last sample time, ns (0, 0: none).
func (c *charts) span() (lo, hi int64) {
	for _, s := range c.order {
		for _, t := range s.t {
			if lo == 0 || t < lo {
				lo = t
			}
			hi = max(hi, t)
		}
	}
	return lo, hi
}

// chartW and chartH are the SVG's coordinate space; it is stretched to
// the page's width.
const chartW, chartH = 1000.0, 100.0

// appendCharts appends the figures of the charts that have samples, on
// the time axis [t0, t1] (ns), with the marks (losses, damage, exits)
// where they happened. Each SVG says how many samples it draws
// (data-samples: the records read) and its axis (data-t0 and data-t1, in
// ms from the log's start, base; data-ymax and data-unit).
func (c *charts) appendCharts(b []byte, t0, t1, base int64, marks []mark, multi bool) []byte {
	if t1 <= t0 {
		t1 = t0 + 1e9
	}
	x := func(ns int64) []byte {
		return strconv.AppendFloat(nil, chartW*float64(ns-t0)/float64(t1-t0), 'f', 1, 64)
	}
	for _, spec := range chartSpecs {
		var ss []*series
		for _, s := range c.order {
			if s.chart == spec.id {
				ss = append(ss, s)
			}
		}
		if c.counts[spec.id] == 0 || len(ss) == 0 {
			continue // no samples, or none with a value (a host without GPUs)
		}
		ymax := spec.ymax
		if ymax == 0 {
			for _, s := range ss {
				for _, v := range s.v {
					ymax = max(ymax, v)
				}
			}
			ymax = max(ymax*1.1, 1)
		}
		b = append(b, `<figure class="chart"><figcaption>`...)
		b = appendHTML(b, []byte(spec.title))
		for i, s := range ss {
			b = append(b, ` <span class="key k`...)
			b = strconv.AppendInt(b, int64(i%8), 10)
			b = append(b, `">`...)
			b = appendHTML(b, []byte(seriesLabel(s, multi)))
			b = append(b, ` <span class="peak">peak `...)
			b = append(b, valueText(slices.Max(s.v), spec)...)
			b = append(b, `</span></span>`...)
		}
		// The y axis: the charts are drawn from 0 (bottom) to ymax (top).
		b = append(b, ` <span class="scale">0 – `...)
		b = append(b, valueText(ymax, spec)...)
		b = append(b, `</span>`...)
		b = append(b, `</figcaption><svg id="chart-`...)
		b = append(b, spec.id...)
		b = append(b, `" viewBox="0 0 1000 100" preserveAspectRatio="none" data-samples="`...)
		b = strconv.AppendInt(b, int64(c.counts[spec.id]), 10)
		b = append(b, `" data-t0="`...)
		b = strconv.AppendInt(b, (t0-base)/1e6, 10)
		b = append(b, `" data-t1="`...)
		b = strconv.AppendInt(b, (t1-base)/1e6, 10)
		b = append(b, `" data-ymax="`...)
		b = strconv.AppendFloat(b, ymax, 'g', 6, 64)
		b = append(b, `" data-unit="`...)
		b = append(b, spec.unit...)
		b = append(b, `">`...)
		for _, m := range marks {
			if m.ns == 0 {
				continue
			}
			xs := x(m.ns)
			b = append(b, `<line class="`...)
			b = append(b, m.class...)
			b = append(b, `" x1="`...)
			b = append(b, xs...)
			b = append(b, `" x2="`...)
			b = append(b, xs...)
			b = append(b, `" y1="0" y2="100"><title>`...)
			b = appendHTML(b, []byte(m.title))
			b = append(b, `</title></line>`...)
		}
		for i, s := range ss {
			b = append(b, `<polyline class="k`...)
			b = strconv.AppendInt(b, int64(i%8), 10)
			b = append(b, `" data-name="`...)
			b = appendHTML(b, []byte(seriesLabel(s, multi)))
			b = append(b, `" points="`...)
			for n, j := range s.points(t0, t1) {
				if n > 0 {
					b = append(b, ' ')
				}
				b = append(b, x(s.t[j])...)
				b = append(b, ',')
				y := chartH - chartH*min(max(s.v[j], 0), ymax)/ymax
				b = strconv.AppendFloat(b, y, 'f', 2, 64)
			}
			b = append(b, `"/>`...)
		}
		b = append(b, "</svg></figure>\n"...)
	}
	return b
}

// maxPoints is the most points a series is drawn with: two a column of
// the chart's width.
const maxPoints = 2 * int(chartW)

// points returns the indexes of the samples of s drawn on the time axis
// [t0, t1]: every one while they are at most maxPoints; past that, of
// each of the chartW columns the smallest and the largest value (in
// time order), so that a long capture's page stays small and its peaks
// stay drawn.
func (s *series) points(t0, t1 int64) []int {
	all := make([]int, 0, min(len(s.t), maxPoints))
	if len(s.t) <= maxPoints {
		for j := range s.t {
			all = append(all, j)
		}
		return all
	}
	var lo, hi [int(chartW)]int // index+1 of the column's smallest and largest
	for j, t := range s.t {
		c := int(chartW * float64(t-t0) / float64(t1-t0))
		c = min(max(c, 0), int(chartW)-1)
		switch {
		case lo[c] == 0:
			lo[c], hi[c] = j+1, j+1
		case s.v[j] < s.v[lo[c]-1]:
			lo[c] = j + 1
		case s.v[j] > s.v[hi[c]-1]:
			hi[c] = j + 1
		}
	}
	for c := range lo {
		a, z := lo[c]-1, hi[c]-1
		switch {
		case a < 0:
		case a == z:
			all = append(all, a)
		case a < z:
			all = append(all, a, z)
		default:
			all = append(all, z, a)
		}
	}
	return all
}

// seriesLabel names a series; with several streams charted, its node
// first.
func seriesLabel(s *series, multi bool) string {
	if multi {
		return string(s.st.id.Node) + " " + s.name
	}
	return s.name
}

// valueText says a value of a chart of spec readably: a percentage with
// at most one decimal ("87.5 %"), a rate in bytes per second with a
// binary unit ([rateText]).
func valueText(v float64, spec chartSpec) string {
	if spec.unit == "B/s" {
		return rateText(v)
	}
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) + " " + spec.unit
}

// rateText says a rate in bytes per second readably.
func rateText(v float64) string {
	units := []string{"B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s"}
	u := 0
	for v >= 1024 && u+1 < len(units) {
		v /= 1024
		u++
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + units[u]
}

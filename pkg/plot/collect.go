package plot

import (
	"math"
	"strconv"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/textfmt"
	"github.com/ds-telemetry/ds/pkg/views"
)

// Collector gathers the rows of a views.Series (its
// SeriesOptions.Points) into a [Chart]: one series per field of each
// channel of each stream, and per element of an array field (by index:
// "gpus.#.utilization_gpu_percent[1]"). A null, missing or non-numeric
// value is NaN: a break in the line, and so is a loss of frames in the
// stream since the channel's previous row (SeriesPoint.Resumed). It holds every point it is given
// (16 bytes each: a time or row number, a value); drawing them is a pass over each. Not safe for
// concurrent use.
type Collector struct {
	fields  []string
	rate    bool
	lines   []*collected
	byKey   map[lineKey]*collected
	rows    int64
	untimed int
	timed   bool
	streams map[frames.StreamID]bool
	chans   map[string]bool
}

// collected is one series being collected: its points, each x its time
// (> 0), or -(row+1) for a row without one (its row number, from 0).
type collected struct {
	key lineKey
	x   []int64
	v   []float64
}

type lineKey struct {
	stream  frames.StreamID
	channel string
	field   int
	elem    int // -1: not an element of an array
}

// NewCollector returns a collector of the rows of a series of fields
// (the paths, as given to views.SeriesOptions.Fields); rate says the
// values are per-second rates (SeriesOptions.Rate), for their unit.
func NewCollector(fields []string, rate bool) *Collector {
	return &Collector{fields: fields, rate: rate, byKey: make(map[lineKey]*collected), streams: make(map[frames.StreamID]bool), chans: make(map[string]bool)}
}

// Point takes one row; it is views.SeriesOptions.Points.
func (c *Collector) Point(p views.SeriesPoint) {
	c.rows++
	c.streams[p.Stream] = true
	c.chans[p.Channel] = true
	if p.TimeNS == 0 {
		c.untimed++
	} else {
		c.timed = true
	}
	if p.Resumed {
		// Frames were lost since the previous row: the lines break.
		for _, l := range c.lines {
			if l.key.stream == p.Stream && l.key.channel == p.Channel {
				c.add(l.key, p.TimeNS, views.SeriesValue{})
			}
		}
	}
	for i, v := range p.Values {
		if !v.IsArray {
			c.add(lineKey{p.Stream, p.Channel, i, -1}, p.TimeNS, v)
			continue
		}
		for j, e := range v.Elems {
			c.add(lineKey{p.Stream, p.Channel, i, j}, p.TimeNS, e)
		}
	}
}

func (c *Collector) add(k lineKey, t int64, v views.SeriesValue) {
	l := c.byKey[k]
	if l == nil {
		l = &collected{key: k}
		c.byKey[k] = l
		c.lines = append(c.lines, l)
	}
	x := math.NaN()
	if v.OK && !v.IsArray {
		x = v.Num
	}
	if t <= 0 {
		t = -c.rows // -(row+1)
	}
	l.x = append(l.x, t)
	l.v = append(l.v, x)
}

// Rows counts the rows taken; Untimed those without a time, which a
// chart of times leaves out (see [Collector.Chart]).
func (c *Collector) Rows() int64 { return c.rows }

// Untimed counts the rows taken that had no time.
func (c *Collector) Untimed() int { return c.untimed }

// Chart returns the chart of what was collected, titled title. When some
// row has a time, x is time and the rows without one are left out
// ([Collector.Untimed] says how many); when none has, x is the row
// number (from 0, in the order taken) and the chart's IndexX is set.
// Labels are the field path, then "[i]" for an element of an array, the
// channel when there are several, and the stream (node#life) when there
// are several; each is escaped for a terminal (textfmt.Escape). The unit
// is [UnitOf] the fields when they agree ("/s" appended for rates).
func (c *Collector) Chart(title string) Chart {
	ch := Chart{Title: title, IndexX: !c.timed}
	unit := ""
	for i, f := range c.fields {
		u := UnitOf(f)
		if c.rate {
			u = rateUnit(u)
		}
		if i == 0 {
			unit = u
		} else if u != unit {
			unit = ""
		}
	}
	ch.Unit = unit
	for _, l := range c.lines {
		s := Series{Label: c.label(l.key)}
		for i, x := range l.x {
			switch {
			case ch.IndexX:
				x = -x - 1
			case x < 0:
				continue
			}
			s.X = append(s.X, x)
			s.Values = append(s.Values, l.v[i])
		}
		ch.Series = append(ch.Series, s)
	}
	return ch
}

// rateUnit is the unit of the rate of a counter in unit u.
func rateUnit(u string) string {
	switch u {
	case "":
		return "/s"
	case "B":
		return "B/s"
	}
	return u + "/s"
}

func (c *Collector) label(k lineKey) string {
	s := ""
	if k.field < len(c.fields) {
		s = c.fields[k.field]
	}
	if k.elem >= 0 {
		s += "[" + strconv.Itoa(k.elem) + "]"
	}
	if len(c.chans) > 1 {
		s += " " + k.channel
	}
	if len(c.streams) > 1 {
		s += " " + k.stream.String()
	}
	return textfmt.Escape(s)
}

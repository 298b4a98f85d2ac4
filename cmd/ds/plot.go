package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v3"
	"golang.org/x/term"

	"github.com/ds-telemetry/ds/pkg/plot"
	"github.com/ds-telemetry/ds/pkg/textfmt"
)

// seriesChart is what ds series --plot and -o svg draw: the chart's
// kind and size, and the rows collected.
type seriesChart struct {
	svg           bool
	width, height int
	color         bool
	c             *plot.Collector
	fields        []string
}

// seriesChartFrom reads c's --plot, -o svg, --width, --height and
// --color: nil when ds series prints rows. A bad combination is a usage
// error.
func seriesChartFrom(c *cli.Command) (*seriesChart, error) {
	svg := c.String("format") == "svg"
	if !svg && !c.Bool("plot") {
		return nil, nil
	}
	if c.Bool("plot") && c.IsSet("format") && !svg || c.Bool("plot") && svg {
		return nil, usagef("series: --plot draws a chart for the terminal: it takes no -o (-o svg writes an SVG chart)")
	}
	if len(c.StringSlice("field")) == 0 {
		return nil, usagef("series: a chart needs --field (the values to draw)")
	}
	ch := &seriesChart{svg: svg, width: int(c.Int("width")), height: int(c.Int("height"))}
	if ch.width < 0 || ch.height < 0 {
		return nil, usagef("series: --width and --height must not be negative")
	}
	// A size asked for is drawn or refused, never silently raised (a
	// terminal smaller than the least chart is: it is no one's choice).
	minW, minH, unit := plot.MinWidth, plot.MinHeight, "columns × lines"
	if svg {
		minW, minH, unit = plot.MinSVGWidth, plot.MinSVGHeight, "px"
	}
	if ch.width > 0 && ch.width < minW || ch.height > 0 && ch.height < minH {
		return nil, usagef("series: the smallest chart is --width %d --height %d (%s)", minW, minH, unit)
	}
	w := c.Root().Writer
	if !svg {
		tw, th := terminalSize(w)
		if ch.width == 0 {
			ch.width = tw
		}
		if ch.height == 0 {
			ch.height = th
		}
		var err error
		if ch.color, err = useColor(c, w); err != nil {
			return nil, err
		}
	}
	return ch, nil
}

// collect returns the collector of the rows.
func (ch *seriesChart) collect(fields []string, rate bool) *plot.Collector {
	ch.c, ch.fields = plot.NewCollector(fields, rate), fields
	return ch.c
}

// draw writes the chart of what was collected to w, titled channel;
// rows left out for want of a time are said on stderr.
func (ch *seriesChart) draw(w, stderr io.Writer, channel string) error {
	chart := ch.c.Chart(textfmt.Escape(channel))
	if n := ch.c.Untimed(); n > 0 && !chart.IndexX {
		fmt.Fprintf(stderr, "ds: series: %s without a time (before the first clock reading) not plotted\n", textfmt.Nouns(uint64(n), "row"))
	}
	if !hasValue(chart) && ch.c.Rows() > 0 {
		// A typo in --field must not pass for a flat chart.
		var quoted []string
		for _, f := range ch.fields {
			quoted = append(quoted, strconv.Quote(f))
		}
		fmt.Fprintf(stderr, "ds: series: no number at --field %s in %s of %s (a field that is absent, null or not a number)\n",
			textfmt.Escape(strings.Join(quoted, ", ")), textfmt.Nouns(uint64(ch.c.Rows()), "record"), textfmt.Escape(channel))
	}
	var b []byte
	if ch.svg {
		b = plot.AppendSVG(nil, chart, plot.SVGOptions{Width: ch.width, Height: ch.height, Location: time.Local})
	} else {
		b = plot.AppendText(nil, chart, plot.TextOptions{Width: ch.width, Height: ch.height, Color: ch.color, Location: time.Local})
	}
	_, err := w.Write(b)
	return err
}

// terminalSize returns the size of the terminal w is (columns, lines),
// or 80×24 when it is none.
func terminalSize(w io.Writer) (int, int) {
	if f, ok := w.(*os.File); ok {
		if cols, rows, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 && rows > 0 {
			return cols, rows
		}
	}
	return 80, 24
}

// hasValue reports whether chart has a number to draw.
func hasValue(chart plot.Chart) bool {
	for _, sr := range chart.Series {
		for _, v := range sr.Values {
			if !math.IsNaN(v) {
				return true
			}
		}
	}
	return false
}

// Package plot draws charts of time series for people: a braille line
// chart for a terminal ([AppendText]), a standalone or inline SVG
// ([AppendSVG]), and the small pieces of a live view (a [Sparkline], a
// [Bar]). It is what ds series --plot and -o svg draw, and ds top's
// gauges; ds report's host charts could use [AppendSVG] with
// SVGOptions.Fragment set.
//
// A [Chart] is a title, a unit and some [Series], each a label and
// points (x, value): x is a time in ns since the Unix epoch (or, with
// Chart.IndexX, a sample number), and a value that is NaN is no value: a
// break in the line, never a zero. Charts are drawn from time buckets
// ([Buckets]): each column of the drawing holds the minimum, maximum,
// first and last value of the points that fall in it, so a million
// points cost one pass over them and the drawing stays as wide as the
// terminal or the SVG, whatever the input.
//
// [Collector] turns the rows of a views.Series (views.SeriesPoint) into
// a Chart: one series per field of each channel of each stream, and per
// element of an array field.
//
// Nothing here reads or writes files or the terminal: callers say how
// big the drawing is and whether to colour it.
package plot

package plot

import (
	"math"
	"strings"
)

// sparkRunes are the eight heights of a sparkline cell.
var sparkRunes = []rune("▁▂▃▄▅▆▇█")

// Sparkline returns vs as one cell each, "▁" (at or below lo) to "█"
// (at or above hi); a NaN is a space (no value). lo >= hi draws every
// value as "▁".
func Sparkline(vs []float64, lo, hi float64) string {
	var b strings.Builder
	for _, v := range vs {
		if math.IsNaN(v) {
			b.WriteByte(' ')
			continue
		}
		i := 0
		if hi > lo {
			i = int(math.Round((v - lo) / (hi - lo) * float64(len(sparkRunes)-1)))
		}
		b.WriteRune(sparkRunes[min(max(i, 0), len(sparkRunes)-1)])
	}
	return b.String()
}

// barRunes are the eighths of a bar cell, from one eighth to whole.
var barRunes = []rune("▏▎▍▌▋▊▉█")

// Bar returns a gauge of width cells filled to frac (0 to 1, clamped;
// NaN is empty), in eighths of a cell, padded with spaces to width.
func Bar(frac float64, width int) string {
	if width < 1 {
		return ""
	}
	if math.IsNaN(frac) {
		frac = 0
	}
	eighths := int(math.Round(min(max(frac, 0), 1) * float64(width*8)))
	var b strings.Builder
	n := 0
	for ; eighths >= 8; eighths -= 8 {
		b.WriteRune('█')
		n++
	}
	if eighths > 0 {
		b.WriteRune(barRunes[eighths-1])
		n++
	}
	b.WriteString(strings.Repeat(" ", width-n))
	return b.String()
}

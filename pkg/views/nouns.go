package views

import (
	"strconv"
	"strings"
)

// appendNouns appends n and the noun what, in the plural unless n is 1:
// "1 frame", "2 frames", "3 copies", "4 losses".
func appendNouns(b []byte, n uint64, what string) []byte {
	b = strconv.AppendUint(b, n, 10)
	b = append(b, ' ')
	switch {
	case n == 1:
		return append(b, what...)
	case strings.HasSuffix(what, "copy"):
		return append(append(b, what[:len(what)-1]...), "ies"...)
	case strings.HasSuffix(what, "loss"):
		return append(append(b, what...), "es"...)
	}
	return append(append(b, what...), 's')
}

// nouns is appendNouns as a string.
func nouns(n uint64, what string) string { return string(appendNouns(nil, n, what)) }

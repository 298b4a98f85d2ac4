package views

// AppendTerminal appends text, a line's bytes without its newline, to b
// escaped for a terminal or a pipe by the rules ds log's text format
// keeps (see terminal.go): controls but TAB, bytes that are not UTF-8,
// C1 and bidirectional controls and escape sequences shown visibly
// (\x1b, \u202e), so that nothing of a capture acts on the reader's
// terminal. With color, SGR sequences pass, and a line they leave with
// attributes changed ends with ESC [ 0 m. A CR is escaped too: the caller
// picks the segment it shows. It is for renderers outside this package
// (ds diff) that show payload text as ds log does.
func AppendTerminal(b, text []byte, color bool) []byte {
	var flags escapeFlags
	if color {
		flags |= passSGR
	}
	b, _, dirty := appendTerminal(b, text, flags)
	if dirty {
		b = append(b, sgrReset...)
	}
	return b
}

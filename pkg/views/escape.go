package views

import "bytes"

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

// AppendTerminalLines appends text, a frame of output of any number of
// lines, to b escaped as [AppendTerminal] escapes a line with colour on
// (SGR sequences pass, every other control and escape is shown as \xNN),
// but for its line ends: each LF, and a CR right before one, is kept as
// it is, and a line an SGR left with attributes changed gets ESC [ 0 m
// before its end. ds play writes a capture's output so (not a ds wrap
// --pty one's). A sequence split between two frames is escaped.
func AppendTerminalLines(b, text []byte) []byte {
	for len(text) > 0 {
		line, rest, nl := bytes.Cut(text, []byte{'\n'})
		end := ""
		if nl {
			end = "\n"
			if l, ok := bytes.CutSuffix(line, []byte{'\r'}); ok {
				line, end = l, "\r\n"
			}
		}
		b = AppendTerminal(b, line, true)
		b = append(b, end...)
		text = rest
	}
	return b
}

package views

import (
	"bytes"
	"encoding/json"
	"io"
)

// SkipLines returns an io.Writer that writes to w what is written to it
// after its first n lines (n ≤ 0: everything): ds tail -n +N, which
// prints from the N-th line on, skips N-1. It counts lines, keeping
// nothing; a write error of w is returned.
func SkipLines(w io.Writer, n int64) io.Writer {
	return &lineSkipper{w: w, skip: max(0, n)}
}

// PrettyJSON is an io.Writer that writes each line written to it that is
// a JSON object or array to its writer indented, two spaces a level, as
// journalctl -o json-pretty does (--json=pretty), and any other line (a
// "==> NAME <==" header of ds tail) as it is. Members keep their order
// and numbers their digits (a 64-bit "life" is not rounded): only white
// space changes. A line is written once its newline is; [PrettyJSON.Flush]
// writes an unfinished last one. Memory: the longest line.
type PrettyJSON struct {
	w    io.Writer
	line []byte // the unfinished line
	out  bytes.Buffer
}

// NewPrettyJSON returns a PrettyJSON writing to w.
func NewPrettyJSON(w io.Writer) *PrettyJSON { return &PrettyJSON{w: w} }

// Write implements io.Writer; its error is w's.
func (p *PrettyJSON) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			p.line = append(p.line, b...)
			break
		}
		var line []byte
		if len(p.line) > 0 {
			p.line = append(p.line, b[:i+1]...)
			line = p.line
		} else {
			line = b[:i+1]
		}
		b = b[i+1:]
		if err := p.writeLine(line); err != nil {
			return 0, err
		}
		p.line = p.line[:0]
	}
	return n, nil
}

// Flush writes the unfinished last line, if any.
func (p *PrettyJSON) Flush() error {
	if len(p.line) == 0 {
		return nil
	}
	err := p.writeLine(p.line)
	p.line = p.line[:0]
	return err
}

// writeLine writes one line, indented when it is JSON.
func (p *PrettyJSON) writeLine(line []byte) error {
	body := bytes.TrimRight(line, "\r\n")
	if len(body) > 0 && (body[0] == '{' || body[0] == '[') {
		p.out.Reset()
		if json.Indent(&p.out, body, "", "  ") == nil {
			p.out.WriteByte('\n')
			_, err := p.w.Write(p.out.Bytes())
			return err
		}
	}
	_, err := p.w.Write(line)
	return err
}

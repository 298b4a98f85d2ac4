package export

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strconv"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/textfmt"
	"github.com/ds-telemetry/ds/pkg/views"
)

// tableHeader is the header row of CSV and TSV.
var tableHeader = []string{"stream", "position", "channel", "time", "text"}

// table encodes entries as CSV or TSV rows (see [CSV]).
type table struct {
	out     *output
	tsv     bool
	csv     *csv.Writer
	buf     bytes.Buffer // what csv writes, one row at a time
	cells   []string
	b, text []byte
	compact bytes.Buffer
}

func newTable(out *output, tsv bool) *table {
	t := &table{out: out, tsv: tsv}
	t.csv = csv.NewWriter(&t.buf)
	t.row(tableHeader, false)
	return t
}

func (t *table) entry(e *views.Entry, _ *string) {
	stream, pos, channel := "", "~", noteName(e.Kind)
	if e.Kind != views.EntryDamage {
		stream = e.Stream.String()
	} else {
		pos = "!"
	}
	text := t.text[:0]
	switch e.Kind {
	case views.EntryLine:
		text = appendLossy(text, lineText(e))
	case views.EntryRecord:
		t.compact.Reset()
		if json.Compact(&t.compact, e.Payload) == nil {
			text = append(text, t.compact.Bytes()...)
		} else {
			text = append(text, textfmt.Escape(string(e.Payload))...)
		}
	case views.EntryBytes:
		if e.Content == frames.KindTextStream {
			text = appendLossy(text, e.Payload)
		} else {
			text = append(text, textfmt.Escape(string(e.Payload))...)
		}
	default:
		text = append(text, e.Message...)
	}
	if channel == "" {
		pos, channel = strconv.FormatUint(uint64(e.Position), 10), e.Channel
	}
	tm := ""
	if e.TimeNS > 0 && e.Kind != views.EntryDamage {
		tm = time.Unix(0, e.TimeNS).UTC().Format(time.RFC3339Nano)
	}
	t.text = text
	t.cells = append(t.cells[:0], stream, pos, channel, tm, string(text))
	t.row(t.cells, true)
}

// row writes one row (count: a data row, not the header).
func (t *table) row(cells []string, count bool) {
	if t.tsv {
		b := t.b[:0]
		for i, c := range cells {
			if i > 0 {
				b = append(b, '\t')
			}
			b = textfmt.AppendTSVCell(b, c)
		}
		t.b = append(b, '\n')
		t.emit(t.b, count)
		return
	}
	t.buf.Reset()
	for i, c := range cells {
		if hasControl(c) {
			cells[i] = string(appendCSVCell(nil, c))
		}
	}
	_ = t.csv.Write(cells) // a bytes.Buffer takes everything
	t.csv.Flush()
	t.emit(t.buf.Bytes(), count)
}

func (t *table) emit(b []byte, count bool) {
	if count {
		t.out.record(b)
	} else {
		t.out.write(b)
	}
}

// isControl reports whether c is a C0 control other than tab, newline
// and carriage return, or DEL: a byte a terminal acts on (ESC starts an
// escape sequence) that CSV and TSV cells write as \xNN.
func isControl(c byte) bool {
	return (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f
}

// hasControl reports whether s holds a byte of [isControl].
func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if isControl(s[i]) {
			return true
		}
	}
	return false
}

// appendHexEscape appends control byte c as \xNN (lower-case hex).
func appendHexEscape(b []byte, c byte) []byte {
	const hex = "0123456789abcdef"
	return append(b, '\\', 'x', hex[c>>4], hex[c&0xf])
}

// appendCSVCell appends c with each byte of [isControl] written \xNN
// (ESC is \x1b), so that a CSV printed on a terminal does not drive it;
// the rest, backslash included, is left for encoding/csv to quote.
func appendCSVCell(b []byte, c string) []byte {
	for i := 0; i < len(c); i++ {
		if isControl(c[i]) {
			b = appendHexEscape(b, c[i])
		} else {
			b = append(b, c[i])
		}
	}
	return b
}

func (t *table) close() {}

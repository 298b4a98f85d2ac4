package views

import (
	"encoding/base64"
	"github.com/ds-telemetry/ds/pkg/segments"
	"strconv"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/textfmt"
)

// This file holds FormatJSON: one object per text line (joined across
// frames as the text format joins them) or, with --json=frames, per
// frame; one per record, bytes frame, gap, drop, transport loss, trim,
// start and damaged range. Objects are newline-delimited, their members
// in a fixed order; the JSON encoding itself is in json.go.

// jsonLayout is FormatJSON's state.
type jsonLayout struct {
	frames bool   // LogOptions.JSONFrames: one object per frame of a text channel
	raw    []byte // scratch: a line's bytes with its newline
	text   []byte // scratch: a record's or a payload's "text"
}

// appendFrame appends the object of frame f of channel ci (nil: one
// without a descriptor) of stream st.
func (j *jsonLayout) appendFrame(b []byte, st *streamInfo, ci *chanInfo, kind segments.ItemKind, f *frames.Frame) []byte {
	b = append(b, st.jsonHead...)
	b = append(b, `,"position":`...)
	b = strconv.AppendUint(b, uint64(f.Position), 10)
	if ci != nil {
		b = append(b, ci.jsonPart()...)
	} else {
		b = append(b, `,"channel":null,"channel_id":`...)
		b = strconv.AppendUint(b, uint64(f.Channel), 10)
		b = append(b, `,"content":null`...)
	}
	n := len(b)
	ok := false
	switch {
	case ci == nil:
	case ci.kind == frames.KindTextStream:
		// A text frame always has a "text": when it is not UTF-8, each
		// bad byte is a U+FFFD there (see appendLine) and the exact
		// bytes follow in "bytes_b64".
		b = append(b, `,"text":`...)
		if b, ok = textfmt.AppendJSONQuoted(b, f.Payload, true); !ok {
			b = appendBytesB64(b, f.Payload)
			b = append(b, `,"utf8":false`...)
			ok = true
		}
	case ci.kind == frames.KindJSONRecord:
		b = append(b, `,"record":`...)
		rec := len(b)
		if b, ok = appendCompactJSON(b, f.Payload); !ok {
			b = b[:n]
		} else if !j.frames {
			// The record as ds log shows it, for jq's test() (see withText).
			j.text = append(j.text[:0], b[rec:]...)
			b = append(b, `,"text":`...)
			b, _ = textfmt.AppendJSONQuoted(b, j.text, true)
		}
	}
	if !ok {
		b = appendBytesB64(b, f.Payload)
		if ci != nil && ci.kind == frames.KindJSONRecord {
			b = append(b, `,"invalid_json":true`...)
		}
		if !j.frames {
			// The bytes as ds log shows them, escaped.
			j.text = appendEscaped(j.text[:0], f.Payload, true)
			b = append(b, `,"text":`...)
			b, _ = textfmt.AppendJSONQuoted(b, j.text, true)
		}
	}
	switch kind {
	case segments.ItemConflict:
		b = append(b, `,"conflict":true`...)
	case segments.ItemLate:
		b = append(b, `,"late":true`...)
	}
	b = st.clock.appendJSON(b, st.clock.ns)
	return append(b, "}\n"...)
}

// appendLine appends the object of one text line of channel ci of stream
// st (FormatJSON without JSONFrames), whose time is ns: the line's bytes
// exact, its newline included when it had one, from its first frame's
// position to its last's; "partial":true when it was printed before its
// newline, "continues":true when it is the rest of a line printed so.
func (j *jsonLayout) appendLine(b []byte, st *streamInfo, ci *chanInfo, sp lineSpan, ns int64, line []byte) []byte {
	b = append(b, st.jsonHead...)
	b = append(b, `,"position":`...)
	b = strconv.AppendUint(b, uint64(sp.pos), 10)
	b = append(b, `,"last_position":`...)
	b = strconv.AppendUint(b, uint64(max(sp.last, sp.pos)), 10)
	b = append(b, ci.jsonPart()...)
	b = append(b, `,"text":`...)
	b, ok := textfmt.AppendJSONQuoted(b, line, true)
	if sp.nl {
		// The quoted line is closed after its newline is added.
		b = append(b[:len(b)-1], `\n"`...)
	}
	if !ok {
		// Not UTF-8: "text" is kept, lossy (each byte that is not
		// UTF-8 a U+FFFD, as encoding/json writes it), so that
		// jq 'select(.text|test("FAIL"))' works on every line; the exact
		// bytes follow in "bytes_b64".
		raw := line
		if sp.nl {
			raw = append(append(j.raw[:0], line...), '\n')
			j.raw = raw
		}
		b = appendBytesB64(b, raw)
		b = append(b, `,"utf8":false`...)
	}
	if !sp.nl {
		b = append(b, `,"partial":true`...)
	}
	if sp.cont {
		b = append(b, `,"continues":true`...)
	}
	b = st.clock.appendJSON(b, ns)
	return append(b, "}\n"...)
}

// appendBytesB64 appends the member "bytes_b64" (p in standard base64).
func appendBytesB64(b, p []byte) []byte {
	b = append(b, `,"bytes_b64":"`...)
	b = base64.StdEncoding.AppendEncode(b, p)
	return append(b, '"')
}

// withText gives a JSON object of the per-line --json (b, ending in
// "}\n") a "text" member: what ds log shows of it after its columns, so
// that jq 'select(.text|test("FAIL"))' finds in every object what grep
// finds in ds log's lines. --json=frames objects have none but text
// frames'.
func (j *jsonLayout) withText(b, msg []byte) []byte {
	if j.frames || len(b) < 2 {
		return b
	}
	b = append(b[:len(b)-2], `,"text":`...)
	b, _ = textfmt.AppendJSONQuoted(b, msg, true)
	return append(b, "}\n"...)
}

// jsonFrame prints the object of frame f (see appendFrame), unless -g
// hides it.
func (p *Printer) jsonFrame(st *streamInfo, ci *chanInfo, kind segments.ItemKind, f *frames.Frame) {
	if !p.json.frames {
		// Lines of text channels are joined across frames: what comes
		// after a line's start is printed after it.
		var except *partial
		if ci != nil {
			except = ci.line
		}
		p.cutBefore(st, f.Position, except)
	}
	if p.sel.Grep != nil && !p.sel.Grep.Match(f.Payload) {
		return
	}
	if p.entries != nil {
		p.entryFrame(st, ci, kind, f)
		return
	}
	p.line = p.json.appendFrame(p.line[:0], st, ci, kind, f)
	p.write(p.line)
}

// jsonText prints the object of one text line (see appendLine), unless
// -g hides it.
func (p *Printer) jsonText(st *streamInfo, ci *chanInfo, sp lineSpan, line []byte) {
	if p.sel.Grep != nil && !p.sel.Grep.Match(line) {
		return
	}
	if p.entries != nil {
		p.entryLine(st, ci, sp, line)
		return
	}
	p.line = p.json.appendLine(p.line[:0], st, ci, sp, p.clock.lineNS, line)
	p.write(p.line)
}

// jsonNoteHead starts p.line with the object of a note of stream st, up
// to its member key: `{"stream":…,"life":N,"KEY":`. The caller appends
// the member's value and gives the line to jsonNote.
func (p *Printer) jsonNoteHead(st *streamInfo, key string) []byte {
	b := append(p.line[:0], st.jsonHead...)
	b = append(b, `,"`...)
	b = append(b, key...)
	return append(b, `":`...)
}

// jsonNote closes and prints the object b of a note (begun by
// jsonNoteHead, or `{"damage":` for an input's), with msg as its "text"
// (see withText). b may be p.line, and msg p.msg.
func (p *Printer) jsonNote(b, msg []byte) {
	p.line = append(b, "}\n"...)
	p.line = p.json.withText(p.line, msg)
	p.write(p.line)
}

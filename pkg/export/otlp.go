package export

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/views"
)

// OTLP severity numbers (opentelemetry-proto logs.proto SeverityNumber).
const (
	severityInfo  = 9
	severityWarn  = 13
	severityError = 17
)

// severityText is the JSON severityText of severity number n.
func severityText(n int) string {
	switch n {
	case severityWarn:
		return `"WARN"`
	case severityError:
		return `"ERROR"`
	}
	return `"INFO"`
}

// otlp encodes entries as OTLP/JSON logs, one request per line (see
// [OTLP]).
type otlp struct {
	out       *output
	scope     []byte                     // `"scopeLogs":[{"scope":{…},"logRecords":[`
	resources map[frames.StreamID][]byte // `{"resourceLogs":[{"resource":{…},` per stream
	b         []byte
	compact   bytes.Buffer
	lastNS    int64            // the latest time of an entry so far (0: none), a damage record's time
	now       func() time.Time // a damage record's observed time before any clock reading
}

func newOTLP(out *output, opts Options) *otlp {
	scope := []byte(`"scopeLogs":[{"scope":{"name":"ds"`)
	if opts.Version != "" {
		scope = append(scope, `,"version":`...)
		scope = appendJSONString(scope, opts.Version)
	}
	scope = append(scope, `},"logRecords":[`...)
	return &otlp{out: out, scope: scope, resources: map[frames.StreamID][]byte{}, now: time.Now}
}

// resource returns the request's head up to its scopeLogs, for stream s
// of label (nil: none); for damage (not of a stream), a resource naming
// the damaged file: service.name "ds", ds.file.
func (o *otlp) resource(s frames.StreamID, label *string, e *views.Entry) []byte {
	if e.Kind == views.EntryDamage {
		b := []byte(`{"resourceLogs":[{"resource":{"attributes":[`)
		b = appendStringAttr(b, "service.name", "ds")
		b = append(b, ',')
		b = appendStringAttr(b, "ds.file", e.File)
		return append(b, "]},"...)
	}
	if r, ok := o.resources[s]; ok {
		return r
	}
	b := []byte(`{"resourceLogs":[{"resource":{"attributes":[`)
	id := s.String()
	if label != nil && *label != "" {
		b = appendStringAttr(b, "service.name", *label)
		b = append(b, ',')
	}
	b = appendStringAttr(b, "service.instance.id", id)
	b = append(b, ',')
	b = appendStringAttr(b, "ds.stream", id)
	b = append(b, ',')
	b = appendStringAttr(b, "ds.node", string(s.Node))
	b = append(b, ',')
	b = appendStringAttr(b, "ds.life", strconv.FormatUint(uint64(s.Life), 10))
	if label != nil && *label != "" {
		b = append(b, ',')
		b = appendStringAttr(b, "ds.label", *label)
	}
	b = append(b, "]},"...)
	o.resources[s] = b
	return b
}

func (o *otlp) entry(e *views.Entry, label *string) {
	b := append(o.b[:0], o.resource(e.Stream, label, e)...)
	b = append(b, o.scope...)
	b = append(b, '{')
	tm := e.TimeNS
	if e.Kind == views.EntryDamage {
		tm = o.lastNS // damage has no clock: the last time before it
	} else {
		o.lastNS = max(o.lastNS, tm)
	}
	if tm > 0 {
		t := strconv.FormatInt(tm, 10)
		b = append(b, `"timeUnixNano":"`...)
		b = append(b, t...)
		b = append(b, `","observedTimeUnixNano":"`...)
		b = append(b, t...)
		b = append(b, `",`...)
	} else if e.Kind == views.EntryDamage {
		b = append(b, `"observedTimeUnixNano":"`...)
		b = strconv.AppendInt(b, o.now().UnixNano(), 10)
		b = append(b, `",`...)
	}
	sev := severityInfo
	iostream := ""
	if strings.HasPrefix(e.Channel, "proc.") && e.Content == frames.KindTextStream {
		switch {
		case strings.HasSuffix(e.Channel, ".stderr"):
			iostream = "stderr"
		case strings.HasSuffix(e.Channel, ".stdout"):
			iostream = "stdout"
		}
	}
	switch e.Kind {
	case views.EntryGap, views.EntryDrop, views.EntryTransport:
		sev = severityWarn
	case views.EntryDamage:
		sev = severityError
	case views.EntryLine, views.EntryBytes:
		if iostream == "stderr" {
			sev = severityWarn
		}
	}
	b = append(b, `"severityNumber":`...)
	b = strconv.AppendInt(b, int64(sev), 10)
	b = append(b, `,"severityText":`...)
	b = append(b, severityText(sev)...)
	b = append(b, `,"body":`...)
	b = o.appendBody(b, e)
	b = append(b, `,"attributes":[`...)
	b = o.appendAttrs(b, e, iostream)
	b = append(b, "]}]}]}]}\n"...)
	o.b = b
	o.out.record(b)
}

// appendBody appends the AnyValue body of e (see [OTLP]).
func (o *otlp) appendBody(b []byte, e *views.Entry) []byte {
	switch e.Kind {
	case views.EntryLine:
		return appendTextValue(b, lineText(e))
	case views.EntryRecord:
		o.compact.Reset()
		if json.Compact(&o.compact, e.Payload) == nil {
			return appendStringValue(b, o.compact.Bytes())
		}
		return appendTextValue(b, e.Payload)
	case views.EntryBytes:
		if e.Content == frames.KindTextStream {
			return appendTextValue(b, e.Payload)
		}
		return appendBytesValue(b, e.Payload)
	}
	return appendStringValue(b, e.Message)
}

// appendAttrs appends the attributes of e (see [OTLP]), iostream its
// log.iostream ("" for none).
func (o *otlp) appendAttrs(b []byte, e *views.Entry, iostream string) []byte {
	n := 0
	sep := func() {
		if n > 0 {
			b = append(b, ',')
		}
		n++
	}
	str := func(k, v string) { sep(); b = appendStringAttr(b, k, v) }
	num := func(k string, v uint64) { sep(); b = appendIntAttr(b, k, v) }
	flag := func(k string, v bool) {
		if v {
			sep()
			b = append(b, `{"key":"`...)
			b = append(b, k...)
			b = append(b, `","value":{"boolValue":true}}`...)
		}
	}
	if name := noteName(e.Kind); name != "" {
		str("ds.note", name)
		switch e.Kind {
		case views.EntryGap, views.EntryTrimmed:
			num("ds.from", uint64(e.Range.From))
			num("ds.to", uint64(e.Range.To))
			num("ds.frames", e.Range.Count)
		case views.EntryDrop:
			num("ds.before", uint64(e.Drop.Before))
			num("ds.frames", e.Drop.Frames)
			str("ds.reason", e.Drop.Reason)
		case views.EntryTransport:
			if t := e.Transport; t != nil {
				str("ds.output", t.Output)
				num("ds.from", uint64(t.From))
				num("ds.to", uint64(t.To))
				num("ds.frames", t.Frames)
				str("ds.reason", t.Reason)
			}
		case views.EntryStart:
			num("ds.position", uint64(e.Position))
		case views.EntryDamage:
			str("ds.file", e.File)
			num("ds.offset", uint64(e.Offset))
			num("ds.end", uint64(e.End))
			flag("ds.torn", e.Torn)
		}
		return b
	}
	str("ds.channel", e.Channel)
	num("ds.position", uint64(e.Position))
	if e.LastPosition > e.Position {
		num("ds.last_position", uint64(e.LastPosition))
	}
	if iostream != "" {
		str("log.iostream", iostream)
	}
	flag("ds.partial", e.Partial)
	flag("ds.late", e.Late)
	flag("ds.conflict", e.Conflict)
	return b
}

// appendStringAttr appends the KeyValue {key, stringValue v}.
func appendStringAttr(b []byte, k, v string) []byte {
	b = append(b, `{"key":`...)
	b = appendJSONString(b, k)
	b = append(b, `,"value":`...)
	b = appendStringValue(b, []byte(v))
	return append(b, '}')
}

// appendIntAttr appends the KeyValue {key, intValue v}: an int64 is a
// decimal string in the protobuf JSON mapping. (Positions and offsets
// stay far below 2^63.)
func appendIntAttr(b []byte, k string, v uint64) []byte {
	b = append(b, `{"key":`...)
	b = appendJSONString(b, k)
	b = append(b, `,"value":{"intValue":"`...)
	b = strconv.AppendUint(b, v, 10)
	return append(b, `"}}`...)
}

// appendStringValue appends the AnyValue {stringValue: s}.
func appendStringValue(b, s []byte) []byte {
	b = append(b, `{"stringValue":`...)
	b = appendJSONString(b, s)
	return append(b, '}')
}

// appendTextValue appends text p as a stringValue, or as a bytesValue
// when it is not UTF-8.
func appendTextValue(b, p []byte) []byte {
	if utf8.Valid(p) {
		return appendStringValue(b, p)
	}
	return appendBytesValue(b, p)
}

// appendBytesValue appends the AnyValue {bytesValue: base64 of p}.
func appendBytesValue(b, p []byte) []byte {
	b = append(b, `{"bytesValue":"`...)
	b = base64.StdEncoding.AppendEncode(b, p)
	return append(b, `"}`...)
}

func (o *otlp) close() {}

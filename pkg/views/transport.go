package views

import (
	"encoding/json"
	"strconv"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/textfmt"
)

// TransportLoss is one range of positions that an output of the stream
// which leaves the machine (ds wrap -o nats://…) did not deliver, read
// from a datastream.transport record ([frames.TransportRecord]) that its
// writer submitted once the output delivered again. The record has a
// position of its own, after From..To. A copy read back from that output
// lacks those positions (a gap, which this explains); any other copy (the
// capture file) holds them, and the record tells its reader what the
// network copy lacks.
type TransportLoss struct {
	Output string          `json:"output"` // the output, without credentials ("nats://host:4222/ds"); cut to 200 bytes
	From   frames.Position `json:"from"`   // first position not delivered
	To     frames.Position `json:"to"`     // last position not delivered (From ≤ To)
	Frames uint64          `json:"frames"` // frames not delivered in From..To, as the record says
	Reason string          `json:"reason"` // "server unreachable: …"; cut to 200 bytes
	// SinceUnixMs and UntilUnixMs bound the outage in wall-clock time
	// (ms since the Unix epoch); 0 when the record does not say.
	SinceUnixMs int64 `json:"since_unix_ms"`
	UntilUnixMs int64 `json:"until_unix_ms"`
}

// maxTransportText bounds the bytes of a [TransportLoss]'s Output and
// Reason: they come from input, and ds gaps keeps them.
const maxTransportText = 200

// decodeTransport reads a datastream.transport record. It reports false
// for a record that does not decode, names no loss, a range whose From
// is above its To, or no frame lost: such a record is shown as any other
// record, never as a loss.
func decodeTransport(payload []byte) (TransportLoss, bool) {
	var r frames.TransportRecord
	if json.Unmarshal(payload, &r) != nil || r.Lost == nil || r.Lost.From > r.Lost.To || r.Lost.Frames == 0 {
		return TransportLoss{}, false
	}
	l := r.Lost
	return TransportLoss{
		Output: clipTo(r.Output, maxTransportText), From: l.From, To: l.To, Frames: l.Frames,
		Reason:      clipTo(l.Reason, maxTransportText),
		SinceUnixMs: l.SinceUnixMs, UntilUnixMs: l.UntilUnixMs,
	}, true
}

// overlaps reports whether t's range and g share a position.
func (t *TransportLoss) overlaps(g segments.Gap) bool { return t.From <= g.To && g.From <= t.To }

// appendTransportMsg appends what ds log shows of a transport loss,
// "positions 120–340 (221 frames) not delivered by OUTPUT: REASON", with
// Output and Reason escaped for a terminal.
func appendTransportMsg(b []byte, t *TransportLoss) []byte {
	b = appendPositions(b, t.From, t.To)
	b = append(b, " ("...)
	b = textfmt.AppendNouns(b, t.Frames, "frame")
	b = append(b, ") "...)
	return appendNotDelivered(b, t, quoteTerminal)
}

// How appendNotDelivered shows the names and reasons a [TransportLoss]
// carries from the input.
type quoting uint8

const (
	quoteTerminal quoting = iota // escaped for a terminal (appendEscaped): ds log
	quoteText                    // quoted when not plain text (safeText): ds gaps
	quoteNone                    // as they are (for JSON, which quotes them)
)

// appendNotDelivered appends "not delivered by OUTPUT: REASON" ("by an
// output" when the record names none; no ": REASON" when it gives none),
// with OUTPUT and REASON shown as q says.
func appendNotDelivered(b []byte, t *TransportLoss, q quoting) []byte {
	quote := func(b []byte, s string) []byte {
		switch q {
		case quoteTerminal:
			return appendEscaped(b, s, true)
		case quoteText:
			return append(b, textfmt.Quote(s)...)
		}
		return append(b, s...)
	}
	b = append(b, "not delivered by "...)
	if t.Output == "" {
		b = append(b, "an output"...)
	} else {
		b = quote(b, t.Output)
	}
	if t.Reason != "" {
		b = append(b, ": "...)
		b = quote(b, t.Reason)
	}
	return b
}

// notDelivered is appendNotDelivered for ds gaps: names with control
// characters or bytes that are not UTF-8 are quoted ([safeText]) when
// quote is set, and taken as they are (for JSON) otherwise.
func notDelivered(t *TransportLoss, quote bool) string {
	q := quoteNone
	if quote {
		q = quoteText
	}
	return string(appendNotDelivered(nil, t, q))
}

// appendTransportJSON appends t as the JSON object ds log --json and ds
// gaps --json give it, in field order.
func appendTransportJSON(b []byte, t *TransportLoss) []byte {
	b = append(b, `{"output":`...)
	b = textfmt.AppendJSONString(b, t.Output, true)
	b = append(b, `,"from":`...)
	b = strconv.AppendUint(b, uint64(t.From), 10)
	b = append(b, `,"to":`...)
	b = strconv.AppendUint(b, uint64(t.To), 10)
	b = append(b, `,"frames":`...)
	b = strconv.AppendUint(b, t.Frames, 10)
	b = append(b, `,"reason":`...)
	b = textfmt.AppendJSONString(b, t.Reason, true)
	b = append(b, `,"since_unix_ms":`...)
	b = strconv.AppendInt(b, t.SinceUnixMs, 10)
	b = append(b, `,"until_unix_ms":`...)
	b = strconv.AppendInt(b, t.UntilUnixMs, 10)
	return append(b, '}')
}

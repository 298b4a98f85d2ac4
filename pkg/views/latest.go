package views

import (
	"bufio"
	"bytes"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/textfmt"
)

// LatestOptions configures [NewLatest].
type LatestOptions struct {
	// Channels selects channels by descriptor (exact name or prefix, see
	// frames.ParseChannelPattern). Empty means every declared channel but
	// the writer's own datastream.* ones. Frames of channels without a
	// descriptor never match.
	Channels []frames.ChannelFilter
	// Window is the assembler's reorder window per stream, in bytes (0:
	// DefaultWindow; see AssemblerOptions).
	Window int
}

// Latest is the gauge view, what ds latest scans into (it is a [segments.Sink]):
// it keeps the last frame (the highest position) of each matching
// channel of each stream, with its time, the stream's latest
// datastream.clock reading at or before it (see the package doc).
//
// It reads its input whole, in position order through an [segments.Assembler]
// (duplicates collapsed, first wins), and keeps one payload per matching
// (stream, channel), overwritten in place: its memory is the assembler's
// bound plus the largest payload of each matching channel, whatever the
// input's length. A late frame (see [segments.ItemLate]) is taken if its position
// is above the kept one's; its time is then unknown.
//
// A Latest is not safe for concurrent use.
type Latest struct {
	a   *segments.Assembler
	cat viewCatalog
}

// latestFrame is the last frame of a channel.
type latestFrame struct {
	has     bool
	pos     frames.Position
	timeNS  int64
	payload []byte
}

// LatestEntry is the last frame of one channel of one stream.
type LatestEntry struct {
	Stream   frames.StreamID
	Channel  frames.ChannelDescriptor
	Position frames.Position
	// TimeNS is the frame's time in ns since the Unix epoch, 0 when
	// unknown (no clock reading before it, or a late frame).
	TimeNS int64
	// Payload is the frame's payload. It aliases the Latest's storage.
	Payload []byte
}

// NewLatest returns an empty gauge view.
func NewLatest(opts LatestOptions) *Latest {
	l := &Latest{cat: newViewCatalog(opts.Channels, true)}
	l.a = segments.NewAssembler(opts.Window, l.item)
	return l
}

// Header implements Sink.
func (l *Latest) Header(h segments.SegmentHeader) {
	l.cat.header(h)
	l.a.Segment(h.Stream.Stream, h.Seq)
}

// Channel implements Sink.
func (l *Latest) Channel(d frames.ChannelDescriptor) { l.cat.channel(d) }

// Frame implements Sink.
func (l *Latest) Frame(id frames.StreamID, f frames.Frame) { l.a.Add(id, f) }

// Ended implements Sink.
func (l *Latest) Ended(frames.StreamID) {}

// Trimmed implements Sink.
func (l *Latest) Trimmed(id frames.StreamID, before frames.Position, store bool) {
	l.a.Trimmed(id, before, store)
}

// Damage implements Sink. The gauge has no place for damage; the caller
// reports it.
func (l *Latest) Damage(offset, end int64, torn bool, err error) {}

// Flush takes in the frames the assembler still holds back (gaps are then
// declared). Call it once the inputs are read, before [Latest.Entries].
func (l *Latest) Flush() { l.a.Flush() }

func (l *Latest) item(it segments.Item) {
	vs := l.cat.item(it)
	if vs == nil {
		return
	}
	ch := l.cat.channelOf(vs, it.Frame.Channel)
	if ch == nil || !ch.match {
		return
	}
	last := &ch.last
	if last.has && it.Frame.Position < last.pos {
		return
	}
	last.has, last.pos = true, it.Frame.Position
	last.timeNS = vs.clockNS
	if it.Kind == segments.ItemLate {
		last.timeNS = 0
	}
	last.payload = append(last.payload[:0], it.Frame.Payload...)
}

// Entries returns the last frame of each matching channel that had one,
// ordered by stream (frames.StreamID.Compare) then channel name (then
// channel id, for two channels of one name).
func (l *Latest) Entries() []LatestEntry {
	var out []LatestEntry
	for _, vs := range l.cat.streams {
		for _, ch := range vs.chans {
			if ch.last.has {
				out = append(out, LatestEntry{Stream: vs.id, Channel: ch.desc, Position: ch.last.pos, TimeNS: ch.last.timeNS, Payload: ch.last.payload})
			}
		}
	}
	slices.SortFunc(out, func(a, b LatestEntry) int {
		if c := a.Stream.Compare(b.Stream); c != 0 {
			return c
		}
		if c := strings.Compare(a.Channel.Name, b.Channel.Name); c != 0 {
			return c
		}
		return int(a.Channel.ID) - int(b.Channel.ID)
	})
	return out
}

// Unmatched returns the channel patterns that matched no declared channel
// of any stream, in their CLI spelling.
func (l *Latest) Unmatched() []string { return l.cat.unmatched() }

// Channels returns the names of the declared channels of the inputs,
// sorted, at most [MaxListedChannels], and whether there were more.
func (l *Latest) Channels() ([]string, bool) { return l.cat.channelNames() }

// WriteLatestText writes entries as aligned text, one line each:
//
//	STREAM  CHANNEL  POSITION  TIME  PAYLOAD
//
// TIME is RFC 3339 in UTC, or "-" when unknown. A record is printed as
// compact JSON; text without its final newline, every byte a terminal
// would act on or that is not UTF-8 escaped as \xNN (tabs kept), as ds
// log does; anything else (bytes, a record that is not JSON) fully
// escaped.
func WriteLatestText(w io.Writer, entries []LatestEntry) error {
	var streamW, nameW, posW, timeW int
	times := make([]string, len(entries))
	for i, e := range entries {
		streamW = max(streamW, utf8.RuneCountInString(e.Stream.String()))
		nameW = max(nameW, utf8.RuneCountInString(e.Channel.Name))
		posW = max(posW, decimalLen(uint64(e.Position)))
		times[i] = "-"
		if e.TimeNS != 0 {
			times[i] = formatTime(e.TimeNS)
		}
		timeW = max(timeW, len(times[i]))
	}
	bw := bufio.NewWriter(newSafeWriter(w))
	var b []byte
	for i, e := range entries {
		b = appendPadded(b[:0], e.Stream.String(), streamW)
		b = append(b, "  "...)
		b = appendPadded(b, e.Channel.Name, nameW)
		b = append(b, "  "...)
		b = appendPad(b, posW-decimalLen(uint64(e.Position)))
		b = strconv.AppendUint(b, uint64(e.Position), 10)
		b = append(b, "  "...)
		b = appendPadded(b, times[i], timeW)
		b = append(b, "  "...)
		b = appendLatestPayload(b, e)
		b = append(bytes.TrimRight(b, " "), '\n')
		if _, err := bw.Write(b); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// appendLatestPayload appends the text form of e's payload.
func appendLatestPayload(b []byte, e LatestEntry) []byte {
	switch e.Channel.Content.Kind {
	case frames.KindJSONRecord:
		if c, ok := appendCompactJSON(b, e.Payload); ok {
			return c
		}
	case frames.KindTextStream:
		p := bytes.TrimSuffix(e.Payload, []byte("\n"))
		p = bytes.TrimSuffix(p, []byte("\r"))
		return appendEscaped(b, p, false)
	}
	return appendEscaped(b, e.Payload, true)
}

// WriteLatestJSON writes entries as newline-delimited JSON, one object
// each, keys in this order:
//
//	{"stream":"n1#7","node":"n1","life":7,"channel":"host.cpu",
//	 "content":"JsonRecord","position":42,"time":"2024-11-30T08:00:00.1Z",
//	 "time_unix_ns":1732953600100000000,"record":{…}}
//
// "time" and "time_unix_ns" are null when unknown. The payload is
// "record" (the parsed JSON) for a record, "text" for text, and otherwise
// "bytes_b64" (standard base64), with "invalid_json":true for a record
// that is not JSON. Text that is not UTF-8 has both: a lossy "text" (each
// byte that is not UTF-8 a U+FFFD), then its exact bytes in "bytes_b64"
// and "utf8":false, as in ds log --json.
func WriteLatestJSON(w io.Writer, entries []LatestEntry) error {
	bw := bufio.NewWriter(w)
	var b []byte
	for _, e := range entries {
		name := e.Stream.String()
		b = append(b[:0], `{"stream":`...)
		b = textfmt.AppendJSONString(b, name, true)
		b = append(b, `,"node":`...)
		b = textfmt.AppendJSONString(b, e.Stream.Node, true)
		b = append(b, `,"life":`...)
		b = strconv.AppendUint(b, uint64(e.Stream.Life), 10)
		b = append(b, `,"channel":`...)
		b = textfmt.AppendJSONString(b, e.Channel.Name, true)
		b = append(b, `,"content":`...)
		b = textfmt.AppendJSONString(b, e.Channel.Content.Kind.String(), true)
		b = append(b, `,"position":`...)
		b = strconv.AppendUint(b, uint64(e.Position), 10)
		if e.TimeNS != 0 {
			b = append(b, `,"time":"`...)
			b = append(b, formatTime(e.TimeNS)...)
			b = append(b, `","time_unix_ns":`...)
			b = strconv.AppendInt(b, e.TimeNS, 10)
		} else {
			b = append(b, `,"time":null,"time_unix_ns":null`...)
		}
		n := len(b)
		ok := false
		switch e.Channel.Content.Kind {
		case frames.KindJSONRecord:
			b = append(b, `,"record":`...)
			if b, ok = appendCompactJSON(b, e.Payload); !ok {
				b = b[:n]
			}
		case frames.KindTextStream:
			// Text that is not UTF-8 keeps a lossy "text" (a U+FFFD
			// for each bad byte) beside its exact "bytes_b64".
			b = append(b, `,"text":`...)
			if b, ok = textfmt.AppendJSONQuoted(b, e.Payload, true); !ok {
				b = appendBytesB64(b, e.Payload)
				b = append(b, `,"utf8":false`...)
				ok = true
			}
		}
		if !ok {
			b = appendBytesB64(b, e.Payload)
			if e.Channel.Content.Kind == frames.KindJSONRecord {
				b = append(b, `,"invalid_json":true`...)
			}
		}
		b = append(b, "}\n"...)
		if _, err := bw.Write(b); err != nil {
			return err
		}
	}
	return bw.Flush()
}

package export

import (
	"strconv"
	"strings"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/textfmt"
	"github.com/ds-telemetry/ds/pkg/views"
)

// castChannel is what the asciicast encoder keeps of one text channel:
// the start of a UTF-8 character its last frame ended inside, and
// whether that frame ended in CR.
type castChannel struct {
	held   []byte
	lastCR bool
	pty    bool
}

// castKey names a channel of a stream.
type castKey struct {
	stream frames.StreamID
	id     frames.ChannelID
}

// asciicast encodes entries as asciicast v2 (see the package doc).
type asciicast struct {
	out      *output
	opts     Options
	header   bool  // written
	startNS  int64 // the first clock reading's steady time (0: none yet)
	wallNS   int64 // its wall-clock time
	lastUS   int64 // the time of the previous event, µs since startNS
	command  string
	pty      map[frames.StreamID]bool
	chans    map[castKey]*castChannel
	order    []castKey // chans in the order first seen, for close
	data, ev []byte
}

func newAsciicast(out *output, opts Options) *asciicast {
	if opts.Width <= 0 {
		opts.Width = DefaultWidth
	}
	if opts.Height <= 0 {
		opts.Height = DefaultHeight
	}
	return &asciicast{out: out, opts: opts, pty: map[frames.StreamID]bool{}, chans: map[castKey]*castChannel{}}
}

// started implements starter: a "started" record of stream s, read
// before the selection. The first one names the recording's command; a
// stream whose child ran on a pty has its output passed as it is.
func (a *asciicast) started(s frames.StreamID, l *views.Lifecycle) {
	if l.PTY {
		a.pty[s] = true
	}
	if a.command == "" {
		a.command = textfmt.ShellJoin(l.Argv)
	}
}

func (a *asciicast) entry(e *views.Entry, _ *string) {
	switch {
	case a.startNS != 0:
	case e.StartNS != 0:
		// The inputs' first clock reading, as ds log --time=since-start
		// measures from (its steady time is its wall time).
		a.startNS, a.wallNS = e.StartNS, e.StartNS
	case e.SteadyNS != 0:
		a.startNS, a.wallNS = e.SteadyNS, e.TimeNS
	}
	switch {
	case e.Kind == views.EntryRecord && strings.HasSuffix(e.Channel, ".lifecycle"):
		// Taken by started, as they were read.
	case e.Kind == views.EntryBytes && e.Content == frames.KindTextStream && !e.Conflict:
		a.output(e)
	case noteName(e.Kind) != "" && e.Kind != views.EntryStart && e.Kind != views.EntryTrimmed:
		a.event(e.SteadyNS, 'm', e.Message)
	}
}

// output writes the "o" event of text frame e.
func (a *asciicast) output(e *views.Entry) {
	k := castKey{e.Stream, e.ChannelID}
	c := a.chans[k]
	if c == nil {
		c = &castChannel{}
		a.chans[k] = c
		a.order = append(a.order, k)
	}
	c.pty = a.pty[e.Stream]
	p := e.Payload
	if len(c.held) > 0 {
		p = append(c.held, p...)
	}
	n := incompleteTail(p)
	d := a.data[:0]
	for i, b := range p[:len(p)-n] {
		if b == '\n' && !c.pty && !(i > 0 && p[i-1] == '\r' || i == 0 && c.lastCR) {
			d = append(d, '\r')
		}
		d = append(d, b)
	}
	if len(p) > n {
		c.lastCR = p[len(p)-n-1] == '\r'
	}
	c.held = append(c.held[:0], p[len(p)-n:]...)
	a.data = d
	if len(d) > 0 {
		a.event(e.SteadyNS, 'o', d)
	}
}

// event writes one event of code (o, m) at steady time ns (0: unknown,
// the previous event's).
func (a *asciicast) event(ns int64, code byte, data []byte) {
	a.writeHeader()
	if ns != 0 && a.startNS != 0 {
		a.lastUS = max(a.lastUS, (ns-a.startNS)/1000)
	}
	b := append(a.ev[:0], '[')
	b = strconv.AppendInt(b, a.lastUS/1e6, 10)
	b = append(b, '.')
	frac := strconv.AppendInt(nil, a.lastUS%1e6+1e6, 10)
	b = append(b, frac[1:]...)
	b = append(b, ", \""...)
	b = append(b, code)
	b = append(b, "\", "...)
	b = appendJSONString(b, data)
	b = append(b, "]\n"...)
	a.ev = b
	a.out.record(b)
}

// writeHeader writes the header line, unless it was written.
func (a *asciicast) writeHeader() {
	if a.header {
		return
	}
	a.header = true
	b := []byte(`{"version": 2, "width": `)
	b = strconv.AppendInt(b, int64(a.opts.Width), 10)
	b = append(b, `, "height": `...)
	b = strconv.AppendInt(b, int64(a.opts.Height), 10)
	if a.wallNS > 0 {
		b = append(b, `, "timestamp": `...)
		b = strconv.AppendInt(b, a.wallNS/1e9, 10)
	}
	if a.command != "" {
		b = append(b, `, "command": `...)
		b = appendJSONString(b, a.command)
	}
	if a.opts.Title != "" {
		b = append(b, `, "title": `...)
		b = appendJSONString(b, a.opts.Title)
	}
	b = append(b, "}\n"...)
	a.out.write(b)
}

// close writes the bytes held back at the end of channels (characters
// their streams never completed: U+FFFD each), and the header of an
// export without events.
func (a *asciicast) close() {
	for _, k := range a.order {
		if c := a.chans[k]; len(c.held) > 0 {
			a.event(0, 'o', c.held)
		}
	}
	a.writeHeader()
}

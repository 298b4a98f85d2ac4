package views

import (
	"strconv"
	"strings"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/textfmt"
)

// This file holds what a [Printer] keeps per stream and per channel. The
// per-stream state of each of the printer's parts lives in the part's own
// type (streamBounds, streamTime, streamCursor, streamNotes), so that a
// stream's record says which part reads which field.

// streamInfo is what a printer knows of one stream.
type streamInfo struct {
	desc     frames.StreamDescriptor
	name     string // desc.Stream.String()
	jsonHead []byte // `{"stream":…,"node":…,"life":N` (FormatJSON)
	col      string // the stream column's text: name, or a shorter unambiguous form
	colW     int    // col in runes

	decl  declaredChannels               // the channels declared (Printer.Channel, Printer.Catalog)
	chans []*chanInfo                    // by id, for ids < maxSmallChannel or while dense (setChannel): channels that had a frame
	big   map[frames.ChannelID]*chanInfo // the other ids
	nchan int                            // channels declared
	arena []chanInfo                     // where the chanInfos live, in chunks that never move

	sel   streamBounds // the selection's decisions (selector.go)
	clock streamTime   // its clock readings (timebase.go)
	read  streamCursor // how far it was taken in (cursors.go)
	notes streamNotes  // its health and transport records (notes.go)
	lines []*partial   // the partial lines of its channels, in the order they were opened (linejoin.go)
}

// chanInfo is what a printer knows of one declared channel, decided once
// when its (first) descriptor arrives, so that rendering a frame needs no
// map lookup or string building.
type chanInfo struct {
	// name and id are the descriptor's: the rest is not kept, as a
	// catalog may have 140 000 channels (64 bytes each, index included).
	name    string
	json    string   // `,"channel":NAME,"channel_id":ID,"content":KIND` (FormatJSON), made by jsonPart
	line    *partial // the held unfinished line, once there was one
	id      frames.ChannelID
	width   int32 // name in runes, for the channel column
	visible bool  // the filter decision
	kind    frames.ContentKind
	tty     int8 // terminal's decision, at the channel's first frame: 0 not yet, 1 no, 2 yes
}

// chanChunk is how many chanInfos a stream allocates at a time.
const chanChunk = 1024

// maxSmallChannel bounds the channel ids a stream always keeps in a slice
// indexed by id (registration hands out 1, 2, 3, …); larger ids live there
// too while the slice stays under 4 entries a declared channel, and in a
// map otherwise, so that a crafted id costs no more than a channel.
const maxSmallChannel = 256

func newStreamInfo(d frames.StreamDescriptor, format LogFormat) *streamInfo {
	st := &streamInfo{desc: d, name: d.Stream.String()}
	if format == FormatJSON {
		b := append([]byte(nil), `{"stream":`...)
		b = textfmt.AppendJSONString(b, st.name, true)
		b = append(b, `,"node":`...)
		b = textfmt.AppendJSONString(b, d.Stream.Node, true)
		b = append(b, `,"life":`...)
		st.jsonHead = strconv.AppendUint(b, uint64(d.Stream.Life), 10)
	}
	return st
}

// newChanInfo returns what a printer keeps of channel d, visible or not
// by the filters.
func (st *streamInfo) newChanInfo(d frames.ChannelDescriptor, visible bool) *chanInfo {
	if len(st.arena) == cap(st.arena) {
		st.arena = make([]chanInfo, 0, min(chanChunk, max(8, 2*st.nchan)))
	}
	st.arena = st.arena[:len(st.arena)+1]
	ci := &st.arena[len(st.arena)-1]
	*ci = chanInfo{name: d.Name, id: d.ID, width: int32(nameWidth(d.Name)), visible: visible, kind: d.Content.Kind}
	return ci
}

// jsonPart returns the channel's members of a --json object, made at the
// first frame that needs them: a catalog of 140 000 channels, of which a
// few write, then costs no string a channel (9 MB).
func (ci *chanInfo) jsonPart() string {
	if ci.json == "" {
		b := append([]byte(nil), `,"channel":`...)
		b = textfmt.AppendJSONString(b, ci.name, true)
		b = append(b, `,"channel_id":`...)
		b = strconv.AppendUint(b, uint64(ci.id), 10)
		b = append(b, `,"content":`...)
		ci.json = string(textfmt.AppendJSONString(b, ci.kind.String(), true))
	}
	return ci.json
}

// channel returns what is known of channel id, nil if it has no
// descriptor.
func (st *streamInfo) channel(id frames.ChannelID) *chanInfo {
	if uint64(id) < uint64(len(st.chans)) {
		if ci := st.chans[id]; ci != nil || st.big == nil {
			return ci
		}
	}
	if st.big == nil {
		return nil
	}
	// An id kept in big while the slice was shorter: the slice grew past
	// it since (states are made at a channel's first frame, in any order).
	return st.big[id]
}

func (st *streamInfo) setChannel(id frames.ChannelID, ci *chanInfo) {
	st.nchan++
	if id >= maxSmallChannel && uint64(id) >= 4*uint64(st.nchan) {
		if st.big == nil {
			st.big = make(map[frames.ChannelID]*chanInfo)
		}
		st.big[id] = ci
		return
	}
	if int(id) >= len(st.chans) {
		st.chans = append(st.chans, make([]*chanInfo, int(id)+1-len(st.chans))...)
	}
	st.chans[id] = ci
}

// streamTable holds the streams a printer knows, by id, with the last one
// looked up at hand: consecutive items of one stream skip the map.
type streamTable struct {
	m    map[frames.StreamID]*streamInfo
	last *streamInfo
}

// get returns stream s, nil if unknown.
func (t *streamTable) get(s frames.StreamID) *streamInfo {
	if st := t.last; st != nil && st.desc.Stream == s {
		return st
	}
	st := t.m[s]
	if st != nil {
		t.last = st
	}
	return st
}

// remove forgets stream s.
func (t *streamTable) remove(s frames.StreamID) {
	if st := t.m[s]; st != nil && t.last == st {
		t.last = nil
	}
	delete(t.m, s)
}

// terminal reports whether ci is a ds wrap --pty capture's output (see
// [CatChannel].Terminal), decided at its first frame (ds wrap registers
// its channels before the command starts) and kept.
func (st *streamInfo) terminal(ci *chanInfo) bool {
	if ci.tty == 0 {
		ci.tty = 1
		if label, ok := strings.CutSuffix(ci.name, ".stdout"); ok && ci.kind == frames.KindTextStream && strings.HasPrefix(label, "proc.") {
			ci.tty = 2
			stderr := label + ".stderr"
			if st.decl.hasName(stderr) {
				ci.tty = 1
			}
		}
	}
	return ci.tty == 2
}

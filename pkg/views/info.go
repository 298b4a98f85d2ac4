package views

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/textfmt"
)

// Bounds of the lists an [Info] keeps; the counts cover everything.
const (
	// maxListedGaps bounds how many gaps (and drop places) an [Info]
	// lists per stream.
	maxListedGaps = 100
	// maxListedDamage bounds how many damaged ranges it lists per input.
	maxListedDamage = 100
)

// ChannelSummary is one channel of a stream in [Info].
type ChannelSummary struct {
	ID      frames.ChannelID `json:"id"`
	Name    string           `json:"name"` // "" when no descriptor was found
	Content string           `json:"content"`
	Frames  uint64           `json:"frames"`
	Bytes   uint64           `json:"bytes"` // payload bytes
}

// ExitSummary is what a proc.<label>.lifecycle "exited" record said.
type ExitSummary struct {
	Channel  string `json:"channel"`
	Kind     string `json:"kind"` // "code", "signal" or "spawn_failed" (the command could not start)
	Value    int    `json:"value"`
	ExitCode int    `json:"exit_code"`
}

// StreamSummary is everything ds info reports about one stream.
type StreamSummary struct {
	Stream        string  `json:"stream"` // node#life
	Node          string  `json:"node"`
	Life          uint64  `json:"life"`
	Origin        string  `json:"origin"`
	Label         *string `json:"label"`
	Segments      int     `json:"segments"`
	FirstPosition *uint64 `json:"first_position"`
	LastPosition  *uint64 `json:"last_position"`
	// FirstSegment is the sequence number of the stream's first segment
	// header read (0, and omitted, for a writer's first segment).
	FirstSegment uint64 `json:"first_segment,omitempty"`
	// HeadMissing says that the input lacks the frames the writer wrote
	// before FirstPosition: the first segment read was not its first.
	HeadMissing bool `json:"head_missing,omitempty"`
	// TrimmedBefore is the stream's trim horizon, when a store trimmed it
	// (ds trim): its positions below were deleted, not lost.
	TrimmedBefore *uint64          `json:"trimmed_before,omitempty"`
	Frames        uint64           `json:"frames"`
	Bytes         uint64           `json:"bytes"` // payload bytes
	Channels      []ChannelSummary `json:"channels"`
	Gaps          []segments.Gap   `json:"gaps"` // the first 100
	GapCount      uint64           `json:"gap_count"`
	MissingFrames uint64           `json:"missing_frames"`
	Duplicates    uint64           `json:"duplicates"`
	// UncomparedDuplicates counts the duplicates whose earlier copy was
	// not kept to compare with (see [segments.Assembler]): a conflict among them
	// would go unseen. Omitted when 0.
	UncomparedDuplicates uint64  `json:"uncompared_duplicates,omitempty"`
	Conflicts            uint64  `json:"conflicts"`
	LateFrames           uint64  `json:"late_frames"`
	MuxDropped           *uint64 `json:"mux_dropped"` // the writer's counter, from its datastream.health records; null without one
	// SubscriberDropped is the writer's counter of frame copies its
	// subscribers (its outputs) lost, from its datastream.health records;
	// null without one. Not a loss of this input: what it lacks is in
	// Gaps.
	SubscriberDropped *uint64 `json:"subscriber_dropped"`
	HealthRecords     uint64  `json:"health_records"` // datastream.health records read
	Drops             []Drop  `json:"drops"`          // where submissions were refused; the first 100
	DropCount         uint64  `json:"drop_count"`     // places where submissions were refused
	DroppedFrames     uint64  `json:"dropped_frames"` // submissions refused there
	DroppedBytes      *uint64 `json:"dropped_bytes"`  // their payload bytes; null when a record did not say
	// TransportLosses counts the ranges of positions an output (ds wrap
	// -o nats://…) did not deliver, from datastream.transport records (see
	// [TransportLoss]); omitted when 0. Not a loss of this input: what it
	// lacks is in Gaps.
	TransportLosses   uint64        `json:"transport_losses,omitempty"`
	UndeliveredFrames uint64        `json:"undelivered_frames,omitempty"` // frames they name; omitted when 0
	Ended             bool          `json:"ended"`                        // a StreamEnded record was read
	Exits             []ExitSummary `json:"exits"`
	TimeStart         *string       `json:"time_start"` // RFC 3339, from datastream.clock
	TimeEnd           *string       `json:"time_end"`
	DurationNS        *int64        `json:"duration_ns"`
	// ClockSteps lists the first 100 steps of the stream's wall clock
	// (see [ClockStep]), ClockStepCount counts them; both are omitted
	// when there is none. Read from summaries, which keep the first and
	// last clock reading of each segment, a step is placed at the first
	// reading read after it, and After, FromUnixNS and ElapsedNS are of
	// the reading read before it (ds gaps reads every record).
	ClockSteps     []ClockStep `json:"clock_steps,omitempty"`
	ClockStepCount uint64      `json:"clock_step_count,omitempty"`
}

// DamageSummary is one damaged byte range of an input.
type DamageSummary struct {
	Offset   int64  `json:"offset"`
	End      int64  `json:"end"` // exclusive
	TornTail bool   `json:"torn_tail"`
	Error    string `json:"error"`
}

// FileSummary is what ds info reports about one input.
type FileSummary struct {
	Name     string          `json:"name"`
	Bytes    int64           `json:"bytes"`
	Segments int             `json:"segments"`
	Damage   []DamageSummary `json:"damage"` // the first 100 damaged ranges
	// DamageCount counts the damaged ranges, DamagedBytes their bytes;
	// both are omitted when 0.
	DamageCount  uint64 `json:"damage_count,omitempty"`
	DamagedBytes int64  `json:"damaged_bytes,omitempty"`
}

// Info collects what ds info prints. Feed it like a [Printer]; then call
// [Info.Summary]. It decodes only the writer's own records
// (datastream.health, datastream.clock, datastream.transport) and
// lifecycle exit records.
//
// Info keeps counts, never payloads: besides the [segments.Assembler]'s bounded
// window, it holds per stream its descriptor, one entry per channel (id,
// name, content, counts), the first 100 gaps, drop places and exit
// records (strings taken from payloads cut to 64 bytes); per input, the
// first 100 damaged ranges.
type Info struct {
	asm     *segments.Assembler
	streams map[frames.StreamID]*infoStream
	order   []*infoStream
	last    *infoStream // the stream of the previous call, to skip the map lookup
	files   []*FileSummary
	// clockRuns is how many more runs of clock readings the streams may
	// hold (see clockRuns): a bound on what hostile clocks cost.
	clockRuns int
}

// maxClockRuns bounds the runs of clock readings an [Info] holds over all
// streams (about 64 bytes each); past it, readings that need a new run
// are not taken, and steps beyond them are not seen.
const maxClockRuns = 1 << 16

// infoStream is what Info keeps of one stream: about 200 bytes, plus its
// channels and lists.
type infoStream struct {
	desc  frames.StreamDescriptor
	chans []infoChannel // in order of appearance
	// sparse is set once chans is not 1, 2, 3, … by id (as writers
	// number a stream's channels): until then a channel is found by its
	// id, without a map (120 000 channels of a 16 MiB header: 5 MB).
	sparse   bool
	segments int
	firstSeq uint64     // of the first segment header read
	drops    *infoDrops // nil until a health record
	lists    *infoLists // nil until a gap, an exit or many channels
	start    bool       // position 0 was read
	ended    bool
	t0, t1   int64
	clock    *clockRuns // nil until a reading with both clocks
}

// infoLists is what Info keeps of a stream beyond its counts, allocated
// when first needed, so that a stream without gaps or exit records costs
// less (a capture of 100,000 small streams).
type infoLists struct {
	index map[frames.ChannelID]int // chans by id, once there are many
	gaps  []segments.Gap
	exits []ExitSummary
	// lost counts transport losses, lostFrames the frames they name.
	lost, lostFrames uint64
}

// more returns the stream's lists, allocating them.
func (st *infoStream) more() *infoLists {
	if st.lists == nil {
		st.lists = &infoLists{}
	}
	return st.lists
}

type infoChannel struct {
	id            frames.ChannelID
	declared      bool // name and content are the first descriptor's
	name          string
	content       frames.ChannelContent
	frames, bytes uint64
}

// infoDrops is what Info derives from a stream's health records.
type infoDrops struct {
	tracker      dropTracker
	list         []Drop
	n            uint64 // places
	frames       uint64
	bytes        uint64 // where known
	bytesUnknown bool   // a drop did not give its bytes
}

// NewInfo returns an empty collector whose assembler holds at most
// memory bytes before it spills (0: DefaultMemory; see
// [segments.AssemblerOptions]). It is eager (AssemblerOptions.Eager): ds info
// reports on one capture quickly from its summaries, so it trusts it to
// be in order, and a stream whose head is missing starts at once; a frame
// that arrives below where its stream started is counted late, never
// dropped. Use [NewExactInfo] for several inputs.
func NewInfo(memory int) *Info {
	return newInfo(segments.AssemblerOptions{Memory: memory, Eager: true})
}

// NewExactInfo is [NewInfo] without trust in the inputs' order: a stream
// whose head is missing waits for it until the end of input, so that
// copies read in any order give the same counts (issue 10), at the cost
// of reading such a stream's frames instead of its summaries.
func NewExactInfo(memory int) *Info {
	return newInfo(segments.AssemblerOptions{Memory: memory})
}

func newInfo(opts segments.AssemblerOptions) *Info {
	in := &Info{streams: make(map[frames.StreamID]*infoStream), clockRuns: maxClockRuns}
	in.asm = segments.NewAssemblerWith(opts, in.item)
	return in
}

func (in *Info) stream(s frames.StreamID) *infoStream {
	if st := in.last; st != nil && st.desc.Stream == s {
		return st
	}
	st := in.streams[s]
	if st == nil {
		st = &infoStream{desc: frames.StreamDescriptor{Stream: s}}
		in.streams[s] = st
		in.order = append(in.order, st)
	}
	in.last = st
	return st
}

// channel returns the entry of channel id, adding it if absent. The
// pointer is valid until the next call.
func (st *infoStream) channel(id frames.ChannelID) *infoChannel {
	i, ok := st.find(id)
	if !ok {
		if int(id) != len(st.chans)+1 {
			st.sparse = true
		}
		st.chans = append(st.chans, infoChannel{id: id})
		switch {
		case !st.sparse:
		case st.lists != nil && st.lists.index != nil:
			st.lists.index[id] = i
		case len(st.chans) > maxScannedChannels:
			index := make(map[frames.ChannelID]int, len(st.chans))
			for j, c := range st.chans {
				index[c.id] = j
			}
			st.more().index = index
		}
	}
	return &st.chans[i]
}

// find returns the index of channel id, or len(st.chans).
func (st *infoStream) find(id frames.ChannelID) (int, bool) {
	if !st.sparse {
		if i := int(id) - 1; i >= 0 && i < len(st.chans) {
			return i, true
		}
		return len(st.chans), false
	}
	if st.lists != nil && st.lists.index != nil {
		i, ok := st.lists.index[id]
		if !ok {
			i = len(st.chans)
		}
		return i, ok
	}
	for i := range st.chans {
		if st.chans[i].id == id {
			return i, true
		}
	}
	return len(st.chans), false
}

// maxScannedChannels is how many channels a stream of an [Info] searches
// one by one; beyond, it indexes them in a map.
const maxScannedChannels = 16

// clip returns s cut to at most 64 bytes: strings Info takes from
// payloads are bounded.
func clip(s string) string { return clipTo(s, 64) }

// clipTo returns s cut to at most n bytes, followed by "…" when cut (what
// of the n bytes is not UTF-8, such as a rune cut in two, is dropped).
func clipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// File starts a new input.
func (in *Info) File(name string) { in.files = append(in.files, &FileSummary{Name: name}) }

func (in *Info) file() *FileSummary {
	if len(in.files) == 0 {
		in.File("-")
	}
	return in.files[len(in.files)-1]
}

// FileSize records the size in bytes of the current input.
func (in *Info) FileSize(n int64) { in.file().Bytes = n }

// Header records a segment header of the current input.
func (in *Info) Header(h segments.SegmentHeader) {
	in.file().Segments++
	st := in.stream(h.Stream.Stream)
	st.desc = h.Stream
	if st.segments == 0 {
		st.firstSeq = h.Seq
	}
	st.segments++
	if st.chans == nil {
		// As many as it will most likely hold: a catalog of 140 000
		// channels grown by appending held twice its size (ds-format(5)).
		st.chans = make([]infoChannel, 0, len(h.Channels))
	}
	if st.sparse && len(h.Channels) > maxScannedChannels && (st.lists == nil || st.lists.index == nil) {
		index := make(map[frames.ChannelID]int, len(h.Channels))
		for j, c := range st.chans {
			index[c.id] = j
		}
		st.more().index = index
	}
	for _, c := range h.Channels {
		in.Channel(c)
	}
	in.asm.Segment(h.Stream.Stream, h.Seq)
}

// Segment is Header for a writer's first segment (sequence number 0).
func (in *Info) Segment(d frames.StreamDescriptor, channels []frames.ChannelDescriptor) {
	in.Header(segments.SegmentHeader{Stream: d, Channels: channels})
}

// Channel records a channel descriptor; the first one for an id wins.
func (in *Info) Channel(d frames.ChannelDescriptor) {
	c := in.stream(d.Stream).channel(d.ID)
	if !c.declared {
		c.declared, c.name, c.content = true, d.Name, d.Content
	}
}

// AddSummary records a segment from its header and summary instead of its
// frames (ds info reads a capture from its end: segments.BackWalker),
// when the summary says all Info needs: every frame counted per channel,
// positions first to last each once and in order, every frame the writer
// was asked to keep kept, and the run follows what the stream has so far
// ([segments.Assembler.AddRun]). It reports false, having recorded nothing, when
// the summary does not suffice: the caller then reads the segment's
// records into the Info as usual (and the header with them).
func (in *Info) AddSummary(h segments.SegmentHeader, sum *segments.Summary) bool {
	if sum == nil || sum.Channels == nil || !sum.KeptAll || !keepsWhatInfoReads(h.Channels, sum.Channels) {
		return false
	}
	s := h.Stream.Stream
	if sum.Frames > 0 {
		if !sum.Ordered || sum.Frames-1 != uint64(*sum.Last-*sum.First) {
			return false
		}
		in.asm.Segment(s, h.Seq)
		if !in.asm.AddRun(s, *sum.First, *sum.Last, sum.Bytes) {
			return false
		}
	}
	in.Header(h)
	st := in.stream(s)
	if sum.Frames > 0 && *sum.First == 0 {
		st.start = true
	}
	for _, cc := range sum.Channels {
		c := st.channel(cc.ID)
		c.frames += cc.Frames
		c.bytes += cc.Bytes
	}
	for _, k := range sum.Kept {
		if i, ok := st.find(k.Channel); ok && st.chans[i].declared {
			in.decode(st, st.chans[i].name, frames.Frame{Channel: k.Channel, Position: k.Position, Payload: k.Payload})
		}
	}
	if sum.Ended {
		st.ended = true
	}
	return true
}

// keepsWhatInfoReads reports whether a summary keeps the frames Info
// decodes of the channels it counts: the first and last clock reading and
// health record, and every lifecycle and transport record.
func keepsWhatInfoReads(catalog []frames.ChannelDescriptor, counts []segments.ChannelCount) bool {
	// Each counted channel's name, found in one pass over the catalog
	// when it is long: a map of the counts (the channels with frames), not
	// of the catalog (120 000 entries of a 16 MiB header: 7 MB).
	var keep map[frames.ChannelID]segments.Keep
	if len(catalog) > maxScannedChannels && len(counts) > 0 {
		keep = make(map[frames.ChannelID]segments.Keep, len(counts))
		for _, c := range counts {
			keep[c.ID] = segments.Keep(c.Keep)
		}
		for i := range catalog {
			if k, ok := keep[catalog[i].ID]; ok && k < infoNeeds(catalog[i].Name) {
				return false
			}
		}
		return true
	}
	for _, c := range counts {
		for _, d := range catalog {
			if d.ID == c.ID {
				if segments.Keep(c.Keep) < infoNeeds(d.Name) {
					return false
				}
				break
			}
		}
	}
	return true
}

// infoNeeds returns what Info decodes of a channel's frames, by its name.
func infoNeeds(name string) segments.Keep {
	switch {
	case name == frames.ClockChannel, name == frames.HealthChannel:
		return segments.KeepEnds
	case name == frames.TransportChannel, strings.HasPrefix(name, "proc.") && strings.HasSuffix(name, ".lifecycle"):
		return segments.KeepFrame
	}
	return segments.KeepNone
}

// Frame ingests one frame.
func (in *Info) Frame(s frames.StreamID, f frames.Frame) {
	in.stream(s)
	in.asm.Add(s, f)
}

// Ended records a StreamEnded record.
func (in *Info) Ended(s frames.StreamID) { in.stream(s).ended = true }

// Trimmed records a Trimmed record: positions below before were trimmed by
// a store.
func (in *Info) Trimmed(s frames.StreamID, before frames.Position, store bool) {
	in.asm.Trimmed(s, before, store)
}

// Damage records a damaged range of the current input.
func (in *Info) Damage(offset, end int64, torn bool, err error) {
	f := in.file()
	f.DamageCount++
	f.DamagedBytes += end - offset
	if len(f.Damage) >= maxListedDamage {
		return
	}
	d := DamageSummary{Offset: offset, End: end, TornTail: torn}
	if err != nil {
		d.Error = err.Error()
	}
	f.Damage = append(f.Damage, d)
}

func (in *Info) item(it segments.Item) {
	st := in.stream(it.Stream)
	switch it.Kind {
	case segments.ItemGap:
		if l := st.more(); len(l.gaps) < maxListedGaps {
			l.gaps = append(l.gaps, it.Gap)
		}
		return
	case segments.ItemLate:
		if i, ok := st.find(it.Frame.Channel); ok && st.chans[i].declared {
			switch st.chans[i].name {
			case frames.HealthChannel:
				in.health(st, it.Frame, true)
			case frames.TransportChannel:
				st.transport(it.Frame.Payload)
			}
		}
		return
	case segments.ItemFrame:
	default:
		return
	}
	f := it.Frame
	if f.Position == 0 {
		st.start = true
	}
	c := st.channel(f.Channel)
	c.frames++
	c.bytes += uint64(len(f.Payload))
	if c.declared {
		in.decode(st, c.name, f)
	}
}

// decode reads what Info reports of a frame of a declared channel: clock
// readings, health records, transport records, exit records.
func (in *Info) decode(st *infoStream, name string, f frames.Frame) {
	switch {
	case name == frames.ClockChannel:
		r, both := decodeClockReading(f.Position, f.Payload)
		if ns := r.unix; ns > 0 {
			if st.t0 == 0 || ns < st.t0 {
				st.t0 = ns
			}
			st.t1 = max(st.t1, ns)
		}
		if both {
			if st.clock == nil {
				st.clock = &clockRuns{}
			}
			st.clock.add(r, &in.clockRuns)
		}
	case name == frames.HealthChannel:
		in.health(st, f, false)
	case name == frames.TransportChannel:
		st.transport(f.Payload)
	case strings.HasPrefix(name, "proc.") && strings.HasSuffix(name, ".lifecycle"):
		type exited struct {
			Event  string `json:"event"`
			Status struct {
				Kind  string `json:"kind"`
				Value int    `json:"value"`
			} `json:"status"`
			ExitCode *int `json:"exit_code"`
		}
		if st.lists != nil && len(st.lists.exits) >= maxListedGaps {
			return
		}
		r, err := frames.DecodeRecord(f.Payload, exited{})
		r.Status.Kind = clip(r.Status.Kind)
		if err == nil && r.Event == "spawn_failed" {
			e := ExitSummary{Channel: name, Kind: "spawn_failed", ExitCode: 127}
			if r.ExitCode != nil {
				e.ExitCode = *r.ExitCode
			}
			e.Value = e.ExitCode
			st.more().exits = append(st.more().exits, e)
		}
		if err == nil && r.Event == "exited" {
			e := ExitSummary{Channel: name, Kind: r.Status.Kind, Value: r.Status.Value, ExitCode: r.Status.Value}
			if r.Status.Kind == "signal" {
				e.ExitCode = 128 + r.Status.Value
			}
			if r.ExitCode != nil {
				e.ExitCode = *r.ExitCode
			}
			st.more().exits = append(st.more().exits, e)
		}
	}
}

// transport counts a datastream.transport record that names a loss.
func (st *infoStream) transport(payload []byte) {
	if t, ok := decodeTransport(payload); ok {
		l := st.more()
		l.lost++
		l.lostFrames += t.Frames
	}
}

// health reads a datastream.health record.
func (in *Info) health(st *infoStream, f frames.Frame, late bool) {
	if st.drops == nil {
		st.drops = &infoDrops{}
	}
	ds := st.drops
	d, ok := ds.tracker.health(f.Position, f.Payload, st.start, late)
	if !ok {
		return
	}
	ds.n++
	ds.frames += d.Frames
	if d.Bytes != nil {
		ds.bytes += *d.Bytes
	} else {
		ds.bytesUnknown = true
	}
	if len(ds.list) < maxListedGaps {
		d.Reason = clip(d.Reason)
		ds.list = append(ds.list, d)
	}
}

// sortedChans returns the channels by id.
//
// It sorts st.chans in place, not a copy (a catalog may have 140 000
// channels), and reindexes them when they moved.
func (st *infoStream) sortedChans() []infoChannel {
	less := func(a, b infoChannel) int { return cmp.Compare(a.id, b.id) }
	if !slices.IsSortedFunc(st.chans, less) {
		slices.SortFunc(st.chans, less)
		if st.lists != nil && st.lists.index != nil {
			for i, c := range st.chans {
				st.lists.index[c.id] = i
			}
		}
	}
	return st.chans
}

// Summary flushes the assembler and returns the summaries: files in the
// order given, streams sorted by node then life.
func (in *Info) Summary() ([]FileSummary, []StreamSummary) {
	files, order := in.prepare()
	var out []StreamSummary
	for _, st := range order {
		out = append(out, in.summarize(st))
	}
	return files, out
}

// WriteText writes the report for people, as [WriteInfoText] does with
// [Info.Summary]'s result, building one stream's summary at a time: a
// capture of very many streams costs memory for their counts only.
func (in *Info) WriteText(w io.Writer) error {
	files, order := in.prepare()
	return writeInfoText(w, files, len(order), func(i int) StreamSummary { return in.summarize(order[i]) })
}

// WriteJSON writes the report as one JSON document, as [WriteInfoJSON]
// does with [Info.Summary]'s result, one stream's summary at a time.
func (in *Info) WriteJSON(w io.Writer) error {
	files, order := in.prepare()
	return writeInfoJSON(w, files, len(order), func(i int) StreamSummary { return in.summarize(order[i]) })
}

// prepare flushes the assembler and returns the files and the streams in
// report order (node, then life).
func (in *Info) prepare() ([]FileSummary, []*infoStream) {
	in.asm.Flush()
	var files []FileSummary
	for _, f := range in.files {
		files = append(files, *f)
	}
	order := append([]*infoStream(nil), in.order...)
	sort.Slice(order, func(i, j int) bool { return order[i].desc.Stream.Compare(order[j].desc.Stream) < 0 })
	return files, order
}

// summarize returns the summary of one stream.
func (in *Info) summarize(st *infoStream) StreamSummary {
	s := st.desc.Stream
	stats := in.asm.Stats(s)
	sum := StreamSummary{
		Stream: s.String(), Node: string(s.Node), Life: uint64(s.Life),
		Origin: st.desc.Origin.String(), Label: st.desc.Label, Segments: st.segments,
		FirstSegment: st.firstSeq, HeadMissing: stats.HeadMissing,
		Frames: stats.Frames, Bytes: stats.Bytes, GapCount: stats.Gaps,
		MissingFrames: stats.Missing, Duplicates: stats.Duplicates, UncomparedDuplicates: stats.Uncompared,
		Conflicts: stats.Conflicts, LateFrames: stats.Late, Ended: st.ended,
	}
	if st.lists != nil {
		sum.Gaps, sum.Exits = st.lists.gaps, st.lists.exits
		sum.TransportLosses, sum.UndeliveredFrames = st.lists.lost, st.lists.lostFrames
	}
	if stats.Frames > 0 {
		first, last := uint64(stats.First), uint64(stats.Last)
		sum.FirstPosition, sum.LastPosition = &first, &last
	}
	if h := trimmedHead(stats); h > 0 {
		b := uint64(h)
		sum.TrimmedBefore = &b
	}
	if len(st.chans) > 0 {
		sum.Channels = make([]ChannelSummary, 0, len(st.chans))
	}
	for _, c := range st.sortedChans() {
		cs := ChannelSummary{ID: c.id, Content: "unknown", Frames: c.frames, Bytes: c.bytes}
		if c.declared {
			cs.Name, cs.Content = c.name, c.content.String()
		}
		sum.Channels = append(sum.Channels, cs)
	}
	ds := st.drops
	if ds == nil {
		ds = &infoDrops{}
	}
	sum.HealthRecords = ds.tracker.records
	if ds.tracker.decoded {
		md, sd := ds.tracker.maxMux, ds.tracker.maxSubsc
		sum.MuxDropped, sum.SubscriberDropped = &md, &sd
	}
	sum.Drops, sum.DropCount, sum.DroppedFrames = ds.list, ds.n, ds.frames
	if !ds.bytesUnknown {
		b := ds.bytes
		sum.DroppedBytes = &b
	}
	if st.t0 != 0 {
		a := time.Unix(0, st.t0).UTC().Format(time.RFC3339Nano)
		b := time.Unix(0, st.t1).UTC().Format(time.RFC3339Nano)
		d := st.t1 - st.t0
		sum.TimeStart, sum.TimeEnd, sum.DurationNS = &a, &b, &d
	}
	if st.clock != nil {
		st.clock.steps(func(c ClockStep) {
			sum.ClockStepCount++
			if len(sum.ClockSteps) < maxListedGaps {
				sum.ClockSteps = append(sum.ClockSteps, c)
			}
		})
	}
	return sum
}

// writeDrops writes the dropped line of stream s and its drop places.
func writeDrops(w io.Writer, s StreamSummary) {
	switch {
	case s.HealthRecords == 0:
		fmt.Fprintf(w, "  dropped\tunknown (no health record)\n")
		return
	case s.MuxDropped == nil:
		fmt.Fprintf(w, "  dropped\tnot known: %s unreadable\n", textfmt.Nouns(s.HealthRecords, "health record"))
		return
	}
	fmt.Fprintf(w, "  dropped\t%d at the mux", s.DroppedFrames)
	if s.DroppedFrames > 0 {
		if s.DroppedBytes != nil {
			fmt.Fprintf(w, " (%d payload bytes)", *s.DroppedBytes)
		} else {
			fmt.Fprintf(w, " (payload bytes unknown)")
		}
	}
	if s.DropCount > 0 {
		fmt.Fprintf(w, " in %s", textfmt.Nouns(s.DropCount, "place"))
	}
	if *s.MuxDropped > s.DroppedFrames {
		// Health records lost in a gap, or counted before the capture
		// starts: the writer's counter knows more than the places shown.
		fmt.Fprintf(w, " (the writer counted %d)", *s.MuxDropped)
	}
	fmt.Fprintf(w, ", %d by subscribers", *s.SubscriberDropped)
	if *s.SubscriberDropped > 0 {
		// Copies an output lost: this input lacks only what its gaps
		// show (ds gaps notes them, and does not count them as losses).
		fmt.Fprintf(w, " (frame copies: gaps show what this input lacks)")
	}
	fmt.Fprintf(w, "\n")
	for _, d := range s.Drops {
		fmt.Fprintf(w, "  \tbefore position %d: %s", d.Before, textfmt.Nouns(d.Frames, "frame"))
		if d.Bytes != nil {
			fmt.Fprintf(w, " (%d bytes)", *d.Bytes)
		}
		fmt.Fprintf(w, ", %s\n", d.Reason)
	}
	if s.DropCount > uint64(len(s.Drops)) {
		fmt.Fprintf(w, "  \t… %d more\n", s.DropCount-uint64(len(s.Drops)))
	}
}

// InfoReport is the JSON document ds info --json prints.
type InfoReport struct {
	Files   []FileSummary   `json:"files"`
	Streams []StreamSummary `json:"streams"`
}

// WriteInfoJSON writes the report as one indented JSON document.
func WriteInfoJSON(w io.Writer, files []FileSummary, streams []StreamSummary) error {
	return writeInfoJSON(w, files, len(streams), func(i int) StreamSummary { return streams[i] })
}

// writeInfoJSON writes what json.Encoder with a two-space indent writes of
// an [InfoReport], encoding one stream at a time.
func writeInfoJSON(w io.Writer, files []FileSummary, n int, stream func(int) StreamSummary) error {
	if files == nil {
		files = []FileSummary{}
	}
	bw := bufio.NewWriter(w)
	fj, err := json.MarshalIndent(files, "  ", "  ")
	if err != nil {
		return err
	}
	bw.WriteString("{\n  \"files\": ")
	bw.Write(fj)
	bw.WriteString(",\n  \"streams\": [")
	for i := range n {
		sj, err := json.MarshalIndent(stream(i), "    ", "  ")
		if err != nil {
			return err
		}
		if i > 0 {
			bw.WriteString(",")
		}
		bw.WriteString("\n    ")
		bw.Write(sj)
	}
	if n > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteString("]\n}\n")
	return bw.Flush()
}

// WriteInfoText writes the report for people.
func WriteInfoText(w io.Writer, files []FileSummary, streams []StreamSummary) error {
	return writeInfoText(w, files, len(streams), func(i int) StreamSummary { return streams[i] })
}

// writeInfoText writes the report for people, building and writing one
// stream at a time (columns are aligned within each stream's block).
func writeInfoText(w io.Writer, files []FileSummary, n int, stream func(int) StreamSummary) error {
	tabs := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	// What a capture names is escaped before the columns are measured.
	tw := newSafeWriter(tabs)
	for _, f := range files {
		fmt.Fprintf(tw, "file %s: %d bytes, %d segments", f.Name, f.Bytes, f.Segments)
		n := max(f.DamageCount, uint64(len(f.Damage)))
		if n == 0 {
			fmt.Fprintf(tw, ", no damage\n")
		} else {
			fmt.Fprintf(tw, ", %d damaged ranges\n", n)
		}
		for _, d := range f.Damage {
			if d.TornTail {
				fmt.Fprintf(tw, "  torn tail at byte %d: %s\n", d.Offset, d.Error)
			} else {
				fmt.Fprintf(tw, "  damaged bytes %d–%d (%d bytes): %s\n", d.Offset, d.End-1, d.End-d.Offset, d.Error)
			}
		}
		if n > uint64(len(f.Damage)) {
			fmt.Fprintf(tw, "  … %d more (%d damaged bytes in all)\n", n-uint64(len(f.Damage)), f.DamagedBytes)
		}
	}
	for i := range n {
		if err := tabs.Flush(); err != nil {
			return err
		}
		s := stream(i)
		fmt.Fprintf(tw, "\nstream %s\n", s.Stream)
		fmt.Fprintf(tw, "  node\t%s\n  life\t%d\n  origin\t%s\n", s.Node, s.Life, s.Origin)
		if s.Label != nil {
			fmt.Fprintf(tw, "  label\t%s\n", *s.Label)
		}
		switch {
		case s.FirstPosition != nil && s.HeadMissing:
			fmt.Fprintf(tw, "  positions\t%d–%d (the input starts at the writer's segment %d: earlier frames are not in it)\n", *s.FirstPosition, *s.LastPosition, s.FirstSegment)
		case s.FirstPosition != nil:
			fmt.Fprintf(tw, "  positions\t%d–%d\n", *s.FirstPosition, *s.LastPosition)
		default:
			fmt.Fprintf(tw, "  positions\tnone\n")
		}
		if s.TrimmedBefore != nil {
			fmt.Fprintf(tw, "  trimmed\t%s\n", appendStoreTrimmedMsg(nil, 0, frames.Position(*s.TrimmedBefore-1)))
		}
		fmt.Fprintf(tw, "  frames\t%d (%d payload bytes) in %d segments\n", s.Frames, s.Bytes, s.Segments)
		if s.TimeStart != nil {
			fmt.Fprintf(tw, "  time\t%s – %s (%s)\n", *s.TimeStart, *s.TimeEnd, time.Duration(*s.DurationNS).Round(time.Millisecond))
		}
		if n := max(s.ClockStepCount, uint64(len(s.ClockSteps))); n > 0 {
			fmt.Fprintf(tw, "  clock steps\t%d (the wall clock jumped: times after a step are off by it)\n", n)
			for _, c := range s.ClockSteps {
				fmt.Fprintf(tw, "  \t%s\n", c)
			}
			if n > uint64(len(s.ClockSteps)) {
				fmt.Fprintf(tw, "  \t… %d more\n", n-uint64(len(s.ClockSteps)))
			}
		}
		fmt.Fprintf(tw, "  gaps\t%d (%d frames missing)\n", s.GapCount, s.MissingFrames)
		for _, g := range s.Gaps {
			fmt.Fprintf(tw, "  \tpositions %d–%d (%d frames)\n", g.From, g.To, g.Count)
		}
		if s.GapCount > uint64(len(s.Gaps)) {
			fmt.Fprintf(tw, "  \t… %d more\n", s.GapCount-uint64(len(s.Gaps)))
		}
		switch {
		case s.UncomparedDuplicates > 0:
			// Copies whose first was no longer known are no identical
			// ones: a conflict among them would not have been seen.
			fmt.Fprintf(tw, "  duplicates\t%d identical, %d conflicting, %d late; %s not compared (their first copies were read too long before)\n", s.Duplicates-s.UncomparedDuplicates, s.Conflicts, s.LateFrames, textfmt.Nouns(s.UncomparedDuplicates, "copy"))
		case s.Duplicates+s.Conflicts+s.LateFrames > 0:
			fmt.Fprintf(tw, "  duplicates\t%d identical, %d conflicting, %d late\n", s.Duplicates, s.Conflicts, s.LateFrames)
		}
		writeDrops(tw, s)
		if s.TransportLosses > 0 {
			fmt.Fprintf(tw, "  transport\t%s not delivered by an output in %s (gaps show what this input lacks; ds gaps notes them)\n", textfmt.Nouns(s.UndeliveredFrames, "frame"), textfmt.Nouns(s.TransportLosses, "range"))
		}
		end := "no (no StreamEnded record: the writer did not finish)"
		if s.Ended {
			end = "yes"
		}
		fmt.Fprintf(tw, "  ended cleanly\t%s\n", end)
		for _, e := range s.Exits {
			label := strings.TrimSuffix(e.Channel, ".lifecycle")
			if e.Kind == "spawn_failed" {
				fmt.Fprintf(tw, "  exit\t%s: could not start (status %d)\n", label, e.ExitCode)
				continue
			}
			fmt.Fprintf(tw, "  exit\t%s: %s %d (status %d)\n", label, e.Kind, e.Value, e.ExitCode)
		}
		fmt.Fprintf(tw, "  channels\n")
		if err := tabs.Flush(); err != nil {
			return err
		}
		if err := writeChannelTable(w, s.Channels); err != nil {
			return err
		}
	}
	return tabs.Flush()
}

// writeChannelTable writes the channel table of a stream's block in ds
// info's text: a header and a row per channel, columns aligned as the
// rest of the report's (text/tabwriter with padding 2), what the capture
// names escaped. It measures the columns in a first pass and writes the
// rows in a second, so that a catalog of 140 000 channels (a 16 MiB
// header) is not held whole in a tabwriter's cells.
func writeChannelTable(w io.Writer, chans []ChannelSummary) error {
	var scratch []byte
	cells := func(c *ChannelSummary, f func(i int, cell []byte)) {
		if c == nil {
			for i, h := range [...]string{"    id", "name", "content", "frames", "bytes"} {
				f(i, []byte(h))
			}
			return
		}
		scratch = strconv.AppendUint(append(scratch[:0], "    "...), uint64(c.ID), 10)
		f(0, scratch)
		name := c.Name
		if name == "" {
			name = "(no descriptor)"
		}
		scratch, _, _ = appendTerminal(scratch[:0], []byte(name), 0)
		f(1, scratch)
		scratch, _, _ = appendTerminal(scratch[:0], []byte(c.Content), 0)
		f(2, scratch)
		f(3, strconv.AppendUint(scratch[:0], c.Frames, 10))
		f(4, strconv.AppendUint(scratch[:0], c.Bytes, 10))
	}
	var width [4]int
	measure := func(i int, cell []byte) {
		if i < len(width) {
			width[i] = max(width[i], utf8.RuneCount(cell))
		}
	}
	cells(nil, measure)
	for i := range chans {
		cells(&chans[i], measure)
	}
	bw := bufio.NewWriter(w)
	write := func(i int, cell []byte) {
		bw.Write(cell)
		if i < len(width) {
			for n := utf8.RuneCount(cell); n < width[i]+2; n++ {
				bw.WriteByte(' ')
			}
		} else {
			bw.WriteByte('\n')
		}
	}
	cells(nil, write)
	for i := range chans {
		cells(&chans[i], write)
	}
	return bw.Flush()
}

// trimmedHead returns the end of the positions a stream is trimmed of at
// its head: a store's horizon, or up to a capture's Trimmed record, the
// positions before its first frame.
func trimmedHead(stats segments.StreamStats) frames.Position {
	h := stats.Before
	if c := stats.CaptureBefore; c > h {
		if stats.Frames > 0 {
			c = min(c, stats.First)
		}
		h = max(h, c)
	}
	return h
}

package views

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// maxListedGaps bounds how many gaps an [Info] lists per stream; the
// counts cover all of them.
const maxListedGaps = 100

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
	Stream            string           `json:"stream"` // node#life
	Node              string           `json:"node"`
	Life              uint64           `json:"life"`
	Origin            string           `json:"origin"`
	Label             *string          `json:"label"`
	Segments          int              `json:"segments"`
	FirstPosition     *uint64          `json:"first_position"`
	LastPosition      *uint64          `json:"last_position"`
	Frames            uint64           `json:"frames"`
	Bytes             uint64           `json:"bytes"` // payload bytes
	Channels          []ChannelSummary `json:"channels"`
	Gaps              []Gap            `json:"gaps"` // the first 100
	GapCount          uint64           `json:"gap_count"`
	MissingFrames     uint64           `json:"missing_frames"`
	Duplicates        uint64           `json:"duplicates"`
	Conflicts         uint64           `json:"conflicts"`
	LateFrames        uint64           `json:"late_frames"`
	MuxDropped        *uint64          `json:"mux_dropped"`        // the writer's counter, from its datastream.health records; null without one
	SubscriberDropped *uint64          `json:"subscriber_dropped"` // idem
	HealthRecords     uint64           `json:"health_records"`     // datastream.health records read
	Drops             []Drop           `json:"drops"`              // where submissions were refused; the first 100
	DropCount         uint64           `json:"drop_count"`         // places where submissions were refused
	DroppedFrames     uint64           `json:"dropped_frames"`     // submissions refused there
	DroppedBytes      *uint64          `json:"dropped_bytes"`      // their payload bytes; null when a record did not say
	Ended             bool             `json:"ended"`              // a StreamEnded record was read
	Exits             []ExitSummary    `json:"exits"`
	TimeStart         *string          `json:"time_start"` // RFC 3339, from datastream.clock
	TimeEnd           *string          `json:"time_end"`
	DurationNS        *int64           `json:"duration_ns"`
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
	Damage   []DamageSummary `json:"damage"`
}

// Info collects what ds info prints. Feed it like a [Printer]; then call
// [Info.Summary]. It decodes only the writer's own records
// (datastream.health, datastream.clock) and lifecycle exit records.
type Info struct {
	asm     *Assembler
	streams map[frames.StreamID]*infoStream
	order   []frames.StreamID
	files   []*FileSummary
}

type infoStream struct {
	desc     frames.StreamDescriptor
	channels map[frames.ChannelID]frames.ChannelDescriptor
	counts   map[frames.ChannelID]*ChannelSummary
	segments int
	gaps     []Gap
	drops    dropTracker
	dropList []Drop
	dropN    uint64
	dropped  uint64 // frames
	dropB    uint64 // bytes, where known
	dropBOK  bool   // every drop gave its bytes
	start    bool   // position 0 was read
	ended    bool
	exits    []ExitSummary
	t0, t1   int64
}

// NewInfo returns an empty collector with the given reorder window (0:
// DefaultWindow).
func NewInfo(window int) *Info {
	in := &Info{streams: make(map[frames.StreamID]*infoStream)}
	in.asm = NewAssembler(window, in.item)
	return in
}

func (in *Info) stream(s frames.StreamID) *infoStream {
	st := in.streams[s]
	if st == nil {
		st = &infoStream{dropBOK: true, desc: frames.StreamDescriptor{Stream: s}, channels: make(map[frames.ChannelID]frames.ChannelDescriptor), counts: make(map[frames.ChannelID]*ChannelSummary)}
		in.streams[s] = st
		in.order = append(in.order, s)
	}
	return st
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

// Segment records a segment header of the current input.
func (in *Info) Segment(d frames.StreamDescriptor, channels []frames.ChannelDescriptor) {
	in.file().Segments++
	st := in.stream(d.Stream)
	st.desc = d
	st.segments++
	for _, c := range channels {
		in.Channel(c)
	}
}

// Channel records a channel descriptor; the first one for an id wins.
func (in *Info) Channel(d frames.ChannelDescriptor) {
	st := in.stream(d.Stream)
	if _, ok := st.channels[d.ID]; !ok {
		st.channels[d.ID] = d
	}
}

// Frame ingests one frame.
func (in *Info) Frame(s frames.StreamID, f frames.Frame) {
	in.stream(s)
	in.asm.Add(s, f)
}

// Ended records a StreamEnded record.
func (in *Info) Ended(s frames.StreamID) { in.stream(s).ended = true }

// Damage records a damaged range of the current input.
func (in *Info) Damage(offset, end int64, torn bool, err error) {
	d := DamageSummary{Offset: offset, End: end, TornTail: torn}
	if err != nil {
		d.Error = err.Error()
	}
	f := in.file()
	f.Damage = append(f.Damage, d)
}

func (in *Info) item(it Item) {
	st := in.stream(it.Stream)
	if it.Kind == ItemGap {
		if len(st.gaps) < maxListedGaps {
			st.gaps = append(st.gaps, it.Gap)
		}
		return
	}
	f := it.Frame
	if it.Kind == ItemLate {
		if d, ok := st.channels[f.Channel]; ok && d.Name == frames.HealthChannel {
			in.health(st, f, true)
		}
	}
	if it.Kind != ItemFrame {
		return
	}
	if f.Position == 0 {
		st.start = true
	}
	c := st.counts[f.Channel]
	if c == nil {
		c = &ChannelSummary{ID: f.Channel}
		st.counts[f.Channel] = c
	}
	c.Frames++
	c.Bytes += uint64(len(f.Payload))
	d, ok := st.channels[f.Channel]
	if !ok {
		return
	}
	switch {
	case d.Name == frames.ClockChannel:
		if r, err := frames.DecodeRecord(f.Payload, frames.ClockRecord{}); err == nil && r.UnixNS > 0 {
			if st.t0 == 0 || r.UnixNS < st.t0 {
				st.t0 = r.UnixNS
			}
			st.t1 = max(st.t1, r.UnixNS)
		}
	case d.Name == frames.HealthChannel:
		in.health(st, f, false)
	case strings.HasPrefix(d.Name, "proc.") && strings.HasSuffix(d.Name, ".lifecycle"):
		type exited struct {
			Event  string `json:"event"`
			Status struct {
				Kind  string `json:"kind"`
				Value int    `json:"value"`
			} `json:"status"`
			ExitCode *int `json:"exit_code"`
		}
		r, err := frames.DecodeRecord(f.Payload, exited{})
		if err == nil && r.Event == "spawn_failed" {
			e := ExitSummary{Channel: d.Name, Kind: "spawn_failed", ExitCode: 127}
			if r.ExitCode != nil {
				e.ExitCode = *r.ExitCode
			}
			e.Value = e.ExitCode
			st.exits = append(st.exits, e)
		}
		if err == nil && r.Event == "exited" {
			e := ExitSummary{Channel: d.Name, Kind: r.Status.Kind, Value: r.Status.Value, ExitCode: r.Status.Value}
			if r.Status.Kind == "signal" {
				e.ExitCode = 128 + r.Status.Value
			}
			if r.ExitCode != nil {
				e.ExitCode = *r.ExitCode
			}
			st.exits = append(st.exits, e)
		}
	}
}

// health reads a datastream.health record.
func (in *Info) health(st *infoStream, f frames.Frame, late bool) {
	d, ok := st.drops.health(f.Position, f.Payload, st.start, late)
	if !ok {
		return
	}
	st.dropN++
	st.dropped += d.Frames
	if d.Bytes != nil {
		st.dropB += *d.Bytes
	} else {
		st.dropBOK = false
	}
	if len(st.dropList) < maxListedGaps {
		st.dropList = append(st.dropList, d)
	}
}

// Summary flushes the assembler and returns the summaries: files in the
// order given, streams sorted by node then life.
func (in *Info) Summary() ([]FileSummary, []StreamSummary) {
	in.asm.Flush()
	var files []FileSummary
	for _, f := range in.files {
		files = append(files, *f)
	}
	order := append([]frames.StreamID(nil), in.order...)
	sort.Slice(order, func(i, j int) bool { return order[i].Compare(order[j]) < 0 })
	var out []StreamSummary
	for _, s := range order {
		st := in.streams[s]
		stats := in.asm.Stats(s)
		sum := StreamSummary{
			Stream: s.String(), Node: string(s.Node), Life: uint64(s.Life),
			Origin: st.desc.Origin.String(), Label: st.desc.Label, Segments: st.segments,
			Frames: stats.Frames, Bytes: stats.Bytes, Gaps: st.gaps, GapCount: stats.Gaps,
			MissingFrames: stats.Missing, Duplicates: stats.Duplicates, Conflicts: stats.Conflicts,
			LateFrames: stats.Late, Ended: st.ended, Exits: st.exits,
		}
		if stats.Frames > 0 {
			first, last := uint64(stats.First), uint64(stats.Last)
			sum.FirstPosition, sum.LastPosition = &first, &last
		}
		ids := make(map[frames.ChannelID]bool)
		for id := range st.channels {
			ids[id] = true
		}
		for id := range st.counts {
			ids[id] = true
		}
		for id := range ids {
			c := ChannelSummary{ID: id, Content: "unknown"}
			if n := st.counts[id]; n != nil {
				c = *n
				c.Content = "unknown"
			}
			if d, ok := st.channels[id]; ok {
				c.Name, c.Content = d.Name, d.Content.String()
			}
			sum.Channels = append(sum.Channels, c)
		}
		sort.Slice(sum.Channels, func(i, j int) bool { return sum.Channels[i].ID < sum.Channels[j].ID })
		sum.HealthRecords = st.drops.records
		if st.drops.decoded {
			md, sd := st.drops.maxMux, st.drops.maxSubsc
			sum.MuxDropped, sum.SubscriberDropped = &md, &sd
		}
		sum.Drops, sum.DropCount, sum.DroppedFrames = st.dropList, st.dropN, st.dropped
		if st.dropBOK {
			b := st.dropB
			sum.DroppedBytes = &b
		}
		if st.t0 != 0 {
			a := time.Unix(0, st.t0).UTC().Format(time.RFC3339Nano)
			b := time.Unix(0, st.t1).UTC().Format(time.RFC3339Nano)
			d := st.t1 - st.t0
			sum.TimeStart, sum.TimeEnd, sum.DurationNS = &a, &b, &d
		}
		out = append(out, sum)
	}
	return files, out
}

// writeDrops writes the dropped line of stream s and its drop places.
func writeDrops(w io.Writer, s StreamSummary) {
	switch {
	case s.HealthRecords == 0:
		fmt.Fprintf(w, "  dropped\tunknown (no health record)\n")
		return
	case s.MuxDropped == nil:
		fmt.Fprintf(w, "  dropped\tnot known: %s unreadable\n", plural(s.HealthRecords, "health record"))
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
		fmt.Fprintf(w, " in %s", plural(s.DropCount, "place"))
	}
	if *s.MuxDropped > s.DroppedFrames {
		// Health records lost in a gap, or counted before the capture
		// starts: the writer's counter knows more than the places shown.
		fmt.Fprintf(w, " (the writer counted %d)", *s.MuxDropped)
	}
	fmt.Fprintf(w, ", %d by subscribers\n", *s.SubscriberDropped)
	for _, d := range s.Drops {
		fmt.Fprintf(w, "  \tbefore position %d: %s", d.Before, plural(d.Frames, "frame"))
		if d.Bytes != nil {
			fmt.Fprintf(w, " (%d bytes)", *d.Bytes)
		}
		fmt.Fprintf(w, ", %s\n", d.Reason)
	}
	if s.DropCount > uint64(len(s.Drops)) {
		fmt.Fprintf(w, "  \t… %d more\n", s.DropCount-uint64(len(s.Drops)))
	}
}

func plural(n uint64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// InfoReport is the JSON document ds info --json prints.
type InfoReport struct {
	Files   []FileSummary   `json:"files"`
	Streams []StreamSummary `json:"streams"`
}

// WriteInfoJSON writes the report as one indented JSON document.
func WriteInfoJSON(w io.Writer, files []FileSummary, streams []StreamSummary) error {
	if files == nil {
		files = []FileSummary{}
	}
	if streams == nil {
		streams = []StreamSummary{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(InfoReport{Files: files, Streams: streams})
}

// WriteInfoText writes the report for people.
func WriteInfoText(w io.Writer, files []FileSummary, streams []StreamSummary) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	for _, f := range files {
		fmt.Fprintf(tw, "file %s: %d bytes, %d segments", f.Name, f.Bytes, f.Segments)
		if len(f.Damage) == 0 {
			fmt.Fprintf(tw, ", no damage\n")
		} else {
			fmt.Fprintf(tw, ", %d damaged ranges\n", len(f.Damage))
		}
		for _, d := range f.Damage {
			if d.TornTail {
				fmt.Fprintf(tw, "  torn tail at byte %d: %s\n", d.Offset, d.Error)
			} else {
				fmt.Fprintf(tw, "  damaged bytes %d–%d (%d bytes): %s\n", d.Offset, d.End-1, d.End-d.Offset, d.Error)
			}
		}
	}
	for _, s := range streams {
		fmt.Fprintf(tw, "\nstream %s\n", s.Stream)
		fmt.Fprintf(tw, "  node\t%s\n  life\t%d\n  origin\t%s\n", s.Node, s.Life, s.Origin)
		if s.Label != nil {
			fmt.Fprintf(tw, "  label\t%s\n", *s.Label)
		}
		if s.FirstPosition != nil {
			fmt.Fprintf(tw, "  positions\t%d–%d\n", *s.FirstPosition, *s.LastPosition)
		} else {
			fmt.Fprintf(tw, "  positions\tnone\n")
		}
		fmt.Fprintf(tw, "  frames\t%d (%d payload bytes) in %d segments\n", s.Frames, s.Bytes, s.Segments)
		if s.TimeStart != nil {
			fmt.Fprintf(tw, "  time\t%s – %s (%s)\n", *s.TimeStart, *s.TimeEnd, time.Duration(*s.DurationNS).Round(time.Millisecond))
		}
		fmt.Fprintf(tw, "  gaps\t%d (%d frames missing)\n", s.GapCount, s.MissingFrames)
		for _, g := range s.Gaps {
			fmt.Fprintf(tw, "  \tpositions %d–%d (%d frames)\n", g.From, g.To, g.Count)
		}
		if s.GapCount > uint64(len(s.Gaps)) {
			fmt.Fprintf(tw, "  \t… %d more\n", s.GapCount-uint64(len(s.Gaps)))
		}
		if s.Duplicates+s.Conflicts+s.LateFrames > 0 {
			fmt.Fprintf(tw, "  duplicates\t%d identical, %d conflicting, %d late\n", s.Duplicates, s.Conflicts, s.LateFrames)
		}
		writeDrops(tw, s)
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
		fmt.Fprintf(tw, "  channels\n    id\tname\tcontent\tframes\tbytes\n")
		for _, c := range s.Channels {
			name := c.Name
			if name == "" {
				name = "(no descriptor)"
			}
			fmt.Fprintf(tw, "    %d\t%s\t%s\t%d\t%d\n", c.ID, name, c.Content, c.Frames, c.Bytes)
		}
	}
	return tw.Flush()
}

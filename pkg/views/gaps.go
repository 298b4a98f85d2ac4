package views

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/textfmt"
)

// FindingKind says what a [Finding] reports.
type FindingKind uint8

const (
	// FindingDamage is a damaged byte range of an input: bytes
	// [Offset, End) of File could not be read and were skipped.
	FindingDamage FindingKind = iota + 1
	// FindingTorn is a torn tail: File ends inside a record that starts
	// at Offset (a writer that was killed mid-record).
	FindingTorn
	// FindingLive is a note, not a loss: File is a capture still being
	// written (ds wrap holds it), so where it and its streams end is not
	// known yet; neither its tail nor its streams' missing StreamEnded
	// records are reported.
	FindingLive
	// FindingStart says that the stream's first frames are not in the
	// input: the lowest position read is Position, not 0 (a capture whose
	// head was cut off, a later file of a rotated capture, or frames lost
	// before the first one read). Segment is the sequence number of the
	// stream's first segment header read: above 0 when the input begins
	// after the writer's first segment (see [segments.ItemStart]).
	FindingStart
	// FindingGap is an interior gap: positions Gap.From..Gap.To were
	// assigned by the writer but are not in the input (see [segments.ItemGap]).
	FindingGap
	// FindingDrop is a pre-position drop: submissions the writer refused
	// (a full queue), which never got a position, read from the
	// datastream.health record at Drop.Before (see [Drop]).
	FindingDrop
	// FindingSubscriberDrop is a note, not a loss: subscribers of the
	// writer (its outputs: a capture file, ds wrap -o nats://…, a live
	// reader) lost Frames frame copies, counted by the
	// datastream.health records at positions From to Position, whose
	// counters grew (frames.Health.SubscriberDropped and
	// Subscribers[].Dropped, since the stream's previous record; copies
	// counted at From were lost before From). Subscribers, when the
	// records name them, says which lost how many. Consecutive records
	// that show such drops of the same subscribers, with no other
	// finding of the stream listed between them, are one finding (one
	// outage of an output counts at every health record); From equals
	// Position for one record.
	//
	// It is no loss of the input read: a copy a subscriber lost is
	// either missing from this input, which then has a gap there
	// (listed and counted as such, with the reason a transport loss
	// gives it), or missing from another output's copy only, which is
	// no loss of this one.
	FindingSubscriberDrop
	// FindingConflict is a frame refused because another payload was
	// already stored for its position (see [segments.ItemConflict]): Position,
	// ChannelID and Channel (its name, "" when not declared) are the
	// refused frame's. The first payload is the one kept.
	FindingConflict
	// FindingUnended says that the stream has no StreamEnded record (and
	// its capture is not live): its writer did not finish, so whatever it
	// wrote after the last position read, Position, is unknown. Frames is
	// the number of frames read of the stream; 0 means that none was read
	// (Position is then meaningless).
	FindingUnended
	// FindingMore counts findings not listed (Count of them) because a
	// [Gaps] lists at most MaxListedFindings; the totals include them. It
	// is the last finding of its stream, or of its input (File set).
	FindingMore
	// FindingTrimmed is a note, not a loss: a store trimmed the stream's
	// positions Gap.From..Gap.To (ds trim, the Trimmed record of
	// ds-format(5)). From is 0, and it comes first among its stream's,
	// but for the holes below the horizon of a Trimmed record in a
	// capture file, which come after it (see [FindingTrimShown]).
	FindingTrimmed
	// FindingTransport is a note, not a loss: an output of the stream
	// that leaves the machine (ds wrap -o nats://…) did not deliver
	// Transport's range of positions, read from the datastream.transport
	// record at Position (see [TransportLoss]). It is listed at the
	// range's first position. The positions are missing from a copy read
	// back from that output, which has a gap there (a FindingGap, listed
	// and counted as a loss, whose reason this gives), and present in any
	// other (the capture file), which lacks nothing: as for
	// FindingSubscriberDrop, the loss is counted where frames are
	// missing, never by the record that explains it.
	FindingTransport
	// FindingTrimShown is a capture file (no store's read-out) that holds
	// a Trimmed record of the stream, at horizon Position, and Frames
	// frames below it. A Trimmed record is a store's word, authoritative
	// in what a store reads out only: in a capture it hides nothing, so
	// those frames are shown, and the capture is not what a store wrote
	// (crafted, or spliced). Not a loss of frames, but a problem: ds gaps
	// --check fails on it. It comes right after its stream's trimmed
	// positions.
	FindingTrimShown
	// FindingClockStep is a step of the stream's wall clock, ClockStep,
	// shown by its datastream.clock record at ClockStep.Position (see
	// [ClockStep]): no frame is lost, but the times of the frames after
	// it are off by the step. Not a loss of frames, but a problem, as
	// FindingTrimShown is: ds gaps --check fails on it.
	FindingClockStep
	// FindingUncompared is a problem, not a loss of frames: Frames copies
	// of the stream's positions could not be compared with their first
	// copy, whose hash the assembler no longer kept (read too long before:
	// see [segments.Assembler]); a different payload among them would be
	// a conflict not listed, so ds gaps --check fails on it, as it cannot
	// rule one out (compare the inputs with ds merge, which reads them
	// side by side, or check each alone). It comes last
	// among its stream's findings but for FindingUnended and FindingMore.
	FindingUncompared
)

// String returns the kind's word in text output: "damage", "torn",
// "live", "start", "gap", "dropped", "subscriber", "conflict", "unended",
// "more", "trimmed", "transport", "trim-shown", "clock-step", "uncompared".
func (k FindingKind) String() string {
	switch k {
	case FindingDamage:
		return "damage"
	case FindingTorn:
		return "torn"
	case FindingLive:
		return "live"
	case FindingStart:
		return "start"
	case FindingGap:
		return "gap"
	case FindingDrop:
		return "dropped"
	case FindingSubscriberDrop:
		return "subscriber"
	case FindingConflict:
		return "conflict"
	case FindingUnended:
		return "unended"
	case FindingMore:
		return "more"
	case FindingTrimmed:
		return "trimmed"
	case FindingTransport:
		return "transport"
	case FindingTrimShown:
		return "trim-shown"
	case FindingClockStep:
		return "clock-step"
	case FindingUncompared:
		return "uncompared"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// IsLoss reports whether a finding of kind k is a loss of the input: all
// are but the notes FindingLive, FindingTrimmed, FindingSubscriberDrop,
// FindingTransport (what an output of the stream lost is a loss of this
// input only where it has a gap, a FindingGap).
func (k FindingKind) IsLoss() bool {
	switch k {
	case FindingLive, FindingTrimmed, FindingSubscriberDrop, FindingTransport:
		return false
	}
	return true
}

// MaxListedFindings bounds how many damaged ranges, gaps, drops,
// subscriber drops, conflicts and transport losses a [Gaps] lists, over
// all inputs and streams (a few MiB); past it, it counts them (see
// [FindingMore]).
const MaxListedFindings = 10000

// SubscriberLoss is one subscriber's part of a [FindingSubscriberDrop]:
// Name (from the health record, cut to 64 bytes) lost Frames frame
// copies.
type SubscriberLoss struct {
	Name   string `json:"name"`
	Frames uint64 `json:"frames"`
}

// Finding is one thing ds gaps lists: a loss of an input or of a stream,
// or a note. Which fields are set depends on Kind (see [FindingKind]);
// File findings (damage, torn tail, live, and FindingMore with File set)
// have a zero Stream, stream findings an empty File.
type Finding struct {
	Kind   FindingKind
	File   string          // the input's name, for file findings
	Stream frames.StreamID // the stream, for stream findings

	Offset int64  // FindingDamage, FindingTorn: input offset in bytes
	End    int64  // FindingDamage, FindingTorn: end of the range, exclusive
	Err    string // FindingDamage, FindingTorn: what the reader said

	Gap       segments.Gap // FindingGap
	Drop      Drop         // FindingDrop (Reason cut to 64 bytes)
	ClockStep ClockStep    // FindingClockStep
	// Transport is FindingTransport's loss, and for a FindingGap the
	// transport loss that explains it: the listed one of its stream, with
	// the lowest first position, whose range shares a position with the
	// gap (nil when none does).
	Transport *TransportLoss

	// Position is FindingStart's first position read, FindingTrimShown's
	// horizon, FindingConflict's
	// position, FindingSubscriberDrop's (last) health record,
	// FindingUnended's last position read, FindingTransport's
	// datastream.transport record.
	Position frames.Position
	// From is FindingSubscriberDrop's first health record: below
	// Position when consecutive records were merged into the finding,
	// Position otherwise. It is listed at From.
	From      frames.Position
	Segment   uint64           // FindingStart
	ChannelID frames.ChannelID // FindingConflict
	Channel   string           // FindingConflict: the channel's name, "" when unknown
	// Frames is FindingSubscriberDrop's frame copies lost,
	// FindingUnended's frames read, FindingTrimShown's frames below
	// the horizon and FindingUncompared's copies not compared.
	Frames      uint64
	Subscribers []SubscriberLoss // FindingSubscriberDrop, when the record names them
	Count       uint64           // FindingMore: findings not listed
}

// LossTotals counts the findings of a [Gaps], listed or not: the losses
// of the inputs ([LossTotals.Losses]) and the notes, which are no loss
// of them (live inputs, trimmed streams, subscriber drops and transport
// losses, see [FindingKind.IsLoss]).
type LossTotals struct {
	Damaged      uint64 // damaged ranges (FindingDamage)
	DamagedBytes int64  // their bytes
	Torn         uint64 // torn tails (FindingTorn)
	Live         uint64 // live inputs (FindingLive; not a loss)
	Trimmed      uint64 // streams trimmed by their store (FindingTrimmed; not a loss)
	Starts       uint64 // streams whose start is not in the input (FindingStart)
	Gaps         uint64 // interior gaps (FindingGap)
	Missing      uint64 // positions in them
	Drops        uint64 // places of pre-position drops (FindingDrop)
	Dropped      uint64 // submissions refused there
	SubDrops     uint64 // subscriber drops (FindingSubscriberDrop, a run of records counts once; not a loss)
	SubDropped   uint64 // frame copies lost in them
	Conflicts    uint64 // conflicting copies refused (FindingConflict)
	Unended      uint64 // streams without a StreamEnded record (FindingUnended)
	TrimShown    uint64 // streams with frames below a capture's Trimmed record (FindingTrimShown)
	ClockSteps   uint64 // steps of a wall clock (FindingClockStep)
	Transport    uint64 // transport losses (FindingTransport; not a loss of the input)
	Undelivered  uint64 // frames they say were not delivered
	Uncompared   uint64 // copies not compared with their first (FindingUncompared: a problem)
	// UncomparedStreams counts the streams with such copies.
	UncomparedStreams uint64
}

// Losses returns how many losses of the inputs there are, what ds gaps
// --check fails on: every finding but the notes (live, trimmed,
// subscriber drops, transport losses); a clock step counts too. Frames an output of a stream lost
// are counted here only where an input lacks them, as gaps.
func (t LossTotals) Losses() uint64 {
	return t.Damaged + t.Torn + t.Starts + t.Gaps + t.Drops + t.Conflicts + t.Unended + t.TrimShown + t.ClockSteps + t.UncomparedStreams
}

// Problems returns how many of [LossTotals.Losses] lose no frame of the
// inputs but make what they show untrue unless said: conflicts (a
// different payload for a position, refused), frames below a capture's
// Trimmed record, steps of a wall clock, and streams with copies that
// could not be compared (a conflict among them unseen). String calls them
// "problems", apart from the losses.
func (t LossTotals) Problems() uint64 {
	return t.Conflicts + t.TrimShown + t.ClockSteps + t.UncomparedStreams
}

// Noted returns how many notes [LossTotals.String] gives after the
// losses: subscriber drops and transport losses, which tell what other
// outputs of a stream lack, and copies not compared, among which a
// conflict would not have been seen. Live inputs and trimmed streams are
// said by their findings only.
func (t LossTotals) Noted() uint64 { return t.SubDrops + t.Transport }

// IsDamaged reports whether an input was damaged (a damaged range or a
// torn tail).
func (t LossTotals) IsDamaged() bool { return t.Damaged+t.Torn > 0 }

// String returns the totals in one line for people: the losses, e.g. "2
// losses: 1 gap (3 frames missing), 1 drop (4 frames refused)" or "no
// loss", then the problems (see [LossTotals.Problems]) after "; ", e.g.
// "1 problem: 1 clock step" (alone when there is no loss), then the notes, if any, after "; noted: ", e.g. "no loss;
// noted: 1 subscriber drop (304 frame copies lost by subscribers), 4
// transport losses (304 frames not delivered by an output)".
func (t LossTotals) String() string {
	var parts, problems, notes []string
	add := func(ok bool, format string, args ...any) {
		if ok {
			parts = append(parts, fmt.Sprintf(format, args...))
		}
	}
	problem := func(ok bool, format string, args ...any) {
		if ok {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	note := func(ok bool, format string, args ...any) {
		if ok {
			notes = append(notes, fmt.Sprintf(format, args...))
		}
	}
	add(t.Damaged > 0, "%s (%s)", textfmt.Nouns(t.Damaged, "damaged range"), textfmt.Nouns(uint64(t.DamagedBytes), "byte"))
	add(t.Torn > 0, "%s", textfmt.Nouns(t.Torn, "torn tail"))
	add(t.Starts > 0, "%s without %s start", textfmt.Nouns(t.Starts, "stream"), its(t.Starts))
	add(t.Gaps > 0, "%s (%s missing)", textfmt.Nouns(t.Gaps, "gap"), textfmt.Nouns(t.Missing, "frame"))
	add(t.Drops > 0, "%s (%s refused)", textfmt.Nouns(t.Drops, "drop"), textfmt.Nouns(t.Dropped, "frame"))
	add(t.Unended > 0, "%s not ended", textfmt.Nouns(t.Unended, "stream"))
	problem(t.Conflicts > 0, "%s", textfmt.Nouns(t.Conflicts, "conflict"))
	problem(t.TrimShown > 0, "%s with frames below a capture's Trimmed record", textfmt.Nouns(t.TrimShown, "stream"))
	problem(t.ClockSteps > 0, "%s", textfmt.Nouns(t.ClockSteps, "clock step"))
	note(t.SubDrops > 0, "%s (%s lost by subscribers)", textfmt.Nouns(t.SubDrops, "subscriber drop"), textfmt.Nouns(t.SubDropped, "frame copy"))
	note(t.Transport > 0, "%s (%s not delivered by an output)", textfmt.Nouns(t.Transport, "transport loss"), textfmt.Nouns(t.Undelivered, "frame"))
	problem(t.Uncompared > 0, "%s not compared with the first (a conflict among them would not be seen)", textfmt.Nouns(t.Uncompared, "copy"))
	s := "no loss"
	if n := t.Losses() - t.Problems(); n > 0 {
		s = textfmt.Nouns(n, "loss") + ": " + strings.Join(parts, ", ")
	}
	if n := t.Problems(); n > 0 {
		p := textfmt.Nouns(n, "problem") + ": " + strings.Join(problems, ", ")
		if len(parts) == 0 {
			s = p
		} else {
			s += "; " + p
		}
	}
	if len(notes) > 0 {
		s += "; noted: " + strings.Join(notes, ", ")
	}
	return s
}

// its returns the possessive that goes with n streams.
func its(n uint64) string {
	if n == 1 {
		return "its"
	}
	return "their"
}

// Gaps collects every loss ds gaps lists: damaged ranges and torn tails of
// the inputs, and per stream where its start is missing, interior gaps,
// pre-position drops, conflicts, and whether it ended; and the notes,
// which are no loss of the inputs: live inputs, trimmed streams,
// subscriber drops and transport losses (see [FindingKind.IsLoss]).
// Read each input into the Sink [Gaps.Input] returns for it ([segments.Scan], or
// [Merge] for several at once); then call [Gaps.Each], [Gaps.WriteText]
// or [Gaps.WriteJSON], and [Gaps.Totals]. A Gaps is itself the Sink of
// its latest input (of an input named "-" when there is none).
//
// It rebuilds each stream with an [segments.Assembler] and decodes only the
// writer's datastream.health records (as [Info] does, with the same drop
// rules, see [Drop]) and datastream.transport records (see
// [TransportLoss]); no other payload is decoded or kept. A frame that
// arrives after the gap it was in was declared (input disordered by more
// than the reorder window) is taken out of that gap, when it is listed.
// A gap gets the reason of a transport loss of its stream whose range
// shares a position with it (see [Finding].Transport), wherever the
// record is in the stream: the reasons are matched when the findings are
// listed. Consecutive subscriber drops are merged as they are read (see
// [FindingSubscriberDrop]), so that a long outage of an output takes one
// finding, not one per health record.
//
// Memory: the Assembler's (its window, and about 250 bytes per stream),
// about 250 bytes more per stream plus its channel names, and at most
// [MaxListedFindings] listed findings (a transport loss's output and
// reason are cut to 200 bytes each); past that, findings are counted
// only. A Gaps is not safe for concurrent use.
type Gaps struct {
	asm     *segments.Assembler
	streams map[frames.StreamID]*gapStream
	order   []*gapStream
	last    *gapStream // the stream of the previous call
	files   []*gapFile
	listed  int
	totals  LossTotals // of listed and unlisted findings, starts and unended excepted
}

// gapFile is an input of a [Gaps].
type gapFile struct {
	name   string
	live   bool
	damage []Finding
	more   uint64
}

// gapStream is what a [Gaps] keeps of one stream.
type gapStream struct {
	id        frames.StreamID
	decl      declaredChannels // the channels declared, first descriptor of each id
	health    frames.ChannelID // of datastream.health, when hasHealth
	hasHealth bool
	transport frames.ChannelID // of datastream.transport, when hasTransp
	hasTransp bool
	clock     frames.ChannelID // of datastream.clock, when hasClock
	hasClock  bool
	steps     clockStepper
	firstSeq  uint64          // of the first segment header read
	before    frames.Position // trimmed by a store below this position
	trimHoles []segments.Gap  // holes below a capture's Trimmed record: trimmed, not gaps
	headers   bool            // a segment header was read
	live      bool            // its latest segment header was in a live input
	ended     bool            // a StreamEnded record was read
	fromStart bool            // position 0 was read
	n         uint64          // frames read, in order or late
	low, high frames.Position
	drops     dropTracker
	subs      subscriberTracker
	gaps      []segments.Gap // listed gaps, ascending
	found     []Finding      // other listed findings, in the order found
	more      uint64         // findings not listed
	// run is 1 + the index in found of the subscriber drop that the next
	// one may be merged into, 0 when none may.
	run int
}

// NewGaps returns an empty collector with the given reorder window per
// stream, in bytes (0: DefaultWindow; see [segments.AssemblerOptions]).
func NewGaps(window int) *Gaps {
	g := &Gaps{streams: make(map[frames.StreamID]*gapStream)}
	g.asm = segments.NewAssembler(window, g.item)
	return g
}

// Input adds an input named name, listed after those added before, and
// returns the Sink to read it into; its damage is listed under its name.
// live says that a writer is still writing it: a FindingLive note is
// listed for it, and a stream whose latest segment header read is in it
// is not reported unended. The Sinks of several inputs may be fed in any
// interleaving, but not concurrently.
func (g *Gaps) Input(name string, live bool) segments.Sink {
	f := &gapFile{name: name, live: live}
	g.files = append(g.files, f)
	if live {
		g.totals.Live++
	}
	return gapsInput{g, f}
}

// File is [Gaps.Input] for inputs read one after the other into the Gaps
// itself: it adds an input, which the Gaps's own Sink methods then
// receive.
func (g *Gaps) File(name string, live bool) { g.Input(name, live) }

// file returns the latest input.
func (g *Gaps) file() *gapFile {
	if len(g.files) == 0 {
		g.Input("-", false)
	}
	return g.files[len(g.files)-1]
}

// gapsInput is the Sink of one input of a Gaps.
type gapsInput struct {
	g *Gaps
	f *gapFile
}

func (in gapsInput) Header(h segments.SegmentHeader)         { in.g.header(h, in.f) }
func (in gapsInput) Channel(d frames.ChannelDescriptor)      { in.g.Channel(d) }
func (in gapsInput) Frame(s frames.StreamID, f frames.Frame) { in.g.Frame(s, f) }
func (in gapsInput) Ended(s frames.StreamID)                 { in.g.Ended(s) }
func (in gapsInput) Trimmed(s frames.StreamID, before frames.Position, store bool) {
	in.g.Trimmed(s, before, store)
}
func (in gapsInput) Damage(offset, end int64, torn bool, err error) {
	in.g.damage(in.f, offset, end, torn, err)
}

func (g *Gaps) stream(s frames.StreamID) *gapStream {
	if st := g.last; st != nil && st.id == s {
		return st
	}
	st := g.streams[s]
	if st == nil {
		st = &gapStream{id: s}
		g.streams[s] = st
		g.order = append(g.order, st)
	}
	g.last = st
	return st
}

// Header implements [segments.Sink], for the latest input.
func (g *Gaps) Header(h segments.SegmentHeader) { g.header(h, g.file()) }

// header records a segment header read in input f.
func (g *Gaps) header(h segments.SegmentHeader, f *gapFile) {
	st := g.stream(h.Stream.Stream)
	if !st.headers {
		st.headers, st.firstSeq = true, h.Seq
	}
	st.live = f.live
	if st.decl.adopt(h.Channels) {
		for _, c := range h.Channels {
			g.declared(st, c)
		}
	} else {
		for _, c := range h.Channels {
			g.Channel(c)
		}
	}
	g.asm.Segment(h.Stream.Stream, h.Seq)
}

// Segment is Header for a writer's first segment (sequence number 0).
func (g *Gaps) Segment(d frames.StreamDescriptor, channels []frames.ChannelDescriptor) {
	g.Header(segments.SegmentHeader{Stream: d, Channels: channels})
}

// Channel implements [segments.Sink]; the first descriptor of an id wins.
func (g *Gaps) Channel(d frames.ChannelDescriptor) {
	st := g.stream(d.Stream)
	if st.decl.add(d) {
		g.declared(st, d)
	}
}

// declared takes in channel d, newly declared in stream st.
func (g *Gaps) declared(st *gapStream, d frames.ChannelDescriptor) {
	if d.Name == frames.HealthChannel && !st.hasHealth {
		st.health, st.hasHealth = d.ID, true
	}
	if d.Name == frames.TransportChannel && !st.hasTransp {
		st.transport, st.hasTransp = d.ID, true
	}
	if d.Name == frames.ClockChannel && !st.hasClock {
		st.clock, st.hasClock = d.ID, true
	}
}

// Frame implements [segments.Sink].
func (g *Gaps) Frame(s frames.StreamID, f frames.Frame) { g.asm.Add(s, f) }

// Ended implements [segments.Sink]: an ended stream has no more to come, so what
// it holds is flushed.
func (g *Gaps) Ended(s frames.StreamID) {
	g.stream(s).ended = true
}

// Trimmed implements [segments.Sink]: positions below before were trimmed by a
// store: not a gap (from a capture file, absent ones are; its frames below
// are shown, and listed: see [FindingTrimShown]).
func (g *Gaps) Trimmed(s frames.StreamID, before frames.Position, store bool) {
	g.asm.Trimmed(s, before, store)
}

// Damage implements [segments.Sink], for the latest input.
func (g *Gaps) Damage(offset, end int64, torn bool, err error) {
	g.damage(g.file(), offset, end, torn, err)
}

// damage records a damaged range of input f.
func (g *Gaps) damage(f *gapFile, offset, end int64, torn bool, err error) {
	if errors.Is(err, segments.ErrHeaderRepaired) {
		return // no position lost: ds check reports the damage
	}
	k := FindingDamage
	if torn {
		k = FindingTorn
		g.totals.Torn++
	} else {
		g.totals.Damaged++
		g.totals.DamagedBytes += end - offset
	}
	if !g.list() {
		f.more++
		return
	}
	d := Finding{Kind: k, File: f.name, Offset: offset, End: end}
	if err != nil {
		d.Err = err.Error()
	}
	f.damage = append(f.damage, d)
}

// list reports whether one more finding may be listed, counting it.
func (g *Gaps) list() bool {
	if g.listed >= MaxListedFindings {
		return false
	}
	g.listed++
	return true
}

// add lists a stream finding, or counts it.
func (g *Gaps) add(st *gapStream, f Finding) {
	st.interrupt(f.at())
	if !g.list() {
		st.more++
		return
	}
	f.Stream = st.id
	st.found = append(st.found, f)
	if f.Kind == FindingSubscriberDrop {
		st.run = len(st.found)
	}
}

// interrupt ends st's run of subscriber drops before a finding listed at
// position p, unless p comes before the run's first record (a transport
// loss is listed at the first position of its range, which its record
// follows), so that a merged finding never covers another.
func (st *gapStream) interrupt(p frames.Position) {
	if st.run > 0 && p >= st.found[st.run-1].From {
		st.run = 0
	}
}

// subscriberDrop lists, or counts, the n frame copies that subscribers
// lost before the health record at pos (by whom, when it says), merged
// into st's run of subscriber drops when the same subscribers lost them.
func (g *Gaps) subscriberDrop(st *gapStream, pos frames.Position, n uint64, by []SubscriberLoss) {
	g.totals.SubDropped += n
	if st.run > 0 {
		f := &st.found[st.run-1]
		if sameSubscribers(f.Subscribers, by) {
			f.Position = pos
			f.Frames += n
			for _, b := range by {
				for i := range f.Subscribers {
					if f.Subscribers[i].Name == b.Name {
						f.Subscribers[i].Frames += b.Frames
						break
					}
				}
			}
			return
		}
	}
	g.totals.SubDrops++
	g.add(st, Finding{Kind: FindingSubscriberDrop, From: pos, Position: pos, Frames: n, Subscribers: by})
}

// sameSubscribers reports whether a and b name the same subscribers, in
// any order. Past maxTrackedSubscribers names (a record that repeats a
// name) it reports false: such drops are listed apart.
func sameSubscribers(a, b []SubscriberLoss) bool {
	if len(a) != len(b) || len(a) > maxTrackedSubscribers {
		return false
	}
	for _, x := range b {
		if !slices.ContainsFunc(a, func(y SubscriberLoss) bool { return y.Name == x.Name }) {
			return false
		}
	}
	for _, x := range a {
		if !slices.ContainsFunc(b, func(y SubscriberLoss) bool { return y.Name == x.Name }) {
			return false
		}
	}
	return true
}

// item takes an assembled item.
func (g *Gaps) item(it segments.Item) {
	st := g.stream(it.Stream)
	switch it.Kind {
	case segments.ItemFrame:
		p := it.Frame.Position
		if st.n == 0 {
			st.low = p
		}
		st.n++
		st.high = p // in order: the highest so far
		if p == 0 {
			st.fromStart = true
		}
		if st.hasHealth && it.Frame.Channel == st.health {
			g.health(st, it.Frame, false)
		}
		if st.hasTransp && it.Frame.Channel == st.transport {
			g.transportLoss(st, it.Frame)
		}
		if st.hasClock && it.Frame.Channel == st.clock {
			g.clockReading(st, it.Frame)
		}
	case segments.ItemLate:
		p := it.Frame.Position
		if st.n == 0 {
			st.low, st.high = p, p
		}
		st.n++
		st.low, st.high = min(st.low, p), max(st.high, p)
		g.fill(st, p)
		if st.hasHealth && it.Frame.Channel == st.health {
			g.health(st, it.Frame, true)
		}
		if st.hasTransp && it.Frame.Channel == st.transport {
			g.transportLoss(st, it.Frame) // it names its range: order does not matter
		}
	case segments.ItemGap:
		g.totals.Gaps++
		g.totals.Missing += it.Gap.Count
		st.interrupt(it.Gap.From)
		if !g.list() {
			st.more++
			return
		}
		st.gaps = append(st.gaps, it.Gap)
	case segments.ItemTrimmed:
		if it.Gap.From > 0 { // a hole below a capture's Trimmed record
			st.trimHoles = append(st.trimHoles, it.Gap)
			return
		}
		st.before = max(st.before, it.Gap.To+1)
	case segments.ItemConflict:
		g.totals.Conflicts++
		g.add(st, Finding{Kind: FindingConflict, Position: it.Frame.Position, ChannelID: it.Frame.Channel, Channel: st.channelName(it.Frame.Channel)})
	}
}

// fill takes position p, which arrived late, out of the listed gap that
// holds it, if any.
func (g *Gaps) fill(st *gapStream, p frames.Position) {
	i := sort.Search(len(st.gaps), func(i int) bool { return st.gaps[i].To >= p })
	if i == len(st.gaps) || st.gaps[i].From > p {
		return
	}
	gp := &st.gaps[i]
	g.totals.Missing--
	switch {
	case gp.From == gp.To:
		st.gaps = slices.Delete(st.gaps, i, i+1)
		g.totals.Gaps--
		g.listed--
		return
	case p == gp.From:
		gp.From++
	case p == gp.To:
		gp.To--
	default:
		hi := segments.Gap{From: p + 1, To: gp.To, Count: uint64(gp.To - p)}
		gp.To = p - 1
		gp.Count = uint64(gp.To-gp.From) + 1
		st.gaps = slices.Insert(st.gaps, i+1, hi)
		g.totals.Gaps++
		g.listed++ // over the bound by one at most per late frame: it only splits what is listed
		return
	}
	gp.Count--
}

// health reads a datastream.health record of st at f.Position; late marks
// one delivered out of order.
func (g *Gaps) health(st *gapStream, f frames.Frame, late bool) {
	if d, ok := st.drops.health(f.Position, f.Payload, st.fromStart, late); ok {
		g.totals.Drops++
		g.totals.Dropped += d.Frames
		d.Reason = clip(d.Reason)
		g.add(st, Finding{Kind: FindingDrop, Drop: d})
	}
	if late {
		return // it says nothing of the counters in between
	}
	if n, by, ok := st.subs.health(f.Payload, st.fromStart); ok {
		g.subscriberDrop(st, f.Position, n, by)
	}
}

// transportLoss reads a datastream.transport record of st.
func (g *Gaps) transportLoss(st *gapStream, f frames.Frame) {
	t, ok := decodeTransport(f.Payload)
	if !ok {
		return
	}
	g.totals.Transport++
	g.totals.Undelivered += t.Frames
	g.add(st, Finding{Kind: FindingTransport, Position: f.Position, Transport: &t})
}

// clockReading reads a datastream.clock record of st, in position order
// (a late one says nothing of the readings around it).
func (g *Gaps) clockReading(st *gapStream, f frames.Frame) {
	r, ok := decodeClockReading(f.Position, f.Payload)
	if !ok {
		return
	}
	if c, ok := st.steps.next(r); ok {
		g.totals.ClockSteps++
		g.add(st, Finding{Kind: FindingClockStep, ClockStep: c})
	}
}

// subscriberTracker follows the subscriber drop counters of one stream's
// health records, in position order.
type subscriberTracker struct {
	based bool              // the counters below are a baseline
	total uint64            // the largest subscriber_dropped so far
	by    map[string]uint64 // the largest Dropped so far, by subscriber
}

// maxTrackedSubscribers bounds the subscribers a stream's tracker follows
// by name; the total covers the others.
const maxTrackedSubscribers = 64

// health reads one health record and returns the frame copies subscribers
// lost since the previous record, and by whom, when they lost any.
// fromStart says that the stream is seen from position 0: counters start
// at 0; otherwise the first record read is the baseline.
func (t *subscriberTracker) health(payload []byte, fromStart bool) (uint64, []SubscriberLoss, bool) {
	var h struct {
		SubscriberDropped uint64                    `json:"subscriber_dropped"`
		Subscribers       []frames.SubscriberHealth `json:"subscribers"`
	}
	if json.Unmarshal(payload, &h) != nil {
		return 0, nil, false
	}
	based := t.based || fromStart
	t.based = true
	var by []SubscriberLoss
	var sum uint64
	for _, s := range h.Subscribers {
		name := clip(s.Name)
		prev, ok := t.by[name]
		if !ok && len(t.by) >= maxTrackedSubscribers {
			continue
		}
		if t.by == nil {
			t.by = make(map[string]uint64)
		}
		t.by[name] = max(prev, s.Dropped)
		// A subscriber first seen after the baseline started at 0.
		if (based || ok) && s.Dropped > prev {
			by = append(by, SubscriberLoss{Name: name, Frames: s.Dropped - prev})
			sum += s.Dropped - prev
		}
	}
	prev := t.total
	t.total = max(prev, h.SubscriberDropped)
	if !based {
		return 0, nil, false
	}
	n := max(t.total-prev, sum)
	if n == 0 {
		return 0, nil, false
	}
	return n, by, true
}

// Totals flushes what is held and returns the counts of every finding,
// listed or not.
func (g *Gaps) Totals() LossTotals {
	g.asm.Flush()
	t := g.totals
	for _, st := range g.order {
		if st.n > 0 && st.low > st.before {
			t.Starts++
		}
		if st.before > 0 || len(st.trimHoles) > 0 {
			t.Trimmed++
		}
		as := g.asm.Stats(st.id)
		if as.Shown > 0 {
			t.TrimShown++
		}
		t.Uncompared += as.Uncompared
		if as.Uncompared > 0 {
			t.UncomparedStreams++
		}
		if !st.ended && !st.live {
			t.Unended++
		}
	}
	return t
}

// Each flushes what is held and calls fn with every finding, in report
// order, until fn returns an error, which Each returns: first each input's
// (in the order given: a live note, then damaged ranges and torn tails in
// offset order), then each stream's, streams sorted by node then life:
// its start, then gaps, drops, subscriber drops, conflicts and transport
// losses by position (a gap and a transport loss by their first position,
// a drop by the position it comes before, a subscriber drop by its first
// health record, drops before what is at the same position, and gaps
// before transport losses), then whether it
// ended, then how many were not listed. fn may keep the Finding but must
// not modify its Subscribers or Transport.
func (g *Gaps) Each(fn func(Finding) error) error {
	g.asm.Flush()
	for _, f := range g.files {
		if f.live {
			if err := fn(Finding{Kind: FindingLive, File: f.name}); err != nil {
				return err
			}
		}
		for _, d := range f.damage {
			if err := fn(d); err != nil {
				return err
			}
		}
		if f.more > 0 {
			if err := fn(Finding{Kind: FindingMore, File: f.name, Count: f.more}); err != nil {
				return err
			}
		}
	}
	for _, st := range g.sorted() {
		for _, f := range g.streamFindings(st) {
			if err := fn(f); err != nil {
				return err
			}
		}
	}
	return nil
}

// sorted returns the streams by node, then life.
func (g *Gaps) sorted() []*gapStream {
	order := slices.Clone(g.order)
	slices.SortFunc(order, func(a, b *gapStream) int { return a.id.Compare(b.id) })
	return order
}

// streamFindings returns the findings of one stream in report order.
func (g *Gaps) streamFindings(st *gapStream) []Finding {
	var out []Finding
	if st.before > 0 {
		out = append(out, Finding{Kind: FindingTrimmed, Stream: st.id, Gap: segments.Gap{From: 0, To: st.before - 1, Count: uint64(st.before)}})
	}
	for _, h := range st.trimHoles {
		out = append(out, Finding{Kind: FindingTrimmed, Stream: st.id, Gap: h})
	}
	if as := g.asm.Stats(st.id); as.Shown > 0 {
		out = append(out, Finding{Kind: FindingTrimShown, Stream: st.id, Position: as.CaptureBefore, Frames: as.Shown})
	}
	if st.n > 0 && st.low > st.before {
		out = append(out, Finding{Kind: FindingStart, Stream: st.id, Position: st.low, Segment: st.firstSeq})
	}
	mid := make([]Finding, 0, len(st.gaps)+len(st.found))
	lost := st.transportLosses()
	j := 0
	for _, gp := range st.gaps {
		f := Finding{Kind: FindingGap, Stream: st.id, Gap: gp}
		// Gaps ascend and lost is by first position: the losses skipped
		// end before this gap, hence before every later one.
		for j < len(lost) && lost[j].To < gp.From {
			j++
		}
		if j < len(lost) && lost[j].overlaps(gp) {
			f.Transport = lost[j]
		}
		mid = append(mid, f)
	}
	mid = append(mid, st.found...)
	slices.SortStableFunc(mid, func(a, b Finding) int {
		pa, pb := a.at(), b.at()
		switch {
		case pa < pb:
			return -1
		case pa > pb:
			return 1
		}
		return a.before() - b.before()
	})
	out = append(out, mid...)
	if n := g.asm.Stats(st.id).Uncompared; n > 0 {
		out = append(out, Finding{Kind: FindingUncompared, Stream: st.id, Frames: n})
	}
	if !st.ended && !st.live {
		out = append(out, Finding{Kind: FindingUnended, Stream: st.id, Position: st.high, Frames: st.n})
	}
	if st.more > 0 {
		out = append(out, Finding{Kind: FindingMore, Stream: st.id, Count: st.more})
	}
	return out
}

// transportLosses returns the listed transport losses of st by first
// position, then in the order found.
func (st *gapStream) transportLosses() []*TransportLoss {
	var lost []*TransportLoss
	for i := range st.found {
		if st.found[i].Kind == FindingTransport {
			lost = append(lost, st.found[i].Transport)
		}
	}
	slices.SortStableFunc(lost, func(a, b *TransportLoss) int { return cmp.Compare(a.From, b.From) })
	return lost
}

// before returns 0 for what happened before its position (drops), 1 for
// what is at it: at the same position, drops come first.
func (f *Finding) before() int {
	if f.Kind == FindingDrop || f.Kind == FindingSubscriberDrop {
		return 0
	}
	return 1
}

// at returns the position a stream finding is listed at.
func (f *Finding) at() frames.Position {
	switch f.Kind {
	case FindingGap:
		return f.Gap.From
	case FindingDrop:
		return f.Drop.Before
	case FindingTransport:
		return f.Transport.From
	case FindingSubscriberDrop:
		return f.From
	case FindingClockStep:
		return f.ClockStep.Position
	}
	return f.Position
}

// WriteText writes one line per finding, in [Gaps.Each] order:
//
//	WHERE  KIND  WHAT
//
// WHERE is the stream (node#life), or the input's name for damage, torn
// tails and live notes; KIND is the kind's word ([FindingKind.String]).
// The columns are aligned; names with control characters or bytes that
// are not UTF-8 are quoted. Nothing is written when there is no finding.
func (g *Gaps) WriteText(w io.Writer) error {
	width := 0
	g.Each(func(f Finding) error {
		width = max(width, utf8.RuneCountInString(f.where()))
		return nil
	})
	bw := bufio.NewWriter(w)
	err := g.Each(func(f Finding) error {
		where := f.where()
		bw.WriteString(where)
		bw.WriteString(strings.Repeat(" ", width-utf8.RuneCountInString(where)+2))
		kind := f.Kind.String()
		bw.WriteString(kind)
		bw.WriteString(strings.Repeat(" ", len("subscriber")-len(kind)+2))
		bw.WriteString(f.text())
		return bw.WriteByte('\n')
	})
	if err != nil {
		return err
	}
	return bw.Flush()
}

// where returns the first column of f's line: its input or its stream.
func (f *Finding) where() string {
	if f.File != "" {
		return textfmt.Quote(f.File)
	}
	return textfmt.Quote(f.Stream.String())
}

// text returns what a finding says, for WriteText.
func (f *Finding) text() string {
	switch f.Kind {
	case FindingDamage:
		return fmt.Sprintf("bytes %d–%d unreadable (%s): %s", f.Offset, f.End-1, textfmt.Nouns(uint64(f.End-f.Offset), "byte"), textfmt.Quote(f.Err))
	case FindingTorn:
		return fmt.Sprintf("torn tail at byte %d: the input ends inside a record (its writer stopped mid-record): %s", f.Offset, textfmt.Quote(f.Err))
	case FindingLive:
		return "being written (a writer holds it): its end is not known yet; not a loss"
	case FindingStart:
		s := fmt.Sprintf("starts at position %d: earlier frames not in the input", f.Position)
		if f.Segment > 0 {
			s += fmt.Sprintf(" (it starts at the writer's segment %d)", f.Segment)
		}
		return s
	case FindingGap:
		s := fmt.Sprintf("positions %d–%d missing (%s)", f.Gap.From, f.Gap.To, textfmt.Nouns(f.Gap.Count, "frame"))
		if f.Gap.From == f.Gap.To {
			s = fmt.Sprintf("position %d missing (1 frame)", f.Gap.From)
		}
		if f.Transport != nil {
			s += ": " + notDelivered(f.Transport, true)
		}
		return s
	case FindingTransport:
		t := f.Transport
		s := fmt.Sprintf("positions %d–%d", t.From, t.To)
		if t.From == t.To {
			s = fmt.Sprintf("position %d", t.From)
		}
		return s + fmt.Sprintf(" (%s) %s", textfmt.Nouns(t.Frames, "frame"), notDelivered(t, true))
	case FindingDrop:
		s := textfmt.Nouns(f.Drop.Frames, "frame")
		if f.Drop.Bytes != nil {
			s += fmt.Sprintf(" (%s)", textfmt.Nouns(*f.Drop.Bytes, "byte"))
		}
		return s + fmt.Sprintf(" refused before position %d (%s)", f.Drop.Before, textfmt.Quote(f.Drop.Reason))
	case FindingSubscriberDrop:
		s := fmt.Sprintf("%s lost by subscribers before position %d", textfmt.Nouns(f.Frames, "frame copy"), f.Position)
		if f.From < f.Position {
			s = fmt.Sprintf("%s lost by subscribers between positions %d and %d", textfmt.Nouns(f.Frames, "frame copy"), f.From, f.Position)
		}
		if len(f.Subscribers) > 0 {
			var by []string
			for _, sl := range f.Subscribers {
				by = append(by, fmt.Sprintf("%s: %d", textfmt.Quote(sl.Name), sl.Frames))
			}
			s += " (" + strings.Join(by, ", ") + ")"
		}
		return s
	case FindingConflict:
		name := textfmt.Quote(f.Channel)
		if f.Channel == "" {
			name = fmt.Sprintf("channel %d", f.ChannelID)
		}
		return fmt.Sprintf("position %d of %s: a different payload, refused (the first is kept)", f.Position, name)
	case FindingUncompared:
		return fmt.Sprintf("%s not compared with the first (read too long before): a conflict among them would not be listed", textfmt.Nouns(f.Frames, "copy"))
	case FindingUnended:
		if f.Frames == 0 {
			return "no StreamEnded record and no frame: its writer did not finish"
		}
		return fmt.Sprintf("no StreamEnded record after position %d: its writer did not finish, what followed is unknown", f.Position)
	case FindingMore:
		return fmt.Sprintf("%d more not listed (at most %d are)", f.Count, MaxListedFindings)
	case FindingTrimmed:
		return string(appendStoreTrimmedMsg(nil, f.Gap.From, f.Gap.To)) + ": not a loss"
	case FindingClockStep:
		return f.ClockStep.String()
	case FindingTrimShown:
		return fmt.Sprintf("a Trimmed record (positions below %d) in a capture file: %s below it shown, not hidden (a store's record, which a capture cannot hold with them)", f.Position, textfmt.Nouns(f.Frames, "frame"))
	}
	return ""
}

// WriteJSON writes one JSON object per finding, in [Gaps.Each] order, in
// the shapes ds log --json gives losses:
//
//	{"damage":{"file":F,"offset":O,"end":E,"torn_tail":false,"error":S}}
//	{"live":{"file":F}}
//	{"more":{"file":F,"count":N}}
//
// and, after "stream" (node#life), "node" and "life", one of
//
//	"start":{"position":P,"segment":S}
//	"gap":{"from":F,"to":T,"count":N}
//	"dropped":{"before":P,"frames":N,"bytes":B,"reason":R}   (bytes null when unknown)
//	"subscriber_dropped":{"from":P,"before":P,"frames":N,"subscribers":[{"name":S,"frames":N}…]}   ("from" only when merged)
//	"conflict":{"position":P,"channel":NAME,"channel_id":ID}  (channel null when unknown)
//	"unended":{"last_position":P}                              (null when no frame was read)
//	"transport":{"output":S,"from":F,"to":T,"frames":N,"reason":R,"since_unix_ms":MS,"until_unix_ms":MS}
//	"more":{"count":N}
//	"trimmed":{"from":F,"to":T,"count":N}
//	"trim_shown":{"before":P,"frames":N}
//	"clock_step":{"position":P,"after":A,"step_ns":S,"elapsed_ns":E,"from_unix_ns":F,"to_unix_ns":T}
//	"uncompared":{"copies":N}
//
// A torn tail is a "damage" object with "torn_tail":true. A gap that a
// transport loss explains has "reason":"not delivered by OUTPUT: REASON"
// after its count. A subscriber drop merged from consecutive health
// records (see [FindingSubscriberDrop]) has "from", the first record's
// position, "before" being the last's. A transport loss's times are ms
// since the Unix epoch, 0 when its record does not say. "live",
// "trimmed", "subscriber_dropped" and "transport" are notes, not losses
// of the input ([FindingKind.IsLoss]).
func (g *Gaps) WriteJSON(w io.Writer) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	err := g.Each(func(f Finding) error { return enc.Encode(f.jsonValue()) })
	if err != nil {
		return err
	}
	return bw.Flush()
}

// The JSON shapes of WriteJSON, in field order.
type (
	jsonFileFinding struct {
		Damage *jsonDamage `json:"damage,omitempty"`
		Live   *jsonFile   `json:"live,omitempty"`
		More   *jsonMore   `json:"more,omitempty"`
	}
	jsonDamage struct {
		File     string `json:"file"`
		Offset   int64  `json:"offset"`
		End      int64  `json:"end"`
		TornTail bool   `json:"torn_tail"`
		Error    string `json:"error"`
	}
	jsonFile struct {
		File string `json:"file"`
	}
	jsonMore struct {
		File  string `json:"file,omitempty"`
		Count uint64 `json:"count"`
	}
	jsonStreamFinding struct {
		Stream            string              `json:"stream"`
		Node              string              `json:"node"`
		Life              uint64              `json:"life"`
		Start             *jsonStart          `json:"start,omitempty"`
		Gap               *jsonGap            `json:"gap,omitempty"`
		Dropped           *Drop               `json:"dropped,omitempty"`
		SubscriberDropped *jsonSubscriberDrop `json:"subscriber_dropped,omitempty"`
		Conflict          *jsonConflict       `json:"conflict,omitempty"`
		Unended           *jsonUnended        `json:"unended,omitempty"`
		Transport         *TransportLoss      `json:"transport,omitempty"`
		More              *jsonMore           `json:"more,omitempty"`
		Trimmed           *jsonGap            `json:"trimmed,omitempty"`
		TrimShown         *jsonTrimShown      `json:"trim_shown,omitempty"`
		ClockStep         *ClockStep          `json:"clock_step,omitempty"`
		Uncompared        *jsonUncompared     `json:"uncompared,omitempty"`
	}
	jsonUncompared struct {
		Copies uint64 `json:"copies"`
	}
	jsonTrimShown struct {
		Before frames.Position `json:"before"`
		Frames uint64          `json:"frames"`
	}
	jsonStart struct {
		Position frames.Position `json:"position"`
		Segment  uint64          `json:"segment"`
	}
	jsonGap struct {
		From   frames.Position `json:"from"`
		To     frames.Position `json:"to"`
		Count  uint64          `json:"count"`
		Reason string          `json:"reason,omitempty"`
	}
	jsonSubscriberDrop struct {
		From        *frames.Position `json:"from,omitempty"`
		Before      frames.Position  `json:"before"`
		Frames      uint64           `json:"frames"`
		Subscribers []SubscriberLoss `json:"subscribers"`
	}
	jsonConflict struct {
		Position  frames.Position  `json:"position"`
		Channel   *string          `json:"channel"`
		ChannelID frames.ChannelID `json:"channel_id"`
	}
	jsonUnended struct {
		LastPosition *frames.Position `json:"last_position"`
	}
)

// jsonValue returns the value WriteJSON encodes for f.
func (f *Finding) jsonValue() any {
	switch f.Kind {
	case FindingDamage, FindingTorn:
		return jsonFileFinding{Damage: &jsonDamage{File: f.File, Offset: f.Offset, End: f.End, TornTail: f.Kind == FindingTorn, Error: f.Err}}
	case FindingLive:
		return jsonFileFinding{Live: &jsonFile{File: f.File}}
	case FindingMore:
		if f.File != "" {
			return jsonFileFinding{More: &jsonMore{File: f.File, Count: f.Count}}
		}
	}
	v := jsonStreamFinding{Stream: f.Stream.String(), Node: string(f.Stream.Node), Life: uint64(f.Stream.Life)}
	switch f.Kind {
	case FindingStart:
		v.Start = &jsonStart{Position: f.Position, Segment: f.Segment}
	case FindingGap:
		v.Gap = &jsonGap{From: f.Gap.From, To: f.Gap.To, Count: f.Gap.Count}
		if f.Transport != nil {
			v.Gap.Reason = notDelivered(f.Transport, false)
		}
	case FindingDrop:
		d := f.Drop
		v.Dropped = &d
	case FindingSubscriberDrop:
		by := f.Subscribers
		if by == nil {
			by = []SubscriberLoss{}
		}
		v.SubscriberDropped = &jsonSubscriberDrop{Before: f.Position, Frames: f.Frames, Subscribers: by}
		if f.From < f.Position {
			from := f.From
			v.SubscriberDropped.From = &from
		}
	case FindingConflict:
		c := &jsonConflict{Position: f.Position, ChannelID: f.ChannelID}
		if f.Channel != "" {
			name := f.Channel
			c.Channel = &name
		}
		v.Conflict = c
	case FindingUnended:
		u := &jsonUnended{}
		if f.Frames > 0 {
			p := f.Position
			u.LastPosition = &p
		}
		v.Unended = u
	case FindingMore:
		v.More = &jsonMore{Count: f.Count}
	case FindingTrimmed:
		v.Trimmed = &jsonGap{From: f.Gap.From, To: f.Gap.To, Count: f.Gap.Count}
	case FindingTransport:
		v.Transport = f.Transport
	case FindingTrimShown:
		v.TrimShown = &jsonTrimShown{Before: f.Position, Frames: f.Frames}
	case FindingUncompared:
		v.Uncompared = &jsonUncompared{Copies: f.Frames}
	case FindingClockStep:
		c := f.ClockStep
		v.ClockStep = &c
	}
	return v
}

// Gaps and the Sinks of its inputs implement Sink.
var (
	_ segments.Sink = (*Gaps)(nil)
	_ segments.Sink = gapsInput{}
)

// channelName returns the name of channel id as a finding shows it
// (clipped), "" if it is undeclared.
func (st *gapStream) channelName(id frames.ChannelID) string {
	if d, ok := st.decl.find(id); ok {
		return clip(d.Name)
	}
	return ""
}

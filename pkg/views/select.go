package views

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// Selection is what a view shows of its inputs: the filters every view
// shares (ARCHITECTURE.md §5, "Shared filters"). The zero Selection selects
// everything. Within one kind of filter any entry may match (--node a
// --node b: either node); across kinds all must (--node a --content text).
//
// Stream filters (Nodes, Streams, Origins) hide a whole stream, its gaps
// and drops included. Channel filters (Channels, Contents) and Grep hide
// frames only: gaps and drops concern the whole stream and stay shown.
// Positions, After, Since and Until bound what is shown of each stream,
// losses included.
type Selection struct {
	// Nodes selects every life of these nodes (--node).
	Nodes []frames.NodeID
	// Streams selects these (node, life) streams (--stream NODE#LIFE).
	Streams []frames.StreamID
	// Origins selects streams by descriptor origin (--origin).
	Origins []frames.StreamOrigin
	// Channels selects channels by name (exact, or prefix for "name.*";
	// frames.ParseChannelPattern). Frames of a channel without a
	// descriptor match only when Channels and Contents are empty.
	Channels []frames.ChannelFilter
	// Contents selects channels by content class (--content).
	Contents []frames.ContentKind
	// Grep, if not nil, shows only lines whose rendered text matches: the
	// whole text line, joined across frames, or a record's compact JSON
	// (-g; see [CompileGrep] for smart case).
	Grep *regexp.Regexp
	// Positions, if not nil, bounds the positions shown (--positions A-B).
	Positions *PositionRange
	// After shows, of each stream it names, only positions after its entry
	// (ds log --after, ds tail --cursor-file): a cursor.
	After segments.Cursor
	// Since and Until, if not nil, bound the time of what is shown
	// (--since, --until): a frame's time is its stream's latest
	// datastream.clock reading at or before it, so a stream without clock
	// records shows nothing when either is set.
	Since, Until *TimeBound
}

// streamVisible is the decision of the stream filters for a stream.
func (s *Selection) streamVisible(d frames.StreamDescriptor) bool {
	if len(s.Nodes) > 0 && !slices.Contains(s.Nodes, d.Stream.Node) {
		return false
	}
	if len(s.Streams) > 0 && !slices.Contains(s.Streams, d.Stream) {
		return false
	}
	if len(s.Origins) > 0 && !slices.Contains(s.Origins, d.Origin) {
		return false
	}
	return true
}

// channelSelected is the decision of the channel filters for a channel;
// ok is false when the selection names no channel or content (the views'
// default then applies).
func (s *Selection) channelSelected(d frames.ChannelDescriptor) (selected, ok bool) {
	if len(s.Channels) == 0 && len(s.Contents) == 0 {
		return false, false
	}
	if len(s.Contents) > 0 && !slices.Contains(s.Contents, d.Content.Kind) {
		return false, true
	}
	if len(s.Channels) == 0 {
		return true, true
	}
	for _, f := range s.Channels {
		if f.Match(d) {
			return true, true
		}
	}
	return false, true
}

// timed reports whether the selection bounds time.
func (s *Selection) timed() bool { return s.Since != nil || s.Until != nil }

// PositionRange is an inclusive range of positions (--positions A-B; A-
// and -B leave one end open).
type PositionRange struct {
	From, To frames.Position
}

// ParsePositionRange parses "A-B", "A-", "-B" or "A" (one position).
func ParsePositionRange(s string) (PositionRange, error) {
	r := PositionRange{To: ^frames.Position(0)}
	lo, hi, dash := strings.Cut(s, "-")
	if !dash {
		hi = lo
	}
	if lo == "" && hi == "" {
		return r, fmt.Errorf("positions %q: want A-B, A- or -B", s)
	}
	if lo != "" {
		v, err := strconv.ParseUint(lo, 10, 64)
		if err != nil {
			return r, fmt.Errorf("positions %q: %q is not a position", s, lo)
		}
		r.From = frames.Position(v)
	}
	if hi != "" {
		v, err := strconv.ParseUint(hi, 10, 64)
		if err != nil {
			return r, fmt.Errorf("positions %q: %q is not a position", s, hi)
		}
		r.To = frames.Position(v)
	}
	if r.From > r.To {
		return r, fmt.Errorf("positions %q: the range is empty (%d > %d)", s, r.From, r.To)
	}
	return r, nil
}

// CompileGrep compiles a -g pattern with journalctl's smart case: the match
// ignores case unless the pattern holds an upper-case letter.
func CompileGrep(pattern string) (*regexp.Regexp, error) {
	upper := false
	for _, r := range pattern {
		if unicode.IsUpper(r) {
			upper = true
			break
		}
	}
	if !upper {
		pattern = "(?i)" + pattern
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		var se *syntax.Error
		if errors.As(err, &se) {
			return nil, fmt.Errorf("bad pattern %q: %s", se.Expr, se.Code)
		}
		return nil, err
	}
	return re, nil
}

// TimeBound is one end of a time range: an absolute time, or an offset
// from the start of the inputs (their earliest datastream.clock reading
// that the view sees; the merge of several inputs by time makes it the
// first one).
type TimeBound struct {
	// UnixNS is the absolute time, in nanoseconds since the Unix epoch,
	// when FromStart is false.
	UnixNS int64
	// FromStart makes the bound Offset after the start of the inputs.
	FromStart bool
	Offset    time.Duration
}

// ParseTimeBound parses a --since/--until value: "+30s" or "+1h2m" (after
// the start of the inputs), "-10m" (before now), "@1764584035.5" (Unix
// seconds), "now", "today", "yesterday", or a date and time in loc:
// RFC 3339 ("2026-12-01T10:13:55Z", "…+01:00"), "2026-12-01 10:13:55[.frac]",
// "2026-12-01 10:13", "2026-12-01", "10:13:55" or "10:13" (today).
func ParseTimeBound(s string, now time.Time, loc *time.Location) (TimeBound, error) {
	switch {
	case s == "":
		return TimeBound{}, errors.New("empty time")
	case s[0] == '+' || s[0] == '-':
		d, err := time.ParseDuration(s[1:])
		if err != nil || d < 0 {
			return TimeBound{}, fmt.Errorf("time %q: want a duration such as %c30s or %c1h5m", s, s[0], s[0])
		}
		if s[0] == '+' {
			return TimeBound{FromStart: true, Offset: d}, nil
		}
		return TimeBound{UnixNS: now.Add(-d).UnixNano()}, nil
	case s[0] == '@':
		f, err := strconv.ParseFloat(s[1:], 64)
		if err != nil || math.IsNaN(f) || math.Abs(f) > math.MaxInt64/1e9 {
			return TimeBound{}, fmt.Errorf("time %q: want @ and Unix seconds", s)
		}
		return TimeBound{UnixNS: int64(f * 1e9)}, nil
	}
	day := func(t time.Time) time.Time {
		y, m, d := t.In(loc).Date()
		return time.Date(y, m, d, 0, 0, 0, 0, loc)
	}
	switch s {
	case "now":
		return TimeBound{UnixNS: now.UnixNano()}, nil
	case "today":
		return TimeBound{UnixNS: day(now).UnixNano()}, nil
	case "yesterday":
		return TimeBound{UnixNS: day(now).AddDate(0, 0, -1).UnixNano()}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return TimeBound{UnixNS: t.UnixNano()}, nil
	}
	for _, layout := range []string{"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return TimeBound{UnixNS: t.UnixNano()}, nil
		}
	}
	for _, layout := range []string{"15:04:05.999999999", "15:04"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			d := day(now)
			t = time.Date(d.Year(), d.Month(), d.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), loc)
			return TimeBound{UnixNS: t.UnixNano()}, nil
		}
	}
	return TimeBound{}, fmt.Errorf("time %q: want +30s (after the start), -10m (before now), @UNIX, "+
		"2006-01-02[ 15:04[:05]], 15:04[:05], today, yesterday or RFC 3339", s)
}

// resolve returns the bound in Unix nanoseconds, given the start of the
// inputs (0: not known yet, and then ok is false for a FromStart bound).
func (b *TimeBound) resolve(start int64) (ns int64, ok bool) {
	if !b.FromStart {
		return b.UnixNS, true
	}
	if start == 0 {
		return 0, false
	}
	return start + int64(b.Offset), true
}

// SelectStreams returns a Sink that passes to sink only what concerns the
// streams that sel's stream filters (Nodes, Streams, Origins) select:
// segment headers, declarations, frames and ends of other streams are
// dropped; damage, which concerns an input, always passes. It lets a view
// without a printer (ds gaps, ds series, ds latest) take --node, --stream
// and --origin. A stream's origin is known from its segment header: a
// frame before any header of its stream passes when Origins is empty.
//
// Unmatched, called once the inputs are read, names the stream filters
// that matched no stream of the inputs ("--node n9"), as
// [Printer.Unmatched] does.
func SelectStreams(sink segments.Sink, sel Selection) *StreamSelector {
	return &StreamSelector{Sink: sink, sel: sel, shown: make(map[frames.StreamID]bool), origins: make(map[frames.StreamOrigin]bool)}
}

// StreamSelector is the Sink [SelectStreams] returns.
type StreamSelector struct {
	segments.Sink
	sel     Selection
	shown   map[frames.StreamID]bool
	origins map[frames.StreamOrigin]bool // of the headers read
}

// Unmatched returns the stream filters that matched no stream read.
func (s *StreamSelector) Unmatched() []string {
	var out []string
	for _, n := range s.sel.Nodes {
		seen := false
		for id := range s.shown {
			if id.Node == n {
				seen = true
				break
			}
		}
		if !seen {
			out = append(out, "--node "+string(n))
		}
	}
	for _, id := range s.sel.Streams {
		if _, ok := s.shown[id]; !ok {
			out = append(out, "--stream "+id.String())
		}
	}
	for _, o := range s.sel.Origins {
		if !s.origins[o] {
			out = append(out, "--origin "+o.String())
		}
	}
	return out
}

func (s *StreamSelector) visible(id frames.StreamID) bool {
	v, ok := s.shown[id]
	if !ok {
		v = len(s.sel.Origins) == 0 && s.sel.streamVisible(frames.StreamDescriptor{Stream: id})
		s.shown[id] = v
	}
	return v
}

func (s *StreamSelector) Header(h segments.SegmentHeader) {
	v := s.sel.streamVisible(h.Stream)
	s.shown[h.Stream.Stream] = v
	s.origins[h.Stream.Origin] = true
	if v {
		s.Sink.Header(h)
	}
}

func (s *StreamSelector) Channel(d frames.ChannelDescriptor) {
	if s.visible(d.Stream) {
		s.Sink.Channel(d)
	}
}

func (s *StreamSelector) Frame(id frames.StreamID, f frames.Frame) {
	if s.visible(id) {
		s.Sink.Frame(id, f)
	}
}

func (s *StreamSelector) Ended(id frames.StreamID) {
	if s.visible(id) {
		s.Sink.Ended(id)
	}
}

func (s *StreamSelector) Trimmed(id frames.StreamID, before frames.Position, store bool) {
	if s.visible(id) {
		s.Sink.Trimmed(id, before, store)
	}
}

// Idle passes the Idler call on, when sink has one.
func (s *StreamSelector) Idle(quiet bool) {
	if i, ok := s.Sink.(segments.Idler); ok {
		i.Idle(quiet)
	}
}

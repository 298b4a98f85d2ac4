package wireformat

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// MaxSummarySize is the largest SegmentSummary body, in bytes (1 MiB), that
// writers produce and that a reader looking for a summary from the end of a
// capture reads back ([FindSummary]). A writer leaves out kept frames, then
// per-channel counts, rather than exceed it.
const MaxSummarySize = 1 << 20

// Summary is the body of a SegmentSummary record (type 05, ds-format(5)
// "SegmentSummary"): what a segment holds, written as its last record so
// that a reader can walk a capture from its end, reading headers and
// summaries only. It is JSON, so it never needs escaping (JSON text holds
// no control character, and the magic holds three).
//
// A summary is never trusted over the frames it describes: [Summary.Check]
// checks it against itself and the reader checks it against its segment's
// header; one that fails sends the reader back to the frames.
type Summary struct {
	// SegmentID is the segment's id, as 16 lower-case hex digits: it gives
	// the CRC seed of the summary record itself, which is how a reader
	// coming from the end of the input checks it before it knows the header.
	SegmentID string `json:"segment_id"`
	// Seq is the segment's sequence number, as in its header.
	Seq uint64 `json:"seq"`
	// Length is the number of bytes from the first byte of the segment's
	// header to the first byte of this record: the header is at the
	// summary's offset minus Length.
	Length int64 `json:"length"`
	// Frames and Bytes count the segment's frames and their payload bytes.
	Frames uint64 `json:"frames"`
	Bytes  uint64 `json:"bytes"`
	// First and Last are the lowest and highest position of those frames;
	// nil when there are none.
	First *frames.Position `json:"first"`
	Last  *frames.Position `json:"last"`
	// Ordered is set when the frames are in strictly increasing position
	// order, as a writer assigns them. Frames == Last−First+1 and Ordered
	// then say that the segment holds every position from First to Last
	// exactly once.
	Ordered bool `json:"ordered"`
	// Ended is set when the segment holds a StreamEnded record.
	Ended bool `json:"ended"`
	// Channels counts frames per channel, by channel id; nil when left out
	// (see MaxSummarySize; a reader then reads the frames).
	Channels []ChannelCount `json:"channels"`
	// Kept are copies of frames the writer's producer asked to keep (for
	// example a stream's clock readings, health records and exit records),
	// in position order, so that a summary reader can tell what they say
	// without reading the frames.
	Kept []KeptFrame `json:"kept"`
	// KeptAll is set when every frame the producer asked for is in Kept;
	// a writer that ran out of room (64 KiB or 256 frames of a segment)
	// keeps the first and last of each channel only.
	KeptAll bool `json:"kept_all"`
	// Size is the length of the JSON body in bytes, as 10 decimal digits:
	// it is the body's last field, so that its last 16 bytes are always
	// "size":"NNNNNNNNNN"} — from which a reader coming from the end finds
	// where the record starts. [AppendSummary] sets it.
	Size string `json:"size"`
}

// summaryTail is the length of the end of a summary record that gives
// its size: `"NNNNNNNNNN"}` and the CRC.
const summaryTail = 13 + 4

// SummaryRecordSize reads the size field at the end of b, which ends
// where a SegmentSummary record may end, and returns the length of that
// record, tag to CRC, or false when b does not end like one.
func SummaryRecordSize(b []byte) (int, bool) {
	if len(b) < summaryTail {
		return 0, false
	}
	t := b[len(b)-summaryTail:]
	if t[0] != '"' || t[11] != '"' || t[12] != '}' {
		return 0, false
	}
	n := 0
	for _, c := range t[1:11] {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if n > MaxSummarySize {
		return 0, false
	}
	return n + RecordOverhead, true
}

// ChannelCount is the count of one channel's frames in a [Summary].
type ChannelCount struct {
	ID     frames.ChannelID `json:"id"`
	Frames uint64           `json:"frames"`
	Bytes  uint64           `json:"bytes"`
	First  frames.Position  `json:"first"`
	Last   frames.Position  `json:"last"`
	// Keep says what Kept holds of the channel: 0 nothing, [KeepEnds] its
	// first and last frame, [KeepFrames] those and every frame the
	// producer asked to keep (when the summary's KeptAll is set). A reader
	// that needs a channel's frames uses the summary only if it says so.
	Keep uint8 `json:"keep,omitempty"`
}

// Values of [ChannelCount.Keep].
const (
	KeepEnds   = 1
	KeepFrames = 2
)

// KeptFrame is a copy of one frame in a [Summary]. Payload is base64 in
// the JSON body.
type KeptFrame struct {
	Channel  frames.ChannelID `json:"channel"`
	Position frames.Position  `json:"position"`
	Payload  []byte           `json:"payload"`
}

// ID returns the segment id the summary names, or an error if it is not
// 16 hex digits.
func (s *Summary) ID() ([8]byte, error) {
	var id [8]byte
	if len(s.SegmentID) != 16 {
		return id, fmt.Errorf("%w: summary segment id %q", ErrBadBody, s.SegmentID)
	}
	if _, err := hex.Decode(id[:], []byte(s.SegmentID)); err != nil {
		return id, fmt.Errorf("%w: summary segment id %q", ErrBadBody, s.SegmentID)
	}
	return id, nil
}

// Check checks that the summary agrees with itself: positions in order,
// per-channel counts that add up to the totals and lie within First–Last,
// kept frames of counted channels within the range, a positive Length. It
// returns an error wrapping [ErrBadBody] that says what disagrees.
func (s *Summary) Check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: segment summary: %s", ErrBadBody, fmt.Sprintf(format, args...))
	}
	if _, err := s.ID(); err != nil {
		return err
	}
	if s.Length <= 0 {
		return bad("length %d", s.Length)
	}
	if (s.First == nil) != (s.Last == nil) || (s.First == nil) != (s.Frames == 0) {
		return bad("%d frames but first/last %v/%v", s.Frames, s.First, s.Last)
	}
	if s.First != nil {
		if *s.First > *s.Last {
			return bad("first position %d after last %d", *s.First, *s.Last)
		}
		if s.Ordered && s.Frames-1 > uint64(*s.Last-*s.First) {
			return bad("%d ordered frames between positions %d and %d", s.Frames, *s.First, *s.Last)
		}
	}
	if s.Channels != nil {
		var n, b uint64
		for i, c := range s.Channels {
			if i > 0 && c.ID <= s.Channels[i-1].ID {
				return bad("channels not in id order")
			}
			if c.Frames == 0 || c.First > c.Last || s.First == nil || c.First < *s.First || c.Last > *s.Last || c.Keep > KeepFrames {
				return bad("channel %d: %d frames at %d–%d", c.ID, c.Frames, c.First, c.Last)
			}
			n += c.Frames
			b += c.Bytes
		}
		if n != s.Frames || b != s.Bytes {
			return bad("channels count %d frames, %d bytes; totals %d, %d", n, b, s.Frames, s.Bytes)
		}
	}
	for i, k := range s.Kept {
		if s.First == nil || k.Position < *s.First || k.Position > *s.Last || i > 0 && k.Position <= s.Kept[i-1].Position {
			return bad("kept frame at position %d", k.Position)
		}
	}
	return nil
}

// AppendSummary appends s as a SegmentSummary record of the segment whose
// id s.SegmentID names. It returns an error wrapping [ErrTooLarge] if the
// body would exceed [MaxSummarySize].
func AppendSummary(dst []byte, s *Summary) ([]byte, error) {
	id, err := s.ID()
	if err != nil {
		return dst, err
	}
	s.Size = "0000000000"
	body, err := json.Marshal(s)
	if err != nil {
		return dst, fmt.Errorf("wireformat: encode segment summary: %w", err)
	}
	s.Size = fmt.Sprintf("%010d", len(body))
	copy(body[len(body)-13:], `"`+s.Size+`"`)
	if len(body) > MaxSummarySize {
		return dst, fmt.Errorf("%w: segment summary of %d bytes (at most %d)", ErrTooLarge, len(body), MaxSummarySize)
	}
	n := len(dst)
	dst, err = AppendRecord(dst, Seed(id), Record{Type: TypeSummary, Body: body})
	if err == nil && dst[n]&EscapedFlag != 0 {
		// Cannot happen (see FindSummary); a reader would not find it.
		return dst[:n], fmt.Errorf("wireformat: segment summary would be escaped")
	}
	return dst, err
}

// ParseSummaryBody decodes the body of a SegmentSummary record. It does
// not [Summary.Check] it.
func ParseSummaryBody(body []byte) (Summary, error) {
	var s Summary
	if err := json.Unmarshal(body, &s); err != nil {
		return Summary{}, fmt.Errorf("%w: segment summary: %w", ErrBadBody, err)
	}
	return s, nil
}

// FindSummary looks for a SegmentSummary record that ends exactly at the
// end of b, as a reader walking a capture from its end does with the bytes
// before a segment boundary (or the end of the input). It returns the
// summary and the offset in b where its record starts, and ok, when a
// record there has a SegmentSummary tag, a length that ends it at len(b),
// a body that decodes and passes [Summary.Check], and a CRC that holds
// under the seed of the segment id the body names. It finds where the
// record starts from the size field at its end ([SummaryRecordSize]):
// give it at least that many bytes.
func FindSummary(b []byte) (s Summary, start int, ok bool) {
	// The record is tag, u32 length L (byte 4 always 0), L bytes, CRC: its
	// size field says where it starts. It is never escaped: its JSON
	// holds no control character, so no magic can form in it, nor across
	// its ends (the body ends with "} and starts with {).
	n, ok := SummaryRecordSize(b)
	if !ok || n > len(b) {
		return Summary{}, 0, false
	}
	end, i := len(b), len(b)-n
	if b[i] != byte(TypeSummary) || int(binary.LittleEndian.Uint32(b[i+1:])) != n-RecordOverhead {
		return Summary{}, 0, false
	}
	sum, err := ParseSummaryBody(b[i+5 : end-4])
	if err != nil || sum.Check() != nil {
		return Summary{}, 0, false
	}
	id, _ := sum.ID() // checked by Check
	if crc32.Update(Seed(id), castagnoli, b[i:end-4]) != binary.LittleEndian.Uint32(b[end-4:]) {
		return Summary{}, 0, false
	}
	return sum, i, true
}

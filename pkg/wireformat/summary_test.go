package wireformat

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ds-telemetry/ds/pkg/frames"
)

func pos(p frames.Position) *frames.Position { return &p }

func testSummary() Summary {
	return Summary{
		SegmentID: "0123456789abcdef", Seq: 3, Length: 4096, Frames: 5, Bytes: 120,
		First: pos(10), Last: pos(14), Ordered: true, Ended: true,
		Channels: []ChannelCount{{ID: 1, Frames: 1, Bytes: 20, First: 10, Last: 10}, {ID: 2, Frames: 4, Bytes: 100, First: 11, Last: 14}},
		Kept:     []KeptFrame{{Channel: 1, Position: 10, Payload: []byte(`{"unix_ns":1}`)}},
		KeptAll:  true,
	}
}

func TestSummaryRoundTrip(t *testing.T) {
	s := testSummary()
	rec, err := AppendSummary([]byte("before"), &s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(rec[:len(rec)-4]), `"size":"`+s.Size+`"}`) || len(s.Size) != 10 {
		t.Fatalf("record ends %q", rec[len(rec)-30:])
	}
	n, ok := SummaryRecordSize(rec)
	if !ok || n != len(rec)-len("before") {
		t.Fatalf("SummaryRecordSize = %d, %v; record is %d bytes", n, ok, len(rec)-len("before"))
	}
	got, start, ok := FindSummary(rec)
	if !ok || start != len("before") {
		t.Fatalf("FindSummary: %v at %d", ok, start)
	}
	if diff := cmp.Diff(s, got); diff != "" {
		t.Errorf("(-written +found)\n%s", diff)
	}
	// The record is an ordinary record of its segment: ParseRecord reads it.
	id, _ := hex.DecodeString(s.SegmentID)
	r, _, err := ParseRecord(rec[len("before"):], Seed([8]byte(id)), 0)
	if err != nil || r.Type != TypeSummary {
		t.Fatalf("ParseRecord: %v %v", r.Type, err)
	}
	// Any byte flipped: not found, never a wrong summary.
	for i := len("before"); i < len(rec); i++ {
		bad := bytes.Clone(rec)
		bad[i] ^= 0x01
		if _, _, ok := FindSummary(bad); ok {
			t.Errorf("byte %d flipped: still found", i)
		}
	}
	// Cut anywhere: not found.
	for i := len("before"); i < len(rec); i++ {
		if _, _, ok := FindSummary(rec[:i]); ok {
			t.Errorf("cut at %d: found", i)
		}
	}
}

func TestSummaryCheck(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Summary)
		ok   bool
	}{
		{"as written", func(*Summary) {}, true},
		{"empty segment", func(s *Summary) { *s = Summary{SegmentID: s.SegmentID, Length: 100, Channels: []ChannelCount{}} }, true},
		{"bad id", func(s *Summary) { s.SegmentID = "xyz" }, false},
		{"no length", func(s *Summary) { s.Length = 0 }, false},
		{"first after last", func(s *Summary) { s.First = pos(20) }, false},
		{"frames without positions", func(s *Summary) { s.First, s.Last = nil, nil }, false},
		{"more ordered frames than positions", func(s *Summary) { s.Last = pos(12) }, false},
		{"channels do not add up", func(s *Summary) { s.Frames = 6 }, false},
		{"channel bytes do not add up", func(s *Summary) { s.Channels[1].Bytes++ }, false},
		{"channel outside the range", func(s *Summary) { s.Channels[1].Last = 15 }, false},
		{"channels out of order", func(s *Summary) { s.Channels[0], s.Channels[1] = s.Channels[1], s.Channels[0] }, false},
		{"kept frame outside the range", func(s *Summary) { s.Kept[0].Position = 9 }, false},
		{"channels left out", func(s *Summary) { s.Channels = nil }, true},
	}
	for _, tt := range tests {
		s := testSummary()
		tt.edit(&s)
		if err := s.Check(); (err == nil) != tt.ok {
			t.Errorf("%s: Check() = %v", tt.name, err)
		}
	}
}

func FuzzFindSummary(f *testing.F) {
	s := testSummary()
	rec, _ := AppendSummary(nil, &s)
	f.Add(rec)
	f.Add(append([]byte("xx"), rec...))
	f.Add([]byte(`"0000000010"}abcd`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, start, ok := FindSummary(b)
		if !ok {
			return
		}
		if start < 0 || start >= len(b) || got.Check() != nil {
			t.Fatalf("found at %d: %+v", start, got)
		}
		id, _ := got.ID()
		if _, n, err := ParseRecord(b[start:], Seed(id), MaxRecordSize); err != nil || start+n != len(b) {
			t.Fatalf("found summary does not parse: %v", err)
		}
	})
}

package views

import (
	"fmt"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// TestInfoChannelIDs: whatever order and numbering a stream's channels
// have (1, 2, 3, … as writers number them, found by id without a map;
// with gaps, out of order or repeated, found through the map or a scan),
// each channel's frames are counted on it and listed by id.
func TestInfoChannelIDs(t *testing.T) {
	s := frames.StreamID{Node: "n1", Life: 1}
	seq := func(from, to int) (ids []frames.ChannelID) {
		for i := from; i <= to; i++ {
			ids = append(ids, frames.ChannelID(i))
		}
		return ids
	}
	cases := map[string][]frames.ChannelID{
		"dense, few":             seq(1, 5),
		"dense, many":            seq(1, 100),
		"dense then a gap":       append(seq(1, 40), 45, 41),
		"from 2":                 seq(2, 30),
		"reversed":               {30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1},
		"a gap early, few":       {1, 3, 2},
		"declared twice (dense)": append(seq(1, 20), 3, 20),
	}
	for name, ids := range cases {
		t.Run(name, func(t *testing.T) {
			in := NewInfo(0)
			var cat []frames.ChannelDescriptor
			for _, id := range ids {
				cat = append(cat, frames.ChannelDescriptor{Stream: s, ID: id, Name: fmt.Sprintf("c%d", id), Content: frames.TextStream()})
			}
			in.Header(segments.SegmentHeader{Stream: frames.StreamDescriptor{Stream: s}, Channels: cat})
			want := map[frames.ChannelID]uint64{}
			pos := frames.Position(0)
			for _, id := range ids {
				n := uint64(id%3) + 1
				if _, seen := want[id]; seen {
					continue
				}
				want[id] = n
				for range n {
					in.Frame(s, frames.Frame{Channel: id, Position: pos, Payload: []byte("x\n")})
					pos++
				}
			}
			// A frame on a channel never declared.
			in.Frame(s, frames.Frame{Channel: 1000, Position: pos, Payload: []byte("y\n")})
			want[1000] = 1
			_, streams := in.Summary()
			if len(streams) != 1 {
				t.Fatalf("%d streams", len(streams))
			}
			got := streams[0].Channels
			if len(got) != len(want) {
				t.Fatalf("%d channels listed, want %d: %+v", len(got), len(want), got)
			}
			for i, c := range got {
				if i > 0 && got[i-1].ID >= c.ID {
					t.Fatalf("channels not listed by id: %d after %d", c.ID, got[i-1].ID)
				}
				wantName := fmt.Sprintf("c%d", c.ID)
				if c.ID == 1000 {
					wantName = ""
				}
				if c.Frames != want[c.ID] || c.Name != wantName {
					t.Errorf("channel %d: %d frames, name %q; want %d, %q", c.ID, c.Frames, c.Name, want[c.ID], wantName)
				}
			}
		})
	}
}

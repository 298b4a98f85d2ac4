package views

import (
	"cmp"
	"slices"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// declaredChannels is the set of one stream's declared channels, the
// first descriptor of each id: most often one header's catalog, held as
// the reader decoded it (a sorted slice, about 70 bytes a channel), and
// the few channels declared after it in a map. A view's per-channel state
// is made only for channels that have frames, so that a header of 140 000
// channels, of which a few write, costs its descriptors once.
type declaredChannels struct {
	base []frames.ChannelDescriptor // ids strictly increasing; never changed
	more map[frames.ChannelID]frames.ChannelDescriptor
}

// adopt takes the catalog ds of a segment header as the whole set when
// nothing is declared yet and ds is sorted by id without repeats (as ds's
// writers write it), and reports whether it did; the caller must not
// change ds after. Otherwise the caller adds ds's descriptors one by one.
func (s *declaredChannels) adopt(ds []frames.ChannelDescriptor) bool {
	if s.base != nil || s.more != nil || len(ds) == 0 {
		return false
	}
	for i := 1; i < len(ds); i++ {
		if ds[i-1].ID >= ds[i].ID {
			return false
		}
	}
	s.base = ds
	return true
}

// add adds d unless a channel of its id is declared, and reports whether
// it did (the first declaration of an id wins).
func (s *declaredChannels) add(d frames.ChannelDescriptor) bool {
	if _, ok := s.find(d.ID); ok {
		return false
	}
	if s.more == nil {
		s.more = make(map[frames.ChannelID]frames.ChannelDescriptor)
	}
	s.more[d.ID] = d
	return true
}

// find returns the descriptor of channel id, if it is declared.
func (s *declaredChannels) find(id frames.ChannelID) (frames.ChannelDescriptor, bool) {
	if i, ok := slices.BinarySearchFunc(s.base, id, func(d frames.ChannelDescriptor, id frames.ChannelID) int {
		return cmp.Compare(d.ID, id)
	}); ok {
		return s.base[i], true
	}
	d, ok := s.more[id]
	return d, ok
}

// hasName reports whether a channel of that name is declared (a scan of
// every declaration: for what is asked once a channel).
func (s *declaredChannels) hasName(name string) bool {
	for i := range s.base {
		if s.base[i].Name == name {
			return true
		}
	}
	for _, d := range s.more {
		if d.Name == name {
			return true
		}
	}
	return false
}

package sources

import (
	"fmt"
	"io"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// A Consumer is one run of a named consumer (ds tail --consumer NAME): the
// stores it reads, each with its own saved cursor of NAME
// (segments.Store.Consumer). It is not safe for concurrent use.
type Consumer struct {
	name   string
	stores []*Store
	// raise holds the streams whose saved cursor was below their trim
	// horizon H, with H-1: what was trimmed counts as consumed.
	raise     segments.Cursor
	lastSaved string // the text of the last cursor saved, to save a change only
	warn      io.Writer
	held      map[frames.StreamID]bool // streams whose cursor a gap held back (said once)
}

// OpenConsumer opens the stores at dirs (each must be one: see [IsStore])
// and returns consumer name of them, and the cursor it resumes from: per
// stream, the position saved (the lowest, for a stream in several stores;
// none for a stream name never read, which is then read from its first
// kept frame). A cursor below a stream's trim horizon H resumes at H, and
// that is said on warn ("ds: consumer NAME: NODE#LIFE: positions below H
// were trimmed; resuming at H"). Later notes of the consumer go to warn
// too. An error names the store.
func (s *Set) OpenConsumer(name string, dirs []string, warn io.Writer) (*Consumer, segments.Cursor, error) {
	c := &Consumer{name: name, raise: segments.Cursor{}, warn: warn}
	start := segments.Cursor{}
	for _, dir := range dirs {
		src, err := s.OpenStore(dir)
		if err != nil {
			return nil, nil, err
		}
		c.stores = append(c.stores, src)
		saved, _, err := src.st.Consumer(name)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: consumer %s: %w", src.dir, name, err)
		}
		streams, err := src.Streams(0)
		if err != nil {
			return nil, nil, err
		}
		before := map[frames.StreamID]frames.Position{}
		for _, ss := range streams {
			before[ss.Desc.Stream] = ss.Before
		}
		for id, pos := range saved {
			if old, ok := start[id]; ok && old <= pos {
				continue
			}
			start[id] = pos
			if h := before[id]; h > 0 && pos+1 < h {
				if _, said := c.raise[id]; !said {
					fmt.Fprintf(warn, "ds: consumer %s: %s: positions below %d were trimmed; resuming at %d\n", name, id, h, h)
				}
				c.raise[id] = h - 1
			}
		}
	}
	return c, start, nil
}

// Save saves cur as the consumer's cursor in each store, for the streams
// that store holds (segments.Store.SaveConsumer keeps the later of the
// saved position and the given one, per stream), unless it is what was
// saved last. An error names the store.
func (c *Consumer) Save(cur segments.Cursor) error {
	return c.SaveBefore(cur, nil)
}

// SaveBefore is [Consumer.Save] with the cursor of each stream that had a
// gap kept before it (holes: the gap's first position, as a view's
// printer reports them): the gap may be filled later (a late copy
// ingested), and a consumer must never skip what arrives (at least once).
// What follows the gap is shown again at the next read, until the gap is
// filled or trimmed; the first time, the consumer's warn writer says so.
func (c *Consumer) SaveBefore(cur, holes segments.Cursor) error {
	all := segments.Cursor{}
	for id, pos := range cur {
		if h, ok := holes[id]; ok && pos >= h {
			if c.held == nil {
				c.held = map[frames.StreamID]bool{}
			}
			if !c.held[id] && c.warn != nil {
				c.held[id] = true
				fmt.Fprintf(c.warn, "ds: consumer %s: %s: position %d is missing, so its cursor stays at %d: what follows is read again until it arrives or is trimmed (ds trim)\n", c.name, id, h, h-1)
			}
			pos = h - 1
		}
		all[id] = pos
	}
	all.Merge(c.raise)
	text := all.String()
	if text == c.lastSaved {
		return nil
	}
	c.lastSaved = text
	for _, src := range c.stores {
		streams, err := src.Streams(0)
		if err != nil {
			return err
		}
		sub := map[frames.StreamID]frames.Position{}
		for _, ss := range streams {
			if pos, ok := all[ss.Desc.Stream]; ok {
				sub[ss.Desc.Stream] = pos
			}
		}
		if len(sub) == 0 {
			continue
		}
		if err := src.st.SaveConsumer(c.name, sub); err != nil {
			return fmt.Errorf("%s: saving consumer %s: %w", src.dir, c.name, err)
		}
	}
	return nil
}

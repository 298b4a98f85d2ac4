package segments

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// storeConsumerJSON is a consumer file: the consumer's exact name and its
// cursor, per stream the last position consumed, sorted by stream.
type storeConsumerJSON struct {
	Version int                   `json:"version"`
	Name    string                `json:"name"`
	Cursor  []storeConsumerCursor `json:"cursor"`
}

type storeConsumerCursor struct {
	Stream   frames.StreamID `json:"stream"`
	Position frames.Position `json:"position"`
}

// parseStoreConsumer decodes a consumer file. Errors wrap [ErrStoreFormat].
func parseStoreConsumer(b []byte) (*storeConsumerJSON, error) {
	var c storeConsumerJSON
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStoreFormat, err)
	}
	if c.Version == 0 {
		c.Version = 1
	}
	if c.Version != 1 {
		return nil, fmt.Errorf("%w: consumer file version %d (this ds reads version 1)", ErrStoreFormat, c.Version)
	}
	if c.Name == "" {
		return nil, fmt.Errorf("%w: consumer file without a name", ErrStoreFormat)
	}
	return &c, nil
}

func (s *Store) consumerPath(name string) string {
	return filepath.Join(s.dir, storeConsumers, storeConsumerFile(name))
}

// checkConsumerName refuses the empty name (ARCHITECTURE.md case 6.2: a key must
// be non-empty, at every entry point).
func checkConsumerName(name string) error {
	if name == "" {
		return errors.New("segments: store: a consumer name must not be empty")
	}
	return nil
}

// readConsumer reads consumer name's file: nil when it has none.
func (s *Store) readConsumer(name string) (*storeConsumerJSON, error) {
	path := s.consumerPath(name)
	b, err := storeReadSmall(path, storeMaxMetaSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("segments: store: %w", err)
	}
	c, err := parseStoreConsumer(b)
	if err == nil && c.Name != name {
		err = fmt.Errorf("%w: the file of consumer %q names %q", ErrStoreFormat, name, c.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return c, nil
}

// Consumer returns the cursor saved for consumer name: per stream, the
// last position it consumed. found is false, with no error, for a
// consumer that never saved one (it starts at the oldest kept frame,
// ARCHITECTURE.md case 6.4). The map is the caller's. It reads without the lock.
func (s *Store) Consumer(name string) (cur map[frames.StreamID]frames.Position, found bool, err error) {
	if err := checkConsumerName(name); err != nil {
		return nil, false, err
	}
	c, err := s.readConsumer(name)
	if err != nil || c == nil {
		return nil, false, err
	}
	cur = make(map[frames.StreamID]frames.Position, len(c.Cursor))
	for _, e := range c.Cursor {
		cur[e.Stream] = max(cur[e.Stream], e.Position)
	}
	return cur, true, nil
}

// SaveConsumer saves cur as consumer name's cursor, monotonically
// (ARCHITECTURE.md case 6.4): per stream the saved position becomes the larger of
// the one saved and the one given, so a save below the saved cursor is a
// silent no-op, and streams not in cur keep theirs. It writes the
// consumer's file atomically (temporary file, sync, rename, directory
// sync) under the store's lock, so concurrent saves compose. An empty name
// is an error.
func (s *Store) SaveConsumer(name string, cur map[frames.StreamID]frames.Position) error {
	if err := checkConsumerName(name); err != nil {
		return err
	}
	if err := s.lock(); err != nil {
		return err
	}
	defer s.unlock()
	old, err := s.readConsumer(name)
	if err != nil {
		return err
	}
	merged := make(map[frames.StreamID]frames.Position)
	if old != nil {
		for _, e := range old.Cursor {
			merged[e.Stream] = max(merged[e.Stream], e.Position)
		}
	}
	changed := old == nil
	for id, p := range cur {
		if q, ok := merged[id]; !ok || p > q {
			merged[id], changed = p, true
		}
	}
	if !changed {
		return nil
	}
	c := storeConsumerJSON{Version: 1, Name: name, Cursor: []storeConsumerCursor{}}
	for id, p := range merged {
		c.Cursor = append(c.Cursor, storeConsumerCursor{id, p})
	}
	slices.SortFunc(c.Cursor, func(a, b storeConsumerCursor) int { return a.Stream.Compare(b.Stream) })
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("segments: store: encode consumer %q: %w", name, err)
	}
	os.Mkdir(filepath.Join(s.dir, storeConsumers), 0o755)
	return s.writeFileAtomic(s.consumerPath(name), append(b, '\n'))
}

// Consumers returns the names of the consumers with a saved cursor,
// sorted. A consumer file that does not read is an error naming it.
func (s *Store) Consumers() ([]string, error) {
	dir := filepath.Join(s.dir, storeConsumers)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("segments: store: %w", err)
	}
	var names []string
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if e.Type()&fs.ModeSymlink != 0 {
			// A consumer ds trim --respect-consumers did not see would be
			// passed: a link is refused, not skipped.
			return nil, fmt.Errorf("%w: %s (ds never follows a link inside a store; remove it or copy what it points to)", ErrStoreLink, path)
		}
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := storeReadSmall(path, storeMaxMetaSize)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("segments: store: %w", err)
		}
		c, err := parseStoreConsumer(b)
		if err != nil {
			return nil, fmt.Errorf("%w (in %s)", err, path)
		}
		names = append(names, c.Name)
	}
	slices.Sort(names)
	return names, nil
}

package segments

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// TrimReport is what a trim did to one stream (or would do, from
// [Store.PlanTrim] and [Store.PlanTrimBytes]).
type TrimReport struct {
	Stream frames.StreamID
	// Before is the stream's trim horizon after the trim: positions below
	// it are trimmed. A trim never lowers it.
	Before frames.Position
	Frames uint64 // stored frames newly trimmed (below Before, not below the old horizon)
	Files  int    // chunk files deleted
}

// Trim trims stream id to the horizon before (ARCHITECTURE.md case 6.5; the
// seed's trim_to(before−1)): it raises the stream's recorded horizon to
// before, atomically, and deletes every chunk whose frames are all below
// it. A chunk that straddles the horizon stays, and [Store.OpenStream]'s
// Trimmed record makes readers hide its frames below. Positions are never
// renumbered and nothing is woken. It never lowers a horizon: a before at
// or below the current one changes nothing and reports 0 frames, as a
// horizon below every frame does (trimming is idempotent). It takes the
// store's lock. Errors: one wrapping [ErrNoStream] for a stream the store
// does not hold; I/O errors (the horizon, once written, stays).
func (s *Store) Trim(id frames.StreamID, before frames.Position) (TrimReport, error) {
	if err := s.lock(); err != nil {
		return TrimReport{}, err
	}
	defer s.unlock()
	return s.trimLocked(id, before, false)
}

// PlanTrim returns what [Store.Trim] would do, and does nothing. It does
// not take the lock.
func (s *Store) PlanTrim(id frames.StreamID, before frames.Position) (TrimReport, error) {
	return s.trimLocked(id, before, true)
}

// trimLocked trims (or, with dry, plans the trim of) one stream.
func (s *Store) trimLocked(id frames.StreamID, before frames.Position, dry bool) (TrimReport, error) {
	dir := s.streamDir(id)
	st, err := loadStoredStream(dir, nil)
	if errors.Is(err, fs.ErrNotExist) {
		return TrimReport{}, fmt.Errorf("%w: %s (in %s)", ErrNoStream, id, s.dir)
	}
	if err != nil {
		return TrimReport{}, err
	}
	old := st.horizon
	rep := TrimReport{Stream: id, Before: max(old, before)}
	if before <= old {
		return rep, nil
	}
	// Count the stored frames in [old, before); note the chunks to delete
	// and those that will straddle the new horizon.
	var doomed []storeChunk
	straddle := map[string]storeChunkMeta{}
	for _, c := range st.chunks {
		if c.empty || c.first >= before {
			continue
		}
		if c.last < old {
			doomed = append(doomed, c) // left by a trim that died
			continue
		}
		cm := st.index[c.name]
		if c.first >= old && c.last < before {
			rep.Frames += cm.Frames
		} else {
			var below, newly uint64 // frames below before; of those, at or above old
			err := storeReadChunk(st.chunkPath(c), func(e *Entry) {
				if e.Kind == EntryFrame && e.Frame.Position < before {
					below++
					if e.Frame.Position >= old {
						newly++
					}
				}
			})
			if err != nil {
				return rep, err
			}
			rep.Frames += newly
			if c.last >= before {
				cm.Horizon, cm.Below = before, below
				straddle[c.name] = cm
			}
		}
		if c.last < before {
			doomed = append(doomed, c)
		}
	}
	rep.Files = len(doomed)
	if dry {
		return rep, nil
	}
	if err := s.keepEnd(st, doomed); err != nil {
		return rep, err
	}
	if err := s.writeFileAtomic(filepath.Join(dir, streamHorizonFile), []byte(strconv.FormatUint(uint64(before), 10)+"\n")); err != nil {
		return rep, err
	}
	st.horizon = before
	for _, c := range doomed {
		if err := os.Remove(st.chunkPath(c)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return rep, fmt.Errorf("segments: store: trim %s: %w", id, err)
		}
		delete(st.index, c.name)
	}
	storeSyncDir(filepath.Join(dir, streamChunks))
	st.chunks = slices.DeleteFunc(st.chunks, func(c storeChunk) bool { return !c.empty && c.last < before })
	for name, cm := range straddle {
		st.index[name] = cm
	}
	if err := s.saveMeta(st); err != nil {
		return rep, err
	}
	return rep, nil
}

// keepEnd writes an end chunk (end-R.dss: the stream's StreamEnded record
// alone) when the chunk that holds the stream's end is among doomed and
// no other chunk holds it, so that a stream trimmed whole still reads as
// ended. It is installed before anything is deleted.
func (s *Store) keepEnd(st *storedStream, doomed []storeChunk) error {
	lost := false
	for _, c := range doomed {
		lost = lost || st.index[c.name].Ended
	}
	if !lost {
		return nil
	}
	for _, c := range st.chunks {
		if st.index[c.name].Ended && !slices.ContainsFunc(doomed, func(d storeChunk) bool { return d.name == c.name }) {
			return nil // another copy of the end stays
		}
	}
	cat, err := storeReadCatalog(st.dir)
	if err != nil {
		return err
	}
	pc, err := s.writeChunk(st, cat.Descriptors(st.meta.Descriptor.Stream), nil, true)
	if err != nil {
		return err
	}
	defer pc.discard()
	if err := pc.tmp.Sync(); err != nil {
		return fmt.Errorf("segments: store: %w", err)
	}
	if err := pc.tmp.Close(); err != nil {
		return fmt.Errorf("segments: store: %w", err)
	}
	chunks := filepath.Join(st.dir, streamChunks)
	if err := os.Rename(pc.tmp.Name(), filepath.Join(chunks, pc.cf.name)); err != nil {
		return fmt.Errorf("segments: store: %w", err)
	}
	pc.tmp = nil
	storeSyncDir(chunks)
	st.chunks = append(st.chunks, pc.cf)
	st.index[pc.cf.name] = storeChunkMeta{Name: pc.cf.name, Ended: true}
	st.meta.Ended = true
	return nil
}

// TrimBytes trims the store until its chunk files take at most keep
// bytes: it deletes whole chunks, the lowest positions of each stream
// first (its horizon rising to one past the deleted chunk's last
// position, which deletes every chunk below too), taking across streams
// the chunk written longest ago (by modification time) first. It never
// deletes the newest chunk of a stream that has not ended (its writer may
// still be adding to it), as journalctl --vacuum-size removes archived
// journal files only, never active ones: the store may then stay above
// keep. Chunks holding no frame (a stream's end alone) are never deleted
// either. It returns a report for each stream it trimmed, sorted by
// stream. It takes the store's lock.
func (s *Store) TrimBytes(keep int64) ([]TrimReport, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.unlock()
	plan, _, err := s.planBytes(keep)
	if err != nil {
		return nil, err
	}
	var out []TrimReport
	for _, p := range plan {
		rep, err := s.trimLocked(p.Stream, p.Before, false)
		if err != nil {
			return out, err
		}
		out = append(out, rep)
	}
	return out, nil
}

// PlanTrimBytes returns what [Store.TrimBytes] would do, with the bytes
// the store's chunk files would then take (TrimPlan.Bytes), and does
// nothing. It does not take the lock.
func (s *Store) PlanTrimBytes(keep int64) (TrimPlan, error) {
	plan, left, err := s.planBytes(keep)
	if err != nil {
		return TrimPlan{}, err
	}
	out := TrimPlan{Bytes: left}
	for _, p := range plan {
		rep, err := s.trimLocked(p.Stream, p.Before, true)
		if err != nil {
			return TrimPlan{}, err
		}
		out.Reports = append(out.Reports, rep)
	}
	return out, nil
}

// planBytes chooses the horizons that TrimBytes(keep) raises, sorted by
// stream, and returns the bytes the chunk files take after them.
func (s *Store) planBytes(keep int64) ([]TrimReport, int64, error) {
	type chunk struct {
		storeChunk
		size  int64
		mtime time.Time
	}
	type stream struct {
		id      frames.StreamID
		horizon frames.Position
		chunks  []chunk // with frames, by first position; a live stream's newest left out
		moved   bool
	}
	stored, err := s.storedStreams()
	if err != nil {
		return nil, 0, err
	}
	var streams []*stream
	var total int64
	for _, st := range stored {
		sm := &stream{id: st.meta.Descriptor.Stream, horizon: st.horizon}
		for _, c := range st.chunks {
			fi, err := os.Stat(st.chunkPath(c))
			if err != nil {
				continue
			}
			total += fi.Size()
			if !c.empty {
				sm.chunks = append(sm.chunks, chunk{c, fi.Size(), fi.ModTime()})
			}
		}
		if !st.meta.Ended && len(sm.chunks) > 0 {
			sm.chunks = sm.chunks[:len(sm.chunks)-1] // the live stream's newest: kept
		}
		streams = append(streams, sm)
	}
	slices.SortFunc(streams, func(a, b *stream) int { return a.id.Compare(b.id) })
	for total > keep {
		var pick *stream
		for _, sm := range streams {
			if len(sm.chunks) == 0 || sm.chunks[0].last == math.MaxUint64 {
				continue
			}
			if pick == nil || sm.chunks[0].mtime.Before(pick.chunks[0].mtime) {
				pick = sm
			}
		}
		if pick == nil {
			break
		}
		h := pick.chunks[0].last + 1
		pick.horizon, pick.moved = max(pick.horizon, h), true
		pick.chunks = slices.DeleteFunc(pick.chunks, func(c chunk) bool {
			if c.last < h {
				total -= c.size
				return true
			}
			return false
		})
	}
	var out []TrimReport
	for _, sm := range streams {
		if sm.moved {
			out = append(out, TrimReport{Stream: sm.id, Before: sm.horizon})
		}
	}
	return out, total, nil
}

// TrimHead records that stream id's source retained it only from position
// before on (a NATS JetStream stream whose retention limits removed its
// oldest messages before they were ingested): it raises the stream's trim
// horizon to before, so that views show the earlier positions as trimmed,
// not missing (spec 004: reads resume at the horizon; ARCHITECTURE.md: the
// trim horizon is never reported as loss). It deletes nothing and changes
// nothing when the store holds a frame of the stream below before (those
// frames were really stored, and what lies between them and before is a
// gap): ok says whether the horizon was raised. Errors: one wrapping
// [ErrNoStream] for a stream the store does not hold; I/O errors.
func (s *Store) TrimHead(id frames.StreamID, before frames.Position) (ok bool, err error) {
	if err := s.lock(); err != nil {
		return false, err
	}
	defer s.unlock()
	st, err := loadStoredStream(s.streamDir(id), nil)
	if errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("%w: %s (in %s)", ErrNoStream, id, s.dir)
	}
	if err != nil {
		return false, err
	}
	if before <= st.horizon {
		return false, nil
	}
	for _, c := range st.chunks {
		if !c.empty && c.first < before {
			return false, nil
		}
	}
	rep, err := s.trimLocked(id, before, false)
	return err == nil && rep.Files == 0, err
}

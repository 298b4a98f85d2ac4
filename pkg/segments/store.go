package segments

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/ds-telemetry/ds/pkg/catalogfile"
	"github.com/ds-telemetry/ds/pkg/frames"
)

// StoreVersion is the version of the store layout this package writes and
// reads, the number in a store's marker file.
const StoreVersion = 1

// Names inside a store directory (see [Store]).
const (
	storeMarker       = "ds-store"
	storeLock         = "lock"
	storeStreams      = "streams"
	storeConsumers    = "consumers"
	storeTmp          = "tmp"
	streamMetaFile    = "stream.json"
	streamCatalogFile = "catalog.json"
	streamHorizonFile = "horizon"
	streamChunks      = "chunks"
)

// storeMaxMetaSize is the largest stream.json, horizon or consumer file, in
// bytes, that a store reads (64 MiB): a longer one is damage, refused
// before it is read whole.
const storeMaxMetaSize = 64 << 20

var (
	// ErrNotStore means a directory that is not a store: it has no
	// ds-store marker file (or it is not a directory at all).
	ErrNotStore = errors.New("segments: not a ds store")
	// ErrNoStream means a stream the store does not hold.
	ErrNoStream = errors.New("segments: no such stream in the store")
	// ErrStoreFormat wraps every error about a store file that does not
	// read: a marker, stream.json, horizon or consumer file that is not
	// what this package writes, or a layout version it does not know.
	ErrStoreFormat = errors.New("segments: malformed store file")
	// ErrStoreLink means a symbolic link inside a store. A store holds
	// only directories and regular files that ds made; a link could point
	// a read, a write or a delete outside the store, so ds never follows
	// one there and refuses the store, naming the link.
	ErrStoreLink = errors.New("segments: symbolic link inside the store")
)

// storeCheckReal checks that path, inside a store, is not a symbolic link
// (lstat(2), which never follows one) and is a directory (dir) or a
// regular file (!dir). A missing path returns the error of os.Lstat, which
// wraps fs.ErrNotExist. Errors name the path and wrap [ErrStoreLink] or
// [ErrStoreFormat].
func storeCheckReal(path string, dir bool) error {
	fi, err := os.Lstat(path)
	switch {
	case err != nil:
		return err
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%w: %s (ds never follows a link inside a store; remove it or copy what it points to)", ErrStoreLink, path)
	case dir && !fi.IsDir():
		return fmt.Errorf("%w: %s is not a directory", ErrStoreFormat, path)
	case !dir && !fi.Mode().IsRegular():
		return fmt.Errorf("%w: %s is not a regular file", ErrStoreFormat, path)
	}
	return nil
}

// storeOpen opens a file inside a store for reading, refusing a symbolic
// link (O_NOFOLLOW: the check and the open are one step). A link is an
// error wrapping [ErrStoreLink]; a missing file wraps fs.ErrNotExist.
//
// A file that is not a regular one (a FIFO, a device, a directory) is an
// error wrapping [ErrStoreFormat]: it is opened without blocking
// (O_NONBLOCK: open(2) of a FIFO would wait for a writer, forever) and
// refused before anything is read from it.
func storeOpen(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%w: %s (ds never follows a link inside a store; remove it or copy what it points to)", ErrStoreLink, path)
	}
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrStoreFormat, path)
	}
	return f, nil
}

// A Store is a directory of streams that [Store.Ingest] grows from
// captures: each stream (node, life) rebuilt by position, every frame kept
// once (first copy wins), whatever order, copies and cuts the captures
// arrive in (ARCHITECTURE.md §1 "ingest/store"; ARCHITECTURE.md cases 3, §6). Views
// read a store like a capture, through [Store.Streams] and
// [Store.OpenStream].
//
// # Layout
//
//	STORE/ds-store              marker: "ds-store 1\n" (the layout version)
//	STORE/lock                  empty; flock(2)ed by whoever changes the store
//	STORE/tmp/                  temporary files, removed at open under the lock
//	STORE/consumers/NAME.json   a named consumer's cursor
//	STORE/streams/DIR/          one stream:
//	    stream.json             its descriptor and an index of its chunks
//	    catalog.json            its catalog (package catalogfile's format)
//	    horizon                 its trim horizon H, in decimal (absent: 0)
//	    chunks/FIRST-LAST-R.dss its frames: DSS captures, zstd
//	    chunks/end-R.dss        the stream's end, when no frame came with it
//
// A stream directory is named from the stream's exact (node, life): a
// sanitised, lowercased prefix of the node (at most 32 bytes of
// [a-z0-9._-], every other character replaced by "_", a leading "."
// replaced by "_", "_" if empty), "~", and the first 16 hex digits of the
// SHA-256 of the node's bytes followed by the life as 8 big-endian bytes.
// No node name from input ("../x", "/", NUL, 10 000 bytes, names that
// differ only in case on a case-insensitive file system) can thus write
// outside the store or meet another stream's directory; the true
// descriptor is in stream.json and in every chunk. Consumer files are
// named the same way from the consumer's name (its SHA-256 alone), with
// ".json" appended.
//
// A chunk is a complete DSS capture of some of the stream's frames, in
// position order, each once: its segment headers carry the stream's
// descriptor and its full catalog, it is zstd-compressed, its segments end
// with summaries, and the chunk that stored the stream's end holds a
// StreamEnded record. FIRST and LAST, 20 decimal digits each (so that
// names sort by position), are the positions of its first and last frame;
// R is 16 random hex digits. No two chunks of a stream hold the same
// position, but their ranges may interleave (a late copy fills a hole).
// Chunks never change once renamed into chunks/; a trim deletes whole ones.
//
// # Commits and crashes
//
// Everything that changes a store (a commit of [Store.Ingest], a trim, a
// consumer save) happens under an exclusive flock(2) of STORE/lock, held
// only for that change: a second storeIngest waits its turn. Readers never
// take it. Each change is crash-safe: a chunk is written to STORE/tmp,
// synced, renamed into chunks/ and its directory synced; small files
// (stream.json, catalog.json, horizon, consumer files) are replaced the
// same way (temporary file, sync, rename, directory sync). A kill -9 at
// any instant thus leaves complete chunks (plus temporary files, removed
// at the next open); stream.json's index of chunks is a cache that is
// checked against the chunks present whenever it is read (an ingest
// updates it at its end and every 16 chunks, not at every commit: a chunk
// it lacks is read to be counted).
//
// A Store is safe for concurrent use by several goroutines; several
// processes may use one store at once.
type Store struct {
	dir string
	// mu serialises this Store's holders of the flock: a flock is held by
	// an open file, which the goroutines of a Store share.
	mu    sync.Mutex
	lockf *os.File
	// cleaned says that STORE/tmp was emptied under the lock (see lock);
	// guarded by mu.
	cleaned bool
	// chunkWriter is the writer of the last chunk written, reset to the
	// next one (writeChunk), its output and catalog let go; guarded
	// by mu (chunks are written under the lock).
	chunkWriter *Writer
}

// storeMarkerText is the content of a store's marker file.
var storeMarkerText = "ds-store " + strconv.Itoa(StoreVersion) + "\n"

// IsStore reports whether dir is a store: a directory holding a ds-store
// marker file (or a link in its place, which [OpenStore] refuses).
func IsStore(dir string) bool {
	b, err := storeReadSmall(filepath.Join(dir, storeMarker), 64)
	if errors.Is(err, ErrStoreLink) {
		return true // a store, refused by OpenStore with the link's name
	}
	return err == nil && bytes.HasPrefix(b, []byte("ds-store "))
}

// CreateStore makes dir (and its parents) a store, or opens it if it is one
// already (see [OpenStore]). An existing directory that is neither a store
// nor empty is refused with an error wrapping [ErrNotStore], as is a path
// that is not a directory.
func CreateStore(dir string) (*Store, error) {
	if IsStore(dir) {
		return OpenStore(dir)
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("segments: create store: %w", err)
		}
	case err != nil:
		return nil, fmt.Errorf("segments: create store: %w", err)
	case !fi.IsDir():
		return nil, fmt.Errorf("%w: %s is not a directory", ErrNotStore, dir)
	default:
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("segments: create store: %w", err)
		}
		for _, e := range entries {
			// Only what a store being created by another process holds.
			switch n := e.Name(); {
			case n == storeLock || n == storeStreams || n == storeConsumers || n == storeTmp || strings.HasPrefix(n, "."+storeMarker):
			case n == storeMarker && IsStore(dir):
				// Another process made it a store since IsStore above.
				return OpenStore(dir)
			default:
				return nil, fmt.Errorf("%w: %s is a directory that is not empty (it holds %q)", ErrNotStore, dir, n)
			}
		}
	}
	// The marker first (atomically): a crash after it leaves a store whose
	// missing subdirectories the next open makes.
	f, err := os.CreateTemp(dir, "."+storeMarker+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("segments: create store: %w", err)
	}
	_, err = f.WriteString(storeMarkerText)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, storeMarker))
	}
	if err != nil {
		os.Remove(f.Name())
		return nil, fmt.Errorf("segments: create store: %w", err)
	}
	storeSyncDir(dir)
	if d := filepath.Dir(filepath.Clean(dir)); d != "" {
		storeSyncDir(d)
	}
	return OpenStore(dir)
}

// OpenStore opens the store dir. It returns an error wrapping
// [ErrNotStore] if dir is not a store, and one wrapping [ErrStoreFormat]
// for a store of a layout version it does not know, and one wrapping
// [ErrStoreLink] for a store whose top-level entries (streams, consumers,
// tmp, lock) include a symbolic link. It makes the store's subdirectories
// that are missing; a store on a read-only file system opens for reading.
// Opening deletes nothing: the temporary files of a process that died are
// removed by the first change this Store makes (see lock). Close releases
// it.
func OpenStore(dir string) (*Store, error) {
	b, err := storeReadSmall(filepath.Join(dir, storeMarker), 64)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, fmt.Errorf("%w: %s (no %s file)", ErrNotStore, dir, storeMarker)
	}
	if err != nil {
		return nil, fmt.Errorf("segments: open store: %w", err)
	}
	rest, ok := bytes.CutPrefix(b, []byte("ds-store "))
	if !ok {
		return nil, fmt.Errorf("%w: %s (its %s file does not say ds-store)", ErrNotStore, dir, storeMarker)
	}
	v, err := strconv.Atoi(string(bytes.TrimSpace(rest)))
	if err != nil || v != StoreVersion {
		return nil, fmt.Errorf("%w: %s: store layout version %q (this ds reads version %d)", ErrStoreFormat, dir, bytes.TrimSpace(rest), StoreVersion)
	}
	for _, sub := range []string{storeStreams, storeConsumers, storeTmp} {
		p := filepath.Join(dir, sub)
		err := storeCheckReal(p, true)
		if errors.Is(err, fs.ErrNotExist) {
			os.Mkdir(p, 0o755) // best effort: read-only stores open too
			err = storeCheckReal(p, true)
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("segments: open store %s: %w", dir, err)
		}
	}
	s := &Store{dir: dir}
	lockPath := filepath.Join(dir, storeLock)
	if err := storeCheckReal(lockPath, false); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("segments: open store %s: %w", dir, err)
	}
	if s.lockf, err = os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o644); err != nil {
		if s.lockf, err = storeOpen(lockPath); err != nil {
			s.lockf = nil // read-only and no lock file: reading needs none
		}
	}
	return s, nil
}

// Dir returns the store's directory, as given to [OpenStore].
func (s *Store) Dir() string { return s.dir }

// Close releases the store's lock file. It does not wait for, nor stop,
// calls in progress.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lockf == nil {
		return nil
	}
	err := s.lockf.Close()
	s.lockf = nil
	return err
}

// lock takes the store's lock: this Store's mutex, then the exclusive
// flock of STORE/lock, waiting for other processes. The first lock of a
// Store removes what STORE/tmp holds: every writer writes there only under
// the lock, so what it holds then was left by a process that died.
func (s *Store) lock() error {
	s.mu.Lock()
	if s.lockf == nil {
		s.mu.Unlock()
		return fmt.Errorf("segments: store %s: no lock file (closed, or read-only)", s.dir)
	}
	for {
		err := syscall.Flock(int(s.lockf.Fd()), syscall.LOCK_EX)
		if err == nil {
			if !s.cleaned {
				s.cleanTmp()
				s.cleaned = true
			}
			return nil
		}
		if !errors.Is(err, syscall.EINTR) {
			s.mu.Unlock()
			return fmt.Errorf("segments: lock store %s: %w", s.dir, err)
		}
	}
}

func (s *Store) unlock() {
	syscall.Flock(int(s.lockf.Fd()), syscall.LOCK_UN)
	s.mu.Unlock()
}

// cleanTmp removes what STORE/tmp holds, and the temporary marker files
// of a CreateStore that died. The caller holds the lock. A STORE/tmp that
// is a symbolic link (made after OpenStore checked it) is left alone:
// os.Remove and os.RemoveAll remove a link, never what it points to, and
// the entries of a linked tmp are not listed.
func (s *Store) cleanTmp() {
	if old, err := filepath.Glob(filepath.Join(s.dir, "."+storeMarker+".tmp*")); err == nil {
		for _, p := range old {
			os.Remove(p)
		}
	}
	tmp := filepath.Join(s.dir, storeTmp)
	if storeCheckReal(tmp, true) != nil {
		return
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		os.RemoveAll(filepath.Join(tmp, e.Name()))
	}
}

// storeSafeName returns a file name for name that cannot leave its directory:
// a sanitised, lowercased prefix of name (at most 32 bytes of
// [a-z0-9._-], "_" for every other character, a leading "." made "_",
// "_" if empty), "~" and the first 16 hex digits of sum.
func storeSafeName(name string, sum [sha256.Size]byte) string {
	var b []byte
	for _, r := range name {
		if len(b) >= 32 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b = append(b, byte(r))
		case r >= 'A' && r <= 'Z':
			b = append(b, byte(r-'A'+'a'))
		default:
			b = append(b, '_')
		}
	}
	if len(b) == 0 {
		b = append(b, '_')
	}
	if b[0] == '.' {
		b[0] = '_'
	}
	return string(b) + "~" + hex.EncodeToString(sum[:8])
}

// StreamDirName returns the name of the directory, under STORE/streams,
// of stream id (see [Store], "Layout").
func StreamDirName(id frames.StreamID) string {
	h := sha256.New()
	h.Write([]byte(id.Node))
	var life [8]byte
	binary.BigEndian.PutUint64(life[:], uint64(id.Life))
	h.Write(life[:])
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return storeSafeName(string(id.Node), sum)
}

// storeConsumerFile returns the name of consumer name's file under
// STORE/consumers.
func storeConsumerFile(name string) string {
	return storeSafeName(name, sha256.Sum256([]byte(name))) + ".json"
}

func (s *Store) streamDir(id frames.StreamID) string {
	return filepath.Join(s.dir, storeStreams, StreamDirName(id))
}

// storeChunk is a chunk of a stream, as its file name describes it.
type storeChunk struct {
	name        string
	first, last frames.Position
	empty       bool // end-R.dss: no frames, the stream's end
}

// Chunk file names: FIRST-LAST-R.dss and end-R.dss.
const (
	storeChunkPosDigits  = 20
	storeChunkRandDigits = 16
	storeChunkSuffix     = ".dss"
)

// parseStoreChunkName parses a chunk file name; ok is false for any other name.
func parseStoreChunkName(name string) (c storeChunk, ok bool) {
	base, found := strings.CutSuffix(name, storeChunkSuffix)
	if !found {
		return c, false
	}
	if r, found := strings.CutPrefix(base, "end-"); found {
		return storeChunk{name: name, empty: true}, storeIsHex(r, storeChunkRandDigits)
	}
	parts := strings.Split(base, "-")
	if len(parts) != 3 || len(parts[0]) != storeChunkPosDigits || len(parts[1]) != storeChunkPosDigits || !storeIsHex(parts[2], storeChunkRandDigits) {
		return c, false
	}
	first, err1 := strconv.ParseUint(parts[0], 10, 64)
	last, err2 := strconv.ParseUint(parts[1], 10, 64)
	if err1 != nil || err2 != nil || first > last {
		return c, false
	}
	return storeChunk{name: name, first: frames.Position(first), last: frames.Position(last)}, true
}

func storeIsHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// storeChunkName returns a fresh name for a chunk of frames first..last, or
// for a frameless end chunk (empty).
func storeChunkName(first, last frames.Position, empty bool) (string, error) {
	var r [storeChunkRandDigits / 2]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", fmt.Errorf("segments: chunk name: %w", err)
	}
	if empty {
		return "end-" + hex.EncodeToString(r[:]) + storeChunkSuffix, nil
	}
	return fmt.Sprintf("%0*d-%0*d-%s%s", storeChunkPosDigits, uint64(first), storeChunkPosDigits, uint64(last), hex.EncodeToString(r[:]), storeChunkSuffix), nil
}

// storeListChunks returns the chunks of the stream directory dir, in name
// order (FIRST order, end chunks last). Other files are ignored; a link in
// it, or a chunks directory that is a link, is an error wrapping
// [ErrStoreLink].
func storeListChunks(dir string) ([]storeChunk, error) {
	chunks := filepath.Join(dir, streamChunks)
	if err := storeCheckReal(chunks, true); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(chunks)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("segments: store: %w", err)
	}
	var out []storeChunk
	for _, e := range entries {
		if e.Type()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("%w: %s (ds never follows a link inside a store; remove it or copy what it points to)", ErrStoreLink, filepath.Join(chunks, e.Name()))
		}
		if c, ok := parseStoreChunkName(e.Name()); ok {
			if !e.Type().IsRegular() {
				// A FIFO, device or directory named as a chunk: refused, not
				// skipped (its frames would vanish without a word).
				return nil, fmt.Errorf("%w: %s is not a regular file", ErrStoreFormat, filepath.Join(chunks, e.Name()))
			}
			out = append(out, c)
		}
	}
	return out, nil
}

// storeMeta is stream.json: the stream's descriptor, whether its end was
// stored, and an index of its chunks (a cache: see loadStoredStream).
type storeMeta struct {
	Version    int                     `json:"version"`
	Descriptor frames.StreamDescriptor `json:"descriptor"`
	// Ended says that a StreamEnded record of the stream was stored; it
	// stays true when a trim deletes the chunk that held it.
	Ended  bool             `json:"ended"`
	Chunks []storeChunkMeta `json:"chunks"`
}

// storeChunkMeta is what stream.json knows of one chunk.
type storeChunkMeta struct {
	Name   string `json:"name"`
	Frames uint64 `json:"frames"`
	Ended  bool   `json:"ended,omitempty"`
	// Below counts the chunk's frames below Horizon, for a chunk that
	// straddled the trim horizon when it was counted (Horizon > 0).
	Horizon frames.Position `json:"horizon,omitempty"`
	Below   uint64          `json:"below,omitempty"`
}

// parseStoreMeta decodes a stream.json. Errors wrap [ErrStoreFormat].
func parseStoreMeta(b []byte) (*storeMeta, error) {
	var m storeMeta
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStoreFormat, err)
	}
	if m.Version == 0 {
		m.Version = 1
	}
	if m.Version != 1 {
		return nil, fmt.Errorf("%w: stream.json version %d (this ds reads version 1)", ErrStoreFormat, m.Version)
	}
	if _, err := m.Descriptor.Origin.MarshalJSON(); err != nil {
		return nil, fmt.Errorf("%w: origin %d", ErrStoreFormat, m.Descriptor.Origin)
	}
	for _, c := range m.Chunks {
		cf, ok := parseStoreChunkName(c.Name)
		if !ok {
			return nil, fmt.Errorf("%w: chunk name %q", ErrStoreFormat, c.Name)
		}
		if cf.empty && c.Frames != 0 || c.Below > c.Frames {
			return nil, fmt.Errorf("%w: chunk %s: %d frames, %d below the horizon", ErrStoreFormat, c.Name, c.Frames, c.Below)
		}
	}
	return &m, nil
}

func (m *storeMeta) marshal() ([]byte, error) {
	m.Version = 1
	if m.Chunks == nil {
		m.Chunks = []storeChunkMeta{}
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("segments: encode stream.json: %w", err)
	}
	return append(b, '\n'), nil
}

// parseStoreHorizon decodes a horizon file: a decimal position and a newline.
// Errors wrap [ErrStoreFormat].
func parseStoreHorizon(b []byte) (frames.Position, error) {
	h, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: horizon %q", ErrStoreFormat, bytes.TrimSpace(b))
	}
	return frames.Position(h), nil
}

// storeReadSmall reads a file of at most max bytes; a symbolic link is an
// error wrapping [ErrStoreLink].
func storeReadSmall(path string, max int64) ([]byte, error) {
	f, err := storeOpen(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%w: %s is over %d bytes", ErrStoreFormat, path, max)
	}
	return b, nil
}

// storeReadMeta reads the stream.json of the stream directory dir; a missing
// one is an error wrapping fs.ErrNotExist.
func storeReadMeta(dir string) (*storeMeta, error) {
	path := filepath.Join(dir, streamMetaFile)
	b, err := storeReadSmall(path, storeMaxMetaSize)
	if err != nil {
		return nil, err
	}
	m, err := parseStoreMeta(b)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return m, nil
}

// storeReadHorizon reads the trim horizon of the stream directory dir: 0 when
// it has none.
func storeReadHorizon(dir string) (frames.Position, error) {
	path := filepath.Join(dir, streamHorizonFile)
	b, err := storeReadSmall(path, 64)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("segments: store: %w", err)
	}
	h, err := parseStoreHorizon(b)
	if err != nil {
		return 0, fmt.Errorf("%w (in %s)", err, path)
	}
	return h, nil
}

// storeReadCatalog reads the catalog of the stream directory dir: an empty
// catalog when it has none.
func storeReadCatalog(dir string) (*catalogfile.Catalog, error) {
	path := filepath.Join(dir, streamCatalogFile)
	f, err := storeOpen(path)
	if errors.Is(err, fs.ErrNotExist) {
		return catalogfile.New(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("segments: store: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > catalogfile.MaxFileSize {
		// Refused before it is read: a padded file must not cost its size.
		return nil, fmt.Errorf("%w (over %d bytes, in %s)", catalogfile.ErrTooLarge, catalogfile.MaxFileSize, path)
	}
	c, err := catalogfile.Read(f, path)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return c, nil
}

// writeFileAtomic replaces path with data: a temporary file in STORE/tmp,
// synced, renamed over path, and path's directory synced. The caller holds
// the lock.
func (s *Store) writeFileAtomic(path string, data []byte) error {
	return s.writeFileAtomicFunc(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// writeFileAtomicFunc is writeFileAtomic of what write writes, for a file
// too large to be made in memory first (a catalog.json of 37 MB).
func (s *Store) writeFileAtomicFunc(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Join(s.dir, storeTmp), "*.tmp")
	if err != nil {
		return fmt.Errorf("segments: store: %w", err)
	}
	err = write(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("segments: store: write %s: %w", path, err)
	}
	storeSyncDir(filepath.Dir(path))
	return nil
}

// storeSyncDir syncs a directory, making the renames and removals in it
// durable. Some file systems refuse to sync a directory; that is not
// reported (the change has happened either way).
func storeSyncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// storedStream is a stream of the store as its files say, with the chunk
// index of stream.json checked against the chunks present.
type storedStream struct {
	dir     string
	meta    *storeMeta
	horizon frames.Position
	chunks  []storeChunk              // present, in name order
	index   map[string]storeChunkMeta // by name, for every chunk present
	// stale says that stream.json's index differs from the chunks present
	// (chunks committed since it was written, a crash, a trim's
	// deletions); unindexed counts the chunks present that it lacks.
	stale     bool
	unindexed int
}

// loadStoredStream reads the stream directory dir. A chunk missing from the
// index is taken from known (chunks the caller wrote) or else read to
// count its frames; an index entry whose chunk is gone is dropped. It
// returns an error wrapping fs.ErrNotExist when dir (or its stream.json)
// does not exist, and one wrapping [ErrStoreLink] when dir, its chunks
// directory or one of its files is a symbolic link.
func loadStoredStream(dir string, known map[string]storeChunkMeta) (*storedStream, error) {
	if err := storeCheckReal(dir, true); err != nil {
		return nil, err
	}
	m, err := storeReadMeta(dir)
	if err != nil {
		return nil, err
	}
	st := &storedStream{dir: dir, meta: m, index: make(map[string]storeChunkMeta)}
	if st.horizon, err = storeReadHorizon(dir); err != nil {
		return nil, err
	}
	if st.chunks, err = storeListChunks(dir); err != nil {
		return nil, err
	}
	indexed := make(map[string]storeChunkMeta, len(m.Chunks))
	for _, c := range m.Chunks {
		indexed[c.Name] = c
	}
	for _, c := range st.chunks {
		cm, ok := indexed[c.name]
		if !ok {
			st.stale = true
			st.unindexed++
		}
		if !ok {
			cm, ok = known[c.name]
		}
		if !ok {
			cm = storeChunkMeta{Name: c.name}
			n, _, ended, err := storeCountChunk(st.chunkPath(c), 0)
			if err != nil {
				return nil, err
			}
			cm.Frames, cm.Ended = n, ended
		}
		st.index[c.name] = cm
	}
	if len(st.index) != len(m.Chunks) {
		st.stale = true
	}
	return st, nil
}

func (st *storedStream) chunkPath(c storeChunk) string {
	return filepath.Join(st.dir, streamChunks, c.name)
}

// ended reports whether the stream's end is stored.
func (st *storedStream) ended() bool {
	if st.meta.Ended {
		return true
	}
	for _, c := range st.index {
		if c.Ended {
			return true
		}
	}
	return false
}

// visible returns the number of frames of chunk c at or above the horizon,
// reading the chunk when the index does not say.
func (st *storedStream) visible(c storeChunk) (uint64, error) {
	cm := st.index[c.name]
	switch {
	case c.empty || c.first >= st.horizon:
		return cm.Frames, nil
	case c.last < st.horizon:
		return 0, nil
	case cm.Horizon == st.horizon:
		return cm.Frames - cm.Below, nil
	}
	n, below, _, err := storeCountChunk(st.chunkPath(c), st.horizon)
	if err != nil {
		return 0, err
	}
	return n - below, nil
}

// save writes the stream's stream.json with the index of the chunks
// present. The caller holds the lock.
func (s *Store) saveMeta(st *storedStream) error {
	st.meta.Chunks = st.meta.Chunks[:0]
	for _, c := range st.chunks {
		st.meta.Chunks = append(st.meta.Chunks, st.index[c.name])
	}
	b, err := st.meta.marshal()
	if err != nil {
		return err
	}
	if err := s.writeFileAtomic(filepath.Join(st.dir, streamMetaFile), b); err != nil {
		return err
	}
	st.stale, st.unindexed = false, 0
	return nil
}

// storeCountChunk reads the chunk at path: its frames, those below horizon, and
// whether it holds a StreamEnded record. Damage in it (a disk that
// failed) is skipped: what reads is counted.
func storeCountChunk(path string, horizon frames.Position) (n, below uint64, ended bool, err error) {
	err = storeReadChunk(path, func(e *Entry) {
		switch e.Kind {
		case EntryFrame:
			n++
			if e.Frame.Position < horizon {
				below++
			}
		case EntryStreamEnded:
			ended = true
		}
	})
	return n, below, ended, err
}

// storeReadChunk calls fn with every entry of the chunk at path (the payload
// of a frame valid during the call only). A chunk deleted meanwhile (a
// trim) reads as empty; damage is skipped.
func storeReadChunk(path string, fn func(*Entry)) error {
	f, err := storeOpen(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("segments: store: %w", err)
	}
	defer f.Close()
	r := NewReader(f, ReaderOptions{SkipSummaries: true})
	var e Entry
	for {
		err := r.NextView(&e)
		if err == io.EOF {
			return nil
		}
		var ce *CorruptError
		if errors.As(err, &ce) {
			continue
		}
		if err != nil {
			return fmt.Errorf("segments: store: %s: %w", path, err)
		}
		fn(&e)
	}
}

// StoreStream describes one stream of a store (see [Store.Streams]).
type StoreStream struct {
	// Desc is the stream's descriptor. Its catalog is not read here (a
	// store's catalog.json can be tens of MB): see [Store.Channels].
	Desc frames.StreamDescriptor
	// Before is the trim horizon: positions below it were trimmed (0:
	// none). Frames below it that remain in a chunk are hidden.
	Before frames.Position
	Frames uint64 // frames stored at or above Before
	Bytes  int64  // size of its chunk files, in bytes
	Chunks int    // number of its chunk files
	Ended  bool   // its StreamEnded record was stored
}

// storedStreams loads every stream directory of the store, in directory
// order, leaving out those without stream.json (a commit that died before
// writing one).
func (s *Store) storedStreams() ([]*storedStream, error) {
	root := filepath.Join(s.dir, storeStreams)
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("segments: store: %w", err)
	}
	var out []*storedStream
	for _, e := range entries {
		if e.Type()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("%w: %s (ds never follows a link inside a store; remove it or copy what it points to)", ErrStoreLink, filepath.Join(root, e.Name()))
		}
		if !e.IsDir() {
			continue
		}
		st, err := loadStoredStream(filepath.Join(root, e.Name()), nil)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// Streams returns the streams of the store, sorted by (node, life). It
// reads the store's files without its lock, so it may run beside an
// ingest or a trim and see the state before or after each change. A
// stream directory without stream.json (a commit that died before
// writing one) is left out. Errors name the file that does not read.
func (s *Store) Streams() ([]StoreStream, error) {
	stored, err := s.storedStreams()
	if err != nil {
		return nil, err
	}
	var out []StoreStream
	for _, st := range stored {
		ss, err := st.describe()
		if err != nil {
			return nil, err
		}
		out = append(out, ss)
	}
	slices.SortFunc(out, func(a, b StoreStream) int { return a.Desc.Stream.Compare(b.Desc.Stream) })
	return out, nil
}

// describe returns what Streams says of st.
func (st *storedStream) describe() (StoreStream, error) {
	ss := StoreStream{Desc: st.meta.Descriptor, Before: st.horizon, Ended: st.ended()}
	for _, c := range st.chunks {
		fi, err := os.Stat(st.chunkPath(c))
		if err != nil {
			continue // deleted meanwhile by a trim
		}
		n, err := st.visible(c)
		if err != nil {
			return ss, err
		}
		ss.Frames += n
		ss.Bytes += fi.Size()
		ss.Chunks++
	}
	return ss, nil
}

// Channels returns the catalog of stream id, its channels sorted by id,
// as its catalog.json says (none when it has none). It returns an error
// wrapping [ErrNoStream] for a stream the store does not hold, and the
// errors of [catalogfile.Read], naming the file.
func (s *Store) Channels(id frames.StreamID) ([]frames.ChannelDescriptor, error) {
	dir := s.streamDir(id)
	err := storeCheckReal(dir, true)
	if err == nil {
		_, err = storeReadMeta(dir)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s (in %s)", ErrNoStream, id, s.dir)
	}
	if err != nil {
		return nil, err
	}
	cat, err := storeReadCatalog(dir)
	if err != nil {
		return nil, err
	}
	return cat.Descriptors(id), nil
}

// OpenStream returns the stream id as a DSS byte stream: when its horizon
// is above 0, first a segment whose header carries the stream's descriptor
// and catalog and whose only record is Trimmed (the horizon, see
// ds-format(5) "Trimmed"), then the bytes of every chunk file in order of
// first position (chunks wholly below the horizon, left by a trim that
// died, are left out). A chunk deleted by a trim while the stream is read
// is skipped, not an error. The frames are thus each stored position once,
// in position order within each chunk; chunks may interleave where a late
// copy filled a hole, so readers order by position (as every view does).
// It returns an error wrapping [ErrNoStream] for a stream the store does
// not hold. The caller closes the reader.
func (s *Store) OpenStream(id frames.StreamID) (io.ReadCloser, error) {
	dir := s.streamDir(id)
	err := storeCheckReal(dir, true)
	var m *storeMeta
	if err == nil {
		m, err = storeReadMeta(dir)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s (in %s)", ErrNoStream, id, s.dir)
	}
	if err != nil {
		return nil, err
	}
	if m.Descriptor.Stream != id {
		return nil, fmt.Errorf("%w: %s: its directory holds %s (in %s)", ErrStoreFormat, id, m.Descriptor.Stream, s.dir)
	}
	h, err := storeReadHorizon(dir)
	if err != nil {
		return nil, err
	}
	chunks, err := storeListChunks(dir)
	if err != nil {
		return nil, err
	}
	sr := &storeStreamReader{}
	if h > 0 {
		cat, err := storeReadCatalog(dir)
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		w, err := NewWriter(&buf, m.Descriptor, cat.Descriptors(id), WriterOptions{Compression: CompressNone, WriterID: storeWriterID})
		if err == nil {
			err = w.WriteTrimmed(h)
		}
		if err == nil {
			err = w.Flush()
		}
		if err != nil {
			return nil, fmt.Errorf("segments: store: %s: %w", id, err)
		}
		sr.head = buf.Bytes()
	}
	for _, c := range chunks {
		if !c.empty && c.last < h {
			continue
		}
		sr.paths = append(sr.paths, filepath.Join(dir, streamChunks, c.name))
	}
	sr.missing, sr.dir = missingChunks(dir, m, chunks, h), dir
	return sr, nil
}

// missingChunks returns the chunks that stream.json's index (m) names
// with frames at or above the horizon and that are not in the chunks
// directory (listed): deleted by hand, or lost. A trim raises the horizon
// before it deletes, so the horizon is read again after the listing: a
// chunk a trim deleted meanwhile is below it.
func missingChunks(dir string, m *storeMeta, listed []storeChunk, h frames.Position) []storeChunkMeta {
	if h2, err := storeReadHorizon(dir); err == nil {
		h = max(h, h2)
	}
	there := make(map[string]bool, len(listed))
	for _, c := range listed {
		there[c.name] = true
	}
	var out []storeChunkMeta
	for _, cm := range m.Chunks {
		c, ok := parseStoreChunkName(cm.Name)
		if ok && !c.empty && cm.Frames > 0 && c.last >= h && !there[cm.Name] {
			out = append(out, cm)
		}
	}
	return out
}

// storeWriterID is the writer identity of the segments a store writes.
const storeWriterID = "ds store"

// storeStreamReader reads a stream's head segment and chunk files in turn.
type storeStreamReader struct {
	head  []byte
	paths []string
	cur   *os.File
	// missing are chunks the index names that are gone: once the others
	// are read, Read returns an error naming them (never a silent end).
	missing []storeChunkMeta
	dir     string
}

// ReadingFile reports the chunk file being read, and where in it the next
// byte is (a [FileInput]); false in the head segment before the chunks,
// and between two chunks.
func (r *storeStreamReader) ReadingFile() (io.ReaderAt, int64, int64, bool) {
	if len(r.head) > 0 || r.cur == nil {
		return nil, 0, 0, false
	}
	return fileAt(r.cur)
}

func (r *storeStreamReader) Read(p []byte) (int, error) {
	for {
		if len(r.head) > 0 {
			n := copy(p, r.head)
			r.head = r.head[n:]
			return n, nil
		}
		if r.cur == nil {
			if len(r.paths) == 0 && len(r.missing) > 0 {
				cm := r.missing[0]
				err := fmt.Errorf("%w: chunk %s is missing from %s (stream.json counts %d frames in it)", ErrStoreFormat, cm.Name, filepath.Join(r.dir, streamChunks), cm.Frames)
				if n := len(r.missing); n > 1 {
					err = fmt.Errorf("%w, and %d more chunks", err, n-1)
				}
				r.missing = nil
				return 0, err
			}
			if len(r.paths) == 0 {
				return 0, io.EOF
			}
			f, err := storeOpen(r.paths[0])
			r.paths = r.paths[1:]
			if errors.Is(err, fs.ErrNotExist) {
				continue // deleted by a trim meanwhile
			}
			if err != nil {
				return 0, fmt.Errorf("segments: store: %w", err)
			}
			r.cur = f
		}
		n, err := r.cur.Read(p)
		if err == io.EOF {
			r.cur.Close()
			r.cur = nil
			if n > 0 {
				return n, nil
			}
			continue
		}
		if err != nil {
			return n, fmt.Errorf("segments: store: %w", err)
		}
		return n, nil
	}
}

func (r *storeStreamReader) Close() error {
	r.paths = nil
	if r.cur != nil {
		err := r.cur.Close()
		r.cur = nil
		return err
	}
	return nil
}

package sources

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
	"unicode"

	"github.com/ds-telemetry/ds/pkg/fleet"
	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// PollInterval is how often what is followed is looked at again: a
// directory listed for new capture files, a store listed for new streams
// and new chunks. Listing, rather than fsnotify: no dependency, it works
// on every file system (NFS and FUSE mounts included, where inotify does
// not), and a quarter of a second is as soon as tail -f users expect; a
// listing of a directory of captures costs little.
const PollInterval = 250 * time.Millisecond

// Options says how a [Set] opens its inputs.
type Options struct {
	// NATS says how nats:// inputs are opened ([Set.OpenNATS]).
	NATS NATSOptions
}

// NATSOptions says how nats:// inputs are read.
type NATSOptions struct {
	// Auth holds the credentials (ds(1): --nats-creds, --nats-token, the
	// TLS files); they are never in an error or an input's name.
	Auth fleet.Auth
	// Nodes are the nodes whose subjects are read (--node, and the nodes
	// of --stream); none: every node. The views still apply every filter.
	Nodes []frames.NodeID
}

// A Set is the inputs of one command: the stores it opened, by directory,
// and the names of the inputs made of their streams ("STORE (NODE#LIFE)",
// [Store.InputName]), so that a store's stream travels through a view as
// a name, as a file does. Create one per command with [NewSet]; it is safe
// for concurrent use.
type Set struct {
	opts Options

	mu      sync.Mutex
	stores  map[string]*Store
	streams map[string]StreamRef
}

// NewSet returns an empty set that opens inputs as opts says.
func NewSet(opts Options) *Set {
	return &Set{opts: opts, stores: map[string]*Store{}, streams: map[string]StreamRef{}}
}

// IsStore reports whether name is a store directory (ds ingest's): "-"
// never is.
func IsStore(name string) bool {
	return name != "-" && segments.IsStore(name)
}

// OpenStore opens the store at dir (cleaned), once per set: a second call
// returns the same *Store. An error names dir.
func (s *Set) OpenStore(dir string) (*Store, error) {
	dir = filepath.Clean(dir)
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.stores[dir]; ok {
		return st, nil
	}
	st, err := segments.OpenStore(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	src := &Store{dir: dir, st: st, set: s}
	s.stores[dir] = src
	return src, nil
}

// Stream returns what the input name stands for, if it is the name of a
// store's stream that the set made ([Store.InputName]).
func (s *Set) Stream(name string) (StreamRef, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ref, ok := s.streams[name]
	return ref, ok
}

// IsStream reports whether name is the name of a store's stream input of
// the set.
func (s *Set) IsStream(name string) bool {
	_, ok := s.Stream(name)
	return ok
}

// ExpandStore returns the names of the inputs of the store at dir, one per
// stream in the store's order (node, then life), and the watch that finds
// its new streams. A store that holds nothing has no inputs (an empty
// capture). An error names dir.
func (s *Set) ExpandStore(dir string) ([]string, *StoreWatch, error) {
	src, err := s.OpenStore(dir)
	if err != nil {
		return nil, nil, err
	}
	streams, err := src.Streams(0)
	if err != nil {
		return nil, nil, err
	}
	w := &StoreWatch{src: src, known: map[frames.StreamID]bool{}}
	var names []string
	for _, ss := range streams {
		id := ss.Desc.Stream
		w.known[id] = true
		names = append(names, src.InputName(id))
	}
	return names, w, nil
}

// A Store is a store opened for reading, shared by the inputs of its
// streams; it is safe for concurrent use.
type Store struct {
	dir string // as named (cleaned)
	st  *segments.Store
	set *Set

	mu     sync.Mutex
	polled time.Time // when list was listed
	list   []segments.StoreStream
	err    error
}

// Dir returns the store's directory, as named (cleaned).
func (s *Store) Dir() string { return s.dir }

// InputName returns the name of the input of stream id of the store, and
// makes it known to the set ([Set.Stream]): "STORE (NODE#LIFE)", the
// stream quoted as a Go string when its node has characters that are not
// printable.
func (s *Store) InputName(id frames.StreamID) string {
	text := id.String()
	for _, r := range text {
		if !unicode.IsPrint(r) {
			text = strconv.Quote(text)
			break
		}
	}
	name := s.dir + " (" + text + ")"
	s.set.mu.Lock()
	s.set.streams[name] = StreamRef{Store: s, ID: id}
	s.set.mu.Unlock()
	return name
}

// Streams returns the streams of the store, as listed at most maxAge ago
// (0: listed now), so that the inputs of a store followed share one
// listing per poll. The slice is shared: do not change it. An error names
// the store.
func (s *Store) Streams(maxAge time.Duration) ([]segments.StoreStream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.polled.IsZero() || maxAge <= 0 || time.Since(s.polled) >= maxAge {
		s.list, s.err = s.st.Streams()
		s.polled = time.Now()
		if s.err != nil {
			s.err = fmt.Errorf("%s: %w", s.dir, s.err)
		}
	}
	return s.list, s.err
}

// A Watch is a directory or a store followed for new inputs.
type Watch interface {
	// Poll returns the names of the inputs that are new since the last
	// look (none when it cannot be looked at now: it is looked at again
	// at the next poll).
	Poll() []string
}

// StoreWatch is a store followed for new streams ([Set.ExpandStore]).
type StoreWatch struct {
	src   *Store
	known map[frames.StreamID]bool
}

// Poll implements [Watch]: the names of the inputs of the streams that are
// new in the store since the last look.
func (w *StoreWatch) Poll() []string {
	streams, err := w.src.Streams(PollInterval / 2)
	if err != nil {
		return nil // a store being changed: look again later
	}
	var names []string
	for _, ss := range streams {
		id := ss.Desc.Stream
		if !w.known[id] {
			w.known[id] = true
			names = append(names, w.src.InputName(id))
		}
	}
	return names
}

// OpenBytes opens the bytes of input name for a reader that does its own
// decoding (ds merge, which rebuilds streams by position): "-" is stdin,
// a store input's name ([Set.Stream]) its stream's read-out, anything
// else a file. An error of os.Open is returned without the path (the
// caller names the input); a directory is an error.
func (s *Set) OpenBytes(name string, stdin io.Reader) (io.ReadCloser, error) {
	if name == "-" {
		return io.NopCloser(stdin), nil
	}
	if ref, ok := s.Stream(name); ok {
		return ref.NewReader(), nil
	}
	f, err := os.Open(name)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, pe.Err
		}
		return nil, err
	}
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		f.Close()
		return nil, errors.New("is a directory")
	}
	return f, nil
}

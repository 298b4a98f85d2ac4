package catalogfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ds-telemetry/ds/pkg/frames"
)

const (
	// Version is the catalog file version this package writes and reads.
	Version = 1

	// MaxFileSize is the largest catalog file, in bytes, that [Read]
	// accepts (64 MiB, some hundred thousand channels).
	MaxFileSize = 64 << 20
)

var (
	// ErrFormat wraps every error about the shape of a catalog file: bad
	// JSON, a field of the wrong type, a missing required field.
	ErrFormat = errors.New("catalogfile: malformed catalog")

	// ErrUnknownVersion means a catalog file whose version is not [Version].
	ErrUnknownVersion = errors.New("catalogfile: unknown catalog version")

	// ErrTooLarge means a catalog file over [MaxFileSize].
	ErrTooLarge = errors.New("catalogfile: catalog file too large")
)

// fileJSON, streamJSON and channelJSON are the written shape (see the
// package doc). The descriptor fields are spelled as frames spells them.
type fileJSON struct {
	Version int          `json:"version"`
	Streams []streamJSON `json:"streams"`
}

type streamJSON struct {
	Stream   frames.StreamID      `json:"stream"`
	Label    *string              `json:"label"`
	Origin   *frames.StreamOrigin `json:"origin"` // nil: undeclared
	Source   string               `json:"source,omitempty"`
	Channels []channelJSON        `json:"channels"`
}

type channelJSON struct {
	Stream  frames.StreamID       `json:"stream"`
	ID      frames.ChannelID      `json:"id"`
	Name    string                `json:"name"`
	Label   *string               `json:"label"`
	Content frames.ChannelContent `json:"content"`
	Source  string                `json:"source,omitempty"`
}

// WriteTo writes c to w in the catalog file format (see the package doc):
// pretty-printed JSON ending in a newline, streams and channels sorted, so
// that equal catalogs give equal bytes. It implements io.WriterTo: it
// returns the number of bytes written and the first error of w. It does not
// close w.
func (c *Catalog) WriteTo(w io.Writer) (int64, error) {
	b, err := c.marshal()
	if err != nil {
		return 0, err
	}
	n, err := w.Write(b)
	if err != nil {
		return int64(n), fmt.Errorf("catalogfile: write: %w", err)
	}
	return int64(n), nil
}

func (c *Catalog) marshal() ([]byte, error) {
	f := fileJSON{Version: Version, Streams: []streamJSON{}}
	for _, s := range c.Streams() {
		sj := streamJSON{Stream: s.Descriptor.Stream, Channels: []channelJSON{}}
		if s.Declared {
			sj.Label, sj.Origin, sj.Source = s.Descriptor.Label, &s.Descriptor.Origin, s.Source
		}
		for _, ch := range c.Channels(s.Descriptor.Stream) {
			d := ch.Descriptor
			sj.Channels = append(sj.Channels, channelJSON{d.Stream, d.ID, d.Name, d.Label, d.Content, ch.Source})
		}
		f.Streams = append(f.Streams, sj)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		return nil, fmt.Errorf("catalogfile: encode: %w", err)
	}
	return buf.Bytes(), nil
}

// Read decodes a catalog file from r (see the package doc for the format
// and its defaults). Entries without a "source" get source; an entry's own
// "source" is kept. Read reads r to its end, at most [MaxFileSize] bytes,
// and does not close it.
//
// Errors: [ErrTooLarge]; [ErrFormat] with the line and column of bad JSON
// or the path of a bad field ("streams[0].channels[2].id"); an error
// wrapping [ErrUnknownVersion]; and, ending with the entry's path, a
// [*ConflictError] for entries that disagree or an error wrapping
// [ErrInvalid]; any error of r, wrapped.
func Read(r io.Reader, source string) (*Catalog, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("catalogfile: read: %w", err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%w (over %d bytes)", ErrTooLarge, MaxFileSize)
	}
	return parse(data, source)
}

// ReadFile reads the catalog file at path with [Read], using path as the
// source of entries that name none. Errors name the path.
func ReadFile(path string) (*Catalog, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("catalogfile: %w", err)
	}
	defer f.Close()
	c, err := Read(f, path)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return c, nil
}

func parse(data []byte, source string) (*Catalog, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%w: empty input", ErrFormat)
	}
	var top struct {
		Version json.RawMessage `json:"version"`
		Streams json.RawMessage `json:"streams"`
	}
	if err := json.Unmarshal(data, &top); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := lineCol(data, se.Offset)
			return nil, fmt.Errorf("%w: line %d, column %d: %v", ErrFormat, line, col, se)
		}
		return nil, fmt.Errorf("%w: the top level must be an object", ErrFormat)
	}
	if present(top.Version) {
		var v int64
		if err := decodeField(top.Version, "version", "an integer", &v); err != nil {
			return nil, err
		}
		if v != Version {
			return nil, fmt.Errorf("%w %d (this ds reads version %d)", ErrUnknownVersion, v, Version)
		}
	}
	var streams []json.RawMessage
	if err := decodeField(top.Streams, "streams", "an array", &streams); err != nil {
		return nil, err
	}
	c := New()
	for i, raw := range streams {
		if err := c.parseStream(raw, fmt.Sprintf("streams[%d]", i), source); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *Catalog) parseStream(raw json.RawMessage, path, source string) error {
	var e struct {
		Stream, Label, Origin, Source, Channels json.RawMessage
	}
	if err := decodeField(raw, path, "an object", &e); err != nil {
		return err
	}
	if !present(e.Stream) {
		return fmt.Errorf("%w: %s: missing \"stream\"", ErrFormat, path)
	}
	var desc frames.StreamDescriptor
	if err := decodeField(e.Stream, path+".stream", `{"node":…,"life":…}`, &desc.Stream); err != nil {
		return err
	}
	if err := decodeField(e.Label, path+".label", "a string or null", &desc.Label); err != nil {
		return err
	}
	streamSource, err := decodeSource(e.Source, path, source)
	if err != nil {
		return err
	}
	declared := true
	switch {
	case e.Origin == nil: // missing: RemoteNode
	case !present(e.Origin):
		declared = false
		if desc.Label != nil {
			return fmt.Errorf("%w: %s: an undeclared stream (origin null) has a label", ErrFormat, path)
		}
	default:
		if err := decodeField(e.Origin, path+".origin", `"RemoteNode", "Orchestrator" or "Bootstrap"`, &desc.Origin); err != nil {
			return err
		}
	}
	if declared {
		if err := c.AddStream(desc, streamSource); err != nil {
			return fmt.Errorf("%w (at %s)", err, path)
		}
	}
	var channels []json.RawMessage
	if err := decodeField(e.Channels, path+".channels", "an array", &channels); err != nil {
		return err
	}
	for j, raw := range channels {
		if err := c.parseChannel(raw, fmt.Sprintf("%s.channels[%d]", path, j), desc.Stream, source); err != nil {
			return err
		}
	}
	return nil
}

func (c *Catalog) parseChannel(raw json.RawMessage, path string, stream frames.StreamID, source string) error {
	var e struct {
		Stream, ID, Name, Label, Content, Source json.RawMessage
	}
	if err := decodeField(raw, path, "an object", &e); err != nil {
		return err
	}
	desc := frames.ChannelDescriptor{Stream: stream}
	if present(e.Stream) {
		if err := decodeField(e.Stream, path+".stream", `{"node":…,"life":…}`, &desc.Stream); err != nil {
			return err
		}
		if desc.Stream != stream {
			return fmt.Errorf("%w: %s: channel of stream %s in the entry of stream %s", ErrFormat, path, desc.Stream, stream)
		}
	}
	for _, f := range []struct {
		raw  json.RawMessage
		name string
	}{{e.ID, "id"}, {e.Name, "name"}} {
		if !present(f.raw) {
			return fmt.Errorf("%w: %s: missing %q", ErrFormat, path, f.name)
		}
	}
	if err := decodeField(e.ID, path+".id", "a channel id from 1 to 4294967295", &desc.ID); err != nil {
		return err
	}
	if err := decodeField(e.Name, path+".name", "a string", &desc.Name); err != nil {
		return err
	}
	if err := decodeField(e.Label, path+".label", "a string or null", &desc.Label); err != nil {
		return err
	}
	if present(e.Content) {
		if err := decodeField(e.Content, path+".content", `"Bytes", "TextStream" or {"JsonRecord":{"schema":…}}`, &desc.Content); err != nil {
			return err
		}
	}
	source, err := decodeSource(e.Source, path, source)
	if err != nil {
		return err
	}
	if err := c.AddChannel(desc, source); err != nil {
		return fmt.Errorf("%w (at %s)", err, path)
	}
	return nil
}

// decodeSource returns an entry's "source", or def when it is missing,
// null or empty.
func decodeSource(raw json.RawMessage, path, def string) (string, error) {
	var s string
	if err := decodeField(raw, path+".source", "a string", &s); err != nil {
		return "", err
	}
	if s == "" {
		return def, nil
	}
	return s, nil
}

// present reports whether a field was given a value other than null.
func present(raw json.RawMessage) bool {
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}

// decodeField decodes raw into dst unless it is missing or null, which
// leave dst as it is. Errors name the field's path and what it should be.
func decodeField(raw json.RawMessage, path, want string, dst any) error {
	if !present(raw) {
		return nil
	}
	err := json.Unmarshal(raw, dst)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("%w: %s: want %s, got %s", ErrFormat, path, want, te.Value)
	}
	return fmt.Errorf("%w: %s: want %s: %v", ErrFormat, path, want, err)
}

// lineCol converts the byte offset of a JSON syntax error to a 1-based line
// and column (in bytes).
func lineCol(data []byte, off int64) (line, col int) {
	off = min(max(off, 1), int64(len(data)))
	before := data[:off]
	line = 1 + bytes.Count(before, []byte("\n"))
	col = len(before) - bytes.LastIndexByte(before, '\n') - 1
	return line, col
}

// WriteFile writes c to path in the catalog file format, atomically: it
// writes a temporary file in the same directory, syncs it to disk, and
// renames it over path, then syncs the directory. Readers see either the old
// file or the new one, never a mix; after a crash path holds one of the two.
// On error path is unchanged and the temporary file is removed.
//
// The new file takes the permission bits of the file it replaces, or 0644.
// If path is a symbolic link, the link itself is replaced.
func WriteFile(path string, c *Catalog) (err error) {
	b, err := c.marshal()
	if err != nil {
		return err
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	perm := os.FileMode(0o644)
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
		perm = fi.Mode().Perm()
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return fmt.Errorf("catalogfile: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close() // may already be closed; the first error is what matters
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("catalogfile: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		return fmt.Errorf("catalogfile: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("catalogfile: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("catalogfile: %w", err)
	}
	if testHookBeforeRename != nil {
		if err := testHookBeforeRename(tmp); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("catalogfile: %w", err)
	}
	// The rename is durable once the directory is synced. It has happened
	// either way, so a failure here (some file systems refuse to sync a
	// directory) is not reported.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// testHookBeforeRename, when set by a test, runs after the temporary file is
// written and closed; an error from it fails WriteFile there.
var testHookBeforeRename func(tmp string) error

package catalogfile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/textfmt"
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

// WriteTo writes c to w in the catalog file format (see the package doc):
// pretty-printed JSON ending in a newline, streams and channels sorted, so
// that equal catalogs give equal bytes (the bytes encoding/json's Encoder
// writes with two-space indents and HTML escaping off). It writes through
// a buffer of its own, a channel at a time, so that a catalog of a
// hundred thousand channels costs no copy of its text. It implements
// io.WriterTo: it returns the number of bytes written and the first error
// of w. It does not close w.
func (c *Catalog) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	bw := bufio.NewWriterSize(cw, 64<<10)
	err := c.encode(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil && cw.err != nil {
		return cw.n, fmt.Errorf("catalogfile: write: %w", cw.err)
	}
	return cw.n, err
}

// countWriter counts what it writes and keeps the first error of w.
type countWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (cw *countWriter) Write(p []byte) (int, error) {
	n, err := cw.w.Write(p)
	cw.n += int64(n)
	if err != nil && cw.err == nil {
		cw.err = err
	}
	return n, err
}

// encode writes c to bw as marshal's json.Encoder did (file_test.go keeps
// that encoder as the reference): fields in the order of the package doc,
// a field per line, indented by two spaces a level.
func (c *Catalog) encode(bw *bufio.Writer) error {
	var e encoder
	b := e.buf[:0]
	b = append(b, "{\n  \"version\": "...)
	b = strconv.AppendInt(b, Version, 10)
	b = append(b, ",\n  \"streams\": ["...)
	ids := c.streamIDs()
	if len(ids) == 0 {
		b = append(b, "]\n}\n"...)
		_, err := bw.Write(b)
		return err
	}
	for i, id := range ids {
		st := c.streams[id]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n    {\n      \"stream\": "...)
		b = e.appendStreamID(b, id, "      ")
		b = append(b, ",\n      \"label\": "...)
		if st.entry.Declared {
			b = e.appendLabel(b, st.entry.Descriptor.Label)
			b = append(b, ",\n      \"origin\": "...)
			o, err := st.entry.Descriptor.Origin.MarshalJSON()
			if err != nil {
				return fmt.Errorf("catalogfile: encode: %w", err)
			}
			b = append(b, o...)
			if st.entry.Source != "" {
				b = append(b, ",\n      \"source\": "...)
				b = e.appendString(b, st.entry.Source)
			}
		} else {
			b = append(b, "null,\n      \"origin\": null"...)
		}
		b = append(b, ",\n      \"channels\": ["...)
		for k := range st.descs {
			ch := &st.descs[k]
			if k > 0 {
				b = append(b, ',')
			}
			b = append(b, "\n        {\n          \"stream\": "...)
			b = e.appendStreamID(b, id, "          ")
			b = append(b, ",\n          \"id\": "...)
			b = strconv.AppendUint(b, uint64(ch.ID), 10)
			b = append(b, ",\n          \"name\": "...)
			b = e.appendString(b, ch.Name)
			b = append(b, ",\n          \"label\": "...)
			b = e.appendLabel(b, ch.Label)
			b = append(b, ",\n          \"content\": "...)
			var err error
			if b, err = e.appendContent(b, ch.Content, "          "); err != nil {
				return err
			}
			if src := c.sources[st.srcs[k]]; src != "" {
				b = append(b, ",\n          \"source\": "...)
				b = e.appendString(b, src)
			}
			b = append(b, "\n        }"...)
			if len(b) >= 32<<10 {
				if _, err := bw.Write(b); err != nil {
					return err
				}
				b = b[:0]
			}
		}
		if len(st.descs) > 0 {
			b = append(b, "\n      "...)
		}
		b = append(b, "]\n    }"...)
	}
	b = append(b, "\n  ]\n}\n"...)
	_, err := bw.Write(b)
	return err
}

// encoder holds the scratch space of Catalog.encode.
type encoder struct {
	buf     [64 << 10]byte
	scratch bytes.Buffer
}

// appendString appends s as encoding/json spells it with HTML escaping off.
func (e *encoder) appendString(b []byte, s string) []byte {
	return textfmt.AppendJSONString(b, s, false)
}

func (e *encoder) appendLabel(b []byte, label *string) []byte {
	if label == nil {
		return append(b, "null"...)
	}
	return e.appendString(b, *label)
}

// appendStreamID appends id as an object indented below indent.
func (e *encoder) appendStreamID(b []byte, id frames.StreamID, indent string) []byte {
	b = append(b, "{\n"...)
	b = append(b, indent...)
	b = append(b, "  \"node\": "...)
	b = e.appendString(b, string(id.Node))
	b = append(b, ",\n"...)
	b = append(b, indent...)
	b = append(b, "  \"life\": "...)
	b = strconv.AppendUint(b, uint64(id.Life), 10)
	b = append(b, '\n')
	b = append(b, indent...)
	return append(b, '}')
}

// appendContent appends content as its MarshalJSON spells it, indented
// below indent.
func (e *encoder) appendContent(b []byte, content frames.ChannelContent, indent string) ([]byte, error) {
	switch content.Kind {
	case frames.KindBytes:
		return append(b, `"Bytes"`...), nil
	case frames.KindTextStream:
		return append(b, `"TextStream"`...), nil
	}
	raw, err := content.MarshalJSON()
	if err != nil {
		return b, fmt.Errorf("catalogfile: encode: %w", err)
	}
	e.scratch.Reset()
	if err := json.Indent(&e.scratch, raw, indent, "  "); err != nil {
		return b, fmt.Errorf("catalogfile: encode: %w", err)
	}
	return append(b, e.scratch.Bytes()...), nil
}

// Read decodes a catalog file from r (see the package doc for the format
// and its defaults). Entries without a "source" get source; an entry's own
// "source" is kept. Read reads r to its end, at most [MaxFileSize] bytes,
// and does not close it. It decodes as it reads, a channel entry at a
// time, holding no copy of the file: a catalog of a hundred thousand
// channels costs the catalog itself (see [Catalog]) and some hundred KiB.
//
// Errors: [ErrTooLarge]; [ErrFormat] with the line and column of bad JSON
// or the path of a bad field ("streams[0].channels[2].id"); an error
// wrapping [ErrUnknownVersion]; and, ending with the entry's path, a
// [*ConflictError] for entries that disagree or an error wrapping
// [ErrInvalid]; any error of r, wrapped.
func Read(r io.Reader, source string) (*Catalog, error) {
	lr := &lineReader{r: r, lastNL: -1}
	d := &fileDecoder{lr: lr, dec: json.NewDecoder(lr), source: source, c: New()}
	d.dec.UseNumber()
	if err := d.file(); err != nil {
		return nil, err
	}
	return d.c, nil
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

// errLimit is what lineReader returns past MaxFileSize.
var errLimit = errors.New("over the limit")

// lineReader reads r, at most MaxFileSize bytes, keeping the last 1 to 2
// MiB read and the number of lines before them, so that the offset of a
// JSON error can be given as a line and column without a copy of the
// file.
type lineReader struct {
	r      io.Reader
	n      int64  // bytes read
	window []byte // the last bytes read, from offset base
	base   int64
	lines  int   // newlines before base
	lastNL int64 // offset of the last newline before base, -1 if none
	err    error // of r
}

func (lr *lineReader) Read(p []byte) (int, error) {
	if lr.n > MaxFileSize {
		return 0, errLimit
	}
	// Fill p: the Decoder scans again from the last token at every read,
	// so a run of white space read in small pieces would cost its square.
	n, err := io.ReadFull(lr.r, p)
	if err == io.ErrUnexpectedEOF {
		err = io.EOF
	}
	lr.n += int64(n)
	if len(lr.window)+n > 2<<20 {
		drop := len(lr.window) - 1<<20
		if drop > 0 {
			lr.lines += bytes.Count(lr.window[:drop], []byte("\n"))
			if i := bytes.LastIndexByte(lr.window[:drop], '\n'); i >= 0 {
				lr.lastNL = lr.base + int64(i)
			}
			lr.window = append(lr.window[:0], lr.window[drop:]...)
			lr.base += int64(drop)
		}
	}
	lr.window = append(lr.window, p[:n]...)
	if err != nil && err != io.EOF {
		lr.err = err
	}
	return n, err
}

// where returns "line L, column C" of the byte before offset off (JSON
// errors give the offset after the bad byte), or "byte B" when it is no
// longer held.
func (lr *lineReader) where(off int64) string {
	off = max(off, 1)
	if off < lr.base || off-lr.base > int64(len(lr.window)) {
		return fmt.Sprintf("byte %d", off)
	}
	before := lr.window[:off-lr.base]
	line := 1 + lr.lines + bytes.Count(before, []byte("\n"))
	nl := lr.lastNL
	if i := bytes.LastIndexByte(before, '\n'); i >= 0 {
		nl = lr.base + int64(i)
	}
	return fmt.Sprintf("line %d, column %d", line, off-nl-1)
}

// fileDecoder decodes a catalog file token by token (see Read).
type fileDecoder struct {
	lr     *lineReader
	dec    *json.Decoder
	source string
	c      *Catalog
}

// fail turns an error of the decoder into Read's: the reader's error, the
// size limit, or bad JSON at a line and column.
func (d *fileDecoder) fail(err error) error {
	var se *json.SyntaxError
	switch {
	case errors.Is(err, errLimit):
		return fmt.Errorf("%w (over %d bytes)", ErrTooLarge, MaxFileSize)
	case d.lr.err != nil:
		return fmt.Errorf("catalogfile: read: %w", d.lr.err)
	case errors.As(err, &se):
		return d.syntaxError(se)
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return fmt.Errorf("%w: %s: unexpected end of JSON input", ErrFormat, d.lr.where(d.lr.n))
	}
	return err
}

// syntaxError places se, an error of the Decoder, in the input. Its
// offsets do not count from the start of the input, but what it stopped
// at is still in its buffer, from InputOffset on: within a value, the
// value from its start (scanned again here, the same error comes at the
// same place); between tokens, the byte it refused (after spaces).
func (d *fileDecoder) syntaxError(se *json.SyntaxError) error {
	base := d.dec.InputOffset()
	rest, _ := io.ReadAll(d.dec.Buffered())
	var raw json.RawMessage
	var again *json.SyntaxError
	if err := json.Unmarshal(rest, &raw); errors.As(err, &again) && again.Error() == se.Error() {
		return fmt.Errorf("%w: %s: %v", ErrFormat, d.lr.where(base+again.Offset), se)
	}
	i := bytes.IndexFunc(rest, func(r rune) bool { return r != ' ' && r != '\t' && r != '\n' && r != '\r' })
	if i < 0 {
		return fmt.Errorf("%w: after byte %d: %v", ErrFormat, base, se)
	}
	msg := se.Error()
	for _, ctx := range []string{"after array element", "after object key"} {
		if msg == "expected comma "+ctx || msg == "expected colon "+ctx {
			msg = "invalid character " + quoteChar(rest[i]) + " " + ctx
		}
	}
	return fmt.Errorf("%w: %s: %s", ErrFormat, d.lr.where(base+int64(i)+1), msg)
}

// token reads the next token.
func (d *fileDecoder) token() (json.Token, error) {
	t, err := d.dec.Token()
	if err != nil {
		return nil, d.fail(err)
	}
	return t, nil
}

// value decodes the next value into v, which is a json.RawMessage or
// what a channel entry decodes into.
func (d *fileDecoder) value(v any) error {
	err := d.dec.Decode(v)
	var se *json.SyntaxError
	if errors.As(err, &se) || err == io.EOF || err == io.ErrUnexpectedEOF || errors.Is(err, errLimit) {
		return d.fail(err)
	}
	return err
}

// typeName says what a token is, as encoding/json's UnmarshalTypeError
// does.
func typeName(t json.Token) string {
	switch t := t.(type) {
	case json.Delim:
		if t == '{' {
			return "object"
		}
		return "array"
	case string:
		return "string"
	case json.Number:
		return "number " + string(t)
	case bool:
		return "bool"
	}
	return "null"
}

func (d *fileDecoder) file() error {
	t, err := d.dec.Token()
	if err == io.EOF && d.lr.err == nil {
		return fmt.Errorf("%w: empty input", ErrFormat)
	}
	if err != nil {
		return d.fail(err)
	}
	if t != json.Delim('{') {
		return fmt.Errorf("%w: the top level must be an object", ErrFormat)
	}
	var version json.RawMessage
	for d.dec.More() {
		key, err := d.token()
		if err != nil {
			return err
		}
		switch k, _ := key.(string); {
		case strings.EqualFold(k, "version"):
			if err := d.value(&version); err != nil {
				return err
			}
		case strings.EqualFold(k, "streams"):
			if err := d.streams(); err != nil {
				return err
			}
		default:
			var skip json.RawMessage
			if err := d.value(&skip); err != nil {
				return err
			}
		}
	}
	if _, err := d.token(); err != nil { // the closing brace
		return err
	}
	d.dec.More() // reads up to the next byte that is not a space, if any
	if d.lr.err != nil {
		return d.fail(d.lr.err)
	}
	rest, _ := io.ReadAll(d.dec.Buffered())
	if i := bytes.IndexFunc(rest, func(r rune) bool { return r != ' ' && r != '\t' && r != '\n' && r != '\r' }); i >= 0 {
		return fmt.Errorf("%w: %s: invalid character %s after top-level value", ErrFormat, d.lr.where(d.dec.InputOffset()+int64(i)+1), quoteChar(rest[i]))
	}
	if present(version) {
		var v int64
		if err := decodeField(version, "version", "an integer", &v); err != nil {
			return err
		}
		if v != Version {
			return fmt.Errorf("%w %d (this ds reads version %d)", ErrUnknownVersion, v, Version)
		}
	}
	return nil
}

// quoteChar quotes c as encoding/json's syntax errors do.
func quoteChar(c byte) string {
	switch c {
	case '\'':
		return `'\''`
	case '"':
		return `'"'`
	}
	q := strconv.Quote(string(rune(c)))
	return "'" + q[1:len(q)-1] + "'"
}

// openArray reads the token that opens an array (or null, reporting false) at
// path.
func (d *fileDecoder) openArray(path string) (bool, error) {
	t, err := d.token()
	if err != nil {
		return false, err
	}
	if t == nil {
		return false, nil
	}
	if t != json.Delim('[') {
		return false, fmt.Errorf("%w: %s: want an array, got %s", ErrFormat, path, typeName(t))
	}
	return true, nil
}

func (d *fileDecoder) streams() error {
	ok, err := d.openArray("streams")
	if !ok || err != nil {
		return err
	}
	for i := 0; d.dec.More(); i++ {
		if err := d.stream(fmt.Sprintf("streams[%d]", i)); err != nil {
			return err
		}
	}
	_, err = d.token()
	return err
}

// channelIn is a channel entry as decoded; a nil field was missing or null.
type channelIn struct {
	Stream  *frames.StreamID  `json:"stream"`
	ID      *frames.ChannelID `json:"id"`
	Name    *string           `json:"name"`
	Label   *string           `json:"label"`
	Content contentIn         `json:"content"`
	Source  *string           `json:"source"`
}

// contentIn decodes a channel's content, marking its errors as its own.
type contentIn struct {
	c   frames.ChannelContent
	set bool
}

// contentError is an error of a channel's "content".
type contentError struct{ err error }

func (e *contentError) Error() string { return e.err.Error() }

func (ci *contentIn) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if err := ci.c.UnmarshalJSON(b); err != nil {
		return &contentError{err}
	}
	ci.set = true
	return nil
}

func (d *fileDecoder) stream(path string) error {
	t, err := d.token()
	if err != nil {
		return err
	}
	if t == nil {
		return fmt.Errorf("%w: %s: missing \"stream\"", ErrFormat, path)
	}
	if t != json.Delim('{') {
		return fmt.Errorf("%w: %s: want an object, got %s", ErrFormat, path, typeName(t))
	}
	var e struct{ Stream, Label, Origin, Source json.RawMessage }
	var haveOrigin bool
	var early []channelIn // channel entries before "stream"
	var id frames.StreamID
	j := 0
	for d.dec.More() {
		key, err := d.token()
		if err != nil {
			return err
		}
		var dst *json.RawMessage
		switch k, _ := key.(string); {
		case strings.EqualFold(k, "stream"):
			dst = &e.Stream
		case strings.EqualFold(k, "label"):
			dst = &e.Label
		case strings.EqualFold(k, "origin"):
			dst, haveOrigin = &e.Origin, true
		case strings.EqualFold(k, "source"):
			dst = &e.Source
		case strings.EqualFold(k, "channels"):
			if present(e.Stream) {
				if err := decodeField(e.Stream, path+".stream", `{"node":…,"life":…}`, &id); err != nil {
					return err
				}
			}
			ok, err := d.openArray(path + ".channels")
			if err != nil {
				return err
			}
			for ok && d.dec.More() {
				var ch channelIn
				cpath := fmt.Sprintf("%s.channels[%d]", path, j)
				if err := d.value(&ch); err != nil {
					return channelError(err, cpath)
				}
				if present(e.Stream) {
					if err := d.channel(&ch, cpath, id); err != nil {
						return err
					}
				} else {
					early = append(early, ch)
				}
				j++
			}
			if ok {
				if _, err := d.token(); err != nil {
					return err
				}
			}
			continue
		default:
			var skip json.RawMessage
			dst = &skip
		}
		if err := d.value(dst); err != nil {
			return err
		}
	}
	if _, err := d.token(); err != nil {
		return err
	}

	if !present(e.Stream) {
		return fmt.Errorf("%w: %s: missing \"stream\"", ErrFormat, path)
	}
	desc := frames.StreamDescriptor{}
	if err := decodeField(e.Stream, path+".stream", `{"node":…,"life":…}`, &desc.Stream); err != nil {
		return err
	}
	if err := decodeField(e.Label, path+".label", "a string or null", &desc.Label); err != nil {
		return err
	}
	streamSource, err := decodeSource(e.Source, path, d.source)
	if err != nil {
		return err
	}
	declared := true
	switch {
	case !haveOrigin: // missing: RemoteNode
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
		if err := d.c.AddStream(desc, streamSource); err != nil {
			return fmt.Errorf("%w (at %s)", err, path)
		}
	}
	for k := range early {
		if err := d.channel(&early[k], fmt.Sprintf("%s.channels[%d]", path, k), desc.Stream); err != nil {
			return err
		}
	}
	return nil
}

// channelError names the field of a channel entry that did not decode.
func channelError(err error, path string) error {
	var te *json.UnmarshalTypeError
	var ce *contentError
	switch {
	case errors.As(err, &ce):
		return fmt.Errorf("%w: %s.content: want %s: %v", ErrFormat, path, `"Bytes", "TextStream" or {"JsonRecord":{"schema":…}}`, ce.err)
	case errors.As(err, &te):
		field, _, _ := strings.Cut(te.Field, ".")
		want := map[string]string{
			"":       "an object",
			"stream": `{"node":…,"life":…}`,
			"id":     "a channel id from 1 to 4294967295",
			"name":   "a string",
			"label":  "a string or null",
			"source": "a string",
		}[field]
		if field != "" {
			path += "." + field
		}
		return fmt.Errorf("%w: %s: want %s, got %s", ErrFormat, path, want, te.Value)
	}
	return err
}

// channel adds a decoded channel entry of stream.
func (d *fileDecoder) channel(ch *channelIn, path string, stream frames.StreamID) error {
	if ch.Stream != nil && *ch.Stream != stream {
		return fmt.Errorf("%w: %s: channel of stream %s in the entry of stream %s", ErrFormat, path, *ch.Stream, stream)
	}
	if ch.ID == nil {
		return fmt.Errorf("%w: %s: missing \"id\"", ErrFormat, path)
	}
	if ch.Name == nil {
		return fmt.Errorf("%w: %s: missing \"name\"", ErrFormat, path)
	}
	desc := frames.ChannelDescriptor{Stream: stream, ID: *ch.ID, Name: *ch.Name, Label: ch.Label, Content: ch.Content.c}
	source := d.source
	if ch.Source != nil && *ch.Source != "" {
		source = *ch.Source // the catalog keeps each source once (sourceIndex)
	}
	if err := d.c.AddChannel(desc, source); err != nil {
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

// WriteFile writes c to path in the catalog file format, atomically: it
// writes a temporary file in the same directory, syncs it to disk, and
// renames it over path, then syncs the directory. Readers see either the old
// file or the new one, never a mix; after a crash path holds one of the two.
// On error path is unchanged and the temporary file is removed.
//
// The new file takes the permission bits of the file it replaces, or 0644.
// If path is a symbolic link, the link itself is replaced.
func WriteFile(path string, c *Catalog) (err error) {
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
	if _, err := c.WriteTo(f); err != nil {
		return err
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

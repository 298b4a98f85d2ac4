package segments

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
)

// DSSOnlyError is an input that a reader of DSS captures only (ds ingest)
// refuses: no capture at all, or, with Other, a format the views read
// (a DSQ1 stream, legacy envelopes) but that is not DSS. It unwraps to
// [ErrNotCapture], so that a command treats it as it treats any input
// that is no capture (ds: exit 2).
type DSSOnlyError struct {
	Name  string // the input's name, as given ("-" for stdin)
	Other bool   // a format the views read (DSQ1, legacy envelopes)
}

func (e *DSSOnlyError) Error() string {
	if !e.Other {
		return e.Name + ": not a DSS capture (ds ingest stores DSS captures only)"
	}
	return e.Name + ": not a DSS capture: ds ingest stores DSS captures only (ds log reads this file)"
}

func (e *DSSOnlyError) Unwrap() error { return ErrNotCapture }

// OpenDSSInput opens an input that must hold a DSS capture (ds ingest's):
// "-" is stdin, anything else a file. A regular file must hold a DSS
// capture (by [Detect]) or be empty; one that holds another format is
// refused with a *[DSSOnlyError]. A live input (stdin, a named pipe, a
// device) is checked by its first 8 bytes only, as they come (a producer
// may be slow): the segment magic, at most two bytes of it damaged
// ([StartsLikeDSS]), or nothing at all; anything else is a
// *DSSOnlyError too, not damage. A directory is an error.
//
// It returns the reader to consume (buffered for a live input) and what
// the caller closes (nil for stdin). Errors other than DSSOnlyError name
// the input (those of os.Open name it as a *fs.PathError).
func OpenDSSInput(name string, stdin io.Reader) (io.Reader, io.Closer, error) {
	if name == "-" {
		return startsDSS(name, stdin, nil)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if fi.IsDir() {
		f.Close()
		return nil, nil, fmt.Errorf("%s: is a directory (name its capture files)", name)
	}
	if fi.Mode().IsRegular() && fi.Size() > 0 {
		format, err := Detect(io.NewSectionReader(f, 0, fi.Size()))
		if errors.Is(err, ErrNotCapture) {
			f.Close()
			return nil, nil, &DSSOnlyError{Name: name}
		}
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		if format != InputDSS {
			f.Close()
			return nil, nil, &DSSOnlyError{Name: name, Other: true}
		}
		return f, f, nil
	}
	if !fi.Mode().IsRegular() {
		return startsDSS(name, f, f) // a named pipe, a device: as stdin
	}
	return f, f, nil
}

// startsDSS checks that a live input starts as a DSS capture does (see
// [OpenDSSInput]), reading its first 8 bytes only.
func startsDSS(name string, r io.Reader, c io.Closer) (io.Reader, io.Closer, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	b, err := br.Peek(len(Magic))
	if len(b) == 0 && err == io.EOF {
		return br, c, nil // empty: an empty capture
	}
	if !StartsLikeDSS(b) {
		if c != nil {
			c.Close()
		}
		return nil, nil, &DSSOnlyError{Name: name}
	}
	return br, c, nil
}

package sources

import (
	"errors"
	"io"
	"os"
)

// Errors of a followed file at its end ([FollowFile.Read]).
var (
	ErrTruncated = errors.New("file truncated")
	ErrReplaced  = errors.New("file replaced")
)

// A FollowFile reads a file that grows. At its end it says whether the
// file was truncated (it is now shorter than what was read) or replaced
// (Name now leads to another file): [ErrTruncated], [ErrReplaced];
// otherwise io.EOF, after which a following reader reads again later. A
// file is followed until the reader stops, as tail -f follows: a stream
// that has ended may be followed by another (ds wrap --append), and an
// incomplete record at the end is awaited, not reported.
type FollowFile struct {
	File *os.File
	Name string // the name File was opened by, looked up at each end
	Off  int64  // file offset of the next byte: where File's read position is
}

// Read implements io.Reader.
func (f *FollowFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	f.Off += int64(n)
	if n > 0 || err != io.EOF {
		return n, err
	}
	cur, err := f.File.Stat()
	if err == nil && cur.Size() < f.Off {
		return 0, ErrTruncated
	}
	if fi, nerr := os.Stat(f.Name); err == nil && nerr == nil && !os.SameFile(fi, cur) {
		return 0, ErrReplaced
	}
	return 0, io.EOF
}

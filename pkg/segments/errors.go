package segments

import (
	"errors"
	"fmt"
)

// A CorruptError reports damaged or truncated capture data: the byte range
// [Offset, End) of the input could not be read. Offset is the start of the
// first bad header or record; End is where reading resumed (or the end of
// input). Err says why, and is matched with errors.Is:
//
//   - io.ErrUnexpectedEOF: the header or record at Offset runs past the end
//     of input: a torn tail (End is then the input size), or a damaged
//     length when a resume point lies after Offset (End is that point);
//   - wireformat.ErrBadMagic: bytes where a segment header should start,
//     including bytes before the first segment;
//   - wireformat.ErrUnknownVersion: a segment of a newer major version, skipped
//     up to the next segment;
//   - wireformat.ErrChecksum, ErrTooLarge, ErrBadTag, ErrBadEscape,
//     ErrBadBody, ErrWrongStream: a header or record that fails its checks.
//
// A CorruptError from [Reader.Next] is not sticky: the next call goes on
// after the damaged range.
type CorruptError struct {
	Offset int64 // input offset of the first damaged byte
	End    int64 // input offset where reading resumed; End > Offset
	Err    error
}

// Error returns "segments: corrupt data at offset O (N bytes): " and the
// cause. The caller adds the file name.
func (e *CorruptError) Error() string {
	return fmt.Sprintf("segments: corrupt data at offset %d (%d bytes): %v", e.Offset, e.End-e.Offset, e.Err)
}

// Unwrap returns the cause, for errors.Is and errors.As.
func (e *CorruptError) Unwrap() error { return e.Err }

var (
	// ErrClosed is returned by a [Writer] used after Close.
	ErrClosed = errors.New("segments: writer closed")

	// ErrConflict means a channel declared twice with different
	// descriptors.
	ErrConflict = errors.New("segments: channel already declared with another descriptor")

	// ErrStreamRefused matches (errors.Is) each error of [Store.Ingest]
	// that refuses one stream of an input because its catalog conflicts
	// with the store's: the other streams were stored, and ingesting the
	// same input again refuses it again.
	ErrStreamRefused = errors.New("segments: stream refused: catalog conflict")

	// ErrHeaderRepaired matches (errors.Is) the cause of a *CorruptError
	// whose damaged range is a segment header that the reader recovered
	// from its HeaderCopy or repaired with its parity copy (ds-format(5)
	// "Resynchronisation"): the bytes were damaged, but no frame is lost,
	// and the segment is read on. Views say so instead of "skipped", and
	// count no loss for it; ds check still reports the damage.
	ErrHeaderRepaired = errors.New("repaired from its copy, no frame lost")
)

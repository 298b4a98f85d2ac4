package segments

import (
	"io"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// The seed system's byte streams (ARCHITECTURE.md cases 4: the DSQ1 transport
// stream and the legacy delivery envelope), and the names of the DSS
// format a reader of several formats needs, given here so that the views,
// which read every transport through this package, never import
// pkg/wireformat themselves (ARCHITECTURE.md §1: cmd/ds → views → segments →
// wireformat → frames).

// Header is a segment header (wireformat.Header), as [Entry] carries it.
type Header = wireformat.Header

// DSQ1Reader reads a DSQ1 stream (wireformat.DSQ1Reader).
type DSQ1Reader = wireformat.DSQ1Reader

// Format constants of DSS and DSQ1 (see pkg/wireformat).
const (
	// Magic starts every DSS segment header.
	Magic = wireformat.Magic
	// DSQ1Magic starts a DSQ1 stream.
	DSQ1Magic = wireformat.DSQ1Magic
	// MaxDSQ1JSONSize bounds a DSQ1 header's JSON parts, in bytes.
	MaxDSQ1JSONSize = wireformat.MaxDSQ1JSONSize
	// MaxDSQ1RecordSize bounds a DSQ1 record, in bytes.
	MaxDSQ1RecordSize = wireformat.MaxDSQ1RecordSize
)

// Errors of the DSQ1 reader, for errors.Is.
var (
	ErrDSQ1EmptyRecord = wireformat.ErrDSQ1EmptyRecord
	ErrDSQ1TooLarge    = wireformat.ErrDSQ1TooLarge
)

// NewDSQ1Reader reads a DSQ1 stream's header from r and returns a reader
// of its records (wireformat.NewDSQ1Reader).
func NewDSQ1Reader(r io.Reader) (*DSQ1Reader, error) { return wireformat.NewDSQ1Reader(r) }

// AppendDSQ1Header appends a DSQ1 stream header (wireformat.AppendDSQ1Header).
func AppendDSQ1Header(dst []byte, flowID [16]byte, token []byte, desc frames.StreamDescriptor, channels []frames.ChannelDescriptor) ([]byte, error) {
	return wireformat.AppendDSQ1Header(dst, flowID, token, desc, channels)
}

// DecodeLegacyDelivery decodes one legacy delivery envelope
// (wireformat.DecodeLegacyDelivery): every proper prefix is an error, and
// so are trailing bytes.
func DecodeLegacyDelivery(b []byte) (frames.Delivery, error) {
	return wireformat.DecodeLegacyDelivery(b)
}

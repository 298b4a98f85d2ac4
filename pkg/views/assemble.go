package views

import "github.com/ds-telemetry/ds/pkg/segments"

// The assembler is ingest, not a view (DESIGN.md §1): it lives in package
// segments, below the views, so that ds merge and ds ingest rebuild streams
// without importing views. These names keep the views' code short.
type (
	// Assembler is [segments.Assembler].
	Assembler = segments.Assembler
	// AssemblerOptions is [segments.AssemblerOptions].
	AssemblerOptions = segments.AssemblerOptions
	// Item is [segments.Item].
	Item = segments.Item
	// ItemKind is [segments.ItemKind].
	ItemKind = segments.ItemKind
	// Gap is [segments.Gap].
	Gap = segments.Gap
	// StreamStats is [segments.StreamStats].
	StreamStats = segments.StreamStats
)

// The kinds of [Item], from package segments.
const (
	ItemFrame    = segments.ItemFrame
	ItemGap      = segments.ItemGap
	ItemConflict = segments.ItemConflict
	ItemLate     = segments.ItemLate
	ItemStart    = segments.ItemStart
	ItemTrimmed  = segments.ItemTrimmed
)

// DefaultWindow is [segments.DefaultWindow]: the options' Window fields
// are the assembler's memory bound.
const DefaultWindow = segments.DefaultWindow

// DefaultMemory is [segments.DefaultMemory].
const DefaultMemory = segments.DefaultMemory

// NewAssembler is [segments.NewAssembler].
func NewAssembler(window int, emit func(Item)) *Assembler {
	return segments.NewAssembler(window, emit)
}

// NewAssemblerWith is [segments.NewAssemblerWith].
func NewAssemblerWith(opts AssemblerOptions, emit func(Item)) *Assembler {
	return segments.NewAssemblerWith(opts, emit)
}

package views

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

func TestMergeSelection(t *testing.T) {
	a := frames.StreamID{Node: "a", Life: 1}
	b := frames.StreamID{Node: "b", Life: 1}
	sel := Selection{
		Nodes:    []frames.NodeID{"a", "n9"},
		Channels: []frames.ChannelFilter{frames.ParseChannelPattern("proc.*"), frames.ParseChannelPattern("nosuch")},
		Contents: []frames.ContentKind{frames.KindTextStream, frames.KindBytes},
		Since:    &TimeBound{UnixNS: 2000},
	}
	m, err := NewMergeSelection(sel)
	if err != nil {
		t.Fatal(err)
	}
	var opts segments.MergeOptions
	m.Apply(&opts)
	if opts.Select == nil || opts.Channels == nil || opts.Frame == nil {
		t.Fatalf("Apply left a filter unset: %+v", opts)
	}
	if !opts.Select(frames.StreamDescriptor{Stream: a}) || opts.Select(frames.StreamDescriptor{Stream: b}) {
		t.Error("--node a: wrong streams")
	}
	out := frames.ChannelDescriptor{Stream: a, ID: 2, Name: "proc.x.stdout", Content: frames.TextStream()}
	clock := frames.ChannelDescriptor{Stream: a, ID: 1, Name: frames.ClockChannel, Content: frames.JSONRecord(frames.ClockChannel)}
	if !opts.Channels(a, out) || opts.Channels(a, clock) {
		t.Error("-c proc.* --content text: wrong channels")
	}
	tick := func(ns int64) frames.Frame {
		return frames.Frame{Channel: 1, Payload: fmt.Appendf(nil, `{"unix_ns":%d,"mono_ns":0}`, ns)}
	}
	line := frames.Frame{Channel: 2, Payload: []byte("x\n")}
	if opts.Frame(a, &out, line) {
		t.Error("a frame before any clock reading is kept")
	}
	if opts.Frame(a, &clock, tick(1000)) || opts.Frame(a, &out, line) {
		t.Error("a frame before --since is kept")
	}
	if !opts.Frame(a, &clock, tick(2000)) || !opts.Frame(a, &out, line) {
		t.Error("a frame at --since is left out")
	}
	opts.Frame(b, &out, line) // b has no clock: untimed
	want := []string{"-c nosuch", "--content bytes", "--node n9"}
	if got := m.Unmatched(); !slices.Equal(got, want) {
		t.Errorf("Unmatched %q, want %q", got, want)
	}
	if got := m.Untimed(); !slices.Equal(got, []frames.StreamID{b}) {
		t.Errorf("Untimed %v, want [b#1]", got)
	}

	if _, err := NewMergeSelection(Selection{Until: &TimeBound{FromStart: true}}); !errors.Is(err, ErrBoundFromStart) {
		t.Errorf("+DURATION: %v, want ErrBoundFromStart", err)
	}
	var none segments.MergeOptions
	m, _ = NewMergeSelection(Selection{})
	m.Apply(&none)
	if none.Select != nil || none.Channels != nil || none.Frame != nil {
		t.Error("the empty selection set a filter")
	}
}

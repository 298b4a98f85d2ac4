package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/views"
)

// selectionFlags are the filters every view shares (ARCHITECTURE.md §5, "Shared
// filters"), -c/--channel excepted (each view words its own).
func selectionFlags() []cli.Flag {
	return append(streamFlags(),
		&cli.StringSliceFlag{Name: "content", Usage: "show only channels of `KIND` (text, json, bytes); repeatable"},
		&cli.StringFlag{Name: "grep", Aliases: []string{"g"}, Usage: "show only lines matching `RE` (case-insensitive unless RE has upper case)"},
		&cli.StringFlag{Name: "positions", Usage: "show only positions `A-B` (A-, -B: open ends)"},
		&cli.StringFlag{Name: "since", Usage: "show only what is at or after `TIME` (-10m, +30s from the start, 2026-12-01 10:00)"},
		&cli.StringFlag{Name: "until", Usage: "show only what is at or before `TIME` (as --since)"},
		&cli.StringFlag{Name: "after", Usage: "show only positions after `CURSOR` (from --show-cursor)"},
	)
}

// selectionHelp is the part of a view's description that explains the
// shared filters.
const selectionHelp = `Filters: --node (every life of a node), --stream NODE#LIFE, --origin,
-c/--channel (exact name, or prefix.*), --content text|json|bytes,
-g/--grep RE (a Go regular expression matched against each line as shown,
joined across frames, or a record's JSON; case-insensitive unless RE holds
an upper-case letter, as journalctl does), --positions A-B. Repeating a
flag adds alternatives; different flags must all match. Gaps and drops
concern the whole stream and stay shown whatever -c, --content and -g
select. A filter that matches no channel or stream in the inputs is named
on stderr.

--since and --until take a time: -10m (before now), +30s (after the start
of the inputs, their first clock reading), @UNIXSECONDS, 2026-12-01,
"2026-12-01 10:00[:05]", 10:00[:05] (today), today, yesterday, or RFC 3339;
in local time unless --utc. A frame's time is its stream's latest
datastream.clock reading (within one flush interval of when it was
written); a stream without clock records shows nothing under --since or
--until, and is named on stderr.`

// readSelection reads the shared filters of command c.
func readSelection(c *cli.Command) (views.Selection, error) {
	var sel views.Selection
	for _, n := range c.StringSlice("node") {
		sel.Nodes = append(sel.Nodes, frames.NodeID(n))
	}
	for _, s := range c.StringSlice("stream") {
		id, err := frames.ParseStreamID(s)
		if err != nil {
			return sel, usagef("--stream %q: want NODE#LIFE (%v)", s, err)
		}
		sel.Streams = append(sel.Streams, id)
	}
	for _, o := range c.StringSlice("origin") {
		origin, err := frames.ParseStreamOrigin(o)
		if err != nil {
			return sel, usagef("--origin %q: want RemoteNode, Bootstrap or Orchestrator", o)
		}
		sel.Origins = append(sel.Origins, origin)
	}
	for _, k := range c.StringSlice("content") {
		kind, err := frames.ParseContentKind(k)
		if err != nil {
			return sel, usagef("--content %q: want text, json or bytes", k)
		}
		sel.Contents = append(sel.Contents, kind)
	}
	sel.Channels = channelFilters(c.StringSlice("channel"))
	if g := c.String("grep"); g != "" {
		re, err := views.CompileGrep(g)
		if err != nil {
			return sel, usagef("-g: %v", err)
		}
		sel.Grep = re
	}
	if s := c.String("positions"); s != "" {
		r, err := views.ParsePositionRange(s)
		if err != nil {
			return sel, usagef("--%v", err)
		}
		sel.Positions = &r
	}
	loc := time.Local
	if hasFlag(c, "utc") && c.Bool("utc") {
		loc = time.UTC
	}
	now := time.Now()
	for _, name := range []string{"since", "until"} {
		s := c.String(name)
		if s == "" {
			continue
		}
		b, err := views.ParseTimeBound(s, now, loc)
		if err != nil {
			return sel, usagef("--%s: %v", name, err)
		}
		if name == "since" {
			sel.Since = &b
		} else {
			sel.Until = &b
		}
	}
	if s := c.String("after"); s != "" {
		cur, err := segments.ParseCursor(s)
		if err != nil {
			return sel, usagef("--after: %v", err)
		}
		sel.After = cur
	}
	return sel, nil
}

// hasFlag reports whether command c defines flag name.
func hasFlag(c *cli.Command, name string) bool {
	for _, f := range c.Flags {
		for _, n := range f.Names() {
			if n == name {
				return true
			}
		}
	}
	return false
}

// optionalValue is a flag value that may be given with or without a value
// (--json, --json=frames; --time, --time=delta): without one it is "true".
type optionalValue struct {
	v string
}

func (o *optionalValue) Set(s string) error { o.v = s; return nil }
func (o *optionalValue) String() string     { return o.v }
func (o *optionalValue) Get() any           { return o.v }

// IsBoolFlag lets the flag stand alone.
func (o *optionalValue) IsBoolFlag() bool { return true }

// streamFlags are the stream filters of the views that print no log
// (ds gaps, ds series, ds latest): --node, --stream, --origin.
func streamFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "node", Usage: "show only streams of `NODE` (every life); repeatable"},
		&cli.StringSliceFlag{Name: "stream", Usage: "show only `NODE#LIFE`; repeatable"},
		&cli.StringSliceFlag{Name: "origin", Usage: "show only streams of `ORIGIN` (RemoteNode, Bootstrap, Orchestrator)"},
	}
}

// streamSelection applies the stream filters of a view without a printer
// to each input's sink, and says which matched nothing.
type streamSelection struct {
	sel  views.Selection
	used []*views.StreamSelector
}

// readStreamSelection reads --node, --stream and --origin of command c.
func readStreamSelection(c *cli.Command) (*streamSelection, error) {
	sel, err := readSelection(c)
	if err != nil {
		return nil, err
	}
	return &streamSelection{sel: views.Selection{Nodes: sel.Nodes, Streams: sel.Streams, Origins: sel.Origins}}, nil
}

// wrap returns sink, behind the stream filters when there are any.
func (s *streamSelection) wrap(sink segments.Sink) segments.Sink {
	if len(s.sel.Nodes)+len(s.sel.Streams)+len(s.sel.Origins) == 0 {
		return sink
	}
	x := views.SelectStreams(sink, s.sel)
	s.used = append(s.used, x)
	return x
}

// warn names on stderr the filters that matched no stream of any input,
// and reports whether there were any.
func (s *streamSelection) warn(w io.Writer) bool {
	if len(s.used) == 0 {
		return false
	}
	count := map[string]int{}
	var order []string
	for _, x := range s.used {
		for _, u := range x.Unmatched() {
			if count[u] == 0 {
				order = append(order, u)
			}
			count[u]++
		}
	}
	var none []string
	for _, u := range order {
		if count[u] == len(s.used) {
			none = append(none, u)
		}
	}
	if len(none) > 0 {
		fmt.Fprintf(w, "ds: nothing in the inputs matches %s\n", strings.Join(none, ", "))
	}
	return len(none) > 0
}

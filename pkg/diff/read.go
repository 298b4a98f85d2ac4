package diff

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/sources"
	"github.com/ds-telemetry/ds/pkg/viewer"
	"github.com/ds-telemetry/ds/pkg/views"
)

// DefaultMaxLines is the most lines [Read] keeps of one run when
// Options.MaxLines is 0: 4 million (about 150 bytes each, lines of 100
// bytes).
const DefaultMaxLines = 4 << 20

// maxTextKept bounds the bytes kept of one line, for showing it; the
// line is matched by all of it.
const maxTextKept = 4 << 10

// Options configures [Read] and [Compare].
type Options struct {
	// Select is what lines are compared: the views' shared filters (as ds
	// log takes them). Without a channel or content filter, the lines of
	// every text channel (a ds wrap capture's proc.LABEL.stdout and
	// .stderr); with one, the lines and records it selects (a record by
	// its compact JSON, as ds log shows it). Stream filters apply to the
	// summary too.
	Select views.Selection
	// Matcher decides which lines match (normalisation, --exact,
	// --ignore).
	Matcher Matcher
	// Context is the lines of context around each hunk (diff -U N).
	Context int
	// Timing is how many timing changes to list, the largest first (0:
	// none); TimingMinNS the smallest change listed, in ns.
	Timing      int
	TimingMinNS int64
	// MaxLines bounds the lines kept of each run (0: DefaultMaxLines);
	// a run with more is refused with a *LimitError.
	MaxLines int
}

// A LimitError says that an input holds more lines than Options.MaxLines.
type LimitError struct {
	Input string
	Max   int
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("diff: %s: more than %d lines to compare (narrow them with -c, --since, --until, or raise --max-lines)", e.Input, e.Max)
}

// A Run is one side of a diff, as [Read] read it: its lines and what its
// lifecycle and host records said.
type Run struct {
	Name    string
	streams []frames.StreamID
	procs   []*procState
	host    HostPeaks
	t0, t1  int64 // earliest and latest time seen, ns since the Unix epoch
	lines   []line
	text    []byte // the lines' kept bytes
	chans   []chanRef
	chanIdx map[chanRef]uint32
	losses  Losses
	ignored int
}

// line is one line of a run.
type line struct {
	key     uint64
	ns      int64
	pos     frames.Position
	off     int    // its kept bytes: text[off:off+n]
	n       uint32 // bytes kept
	full    uint32 // bytes in all (min(len, 2^32-1))
	ch      uint32 // index in chans
	ignored bool
}

// chanRef is a channel of a stream, as a run's lines name it.
type chanRef struct {
	stream frames.StreamID
	name   string
}

// Losses counts what a run's capture lacks, as ds log shows it in place:
// gaps, drops, transport losses and damaged ranges. Lines may be missing
// there: differences next to them may be the capture's.
type Losses struct {
	Gaps      int `json:"gaps"`
	Drops     int `json:"drops"`
	Transport int `json:"transport_losses"`
	Damage    int `json:"damaged_ranges"`
}

func (l Losses) any() bool { return l.Gaps+l.Drops+l.Transport+l.Damage > 0 }

// procState is what one process's lifecycle records said.
type procState struct {
	stream  frames.StreamID
	channel string
	p       Process
	exitNS  int64
}

// HostPeaks are the highest host samples of a run (ds wrap --host):
// null where no sample said.
type HostPeaks struct {
	Samples int `json:"samples"`
	// CPUPercent is the highest host.cpu host.total_percent.
	CPUPercent *float64 `json:"cpu_percent"`
	// MemUsedBytes and MemUsedPercent are the highest host.mem total −
	// available, in bytes and percent of the total.
	MemUsedBytes   *uint64  `json:"mem_used_bytes"`
	MemUsedPercent *float64 `json:"mem_used_percent"`
	// GPUPercent is the highest utilization of any GPU (host.gpu), and
	// GPUMemMiB the most memory any used, in MiB.
	GPUPercent *float64 `json:"gpu_percent"`
	GPUMemMiB  *float64 `json:"gpu_mem_mib"`
}

// Read reads one run from the input name with r, as ds log reads it (one
// input, its streams merged by time; r.Set opens it; warnings and damage
// on r.Stderr): the lines opts.Select selects, each with its key
// (opts.Matcher), time and position, and the lifecycle (proc.*.lifecycle)
// and host (host.*) records of the streams it selects, whatever the
// channel filters. It returns the run and the input's outcome (nil or a
// *sources.StatusError); a *LimitError when the input holds more than
// opts.MaxLines lines (the run is then nil).
func Read(ctx context.Context, r *viewer.Inputs, name string, opts Options) (*Run, error) {
	maxLines := opts.MaxLines
	if maxLines <= 0 {
		maxLines = DefaultMaxLines
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	run := &Run{Name: name, chanIdx: make(map[chanRef]uint32)}
	rd := &reader{run: run, m: opts.Matcher, max: maxLines, cancel: cancel}
	lineSel := opts.Select
	rd.any = len(lineSel.Channels) > 0 || len(lineSel.Contents) > 0
	if !rd.any {
		lineSel.Contents = []frames.ContentKind{frames.KindTextStream}
	}
	recSel := views.Selection{Nodes: opts.Select.Nodes, Streams: opts.Select.Streams, Origins: opts.Select.Origins,
		Contents: []frames.ContentKind{frames.KindJSONRecord}}
	pl := views.NewPrinter(io.Discard, views.LogOptions{Select: lineSel, Entries: rd.lineEntry})
	pr := views.NewPrinter(io.Discard, views.LogOptions{Select: recSel, Entries: rd.recordEntry})
	ll, lr := views.NewLogSink(pl, 0), views.NewLogSink(pr, 0)
	err := r.Scan(ctx, []string{name}, false, func(in *sources.Input) segments.Sink {
		ll.File = in.Name
		return &tee{lines: ll, records: lr}
	}, nil)
	ll.A.Flush()
	lr.A.Flush()
	pl.Close()
	pr.Close()
	if rd.over {
		return nil, &LimitError{Input: name, Max: maxLines}
	}
	warnSelection(r.Stderr, pl, !rd.any)
	views.WarnCopies(r.Stderr, views.CopyCounts(ll.A), "compared")
	run.streams = ll.A.Streams()
	return run, err
}

// warnSelection says on w which filters matched nothing (as
// viewer.WarnSelection does), leaving out the text-channel filter that
// Read adds itself when added is set.
func warnSelection(w io.Writer, p *views.Printer, added bool) {
	var u []string
	for _, f := range p.Unmatched() {
		if !added || f != "--content text" {
			u = append(u, f)
		}
	}
	if len(u) > 0 {
		fmt.Fprintf(w, "ds: nothing in the inputs matches %s\n", strings.Join(u, ", "))
	}
	if st := p.Untimed(); len(st) > 0 {
		names := make([]string, len(st))
		for i, s := range st {
			names[i] = s.String()
		}
		fmt.Fprintf(w, "ds: warning: --since/--until: %s has no clock records before its frames; not shown\n", strings.Join(names, ", "))
	}
}

// tee feeds one input to the two printers: the lines', and the
// records' (lifecycle and host) for the summary. Damage goes to the
// lines' only, where it is counted once.
type tee struct {
	lines, records *views.LogSink
}

func (t *tee) Header(h segments.SegmentHeader) { t.lines.Header(h); t.records.Header(h) }
func (t *tee) Channel(d frames.ChannelDescriptor) {
	t.lines.Channel(d)
	t.records.Channel(d)
}
func (t *tee) Frame(s frames.StreamID, f frames.Frame) { t.lines.Frame(s, f); t.records.Frame(s, f) }
func (t *tee) Ended(s frames.StreamID)                 { t.lines.Ended(s); t.records.Ended(s) }
func (t *tee) Trimmed(s frames.StreamID, before frames.Position, store bool) {
	t.lines.Trimmed(s, before, store)
	t.records.Trimmed(s, before, store)
}
func (t *tee) Damage(offset, end int64, torn bool, err error) { t.lines.Damage(offset, end, torn, err) }

// reader collects a run from the printers' entries.
type reader struct {
	run    *Run
	m      Matcher
	any    bool // the selection names channels or contents: records and bytes are lines too
	max    int
	over   bool
	cancel context.CancelFunc
	buf    []byte
}

func (rd *reader) seen(ns int64) {
	if ns == 0 {
		return
	}
	r := rd.run
	if r.t0 == 0 || ns < r.t0 {
		r.t0 = ns
	}
	r.t1 = max(r.t1, ns)
}

// lineEntry takes an entry of the lines' printer.
func (rd *reader) lineEntry(e *views.Entry) {
	rd.seen(e.StartNS) // the first clock reading: ds log --time=since-start's origin
	rd.seen(e.TimeNS)
	r := rd.run
	var text []byte
	switch e.Kind {
	case views.EntryLine:
		text = e.Payload
		if n := len(text); n > 0 && text[n-1] == '\r' {
			text = text[:n-1]
		}
		text = lastSegment(text)
	case views.EntryRecord:
		if !rd.any {
			return
		}
		var b bytes.Buffer
		if json.Compact(&b, e.Payload) == nil {
			rd.buf = append(rd.buf[:0], b.Bytes()...)
			text = rd.buf
		} else {
			text = e.Payload
		}
	case views.EntryBytes:
		if !rd.any {
			return
		}
		text = e.Payload
	case views.EntryGap:
		r.losses.Gaps++
		return
	case views.EntryDrop:
		r.losses.Drops++
		return
	case views.EntryTransport:
		r.losses.Transport++
		return
	case views.EntryDamage:
		r.losses.Damage++
		return
	default:
		return
	}
	if rd.over {
		return
	}
	if len(r.lines) >= rd.max {
		rd.over = true
		rd.cancel()
		return
	}
	ref := chanRef{e.Stream, e.Channel}
	ch, ok := r.chanIdx[ref]
	if !ok {
		ch = uint32(len(r.chans))
		r.chans = append(r.chans, ref)
		r.chanIdx[ref] = ch
	}
	key, ignored := rd.m.Key(channelKey(e.Channel), text)
	if ignored {
		r.ignored++
	}
	kept := text[:min(len(text), maxTextKept)]
	r.lines = append(r.lines, line{key: key, ns: e.TimeNS, pos: e.Position, off: len(r.text), n: uint32(len(kept)),
		full: uint32(min(len(text), 1<<32-1)), ch: ch, ignored: ignored})
	r.text = append(r.text, kept...)
}

// channelKey is the name a channel is matched by: proc.LABEL.X is
// proc.*.X, so that runs of one job under other labels match.
func channelKey(name string) string {
	rest, ok := strings.CutPrefix(name, "proc.")
	if !ok {
		return name
	}
	if i := strings.IndexByte(rest, '.'); i >= 0 {
		return "proc.*" + rest[i:]
	}
	return name
}

// shortChannel is the name a line's channel is shown by: stdout and
// stderr for proc.LABEL.stdout and .stderr (the summary names the
// process), the name otherwise.
func shortChannel(name string) string {
	if k := channelKey(name); k == "proc.*.stdout" || k == "proc.*.stderr" {
		return k[len("proc.*."):]
	}
	return name
}

// lastSegment returns what a terminal shows of a line with bare CRs:
// its last segment that is not empty (as ds log shows it).
func lastSegment(line []byte) []byte {
	for {
		i := bytes.LastIndexByte(line, '\r')
		if i < 0 {
			return line
		}
		if i+1 < len(line) {
			return line[i+1:]
		}
		line = line[:i]
	}
}

// hostSample is the part of host.*.v1 records the peaks read.
type hostSample struct {
	Host struct {
		TotalPct *float64 `json:"total_percent"`
	} `json:"host"`
	TotalBytes     *uint64  `json:"total_bytes"`
	AvailableBytes *uint64  `json:"available_bytes"`
	UsedPct        *float64 `json:"used_percent"`
	GPUs           []struct {
		UtilPct *float64 `json:"utilization_gpu_percent"`
		MemUsed *float64 `json:"memory_used_mib"`
	} `json:"gpus"`
}

// recordEntry takes an entry of the records' printer: lifecycle and
// host records.
func (rd *reader) recordEntry(e *views.Entry) {
	rd.seen(e.StartNS)
	rd.seen(e.TimeNS)
	if e.Kind != views.EntryRecord {
		return
	}
	r := rd.run
	switch e.Channel {
	case "host.cpu", "host.mem", "host.gpu":
		var s hostSample
		if json.Unmarshal(e.Payload, &s) != nil {
			return
		}
		r.host.Samples++
		h := &r.host
		maxF(&h.CPUPercent, s.Host.TotalPct)
		if s.TotalBytes != nil && s.AvailableBytes != nil && *s.AvailableBytes <= *s.TotalBytes {
			used := *s.TotalBytes - *s.AvailableBytes
			if h.MemUsedBytes == nil || used > *h.MemUsedBytes {
				h.MemUsedBytes = &used
			}
		}
		maxF(&h.MemUsedPercent, s.UsedPct)
		for _, g := range s.GPUs {
			maxF(&h.GPUPercent, g.UtilPct)
			maxF(&h.GPUMemMiB, g.MemUsed)
		}
		return
	}
	label, ok := views.LifecycleLabel(e.Channel)
	if !ok {
		return
	}
	l, err := views.ParseLifecycle(e.Payload)
	if err != nil {
		return
	}
	var ps *procState
	for _, p := range r.procs {
		if p.stream == e.Stream && p.channel == e.Channel {
			ps = p
		}
	}
	if ps == nil || l.Event == "started" && ps.p.PID != 0 {
		ps = &procState{stream: e.Stream, channel: e.Channel, p: Process{Stream: e.Stream.String(), Label: label}}
		r.procs = append(r.procs, ps)
	}
	p := &ps.p
	switch l.Event {
	case "started":
		p.PID, p.Argv, p.Cwd = l.PID, l.Argv, l.Cwd
	case "spawn_failed":
		if p.Exit == nil {
			p.Argv, p.Cwd = l.Argv, l.Cwd
			p.Exit = &Exit{Kind: "spawn_failed", Error: l.Error}
			if l.ExitCode != nil {
				p.Exit.Value = *l.ExitCode
			}
			ps.exitNS = e.TimeNS
		}
	case "exited":
		if p.Exit != nil {
			return
		}
		switch {
		case l.Status != nil:
			p.Exit = &Exit{Kind: l.Status.Kind, Value: l.Status.Value}
		case l.ExitCode != nil:
			p.Exit = &Exit{Kind: "code", Value: *l.ExitCode}
		default:
			p.Exit = &Exit{Kind: "unknown"}
		}
		p.WallNS, p.UserNS, p.SysNS, p.MaxRSSBytes = l.WallNS, l.UserNS, l.SysNS, l.MaxRSSBytes
		ps.exitNS = e.TimeNS
	}
}

func maxF(dst **float64, v *float64) {
	if v != nil && (*dst == nil || *v > **dst) {
		x := *v
		*dst = &x
	}
}

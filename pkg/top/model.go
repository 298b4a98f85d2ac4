package top

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"sync"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// Options configures [New].
type Options struct {
	// History is how many samples of each gauge are kept for its
	// sparkline (0: 120).
	History int
	// Lines is how many text lines are kept (0: 200).
	Lines int
}

// maxPartial bounds a text line held while its newline has not come: a
// longer one is shown cut there.
const maxPartial = 4 << 10

// Model is the state ds top shows; it is a [segments.Sink] (and an
// Idler). It is safe for concurrent use: sinks are fed while the view
// renders.
type Model struct {
	mu      sync.Mutex
	opts    Options
	chans   map[chanKey]*channel
	hosts   map[frames.NodeID]*host
	order   []*host // hosts in the order first seen
	procs   []*proc
	lines   []Line // the last text lines, oldest first
	streams map[frames.StreamID]bool
	nodes   map[frames.NodeID]bool
	ended   map[frames.StreamID]bool
	frames  uint64 // frames of channels but the writer's own (datastream.*)
	damaged int
}

type chanKey struct {
	stream frames.StreamID
	id     frames.ChannelID
}

// channel is a declared channel: what it is and, for a text channel,
// the line being joined.
type channel struct {
	desc    frames.ChannelDescriptor
	kind    uint8 // what the model does with its frames
	partial []byte
	proc    *proc
}

const (
	kindOther uint8 = iota
	kindText
	kindCPU
	kindMem
	kindNet
	kindGPU
	kindLifecycle
)

// Line is one text line of a channel, its control characters not yet
// escaped.
type Line struct {
	Stream  frames.StreamID
	Channel string
	Text    string
}

// host is the host state of one node: its samples, whichever stream
// (life) of the node recorded them (a restarted ds host goes on).
type host struct {
	node                      frames.NodeID
	cpu                       *cpuSample
	mem                       *memSample
	net                       *netSample
	gpu                       *gpuSample
	cpuHist, memHist, netHist []float64
	lastMS                    float64 // the latest sample_unix_ms
}

// proc is one process ds wrap ran: its label and its last event.
type proc struct {
	stream  frames.StreamID
	label   string
	state   string // "running", "exited", "failed"
	pid     int
	code    *int
	signal  string
	message string
}

type cpuSample struct {
	SampleUnixMS *float64 `json:"sample_unix_ms"`
	Host         struct {
		LogicalCPUs *int     `json:"logical_cpus"`
		TotalPct    *float64 `json:"total_percent"`
		UserPct     *float64 `json:"user_percent"`
		SystemPct   *float64 `json:"system_percent"`
		IowaitPct   *float64 `json:"iowait_percent"`
		Load1       *float64 `json:"load1"`
		Load5       *float64 `json:"load5"`
		Load15      *float64 `json:"load15"`
	} `json:"host"`
	Cores []struct {
		CPU      *int     `json:"cpu"`
		Online   *bool    `json:"online"`
		TotalPct *float64 `json:"total_percent"`
	} `json:"cores"`
}

type memSample struct {
	SampleUnixMS   *float64 `json:"sample_unix_ms"`
	TotalBytes     *float64 `json:"total_bytes"`
	AvailableBytes *float64 `json:"available_bytes"`
	UsedPct        *float64 `json:"used_percent"`
	SwapTotalBytes *float64 `json:"swap_total_bytes"`
	SwapUsedPct    *float64 `json:"swap_used_percent"`
}

type netSample struct {
	SampleUnixMS *float64 `json:"sample_unix_ms"`
	Interfaces   []struct {
		Name   string   `json:"name"`
		RxPerS *float64 `json:"rx_bytes_per_s"`
		TxPerS *float64 `json:"tx_bytes_per_s"`
	} `json:"interfaces"`
}

type gpuSample struct {
	SampleUnixMS *float64 `json:"sample_unix_ms"`
	GPUs         []struct {
		Index    *int     `json:"index"`
		Name     string   `json:"name"`
		UtilPct  *float64 `json:"utilization_gpu_percent"`
		MemUsed  *float64 `json:"memory_used_mib"`
		MemTotal *float64 `json:"memory_total_mib"`
		TempC    *float64 `json:"temperature_c"`
		PowerW   *float64 `json:"power_w"`
	} `json:"gpus"`
}

type lifecycle struct {
	Event  string `json:"event"`
	PID    int    `json:"pid"`
	Error  string `json:"error"`
	Status struct {
		Kind  string `json:"kind"`
		Value int    `json:"value"`
		Name  string `json:"name"`
	} `json:"status"`
	ExitCode *int `json:"exit_code"`
}

// New returns an empty model.
func New(opts Options) *Model {
	if opts.History <= 0 {
		opts.History = 120
	}
	if opts.Lines <= 0 {
		opts.Lines = 200
	}
	return &Model{
		opts:    opts,
		chans:   make(map[chanKey]*channel),
		hosts:   make(map[frames.NodeID]*host),
		streams: make(map[frames.StreamID]bool),
		nodes:   make(map[frames.NodeID]bool),
		ended:   make(map[frames.StreamID]bool),
	}
}

// Header implements segments.Sink.
func (m *Model) Header(h segments.SegmentHeader) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.streams[h.Stream.Stream] = true
	m.nodes[h.Stream.Stream.Node] = true
	for _, d := range h.Channels {
		m.channelLocked(d)
	}
}

// Channel implements segments.Sink.
func (m *Model) Channel(d frames.ChannelDescriptor) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.channelLocked(d)
}

func (m *Model) channelLocked(d frames.ChannelDescriptor) {
	k := chanKey{d.Stream, d.ID}
	if m.chans[k] != nil {
		return
	}
	m.streams[d.Stream] = true
	m.nodes[d.Stream.Node] = true
	ch := &channel{desc: d}
	switch {
	case d.Name == "host.cpu":
		ch.kind = kindCPU
	case d.Name == "host.mem":
		ch.kind = kindMem
	case d.Name == "host.net":
		ch.kind = kindNet
	case d.Name == "host.gpu":
		ch.kind = kindGPU
	case strings.HasPrefix(d.Name, "proc.") && strings.HasSuffix(d.Name, ".lifecycle"):
		ch.kind = kindLifecycle
		ch.proc = &proc{stream: d.Stream, label: strings.TrimSuffix(strings.TrimPrefix(d.Name, "proc."), ".lifecycle"), state: "declared"}
		m.procs = append(m.procs, ch.proc)
	case d.Content.Kind == frames.KindTextStream:
		ch.kind = kindText
	}
	m.chans[k] = ch
}

// Frame implements segments.Sink: frames are taken as they come (a live
// view shows what arrived; ds log is the view of record).
func (m *Model) Frame(s frames.StreamID, f frames.Frame) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch := m.chans[chanKey{s, f.Channel}]
	if ch == nil || strings.HasPrefix(ch.desc.Name, "datastream.") {
		return
	}
	m.frames++
	switch ch.kind {
	case kindText:
		m.text(ch, f.Payload)
	case kindCPU, kindMem, kindNet, kindGPU:
		m.hostRecord(s, ch.kind, f.Payload)
	case kindLifecycle:
		var ev lifecycle
		if json.Unmarshal(f.Payload, &ev) != nil {
			return
		}
		p := ch.proc
		switch ev.Event {
		case "started":
			p.state, p.pid = "running", ev.PID
		case "spawn_failed":
			p.state, p.message, p.code = "failed", ev.Error, ev.ExitCode
		case "exited":
			p.state = "exited"
			if ev.Status.Kind == "signal" {
				p.signal = ev.Status.Name
				if p.signal == "" {
					p.signal = "signal " + itoa(ev.Status.Value)
				}
			} else {
				v := ev.Status.Value
				p.code = &v
			}
		}
	}
}

// text joins the frames of a text channel into lines.
func (m *Model) text(ch *channel, b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			ch.partial = append(ch.partial, b...)
			if len(ch.partial) >= maxPartial {
				m.line(ch, ch.partial)
				ch.partial = ch.partial[:0]
			}
			return
		}
		line := b[:i]
		if len(ch.partial) > 0 {
			line = append(ch.partial, line...)
			ch.partial = ch.partial[:0]
		}
		m.line(ch, line)
		b = b[i+1:]
	}
}

// line keeps one line of ch.
func (m *Model) line(ch *channel, b []byte) {
	b = bytes.TrimSuffix(b, []byte("\r"))
	if i := bytes.LastIndexByte(b, '\r'); i >= 0 {
		b = b[i+1:] // what follows a CR overwrites what came before
	}
	if len(m.lines) >= m.opts.Lines {
		n := copy(m.lines, m.lines[1:])
		m.lines = m.lines[:n]
	}
	m.lines = append(m.lines, Line{Stream: ch.desc.Stream, Channel: ch.desc.Name, Text: string(b)})
}

// hostRecord takes a host sample of stream s.
func (m *Model) hostRecord(s frames.StreamID, kind uint8, payload []byte) {
	h := m.hosts[s.Node]
	if h == nil {
		h = &host{node: s.Node}
		m.hosts[s.Node] = h
		m.order = append(m.order, h)
	}
	var ms *float64
	switch kind {
	case kindCPU:
		var c cpuSample
		if json.Unmarshal(payload, &c) != nil {
			return
		}
		h.cpu, ms = &c, c.SampleUnixMS
		h.cpuHist = m.push(h.cpuHist, c.Host.TotalPct)
	case kindMem:
		var v memSample
		if json.Unmarshal(payload, &v) != nil {
			return
		}
		h.mem, ms = &v, v.SampleUnixMS
		h.memHist = m.push(h.memHist, v.UsedPct)
	case kindNet:
		var v netSample
		if json.Unmarshal(payload, &v) != nil {
			return
		}
		h.net, ms = &v, v.SampleUnixMS
		rx, tx, ok := v.totals()
		sum := rx + tx
		if !ok {
			sum = math.NaN()
		}
		h.netHist = m.push(h.netHist, &sum)
	case kindGPU:
		var v gpuSample
		if json.Unmarshal(payload, &v) != nil {
			return
		}
		h.gpu, ms = &v, v.SampleUnixMS
	}
	if ms != nil && *ms > h.lastMS {
		h.lastMS = *ms
	}
}

// totals returns the receive and send rates of every interface but lo,
// and whether any had both.
func (n *netSample) totals() (rx, tx float64, ok bool) {
	for _, i := range n.Interfaces {
		if i.Name == "lo" || i.RxPerS == nil || i.TxPerS == nil {
			continue
		}
		rx, tx, ok = rx+*i.RxPerS, tx+*i.TxPerS, true
	}
	return rx, tx, ok
}

// push appends v (NaN for none) to a history, keeping the last History.
func (m *Model) push(h []float64, v *float64) []float64 {
	x := math.NaN()
	if v != nil {
		x = *v
	}
	if len(h) >= m.opts.History {
		n := copy(h, h[1:])
		h = h[:n]
	}
	return append(h, x)
}

// Ended implements segments.Sink.
func (m *Model) Ended(s frames.StreamID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ended[s] = true
}

// Trimmed implements segments.Sink.
func (m *Model) Trimmed(frames.StreamID, frames.Position, bool) {}

// Damage implements segments.Sink: damage is counted (and said on
// stderr by the caller's reporter).
func (m *Model) Damage(offset, end int64, torn bool, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.damaged++
}

// Idle implements segments.Idler: a live input gone quiet shows the
// partial lines of its text channels (their rest comes as lines of
// their own).
func (m *Model) Idle(quiet bool) {
	if !quiet {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ch := range m.chans {
		if ch.kind == kindText && len(ch.partial) > 0 {
			m.line(ch, ch.partial)
			ch.partial = ch.partial[:0]
		}
	}
}

func itoa(n int) string {
	return string(appendInt(nil, n))
}

func appendInt(b []byte, n int) []byte {
	if n < 0 {
		b = append(b, '-')
		n = -n
	}
	var d [20]byte
	i := len(d)
	for {
		i--
		d[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	return append(b, d[i:]...)
}

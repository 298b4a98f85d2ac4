package report

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strconv"
	"strings"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
	"github.com/ds-telemetry/ds/pkg/sources"
	"github.com/ds-telemetry/ds/pkg/textfmt"
	"github.com/ds-telemetry/ds/pkg/viewer"
	"github.com/ds-telemetry/ds/pkg/views"
)

// DefaultMaxBytes is the size budget of a page when Options.MaxBytes is 0:
// 20 MiB, which Chromium opens in under 2 s (about 775 000 short rows,
// on a busy 2-core machine; scripts/bench_report.sh).
const DefaultMaxBytes = 20 << 20

// MinMaxBytes is the smallest budget [Build] takes: the page's own
// markup, style and script need about 64 KiB.
const MinMaxBytes = 64 << 10

// maxPayloadShown bounds the bytes of one line, record or bytes frame the
// page shows; the rest is named, with its ds log command.
const maxPayloadShown = 16 << 10

// Options configures [Build].
type Options struct {
	// MaxBytes is the page's size budget in bytes (0: DefaultMaxBytes;
	// at least MinMaxBytes). When the log does not fit, its middle is
	// elided, except the lines that matter (errors, lifecycle events,
	// losses) while they fit in a tenth of the budget; each elided range
	// is named on the page with the ds log command that prints it.
	MaxBytes int64
	// Select is what the log shows (the views' shared filters, as ds log
	// takes them); the summary and the charts always cover everything.
	Select views.Selection
	// Inputs are the input names as the user gave them, for the ds log
	// commands the page names (nil: the names given to Build).
	Inputs []string
}

// Result says what [Build] put on the page.
type Result struct {
	Bytes     int64    // bytes written
	Lines     uint64   // log lines shown
	Elided    uint64   // log lines elided to keep to the budget
	Elisions  []Elided // the elided ranges, in log order
	Streams   int      // streams summarised
	Samples   int      // host samples charted
	MaxBytes  int64    // the budget applied
	Truncated bool     // Elided > 0
}

// Elided is one range of the log left off the page: Lines lines of the
// streams in Ranges, and the command that prints them.
type Elided struct {
	Lines   uint64
	Ranges  []StreamRange
	Command string // ds log … that prints them (one per stream, joined by "; ")
}

// StreamRange is positions From..To of Stream.
type StreamRange struct {
	Stream   frames.StreamID
	From, To frames.Position
}

// Build reads the named inputs with r (as ds log does: merged by time,
// r.Set opens them; warnings and damage on r.Stderr) and writes one
// self-contained HTML page to w: a summary of every stream (command, exit
// status, duration, resource usage, losses and damage with their
// reasons), charts of the host.cpu, host.mem, host.net and host.gpu
// samples on the run's time axis, and the log, with stdout and stderr
// lines (their SGR colours rendered, everything else escaped), lifecycle
// events, gaps, drops and damaged ranges in place, each line linked by
// #NODE#LIFE/POSITION. The page loads nothing (a Content-Security-Policy
// forbids it) and runs only its own script.
//
// It returns what it wrote and the inputs' worst outcome (nil or a
// *sources.StatusError), or the write error. Build is not safe for
// concurrent use of one r.
func Build(ctx context.Context, r *viewer.Inputs, names []string, opts Options, w io.Writer) (Result, error) {
	if opts.MaxBytes == 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	opts.MaxBytes = max(opts.MaxBytes, MinMaxBytes)
	if opts.Inputs == nil {
		opts.Inputs = names
	}
	b := newBuilder(opts)
	p := views.NewPrinter(io.Discard, views.LogOptions{Select: opts.Select, Entries: b.entry})
	log := views.NewLogSink(p, 0)
	info := views.NewInfo(0)
	if len(names) != 1 || names[0] == "-" || viewer.OutOfOrder(names[0]) {
		info = views.NewExactInfo(0)
	}
	err := r.Scan(ctx, names, false, func(in *sources.Input) segments.Sink {
		info.File(in.Name)
		return &tee{log: log, info: info, file: in.Name, b: b}
	}, func(in *sources.Input) {
		info.FileSize(in.BytesRead)
	})
	log.A.Flush()
	p.Close()
	files, streams := info.Summary()
	n, werr := b.write(w, files, streams)
	res := b.result(n, len(streams))
	if werr != nil {
		return res, werr
	}
	return res, err
}

// tee feeds one input to the log (through its assembler and printer), to
// the summary and to the charts.
type tee struct {
	log  *views.LogSink
	info *views.Info
	file string
	b    *builder
}

func (t *tee) Header(h segments.SegmentHeader) {
	t.log.Header(h)
	t.info.Header(h)
	for _, c := range h.Channels {
		t.b.channel(c)
	}
}

func (t *tee) Channel(d frames.ChannelDescriptor) {
	t.log.Channel(d)
	t.info.Channel(d)
	t.b.channel(d)
}

func (t *tee) Frame(s frames.StreamID, f frames.Frame) {
	t.log.Frame(s, f)
	t.info.Frame(s, f)
	t.b.frame(s, f)
}

func (t *tee) Ended(s frames.StreamID) {
	t.log.Ended(s)
	t.info.Ended(s)
}

func (t *tee) Trimmed(s frames.StreamID, before frames.Position, store bool) {
	t.log.Trimmed(s, before, store)
	t.info.Trimmed(s, before, store)
}

func (t *tee) Damage(offset, end int64, torn bool, err error) {
	t.log.File = t.file
	t.log.Damage(offset, end, torn, err)
	t.info.Damage(offset, end, torn, err)
}

// streamState is what the page keeps of one stream.
type streamState struct {
	id      frames.StreamID
	index   int
	chans   map[frames.ChannelID]*chanState
	small   [64]*chanState // chans of the ids below 64 (registration hands out 1, 2, 3…)
	clockID frames.ChannelID
	clockNS int64 // its latest clock reading, as the charts see it
	procs   []*procState
	pos     frames.Position // the last row's position
	posText []byte          // its text; nil: none yet
}

// chanState is one channel of a stream as the page shows it.
type chanState struct {
	class  int // the CSS class cN that names it
	name   string
	stderr bool
	host   string // "cpu", "mem", "net", "gpu" for host samples; "" otherwise
	proc   *procState
	// linePrefix caches the start of the rows of its text lines,
	// ",[KIND,STREAM,", by flags fSE|fER (nil: not yet).
	linePrefix [4][]byte
}

// procState is what the lifecycle records of one process said.
type procState struct {
	label   string
	started *views.Lifecycle
	exited  *views.Lifecycle
	failed  *views.Lifecycle
	exitRow string // the id of its exit's row
}

// tailBuf is one of the two buffers of the page's tail: rows rendered
// into buf.
type tailBuf struct {
	buf  []byte
	rows []row // their data in buf, one after the other
}

// row is one line of the log, rendered, kept for the page's tail. It
// holds no pointer (a tail holds hundreds of thousands): its data is
// buf[previous row's end:end] of its tail buffer, st the index of its
// stream (-1: none).
type row struct {
	end       int
	st        int32
	important bool
	pos, last frames.Position
}

// A row kind is what the page's data says of a row besides its place and
// text: its classes and the word of its kind column. The data has a
// table of them ("kinds"), rows the index.
type kindKey struct {
	flags uint16
	what  uint8 // index in whatWords
	class int32 // the channel's cN, -1: none
}

// The flags of a row kind: each a class of the page's style.
const (
	fSE = 1 << iota // stderr
	fER             // reads like an error
	fLC             // lifecycle event
	fEX             // an exit
	fLS             // a loss or note
	fDM             // damage
	fEL             // an elided range
)

var flagClasses = []string{"se", "er", "lc", "ex", "ls", "dm", "el"}

// whatWords are the words of the kind column.
var whatWords = []string{"", "gap", "dropped", "lost", "start", "trimmed", "damage", "elided"}

const (
	whatNone = iota
	whatGap
	whatDropped
	whatLost
	whatStart
	whatTrimmed
	whatDamage
	whatElided
)

// builder collects the page as the entries come.
type builder struct {
	opts    Options
	streams map[frames.StreamID]*streamState
	last    *streamState // the stream looked up last
	order   []*streamState
	chans   []*chanState // by class

	// t0 is the time of the first entry with one (ns since the Unix
	// epoch), the origin of the page's times; tmin and t1 the earliest
	// and latest.
	t0, tmin, t1 int64

	// The log: rows fill head up to headCap, then go through the tail
	// ring (tailCap bytes); what leaves the ring goes to mid when it is
	// important and fits in midCap, and is elided otherwise.
	head, mid       []byte
	headCap, midCap int
	headFull        bool
	tail            [2]tailBuf
	cur             int // the tail buffer rows go into
	tailCap         int
	run             *elision
	elisions        []Elided
	lines, elided   uint64

	errors  uint64
	losses  []note // the page's list of losses and damage
	nlosses uint64
	damage  []note
	marks   []mark // loss, damage and exit times, for the charts

	host      charts
	kinds     []kindKey // the row kinds, by index
	kindIndex map[kindKey]int32
	ms        int64  // the last row's time (ms since t0)
	msText    []byte // its text; nil: none yet
}

// note is one loss or damaged range as the summary lists it.
type note struct {
	stream string
	text   string
	rowID  string
}

// mark is a time the charts mark: a loss, damage or an exit.
type mark struct {
	ns    int64
	class string
	title string
}

// elision is the elided range being collected.
type elision struct {
	lines  uint64
	ranges []StreamRange
}

func newBuilder(opts Options) *builder {
	avail := int(opts.MaxBytes - min(opts.MaxBytes/4, 512<<10))
	return &builder{
		opts:    opts,
		streams: make(map[frames.StreamID]*streamState),
		headCap: avail * 45 / 100,
		tailCap: avail * 45 / 100,
		midCap:  avail / 10,
	}
}

// stream returns the state of stream s, declaring it if it is new.
func (b *builder) stream(s frames.StreamID) *streamState {
	if b.last != nil && b.last.id == s {
		return b.last
	}
	if st := b.streams[s]; st != nil {
		b.last = st
		return st
	}
	st := &streamState{id: s, index: len(b.order), chans: make(map[frames.ChannelID]*chanState)}
	b.streams[s] = st
	b.order = append(b.order, st)
	return st
}

// channel records a channel descriptor; the first for an id wins.
func (b *builder) channel(d frames.ChannelDescriptor) {
	st := b.stream(d.Stream)
	if st.chans[d.ID] != nil {
		return
	}
	c := &chanState{class: len(b.chans), name: d.Name, stderr: strings.HasSuffix(d.Name, ".stderr")}
	switch d.Name {
	case "host.cpu":
		c.host = "cpu"
	case "host.mem":
		c.host = "mem"
	case "host.net":
		c.host = "net"
	case "host.gpu":
		c.host = "gpu"
	case frames.ClockChannel:
		st.clockID = d.ID
	}
	if label, ok := views.LifecycleLabel(d.Name); ok {
		c.proc = &procState{label: label}
		st.procs = append(st.procs, c.proc)
	}
	b.chans = append(b.chans, c)
	st.chans[d.ID] = c
	if d.ID < frames.ChannelID(len(st.small)) {
		st.small[d.ID] = c
	}
}

// channel returns channel id of st, nil if undeclared.
func (st *streamState) channel(id frames.ChannelID) *chanState {
	if id < frames.ChannelID(len(st.small)) {
		return st.small[id]
	}
	return st.chans[id]
}

// frame sees every frame as it is read, for the charts: host samples are
// charted whatever the log shows (the selection, the budget), and timed
// by their own sample_unix_ms, or by the clock reading before them.
func (b *builder) frame(s frames.StreamID, f frames.Frame) {
	st := b.stream(s)
	if f.Channel == st.clockID && st.clockID != 0 {
		var c struct {
			UnixNS int64 `json:"unix_ns"`
		}
		if json.Unmarshal(f.Payload, &c) == nil && c.UnixNS > 0 {
			st.clockNS = c.UnixNS
			if b.t0 == 0 {
				// The run starts at its first clock reading, which the
				// log does not show (datastream.* channels are hidden).
				b.t0, b.tmin, b.t1 = c.UnixNS, c.UnixNS, c.UnixNS
			}
		}
		return
	}
	c := st.channel(f.Channel)
	if c == nil || c.host == "" {
		return
	}
	b.host.add(st, c.host, f.Payload, st.clockNS)
}

// kind returns the index of row kind k in the page's table, adding it.
func (b *builder) kind(k kindKey) int32 {
	if i, ok := b.kindIndex[k]; ok {
		return i
	}
	if b.kindIndex == nil {
		b.kindIndex = make(map[kindKey]int32)
	}
	i := int32(len(b.kinds))
	b.kinds = append(b.kinds, k)
	b.kindIndex[k] = i
	return i
}

// linePrefix returns the start of the row of a text line of c (of
// stream st) with flags (fSE, fER): ",[KIND,STREAM,".
func (b *builder) linePrefix(c *chanState, st *streamState, flags uint16) []byte {
	if p := c.linePrefix[flags]; p != nil {
		return p
	}
	p := append([]byte{}, ',', '[')
	p = strconv.AppendInt(p, int64(b.kind(kindKey{flags: flags, class: int32(c.class)})), 10)
	p = append(p, ',')
	p = strconv.AppendInt(p, int64(st.index), 10)
	p = append(p, ',')
	c.linePrefix[flags] = p
	return p
}

// entry takes one object of the log (views.LogOptions.Entries) and
// renders its row of the page's data: [KIND,STREAM,POSITION,TIME,TEXT]
// (KIND an index in the kinds table, STREAM in the streams, -1 for
// none; POSITION -1 for none; TIME ms since the page's origin, null
// unknown; TEXT see appendText), after a comma, one a line.
func (b *builder) entry(e *views.Entry) {
	if e.TimeNS != 0 {
		// The first time is the page's origin, once and for all: rows
		// already written count from it (a stream read later may start
		// earlier: its times are then negative).
		if b.t0 == 0 {
			b.t0, b.tmin = e.TimeNS, e.TimeNS
		}
		b.tmin, b.t1 = min(b.tmin, e.TimeNS), max(b.t1, e.TimeNS)
	}
	var st *streamState
	var c *chanState
	if e.Kind != views.EntryDamage {
		st = b.stream(e.Stream)
		c = st.channel(e.ChannelID)
	}
	if c != nil && c.host != "" && e.Kind == views.EntryRecord {
		return // charted (see frame), not listed
	}
	important := false
	var text, prefix []byte // prefix: a text line's row start
	var k kindKey           // the row's kind, but a text line's
	switch e.Kind {
	case views.EntryLine:
		text = e.Payload
		if n := len(text); n > 0 && text[n-1] == '\r' {
			text = text[:n-1]
		}
		text = lastSegment(text)
		var flags uint16
		if c != nil && c.stderr {
			flags |= fSE
		}
		if isErrorLine(text) {
			flags |= fER
			important = true
		}
		if c != nil {
			prefix = b.linePrefix(c, st, flags)
		} else {
			k.flags = flags
		}
	case views.EntryRecord, views.EntryBytes:
		if c != nil && c.proc != nil && e.Kind == views.EntryRecord {
			flags, msg := b.lifecycle(st, c.proc, e)
			k.flags = flags
			text, important = []byte(msg), true
		} else {
			text = e.Payload
		}
	case views.EntryDamage:
		k.flags, k.what, text, important = fDM|fER, whatDamage, e.Message, true
	default:
		k.flags = fLS
		important = true
		text = e.Message
		switch e.Kind {
		case views.EntryGap:
			k.what = whatGap
		case views.EntryDrop:
			k.what = whatDropped
		case views.EntryTransport:
			k.what = whatLost
		case views.EntryStart:
			k.what, important = whatStart, false
		case views.EntryTrimmed:
			k.what, important = whatTrimmed, false
		}
	}
	d := b.dst()
	n0 := len(*d)
	l := *d
	sti := int32(-1)
	if st != nil {
		sti = int32(st.index)
	}
	if prefix != nil {
		l = append(l, prefix...)
	} else {
		k.class = -1
		if c != nil && k.what == whatNone {
			k.class = int32(c.class)
		}
		l = append(l, ',', '[')
		l = strconv.AppendInt(l, int64(b.kind(k)), 10)
		l = append(l, ',')
		l = strconv.AppendInt(l, int64(sti), 10)
		l = append(l, ',')
	}
	if st != nil {
		l = st.appendPosition(l, e.Position)
	} else {
		l = append(l, '-', '1')
	}
	l = append(l, ',')
	if e.TimeNS != 0 && b.t0 != 0 {
		l = b.appendTime(l, e.TimeNS)
	} else {
		l = append(l, "null"...)
	}
	l = append(l, ',')
	pre := ""
	switch {
	case e.Late:
		pre = "[late]"
	case e.Conflict:
		pre = "[conflict: another payload was stored first]"
	}
	shown := text
	if len(shown) > maxPayloadShown {
		shown = shown[:maxPayloadShown]
	}
	if e.Kind == views.EntryRecord && (c == nil || c.proc == nil) {
		shown = compactJSON(shown, e.Payload)
	}
	l = appendText(l, pre, shown, e.Kind == views.EntryLine, len(text)-min(len(text), maxPayloadShown))
	*d = append(l, ']', '\n')
	if important {
		b.noteImportant(e, st, c, text)
	}
	b.placed(n0, row{important: important, st: sti, pos: e.Position, last: e.LastPosition})
}

// appendPosition appends pos in decimal: the text of the last one,
// incremented when pos is the next (a row's position is most often the
// last row's or the next).
func (st *streamState) appendPosition(l []byte, pos frames.Position) []byte {
	switch {
	case st.posText != nil && pos == st.pos:
	case st.posText != nil && pos == st.pos+1:
		st.pos = pos
		i := len(st.posText) - 1
		for ; i >= 0 && st.posText[i] == '9'; i-- {
			st.posText[i] = '0'
		}
		if i >= 0 {
			st.posText[i]++
		} else {
			st.posText = append(st.posText[:1], st.posText...)
			st.posText[0] = '1'
		}
	default:
		st.pos = pos
		st.posText = strconv.AppendUint(st.posText[:0], uint64(pos), 10)
	}
	return append(l, st.posText...)
}

// appendTime appends a row's time, ns, in ms since the page's origin
// (the text of the last one when it is the same ms).
func (b *builder) appendTime(l []byte, ns int64) []byte {
	ms := (ns - b.t0) / 1e6
	if b.msText == nil || ms != b.ms {
		b.ms = ms
		b.msText = strconv.AppendInt(b.msText[:0], ms, 10)
	}
	return append(l, b.msText...)
}

// noteImportant counts an important row and lists it in the summary
// (losses, damage) and on the charts' time axis.
func (b *builder) noteImportant(e *views.Entry, st *streamState, c *chanState, text []byte) {
	stream := ""
	if st != nil {
		stream = st.id.String()
	}
	switch e.Kind {
	case views.EntryLine:
		b.errors++
		return
	case views.EntryRecord:
		if c != nil && c.proc != nil && c.proc.exited != nil && c.proc.exitRow == "" {
			c.proc.exitRow = rowID(st, e.Position)
			cls := "mx"
			if c.proc.exited.FailedExit() {
				cls = "mx mf"
			}
			b.marks = append(b.marks, mark{e.TimeNS, cls, string(text)})
		}
		return
	case views.EntryDamage:
		if len(b.damage) < 100 {
			b.damage = append(b.damage, note{stream, string(text), ""})
		}
	default:
		b.nlosses++
		if len(b.losses) < 100 {
			b.losses = append(b.losses, note{stream, kindWord(e.Kind) + " " + string(text), rowID(st, e.Position)})
		}
	}
	if len(b.marks) < 1000 {
		b.marks = append(b.marks, mark{e.TimeNS, "ml", kindWord(e.Kind) + ": " + string(text)})
	}
}

// rowID returns the address of position pos of st: NODE#LIFE/POSITION
// ("" for no stream).
func rowID(st *streamState, pos frames.Position) string {
	if st == nil {
		return ""
	}
	return st.id.String() + "/" + strconv.FormatUint(uint64(pos), 10)
}

func kindWord(k views.EntryKind) string {
	switch k {
	case views.EntryGap:
		return "gap"
	case views.EntryDrop:
		return "dropped"
	case views.EntryTransport:
		return "lost"
	case views.EntryDamage:
		return "damage"
	}
	return "note"
}

// lifecycle reads a proc.lifecycle record of p and returns the row's
// flags and the text shown for it.
func (b *builder) lifecycle(st *streamState, p *procState, e *views.Entry) (uint16, string) {
	l, err := views.ParseLifecycle(e.Payload)
	if err != nil {
		return fLC, string(e.Payload)
	}
	switch l.Event {
	case "started":
		if p.started == nil {
			p.started = &l
		}
		return fLC, "started " + p.label + " (pid " + strconv.Itoa(l.PID) + "): " + textfmt.ShellJoin(l.Argv)
	case "spawn_failed":
		if p.failed == nil {
			p.failed = &l
		}
		return fLC | fEX | fER, "could not start " + p.label + ": " + l.Error
	case "exited":
		if p.exited == nil {
			p.exited = &l
		}
		flags := uint16(fLC | fEX)
		if l.FailedExit() {
			flags |= fER
		}
		return flags, p.label + " " + exitText(&l) + usageText(&l)
	}
	return fLC, compactString(e.Payload)
}

// dst returns the buffer the next row is rendered into, appended to:
// the head while it has room, then the current tail buffer.
func (b *builder) dst() *[]byte {
	if !b.headFull {
		return &b.head
	}
	return &b.tail[b.cur].buf
}

// placed places the row just rendered at n0 of dst(): in the head while
// it has room, then in the tail. The tail is two buffers, each of up to
// tailCap bytes: rows go into the current one; when it is full, the
// previous one's rows are evicted (kept in the middle or elided), and it
// becomes the current one, emptied. At the end (finishTail), the
// previous buffer's oldest rows are evicted until both hold at most
// tailCap bytes: the last tailCap bytes of rows are kept, and rows are
// rendered where they are kept (copied only when a buffer turns).
func (b *builder) placed(n0 int, r row) {
	b.lines++
	if !b.headFull {
		if len(b.head) <= b.headCap {
			return
		}
		b.headFull = true
		for i := range b.tail {
			b.tail[i].buf = make([]byte, 0, b.tailCap+64<<10)
		}
		cur := &b.tail[b.cur]
		cur.buf = append(cur.buf, b.head[n0:]...)
		b.head = b.head[:n0]
		r.end = len(cur.buf)
		cur.rows = append(cur.rows, r)
		return
	}
	cur := &b.tail[b.cur]
	if n0 > 0 && len(cur.buf) > b.tailCap {
		prev := &b.tail[1-b.cur]
		b.evictAll(prev)
		prev.buf = append(prev.buf[:0], cur.buf[n0:]...)
		prev.rows = prev.rows[:0]
		cur.buf = cur.buf[:n0]
		b.cur = 1 - b.cur
		cur = prev
	}
	r.end = len(cur.buf)
	cur.rows = append(cur.rows, r)
}

// evictAll evicts every row of t, in order.
func (b *builder) evictAll(t *tailBuf) {
	start := 0
	for _, r := range t.rows {
		b.evict(r, t.buf[start:r.end])
		start = r.end
	}
}

// finishTail evicts the previous tail buffer's oldest rows until the
// tail holds at most tailCap bytes, and returns the data of the rows
// kept, in order.
func (b *builder) finishTail() [][]byte {
	prev, cur := &b.tail[1-b.cur], &b.tail[b.cur]
	size := len(prev.buf) + len(cur.buf)
	i, start := 0, 0
	for ; i < len(prev.rows) && size > b.tailCap; i++ {
		r := prev.rows[i]
		size -= r.end - start
		b.evict(r, prev.buf[start:r.end])
		start = r.end
	}
	return [][]byte{prev.buf[start:], cur.buf}
}

// evict takes a row that left the tail ring, its data l: kept in the
// middle when it is important and fits, elided otherwise.
func (b *builder) evict(r row, l []byte) {
	if r.important && len(b.mid)+len(l) <= b.midCap {
		b.closeRun()
		b.mid = append(b.mid, l...)
		return
	}
	b.elided++
	if b.run == nil {
		b.run = &elision{}
	}
	b.run.lines++
	if r.st < 0 {
		return
	}
	id := b.order[r.st].id
	for i := range b.run.ranges {
		sr := &b.run.ranges[i]
		if sr.Stream == id {
			sr.From, sr.To = min(sr.From, r.pos), max(sr.To, r.last, r.pos)
			return
		}
	}
	b.run.ranges = append(b.run.ranges, StreamRange{Stream: id, From: r.pos, To: max(r.last, r.pos)})
}

// closeRun ends the elided range being collected: a row of the middle
// says what was elided and how to print it.
func (b *builder) closeRun() {
	if b.run == nil {
		return
	}
	e := Elided{Lines: b.run.lines, Ranges: b.run.ranges}
	var cmds []string
	for _, sr := range e.Ranges {
		cmds = append(cmds, b.logCommand(sr))
	}
	e.Command = strings.Join(cmds, "; ")
	b.elisions = append(b.elisions, e)
	b.run = nil
	m := append(b.mid, ',', '[')
	m = strconv.AppendInt(m, int64(b.kind(kindKey{flags: fEL, what: whatElided, class: -1})), 10)
	m = append(m, ",-1,"...)
	m = strconv.AppendInt(m, int64(len(b.elisions)), 10) // its address: elided-N
	m = append(m, ",null,"...)
	var t []byte
	t = strconv.AppendUint(t, e.Lines, 10)
	t = append(t, " lines left off to keep the page under "...)
	t = append(t, sizeText(b.opts.MaxBytes)...)
	t = append(t, "; "...)
	for i, sr := range e.Ranges {
		if i > 0 {
			t = append(t, ", "...)
		}
		t = append(t, "positions "...)
		t = strconv.AppendUint(t, uint64(sr.From), 10)
		t = append(t, "–"...)
		t = strconv.AppendUint(t, uint64(sr.To), 10)
		t = append(t, " of "...)
		t = append(t, sr.Stream.String()...)
	}
	t = append(t, ": "...)
	w := segWriter{b: append(m, '[')}
	w.start(plain)
	w.text(t, false)
	w.start(codeStyle)
	w.text([]byte(e.Command), false)
	w.close()
	m = append(w.b, ']', ']', '\n')
	b.mid = m
}

// logCommand returns the ds log command that prints range sr.
func (b *builder) logCommand(sr StreamRange) string {
	args := []string{"ds", "log", "--stream", sr.Stream.String(), "--positions", strconv.FormatUint(uint64(sr.From), 10) + "-" + strconv.FormatUint(uint64(sr.To), 10)}
	args = append(args, b.opts.Inputs...)
	return textfmt.ShellJoin(args)
}

// result returns what was written.
func (b *builder) result(n int64, streams int) Result {
	return Result{Bytes: n, Lines: b.lines - b.elided, Elided: b.elided, Elisions: b.elisions,
		Streams: streams, Samples: b.host.samples, MaxBytes: b.opts.MaxBytes, Truncated: b.elided > 0}
}

// appendSince appends the time of ns as seconds since t0, "+12.345"
// ("-" when ns is unknown).
func appendSince(b []byte, ns, t0 int64) []byte {
	if ns == 0 || t0 == 0 {
		return append(b, '-')
	}
	ms := (ns - t0) / 1e6
	if ms < 0 {
		b = append(b, '-')
		ms = -ms
	} else {
		b = append(b, '+')
	}
	b = strconv.AppendInt(b, ms/1000, 10)
	b = append(b, '.')
	f := ms % 1000
	b = append(b, byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
	return b
}

// compactJSON returns a record as compact JSON (the payload as it is
// when shown is the whole payload and it compacts).
func compactJSON(shown, payload []byte) []byte {
	if len(shown) != len(payload) {
		return shown
	}
	var out bytes.Buffer
	if err := json.Compact(&out, payload); err != nil {
		return payload
	}
	return out.Bytes()
}

func compactString(payload []byte) string { return string(compactJSON(payload, payload)) }

// exitText says how an exited record says the process ended: "exited
// with code 3", "killed by signal 9".
func exitText(l *views.Lifecycle) string {
	switch {
	case l.Status != nil && l.Status.Kind == "signal":
		return "killed by signal " + strconv.Itoa(l.Status.Value)
	case l.Status != nil:
		return "exited with code " + strconv.Itoa(l.Status.Value)
	case l.ExitCode != nil:
		return "exited with code " + strconv.Itoa(*l.ExitCode)
	}
	return "exited"
}

// usageText says what an exited record says of the process's resource
// use: " after 2.506 s (user 0.003 s, sys 0.000 s, max RSS 17.2 MiB)".
func usageText(l *views.Lifecycle) string {
	var parts []string
	if l.UserNS != nil {
		parts = append(parts, "user "+seconds(*l.UserNS))
	}
	if l.SysNS != nil {
		parts = append(parts, "sys "+seconds(*l.SysNS))
	}
	if l.MaxRSSBytes != nil && *l.MaxRSSBytes >= 0 {
		parts = append(parts, "max RSS "+sizeText(*l.MaxRSSBytes))
	}
	s := ""
	if l.WallNS != nil {
		s = " after " + seconds(*l.WallNS)
	}
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	return s
}

// seconds says ns in seconds, to the ms: "2.506 s".
func seconds(ns int64) string {
	return strconv.FormatFloat(float64(ns)/1e9, 'f', 3, 64) + " s"
}

// sizeText says n bytes readably: "20 MiB", "17.2 MiB".
func sizeText(n int64) string { return textfmt.Bytes(uint64(max(n, 0))) }

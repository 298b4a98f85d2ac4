package views

import (
	"context"
	"reflect"
	"sync"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// MergeInput is one input of [Merge].
type MergeInput struct {
	// Scan reads the input into sink (typically [segments.ScanAny] of the input's
	// reader) and returns its error. Merge calls it once, in a goroutine
	// of its own, with a context that ends when Merge returns.
	Scan func(ctx context.Context, sink segments.Sink) error
	// Sink receives the input's entries, on the goroutine that called
	// Merge. Several inputs may share one sink.
	Sink segments.Sink
	// Done, if not nil, is called on that goroutine once the input's last
	// entry has gone to Sink, with what Scan returned; or, when ctx ends
	// first, with ctx.Err().
	Done func(err error)
}

// MergeOptions configures [Merge].
type MergeOptions struct {
	// IdleAfter, if > 0, says that the inputs are live (pipes, files
	// followed): an input that has been quiet that long (see
	// ScanOptions.IdleAfter) no longer holds the others back, and the
	// sinks that are [segments.Idler]s get Idle(true) after that long without
	// anything to hand over. 0: every input is waited for, so that the
	// order depends on the inputs only.
	IdleAfter time.Duration
	// MaxOpen, if > 0, is the most inputs read at once: the inputs after
	// the first MaxOpen start, in their order, each when an input ends
	// (so an input that starts late comes after what was handed over
	// before it started, whatever its keys). It bounds memory (see
	// Memory); 0: every input is read at once.
	MaxOpen int
}

// Batches between an input's goroutine and [Merge].
const (
	mergeBatches     = 2         // per input, in flight
	mergeBatchItems  = 1024      // entries
	mergeBatchArena  = 256 << 10 // payload bytes
	mergeLeadEntries = mergeBatchItems
)

// Merge reads several inputs at once and hands their entries to their
// sinks in one order: across inputs, by time, never grouped by input;
// within an input, in its own order, exactly. Inputs are read until they
// end; those that arrive on more (nil: none) join while Merge runs, until
// more is closed. Merge returns nil when every input has ended and more is
// closed (or nil), and ctx.Err() when ctx ends first.
//
// # Order
//
// Every entry gets a time key, in its input's goroutine:
//
//   - a frame's key is its stream's latest datastream.clock reading
//     (UnixNS) in that input at or before the frame (a clock frame's own
//     reading is its key); the writer records each drain tick's reading
//     before the frames of that tick;
//   - a frame of a stream without a reading yet in that input, and every
//     other entry (a header, a channel, the end of a stream, damage),
//     takes the key of the entry before it in its input;
//   - the entries before the input's first clock reading take the key of
//     that reading, if it comes within the first 1024 entries (or 256 KiB
//     of payloads) of the input, and 0 otherwise. So a capture that
//     starts in the middle of a drain tick (the second file of a stream
//     split in two) sorts after the file that holds the tick's reading,
//     and inputs without clock records (DSQ1 streams, legacy envelopes)
//     come first, in input order.
//
// Only each input's next entry competes: the least key goes first, and
// on a tie, the input given first (inputs from more count after, in
// their order of arrival). Keys within an input need not grow: an input
// that holds several streams keeps its order. A sink shared by the
// inputs of one stream (the same stream in two files) puts its frames
// back in position order ([segments.Assembler]) whatever the argument order.
//
// # Live inputs
//
// With IdleAfter = 0, Merge waits for every input's next entry before it
// hands over anything, so the order depends on the inputs only. With
// IdleAfter > 0, an input that has handed over everything it had and then
// been quiet for IdleAfter (ScanOptions.IdleAfter; the input's Scan must
// pass it on) is not waited for until it has more.
//
// # Memory
//
// Each input's goroutine copies what it reads into batches of at most
// 1024 entries and 256 KiB of payloads, and runs at most 2 batches ahead
// of Merge; Merge itself keeps nothing else per entry. So memory grows
// with the inputs read at once: MaxOpen bounds them.
func Merge(ctx context.Context, inputs []MergeInput, more <-chan MergeInput, opts MergeOptions) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := &merger{ctx: ctx, events: make(chan mergeEvent), idleAfter: opts.IdleAfter, maxOpen: opts.MaxOpen}
	for _, in := range inputs {
		m.add(in)
	}
	return m.run(more)
}

// merger is the state of one [Merge].
type merger struct {
	ctx       context.Context
	events    chan mergeEvent // batches from every input
	sources   []*mergeSource  // in order of arrival; nil once done
	live      int             // sources not done
	idleAfter time.Duration
	maxOpen   int              // MergeOptions.MaxOpen
	pending   []MergeInput     // not started yet (MaxOpen), in order
	sinks     []segments.Idler // the distinct sinks that are Idlers
	quietDue  bool             // entries were handed over since the sinks were told Idle(true)
	// scans counts the inputs' scanning goroutines: when ctx ends, Merge
	// waits for them before it calls an input's Done, so that Done never
	// runs beside its Scan.
	scans sync.WaitGroup
}

// mergeEvent is a batch of input i.
type mergeEvent struct {
	i int
	b *mergeBatch
}

// mergeSource is one input, as Merge sees it.
type mergeSource struct {
	in    MergeInput
	queue []*mergeBatch // received, not yet handed over; queue[0] is current
	pos   int           // the next entry of queue[0]
	ended bool          // its last batch is in queue (or handed over)
	err   error         // what Scan returned, once ended
	quiet bool          // it said it is quiet, and nothing came since
	drain bool          // its last batch emptied its reader
	free  chan *mergeBatch
}

// head returns the source's next entry, if it has one in hand.
func (s *mergeSource) head() *mergeEntry {
	for len(s.queue) > 0 {
		b := s.queue[0]
		if s.pos < len(b.entries) {
			return &b.entries[s.pos]
		}
		if b.final {
			return nil
		}
		s.queue = s.queue[1:]
		s.pos = 0
		b.reset()
		s.free <- b
	}
	return nil
}

// finished reports whether everything of the source was handed over.
func (s *mergeSource) finished() bool {
	return s.ended && (len(s.queue) == 0 || len(s.queue) == 1 && s.pos >= len(s.queue[0].entries))
}

// add starts reading an input, or queues it while MaxOpen inputs are
// read.
func (m *merger) add(in MergeInput) {
	if m.maxOpen > 0 && (m.live >= m.maxOpen || len(m.pending) > 0) {
		m.pending = append(m.pending, in)
		return
	}
	m.start(in)
}

// start starts reading an input.
func (m *merger) start(in MergeInput) {
	i := len(m.sources)
	s := &mergeSource{in: in, free: make(chan *mergeBatch, mergeBatches)}
	for range mergeBatches - 1 {
		s.free <- &mergeBatch{}
	}
	m.sources = append(m.sources, s)
	m.live++
	if idler, ok := in.Sink.(segments.Idler); ok && !m.hasIdler(idler) {
		m.sinks = append(m.sinks, idler)
	}
	c := &mergeCollector{m: m, i: i, free: s.free, b: &mergeBatch{}, lead: true}
	m.scans.Add(1)
	go func() {
		defer m.scans.Done()
		err := in.Scan(m.ctx, c)
		c.finish(err) // does not block once ctx is done
	}()
}

// hasIdler reports whether idler is one of m.sinks already (a sink
// shared by inputs is told once).
func (m *merger) hasIdler(idler segments.Idler) bool {
	if !reflect.TypeOf(idler).Comparable() {
		return false
	}
	for _, s := range m.sinks {
		if reflect.TypeOf(s) == reflect.TypeOf(idler) && s == idler {
			return true
		}
	}
	return false
}

// run is the loop of [Merge].
func (m *merger) run(more <-chan MergeInput) error {
	handed := false // entries handed over since the sinks were last told
	for {
		m.receiveReady(&more)
		for i, s := range m.sources {
			if s != nil && s.finished() {
				m.done(i, s.err)
			}
		}
		if m.live == 0 && more == nil {
			if handed {
				m.idle(false)
			}
			return nil
		}
		w, limit, wait := m.pick()
		if wait == nil && w != nil {
			m.hand(w, limit)
			handed, m.quietDue = true, true
			continue
		}
		// Nothing can go yet: wait for an input.
		if handed && (m.idleAfter > 0 || wait == nil || wait.drain) {
			m.idle(false)
			handed = false
		}
		if err := m.receive(&more); err != nil {
			m.scans.Wait()
			for i, s := range m.sources {
				if s != nil {
					m.done(i, err)
				}
			}
			for _, in := range m.pending {
				if in.Done != nil {
					in.Done(err)
				}
			}
			m.pending = nil
			return err
		}
	}
}

// pick returns the source whose head goes next and the key up to which
// its entries may follow without another look (the best other head's),
// or the source that must be waited for first.
func (m *merger) pick() (w *mergeSource, limit mergeLimit, wait *mergeSource) {
	var second *mergeSource
	var wk, sk int64
	for _, s := range m.sources {
		if s == nil {
			continue
		}
		h := s.head()
		if h == nil {
			if s.ended || m.idleAfter > 0 && s.quiet {
				continue
			}
			return nil, mergeLimit{}, s
		}
		switch {
		case w == nil:
			w, wk = s, h.key
		case h.key < wk:
			second, sk = w, wk
			w, wk = s, h.key
		case second == nil || h.key < sk:
			second, sk = s, h.key
		}
	}
	if second == nil {
		return w, mergeLimit{open: true}, nil
	}
	return w, mergeLimit{key: sk, strict: m.index(second) < m.index(w)}, nil
}

// mergeLimit is how far the winner of [merger.pick] may go on: up to key
// (below it, if strict: the other source comes first on a tie), or
// without limit (open).
type mergeLimit struct {
	key    int64
	strict bool
	open   bool
}

func (l mergeLimit) allows(key int64) bool {
	return l.open || key < l.key || key == l.key && !l.strict
}

// index returns the position of s among the sources.
func (m *merger) index(s *mergeSource) int {
	for i, t := range m.sources {
		if t == s {
			return i
		}
	}
	return -1
}

// hand gives w's entries to its sink while they come before every other
// source's head, and w has them in hand.
func (m *merger) hand(w *mergeSource, limit mergeLimit) {
	for {
		h := w.head()
		if h == nil || !limit.allows(h.key) {
			return
		}
		b := w.queue[0]
		w.pos++
		h.deliver(w.in.Sink, b.arena)
	}
}

// done ends source i: its Done is called with err.
func (m *merger) done(i int, err error) {
	s := m.sources[i]
	m.sources[i] = nil
	m.live--
	if s.in.Done != nil {
		s.in.Done(err)
	}
	if len(m.pending) > 0 && m.ctx.Err() == nil {
		next := m.pending[0]
		m.pending[0] = MergeInput{}
		m.pending = m.pending[1:]
		m.start(next)
	}
}

// idle tells the sinks that are Idlers that the inputs have paused.
func (m *merger) idle(quiet bool) {
	for _, s := range m.sinks {
		s.Idle(quiet)
	}
}

// receiveReady takes every batch and new input that is ready, without
// waiting.
func (m *merger) receiveReady(more *<-chan MergeInput) {
	for {
		select {
		case ev := <-m.events:
			m.take(ev)
			continue
		default:
		}
		if *more != nil {
			select {
			case in, ok := <-*more:
				if !ok {
					*more = nil
				} else {
					m.add(in)
				}
				continue
			default:
			}
		}
		return
	}
}

// receive waits for a batch or a new input, or for ctx to end. With
// IdleAfter set, the sinks get Idle(true) after IdleAfter without either,
// once after entries were handed over.
func (m *merger) receive(more *<-chan MergeInput) error {
	var quiet <-chan time.Time
	if m.idleAfter > 0 && m.quietDue {
		t := time.NewTimer(m.idleAfter)
		defer t.Stop()
		quiet = t.C
	}
	for {
		select {
		case ev := <-m.events:
			m.take(ev)
			return nil
		case in, ok := <-*more:
			if !ok {
				*more = nil
			} else {
				m.add(in)
			}
			return nil
		case <-quiet:
			m.idle(true)
			m.quietDue, quiet = false, nil
		case <-m.ctx.Done():
			return m.ctx.Err()
		}
	}
}

// take files a batch under its source.
func (m *merger) take(ev mergeEvent) {
	s := m.sources[ev.i]
	b := ev.b
	if s == nil {
		return // cannot happen: a source ends only after its last batch
	}
	if len(b.entries) > 0 || b.final {
		s.queue = append(s.queue, b)
	} else {
		s.free <- b
	}
	s.quiet, s.drain = b.quiet, b.drained
	if b.final {
		s.ended, s.err = true, b.err
	}
}

// mergeKind is what a mergeEntry holds.
type mergeKind uint8

const (
	mergeHeader mergeKind = iota + 1
	mergeChannel
	mergeFrame
	mergeEnded
	mergeDamage
	mergeTrimmed      // a capture's Trimmed record
	mergeStoreTrimmed // a store's
)

// mergeEntry is one sink call of an input, with its time key.
type mergeEntry struct {
	key    int64
	kind   mergeKind
	ch     frames.ChannelID
	stream frames.StreamID // mergeFrame, mergeEnded
	pos    frames.Position
	off, n int // the payload in the batch's arena
	header *segments.SegmentHeader
	desc   *frames.ChannelDescriptor
	damage *DamageRange
}

// deliver makes the sink call e stands for.
func (e *mergeEntry) deliver(sink segments.Sink, arena []byte) {
	switch e.kind {
	case mergeHeader:
		sink.Header(*e.header)
	case mergeChannel:
		sink.Channel(*e.desc)
	case mergeFrame:
		sink.Frame(e.stream, frames.Frame{Channel: e.ch, Position: e.pos, Payload: arena[e.off : e.off+e.n : e.off+e.n]})
	case mergeEnded:
		sink.Ended(e.stream)
	case mergeTrimmed, mergeStoreTrimmed:
		sink.Trimmed(e.stream, e.pos, e.kind == mergeStoreTrimmed)
	case mergeDamage:
		d := e.damage
		sink.Damage(d.Offset, d.End, d.Torn, d.Err)
	}
}

// mergeBatch is entries of one input, their payloads in arena. drained
// says that the input had handed over everything it had (Idle(false)),
// quiet that it then stayed quiet (Idle(true)); final that it is the
// input's last batch, and err what its Scan returned.
type mergeBatch struct {
	entries []mergeEntry
	arena   []byte
	drained bool
	quiet   bool
	final   bool
	err     error
}

func (b *mergeBatch) reset() {
	clear(b.entries) // drop the pointers
	b.entries, b.arena = b.entries[:0], b.arena[:0]
	b.drained, b.quiet, b.final, b.err = false, false, false, nil
}

// mergeCollector is the sink an input's Scan reports to: it gives each
// entry its key, copies it into batches and sends them to Merge.
type mergeCollector struct {
	m    *merger
	i    int
	free chan *mergeBatch
	b    *mergeBatch
	key  int64 // the key of the last entry
	// lead is set until the input's first clock reading: the entries of
	// b have no key yet.
	lead   bool
	clocks map[frames.StreamID]*streamClock
	gone   bool // Merge has returned: drop everything
}

// streamClock is what a mergeCollector knows of a stream's clock.
type streamClock struct {
	id   frames.ChannelID // datastream.clock, 0 if not declared
	ns   int64            // the latest reading
	have bool
}

func (c *mergeCollector) clock(s frames.StreamID) *streamClock {
	if c.clocks == nil {
		c.clocks = make(map[frames.StreamID]*streamClock)
	}
	st := c.clocks[s]
	if st == nil {
		st = &streamClock{}
		c.clocks[s] = st
	}
	return st
}

func (c *mergeCollector) declare(d frames.ChannelDescriptor) {
	if d.Name == frames.ClockChannel {
		c.clock(d.Stream).id = d.ID
	}
}

// push adds an entry keyed as the one before it, and sends the batch when
// it is full.
func (c *mergeCollector) push(e mergeEntry) {
	if c.gone {
		return
	}
	e.key = c.key
	c.b.entries = append(c.b.entries, e)
	c.check()
}

// check sends the batch when it is full; a batch full of entries before
// the first clock reading gives them key 0.
func (c *mergeCollector) check() {
	if len(c.b.entries) < mergeBatchItems && len(c.b.arena) < mergeBatchArena {
		return
	}
	if c.lead {
		c.resolve(0)
	}
	c.send()
}

// resolve gives the entries before the first clock reading their key.
func (c *mergeCollector) resolve(key int64) {
	for i := range c.b.entries {
		c.b.entries[i].key = key
	}
	c.lead = false
	c.key = key
}

// send hands the batch to Merge and takes a free one.
func (c *mergeCollector) send() {
	if c.gone {
		return
	}
	select {
	case c.m.events <- mergeEvent{c.i, c.b}:
	case <-c.m.ctx.Done():
		c.gone = true
		return
	}
	select {
	case c.b = <-c.free:
	case <-c.m.ctx.Done():
		c.gone = true
	}
}

// finish sends the last batch.
func (c *mergeCollector) finish(err error) {
	if c.lead {
		c.resolve(0)
	}
	c.b.final, c.b.err = true, err
	c.send()
}

// Header implements Sink.
func (c *mergeCollector) Header(h segments.SegmentHeader) {
	for _, d := range h.Channels {
		c.declare(d)
	}
	c.clock(h.Stream.Stream)
	c.push(mergeEntry{kind: mergeHeader, header: &h})
}

// Channel implements Sink.
func (c *mergeCollector) Channel(d frames.ChannelDescriptor) {
	c.declare(d)
	c.push(mergeEntry{kind: mergeChannel, desc: &d})
}

// Frame implements Sink: the payload is copied.
func (c *mergeCollector) Frame(s frames.StreamID, f frames.Frame) {
	if c.gone {
		return
	}
	if st := c.clocks[s]; st != nil {
		switch {
		case st.id != 0 && f.Channel == st.id:
			if ns, ok := decodeClock(f.Payload); ok && ns > 0 {
				st.ns, st.have = ns, true
				if c.lead {
					c.resolve(ns)
				}
				c.key = ns
			}
		case st.have:
			c.key = st.ns
		}
	}
	b := c.b
	b.entries = append(b.entries, mergeEntry{key: c.key, kind: mergeFrame, stream: s, ch: f.Channel, pos: f.Position, off: len(b.arena), n: len(f.Payload)})
	b.arena = append(b.arena, f.Payload...)
	c.check()
}

// Ended implements Sink.
func (c *mergeCollector) Ended(s frames.StreamID) {
	delete(c.clocks, s)
	c.push(mergeEntry{kind: mergeEnded, stream: s})
}

// Trimmed implements Sink.
func (c *mergeCollector) Trimmed(s frames.StreamID, before frames.Position, store bool) {
	k := mergeTrimmed
	if store {
		k = mergeStoreTrimmed
	}
	c.push(mergeEntry{kind: k, stream: s, pos: before})
}

// Damage implements Sink.
func (c *mergeCollector) Damage(offset, end int64, torn bool, err error) {
	c.push(mergeEntry{kind: mergeDamage, damage: &DamageRange{Offset: offset, End: end, Torn: torn, Err: err}})
}

// Idle implements [segments.Idler]: the input has handed over everything it had
// (the batch goes now, if its keys are known), or has been quiet (the
// batch goes anyway, the entries before a first clock reading with key
// 0, and Merge stops waiting for the input).
func (c *mergeCollector) Idle(quiet bool) {
	if c.gone || c.lead && !quiet {
		return
	}
	if c.lead {
		c.resolve(0)
	}
	if len(c.b.entries) == 0 && !quiet {
		return
	}
	c.b.drained, c.b.quiet = true, quiet
	c.send()
}

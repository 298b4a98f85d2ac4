package hostprobe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// MinInterval is the shortest sampling interval a [Sampler] takes. Below
// about 100 ms per-CPU percentages are coarse: /proc/stat counts time in
// ticks of 10 ms (USER_HZ), so a CPU's share of a 10 ms interval is 0,
// 100 or null.
const MinInterval = 10 * time.Millisecond

// Submitter is what a [Sampler] needs of a stream: frames.Producer
// satisfies it. Records go through the ordinary bounded queue
// (frames.Producer.SubmitBytes, ARCHITECTURE.md rule 4.5): when it is full (a stalled
// capture) a record is dropped before it gets a position and counted
// there (the capture's datastream.health records place the loss), and the
// sampler goes on with its schedule, so that no output can make it hold
// memory without bound.
type Submitter interface {
	RegisterChannel(name string, content frames.ChannelContent) (frames.ChannelID, error)
	SubmitBytes(ch frames.ChannelID, payload []byte) bool
}

// Channels selects what a [Sampler] records: host.cpu, host.mem, host.net
// and host.gpu.
type Channels struct {
	CPU bool // host.cpu: ReadCPU
	Mem bool // host.mem: ReadMem
	Net bool // host.net: ReadNet
	GPU bool // host.gpu: ReadGPU (nvidia-smi, on a goroutine of its own)
}

// AllChannels records every channel.
var AllChannels = Channels{CPU: true, Mem: true, Net: true, GPU: true}

// SamplerOptions configures [NewSampler].
type SamplerOptions struct {
	// Interval is the time between samples (at least MinInterval).
	// Samples are taken on a fixed schedule from the start (start +
	// k×Interval): a slow sample does not shift the next ones, and a
	// tick missed because a sample overran is skipped (and counted in
	// the next record's SkippedTicks), not made up.
	Interval time.Duration
	// Count, when positive, stops the sampler after that many ticks (the
	// priming read is not one).
	Count int
	// Duration, when positive, stops the sampler at the first tick at or
	// after start + Duration (that tick's sample is taken).
	Duration time.Duration
	// Channels selects the channels; the zero value means AllChannels.
	Channels Channels
	// OnError, when set, is called (one call at a time) with each read
	// error, after its error record was submitted; errors.Is(err,
	// ErrNoGPU) for a host without nvidia-smi.
	OnError func(channel string, err error)
	// AfterTick, when set, is called after each tick's CPU, memory and
	// network records were submitted, and after each GPU record: ds host
	// drains its capture then, instead of on a timer of its own.
	AfterTick func()
}

// Sampler runs a [Prober] on a schedule and submits one record per
// channel per tick (see the package doc). Create it with [NewSampler],
// which registers the channels, then call Run once.
type Sampler struct {
	p     *Prober
	sub   Submitter
	opts  SamplerOptions
	ids   [numChannels]frames.ChannelID
	clock clock // the schedule's time: systemClock, or a test's simulated one

	mu      sync.Mutex    // serializes submit and OnError between the GPU goroutine and the rest
	enc     recordEncoder // under mu
	seqs    [numChannels]uint64
	errs    [numChannels]uint64 // error records
	dropped atomic.Uint64
	// gpuSkipped counts ticks at which the GPU goroutine was still busy;
	// the record it is busy with says how many (SkippedTicks).
	gpuSkipped atomic.Int64
}

// The channels of a Sampler, as indexes of its per-channel arrays.
const (
	chCPU = iota
	chMem
	chNet
	chGPU
	numChannels
)

var channelNames = [numChannels]string{ChannelCPU, ChannelMem, ChannelNet, ChannelGPU}
var channelSchemas = [numChannels]string{SchemaCPU, SchemaMem, SchemaNet, SchemaGPU}

func (c Channels) on(i int) bool {
	return [numChannels]bool{c.CPU, c.Mem, c.Net, c.GPU}[i]
}

// NewSampler registers the selected channels on sub (JsonRecord channels
// named ChannelCPU, …, whose catalog schema is the channel name, as
// ARCHITECTURE.md §4 gives them; each record's own "schema" member is the
// seed's versioned name, SchemaCPU, …) and returns a sampler. It
// returns an error when Interval is below MinInterval, Count or Duration
// is negative, or a registration fails (a channel of that name registered
// before with another content).
func NewSampler(p *Prober, sub Submitter, opts SamplerOptions) (*Sampler, error) {
	if opts.Interval < MinInterval {
		return nil, fmt.Errorf("sampling interval %v is below the minimum of %v", opts.Interval, MinInterval)
	}
	if opts.Count < 0 || opts.Duration < 0 {
		return nil, errors.New("sample count and duration cannot be negative")
	}
	if opts.Channels == (Channels{}) {
		opts.Channels = AllChannels
	}
	s := &Sampler{p: p, sub: sub, opts: opts, clock: systemClock{}}
	for i := range numChannels {
		if !opts.Channels.on(i) {
			continue
		}
		id, err := sub.RegisterChannel(channelNames[i], frames.JSONRecord(channelNames[i]))
		if err != nil {
			return nil, fmt.Errorf("register %s: %w", channelNames[i], err)
		}
		s.ids[i] = id
	}
	return s, nil
}

// Dropped returns how many records the stream refused (a full queue).
func (s *Sampler) Dropped() uint64 { return s.dropped.Load() }

// ChannelStats counts the records of one channel of a [Sampler].
type ChannelStats struct {
	Channel string // ChannelCPU, …
	Records uint64 // records submitted (error records included)
	Errors  uint64 // error records among them (the one saying nvidia-smi is not there is not one)
}

// Stats returns the counts of each selected channel, in the order
// host.cpu, host.mem, host.net, host.gpu. It is safe to call while Run
// runs.
func (s *Sampler) Stats() []ChannelStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	var st []ChannelStats
	for i := range numChannels {
		if s.opts.Channels.on(i) {
			st = append(st, ChannelStats{Channel: channelNames[i], Records: s.seqs[i], Errors: s.errs[i]})
		}
	}
	return st
}

// Run samples until Count ticks or Duration have passed, or ctx is done,
// and returns nil then. It first takes a priming read of the CPU, memory
// and network (recorded nowhere: the first record's percentages and rates
// cover the first interval). Ticks come at start + k×Interval; each slot
// k is sampled at most once, and slots a sample overran are counted in
// the next record's SkippedTicks. Each read is stamped with the time it
// was taken, not the time of its tick, so that a late tick's rates stay
// true.
//
// With Duration, the last sample is taken at start + Duration exactly
// (unless a tick just took one), so that the samples cover all of it.
// When ctx ends the run, a last sample of the CPU, memory and network is
// taken at once, unless one was taken less than MinInterval before (its
// interval_ms says how short it was), so that the end of a wrapped
// command is covered; a GPU sample in flight is cut short and recorded as
// such. After Count or Duration, Run waits for a GPU sample in flight (at
// most Prober.GPUTimeout and the time to reap a killed nvidia-smi).
//
// When host.gpu is the only channel and nvidia-smi is not there, Run
// returns an error wrapping ErrNoGPU after its one record: there is
// nothing to sample.
func (s *Sampler) Run(ctx context.Context) error {
	ch := s.opts.Channels
	start := s.clock.Now()
	// Priming reads: their errors show at the first sample.
	if ch.CPU {
		s.p.ReadCPU(start)
	}
	if ch.Mem {
		s.p.ReadMem(start)
	}
	if ch.Net {
		s.p.ReadNet(start)
	}

	var gpuTicks chan struct{}
	gpuDone, gpuGone := make(chan struct{}), make(chan struct{})
	gpuCtx, gpuCancel := context.WithCancel(ctx)
	defer gpuCancel()
	if ch.GPU {
		// Unbuffered: a tick reaches the GPU goroutine only when it
		// waits for one, so a tick that finds nvidia-smi still running
		// is skipped (and counted), never queued to run late.
		gpuTicks = make(chan struct{})
		go s.runGPU(gpuCtx, gpuTicks, gpuDone, gpuGone)
	} else {
		close(gpuDone)
	}
	// stopGPU ends GPU sampling: a sample in flight gets at most
	// max(Interval, 1s) more (one stuck in a hung nvidia-smi is then cut
	// short, and recorded as such), so that the end of a run is not held
	// up by the GPU timeout.
	stopGPU := func() {
		if gpuTicks != nil {
			close(gpuTicks)
		}
		t := time.NewTimer(max(s.opts.Interval, time.Second))
		defer t.Stop()
		select {
		case <-gpuDone:
		case <-t.C:
			gpuCancel()
			<-gpuDone
		}
	}
	var nothingLeft <-chan struct{} // closed when no channel is left to sample
	if ch == (Channels{GPU: true}) {
		nothingLeft = gpuGone
	}

	// The schedule starts now, after the priming reads and the GPU
	// goroutine's start: slot k is due at start + k×Interval.
	start = s.clock.Now()
	ticks, stopTicks := s.clock.NewTicker(s.opts.Interval)
	defer stopTicks()
	var end <-chan time.Time
	if s.opts.Duration > 0 {
		var stopEnd func()
		end, stopEnd = s.clock.NewTimer(s.opts.Duration)
		defer stopEnd()
	}
	// end_ ends the run, however it ends: when host.gpu was the only
	// channel and nvidia-smi is not there, the run had nothing to sample.
	end_ := func() error {
		stopGPU()
		select {
		case <-nothingLeft:
			return fmt.Errorf("nothing to sample: %w", ErrNoGPU)
		default:
			return nil
		}
	}
	last, taken, lastSlot := start, 0, 0
	for {
		var final bool
		s.clock.Idle()
		select {
		case <-ctx.Done():
			// The last sample, unless one was just taken (too short to
			// say anything); always when none was taken at all.
			if now := s.clock.Now(); taken == 0 || now.Sub(last) >= MinInterval {
				slot := int((now.Sub(start) + s.opts.Interval/2) / s.opts.Interval)
				s.sampleFast(max(0, slot-lastSlot-1))
			}
			return end_()
		case <-nothingLeft:
			return end_()
		case <-end:
			if taken > 0 && s.clock.Now().Sub(last) < MinInterval {
				return end_()
			}
			final = true
		case <-ticks:
		}
		now := s.clock.Now()
		// The slot of this tick in the schedule, from the time it is
		// taken: a tick the ticker kept while a sample overran is late,
		// and may stand for a later slot, or for one already sampled.
		slot := int((now.Sub(start) + s.opts.Interval/2) / s.opts.Interval)
		if slot <= lastSlot && !final {
			continue
		}
		skipped := max(0, slot-lastSlot-1)
		lastSlot, last = max(slot, lastSlot), now
		taken++
		s.sampleFast(skipped)
		if gpuTicks != nil {
			s.gpuSkipped.Add(int64(skipped))
			select {
			case gpuTicks <- struct{}{}:
			default: // nvidia-smi still running: this tick is skipped for the GPU
				s.gpuSkipped.Add(1)
			}
		}
		s.afterTick()
		if final || (s.opts.Count > 0 && taken >= s.opts.Count) ||
			(s.opts.Duration > 0 && time.Duration(slot)*s.opts.Interval >= s.opts.Duration) {
			return end_()
		}
	}
}

// runGPU takes a GPU sample for each tick received, until ticks is
// closed; then, if it took none (a run shorter than one interval: a short
// wrapped command), it takes one, so that every run says what its GPUs
// did or that there are none. A host without nvidia-smi gets one record
// saying so, gone is closed, and the goroutine ends. A sample cut short by
// the end of the run (ctx) is recorded as such.
func (s *Sampler) runGPU(ctx context.Context, ticks <-chan struct{}, done, gone chan<- struct{}) {
	defer close(done)
	taken := false
	for range ticks {
		taken = true
		if s.gpuSample(ctx) {
			close(gone)
			return // later ticks find no receiver: nothing wakes for them
		}
	}
	if !taken {
		// The run is over (ctx may be done: Ctrl-C, the command exited);
		// this one sample is still bounded by the GPU timeout, and a
		// second Ctrl-C kills ds.
		if s.gpuSample(context.WithoutCancel(ctx)) {
			close(gone)
		}
	}
}

// gpuSample takes and submits one GPU sample; it reports whether
// nvidia-smi is not there (ErrNoGPU: one record says so).
func (s *Sampler) gpuSample(ctx context.Context) (gone bool) {
	now, began := s.clock.Now(), time.Now()
	rec, err := s.p.ReadGPU(ctx, now)
	took := time.Since(began) // nvidia-smi's own time, whatever the schedule's clock
	if errors.Is(err, ErrNoGPU) {
		rec = &GPURecord{Sample: Sample{Schema: SchemaGPU, SampleUnixMS: now.UnixMilli(), Error: err.Error()}}
		s.submit(chGPU, now, rec, &rec.Sample, nil)
		s.report(chGPU, err)
		s.afterTick()
		return true
	}
	cut := ""
	if err != nil && ctx.Err() != nil {
		// Not the GPU's failure: said in the record, not counted as an
		// error nor reported.
		cut = fmt.Sprintf("sampling ended while nvidia-smi was running (after %v); it was stopped", took.Round(time.Millisecond))
		err = nil
	}
	if err == nil && cut == "" && len(rec.GPUs) == 0 && rec.ParseError != "" {
		// nvidia-smi answered, and nothing of it could be read: a failed
		// sample, whose record keeps what was said.
		err = errors.New(rec.ParseError)
	}
	if rec == nil {
		// An error record that still says how long it took and which
		// ticks were skipped (a hung nvidia-smi makes ticks skip).
		rec = &GPURecord{Sample: Sample{Schema: SchemaGPU, SampleUnixMS: now.UnixMilli(), Error: cut}, Available: true,
			DurationMS: float64(took) / float64(time.Millisecond)}
	}
	rec.SkippedTicks = int(s.gpuSkipped.Swap(0))
	s.submit(chGPU, now, rec, &rec.Sample, err)
	if err == nil && rec.ParseError != "" {
		// Kept in the record, and said: rows nvidia-smi printed that
		// could not be read (whole or in part).
		s.report(chGPU, fmt.Errorf("%s (kept in the record's parse_error)", rec.ParseError))
	}
	s.afterTick()
	return false
}

func (s *Sampler) afterTick() {
	if s.opts.AfterTick != nil {
		s.opts.AfterTick()
	}
}

// sampleFast takes the CPU, memory and network samples of one tick, each
// stamped with the time of its own read; skipped is the number of ticks
// before this one at which no sample was taken.
func (s *Sampler) sampleFast(skipped int) {
	for i := range chGPU {
		if !s.opts.Channels.on(i) {
			continue
		}
		now := s.clock.Now()
		var rec any
		var head *Sample
		var err error
		var notes []string // problems the record keeps, said too
		switch i {
		case chCPU:
			var r *CPURecord
			if r, err = s.p.ReadCPU(now); err == nil {
				rec, head = r, &r.Sample
				notes = append(notes, r.Host.LoadError)
				if r.Cgroup != nil {
					notes = append(notes, r.Cgroup.Error)
				}
			}
		case chMem:
			var r *MemRecord
			if r, err = s.p.ReadMem(now); err == nil {
				rec, head = r, &r.Sample
				if r.Cgroup != nil {
					notes = append(notes, r.Cgroup.Error)
				}
			}
		case chNet:
			var r *NetRecord
			if r, err = s.p.ReadNet(now); err == nil {
				rec, head = r, &r.Sample
				if len(r.Interfaces) == 0 && len(s.p.Interfaces) > 0 {
					notes = append(notes, fmt.Sprintf("no network interface matches %q", s.p.Interfaces))
				}
			}
		}
		for _, n := range notes {
			if n != "" {
				s.report(i, errors.New(n))
			}
		}
		if head == nil {
			head = &Sample{Schema: channelSchemas[i], SampleUnixMS: now.UnixMilli()}
			rec = head
		}
		head.SkippedTicks = skipped
		s.submit(i, now, rec, head, err)
	}
}

// submit numbers and submits one record of channel i (rec, whose head is
// head). With err the record is an error record (head.Error says it) and
// the error is reported. A record the stream refuses is counted
// (Dropped).
func (s *Sampler) submit(i int, now time.Time, rec any, head *Sample, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seqs[i]++
	if err != nil {
		s.errs[i]++
		if head.Error == "" {
			head.Error = err.Error()
		}
	}
	head.Seq = s.seqs[i]
	b, merr := s.enc.encode(rec)
	if merr != nil { // cannot happen with these types; say so rather than lose the sample
		b, _ = json.Marshal(Sample{Schema: channelSchemas[i], Seq: head.Seq, SampleUnixMS: now.UnixMilli(), Error: "encode: " + merr.Error()})
	}
	if !s.sub.SubmitBytes(s.ids[i], b) {
		s.dropped.Add(1)
	}
	if err != nil && s.opts.OnError != nil {
		s.opts.OnError(channelNames[i], err)
	}
}

func (s *Sampler) report(i int, err error) {
	if s.opts.OnError != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.opts.OnError(channelNames[i], err)
	}
}

// clock is where a Sampler's schedule gets its time: systemClock, or in
// tests a simulated clock that moves only when Run waits.
type clock interface {
	Now() time.Time
	// NewTicker and NewTimer return the channel of a time.Ticker or a
	// time.Timer of d, and the function that stops it.
	NewTicker(d time.Duration) (<-chan time.Time, func())
	NewTimer(d time.Duration) (<-chan time.Time, func())
	// Idle is called each time Run is about to wait for its next tick:
	// a simulated clock moves to its next deadline then.
	Idle()
}

// systemClock is the clock of the system: time.Now, time.NewTicker,
// time.NewTimer.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) NewTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

func (systemClock) NewTimer(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTimer(d)
	return t.C, func() { t.Stop() }
}

func (systemClock) Idle() {}

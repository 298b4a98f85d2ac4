package hostprobe

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// fakeStream is a Submitter that keeps what it is given.
type fakeStream struct {
	mu      sync.Mutex
	names   []string
	content []frames.ChannelContent
	records map[string][]map[string]any
	order   []string // the channel of each record, in the order submitted
}

func (f *fakeStream) RegisterChannel(name string, content frames.ChannelContent) (frames.ChannelID, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.names = append(f.names, name)
	f.content = append(f.content, content)
	return frames.ChannelID(len(f.names)), nil
}

func (f *fakeStream) SubmitBytes(ch frames.ChannelID, payload []byte) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	var m map[string]any
	if err := json.Unmarshal(payload, &m); err != nil {
		panic("sampler submitted invalid JSON: " + string(payload))
	}
	if f.records == nil {
		f.records = map[string][]map[string]any{}
	}
	name := f.names[ch-1]
	f.records[name] = append(f.records[name], m)
	f.order = append(f.order, name)
	return true
}

var sampleProc = map[string]string{
	"stat":    "cpu  100 2 50 800 10 1 3 4 0 0\ncpu0 100 2 50 800 10 1 3 4 0 0\n",
	"loadavg": "1.25 0.75 0.50 1/234 5678\n",
	"meminfo": "MemTotal: 1000 kB\nMemAvailable: 250 kB\n",
	"net/dev": "Inter-|   Receive\n face |bytes\n    lo: 100 2 0 0 0 0 0 0 200 3 0 0 0 0 0 0\n",
}

func TestSamplerRecordsEveryChannel(t *testing.T) {
	dir := t.TempDir()
	cpuWriteTree(t, dir, sampleProc)
	p := &Prober{ProcRoot: dir, SysRoot: filepath.Join(dir, "nosys"), NvidiaSMI: filepath.Join(dir, "no-nvidia-smi")}
	var st fakeStream
	var reported []string
	s, err := NewSampler(p, &st, SamplerOptions{Interval: 10 * time.Millisecond, Count: 3,
		OnError: func(ch string, err error) { reported = append(reported, ch+": "+err.Error()) }})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{ChannelCPU, ChannelMem, ChannelNet, ChannelGPU}
	for i, name := range want {
		c := st.content[i]
		if st.names[i] != name || c.Kind != frames.KindJSONRecord || c.Schema == nil || *c.Schema != channelNames[i] {
			t.Errorf("channel %d = %s %+v, want %s JSONRecord(%s)", i+1, st.names[i], c, name, channelNames[i])
		}
	}
	if err := s.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for k, name := range want[:3] {
		recs := st.records[name]
		if len(recs) != 3 {
			t.Fatalf("%s: %d records, want 3", name, len(recs))
		}
		for i, r := range recs {
			if r["schema"] != channelSchemas[k] || r["seq"] != float64(i+1) || r["error"] != nil {
				t.Errorf("%s record %d: schema %v seq %v error %v", name, i, r["schema"], r["seq"], r["error"])
			}
			// The priming read came first: every record covers an interval.
			if ms, ok := r["interval_ms"].(float64); !ok || ms <= 0 {
				t.Errorf("%s record %d: interval_ms %v, want > 0", name, i, r["interval_ms"])
			}
		}
	}
	// No nvidia-smi: one record says so, and GPU sampling stops.
	gpu := st.records[ChannelGPU]
	if len(gpu) != 1 || gpu[0]["available"] != false || gpu[0]["seq"] != float64(1) {
		t.Errorf("host.gpu records = %v, want one with available false", gpu)
	}
	if len(reported) != 1 || reported[0][:len(ChannelGPU)] != ChannelGPU {
		t.Errorf("reported %q, want the missing nvidia-smi once", reported)
	}
}

// A file that cannot be read gives an error record for that channel, in
// its place in seq, and the other channels go on.
func TestSamplerErrorRecord(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{}
	for k, v := range sampleProc {
		if k != "net/dev" {
			files[k] = v
		}
	}
	cpuWriteTree(t, dir, files)
	p := &Prober{ProcRoot: dir, SysRoot: filepath.Join(dir, "nosys")}
	var st fakeStream
	var errs []error
	s, err := NewSampler(p, &st, SamplerOptions{Interval: 10 * time.Millisecond, Count: 2,
		Channels: Channels{CPU: true, Net: true}, OnError: func(_ string, err error) { errs = append(errs, err) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	net := st.records[ChannelNet]
	if len(net) != 2 {
		t.Fatalf("host.net: %d records, want 2", len(net))
	}
	for i, r := range net {
		if e, _ := r["error"].(string); e == "" || r["seq"] != float64(i+1) || r["schema"] != SchemaNet {
			t.Errorf("host.net record %d = %v, want an error record with seq %d", i, r, i+1)
		}
	}
	if len(st.records[ChannelCPU]) != 2 || len(errs) != 2 || !errors.Is(errs[0], os.ErrNotExist) {
		t.Errorf("cpu records %d, errors %v", len(st.records[ChannelCPU]), errs)
	}
	if _, ok := st.records[ChannelMem]; ok {
		t.Error("host.mem recorded though not selected")
	}
}

// Ending the run (ds wrap's command exited, ds host got INT) takes a last
// sample at once, covering the end.
func TestSamplerStopTakesLastSample(t *testing.T) {
	dir := t.TempDir()
	cpuWriteTree(t, dir, sampleProc)
	p := &Prober{ProcRoot: dir, SysRoot: filepath.Join(dir, "nosys")}
	var st fakeStream
	s, err := NewSampler(p, &st, SamplerOptions{Interval: time.Hour, Channels: Channels{CPU: true}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if recs := st.records[ChannelCPU]; len(recs) != 1 || recs[0]["interval_ms"] == nil {
		t.Errorf("records after stop = %v, want one covering the run", recs)
	}
}

func TestNewSamplerRejects(t *testing.T) {
	for _, o := range []SamplerOptions{
		{Interval: time.Millisecond},
		{Interval: time.Second, Count: -1},
		{Interval: time.Second, Duration: -time.Second},
	} {
		if _, err := NewSampler(&Prober{}, &fakeStream{}, o); err == nil {
			t.Errorf("NewSampler(%+v) accepted", o)
		}
	}
}

// recordsOf returns the records of channel, each as a map.
func (f *fakeStream) recordsOf(channel string) []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.records[channel]
}

// slots sums, over records, the ticks each stands for: itself and the
// ticks skipped before it (SkippedTicks).
func slots(recs []map[string]any) int {
	n := 0
	for _, r := range recs {
		k, _ := r["skipped_ticks"].(float64)
		n += 1 + int(k)
	}
	return n
}

// The schedule is fixed from the start: a sample that overruns makes the
// ticks it covered skipped (said in the next record), and does not shift
// the end: --duration 200ms at 20ms is 10 ticks whatever happens. The
// schedule runs on a simulated clock (the overrun is one of 75 ms of it),
// so that a loaded machine does not make ticks late.
func TestSamplerScheduleSkipsOverrunTicks(t *testing.T) {
	dir := t.TempDir()
	cpuWriteTree(t, dir, sampleProc)
	p := &Prober{ProcRoot: dir, SysRoot: filepath.Join(dir, "nosys")}
	var st fakeStream
	clk := newFakeClock()
	calls := 0
	s, err := NewSampler(p, &st, SamplerOptions{Interval: 20 * time.Millisecond, Duration: 200 * time.Millisecond,
		Channels: Channels{CPU: true, Net: true},
		AfterTick: func() {
			if calls++; calls == 1 {
				clk.Advance(75 * time.Millisecond) // an overrun of about 3 ticks
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	s.clock = clk
	if err := s.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []string{ChannelCPU, ChannelNet} {
		recs := st.recordsOf(ch)
		if got := slots(recs); got != 10 {
			t.Errorf("%s: %d records standing for %d ticks, want 10 ticks", ch, len(recs), got)
		}
		if len(recs) < 2 {
			t.Fatalf("%s: %d records", ch, len(recs))
		}
		// The record after the overrun says what it skipped, and its
		// interval is the true one (its read time, not its tick's).
		k, _ := recs[1]["skipped_ticks"].(float64)
		ms, _ := recs[1]["interval_ms"].(float64)
		if k < 2 || ms < 60 {
			t.Errorf("%s: record after the overrun: skipped_ticks %v interval_ms %v, want >= 2 and >= 60", ch, k, ms)
		}
	}
}

// nvidia-smi runs beside the other channels: a hung one neither delays
// them nor runs twice, and the ticks it covered are said. The schedule
// runs on a simulated clock (30 s ticks, which take no time), nvidia-smi
// on the real one: the hung one holds up its goroutine for its timeout
// of 5 s, during which the other 9 ticks come and go.
func TestSamplerHungGPUDelaysNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cpuWriteTree(t, dir, sampleProc)
	p := &Prober{ProcRoot: dir, SysRoot: filepath.Join(dir, "nosys"), NvidiaSMI: fakeSMI(t, "hang"), GPUTimeout: 5 * time.Second}
	var st fakeStream
	s, err := NewSampler(p, &st, SamplerOptions{Interval: 30 * time.Second, Duration: 300 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	clk := newFakeClock()
	first := true
	clk.beforeAdvance = func() {
		if first { // the first tick finds the GPU goroutine waiting for it
			waitGPUParked(t)
			first = false
		}
	}
	s.clock = clk
	if err := s.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	cpu := st.recordsOf(ChannelCPU)
	if slots(cpu) != 10 || len(cpu) != 10 {
		t.Errorf("host.cpu: %d records for %d ticks, want 10 and 10", len(cpu), slots(cpu))
	}
	// Every CPU sample was taken before the hung nvidia-smi was killed.
	st.mu.Lock()
	order := strings.Join(st.order, " ")
	st.mu.Unlock()
	if i, j := strings.LastIndex(order, ChannelCPU), strings.Index(order, ChannelGPU); j < i {
		t.Errorf("records in the order %s: the CPU was held up by the GPU", order)
	}
	gpu := st.recordsOf(ChannelGPU)
	if len(gpu) != 1 {
		t.Fatalf("host.gpu: %d records, want the one hung sample: %v", len(gpu), gpu)
	}
	e, _ := gpu[0]["error"].(string)
	if k, _ := gpu[0]["skipped_ticks"].(float64); !strings.Contains(e, "did not answer within 5s") || k != 9 {
		t.Errorf("host.gpu record: error %q skipped_ticks %v, want a timeout and the 9 other ticks skipped", e, k)
	}
}

// With a working nvidia-smi, every tick gets a GPU sample (when it answers
// within the interval), concurrently with the other channels. The
// schedule runs on a simulated clock that moves on only once the GPU
// goroutine waits again: an interval longer than the sample, however
// loaded the machine.
func TestSamplerGPUEveryTick(t *testing.T) {
	dir := t.TempDir()
	cpuWriteTree(t, dir, sampleProc)
	p := &Prober{ProcRoot: dir, SysRoot: filepath.Join(dir, "nosys"), NvidiaSMI: fakeSMI(t, "good")}
	var st fakeStream
	s, err := NewSampler(p, &st, SamplerOptions{Interval: 30 * time.Second, Count: 3, Channels: Channels{CPU: true, GPU: true}})
	if err != nil {
		t.Fatal(err)
	}
	clk := newFakeClock()
	clk.beforeAdvance = func() { waitGPUParked(t) }
	s.clock = clk
	if err := s.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	gpu := st.recordsOf(ChannelGPU)
	if slots(gpu) != 3 || len(gpu) != 3 || len(st.recordsOf(ChannelCPU)) != 3 {
		t.Fatalf("host.gpu: %d records for %d ticks, host.cpu %d records; want 3, 3 and 3", len(gpu), slots(gpu), len(st.recordsOf(ChannelCPU)))
	}
	for _, r := range gpu {
		if gs, _ := r["gpus"].([]any); r["error"] != nil && len(gs) == 0 {
			t.Errorf("host.gpu record %v: want GPUs", r)
		}
	}
}

// --duration shorter than MinInterval still records its one sample, at D.
func TestSamplerShortDuration(t *testing.T) {
	dir := t.TempDir()
	cpuWriteTree(t, dir, sampleProc)
	p := &Prober{ProcRoot: dir, SysRoot: filepath.Join(dir, "nosys")}
	var st fakeStream
	s, err := NewSampler(p, &st, SamplerOptions{Interval: time.Second, Duration: 5 * time.Millisecond, Channels: Channels{CPU: true}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(st.recordsOf(ChannelCPU)); n != 1 {
		t.Errorf("%d records, want the one at the end of the duration", n)
	}
}

// A GPU sample cut short by the end of the run (Ctrl-C, the wrapped
// command exiting) is recorded as such, and is not an error. The
// schedule runs on a simulated clock: the first tick finds the GPU
// goroutine waiting, and the run ends once nvidia-smi has started.
func TestSamplerGPUCutShort(t *testing.T) {
	dir := t.TempDir()
	cpuWriteTree(t, dir, sampleProc)
	pidfile := filepath.Join(t.TempDir(), "pid")
	t.Setenv("FAKE_SMI_PIDFILE", pidfile)
	p := &Prober{ProcRoot: dir, SysRoot: filepath.Join(dir, "nosys"), NvidiaSMI: fakeSMI(t, "hang"), GPUTimeout: time.Minute}
	var st fakeStream
	var errs []string
	s, err := NewSampler(p, &st, SamplerOptions{Interval: 20 * time.Millisecond, Channels: Channels{GPU: true},
		OnError: func(ch string, err error) { errs = append(errs, err.Error()) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk := newFakeClock()
	calls := 0
	clk.beforeAdvance = func() {
		switch calls++; calls {
		case 1:
			waitGPUParked(t)
		case 2: // the first tick was taken: nvidia-smi runs
			readPIDs(t, pidfile)
			cancel()
		}
	}
	s.clock = clk
	if err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
	gpu := st.recordsOf(ChannelGPU)
	if len(gpu) != 1 {
		t.Fatalf("host.gpu: %v, want one record", gpu)
	}
	if e, _ := gpu[0]["error"].(string); !strings.Contains(e, "sampling ended while nvidia-smi was running") {
		t.Errorf("record error %q", e)
	}
	if st := s.Stats(); st[0].Errors != 0 || len(errs) != 0 {
		t.Errorf("stats %+v, reported %q: a cut-short sample is no error", st, errs)
	}
}

// A run shorter than one interval (a short wrapped command) still gets a
// GPU sample, taken at its end.
func TestSamplerShortRunGPU(t *testing.T) {
	dir := t.TempDir()
	cpuWriteTree(t, dir, sampleProc)
	p := &Prober{ProcRoot: dir, SysRoot: filepath.Join(dir, "nosys"), NvidiaSMI: fakeSMI(t, "good")}
	var st fakeStream
	s, err := NewSampler(p, &st, SamplerOptions{Interval: time.Hour, Channels: Channels{CPU: true, GPU: true}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
	gpu := st.recordsOf(ChannelGPU)
	if len(gpu) != 1 || gpu[0]["error"] != nil {
		t.Fatalf("host.gpu = %v, want one good sample", gpu)
	}
	if gs, _ := gpu[0]["gpus"].([]any); len(gs) == 0 {
		t.Errorf("host.gpu record without GPUs: %v", gpu[0])
	}
}

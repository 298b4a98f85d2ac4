package hostprobe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Warnings says each sampling error on a writer (ds host's stderr) once
// per channel and message, for SamplerOptions.OnError (a file that
// cannot be read fails every sample alike), and at the end how many
// samples failed (Summary). A host without nvidia-smi (ErrNoGPU) is said
// only when GPUs were asked for: otherwise it is the common case. It is
// safe for concurrent use.
type Warnings struct {
	mu       sync.Mutex
	w        io.Writer
	prefix   string
	gpuAsked bool
	said     map[string]bool
}

// maxWarnings bounds the distinct warnings said (messages can name
// pids); later ones are only counted in the summary.
const maxWarnings = 20

// NewWarnings returns Warnings writing "ds: warning: PREFIXCHANNEL: …"
// lines to w; gpuAsked says that GPUs were asked for (ds host --gpu).
func NewWarnings(w io.Writer, prefix string, gpuAsked bool) *Warnings {
	return &Warnings{w: w, prefix: prefix, gpuAsked: gpuAsked, said: map[string]bool{}}
}

// Report says that a sample of channel failed with err, unless it was
// said already (or maxWarnings distinct ones were).
func (h *Warnings) Report(channel string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if errors.Is(err, ErrNoGPU) {
		if h.gpuAsked {
			fmt.Fprintf(h.w, "ds: warning: %s%s: %v; recorded as unavailable, the other channels go on\n", h.prefix, channel, err)
		}
		return
	}
	key := channel + "\x00" + err.Error()
	if h.said[key] || len(h.said) >= maxWarnings {
		return
	}
	h.said[key] = true
	fmt.Fprintf(h.w, "ds: warning: %s%s: %v (recorded; sampling goes on)\n", h.prefix, channel, err)
}

// Summary says how many samples of each channel failed, from the
// sampler's counts of error records (Sampler.Stats), when any did more
// than once.
func (h *Warnings) Summary(stats []ChannelStats) {
	for _, st := range stats {
		if st.Errors > 1 {
			fmt.Fprintf(h.w, "ds: warning: %s%s: %d samples failed (error records in the capture)\n", h.prefix, st.Channel, st.Errors)
		}
	}
}

// RunBounded runs s until it ends or ctx is done; then, should a read
// never return (a ProcRoot on a stuck mount: a FIFO, a hung FUSE or NFS
// server), it waits at most p's GPU timeout and 2 s more for the sampler
// and gives up on it (said on warn), so that the capture still ends
// cleanly (a late record is then refused by the ended stream, and
// counted). It returns Run's error, or nil when it gave up.
func RunBounded(ctx context.Context, s *Sampler, p *Prober, warn io.Writer) error {
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	timeout := p.GPUTimeout
	if timeout <= 0 {
		timeout = DefaultGPUTimeout
	}
	grace := timeout + 2*time.Second
	select {
	case err := <-done:
		return err
	case <-time.After(grace):
		fmt.Fprintf(warn, "ds: warning: a read of the host did not return within %v of the stop; the capture ends without it\n", grace)
		return nil
	}
}

// ParseChannels reads a comma list of host channels (cpu, mem, net, gpu;
// host.cpu and the other full names too). An unknown name is an error
// that quotes it.
func ParseChannels(list string) (Channels, error) {
	var ch Channels
	for _, name := range strings.Split(list, ",") {
		switch strings.TrimPrefix(strings.TrimSpace(name), "host.") {
		case "cpu":
			ch.CPU = true
		case "mem":
			ch.Mem = true
		case "net":
			ch.Net = true
		case "gpu":
			ch.GPU = true
		default:
			return ch, fmt.Errorf("%q is not a host channel (want cpu, mem, net or gpu)", name)
		}
	}
	return ch, nil
}

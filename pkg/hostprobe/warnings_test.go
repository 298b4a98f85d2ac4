package hostprobe

import (
	"bytes"
	"errors"
	"testing"
)

// TestWarnings: each message is said once per channel, a missing
// nvidia-smi only when GPUs were asked for, and the summary counts the
// channels that failed more than once.
func TestWarnings(t *testing.T) {
	var b bytes.Buffer
	w := NewWarnings(&b, "--host: ", false)
	w.Report("host.cpu", errors.New("open /proc/stat: denied"))
	w.Report("host.cpu", errors.New("open /proc/stat: denied"))
	w.Report("host.gpu", ErrNoGPU)
	w.Summary([]ChannelStats{{Channel: "host.cpu", Errors: 2}, {Channel: "host.mem", Errors: 1}})
	want := "ds: warning: --host: host.cpu: open /proc/stat: denied (recorded; sampling goes on)\n" +
		"ds: warning: --host: host.cpu: 2 samples failed (error records in the capture)\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
	b.Reset()
	NewWarnings(&b, "", true).Report("host.gpu", ErrNoGPU)
	if b.Len() == 0 {
		t.Error("a missing nvidia-smi with --gpu is not said")
	}
}

func TestParseChannels(t *testing.T) {
	ch, err := ParseChannels("cpu, host.net")
	if err != nil || ch != (Channels{CPU: true, Net: true}) {
		t.Errorf("got %+v, %v", ch, err)
	}
	if _, err := ParseChannels("cpu,disk"); err == nil || err.Error() != `"disk" is not a host channel (want cpu, mem, net or gpu)` {
		t.Errorf("disk: %v", err)
	}
}

package capture

import "github.com/ds-telemetry/ds/pkg/frames"

// WaitingProducer is a producer that waits instead of dropping (ds wrap
// --backpressure, ds(1)): SubmitBytes on a full queue waits for the next
// drain (so a process whose output is read into it waits too, once its
// pipe is full) until Stop is closed (the capture ends: Capture.Finishing),
// and only then drops and says false.
type WaitingProducer struct {
	frames.Producer
	Stop <-chan struct{}
}

// SubmitBytes queues one frame, waiting for room (frames.Producer.SubmitWait).
func (p WaitingProducer) SubmitBytes(ch frames.ChannelID, payload []byte) bool {
	return p.SubmitWait(ch, payload, p.Stop)
}

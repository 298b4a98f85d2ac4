package capture

import (
	"bytes"
	"strings"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// KeepPolicy says which frames the segment summaries of a capture keep a
// copy of (segments.WriterOptions.Keep), by channel: the ends of the
// clock (the capture's time span) and of the health records (the
// writer's latest counters), every health record that places a loss, and
// every lifecycle record (how the command started and exited) and every
// datastream.transport record (what a NATS output lost). ds info
// then reads all of that from the summaries. Channel ids are handed out
// from 1, so a slice indexed by id holds the channels' rules. The zero
// value keeps nothing until channels are declared; ds merge uses the same
// policy as the producers. It is not safe for concurrent use.
type KeepPolicy []segments.Keep

// Declare adds the rule for channel d (nothing for a channel the policy
// does not keep, or an id of 1<<16 or more).
func (k *KeepPolicy) Declare(d frames.ChannelDescriptor) {
	var rule segments.Keep
	switch {
	case d.Name == frames.ClockChannel:
		rule = segments.KeepEnds
	case d.Name == frames.HealthChannel:
		rule = segments.KeepEnds | keepLoss
	case strings.HasPrefix(d.Name, "proc.") && strings.HasSuffix(d.Name, ".lifecycle"),
		d.Name == frames.TransportChannel: // a NATS output's losses: few, and ds info counts them
		rule = segments.KeepFrame
	default:
		return
	}
	if d.ID >= 1<<16 {
		return // not a channel ds wrap registers
	}
	for int(d.ID) >= len(*k) {
		*k = append(*k, segments.KeepNone)
	}
	(*k)[d.ID] = rule
}

// keepLoss marks the health channel: its records that carry "loss" are
// kept whole.
const keepLoss segments.Keep = 0x80

// Keep returns what the summaries keep of a frame of channel ch with
// payload (a segments.WriterOptions.Keep function): KeepNone for an
// undeclared channel.
func (k KeepPolicy) Keep(ch frames.ChannelID, payload []byte) segments.Keep {
	if int(ch) >= len(k) {
		return segments.KeepNone
	}
	rule := k[ch]
	if rule&keepLoss != 0 {
		if bytes.Contains(payload, []byte(`"loss":`)) {
			return segments.KeepFrame
		}
		return rule &^ keepLoss
	}
	return rule
}

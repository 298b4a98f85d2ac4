package proc

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// frames.Producer is what ds wrap hands to Run.
var _ Producer = frames.Producer{}

// notifyProducer wraps a Producer and reports every accepted submission.
type notifyProducer struct {
	Producer
	accepted chan frames.ChannelID
}

func (p notifyProducer) SubmitBytes(ch frames.ChannelID, payload []byte) bool {
	ok := p.Producer.SubmitBytes(ch, payload)
	if ok {
		p.accepted <- ch
	}
	return ok
}

// stdinAfter is a Stdin that yields one newline once ch is closed.
type stdinAfter struct {
	ch   <-chan struct{}
	done bool
}

func (r *stdinAfter) Read(b []byte) (int, error) {
	if r.done {
		return 0, errors.New("closed")
	}
	<-r.ch
	r.done = true
	return copy(b, "\n"), nil
}

// TestEndpointAdapter is ARCHITECTURE.md case 2.10 with a real frames.Endpoint:
// proc.trainer.stdout/stderr registered; hello\n on stdout then warn\n on
// stderr → two frames, in that order, bytes exact, on the right channels,
// between the started and exited records. The child waits for the stdout
// frame to be submitted before it writes to stderr: across two pipes, order
// is otherwise only the order in which ds read them.
func TestEndpointAdapter(t *testing.T) {
	t.Parallel()
	ep := frames.NewEndpoint(frames.StreamDescriptor{Stream: frames.StreamID{Node: "node-endpoint", Life: 7}}, frames.EndpointOptions{})
	sub := ep.Subscribe(frames.SubscriptionRequest{}, frames.SubscriberOptions{Name: "test"})
	np := notifyProducer{Producer: ep.Producer(), accepted: make(chan frames.ChannelID, 16)}
	helloSubmitted := make(chan struct{})
	go func() {
		for ch := range np.accepted {
			if d, ok := ep.Lookup(ch); ok && d.Name == "proc.trainer.stdout" {
				close(helloSubmitted)
				return
			}
		}
	}()
	res, err := Run(context.Background(), Options{
		Argv:     []string{"sh", "-c", "echo hello; read x; echo warn >&2; exit 2"},
		Label:    "trainer",
		Producer: np,
		Stdin:    &stdinAfter{ch: helloSubmitted},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 2 {
		t.Errorf("exit %d", res.ExitCode)
	}
	if rep := ep.Tick(); rep.Drained != 4 {
		t.Errorf("tick %+v, want 4 frames drained", rep)
	}
	type got struct {
		Channel  string
		Position frames.Position
		Payload  string
	}
	var frs []got
	for _, ev := range sub.DrainInto(nil) {
		if ev.Kind != frames.EventFrame {
			continue
		}
		d, _ := ep.Lookup(ev.Frame.Channel.Channel)
		p := string(ev.Frame.Payload)
		if d.Name == "proc.trainer.lifecycle" {
			p, _, _ = strings.Cut(p, ",")
		}
		frs = append(frs, got{d.Name, ev.Frame.Position, p})
	}
	want := []got{
		{"proc.trainer.lifecycle", 0, `{"event":"started"`},
		{"proc.trainer.stdout", 1, "hello\n"},
		{"proc.trainer.stderr", 2, "warn\n"},
		{"proc.trainer.lifecycle", 3, `{"event":"exited"`},
	}
	if diff := cmp.Diff(want, frs); diff != "" {
		t.Errorf("frames (-want +got):\n%s", diff)
	}
}

package frames_test

import (
	"encoding/json"
	"fmt"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// A producer registers channels and submits bytes; a tick drains the mux
// once, assigns positions and broadcasts to subscribers.
func Example() {
	e := frames.NewEndpoint(frames.StreamDescriptor{Stream: frames.StreamID{Node: "ci-7", Life: 1}}, frames.EndpointOptions{})
	sub := e.Subscribe(frames.SubscriptionRequest{}, frames.SubscriberOptions{Name: "printer"})

	p := e.Producer()
	out, _ := p.RegisterChannel("proc.make.stdout", frames.TextStream())
	life, _ := p.RegisterRecord("proc.make.lifecycle")
	p.SubmitText(out, "gcc -c foo.c\n")
	p.SubmitRecord(life, map[string]any{"event": "exited", "status": map[string]any{"kind": "code", "value": 2}})
	rep := e.Tick()
	fmt.Printf("tick: drained %d, delivered %d\n", rep.Drained, rep.Delivered)

	for _, ev := range sub.DrainInto(nil) {
		switch ev.Kind {
		case frames.EventChannelDeclared:
			fmt.Printf("declared %d = %s (%s)\n", ev.Channel.ID, ev.Channel.Name, ev.Channel.Content)
		case frames.EventFrame:
			fmt.Printf("%s position %d channel %d: %q\n", ev.Frame.Channel.Stream, ev.Frame.Position, ev.Frame.Channel.Channel, ev.Frame.Payload)
		}
	}
	h, _ := json.Marshal(e.Health())
	fmt.Println(string(h))
	// Output:
	// tick: drained 2, delivered 2
	// declared 1 = proc.make.stdout (TextStream)
	// declared 2 = proc.make.lifecycle (JsonRecord(proc.make.lifecycle))
	// ci-7#1 position 0 channel 1: "gcc -c foo.c\n"
	// ci-7#1 position 1 channel 2: "{\"event\":\"exited\",\"status\":{\"kind\":\"code\",\"value\":2}}"
	// {"assigned":2,"drained":2,"mux_dropped":0,"mux_dropped_bytes":0,"unknown_channel":0,"bitbucketed":0,"subscriber_dropped":0,"pending":0,"subscribers":[{"name":"printer","dropped":0}]}
}

package proc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// submission is one accepted SubmitBytes call.
type submission struct {
	ch      frames.ChannelID
	payload []byte
}

// fakeProducer records registrations and accepted submissions in order.
// With capacity > 0 it accepts that many submissions in all and drops the
// rest, like a full mux queue that is never drained. With discard set it
// keeps only counts and sizes (for big outputs).
type fakeProducer struct {
	mu       sync.Mutex
	names    []string
	contents []frames.ChannelContent
	subs     []submission
	sizes    map[frames.ChannelID][]int
	capacity int
	discard  bool
	onSubmit func(name string, payload []byte) // called for accepted submissions, outside the lock
	accepted int
	dropped  int
}

func (p *fakeProducer) RegisterChannel(name string, content frames.ChannelContent) (frames.ChannelID, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, n := range p.names {
		if n == name {
			if !p.contents[i].Equal(content) {
				return 0, fmt.Errorf("fake: channel %q: content conflict", name)
			}
			return frames.ChannelID(i + 1), nil
		}
	}
	p.names = append(p.names, name)
	p.contents = append(p.contents, content)
	return frames.ChannelID(len(p.names)), nil
}

func (p *fakeProducer) SubmitBytes(ch frames.ChannelID, payload []byte) bool {
	ok, name := p.submit(ch, payload)
	if ok && p.onSubmit != nil {
		p.onSubmit(name, payload)
	}
	return ok
}

func (p *fakeProducer) submit(ch frames.ChannelID, payload []byte) (bool, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ch == 0 || int(ch) > len(p.names) {
		panic(fmt.Sprintf("fake: submit on unregistered channel %d", ch))
	}
	if p.capacity > 0 && p.accepted >= p.capacity {
		p.dropped++
		return false, ""
	}
	p.accepted++
	if p.sizes == nil {
		p.sizes = map[frames.ChannelID][]int{}
	}
	p.sizes[ch] = append(p.sizes[ch], len(payload))
	if p.discard && !strings.HasSuffix(p.names[ch-1], ".lifecycle") {
		payload = nil
	}
	p.subs = append(p.subs, submission{ch, payload})
	return true, p.names[ch-1]
}

// id returns the id of a registered channel name, 0 if none.
func (p *fakeProducer) id(name string) frames.ChannelID {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, n := range p.names {
		if n == name {
			return frames.ChannelID(i + 1)
		}
	}
	return 0
}

// payloads returns the accepted payloads of a channel, in order.
func (p *fakeProducer) payloads(name string) [][]byte {
	id := p.id(name)
	p.mu.Lock()
	defer p.mu.Unlock()
	var out [][]byte
	for _, s := range p.subs {
		if s.ch == id {
			out = append(out, s.payload)
		}
	}
	return out
}

// text returns a channel's accepted payloads joined.
func (p *fakeProducer) text(name string) string {
	return string(bytes.Join(p.payloads(name), nil))
}

// lifecycle decodes the records of proc.<label>.lifecycle.
func (p *fakeProducer) lifecycle(t *testing.T, label string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, b := range p.payloads("proc." + label + ".lifecycle") {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("lifecycle record %q: %v", b, err)
		}
		out = append(out, m)
	}
	return out
}

// events returns the "event" fields of the lifecycle records.
func (p *fakeProducer) events(t *testing.T, label string) []string {
	var out []string
	for _, m := range p.lifecycle(t, label) {
		out = append(out, fmt.Sprint(m["event"]))
	}
	return out
}

// last returns the last accepted submission.
func (p *fakeProducer) last() submission {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.subs) == 0 {
		return submission{}
	}
	return p.subs[len(p.subs)-1]
}

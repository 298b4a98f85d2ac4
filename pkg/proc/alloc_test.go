package proc

import (
	"bytes"
	"context"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// recordProducer keeps every submission.
type recordProducer struct {
	ids      map[string]frames.ChannelID
	payloads map[frames.ChannelID][][]byte
}

func (p *recordProducer) RegisterChannel(name string, _ frames.ChannelContent) (frames.ChannelID, error) {
	id := frames.ChannelID(len(p.ids) + 1)
	p.ids[name] = id
	return id, nil
}

func (p *recordProducer) SubmitBytes(ch frames.ChannelID, payload []byte) bool {
	p.payloads[ch] = append(p.payloads[ch], payload)
	return true
}

// Options.Alloc supplies every output frame's buffer, and the bytes are
// the same as without it.
func TestAllocSuppliesFrameBuffers(t *testing.T) {
	var given [][]byte
	alloc := func(n int) []byte {
		b := make([]byte, 3, n+16) // a non-empty length must be ignored
		given = append(given, b)
		return b
	}
	p := &recordProducer{ids: map[string]frames.ChannelID{}, payloads: map[frames.ChannelID][][]byte{}}
	_, err := Run(context.Background(), Options{
		Argv:     []string{"sh", "-c", "printf 'one\\ntwo\\npartial'"},
		Producer: p, Alloc: alloc, IdleFlush: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	out := p.payloads[p.ids["proc.sh.stdout"]]
	if got := bytes.Join(out, nil); string(got) != "one\ntwo\npartial" {
		t.Fatalf("stdout frames = %q", out)
	}
	for _, f := range out {
		found := false
		for _, g := range given {
			if cap(f) == cap(g) && &f[:cap(f)][0] == &g[:cap(g)][0] {
				found = true
			}
		}
		if !found {
			t.Fatalf("frame %q was not built in a buffer from Alloc", f)
		}
	}
}

package fleet

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// TestForgedSubject: a message whose segment names another stream than
// its subject (a client allowed to publish on node a's subjects writing
// node b's stream) is skipped, said, and acknowledged by Ingest, and
// skipped by the Reader: b's stream is never written from a's subject.
func TestForgedSubject(t *testing.T) {
	s := testServer(t, "")
	nc, tg := connect(t, s.ClientURL())
	initStream(t, nc, tg.Prefix, StreamOptions{})
	// A segment of stream b#1, published on a#1's subject.
	var buf bytes.Buffer
	desc := frames.StreamDescriptor{Stream: frames.StreamID{Node: "b", Life: 1}}
	ch := frames.ChannelDescriptor{Stream: desc.Stream, ID: 1, Name: "x", Content: frames.TextStream()}
	w, err := segments.NewWriter(&buf, desc, []frames.ChannelDescriptor{ch}, segments.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := w.WriteFrame(frames.Frame{Channel: 1, Position: frames.Position(i), Payload: []byte("forged\n")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.EndSegment(); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	body := buf.Bytes()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: Subject(tg.Prefix, frames.StreamID{Node: "a", Life: 1}), Data: body}); err != nil {
		t.Fatal(err)
	}
	st := tempStore(t)
	var warns []string
	var mu sync.Mutex
	ingestDrained(t, nc, tg, st, IngestOptions{Durable: "forged", Idle: 500 * time.Millisecond, Warn: func(err error) {
		mu.Lock()
		warns = append(warns, err.Error())
		mu.Unlock()
	}})
	if ss, _ := st.Streams(); len(ss) != 0 {
		t.Errorf("the store took a forged message: %+v", ss)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "holds stream b#1") {
		t.Errorf("warnings: %q", warns)
	}
	r, err := NewReader(ctx, nc, tg, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(r)
	r.Close()
	if err != nil || len(data) != 0 {
		t.Errorf("reader gave %d bytes, %v", len(data), err)
	}
}

// TestForgedSecondSegment: a message whose first segment is of its
// subject's stream and whose second is another stream's (a client allowed
// to publish on node a's subjects appending node b's segment) has its
// second segment refused, said, by Ingest and by the Reader; its first is
// stored and read.
func TestForgedSecondSegment(t *testing.T) {
	s := testServer(t, "")
	nc, tg := connect(t, s.ClientURL())
	initStream(t, nc, tg.Prefix, StreamOptions{})
	segment := func(node, text string) []byte {
		var buf bytes.Buffer
		desc := frames.StreamDescriptor{Stream: frames.StreamID{Node: frames.NodeID(node), Life: 1}}
		ch := frames.ChannelDescriptor{Stream: desc.Stream, ID: 1, Name: "x", Content: frames.TextStream()}
		w, err := segments.NewWriter(&buf, desc, []frames.ChannelDescriptor{ch}, segments.WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			if err := w.WriteFrame(frames.Frame{Channel: 1, Position: frames.Position(i), Payload: []byte(text)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.EndSegment(); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	own := segment("a", "own\n")
	body := append(append([]byte(nil), own...), segment("b", "forged\n")...)
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: Subject(tg.Prefix, frames.StreamID{Node: "a", Life: 1}), Data: body}); err != nil {
		t.Fatal(err)
	}
	st := tempStore(t)
	var warns []string
	var mu sync.Mutex
	warn := func(err error) {
		mu.Lock()
		warns = append(warns, err.Error())
		mu.Unlock()
	}
	if _, err := Ingest(ctx, nc, tg, st, IngestOptions{Durable: "forged2", Idle: 500 * time.Millisecond, Warn: warn}); err != nil {
		t.Fatal(err)
	}
	ss, err := st.Streams()
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 1 || ss[0].Desc.Stream != (frames.StreamID{Node: "a", Life: 1}) || ss[0].Frames != 3 {
		t.Errorf("store streams: %+v (want a#1 with 3 frames only)", ss)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "segment 2") || !strings.Contains(warns[0], "holds stream b#1") {
		t.Errorf("ingest warnings: %q", warns)
	}
	warns = nil
	r, err := NewReader(ctx, nc, tg, ReaderOptions{Warn: warn})
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(r)
	r.Close()
	if err != nil || !bytes.Equal(data, own) {
		t.Errorf("reader gave %d bytes (want the first segment's %d), %v", len(data), len(own), err)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "holds stream b#1") {
		t.Errorf("reader warnings: %q", warns)
	}
}

// TestReaderEndsUnderLoad: a reader without Follow ends at the last
// message stored when it started, even while a producer keeps
// publishing faster than it reads.
func TestReaderEndsUnderLoad(t *testing.T) {
	s := testServer(t, "")
	nc, tg := connect(t, s.ClientURL())
	initStream(t, nc, tg.Prefix, StreamOptions{})
	p := newProducer(t, "busy", 1, publisherOn(t, nc, tg, PublisherOptions{Compression: segments.CompressNone}))
	for i := 0; i < 200; i++ {
		p.write(10)
		p.tick(true)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = p.pub.Settle(ctx)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			p.write(10)
			p.tick(true)
			time.Sleep(time.Millisecond)
		}
	}()
	defer func() { close(stop); <-done }()
	r, err := NewReader(ctx, nc, tg, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	buf := make([]byte, 512)
	for {
		_, err := r.Read(buf)
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Microsecond) // slower than the producer
		if ctx.Err() != nil {
			t.Fatal("the reader did not end within 30 s while the producer went on")
		}
	}
}

package capture

import (
	"bytes"
	"io"
	"os"
	"testing"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// Kick drains the capture at once: a record submitted and kicked reaches
// an uncompressed capture's reader (a pipe) long before the capture's own
// timer (an hour here) would have written it. This is how ds host gets
// each sample written as it is taken.
func TestCaptureKick(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var ch frames.ChannelID
	opts := Options{Output: "-", Stream: frames.StreamID{Node: "n", Life: 1}, Label: "kick", Compression: segments.CompressNone,
		Flush: time.Hour, Poll: time.Hour, Queue: 64,
		Setup: func(e *frames.Endpoint) (err error) {
			ch, err = e.RegisterChannel("app.x", frames.TextStream())
			return err
		}}
	c, err := Start(opts, w, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		var buf bytes.Buffer
		b := make([]byte, 4096)
		for !bytes.Contains(buf.Bytes(), []byte("kicked\n")) {
			n, err := r.Read(b)
			buf.Write(b[:n])
			if err != nil {
				break
			}
		}
		got <- buf.Bytes()
	}()
	c.Endpoint().Producer().SubmitText(ch, "kicked\n")
	c.Kick()
	select {
	case b := <-got:
		if !bytes.Contains(b, []byte("kicked\n")) {
			t.Fatalf("the reader got %d bytes without the record", len(b))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a kicked record did not reach the pipe")
	}
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	w.Close()
}

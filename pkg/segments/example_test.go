package segments_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// Write a stream to a capture, then read it back.
func Example() {
	stream := frames.StreamID{Node: "ci-7", Life: 1}
	stdout := frames.ChannelDescriptor{Stream: stream, ID: 1, Name: "proc.make.stdout", Content: frames.TextStream()}

	var capture bytes.Buffer // a file, a pipe, a socket: the writer never seeks
	w, err := segments.NewWriter(&capture, frames.StreamDescriptor{Stream: stream}, []frames.ChannelDescriptor{stdout},
		segments.WriterOptions{Compression: segments.CompressZstd})
	if err != nil {
		panic(err)
	}
	for i, line := range []string{"gcc -c foo.c\n", "gcc -o foo foo.o\n"} {
		if err := w.WriteFrame(frames.Frame{Channel: 1, Position: frames.Position(i), Payload: []byte(line)}); err != nil {
			panic(err)
		}
		w.Flush() // at every drain tick; errors are sticky and come back from Close
	}
	if err := w.Close(); err != nil { // writes StreamEnded; does not close capture
		panic(err)
	}

	r := segments.NewReader(&capture, segments.ReaderOptions{})
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		var ce *segments.CorruptError
		if errors.As(err, &ce) {
			fmt.Println("damaged:", ce) // not sticky: reading goes on after the range
			continue
		}
		if err != nil {
			panic(err)
		}
		switch e.Kind {
		case segments.EntrySegment:
			fmt.Printf("segment of %s with %d channels\n", e.Stream, len(e.Header.Channels))
		case segments.EntryFrame:
			fmt.Printf("%d %q\n", e.Frame.Position, e.Frame.Payload)
		case segments.EntryStreamEnded:
			fmt.Println("ended", e.Stream)
		}
	}
	// Output:
	// segment of ci-7#1 with 1 channels
	// 0 "gcc -c foo.c\n"
	// 1 "gcc -o foo foo.o\n"
	// ended ci-7#1
}

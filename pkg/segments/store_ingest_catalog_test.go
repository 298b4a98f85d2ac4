package segments

import (
	"bytes"
	"context"
	"io"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// TestStoreIngestCatalogChangedMeanwhile: an ingest keeps the stream's
// catalog from one commit to the next instead of reading catalog.json
// again, but only while the file is the one it left: a catalog another
// ingest wrote between two of its commits (a channel it declared) is
// read and kept, not overwritten by the older copy.
func TestStoreIngestCatalogChangedMeanwhile(t *testing.T) {
	s := stNewStore(t)
	pr, pw := io.Pipe()
	defer pw.Close()
	acked := make(chan Commit, 10)
	done := make(chan error, 1)
	go func() {
		_, err := s.Ingest(context.Background(), "-", pr, IngestOptions{CommitInterval: 20 * time.Millisecond, Acked: func(c Commit) { acked <- c }})
		done <- err
	}()
	wait := func() {
		t.Helper()
		select {
		case <-acked:
		case <-time.After(60 * time.Second):
			t.Fatal("no commit")
		}
	}
	if _, err := pw.Write(stCapture(t, descS, stChans, stFrames(streamS, stRange(0, 9)...), false)); err != nil {
		t.Fatal(err)
	}
	wait()

	// Another process declares a channel of the stream.
	other, err := OpenStore(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	extra := frames.ChannelDescriptor{Stream: streamS, ID: 50, Name: "extra", Content: frames.TextStream()}
	data := stCapture(t, descS, append(slices.Clone(stChans), extra), stFrames(streamS, stRange(100, 109)...), false)
	if _, err := other.Ingest(context.Background(), "other.dss", bytes.NewReader(data), IngestOptions{}); err != nil {
		t.Fatal(err)
	}
	other.Close()

	// The first ingest goes on, with a channel of its own.
	late := frames.ChannelDescriptor{Stream: streamS, ID: 60, Name: "late", Content: frames.Bytes()}
	if _, err := pw.Write(stCapture(t, descS, append(slices.Clone(stChans), late), stFrames(streamS, stRange(10, 19)...), false)); err != nil {
		t.Fatal(err)
	}
	wait()
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	chans, err := s.Channels(streamS)
	if err != nil {
		t.Fatal(err)
	}
	var ids []frames.ChannelID
	for _, c := range chans {
		ids = append(ids, c.ID)
	}
	if want := []frames.ChannelID{1, 2, 50, 60}; !slices.Equal(ids, want) {
		t.Errorf("catalog.json's channels %v, want %v", ids, want)
	}
}

// TestStoreStreamReaderFile: a store stream's reader says which chunk file
// it reads and where (a FileInput), so that a Reader of the stream decodes
// large headers from the file; not before the first chunk is opened.
func TestStoreStreamReaderFile(t *testing.T) {
	s := stNewStore(t)
	stIngest(t, s, "a.dss", stCapture(t, descS, stChans, stFrames(streamS, stRange(0, 9)...), false), nil)
	rc, err := s.OpenStream(streamS)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	fi, ok := rc.(FileInput)
	if !ok {
		t.Fatalf("%T is not a FileInput", rc)
	}
	if _, _, _, ok := fi.ReadingFile(); ok {
		t.Error("a file before anything was read")
	}
	b := make([]byte, 10)
	if _, err := io.ReadFull(rc, b); err != nil {
		t.Fatal(err)
	}
	f, off, _, ok := fi.ReadingFile()
	if !ok || off != 10 {
		t.Fatalf("ReadingFile: %v, %d", ok, off)
	}
	at := make([]byte, 10)
	if _, err := f.ReadAt(at, 0); err != nil || !bytes.Equal(at, b) {
		t.Errorf("the file's first bytes %q, read %q (%v)", at, b, err)
	}
	if _, ok := any(f).(*os.File); !ok {
		t.Errorf("%T", f)
	}
}

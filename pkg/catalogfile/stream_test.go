package catalogfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// referenceMarshal is how WriteTo wrote a catalog before it wrote a channel
// at a time: encoding/json's Encoder, two-space indents, HTML escaping off.
// WriteTo must write the same bytes.
func referenceMarshal(t *testing.T, c *Catalog) []byte {
	t.Helper()
	type channelJSON struct {
		Stream  frames.StreamID       `json:"stream"`
		ID      frames.ChannelID      `json:"id"`
		Name    string                `json:"name"`
		Label   *string               `json:"label"`
		Content frames.ChannelContent `json:"content"`
		Source  string                `json:"source,omitempty"`
	}
	type streamJSON struct {
		Stream   frames.StreamID      `json:"stream"`
		Label    *string              `json:"label"`
		Origin   *frames.StreamOrigin `json:"origin"`
		Source   string               `json:"source,omitempty"`
		Channels []channelJSON        `json:"channels"`
	}
	f := struct {
		Version int          `json:"version"`
		Streams []streamJSON `json:"streams"`
	}{Version: Version, Streams: []streamJSON{}}
	for _, s := range c.Streams() {
		sj := streamJSON{Stream: s.Descriptor.Stream, Channels: []channelJSON{}}
		if s.Declared {
			sj.Label, sj.Origin, sj.Source = s.Descriptor.Label, &s.Descriptor.Origin, s.Source
		}
		for _, ch := range c.Channels(s.Descriptor.Stream) {
			d := ch.Descriptor
			sj.Channels = append(sj.Channels, channelJSON{d.Stream, d.ID, d.Name, d.Label, d.Content, ch.Source})
		}
		f.Streams = append(f.Streams, sj)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// awkward are strings that encoding/json escapes, or that look as if it
// might: control bytes, quotes, HTML, U+2028, invalid UTF-8, non-ASCII.
var awkward = []string{
	"plain", "", "tab\there", "nl\n", "quote\"", `back\slash`, "<b>&amp;</b>", "\u2028\u2029", "bad\xffutf8",
	"\x00\x01\x1f\x7f", "é ü 日本", "esc\x1b[2J", "\b\f\r",
}

// randomCatalog builds a catalog of n streams with up to m channels each,
// its strings drawn from awkward.
func randomCatalog(t *testing.T, rng *rand.Rand, n, m int) *Catalog {
	c := New()
	pick := func() string { return awkward[rng.IntN(len(awkward))] }
	source := func() string { return "src " + pick() } // an empty source reads back as Read's
	for i := range n {
		id := frames.StreamID{Node: frames.NodeID(fmt.Sprintf("node-%d%s", i, pick())), Life: frames.Life(rng.Uint64N(1 << 40))}
		switch rng.IntN(3) {
		case 0: // known only through its channels
		case 1:
			if err := c.AddStream(frames.StreamDescriptor{Stream: id, Origin: frames.StreamOrigin(rng.IntN(3))}, source()); err != nil {
				t.Fatal(err)
			}
		case 2:
			l := pick()
			if err := c.AddStream(frames.StreamDescriptor{Stream: id, Label: &l, Origin: frames.OriginBootstrap}, "run.dss"); err != nil {
				t.Fatal(err)
			}
		}
		for j := range rng.IntN(m + 1) {
			d := frames.ChannelDescriptor{Stream: id, ID: frames.ChannelID(rng.Uint32N(1<<31) + 1), Name: fmt.Sprintf("ch.%d.%s", j, pick())}
			switch rng.IntN(4) {
			case 0:
				d.Content = frames.Bytes()
			case 1:
				d.Content = frames.TextStream()
			case 2:
				d.Content = frames.JSONRecord(pick())
			case 3:
				d.Content = frames.ChannelContent{Kind: frames.KindJSONRecord}
			}
			if rng.IntN(3) == 0 {
				l := pick()
				d.Label = &l
			}
			if err := c.AddChannel(d, source()); err != nil && !strings.Contains(err.Error(), "conflicting") {
				t.Fatal(err)
			}
		}
	}
	return c
}

// TestWriteToMatchesEncoder checks that WriteTo, which writes a channel at
// a time, writes what encoding/json's Encoder wrote of the same catalog,
// for catalogs of every shape and strings that need escaping.
func TestWriteToMatchesEncoder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cats := []*Catalog{New(), goldenCatalog(t)}
	for range 200 {
		cats = append(cats, randomCatalog(t, rng, rng.IntN(4), 6))
	}
	cats = append(cats, randomCatalog(t, rng, 2, 3000)) // over WriteTo's 32 KiB flushes
	for i, c := range cats {
		var got bytes.Buffer
		if _, err := c.WriteTo(&got); err != nil {
			t.Fatal(err)
		}
		if want := referenceMarshal(t, c); !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("catalog %d: WriteTo wrote\n%s\nthe Encoder\n%s", i, got.Bytes(), want)
		}
		if !utf8.Valid(got.Bytes()) || bytes.Contains(got.Bytes(), []byte(`\ufffd`)) {
			continue // invalid UTF-8 is written as U+FFFD, and reads back as that
		}
		back, err := Read(bytes.NewReader(got.Bytes()), "x")
		if err != nil {
			t.Fatalf("catalog %d: reading back: %v", i, err)
		}
		var again bytes.Buffer
		back.WriteTo(&again)
		if !bytes.Equal(again.Bytes(), got.Bytes()) {
			t.Fatalf("catalog %d: read back and written differs:\n%s\nagain:\n%s", i, got.Bytes(), again.Bytes())
		}
	}
}

// TestReadSyntaxErrorPlace breaks a catalog file at many places and checks
// that Read says the line and column that json.Unmarshal's offset gives,
// though Read decodes as it reads and holds no copy of the file.
func TestReadSyntaxErrorPlace(t *testing.T) {
	var buf bytes.Buffer
	randomCatalog(t, rand.New(rand.NewPCG(3, 4)), 3, 40).WriteTo(&buf)
	good := buf.Bytes()
	rng := rand.New(rand.NewPCG(5, 6))
	iterations := 3000
	if n, err := strconv.Atoi(os.Getenv("DS_SYNTAX_TRIALS")); err == nil {
		iterations = n // DS_SYNTAX_TRIALS=100000 for a longer search
	}
	checked := 0
	for range iterations {
		bad := bytes.Clone(good)
		i := rng.IntN(len(bad))
		bad[i] = "{}[],:\"x0-"[rng.IntN(10)]
		var v any
		err := json.Unmarshal(bad, &v)
		se, ok := err.(*json.SyntaxError)
		if !ok {
			continue
		}
		checked++
		line, col := lineCol(bad, se.Offset)
		want := fmt.Sprintf("line %d, column %d: ", line, col)
		_, rerr := Read(bytes.NewReader(bad), "x")
		// Read decodes as it reads: an entry of the wrong shape before the
		// bad byte (an array where a channel entry belongs, the text being
		// valid JSON that far) is reported as such, without a place.
		if rerr != nil && errors.Is(rerr, ErrFormat) && !strings.Contains(rerr.Error(), "invalid character") && !strings.Contains(rerr.Error(), "end of JSON") {
			continue
		}
		if rerr == nil || !strings.Contains(rerr.Error(), want) {
			t.Fatalf("byte %d set to %q: Read says %v, want %q (%v)", i, bad[i], rerr, want, se)
		}
	}
	if checked < 100 {
		t.Fatalf("only %d syntax errors made", checked)
	}
}

// lineCol converts the byte offset of a JSON syntax error to a 1-based line
// and column (in bytes), as Read did when it read a file whole.
func lineCol(data []byte, off int64) (line, col int) {
	off = min(max(off, 1), int64(len(data)))
	before := data[:off]
	line = 1 + bytes.Count(before, []byte("\n"))
	col = len(before) - bytes.LastIndexByte(before, '\n') - 1
	return line, col
}

// TestReadLargeCatalogMemory reads a catalog of 140 000 channels (the
// file a 16 MiB header makes, about 37 MB) and checks what Read keeps and
// allocates: it used to read the file whole and copy it twice more.
func TestReadLargeCatalogMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 37 MB catalog")
	}
	id := frames.StreamID{Node: "node-alpha", Life: 1}
	c := New()
	c.AddStream(frames.StreamDescriptor{Stream: id}, "big.dss")
	for i := 1; i <= 140000; i++ {
		c.AddChannel(frames.ChannelDescriptor{Stream: id, ID: frames.ChannelID(i), Name: fmt.Sprintf("proc.job-%d.stdout", i), Content: frames.TextStream()}, "big.dss")
	}
	var file bytes.Buffer
	c.WriteTo(&file)
	c = nil
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, err := Read(bytes.NewReader(file.Bytes()), "x")
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	kept := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d-byte file: catalog kept %.1f MiB, %.1f MiB allocated", file.Len(), float64(kept)/(1<<20), float64(after.TotalAlloc-before.TotalAlloc)/(1<<20))
	if got.Len(id) != 140000 {
		t.Fatalf("read %d channels", got.Len(id))
	}
	if kept > 24<<20 {
		t.Errorf("the catalog of 140000 channels keeps %.1f MiB, want at most 24", float64(kept)/(1<<20))
	}
	runtime.KeepAlive(got)
}

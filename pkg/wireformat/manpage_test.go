package wireformat

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// specPath is the format specification whose worked examples these tests
// check byte for byte, so that spec and code cannot drift apart.
const specPath = "../../man/ds-format.5"

// specExamples returns the hex examples of the man page by name. An example
// is the .EX/.EE block after a comment line `.\" example: NAME`; in it, two
// hex digits are a byte, text between \(aq quotes is its bytes, and '#'
// starts a comment.
func specExamples(t testing.TB) map[string][]byte {
	t.Helper()
	src, err := os.ReadFile(specPath)
	if err != nil {
		t.Fatal(err)
	}
	roff := strings.NewReplacer(`\(aq`, "'", `\(dq`, `"`, `\e`, `\`, `\-`, "-")
	out := map[string][]byte{}
	name := ""
	in := false
	for n, line := range strings.Split(string(src), "\n") {
		switch {
		case strings.HasPrefix(line, `.\" example: `):
			name = strings.TrimPrefix(line, `.\" example: `)
		case name != "" && line == ".EX":
			in = true
		case in && line == ".EE":
			in, name = false, ""
		case in:
			b, err := parseExampleLine(roff.Replace(line))
			if err != nil {
				t.Fatalf("%s:%d: %v", specPath, n+1, err)
			}
			out[name] = append(out[name], b...)
		}
	}
	return out
}

func parseExampleLine(line string) ([]byte, error) {
	var b []byte
	for {
		line = strings.TrimLeft(line, " ")
		switch {
		case line == "" || line[0] == '#':
			return b, nil
		case line[0] == '\'':
			end := strings.IndexByte(line[1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("unterminated quote in %q", line)
			}
			b = append(b, line[1:1+end]...)
			line = line[2+end:]
		default:
			tok, rest, _ := strings.Cut(line, " ")
			x, err := hex.DecodeString(tok)
			if err != nil || len(x) != 1 {
				return nil, fmt.Errorf("bad byte %q", tok)
			}
			b, line = append(b, x...), rest
		}
	}
}

// The values the man page's EXAMPLES section describes.
var (
	exStream  = frames.StreamID{Node: "n1", Life: 7}
	exHeader  = Header{Major: 1, Minor: MinorVersion, SegmentID: [8]byte{1, 2, 3, 4, 5, 6, 7, 8}, Writer: "ds 0.1.0", Stream: frames.StreamDescriptor{Stream: exStream}, Channels: []frames.ChannelDescriptor{}}
	exChannel = frames.ChannelDescriptor{Stream: exStream, ID: 1, Name: "app.out", Content: frames.TextStream()}
	exFrame   = frames.Frame{Channel: 1, Position: 0, Payload: []byte("hi")}
	exEscaped = frames.Frame{Channel: 1, Position: 1, Payload: []byte(Magic)}
	exBlock   = []frames.Frame{{Channel: 1, Position: 2, Payload: []byte("a\n")}, {Channel: 1, Position: 3, Payload: []byte("b\n")}}
)

func TestSpecExamplesEncode(t *testing.T) {
	ex := specExamples(t)
	seed := exHeader.Seed()
	if seed != 0x46891F81 {
		t.Errorf("seed = %#08x, the man page says 0x46891F81", seed)
	}
	channelBody, err := AppendChannelBody(nil, &exChannel)
	if err != nil {
		t.Fatal(err)
	}
	var content []byte
	next := frames.Position(0)
	for _, f := range exBlock {
		content = AppendInnerFrame(content, f, next)
		next = f.Position + 1
	}
	encoders := map[string]func() ([]byte, error){
		"header": func() ([]byte, error) { return AppendHeader(nil, &exHeader) },
		"header-copy": func() ([]byte, error) {
			h, err := AppendHeader(nil, &exHeader)
			if err != nil {
				return nil, err
			}
			return AppendHeaderCopy(nil, h)
		},
		"channel-declared": func() ([]byte, error) {
			return AppendRecord(nil, seed, Record{Type: TypeChannelDeclared, Body: channelBody})
		},
		"frame":         func() ([]byte, error) { return AppendFrame(nil, seed, exFrame) },
		"frame-escaped": func() ([]byte, error) { return AppendFrame(nil, seed, exEscaped) },
		"block":         func() ([]byte, error) { return AppendBlock(nil, seed, content) },
		"stream-ended":  func() ([]byte, error) { return AppendRecord(nil, seed, Record{Type: TypeStreamEnded}) },
		"trimmed": func() ([]byte, error) {
			return AppendRecord(nil, seed, Record{Type: TypeTrimmed, Body: AppendTrimmedBody(nil, 300)})
		},
		"segment-summary": func() ([]byte, error) {
			first, last := frames.Position(0), frames.Position(3)
			return AppendSummary(nil, &Summary{SegmentID: "0102030405060708", Length: 284, Frames: 4, Bytes: 14, First: &first, Last: &last, Ordered: true, Ended: true,
				Channels: []ChannelCount{{ID: 1, Frames: 4, Bytes: 14, First: 0, Last: 3}}, Kept: []KeptFrame{}, KeptAll: true})
		},
	}
	for name, enc := range encoders {
		want, ok := ex[name]
		if !ok {
			t.Errorf("man page has no example %q", name)
			continue
		}
		got, err := enc()
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: code encodes\n% X\nman page says\n% X", name, got, want)
		}
	}
	if len(ex) != len(encoders) {
		t.Errorf("man page has %d examples, test knows %d", len(ex), len(encoders))
	}
}

// TestSpecExampleCapture decodes the man page's complete capture: the
// header followed by every record example.
func TestSpecExampleCapture(t *testing.T) {
	ex := specExamples(t)
	var capture []byte
	for _, name := range []string{"header", "channel-declared", "frame", "frame-escaped", "block", "stream-ended", "segment-summary"} {
		capture = append(capture, ex[name]...)
	}
	if len(capture) != 525 {
		t.Errorf("capture is %d bytes, the man page says 525", len(capture))
	}
	h, n, err := ParseHeader(capture)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(exHeader, h); diff != "" {
		t.Errorf("header (-want +got):\n%s", diff)
	}
	var got []any
	for b := capture[n:]; len(b) > 0; {
		rec, n, err := ParseRecord(b, h.Seed(), 0)
		if err != nil {
			t.Fatalf("at offset %d: %v", len(capture)-len(b), err)
		}
		b = b[n:]
		switch rec.Type {
		case TypeChannelDeclared:
			d, err := ParseChannelBody(rec.Body)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, d)
		case TypeFrame:
			f, err := ParseFrameBody(rec.Body)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, f)
		case TypeBlock:
			content, err := DecodeBlock(nil, rec.Body)
			if err != nil {
				t.Fatal(err)
			}
			next := frames.Position(0)
			for len(content) > 0 {
				inner, n, err := ParseInner(content)
				if err != nil {
					t.Fatal(err)
				}
				f, err := ParseInnerFrameBody(inner.Body, next)
				if err != nil {
					t.Fatal(err)
				}
				got, content, next = append(got, f), content[n:], f.Position+1
			}
		case TypeStreamEnded:
			got = append(got, "StreamEnded")
		case TypeSummary:
			sum, err := ParseSummaryBody(rec.Body)
			if err != nil || sum.Check() != nil {
				t.Fatalf("summary: %v %v", err, sum.Check())
			}
			if at := len(capture) - len(b) - n; int64(at) != sum.Length {
				t.Errorf("summary at %d says its header is %d bytes before it", at, sum.Length)
			}
			got = append(got, "SegmentSummary")
		default:
			t.Fatalf("unexpected %v", rec.Type)
		}
	}
	want := []any{exChannel, exFrame, exEscaped, exBlock[0], exBlock[1], "StreamEnded", "SegmentSummary"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	if i := bytes.Index(capture[1:], []byte(Magic)); i >= 0 {
		t.Errorf("magic at offset %d of the example capture", i+1)
	}
}

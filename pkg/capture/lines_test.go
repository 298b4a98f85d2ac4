package capture

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ds-telemetry/ds/pkg/proc"
	"github.com/ds-telemetry/ds/pkg/wireformat"
)

// The framer's limits are ds wrap's and the format's.
func TestLineFramerLimits(t *testing.T) {
	if MaxFrame != proc.DefaultMaxFrameSize || IdleFlush != proc.DefaultIdleFlush || MaxRecord != wireformat.MaxPayloadSize {
		t.Fatalf("MaxFrame %d, IdleFlush %v, MaxRecord %d: want proc's %d and %v and wireformat's %d",
			MaxFrame, IdleFlush, MaxRecord, proc.DefaultMaxFrameSize, proc.DefaultIdleFlush, wireformat.MaxPayloadSize)
	}
}

// framed runs a LineFramer of mode over the chunks and returns the
// payloads it submitted and the lines it refused ("LINE: error").
func framed(mode Content, chunks ...string) (payloads, refused []string) {
	f := LineFramer{
		Mode:   mode,
		Submit: func(p []byte) { payloads = append(payloads, string(p)) },
		Refuse: func(line uint64, err error) { refused = append(refused, fmt.Sprintf("%d: %v", line, err)) },
	}
	now := time.Now()
	for _, c := range chunks {
		f.Write([]byte(c), now)
	}
	f.End()
	return payloads, refused
}

func TestLineFramer(t *testing.T) {
	long := strings.Repeat("x", MaxFrame)
	tests := []struct {
		name    string
		mode    Content
		chunks  []string
		want    []string
		refused []string
	}{
		{"text lines", ContentText, []string{"a\nbb\n\nccc"}, []string{"a\n", "bb\n", "\n", "ccc"}, nil},
		{"text split reads", ContentText, []string{"ab", "c\nd", "e\n"}, []string{"abc\n", "de\n"}, nil},
		{"text CRLF and NUL kept", ContentText, []string{"a\r\nb\x00\xff\n"}, []string{"a\r\n", "b\x00\xff\n"}, nil},
		{"text line of exactly a frame", ContentText, []string{long[:MaxFrame-1] + "\n"}, []string{long[:MaxFrame-1] + "\n"}, nil},
		{"text long line cut", ContentText, []string{long, "yz\n"}, []string{long, "yz\n"}, nil},
		{"text long line cut mid-read", ContentText, []string{"ab", long + "\n"}, []string{"ab" + long[:MaxFrame-2], "xx\n"}, nil},
		{"text empty", ContentText, nil, nil, nil},
		{"bytes", ContentBytes, []string{"a\nb", "c"}, []string{"a\nb", "c"}, nil},
		{"bytes cut at a frame", ContentBytes, []string{long + "q"}, []string{long, "q"}, nil},
		{"json", ContentJSON, []string{`{"a":1}` + "\n" + `[2]`}, []string{`{"a":1}`, `[2]`}, nil},
		{"json split reads and CRLF", ContentJSON, []string{`{"a":`, "1}\r", "\n 3 \n"}, []string{`{"a":1}`, ` 3 `}, nil},
		{"json blank lines skipped", ContentJSON, []string{"\n  \n\t\r\n{}\n\n"}, []string{`{}`}, nil},
		{"json invalid line refused", ContentJSON, []string{"1\n{x\n2\n"}, []string{"1", "2"},
			[]string{"2: invalid JSON: invalid character 'x' looking for beginning of object key string"}},
		{"json two values refused", ContentJSON, []string{"1 2\n3"}, []string{"3"},
			[]string{"1: invalid JSON: invalid character '2' after top-level value"}},
		{"json cut last line refused", ContentJSON, []string{"1\n{\"a\":"}, []string{"1"},
			[]string{"2: invalid JSON: unexpected end of JSON input"}},
		{"json too long refused", ContentJSON, []string{"1\n\"", strings.Repeat("y", MaxRecord), "\"\n4\n"}, []string{"1", "4"},
			[]string{"2: record longer than 1048576 bytes (1 MiB), not recorded"}},
		{"json too long last line", ContentJSON, []string{"\"" + strings.Repeat("y", MaxRecord)}, nil,
			[]string{"1: record longer than 1048576 bytes (1 MiB), not recorded"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, refused := framed(tt.mode, tt.chunks...)
			if !equalStrings(got, tt.want) {
				t.Errorf("payloads %q, want %q", abbrev(got), abbrev(tt.want))
			}
			if !equalStrings(refused, tt.refused) {
				t.Errorf("refused %q, want %q", refused, tt.refused)
			}
		})
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// abbrev shortens long payloads for messages.
func abbrev(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		if len(s) > 40 {
			s = fmt.Sprintf("%s…(%d bytes)…%s", s[:10], len(s), s[len(s)-10:])
		}
		out[i] = s
	}
	return out
}

// TestLineFramerIdleFlush: a partial text line goes out once it has waited
// IdleFlush, not before; its rest follows as a frame of its own.
func TestLineFramerIdleFlush(t *testing.T) {
	var got []string
	f := LineFramer{Mode: ContentText, Submit: func(p []byte) { got = append(got, string(p)) }}
	t0 := time.Now()
	f.Write([]byte("prompt> "), t0)
	f.Idle(t0.Add(IdleFlush - time.Millisecond))
	if len(got) != 0 {
		t.Fatalf("flushed early: %q", got)
	}
	f.Write([]byte("more"), t0.Add(IdleFlush-time.Millisecond))
	f.Idle(t0.Add(IdleFlush))
	f.Write([]byte("rest\n"), t0.Add(2*IdleFlush))
	f.Idle(t0.Add(4 * IdleFlush))
	if want := []string{"prompt> more", "rest\n"}; !equalStrings(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// FuzzLineFramer: any input, cut into reads anywhere, gives text and bytes
// frames that concatenate to the input, none larger than a frame, and
// JSON frames that are each one valid JSON value, never blank; nothing
// panics.
func FuzzLineFramer(f *testing.F) {
	f.Add([]byte("a\nb\n\nc"), uint8(1))
	f.Add([]byte("{\"a\":1}\r\n[1,2]\n{bad\n 3 \n"), uint8(3))
	f.Add([]byte("\x00\xff\r\n\n"), uint8(0))
	f.Fuzz(func(t *testing.T, in []byte, cut uint8) {
		chunks := splitEvery(string(in), int(cut)+1)
		for _, mode := range []Content{ContentText, ContentBytes} {
			got, refused := framed(mode, chunks...)
			if len(refused) > 0 {
				t.Fatalf("mode %d refused %q", mode, refused)
			}
			if strings.Join(got, "") != string(in) {
				t.Fatalf("mode %d: frames %q do not make the input %q", mode, got, in)
			}
			for _, p := range got {
				if len(p) == 0 || len(p) > MaxFrame {
					t.Fatalf("mode %d: frame of %d bytes", mode, len(p))
				}
				if mode == ContentText && strings.Contains(strings.TrimSuffix(p, "\n"), "\n") {
					t.Fatalf("text frame %q holds more than one line", p)
				}
			}
		}
		got, refused := framed(ContentJSON, chunks...)
		for _, p := range got {
			if !json.Valid([]byte(p)) || strings.TrimSpace(p) == "" || strings.Contains(p, "\n") {
				t.Fatalf("json frame %q", p)
			}
		}
		if lines := strings.Count(string(in), "\n") + 1; len(got)+len(refused) > lines {
			t.Fatalf("%d records and %d refusals from %d lines", len(got), len(refused), lines)
		}
	})
}

func splitEvery(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

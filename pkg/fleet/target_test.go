package fleet

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ds-telemetry/ds/pkg/frames"
)

func TestParseTarget(t *testing.T) {
	tests := []struct {
		in      string
		want    Target
		wantErr string // a part of the error; "" when none
	}{
		{in: "nats://127.0.0.1:4222/ds", want: Target{Servers: []string{"nats://127.0.0.1:4222"}, Prefix: "ds", Display: "nats://127.0.0.1:4222/ds"}},
		{in: "nats://host", want: Target{Servers: []string{"nats://host:4222"}, Prefix: "ds", Display: "nats://host:4222/ds"}},
		{in: "nats://host/", want: Target{Servers: []string{"nats://host:4222"}, Prefix: "ds", Display: "nats://host:4222/ds"}},
		{in: "nats://host:1/fleet.ci", want: Target{Servers: []string{"nats://host:1"}, Prefix: "fleet.ci", Display: "nats://host:1/fleet.ci"}},
		{in: "nats://host:65535/a-b_c.D9", want: Target{Servers: []string{"nats://host:65535"}, Prefix: "a-b_c.D9", Display: "nats://host:65535/a-b_c.D9"}},
		{in: "nats://h1:4222,h2,h3:5222/ds", want: Target{
			Servers: []string{"nats://h1:4222", "nats://h2:4222", "nats://h3:5222"}, Prefix: "ds", Display: "nats://h1:4222,h2:4222,h3:5222/ds"}},
		{in: "nats://[::1]:4222/ds", want: Target{Servers: []string{"nats://[::1]:4222"}, Prefix: "ds", Display: "nats://[::1]:4222/ds"}},
		{in: "nats://[fe80::1]/ds", want: Target{Servers: []string{"nats://[fe80::1]:4222"}, Prefix: "ds", Display: "nats://[fe80::1]:4222/ds"}},
		{in: "nats://[::1]:4222,127.0.0.1/x", want: Target{Servers: []string{"nats://[::1]:4222", "nats://127.0.0.1:4222"}, Prefix: "x", Display: "nats://[::1]:4222,127.0.0.1:4222/x"}},
		{in: "tls://nats.example.com:4443/ds", want: Target{Servers: []string{"tls://nats.example.com:4443"}, Prefix: "ds", TLS: true, Display: "tls://nats.example.com:4443/ds"}},
		{in: "nats://alice:s3cret@h:4222/ds", want: Target{Servers: []string{"nats://h:4222"}, Prefix: "ds", User: "alice", Password: "s3cret", Display: "nats://h:4222/ds"}},
		{in: "nats://alice:p%40ss%2Fw:rd@h/ds", want: Target{Servers: []string{"nats://h:4222"}, Prefix: "ds", User: "alice", Password: "p@ss/w:rd", Display: "nats://h:4222/ds"}},
		{in: "nats://alice:p@ss@h/ds", want: Target{Servers: []string{"nats://h:4222"}, Prefix: "ds", User: "alice", Password: "p@ss", Display: "nats://h:4222/ds"}},
		{in: "nats://t0ken@h1,h2/ds", want: Target{Servers: []string{"nats://h1:4222", "nats://h2:4222"}, Prefix: "ds", User: "t0ken", Display: "nats://h1:4222,h2:4222/ds"}},
		{in: "tls://t0ken@h", want: Target{Servers: []string{"tls://h:4222"}, Prefix: "ds", User: "t0ken", TLS: true, Display: "tls://h:4222/ds"}},

		{in: "h:4222", wantErr: "h:4222: want nats://HOST:PORT/PREFIX"},
		{in: "http://h:4222/ds", wantErr: "want nats://HOST:PORT/PREFIX"},
		{in: "NATS://h/ds", wantErr: "want nats://HOST:PORT/PREFIX"},
		{in: "nats://", wantErr: "no server named"},
		{in: "nats:///ds", wantErr: "no server named"},
		{in: "nats://alice:s3cret@/ds", wantErr: "no server named"},
		{in: "nats://:4222/ds", wantErr: "empty host"},
		{in: "nats://h1,,h2/ds", wantErr: "empty host"},
		{in: "nats://h1,/ds", wantErr: "empty host"},
		{in: "nats://h:0/ds", wantErr: "bad port"},
		{in: "nats://h:65536/ds", wantErr: "bad port"},
		{in: "nats://h:-1/ds", wantErr: "bad port"},
		{in: "nats://h:x/ds", wantErr: "bad port"},
		{in: "nats://h:/ds", wantErr: "bad port"},
		{in: "nats://::1/ds", wantErr: "IPv6 address goes in brackets"},
		{in: "nats://fe80::1:4222/ds", wantErr: "IPv6 address goes in brackets"},
		{in: "nats://h/a*b", wantErr: `"*" is not allowed`},
		{in: "nats://h/*", wantErr: `"*" is not allowed`},
		{in: "nats://h/ds.>", wantErr: `">" is not allowed`},
		{in: "nats://h/a b", wantErr: `" " is not allowed`},
		{in: "nats://h/a\tb", wantErr: `is not allowed`},
		{in: "nats://h/dé", wantErr: `is not allowed`},
		{in: "nats://h/a/b", wantErr: `"/" is not allowed`},
		{in: "nats://h/a..b", wantErr: "empty token"},
		{in: "nats://h/.ds", wantErr: "empty token"},
		{in: "nats://h/ds.", wantErr: "empty token"},
		{in: "nats://alice:s3cret@h:99999/ds", wantErr: "bad port"},
		{in: "nats://alice:s3cret@h/a*b", wantErr: "not allowed"},
		{in: "nats://alice:s3c%zzret@h/ds", wantErr: "bad user information"},
		{in: "nats://s3cret@:1/ds", wantErr: "empty host"},
		{in: "nats://s3cret@h/ds..x", wantErr: "empty token"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseTarget(tt.in)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("ParseTarget(%q) = %+v, want an error with %q", tt.in, got, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error %q, want %q in it", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "s3c") {
					t.Errorf("error %q repeats the password", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseTarget(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseTarget(%q)\n got %+v\nwant %+v", tt.in, got, tt.want)
			}
			if !IsURL(tt.in) {
				t.Errorf("IsURL(%q) = false", tt.in)
			}
			// Display parses to the same target, without credentials.
			again, err := ParseTarget(got.Display)
			want := got
			want.User, want.Password = "", ""
			if err != nil || !reflect.DeepEqual(again, want) {
				t.Errorf("ParseTarget(Display %q) = %+v, %v; want %+v", got.Display, again, err, want)
			}
		})
	}
}

// TestParseTargetSecrets: no error repeats a password or token, however
// the URL is malformed around it.
func TestParseTargetSecrets(t *testing.T) {
	const secret = "Sup3rS3cret"
	for _, in := range []string{
		"nats://u:" + secret + "@",
		"nats://u:" + secret + "@h:0",
		"nats://u:" + secret + "@h/a b",
		"nats://u:" + secret + "@::1",
		"nats://" + secret + "@h:x/ds",
		"nats://u:" + secret + "%@h/ds",
		"http://u:" + secret + "@h/ds",
		"u:" + secret + "@h:4222/ds",
		// A token or password with a raw "/" (base64) ends the host part
		// early: the server list is then garbage, and the error must not
		// echo what follows.
		"nats://u:ab/" + secret + "@h:4222/ds",
		"nats://ab/" + secret + "@h/ds",
	} {
		_, err := ParseTarget(in)
		if err == nil {
			t.Errorf("ParseTarget(%q): no error", in)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("ParseTarget(%q): error %q repeats the secret", in, err)
		}
	}
}

func TestIsURL(t *testing.T) {
	for in, want := range map[string]bool{
		"nats://h": true, "tls://h/ds": true, "run.dss": false, "-": false, "nats:/h": false, "NATS://h": false, "": false, "./nats://x": false,
	} {
		if got := IsURL(in); got != want {
			t.Errorf("IsURL(%q) = %v, want %v", in, got, want)
		}
	}
}

// trickyNodes are node names whose escapes must all differ and be one
// valid subject token each.
var trickyNodes = []string{
	"", "a", "a.b", "a=2Eb", "a=b", "=", "=3D", "a_b", "a b", "a-b", "*", ">", "a.*", "a.>", ".", "..", "a..b",
	"ünï cødé", "日本", "\x00", "\xff", "\t", "\r\n", "A", "Z9", "a/b", "a\\b", "$SYS", "%41", "=2E", "long-" + strings.Repeat("x", 300),
}

// validToken reports whether s is one NATS subject token ds would publish
// on: not empty, printable ASCII, no ".", "*", ">" or white space.
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || c == '.' || c == '*' || c == '>' {
			return false
		}
	}
	return true
}

// unescapeNode inverts EscapeNode, or fails: the proof that it is one to
// one.
func unescapeNode(tok string) (string, bool) {
	if tok == "=" {
		return "", true
	}
	var b strings.Builder
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		if c != '=' {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(tok) {
			return "", false
		}
		v, err := strconv.ParseUint(tok[i+1:i+3], 16, 8)
		if err != nil {
			return "", false
		}
		b.WriteByte(byte(v))
		i += 2
	}
	return b.String(), true
}

func TestEscapeNode(t *testing.T) {
	for in, want := range map[string]string{
		"":      "=",
		"ci-7":  "ci-7",
		"a_B9":  "a_B9",
		"a.b":   "a=2Eb",
		"a=2Eb": "a=3D2Eb",
		"*":     "=2A",
		">":     "=3E",
		"a b":   "a=20b",
		"é":     "=C3=A9",
	} {
		if got := EscapeNode(in); got != want {
			t.Errorf("EscapeNode(%q) = %q, want %q", in, got, want)
		}
	}
	seen := map[string]string{}
	for _, node := range trickyNodes {
		tok := EscapeNode(node)
		if !validToken(tok) {
			t.Errorf("EscapeNode(%q) = %q: not a valid subject token", node, tok)
		}
		if other, ok := seen[tok]; ok {
			t.Errorf("EscapeNode(%q) = EscapeNode(%q) = %q", node, other, tok)
		}
		seen[tok] = node
		if back, ok := unescapeNode(tok); !ok || back != node {
			t.Errorf("unescape(EscapeNode(%q) = %q) = %q, %v", node, tok, back, ok)
		}
		// The subject has exactly four tokens, whatever the node.
		subj := Subject("fleet.ci", frames.StreamID{Node: frames.NodeID(node), Life: 7})
		if n := strings.Count(subj, ".") + 1; n != 5 || !strings.HasSuffix(subj, "."+tok+".7") {
			t.Errorf("Subject for %q = %q", node, subj)
		}
	}
}

func TestSubjectsAndNames(t *testing.T) {
	id := frames.StreamID{Node: "a.b", Life: 1732953600123456789}
	for _, c := range []struct{ got, want string }{
		{Subject("ds", id), "ds.s.a=2Eb.1732953600123456789"},
		{AllSubjects("fleet.ci"), "fleet.ci.s.>"},
		{NodeSubjects("ds", "a.b"), "ds.s.a=2Eb.*"},
		{NodeSubjects("ds", ""), "ds.s.=.*"},
		{StreamName("ds"), "DS_ds"},
		{StreamName("fleet.ci"), "DS_fleet_ci"},
		{StreamName("a-b_c"), "DS_a-b_c"},
		{StreamName("a@b"), "DS_a_b"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestMsgID(t *testing.T) {
	a := frames.StreamID{Node: "n1", Life: 1}
	b := frames.StreamID{Node: "n2", Life: 1}
	c := frames.StreamID{Node: "n1", Life: 2}
	if MsgID(a, 10, 20, false, 3) != MsgID(a, 10, 20, false, 99) {
		t.Error("the same message (stream and positions) gives two ids")
	}
	if MsgID(a, 0, 0, true, 5) != MsgID(a, 7, 9, true, 5) {
		t.Error("the same frameless message gives two ids")
	}
	ids := map[string]string{}
	for _, m := range []struct {
		id          frames.StreamID
		first, last frames.Position
		frameless   bool
		seq         uint64
	}{
		{a, 10, 20, false, 0}, {a, 10, 21, false, 0}, {a, 11, 20, false, 0}, {a, 1, 1020, false, 0}, {a, 110, 20, false, 0},
		{b, 10, 20, false, 0}, {c, 10, 20, false, 0},
		{frames.StreamID{Node: "n1", Life: 12}, 0, 0, false, 0}, {frames.StreamID{Node: "n11", Life: 2}, 0, 0, false, 0},
		{a, 0, 0, true, 5}, {a, 0, 0, true, 6}, {b, 0, 0, true, 5},
	} {
		id := MsgID(m.id, m.first, m.last, m.frameless, m.seq)
		what := fmt.Sprintf("%+v", m)
		if other, ok := ids[id]; ok {
			t.Errorf("%s and %s share id %q", what, other, id)
		}
		ids[id] = what
		if len(id) > 64 {
			t.Errorf("%s: id %q is long", what, id)
		}
	}
}

// TestDedupe: a message published twice with the same Nats-Msg-Id (a
// retry whose first acknowledgement was lost) is stored once.
func TestDedupe(t *testing.T) {
	s := testServer(t, "")
	nc, tg := connect(t, s.ClientURL())
	initStream(t, nc, tg.Prefix, StreamOptions{})
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id := frames.StreamID{Node: "n1", Life: 1}
	subj := Subject(tg.Prefix, id)
	msgID := MsgID(id, 0, 99, false, 1)
	for i, wantDup := range []bool{false, true} {
		ack, err := js.PublishMsg(ctx, &nats.Msg{Subject: subj, Data: []byte("segment")}, jetstream.WithMsgID(msgID))
		if err != nil {
			t.Fatal(err)
		}
		if ack.Duplicate != wantDup || ack.Sequence != 1 {
			t.Errorf("publish %d: %+v", i, ack)
		}
	}
	if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: subj, Data: []byte("next")}, jetstream.WithMsgID(MsgID(id, 100, 120, false, 2))); err != nil {
		t.Fatal(err)
	}
	str, err := js.Stream(ctx, StreamName(tg.Prefix))
	if err != nil {
		t.Fatal(err)
	}
	info, err := str.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 2 {
		t.Errorf("stream holds %d messages, want 2", info.State.Msgs)
	}
}

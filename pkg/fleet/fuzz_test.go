package fleet

import (
	"net/url"
	"slices"
	"strings"
	"testing"
)

// FuzzParseTarget: ParseTarget never panics; a target it returns has
// servers, a valid prefix and a Display that parses to the same target
// without credentials and depends on nothing but what follows the
// userinfo; and a password changes neither the error nor the Display (so
// neither can repeat it).
//
//	go test ./pkg/fleet -run '^$' -fuzz FuzzParseTarget -fuzztime 10s
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{
		"nats://127.0.0.1:4222/ds", "nats://h", "tls://h:4443/fleet.ci", "nats://h1,h2:5222,[::1]/x",
		"nats://alice:s3cret@h/ds", "nats://tok@h", "nats://u:p@ss@h/ds", "nats://u:ab/cd@h/ds",
		"nats://h/a*b", "nats://h/a..b", "nats://::1", "nats://h:0", "nats://h1,,h2", "h:4222", "nats://u:%zz@h",
		"nats://0]0", "nats://[fe80::1%eth0]:4222/ds", "nats://a b", "nats://h%x",
	} {
		f.Add(s, "Sup3r/S3cret:@")
	}
	f.Fuzz(func(t *testing.T, s, secret string) {
		tg, err := ParseTarget(s)
		if err == nil {
			if len(tg.Servers) == 0 || checkPrefix(tg.Prefix) != nil || !IsURL(s) {
				t.Fatalf("ParseTarget(%q) = %+v", s, tg)
			}
			if strings.Contains(tg.Display, "@") {
				t.Fatalf("ParseTarget(%q): Display %q holds userinfo", s, tg.Display)
			}
			again, err := ParseTarget(tg.Display)
			if err != nil || again.Display != tg.Display || !slices.Equal(again.Servers, tg.Servers) ||
				again.Prefix != tg.Prefix || again.TLS != tg.TLS || again.User != "" || again.Password != "" {
				t.Fatalf("ParseTarget(%q).Display = %q parses to %+v, %v", s, tg.Display, again, err)
			}
		}

		// The same URL with two passwords: same outcome, same text.
		rest := s
		if _, r, ok := strings.Cut(s, "://"); ok {
			rest = r
		}
		t1, e1 := ParseTarget("nats://u:" + url.PathEscape(secret) + "@" + rest)
		t2, e2 := ParseTarget("nats://u:x@" + rest)
		switch {
		case (e1 == nil) != (e2 == nil):
			t.Fatalf("rest %q: error %v with the secret, %v without", rest, e1, e2)
		case e1 != nil && e1.Error() != e2.Error():
			t.Fatalf("rest %q: the error depends on the password:\n%v\n%v", rest, e1, e2)
		case e1 == nil && (t1.Display != t2.Display || !slices.Equal(t1.Servers, t2.Servers) || t1.Prefix != t2.Prefix):
			t.Fatalf("rest %q: the target depends on the password:\n%+v\n%+v", rest, t1, t2)
		case e1 == nil && !strings.Contains(strings.Split(rest, "/")[0], "@") && t1.Password != secret:
			t.Fatalf("rest %q: password %q, want %q", rest, t1.Password, secret)
		}
	})
}

// FuzzEscapeNode: EscapeNode gives one valid subject token per node, and
// two nodes never share one (it inverts).
//
//	go test ./pkg/fleet -run '^$' -fuzz FuzzEscapeNode -fuzztime 10s
func FuzzEscapeNode(f *testing.F) {
	for i, a := range trickyNodes {
		f.Add(a, trickyNodes[(i+1)%len(trickyNodes)])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ea, eb := EscapeNode(a), EscapeNode(b)
		if !validToken(ea) {
			t.Fatalf("EscapeNode(%q) = %q: not a valid subject token", a, ea)
		}
		if a != b && ea == eb {
			t.Fatalf("EscapeNode(%q) = EscapeNode(%q) = %q", a, b, ea)
		}
		if back, ok := unescapeNode(ea); !ok || back != a {
			t.Fatalf("unescape(EscapeNode(%q) = %q) = %q, %v", a, ea, back, ok)
		}
	})
}

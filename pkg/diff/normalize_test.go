package diff

import (
	"bytes"
	"regexp"
	"testing"
)

func TestNormalize(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"plain words", "plain words"},
		{"built 12 files", "built <N> files"},
		{"pi is 3.14, version 1.2.3", "pi is <N>, version <N>"},
		{"v1.2 sha256 x86_64 go1.26 TestA2", "v1.2 sha256 x86_64 go1.26 TestA2"},
		{"[3/10] step", "[<N>/<N>] step"},
		{"pid=4242 port:8080", "pid=<N> port:<N>"},
		{"took 1.23s", "took <DUR>"},
		{"took 45ms and 900µs and 1m30.5s", "took <DUR> and <DUR> and <DUR>"},
		{"took 12.5 s", "took <N> s"},
		{"5sheep 3rd", "<N>sheep <N>rd"},
		{"commit 3fa9c21e done", "commit <HEX> done"},
		{"id deadbeef facade", "id deadbeef facade"},
		{"abc12 is short, abc123 is not", "abc12 is short, <HEX> is not"},
		{"addr 0x7ffd1234 0xZ", "addr <HEX> <N>xZ"},
		{"uuid 123e4567-e89b-12d3-a456-426614174000.", "uuid <HEX>."},
		{"at 2026-01-02T10:00:00.123Z ok", "at <TIME> ok"},
		{"at 2026-01-02 10:00:00+01:00 ok", "at <TIME> ok"},
		{"on 2026-01-02.", "on <TIME>."},
		{"at 9:05:01.5 and 10:00", "at <TIME> and <N>:<N>"},
		{"cc /tmp/go-build123/b001/x.a", "cc /tmp/<TMP>/b<N>/x.a"},
		{"/tmp/tmp.XyZab/out.txt: ok", "/tmp/<TMP>/out.txt: ok"},
		{"in /home/ci/work/123/src/a2.go:12:3", "in /home/ci/work/<N>/src/a<N>.go:<N>:<N>"},
		{"/var/folders/zz/abc/T/x", "/var/folders/<TMP>/abc/T/x"},
		{"a/b/c and ./x/1 ../y", "a/b/c and ./x/<N> ../y"},
		{"bad \xff 12 bytes", "bad \xff <N> bytes"},
	} {
		if got := string(Normalize(nil, []byte(tc.in))); got != tc.want {
			t.Errorf("Normalize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestMatcherKey(t *testing.T) {
	m := &Matcher{}
	k1, _ := m.Key("proc.*.stdout", []byte("built 12 files in 3.2s"))
	k2, _ := m.Key("proc.*.stdout", []byte("built 14 files in 5.9s"))
	k3, _ := m.Key("proc.*.stderr", []byte("built 14 files in 5.9s"))
	if k1 != k2 || k2 == k3 {
		t.Errorf("keys %x %x %x: want the first two equal, the third (other channel) not", k1, k2, k3)
	}
	exact := &Matcher{Exact: true}
	if e1, _ := exact.Key("c", []byte("n 1")); e1 == func() uint64 { k, _ := exact.Key("c", []byte("n 2")); return k }() {
		t.Error("Exact: n 1 and n 2 match")
	}
	ig := &Matcher{Exact: true, Ignore: []*regexp.Regexp{regexp.MustCompile(`port \w+`), regexp.MustCompile(`^DEBUG.*`)}}
	i1, _ := ig.Key("c", []byte("listening on port abc"))
	i2, _ := ig.Key("c", []byte("listening on port xyz"))
	if i1 != i2 {
		t.Error("--ignore: masked text still differs")
	}
	if _, ignored := ig.Key("c", []byte("DEBUG anything")); !ignored {
		t.Error("--ignore ^DEBUG.*: a line masked whole is not left out")
	}
	if _, ignored := ig.Key("c", []byte("")); ignored {
		t.Error("an empty line is left out")
	}
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"took 1m30.5s at 2026-01-02T10:00:00Z", "/tmp/x/1", "0x", "123e4567-e89b-12d3-a456-426614174000", "9:05:01,5+0100"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out := Normalize(nil, b)
		// Only digits and temporary directories are masked: a line
		// without either comes out as it went in.
		if !bytes.ContainsAny(b, "0123456789/") && !bytes.Equal(out, b) {
			t.Fatalf("Normalize(%q) = %q: changed a line with no digit", b, out)
		}
		if len(b) > 0 && len(out) == 0 {
			t.Fatalf("Normalize(%q) is empty", b)
		}
	})
}

package report

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

func TestAppendHTML(t *testing.T) {
	for _, tc := range []struct {
		name   string
		in     string
		colour bool
		want   string
	}{
		{"plain", "make: ok", true, "make: ok"},
		{"markup is text", `<script>alert("x")</script> & 'y'`, true, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; &#39;y&#39;"},
		{"end of page", "</html></body><!--", true, "&lt;/html&gt;&lt;/body&gt;&lt;!--"},
		{"sgr red", "\x1b[31mred\x1b[0m done", true, `<span class="f1">red</span> done`},
		{"sgr bold bright", "\x1b[1;92mok\x1b[m", true, `<span class="f10 sb">ok</span>`},
		{"sgr 256 and rgb", "\x1b[38;5;208ma\x1b[48;2;1;2;3mb\x1b[0m", true, `<span class="" style="color:#ff8700;">a</span><span class="" style="color:#ff8700;background:#010203">b</span>`},
		{"sgr left open", "\x1b[4mund", true, `<span class="su">und</span>`},
		{"sgr off: escaped", "\x1b[31mred", false, `<span class="x">\x1b</span>[31mred`},
		{"other csi escaped", "\x1b[2Jclear", true, `<span class="x">\x1b</span>[2Jclear`},
		{"osc escaped", "\x1b]0;title\x07x", true, `<span class="x">\x1b</span>]0;title<span class="x">\x07</span>x`},
		{"not utf-8", "a\xffb", true, `a<span class="x">\xff</span>b`},
		{"bidi shown", "a\u202eb", true, `a<span class="x">\u{202e}</span>b`},
		{"tab kept", "a\tb", true, "a\tb"},
		{"utf-8 kept", "héllo → ✓", true, "héllo → ✓"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(appendHTML(nil, []byte(tc.in), tc.colour)); got != tc.want {
				t.Errorf("appendHTML(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// ourTags matches the only markup appendHTML writes.
var ourTags = regexp.MustCompile(`<span class="[a-z0-9 ]*"( style="[a-z:#0-9;]*")?>|</span>`)

// FuzzAppendHTML checks that nothing of a payload becomes markup: once
// our own spans are taken out, no '<', '>' or quote is left, and every
// '&' starts one of our entities.
func FuzzAppendHTML(f *testing.F) {
	for _, s := range []string{"<script>x</script>", "\x1b[31mred\x1b[0m", "\x1b[38;5;300;48;2;999;1;1m<", "a\xff\u202e&amp;", "\x1b[", "\x1b[;;m\"'"} {
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, in []byte, colour bool) {
		out := ourTags.ReplaceAllString(string(appendHTML(nil, in, colour)), "")
		if i := strings.IndexAny(out, `<>"'`); i >= 0 {
			t.Fatalf("appendHTML(%q) leaves %q of markup: %q", in, out[i], out)
		}
		rest := out
		for {
			i := strings.IndexByte(rest, '&')
			if i < 0 {
				break
			}
			rest = rest[i:]
			ok := false
			for _, e := range []string{"&amp;", "&lt;", "&gt;", "&#34;", "&#39;"} {
				ok = ok || strings.HasPrefix(rest, e)
			}
			if !ok {
				t.Fatalf("appendHTML(%q): a bare & in %q", in, out)
			}
			rest = rest[1:]
		}
	})
}

func TestIsErrorLine(t *testing.T) {
	for in, want := range map[string]bool{
		"FAIL: TestX (0.01s)":          true,
		"error: cannot find -lfoo":     true,
		"panic: runtime error":         true,
		"Traceback (most recent call)": true,
		"foo.c:3: Error: bad":          true,
		"\x1b[1;31mFAIL\x1b[0m: TestX": true, // coloured
		"\x1b[1mterror":                false,
		"ok  	pkg	0.1s":                false,
		"terrors of the deep":          false, // not at a word's start
		"writing to stderr":            false,
		"":                             false,
	} {
		if got := isErrorLine([]byte(in)); got != want {
			t.Errorf("isErrorLine(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestLastSegment(t *testing.T) {
	for in, want := range map[string]string{"a": "a", "10%\r50%\r100%": "100%", "done\r\r": "done", "\r": ""} {
		if got := string(lastSegment([]byte(in))); got != want {
			t.Errorf("lastSegment(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestPage checks the page of a small failed run: its summary, charts,
// log rows, links and escaping.
func TestPage(t *testing.T) {
	path := writeRun(t, t.TempDir(), run{
		lines:   []string{"building", "\x1b[32mok\x1b[0m  pkg/a", "<script>window.pwned=1</script>", "FAIL: TestB"},
		stderr:  []string{"make: *** [test] Error 2"},
		samples: 5, exit: 2, gapAt: 7,
	})
	page, res, stderr := buildPage(t, Options{}, path)
	if stderr != "" {
		t.Errorf("stderr: %q", stderr)
	}
	for _, want := range []string{
		"<title>ds report: make -j2 test</title>",
		`<td class="bad"><a href="#ci-7%2342/`, "exited with code 2</a>",
		"user 1.500 s, sys 0.250 s, max RSS 50 MiB",
		"1 gap (1 frame missing)",
		`<svg id="chart-cpu"`, `data-samples="5"`, `<svg id="chart-mem"`,
		`<span class="f2">ok</span>  pkg/a`,
		"&lt;script&gt;window.pwned=1&lt;/script&gt;",
		`class="l ls"`, "<i>gap</i><span>position 7 missing (1 frame)</span>",
		`class="l er c1"`, `class="l se er c2"`,
		`id="ci-7#42/`,
		"Content-Security-Policy",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script>window") {
		t.Error("a payload's <script> is in the page as markup")
	}
	if n := strings.Count(page, "<script"); n != 2 {
		t.Errorf("%d script elements, want 2 (the page's data and its script)", n)
	}
	if res.Samples != 10 || res.Streams != 1 || res.Elided != 0 || res.Lines != 8 {
		t.Errorf("result %+v: want 10 samples, 1 stream, 8 lines (2 lifecycle, 5 output, 1 gap), none elided", res)
	}
	points := regexp.MustCompile(`<svg id="chart-cpu"[^>]*>.*?<polyline[^>]* points="([^"]*)"`).FindStringSubmatch(page)
	if points == nil || len(strings.Fields(points[1])) != 5 {
		t.Errorf("cpu chart points %q, want 5", points)
	}
}

// TestBudget checks that a log too long for the page's budget keeps its
// start, its end and its errors, and names what it leaves off with the
// ds log command that prints it.
func TestBudget(t *testing.T) {
	var lines []string
	for i := range 20000 {
		l := fmt.Sprintf("line %05d of a long build, some words to make it longer", i)
		if i == 10000 {
			l = "FAIL: in the middle"
		}
		lines = append(lines, l)
	}
	path := writeRun(t, t.TempDir(), run{lines: lines, samples: 3})
	const budget = 512 << 10
	page, res, _ := buildPage(t, Options{MaxBytes: budget, Inputs: []string{"run.dss"}}, path)
	if len(page) > budget {
		t.Errorf("page is %d bytes, over its budget of %d", len(page), budget)
	}
	if res.Elided == 0 || res.Lines+res.Elided != 20002 || len(res.Elisions) != 2 {
		t.Fatalf("result %+v: want lines elided in two ranges (around the FAIL line), 20002 in all", res)
	}
	for _, want := range []string{"line 00000 ", "line 19999 ", "FAIL: in the middle", `<div class="l el" id="elided-1">`, "ds report --max-size"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	var elided uint64
	for _, e := range res.Elisions {
		elided += e.Lines
		if len(e.Ranges) != 1 {
			t.Fatalf("elision %+v: want one stream range", e)
		}
		r := e.Ranges[0]
		want := fmt.Sprintf("ds log --stream 'ci-7#42' --positions %d-%d run.dss", r.From, r.To)
		if e.Command != want || !strings.Contains(page, string(appendHTML(nil, []byte(want), false))) {
			t.Errorf("elision command %q, want %q, on the page", e.Command, want)
		}
		// The rows around the range are on the page, those inside are not.
		if strings.Contains(page, fmt.Sprintf(`id="ci-7#42/%d"`, r.From)) || strings.Contains(page, fmt.Sprintf(`id="ci-7#42/%d"`, r.To)) {
			t.Errorf("range %d-%d is said elided, and its end rows are on the page", r.From, r.To)
		}
	}
	if elided != res.Elided {
		t.Errorf("elisions count %d lines, result %d", elided, res.Elided)
	}
}

// TestHTMLSafe8 checks the eight-at-a-time test against the table, for
// every byte value in every lane.
func TestHTMLSafe8(t *testing.T) {
	for c := range 256 {
		for lane := range 8 {
			b := []byte("abcdefgh")
			b[lane] = byte(c)
			x := uint64(0)
			for i := 7; i >= 0; i-- {
				x = x<<8 | uint64(b[i])
			}
			if got := htmlSafe8(x); got != htmlSafe[c] {
				t.Fatalf("htmlSafe8 with %#x in lane %d = %v, want %v", c, lane, got, htmlSafe[c])
			}
		}
	}
}

// TestIsErrorLineEightAtATime checks the eight-at-a-time path against a
// byte-at-a-time reading: every error word at every offset, after every
// byte, in lines of every length around the chunk size.
func TestIsErrorLineEightAtATime(t *testing.T) {
	for _, w := range []string{"error", "FAIL", "Fatal", "panic", "exception", "TRACEBACK"} {
		for pad := range 20 {
			for _, before := range []byte{' ', 'x', '.', '1', 0xc3, 'T', 'e'} {
				line := []byte(strings.Repeat("ab ", pad/3) + strings.Repeat("q", pad%3))
				line = append(line, before)
				line = append(line, w...)
				line = append(line, " tail"...)
				want := wordClass[before] == 0
				if got := isErrorLine(line); got != want {
					t.Errorf("isErrorLine(%q) = %v, want %v", line, got, want)
				}
			}
		}
	}
}

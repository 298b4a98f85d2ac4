package report

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestAppendHTML(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want string
	}{
		{"plain", "make: ok", "make: ok"},
		{"markup is text", `<script>alert("x")</script> & 'y'`, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; &#39;y&#39;"},
		{"end of page", "</html></body><!--", "&lt;/html&gt;&lt;/body&gt;&lt;!--"},
		{"sgr escaped", "\x1b[31mred", `<span class="x">\x1b</span>[31mred`},
		{"osc escaped", "\x1b]0;title\x07x", `<span class="x">\x1b</span>]0;title<span class="x">\x07</span>x`},
		{"not utf-8", "a\xffb", `a<span class="x">\xff</span>b`},
		{"bidi shown", "a\u202eb", `a<span class="x">\u{202e}</span>b`},
		{"tab kept", "a\tb", "a\tb"},
		{"utf-8 kept", "héllo → ✓", "héllo → ✓"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(appendHTML(nil, []byte(tc.in))); got != tc.want {
				t.Errorf("appendHTML(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// ourTags matches the only markup appendHTML writes.
var ourTags = regexp.MustCompile(`<span class="x">|</span>`)

// FuzzAppendHTML checks that nothing of a payload becomes markup: once
// our own spans are taken out, no '<', '>' or quote is left, and every
// '&' starts one of our entities.
func FuzzAppendHTML(f *testing.F) {
	for _, s := range []string{"<script>x</script>", "\x1b[31mred\x1b[0m", "a\xff\u202e&amp;", "\x1b[;;m\"'"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out := ourTags.ReplaceAllString(string(appendHTML(nil, in)), "")
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

func TestAppendText(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pre    string
		in     string
		colour bool
		more   int
		want   string
	}{
		{"plain", "", "make: ok", true, 0, `"make: ok"`},
		{"short", "", "7", true, 0, `"7"`},
		{"empty", "", "", true, 0, `""`},
		{"markup", "", `<script>alert("x")</script> & \`, true, 0, `"\u003cscript>alert(\"x\")\u003c/script> & \\"`},
		{"end of script", "", "</script><!--", true, 0, `"\u003c/script>\u003c!--"`},
		{"tab and utf-8", "", "a\tb héllo → ✓", true, 0, `"a\tb héllo → ✓"`},
		{"sgr red", "", "\x1b[31mred\x1b[0m done", true, 0, `[["f1","red"]," done"]`},
		{"sgr bold bright", "", "\x1b[1;92mok\x1b[m", true, 0, `[["f10 sb","ok"]]`},
		{"sgr 256 and rgb", "", "\x1b[38;5;208ma\x1b[48;2;1;2;3mb\x1b[0m", true, 0, `[["","a","#ff8700",""],["","b","#ff8700","#010203"]]`},
		{"sgr left open", "", "\x1b[4mund", true, 0, `[["su","und"]]`},
		{"sgr that changes nothing", "", "a\x1b[0mb", true, 0, `["ab"]`},
		{"sgr off: escaped", "", "\x1b[31mred", false, 0, `[["x","\\x1b"],"[31mred"]`},
		{"other csi escaped", "", "\x1b[2Jclear", true, 0, `[["x","\\x1b"],"[2Jclear"]`},
		{"escape in colour", "", "\x1b[31ma\x07b<", true, 0, `[["f1","a"],["x","\\x07"],["f1","b\u003c"]]`},
		{"not utf-8", "", "a\xffb", true, 0, `["a",["x","\\xff"],"b"]`},
		{"bidi shown", "", "a\u202eb", true, 0, `["a",["x","\\u{202e}"],"b"]`},
		{"late", "[late]", "x", true, 0, `[["x","[late]"]," x"]`},
		{"more", "", "abc", true, 20, `["abc",["x"," … 20 more bytes (ds log shows them)"]]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(appendText([]byte("["), tc.pre, []byte(tc.in), tc.colour, tc.more))
			if got != "["+tc.want {
				t.Errorf("appendText(%q) = %s, want %s", tc.in, got[1:], tc.want)
			}
		})
	}
}

// FuzzAppendText checks that a row's text is valid JSON holding no '<'
// (nothing can end the script element), made only of strings and
// segments of our classes, and that it reads as the payload's text.
func FuzzAppendText(f *testing.F) {
	for _, s := range []string{"<script>x</script>", "\x1b[31mred\x1b[0m", "\x1b[38;5;300;48;2;999;1;1m<", "a\xff\u202e&amp;", "\x1b[", "\x1b[;;m\"'", "12345678", "</script"} {
		f.Add([]byte(s), true)
	}
	classes := regexp.MustCompile(`^(x|((f|b)[0-9]+|s[bdiru])( ((f|b)[0-9]+|s[bdiru]))*)?$`)
	colour := regexp.MustCompile(`^(#[0-9a-f]{6})?$`)
	f.Fuzz(func(t *testing.T, in []byte, c bool) {
		out := appendText(nil, "", in, c, 0)
		if i := strings.IndexByte(string(out), '<'); i >= 0 {
			t.Fatalf("appendText(%q) = %s: a '<' at %d", in, out, i)
		}
		var v any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("appendText(%q) = %s: %v", in, out, err)
		}
		text, ok := v.(string)
		if segs, isArray := v.([]any); isArray {
			ok, text = true, ""
			for _, g := range segs {
				switch g := g.(type) {
				case string:
					text += g
				case []any:
					if len(g) != 2 && len(g) != 4 {
						t.Fatalf("appendText(%q) = %s: segment %v", in, out, g)
					}
					for i, x := range g {
						s, _ := x.(string)
						if i == 0 && !classes.MatchString(s) || i >= 2 && !colour.MatchString(s) {
							t.Fatalf("appendText(%q) = %s: segment %v", in, out, g)
						}
					}
					text += g[1].(string)
				default:
					ok = false
				}
			}
		}
		if !ok {
			t.Fatalf("appendText(%q) = %s: neither a string nor segments", in, out)
		}
		if !c && utf8.Valid(in) && !strings.ContainsFunc(string(in), func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f || hiddenRune(r) }) && text != string(in) {
			t.Fatalf("appendText(%q) reads %q", in, text)
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

// pageRow is one row of a page's data, as its script reads it.
type pageRow struct {
	Class, What string // from the kinds table
	Stream      string // "" for none
	Pos         int64  // -1 for none; an elided range's number
	T           *int64 // ms since the page's origin
	Text        string // the text shown, segments joined
	Raw         string // the text as written: a JSON string or segments
}

// pageRows reads the rows of page's data (the ds-data element).
func pageRows(t testing.TB, page string) []pageRow {
	t.Helper()
	const open = `<script id="ds-data" type="application/json">`
	i := strings.Index(page, open)
	if i < 0 {
		t.Fatal("the page has no ds-data element")
	}
	rest := page[i+len(open):]
	j := strings.Index(rest, "</script>")
	if j < 0 {
		t.Fatal("ds-data does not end")
	}
	var data []json.RawMessage
	if err := json.Unmarshal([]byte(rest[:j]), &data); err != nil {
		t.Fatalf("ds-data: %v", err)
	}
	var meta struct {
		Streams []string
		Kinds   [][2]string
	}
	if len(data) == 0 || json.Unmarshal(data[0], &meta) != nil {
		t.Fatalf("ds-data has no meta: %.200s", rest)
	}
	var rows []pageRow
	for _, d := range data[1:] {
		var r []json.RawMessage
		var kind, stream int
		var pr pageRow
		if json.Unmarshal(d, &r) != nil || len(r) != 5 || json.Unmarshal(r[0], &kind) != nil || json.Unmarshal(r[1], &stream) != nil ||
			json.Unmarshal(r[2], &pr.Pos) != nil || json.Unmarshal(r[3], &pr.T) != nil || kind >= len(meta.Kinds) || stream >= len(meta.Streams) {
			t.Fatalf("row %s", d)
		}
		pr.Class, pr.What = meta.Kinds[kind][0], meta.Kinds[kind][1]
		if stream >= 0 {
			pr.Stream = meta.Streams[stream]
		}
		pr.Raw = string(r[4])
		var x any
		if err := json.Unmarshal(r[4], &x); err != nil {
			t.Fatalf("row %s: %v", d, err)
		}
		switch x := x.(type) {
		case string:
			pr.Text = x
		case []any:
			for _, g := range x {
				switch g := g.(type) {
				case string:
					pr.Text += g
				case []any:
					pr.Text += g[1].(string)
				}
			}
		}
		rows = append(rows, pr)
	}
	return rows
}

// findRow returns the first row of rows whose text is text, nil if none.
func findRow(rows []pageRow, text string) *pageRow {
	for i := range rows {
		if rows[i].Text == text {
			return &rows[i]
		}
	}
	return nil
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
		`<span class="peak">peak 50 %</span>`, `<span class="scale">0 – 100 %</span>`, // the y axis and each line's peak
		`\u003cscript>window.pwned=1\u003c/script>`,
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
	rows := pageRows(t, page)
	if len(rows) != int(res.Lines) {
		t.Fatalf("%d rows in the data, %d lines built", len(rows), res.Lines)
	}
	for _, w := range []struct {
		text, class, what, raw string
	}{
		{"started make (pid 4242): make -j2 test", "l lc c3", "", ""},
		{"building", "l c1", "", `"building"`},
		{"ok  pkg/a", "l c1", "", `[["f2","ok"],"  pkg/a"]`},
		{"<script>window.pwned=1</script>", "l c1", "", `"\u003cscript>window.pwned=1\u003c/script>"`},
		{"FAIL: TestB", "l er c1", "", ""},
		{"position 7 missing (1 frame)", "l ls", "gap", ""},
		{"make: *** [test] Error 2", "l se er c2", "", ""},
		{"make exited with code 2 after 0.080 s (user 1.500 s, sys 0.250 s, max RSS 50 MiB)", "l er lc ex c3", "", ""},
	} {
		r := findRow(rows, w.text)
		switch {
		case r == nil:
			t.Errorf("no row reads %q: %+v", w.text, rows)
		case r.Class != w.class || r.What != w.what || w.raw != "" && r.Raw != w.raw || r.Stream != "ci-7#42" || r.T == nil:
			t.Errorf("row %q: %+v, want class %q, kind %q, text %s, stream ci-7#42, a time", w.text, *r, w.class, w.what, w.raw)
		}
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
	const budget = 256 << 10
	page, res, _ := buildPage(t, Options{MaxBytes: budget, Inputs: []string{"run.dss"}}, path)
	if len(page) > budget {
		t.Errorf("page is %d bytes, over its budget of %d", len(page), budget)
	}
	if res.Elided == 0 || res.Lines+res.Elided != 20002 || len(res.Elisions) != 2 {
		t.Fatalf("result %+v: want lines elided in two ranges (around the FAIL line), 20002 in all", res)
	}
	rows := pageRows(t, page)
	if len(rows) != int(res.Lines)+len(res.Elisions) {
		t.Errorf("%d rows, want %d lines and %d elided ranges", len(rows), res.Lines, len(res.Elisions))
	}
	for _, want := range []string{"line 00000 of a long build, some words to make it longer", "line 19999 of a long build, some words to make it longer", "FAIL: in the middle"} {
		if findRow(rows, want) == nil {
			t.Errorf("no row reads %q", want)
		}
	}
	if !strings.Contains(page, "ds report --max-size") {
		t.Errorf("the summary does not name --max-size")
	}
	var elided uint64
	for n, e := range res.Elisions {
		elided += e.Lines
		if len(e.Ranges) != 1 {
			t.Fatalf("elision %+v: want one stream range", e)
		}
		r := e.Ranges[0]
		want := fmt.Sprintf("ds log --stream 'ci-7#42' --positions %d-%d run.dss", r.From, r.To)
		if e.Command != want || !strings.Contains(page, string(appendHTML(nil, []byte(want)))) {
			t.Errorf("elision command %q, want %q, in the summary", e.Command, want)
		}
		// Its row says it, with the command; the rows around the range
		// are on the page, those inside are not.
		var el *pageRow
		for i := range rows {
			if rows[i].Class == "l el" && rows[i].Pos == int64(n+1) {
				el = &rows[i]
			}
			if rows[i].Stream == "ci-7#42" && (rows[i].Pos == int64(r.From) || rows[i].Pos == int64(r.To)) {
				t.Errorf("range %d-%d is said elided, and its end row %+v is on the page", r.From, r.To, rows[i])
			}
		}
		if el == nil || el.What != "elided" || !strings.HasSuffix(el.Text, ": "+want) || !strings.Contains(el.Raw, `["cd",`) {
			t.Errorf("elided range %d: row %+v, want one that names %q", n+1, el, want)
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

// TestChartPoints checks that a series of more samples than the chart
// has room for is drawn with the smallest and largest of each pixel
// column, in time order, and a short one with every sample.
func TestChartPoints(t *testing.T) {
	short := &series{t: []int64{1, 2, 3}, v: []float64{5, 1, 9}}
	if got := short.points(0, 10); len(got) != 3 || got[0] != 0 || got[2] != 2 {
		t.Errorf("points of 3 samples = %v, want all", got)
	}
	const n = 100_000
	s := &series{t: make([]int64, n), v: make([]float64, n)}
	for i := range n {
		s.t[i], s.v[i] = int64(i), float64(i%97)
	}
	s.v[54_321] = 1000 // a peak
	got := s.points(0, n)
	if len(got) > maxPoints || len(got) < int(chartW) {
		t.Fatalf("%d points of %d samples, want from %d to %d", len(got), n, int(chartW), maxPoints)
	}
	peak := false
	for i, j := range got {
		if i > 0 && j <= got[i-1] {
			t.Fatalf("points %v out of time order at %d", got[i-1:i+1], i)
		}
		peak = peak || j == 54_321
	}
	if !peak {
		t.Error("the peak is not drawn")
	}
}

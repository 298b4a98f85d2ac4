package report

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// findChromium returns the path of a Chromium or Chrome to drive, "" when
// there is none ($DS_CHROMIUM names one).
func findChromium() string {
	if p := os.Getenv("DS_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless_shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// pageTimeout bounds what one page may take in the browser: generous, for
// a busy machine; nothing here waits for a fixed time.
const pageTimeout = 60 * time.Second

// browser starts one headless Chromium for a test's subtests and returns
// its context; it skips the test, loudly, where there is no Chromium.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := findChromium()
	if path == "" {
		t.Skip("\n*** SKIPPED: no Chromium found (chromium, chromium-browser, google-chrome or $DS_CHROMIUM): ***\n" +
			"*** the HTML report is not tested in a browser; apt-get install chromium (.ci/run does) ***")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // root in a container has no user namespace sandbox
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1400, 1000),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelB(); cancelA() })
	// Start it now, once, on bctx itself: the browser lives as long as
	// the context of its first run.
	if err := chromedp.Do(bctx); err != nil {
		cancelB()
		t.Fatalf("start %s: %v", path, err)
	}
	return bctx
}

// tab is one page open in the browser, with what it logged and loaded.
type tab struct {
	ctx      context.Context
	mu       sync.Mutex
	problems []string // console errors, exceptions, error log entries
	requests []string // URLs requested
}

// open opens page (a file) in a new tab of browser b, waits for it to
// load, and returns the tab.
func open(t *testing.T, b context.Context, page, fragment string) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b)
	t.Cleanup(cancel)
	ctx, cancelT := context.WithTimeout(ctx, pageTimeout)
	t.Cleanup(cancelT)
	tb := &tab{ctx: ctx}
	err := chromedp.Listen(ctx, func(ev any) {
		tb.mu.Lock()
		defer tb.mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				tb.problems = append(tb.problems, "console."+string(ev.Type)+": "+strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			tb.problems = append(tb.problems, "exception: "+ev.ExceptionDetails.Text)
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError || ev.Entry.Level == log.EntryLevelWarning {
				tb.problems = append(tb.problems, "log: "+ev.Entry.Text)
			}
		case *network.EventRequestWillBeSent:
			tb.requests = append(tb.requests, ev.Request.URL)
		}
	})
	if err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	for _, enable := range []cdp.Command[cdp.Empty, cdp.Empty]{log.Enable, runtime.Enable} {
		if _, err := chromedp.Call(ctx, enable, cdp.Empty{}); err != nil {
			t.Fatal(err)
		}
	}
	u := (&url.URL{Scheme: "file", Path: page}).String()
	if fragment != "" {
		u += "#" + fragment
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(u)); err != nil {
		t.Fatalf("open %s: %v", u, err)
	}
	// The page's script says when it has drawn the log.
	poll[bool](t, tb, `document.documentElement.dataset.ready === "1"`)
	return tb
}

// eval evaluates a JavaScript expression in tab tb.
func eval[T any](t *testing.T, tb *tab, expr string) T {
	t.Helper()
	v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// poll waits until a JavaScript expression is truthy in tab tb, and
// returns its value.
func poll[T any](t *testing.T, tb *tab, expr string) T {
	t.Helper()
	v, err := chromedp.Run(tb.ctx, chromedp.Poll[T](expr))
	if err != nil {
		t.Fatalf("wait for %s: %v", expr, err)
	}
	return v
}

// clearSearch empties the search box, as a user's select-all and delete
// would, and waits for the page to take it.
func clearSearch(t *testing.T, tb *tab) {
	t.Helper()
	eval[bool](t, tb, `(q => { q.value = ""; q.dispatchEvent(new Event("input")); return true })(document.getElementById("q"))`)
	poll[bool](t, tb, `document.getElementById("count").dataset.n === ""`)
}

// do runs actions in tab tb.
func do(t *testing.T, tb *tab, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(tb.ctx, actions...); err != nil {
		t.Fatal(err)
	}
}

// clean checks that the tab logged no problem and requested nothing but
// the page.
func (tb *tab) clean(t *testing.T, page string) {
	t.Helper()
	tb.mu.Lock()
	defer tb.mu.Unlock()
	for _, p := range tb.problems {
		t.Errorf("the page logged %s", p)
	}
	for _, r := range tb.requests {
		if u, err := url.Parse(r); err != nil || u.Scheme != "file" || u.Path != page {
			t.Errorf("the page requested %s", r)
		}
	}
}

// TestBrowser opens the report of a failed run in headless Chromium: it
// loads with no console error and no request, search finds lines, the
// charts draw every sample, payloads that look like markup run nothing,
// deep links and the error button go to their line.
func TestBrowser(t *testing.T) {
	b := browser(t)
	dir := t.TempDir()
	capture := writeRun(t, dir, run{
		lines: []string{
			"compiling pkg/a",
			"\x1b[1;31mFAIL\x1b[0m: TestParse (0.01s)",
			"<script>window.pwned=1</script>",
			`</html></body><img src=x onerror="window.pwned=2"><script>window.pwned=3</script>`,
			"ok  pkg/b",
		},
		stderr:  []string{"make: *** [test] Error 1"},
		samples: 7, exit: 1, gapAt: 9,
	})
	html, res, _ := buildPage(t, Options{}, capture)
	page := filepath.Join(dir, "run.html")
	if err := os.WriteFile(page, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	if res.Elided != 0 {
		t.Fatalf("elided %d lines of a small run", res.Elided)
	}

	t.Run("loads clean", func(t *testing.T) {
		tb := open(t, b, page, "")
		if rows := eval[[]int](t, tb, `[+document.getElementById("rows").dataset.rows, document.querySelectorAll("#rows .l").length]`); rows[0] != int(res.Lines) || rows[1] != int(res.Lines) {
			t.Errorf("%d rows in the browser's data, %d drawn; %d lines built", rows[0], rows[1], res.Lines)
		}
		if title := eval[string](t, tb, `document.title`); title != "ds report: make -j2 test" {
			t.Errorf("title %q", title)
		}
		tb.clean(t, page)
	})

	t.Run("markup in payloads runs nothing", func(t *testing.T) {
		tb := open(t, b, page, "")
		if pwned := eval[string](t, tb, `String(window.pwned)`); pwned != "undefined" {
			t.Errorf("window.pwned = %s: a payload ran", pwned)
		}
		imgs := eval[int](t, tb, `document.querySelectorAll("#rows img, #rows script").length`)
		scripts := eval[int](t, tb, `document.scripts.length`)
		if imgs != 0 || scripts != 2 {
			t.Errorf("%d img/script elements in the log, %d scripts in the page (want 0, 2: the data and the script)", imgs, scripts)
		}
		texts := eval[[]string](t, tb, `Array.from(document.querySelectorAll("#rows .l > span")).map(s => s.textContent)`)
		for _, w := range []string{"<script>window.pwned=1</script>", `</html></body><img src=x onerror="window.pwned=2"><script>window.pwned=3</script>`} {
			if !slices.Contains(texts, w) {
				t.Errorf("no log line reads %q: %q", w, texts)
			}
		}
		colour := eval[string](t, tb, `getComputedStyle(document.querySelector("#rows .f1")).fontWeight + " " + document.querySelector("#rows .f1").textContent`)
		if colour != "700 FAIL" {
			t.Errorf("the SGR bold red FAIL renders as %q, want 700 FAIL", colour)
		}
		tb.clean(t, page)
	})

	t.Run("search", func(t *testing.T) {
		tb := open(t, b, page, "")
		// Smart case: lower case matches any case.
		do(t, tb, chromedp.SendKeys(chromedp.CSS("#q"), "error 1"))
		n := poll[string](t, tb, `(c => c.dataset.q === "error 1" && c.dataset.n)(document.getElementById("count"))`)
		hit := eval[string](t, tb, `document.querySelector("#rows .l.m > span").textContent`)
		if n != "1" || hit != "make: *** [test] Error 1" {
			t.Errorf("search error: %s matches, first %q", n, hit)
		}
		// Upper case is case-sensitive; Enter goes to the match.
		clearSearch(t, tb)
		do(t, tb, chromedp.SendKeys(chromedp.CSS("#q"), "Error\r"))
		poll[bool](t, tb, `document.getElementById("count").textContent == "1 of 1"`)
		if cur := eval[string](t, tb, `document.querySelector("#rows .l.cur > span").textContent`); cur != "make: *** [test] Error 1" {
			t.Errorf("Enter went to %q", cur)
		}
		clearSearch(t, tb)
		do(t, tb, chromedp.SendKeys(chromedp.CSS("#q"), "PKG"))
		poll[bool](t, tb, `(c => c.dataset.q === "PKG" && c.dataset.n == "0")(document.getElementById("count"))`)
		clearSearch(t, tb)
		do(t, tb, chromedp.SendKeys(chromedp.CSS("#q"), "pkg/"), chromedp.Click(chromedp.CSS("#only")))
		poll[bool](t, tb, `(c => c.dataset.q === "pkg/" && c.dataset.n == "2")(document.getElementById("count"))`)
		if shown := eval[int](t, tb, `Array.from(document.querySelectorAll("#rows .l")).filter(r => r.offsetParent !== null).length`); shown != 2 {
			t.Errorf("only matches shows %d rows, want 2", shown)
		}
		tb.clean(t, page)
	})

	t.Run("charts", func(t *testing.T) {
		tb := open(t, b, page, "")
		for _, c := range []string{"cpu", "mem"} {
			got := eval[[]int](t, tb, fmt.Sprintf(`(s => [+s.dataset.samples, s.querySelector("polyline").points.numberOfItems])(document.getElementById("chart-%s"))`, c))
			if len(got) != 2 || got[0] != 7 || got[1] != 7 {
				t.Errorf("chart %s: samples, points drawn = %v, want 7, 7", c, got)
			}
		}
		if n := eval[int](t, tb, `document.querySelectorAll("#chart-gpu, #chart-net").length`); n != 0 {
			t.Errorf("charts without samples are drawn")
		}
		// Hovering the chart shows the values and the line at that time.
		box := eval[[]float64](t, tb, `(r => [r.left, r.top, r.width, r.height])(document.getElementById("chart-cpu").getBoundingClientRect())`)
		do(t, tb, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, box[0]+box[2]*0.5, box[1]+box[3]/2))
		tip := poll[string](t, tb, `!document.getElementById("tip").hidden && document.getElementById("tip").textContent`)
		if !strings.Contains(tip, "busy: ") || !strings.Contains(tip, "  ") {
			t.Errorf("tooltip %q: want the value and a line", tip)
		}
		tb.clean(t, page)
	})

	t.Run("links and jumps", func(t *testing.T) {
		tb := open(t, b, page, "")
		id := eval[string](t, tb, `Array.from(document.querySelectorAll("#rows .l")).find(r => r.textContent.includes("ok  pkg/b")).dataset.id`)
		if !strings.HasPrefix(id, "ci-7#42/") {
			t.Fatalf("the row of ok  pkg/b has the id %q", id)
		}
		tb2 := open(t, b, page, fragment(id))
		cur := poll[string](t, tb2, `document.querySelector("#rows .l.cur") && document.querySelector("#rows .l.cur").dataset.id`)
		if cur != id || !strings.HasPrefix(id, "ci-7#42/") {
			t.Errorf("#%s went to %q", id, cur)
		}
		for _, j := range []struct{ button, want string }{
			{"#first-error", "FAIL: TestParse (0.01s)"},
			{"#exit", "make exited with code 1"},
			{"#first-loss", "position 9 missing (1 frame)"},
		} {
			do(t, tb, chromedp.Click(chromedp.CSS(j.button)))
			got := poll[string](t, tb, fmt.Sprintf(`(r => r && r.textContent.startsWith(%q) && r.textContent)(document.querySelector("#rows .l.cur > span"))`, j.want))
			if !strings.HasPrefix(got, j.want) {
				t.Errorf("%s went to %q", j.button, got)
			}
		}
		if hash := eval[string](t, tb, `decodeURIComponent(location.hash)`); !strings.HasPrefix(hash, "#ci-7#42/") {
			t.Errorf("a jump leaves the address %q, want #ci-7#42/POSITION", hash)
		}
		tb.clean(t, page)
		tb2.clean(t, page)
	})
}

// TestBrowserVirtualRows opens a report of 550 000 lines, more than the
// page's rows can be tall (it then scrolls in proportion): few rows are
// elements, and a search far down, a deep link to a far position, the
// error button and the end of the log each show their line in view.
func TestBrowserVirtualRows(t *testing.T) {
	if testing.Short() {
		t.Skip("a large page")
	}
	b := browser(t)
	dir := t.TempDir()
	const n = 550_000
	lines := make([]string, n)
	for i := range lines {
		lines[i] = "line " + strconv.Itoa(i)
	}
	lines[400_000] = "a needle far down"
	lines[500_000] = "FAIL: deep down"
	capture := writeRun(t, dir, run{lines: lines, samples: 3})
	html, res, _ := buildPage(t, Options{MaxBytes: 64 << 20}, capture)
	if res.Elided != 0 {
		t.Fatalf("elided %d lines", res.Elided)
	}
	page := filepath.Join(dir, "run.html")
	if err := os.WriteFile(page, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	var far pageRow
	for _, r := range pageRows(t, html) {
		if r.Text == "line 450000" {
			far = r
		}
	}
	if far.Stream == "" {
		t.Fatal("no row of line 450000")
	}
	// inView says which row is current, and whether it is drawn inside
	// the log's view.
	const inView = `(() => {
		const c = document.querySelector("#rows .l.cur"), v = document.getElementById("view").getBoundingClientRect();
		if (!c) return "";
		const r = c.getBoundingClientRect();
		return c.lastChild.textContent + (r.top >= v.top && r.bottom <= v.bottom && r.top >= 0 && r.bottom <= window.innerHeight ? "" : " (out of view)");
	})()`

	tb := open(t, b, page, "")
	got := eval[[]int](t, tb, `[+document.getElementById("rows").dataset.rows, document.querySelectorAll("#rows .l").length]`)
	if got[0] != int(res.Lines) || got[1] == 0 || got[1] > 200 {
		t.Errorf("%d rows in the data (%d built), %d drawn: want them all, a view's worth drawn", got[0], res.Lines, got[1])
	}
	do(t, tb, chromedp.SendKeys(chromedp.CSS("#q"), "needle\r"))
	if cur := poll[string](t, tb, inView); cur != "a needle far down" {
		t.Errorf("search needle shows %q", cur)
	}
	do(t, tb, chromedp.Click(chromedp.CSS("#first-error")))
	if cur := poll[string](t, tb, `(s => s.startsWith("FAIL") && s)(`+inView+`)`); cur != "FAIL: deep down" {
		t.Errorf("first error shows %q", cur)
	}
	// The end of the log: its last row is drawn, in view.
	last := poll[string](t, tb, `(v => { v.scrollTop = v.scrollHeight; return true })(document.getElementById("view"))
		&& new Promise(ok => requestAnimationFrame(() => requestAnimationFrame(() => {
			const rows = document.querySelectorAll("#rows .l"), l = rows[rows.length - 1], v = document.getElementById("view").getBoundingClientRect(), r = l.getBoundingClientRect();
			ok(l.lastChild.textContent + (r.bottom <= v.bottom + 1 && r.top >= v.top ? "" : " (out of view)"));
		})))`)
	if !strings.HasPrefix(last, "make exited with code 0") || strings.HasSuffix(last, "(out of view)") {
		t.Errorf("scrolled to the end, the last row drawn is %q", last)
	}
	tb.clean(t, page)

	id := far.Stream + "/" + strconv.FormatInt(far.Pos, 10)
	tb2 := open(t, b, page, fragment(id))
	if cur := poll[string](t, tb2, inView); cur != "line 450000" {
		t.Errorf("#%s shows %q", id, cur)
	}
	tb2.clean(t, page)
}

// TestBrowserLoadTime measures how long the page $DS_REPORT_PAGE (a
// report built beforehand, e.g. of a large capture) takes to open in
// Chromium: from navigating to the log drawn (the load event and the
// script's first render), then a search for $DS_REPORT_SEARCH ("error"
// by default) to its count and its first match shown. It is a
// measurement, not a check (scripts/bench_report.sh runs it), and skips
// without the page.
func TestBrowserLoadTime(t *testing.T) {
	page := os.Getenv("DS_REPORT_PAGE")
	if page == "" {
		t.Skip("set DS_REPORT_PAGE to a report to measure its load time")
	}
	query := os.Getenv("DS_REPORT_SEARCH")
	if query == "" {
		query = "error"
	}
	page, _ = filepath.Abs(page)
	b := browser(t)
	for run := range 3 {
		start := time.Now()
		tb := open(t, b, page, "")
		loaded := time.Since(start)
		rows := eval[int](t, tb, `+document.getElementById("rows").dataset.rows`)
		drawn := eval[int](t, tb, `document.querySelectorAll("#rows .l").length`)
		// The search is run at once (Enter), not after the typing's
		// debounce.
		eval[bool](t, tb, fmt.Sprintf(`(q => { q.value = %q; return true })(document.getElementById("q"))`, query))
		start = time.Now()
		do(t, tb, chromedp.SendKeys(chromedp.CSS("#q"), "\r"))
		n := poll[string](t, tb, fmt.Sprintf(`(c => c.dataset.q === %q && c.dataset.n)(document.getElementById("count"))`, query))
		if n != "0" {
			poll[bool](t, tb, `document.querySelector("#rows .l.cur") !== null`)
		}
		searched := time.Since(start)
		t.Logf("run %d: %s: %d rows (%d drawn), opened and drawn in %.3f s; search %q (%s matches) to its first match shown in %.3f s",
			run+1, page, rows, drawn, loaded.Seconds(), query, n, searched.Seconds())
		tb.clean(t, page)
	}
}

package export

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// unescapeTSV reads one TSV cell back: \t, \n, \r and \\ are a tab,
// newline, CR and backslash; a backslash before anything else fails.
func unescapeTSV(t *testing.T, c string) string {
	t.Helper()
	var b strings.Builder
	for i := 0; i < len(c); i++ {
		if c[i] != '\\' {
			b.WriteByte(c[i])
			continue
		}
		i++
		if i == len(c) {
			t.Fatalf("cell %q ends in a backslash", c)
		}
		switch c[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case '\\':
			b.WriteByte('\\')
		default:
			t.Fatalf("cell %q: unknown escape \\%c", c, c[i])
		}
	}
	return b.String()
}

// TestCSVAndTSV exports a run with text that CSV must quote and TSV
// escape, and reads both back: the same rows, one per line, record and
// note, whose text is ds log --json's "text" less the newline.
func TestCSVAndTSV(t *testing.T) {
	steps := append(standardRun()[:len(standardRun())-2], out("a,\"b\"\tc\\d\re f\n"))
	path := writeCapture(t, t.TempDir(), steps...)
	csvOut, _, res := export(t, Options{Format: CSV}, path)
	rows, err := csv.NewReader(strings.NewReader(csvOut)).ReadAll()
	if err != nil {
		t.Fatalf("CSV does not read back: %v\n%s", err, csvOut)
	}
	if res.Records != uint64(len(rows)-1) {
		t.Errorf("Records %d, %d rows", res.Records, len(rows)-1)
	}
	tsvOut, _, _ := export(t, Options{Format: TSV}, path)
	var tsvRows [][]string
	for _, line := range strings.Split(strings.TrimSuffix(tsvOut, "\n"), "\n") {
		cells := strings.Split(line, "\t")
		for i := range cells {
			cells[i] = unescapeTSV(t, cells[i])
		}
		tsvRows = append(tsvRows, cells)
	}
	if diff := cmp.Diff(rows, tsvRows); diff != "" {
		t.Errorf("TSV rows differ from the CSV rows (-csv +tsv):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"stream", "position", "channel", "time", "text"}, rows[0]); diff != "" {
		t.Errorf("header (-want +got):\n%s", diff)
	}

	// What ds log --json says of the same things.
	var want [][]string
	for i, line := range strings.Split(strings.TrimSpace(logJSON(t, false, path)), "\n") {
		var o map[string]any
		dec := json.NewDecoder(strings.NewReader(line))
		dec.UseNumber()
		if err := dec.Decode(&o); err != nil {
			t.Fatal(err)
		}
		pos, ch, tm := "~", "gap", ""
		if p, ok := o["position"].(json.Number); ok {
			pos, ch = p.String(), o["channel"].(string)
		}
		if s, ok := o["time"].(string); ok {
			tm = s
		} else if ch == "gap" && i+1 < len(rows) {
			// --json gives a note no time; export gives it its
			// place's, the clock reading before it.
			tm = rows[i+1][3]
			if a, b := parseTime(t, tm), parseTime(t, rows[i][3]); a.Before(b) {
				t.Errorf("gap at %s before the row above it, at %s", tm, rows[i][3])
			}
		}
		text := strings.TrimSuffix(o["text"].(string), "\n")
		if o["bytes_b64"] != nil && o["channel"] == "app.blob" {
			text = `\x00\x01blob` // escaped as ds log's text shows it
		}
		want = append(want, []string{o["stream"].(string), pos, ch, tm, text})
	}
	if diff := cmp.Diff(want, rows[1:]); diff != "" {
		t.Errorf("rows differ from ds log --json (-json +csv):\n%s", diff)
	}
	if last := rows[len(rows)-1]; last[4] != "a,\"b\"\tc\\d\re f" {
		t.Errorf("last row's text %q", last[4])
	}
}

// TestGolden pins the four formats of the standard run
// (testdata/run.*; DS_UPDATE=1 rewrites them).
func TestGolden(t *testing.T) {
	path := writeCapture(t, t.TempDir(), standardRun()...)
	for _, tc := range []struct {
		format Format
		file   string
	}{{Asciicast, "run.cast"}, {OTLP, "run.otlp.jsonl"}, {CSV, "run.csv"}, {TSV, "run.tsv"}} {
		got, _, _ := export(t, Options{Format: tc.format, Version: "0.0.0-test", Title: "golden"}, path)
		golden := filepath.Join("testdata", tc.file)
		if os.Getenv("DS_UPDATE") != "" {
			if err := os.MkdirAll("testdata", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (DS_UPDATE=1 writes it)", err)
		}
		if diff := cmp.Diff(string(want), got); diff != "" {
			t.Errorf("%s (-golden +got):\n%s", tc.file, diff)
		}
	}
}

func parseTime(t *testing.T, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// TestControlsAndCR checks that no export hands a terminal its control
// bytes and that a --pty line's CR before its newline is left out: CSV
// and TSV write ESC, BEL (each C0 control but tab, newline and CR, and
// DEL) as \xNN; CSV, TSV and OTLP text drop one CR before the newline.
func TestControlsAndCR(t *testing.T) {
	path := writeCapture(t, t.TempDir(), tick(0), out("\x1b[31mred\x1b[0m\a\x7f done\r\n"), out("50%\r100%\r\r\n"))
	for _, tc := range []struct {
		format Format
		want   []string
	}{
		{CSV, []string{`,proc.make.stdout,2025-12-01T10:13:20Z,\x1b[31mred\x1b[0m\x07\x7f done` + "\n", `,"50%` + "\r" + `100%` + "\r\"\n"}},
		{TSV, []string{"\t" + `\x1b[31mred\x1b[0m\x07\x7f done` + "\n", "\t" + `50%\r100%\r` + "\n"}},
		{OTLP, []string{`"body":{"stringValue":"\u001b[31mred\u001b[0m\u0007` + "\x7f" + ` done"}`, `"body":{"stringValue":"50%\r100%\r"}`}},
	} {
		got, _, _ := export(t, Options{Format: tc.format}, path)
		if tc.format != OTLP && strings.ContainsAny(got, "\x1b\a\x7f") {
			t.Errorf("%v: a control byte left raw:\n%q", tc.format, got)
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%v: no %q in\n%s", tc.format, w, got)
			}
		}
	}
}

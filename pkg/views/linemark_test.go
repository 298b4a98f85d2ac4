package views

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// An unfinished line and the pieces of a split line are marked (issue 22
// item 4): in the text format a line printed before its newline ends with
// "…" and the row that continues it starts with "…"; in --json the first
// has "partial":true, the second "continues":true; --cat stays byte-exact.
func TestLogLineMarks(t *testing.T) {
	big := strings.Repeat("x", maxLine+maxLine/2) // 1.5 MiB: printed in two pieces
	tests := []struct {
		name string
		in   []frames.Frame
		text string
		json []string // each object's "text" (cut to 8 bytes), " partial", " continues"
	}{
		{"an unterminated last line", []frames.Frame{
			on(2, 0, "whole\n"),
			on(2, 1, "no newline"),
		}, "" +
			"     0  proc.trainer.stdout  whole\n" +
			"     1  proc.trainer.stdout  no newline…\n",
			[]string{"whole\n", "no newli partial"}},
		{"a line longer than 1 MiB", []frames.Frame{
			on(2, 0, big[:maxLine/2]),
			on(2, 1, big[maxLine/2:maxLine+1]),
			on(2, 2, big[maxLine+1:]+"\nend\n"),
		}, "" +
			"     0  proc.trainer.stdout  " + big[:maxLine+1] + "…\n" +
			"     2  proc.trainer.stdout  …" + big[maxLine+1:] + "\n" +
			"     2  proc.trainer.stdout  end\n",
			[]string{"xxxxxxxx partial", "xxxxxxxx continues", "end\n"}},
		{"a record cuts a line", []frames.Frame{
			on(2, 0, "compil"),
			on(1, 1, `{"a":1}`),
			on(2, 2, "ing\n"),
		}, "" +
			"     0  proc.trainer.stdout  compil…\n" +
			"     1  host.resource        {\"a\":1}\n" +
			"     2  proc.trainer.stdout  …ing\n",
			[]string{"compil partial", `{"a":1}`, "ing\n continues"}},
		{"a piece cut twice", []frames.Frame{
			on(2, 0, "a"),
			on(1, 1, `{}`),
			on(2, 2, "b"),
			on(1, 3, `{}`),
			on(2, 4, "c"),
		}, "" +
			"     0  proc.trainer.stdout  a…\n" +
			"     1  host.resource        {}\n" +
			"     2  proc.trainer.stdout  …b…\n" +
			"     3  host.resource        {}\n" +
			"     4  proc.trainer.stdout  …c…\n",
			[]string{"a partial", "{}", "b partial continues", "{}", "c partial continues"}},
		{"a progress bar overwrites what it continues", []frames.Frame{
			on(2, 0, "\rprogress 1/3"),
			on(1, 1, `{}`),
			on(2, 2, "\rprogress 3/3\n"),
		}, "" +
			"     0  proc.trainer.stdout  progress 1/3…\n" +
			"     1  host.resource        {}\n" +
			"     2  proc.trainer.stdout  progress 3/3\n",
			[]string{"\rprogres partial", "{}", "\rprogres continues"}},
		{"the rest is only its newline", []frames.Frame{
			on(2, 0, "50%"),
			on(1, 1, `{}`),
			on(2, 2, "\r\n"),
		}, "" +
			"     0  proc.trainer.stdout  50%…\n" +
			"     1  host.resource        {}\n",
			// --json keeps every byte: the rest is an object of its own.
			[]string{"50% partial", "{}", "\r\n continues"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.text, printItems(t, LogOptions{}, tt.in...)); diff != "" {
				t.Errorf("text (-want +got):\n%s", diff)
			}
			var got []string
			for _, line := range strings.Split(strings.TrimSuffix(printItems(t, LogOptions{Format: FormatJSON}, tt.in...), "\n"), "\n") {
				var v struct {
					Text      string
					Partial   bool
					Continues bool
				}
				if err := json.Unmarshal([]byte(line), &v); err != nil {
					t.Fatalf("%v: %s", err, line)
				}
				s := v.Text
				if len(s) > 8 {
					s = s[:8]
				}
				if v.Partial {
					s += " partial"
				}
				if v.Continues {
					s += " continues"
				}
				got = append(got, s)
			}
			if diff := cmp.Diff(tt.json, got); diff != "" {
				t.Errorf("--json (-want +got):\n%s", diff)
			}
			var want []byte
			for _, f := range tt.in {
				if f.Channel == 2 {
					want = append(want, f.Payload...)
				}
			}
			if got := printItems(t, LogOptions{Format: FormatCat}, tt.in...); got != string(want) {
				t.Errorf("--cat is not byte-exact: %q", got)
			}
		})
	}
}

// The marks are ds's, not the line's: -g does not see them, colours dim
// them, and --cr-segments puts them on the first and last segment.
func TestLogLineMarksShown(t *testing.T) {
	in := []frames.Frame{
		on(2, 0, "one\rtwo"),
		on(1, 1, `{}`),
		on(2, 2, "three\n"),
	}
	grep := func(re string) string {
		return printItems(t, LogOptions{Select: Selection{Grep: regexp.MustCompile(re)}}, in...)
	}
	if got, want := grep(`two$`), "     0  proc.trainer.stdout  two…\n"; got != want {
		t.Errorf("-g 'two$' = %q, want %q", got, want)
	}
	if got, want := grep(`^three`), "     2  proc.trainer.stdout  …three\n"; got != want {
		t.Errorf("-g '^three' = %q, want %q", got, want)
	}
	if got := grep(`…`); got != "" {
		t.Errorf("-g matched a mark: %q", got)
	}
	want := "" +
		"     0  proc.trainer.stdout  one\n" +
		"     0  proc.trainer.stdout  two…\n" +
		"     1  host.resource        {}\n" +
		"     2  proc.trainer.stdout  …three\n"
	if diff := cmp.Diff(want, printItems(t, LogOptions{CRSegments: true}, in...)); diff != "" {
		t.Errorf("--cr-segments (-want +got):\n%s", diff)
	}
	got := printItems(t, LogOptions{Color: true}, in...)
	for _, want := range []string{"two" + string(stylePosition) + "…" + sgrReset + "\n", string(stylePosition) + "…" + sgrReset + "three\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("--color output lacks %q:\n%q", want, got)
		}
	}
}

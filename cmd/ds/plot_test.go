package main

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
)

// ds series -o svg writes valid XML: parsed with encoding/xml, it has a
// viewBox, and a polyline per unbroken run of each line with one point
// per row (the fixture's rows are far fewer than the chart's columns).
func TestSeriesSVG(t *testing.T) {
	t.Setenv("TZ", "UTC")
	var stdout, stderr bytes.Buffer
	code := run([]string{"ds", "series", "host.cpu", "-o", "svg", "-f", "host.total_percent", "-f", "host.busy_ticks", "../../pkg/views/testdata/series.dss"}, nil, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var doc struct {
		ViewBox string `xml:"viewBox,attr"`
		Groups  []struct {
			Lines []struct {
				Label  string `xml:"data-label,attr"`
				Points string `xml:"points,attr"`
			} `xml:"polyline"`
		} `xml:"g"`
	}
	if err := xml.Unmarshal(stdout.Bytes(), &doc); err != nil {
		t.Fatalf("not XML: %v\n%s", err, stdout.Bytes())
	}
	if doc.ViewBox != "0 0 800 300" {
		t.Errorf("viewBox %q", doc.ViewBox)
	}
	// edge#1: 2 rows, a lost position, 2 rows (its first row has no
	// time); edge#2: 2 rows. Per field: 2 + 2 + 2 points.
	points := map[string][]int{}
	for _, g := range doc.Groups {
		for _, l := range g.Lines {
			points[l.Label] = append(points[l.Label], len(strings.Fields(l.Points)))
		}
	}
	for _, label := range []string{"host.total_percent edge#1", "host.busy_ticks edge#1"} {
		if got := points[label]; len(got) != 2 || got[0] != 2 || got[1] != 2 {
			t.Errorf("%s: points per run %v, want [2 2]", label, got)
		}
	}
	for _, label := range []string{"host.total_percent edge#2", "host.busy_ticks edge#2"} {
		if got := points[label]; len(got) != 1 || got[0] != 2 {
			t.Errorf("%s: points per run %v, want [2]", label, got)
		}
	}
}

package export

import (
	"bufio"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/ds-telemetry/ds/pkg/views"
)

// otlpRecord is what TestOTLPDecodesWithPdata compares of a LogRecord
// decoded by the collector's pdata.
type otlpRecord struct {
	Resource map[string]any
	Scope    string
	Time     int64
	Observed int64
	Severity plog.SeverityNumber
	SevText  string
	Body     string // a string body, or "bytes:" and the bytes in base64
	Attrs    map[string]any
}

// TestOTLPDecodesWithPdata exports the standard run as OTLP/JSON and
// decodes every line with the OpenTelemetry collector's own
// unmarshaller (plog.JSONUnmarshaler): one request of one record per
// line, whose times, severities, bodies and attributes are those of the
// capture.
func TestOTLPDecodesWithPdata(t *testing.T) {
	path := writeCapture(t, t.TempDir(), standardRun()...)
	got, stderr, res := export(t, Options{Format: OTLP, Version: "1.2.3"}, path)
	if stderr != "" {
		t.Errorf("stderr %q", stderr)
	}
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if res.Records != uint64(len(lines)) {
		t.Errorf("Records %d, %d lines", res.Records, len(lines))
	}
	var recs []otlpRecord
	var u plog.JSONUnmarshaler
	for i, line := range lines {
		logs, err := u.UnmarshalLogs([]byte(line))
		if err != nil {
			t.Fatalf("line %d %s: %v", i+1, line, err)
		}
		if logs.LogRecordCount() != 1 || logs.ResourceLogs().Len() != 1 {
			t.Fatalf("line %d: %d records in %d resources, want one", i+1, logs.LogRecordCount(), logs.ResourceLogs().Len())
		}
		rl := logs.ResourceLogs().At(0)
		sl := rl.ScopeLogs().At(0)
		lr := sl.LogRecords().At(0)
		r := otlpRecord{
			Resource: rl.Resource().Attributes().AsRaw(),
			Scope:    sl.Scope().Name() + " " + sl.Scope().Version(),
			Time:     int64(lr.Timestamp()),
			Observed: int64(lr.ObservedTimestamp()),
			Severity: lr.SeverityNumber(),
			SevText:  lr.SeverityText(),
			Attrs:    lr.Attributes().AsRaw(),
		}
		switch lr.Body().Type() {
		case pcommon.ValueTypeStr:
			r.Body = lr.Body().Str()
		case pcommon.ValueTypeBytes:
			r.Body = "bytes:" + base64.StdEncoding.EncodeToString(lr.Body().Bytes().AsRaw())
		default:
			t.Errorf("line %d: body of type %v", i+1, lr.Body().Type())
		}
		recs = append(recs, r)
	}
	resource := map[string]any{"service.name": "make", "service.instance.id": "ci-7#42", "ds.stream": "ci-7#42",
		"ds.node": "ci-7", "ds.life": "42", "ds.label": "make"}
	at := func(ms float64) int64 { return fixtureStart + int64(ms*float64(time.Millisecond)) }
	rec := func(ms float64, sev plog.SeverityNumber, body string, attrs map[string]any) otlpRecord {
		text := map[plog.SeverityNumber]string{plog.SeverityNumberInfo: "INFO", plog.SeverityNumberWarn: "WARN"}[sev]
		return otlpRecord{resource, "ds 1.2.3", at(ms), at(ms), sev, text, body, attrs}
	}
	line := func(ch string, pos int64, iostream string) map[string]any {
		return map[string]any{"ds.channel": "proc.make." + ch, "ds.position": pos, "log.iostream": iostream}
	}
	lifecycle := func(pos int64) map[string]any {
		return map[string]any{"ds.channel": "proc.make.lifecycle", "ds.position": pos}
	}
	split := line("stdout", 5, "stdout")
	split["ds.last_position"] = int64(7)
	want := []otlpRecord{
		rec(0, plog.SeverityNumberInfo, `{"event":"started","pid":4242,"argv":["make","-j2","test it"],"cwd":"/src","label":"make"}`, lifecycle(1)),
		rec(0, plog.SeverityNumberInfo, "building", line("stdout", 2, "stdout")),
		rec(10, plog.SeverityNumberWarn, "warning: unused x", line("stderr", 4, "stderr")),
		rec(10, plog.SeverityNumberInfo, "half a line", split),
		rec(260, plog.SeverityNumberInfo, "price 10 €", func() map[string]any {
			m := line("stdout", 7, "stdout")
			m["ds.last_position"] = int64(8)
			return m
		}()),
		rec(260.005, plog.SeverityNumberWarn, "position 10 missing (1 frame)", map[string]any{"ds.note": "gap", "ds.from": int64(10), "ds.to": int64(10), "ds.frames": int64(1)}),
		rec(260.005, plog.SeverityNumberInfo, "bytes:"+base64.StdEncoding.EncodeToString([]byte("bad \xff byte")), line("stdout", 11, "stdout")),
		rec(260.005, plog.SeverityNumberInfo, "bytes:"+base64.StdEncoding.EncodeToString([]byte("\x00\x01blob")), map[string]any{"ds.channel": "app.blob", "ds.position": int64(12)}),
		rec(1760.005, plog.SeverityNumberInfo, `{"event":"exited","status":{"kind":"code","value":2},"exit_code":2}`, lifecycle(14)),
	}
	if diff := cmp.Diff(want, recs); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
}

// TestOTLPDamage checks the record of a damaged range: ERROR, a
// resource naming the file (it belongs to no stream), the file and
// offsets as attributes, the time of the last record before it (or,
// before any, only an observed time: now).
func TestOTLPDamage(t *testing.T) {
	e := &views.Entry{Kind: views.EntryDamage, File: "in.dss", Offset: 100, End: 140, Torn: true, Message: []byte("in.dss: bytes 100–140 torn")}
	for _, tc := range []struct {
		name           string
		before         int64 // the time of a line before it (0: none)
		time, observed int64
	}{{"first", 0, 0, 42e9}, {"after a line", 7e9, 7e9, 7e9}} {
		var b strings.Builder
		enc := newOTLP(&output{w: bufio.NewWriter(&b)}, Options{})
		enc.now = func() time.Time { return time.Unix(42, 0) }
		if tc.before > 0 {
			enc.entry(&views.Entry{Kind: views.EntryLine, Channel: "x", TimeNS: tc.before, Payload: []byte("a")}, nil)
		}
		enc.out.w.Flush()
		b.Reset()
		enc.entry(e, nil)
		enc.out.w.Flush()
		var u plog.JSONUnmarshaler
		logs, err := u.UnmarshalLogs([]byte(b.String()))
		if err != nil {
			t.Fatalf("%s: %s: %v", tc.name, b.String(), err)
		}
		rl := logs.ResourceLogs().At(0)
		lr := rl.ScopeLogs().At(0).LogRecords().At(0)
		want := map[string]any{"ds.note": "damaged", "ds.file": "in.dss", "ds.offset": int64(100), "ds.end": int64(140), "ds.torn": true}
		if diff := cmp.Diff(want, lr.Attributes().AsRaw()); diff != "" {
			t.Errorf("%s: attributes (-want +got):\n%s", tc.name, diff)
		}
		if diff := cmp.Diff(map[string]any{"service.name": "ds", "ds.file": "in.dss"}, rl.Resource().Attributes().AsRaw()); diff != "" {
			t.Errorf("%s: resource (-want +got):\n%s", tc.name, diff)
		}
		if lr.SeverityNumber() != plog.SeverityNumberError || lr.SeverityText() != "ERROR" ||
			lr.Body().Str() != "in.dss: bytes 100–140 torn" || int64(lr.Timestamp()) != tc.time || int64(lr.ObservedTimestamp()) != tc.observed {
			t.Errorf("%s: record %s", tc.name, b.String())
		}
	}
}

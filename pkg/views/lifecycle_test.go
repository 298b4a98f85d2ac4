package views

import "testing"

func TestParseLifecycle(t *testing.T) {
	for _, tc := range []struct {
		payload string
		event   string
		failed  bool
		wantErr bool
	}{
		{payload: `{"event":"started","pid":7,"argv":["make","test"],"cwd":"/src","pty":true}`, event: "started"},
		{payload: `{"event":"exited","status":{"kind":"code","value":0},"exit_code":0}`, event: "exited"},
		{payload: `{"event":"exited","status":{"kind":"code","value":2},"exit_code":2}`, event: "exited", failed: true},
		{payload: `{"event":"exited","status":{"kind":"signal","value":9,"name":"KILL"},"exit_code":137}`, event: "exited", failed: true},
		{payload: `{"event":"exited","exit_code":1}`, event: "exited", failed: true}, // no status: the code decides
		{payload: `{"event":"exited"}`, event: "exited"},                             // neither: not a failure
		{payload: `{"event":"spawn_failed","error":"not found","exit_code":127}`, event: "spawn_failed", failed: true},
		{payload: `not json`, wantErr: true},
		{payload: `{"event":7}`, wantErr: true},
	} {
		l, err := ParseLifecycle([]byte(tc.payload))
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: err %v, want error %v", tc.payload, err, tc.wantErr)
			continue
		}
		if l.Event != tc.event {
			t.Errorf("%s: event %q, want %q", tc.payload, l.Event, tc.event)
		}
		if got := l.FailedExit(); got != tc.failed {
			t.Errorf("%s: FailedExit %v, want %v", tc.payload, got, tc.failed)
		}
	}
	l, _ := ParseLifecycle([]byte(`{"event":"started","pid":7,"argv":["make","test"],"cwd":"/src","pty":true}`))
	if l.PID != 7 || len(l.Argv) != 2 || l.Cwd != "/src" || !l.PTY || l.ExitCode != nil || l.Status != nil {
		t.Errorf("started record decoded as %+v", l)
	}
}

func TestLifecycleLabel(t *testing.T) {
	for _, tc := range []struct {
		name, label string
		ok          bool
	}{
		{"proc.build.lifecycle", "build", true},
		{"proc.a.b.lifecycle", "a.b", true},
		{"proc.build.stdout", "", false},
		{"host.build.lifecycle", "", false},
		{"proc.lifecycle", "", false},
		{"", "", false},
	} {
		label, ok := LifecycleLabel(tc.name)
		if label != tc.label || ok != tc.ok {
			t.Errorf("LifecycleLabel(%q) = %q, %v; want %q, %v", tc.name, label, ok, tc.label, tc.ok)
		}
	}
}

package fleet

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ds-telemetry/ds/pkg/textfmt"
)

func TestFormatBytes(t *testing.T) {
	for n, want := range map[uint64]string{
		0: "0 bytes", 1: "1 byte", 512: "512 bytes", 1023: "1023 bytes",
		1024: "1 KiB", 1536: "1.5 KiB", 10 << 30: "10 GiB", 3251000: "3.1 MiB",
	} {
		if got := textfmt.Bytes(n); got != want {
			t.Errorf("textfmt.Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestSafeText(t *testing.T) {
	for in, want := range map[string]string{
		"ds-collect": "ds-collect", "a b": "a b", "é": "é",
		"a\x1b[2Jb": `a\x1b[2Jb`, "\xff": `\xff`, "tab\there": `tab\there`,
	} {
		if got := textfmt.Escape(in); got != want {
			t.Errorf("textfmt.Escape(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDescribeStream(t *testing.T) {
	cfg := jetstream.StreamConfig{Subjects: []string{"ds.s.>"}, MaxAge: 7 * 24 * time.Hour, MaxBytes: 10 << 30, Replicas: 1, Duplicates: 2 * time.Minute}
	if got, want := DescribeStream(cfg), "subjects ds.s.>, max age 168h0m0s, max bytes 10 GiB, replicas 1, duplicate window 2m0s"; got != want {
		t.Errorf("DescribeStream:\n got %s\nwant %s", got, want)
	}
	cfg.MaxAge, cfg.MaxBytes = 0, -1
	if got := DescribeStream(cfg); !strings.Contains(got, "max age none, max bytes none") {
		t.Errorf("no limits: %s", got)
	}
}

func TestStreamStatus(t *testing.T) {
	srv := testServer(t, "")
	nc, tg := connect(t, srv.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := StreamStatus(ctx, nc, tg); err == nil || !strings.Contains(err.Error(), "ds nats init") {
		t.Fatalf("no stream: %v, want the hint to create one", err)
	}
	initStream(t, nc, tg.Prefix, StreamOptions{})
	st, err := StreamStatus(ctx, nc, tg)
	if err != nil {
		t.Fatal(err)
	}
	if st.Stream != "DS_ds" || st.Messages != 0 || st.FirstTime != nil || len(st.Consumers) != 0 || st.MaxBytes != DefaultMaxBytes {
		t.Fatalf("status %+v", st)
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), `{"url":"`+tg.Display+`","stream":"DS_ds","subjects":["ds.s.\u003e"],"messages":0,`) || !strings.HasSuffix(string(b), `"consumers":[]}`) {
		t.Errorf("JSON %s", b)
	}
	text := st.Text(time.UTC)
	for _, line := range []string{
		"stream     DS_ds on " + tg.Display + "\n",
		"messages   0 (0 bytes)\n",
		"first      none\n",
		"limits     subjects ds.s.>, max age 168h0m0s, max bytes 10 GiB, replicas 1, duplicate window 2m0s\n",
		"consumers  none\n",
	} {
		if !strings.Contains(text, line) {
			t.Errorf("Text lacks %q:\n%s", line, text)
		}
	}
}

func TestPublicURL(t *testing.T) {
	tg, _ := ParseTarget("nats://127.0.0.1:4222/ds")
	if got := PublicURL(tg); got != tg.Display {
		t.Errorf("loopback: %s", got)
	}
	tg, _ = ParseTarget("nats://0.0.0.0:4333/fleet")
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "127.0.0.1"
	}
	if got, want := PublicURL(tg), "nats://"+host+":4333/fleet"; got != want {
		t.Errorf("0.0.0.0: %s, want %s", got, want)
	}
}

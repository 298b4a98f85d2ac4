package natsd

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestMainProtocol: Main says "ready URL" once the server takes clients,
// and shuts it down and returns 0 when its standard input ends.
func TestMainProtocol(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Main([]string{"ds-natsd", "--listen", "127.0.0.1:0", "--store", t.TempDir(), "--name", "t"}, inR, outW, &stderr)
		outW.Close()
	}()
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the first line: %v", err)
	}
	url, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "ready nats://")
	if !ok {
		t.Fatalf("first line %q, want ready nats://HOST:PORT", line)
	}
	c, err := net.Dial("tcp", url)
	if err != nil {
		t.Fatalf("the server said ready but takes no connection: %v", err)
	}
	c.Close()
	inW.Close()
	select {
	case rc := <-done:
		if rc != 0 {
			t.Fatalf("Main returned %d after its input ended, want 0 (stderr %q)", rc, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Main did not return after its input ended")
	}
	if _, err := net.DialTimeout("tcp", url, 5*time.Second); err == nil {
		t.Error("the server still takes connections after Main returned")
	}
}

// TestMainErrors: a server that cannot start says "fail MESSAGE" and
// returns 1; bad arguments return 2 with the usage on stderr.
func TestMainErrors(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var stdout, stderr bytes.Buffer
	rc := Main([]string{"ds-natsd", "--listen", "127.0.0.1:bad", "--store", t.TempDir()}, strings.NewReader(""), &stdout, &stderr)
	if rc != 1 || !strings.HasPrefix(stdout.String(), "fail --listen \"127.0.0.1:bad\": bad port") {
		t.Errorf("bad port: rc %d, stdout %q", rc, stdout.String())
	}
	stdout.Reset()
	stderr.Reset()
	if rc := Main([]string{"ds-natsd", "--listen", "127.0.0.1:0"}, strings.NewReader(""), &stdout, &stderr); rc != 2 || !strings.Contains(stderr.String(), "usage: ds-natsd") {
		t.Errorf("no --store: rc %d, stderr %q", rc, stderr.String())
	}
}

package proc

import (
	"bytes"
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestTTYSignalsAutoForeground runs TestHelperForeground in a new session
// whose controlling terminal is a pty, so that the helper is in the
// terminal's foreground process group: there, with TTYSignalsAuto, INT must
// be left to the terminal (recorded, not sent), while TERM is forwarded.
func TestTTYSignalsAutoForeground(t *testing.T) {
	t.Parallel()
	master, slave, err := openPTY()
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	defer master.Close()
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p, err := os.StartProcess(exe, []string{exe, "-test.run=^TestHelperForeground$", "-test.v"}, &os.ProcAttr{
		Env:   append(os.Environ(), "DS_PROC_HELPER=foreground"),
		Files: []*os.File{slave, out, out},
		Sys:   &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0},
	})
	slave.Close()
	if err != nil {
		t.Fatal(err)
	}
	st, err := p.Wait()
	log, _ := os.ReadFile(out.Name())
	if err != nil || !st.Success() || !bytes.Contains(log, []byte("--- PASS: TestHelperForeground")) {
		t.Fatalf("helper: %v %v\n%s", st, err, log)
	}
}

// TestHelperForeground is run by TestTTYSignalsAutoForeground only.
func TestHelperForeground(t *testing.T) {
	if os.Getenv("DS_PROC_HELPER") != "foreground" {
		t.Skip("helper process for TestTTYSignalsAutoForeground")
	}
	if !inTerminalForeground(os.Stdin) {
		t.Fatal("not in the foreground of the controlling terminal")
	}
	w := newMarkWriter("ready")
	sigs := make(chan os.Signal, 2)
	go func() {
		waitMarker(t, w)
		sigs <- syscall.SIGINT // as if typed: the child got it from the kernel
		sigs <- syscall.SIGTERM
	}()
	p := &fakeProducer{}
	res, err := Run(context.Background(), Options{
		Argv:     []string{"sh", "-c", `trap 'echo INT' INT; trap 'kill $pid; exit 6' TERM; sleep 30 >/dev/null 2>&1 & pid=$!; echo ready; wait $pid; wait $pid`},
		Stdin:    os.Stdin,
		Stdout:   w,
		Producer: p,
		Label:    label,
		Signals:  sigs,
		Grace:    30 * time.Second, // a loaded machine can take seconds to run the trap
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 6 {
		t.Errorf("exit %d", res.ExitCode)
	}
	// As in TestTermForwarded, a dying sleep may still be in the tree.
	if got := sigRecords(t, p); !cmp.Equal(got, []string{"INT/2/terminal", "TERM/15/forwarded"}) && !cmp.Equal(got, []string{"INT/2/terminal", "TERM/15/forwarded", "TERM/15/tree"}) {
		t.Errorf("signal records = %q", got)
	}
	if bytes.Contains([]byte(p.text("proc.t.stdout")), []byte("INT")) {
		t.Errorf("INT was sent: %q", p.text("proc.t.stdout"))
	}
}

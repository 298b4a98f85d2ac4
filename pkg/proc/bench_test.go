package proc

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// countProducer accepts and discards everything, counting bytes.
type countProducer struct {
	ids   atomic.Uint32
	bytes atomic.Int64
}

func (p *countProducer) RegisterChannel(string, frames.ChannelContent) (frames.ChannelID, error) {
	return frames.ChannelID(p.ids.Add(1)), nil
}

func (p *countProducer) SubmitBytes(_ frames.ChannelID, b []byte) bool {
	p.bytes.Add(int64(len(b)))
	return true
}

// benchFile writes size bytes of 100-byte lines (99 printable bytes and a
// newline) to a temporary file, 1 MiB at a time so that the benchmark's own
// heap stays small.
func benchFile(b *testing.B, size int) string {
	b.Helper()
	line := make([]byte, 100)
	for i := range line[:99] {
		line[i] = 'a' + byte(i%26)
	}
	line[99] = '\n'
	chunk := bytes.Repeat(line, (1<<20)/len(line))
	name := filepath.Join(b.TempDir(), "lines")
	f, err := os.Create(name)
	if err != nil {
		b.Fatal(err)
	}
	for n := 0; n < size/len(line)*len(line); {
		k := min(len(chunk), size/len(line)*len(line)-n)
		if _, err := f.Write(chunk[:k]); err != nil {
			b.Fatal(err)
		}
		n += k
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return name
}

// runShell runs sh -c script with $1 set to arg, stdout and stderr to
// /dev/null, and returns its wall time and CPU time (user+sys of the shell
// and every process it waited for).
func runShell(b *testing.B, script, arg string) (wall, cpu time.Duration) {
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devnull.Close()
	start := time.Now()
	p, err := os.StartProcess("/bin/sh", []string{"sh", "-c", script, "sh", arg}, &os.ProcAttr{Files: []*os.File{nil, devnull, devnull}})
	if err != nil {
		b.Fatal(err)
	}
	st, err := p.Wait()
	if err != nil || !st.Success() {
		b.Fatalf("%s: %v %v", script, st, err)
	}
	return time.Since(start), st.UserTime() + st.SystemTime()
}

// selfCPU returns the CPU time (user+sys) this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCapture measures the capture path of ds wrap (ARCHITECTURE.md §7): a
// child (cat) writing DS_PROC_BENCH_MIB MiB (default 64) of 100-byte lines
// as fast as it can, through Run with pass-through to /dev/null. Each
// iteration also times, untimed by the benchmark itself, the same child
// writing to /dev/null directly (cat file > /dev/null) and into a plain pipe
// (cat file | cat > /dev/null), and reports the wall-time ratios as
// x_devnull and x_pipe (target: x_pipe ≤ 1.3). On a busy machine wall time
// is noise; cpu_x_pipe compares CPU time instead: the child plus ds's own
// process during Run, against both cats of the pipe. Sub-benchmarks: "fake" submits to a
// producer that discards; "endpoint" to a real frames.Endpoint ticked every
// 10 ms, as ds wrap does while output waits (it drains early once frames
// pile up; at 1 GB/s a 100 ms tick would overflow the 64 MiB queue).
func BenchmarkCapture(b *testing.B) {
	mib := 64
	if v := os.Getenv("DS_PROC_BENCH_MIB"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("DS_PROC_BENCH_MIB=%q", v)
		}
		mib = n
	}
	file := benchFile(b, mib<<20)
	fi, err := os.Stat(file)
	if err != nil {
		b.Fatal(err)
	}
	size := fi.Size()
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devnull.Close()

	bench := func(b *testing.B, newProducer func() (Producer, func())) {
		b.SetBytes(size)
		b.ReportAllocs()
		var tProc, tPipe, tDev, cProc, cPipe time.Duration
		for b.Loop() {
			b.StopTimer()
			w, _ := runShell(b, `cat "$1" > /dev/null`, file)
			tDev += w
			w, c := runShell(b, `cat "$1" | cat > /dev/null`, file)
			tPipe += w
			cPipe += c
			p, stop := newProducer()
			b.StartTimer()
			start, cpu0 := time.Now(), selfCPU()
			res, err := Run(context.Background(), Options{Argv: []string{"cat", file}, Stdout: devnull, Stderr: devnull, Producer: p})
			tProc += time.Since(start)
			cProc += selfCPU() - cpu0 + res.User + res.Sys
			b.StopTimer()
			stop()
			if err != nil || res.ExitCode != 0 || res.Stdout.Bytes != size || res.Stdout.DroppedFrames != 0 {
				b.Fatalf("Run: %v, %+v", err, res)
			}
			b.StartTimer()
		}
		mbps := func(d time.Duration) float64 { return float64(size) * float64(b.N) / d.Seconds() / 1e6 }
		b.ReportMetric(mbps(tDev), "devnull_MB/s")
		b.ReportMetric(mbps(tPipe), "pipe_MB/s")
		b.ReportMetric(tProc.Seconds()/tDev.Seconds(), "x_devnull")
		b.ReportMetric(tProc.Seconds()/tPipe.Seconds(), "x_pipe")
		b.ReportMetric(cProc.Seconds()/cPipe.Seconds(), "cpu_x_pipe")
	}
	b.Run("fake", func(b *testing.B) {
		bench(b, func() (Producer, func()) { return &countProducer{}, func() {} })
	})
	b.Run("endpoint", func(b *testing.B) {
		bench(b, func() (Producer, func()) {
			ep := frames.NewEndpoint(frames.StreamDescriptor{Stream: frames.StreamID{Node: "bench", Life: 1}}, frames.EndpointOptions{})
			done := make(chan struct{})
			ticked := make(chan struct{})
			go func() {
				defer close(ticked)
				t := time.NewTicker(10 * time.Millisecond)
				defer t.Stop()
				for {
					select {
					case <-t.C:
						ep.Tick()
					case <-done:
						ep.Tick()
						return
					}
				}
			}()
			return ep.Producer(), func() {
				close(done)
				<-ticked
				if h := ep.Health(); h.MuxDropped != 0 {
					b.Errorf("mux dropped %d", h.MuxDropped)
				}
			}
		})
	})
}

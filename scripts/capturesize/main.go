// Command capturesize writes realistic log lines as a raw text file and as
// DSS captures (one frame per line, a flush every 1000 lines: a busy
// 100 ms drain tick of ds wrap, and smaller blocks than a faster producer
// would give), for scripts/capture-size.sh to compare with zstd -3 of the
// text.
//
//	go run ./scripts/capturesize -o DIR [-mib 32]
//
// It writes DIR/raw.txt, DIR/none.dss and DIR/zstd.dss and prints one line
// per file: name, bytes, lines, and for captures the time spent writing.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

func main() {
	out := flag.String("o", "", "output directory")
	mib := flag.Int("mib", 32, "MiB of log text")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "usage: capturesize -o DIR [-mib N]")
		os.Exit(2)
	}
	lines := logLines(*mib << 20)
	raw, err := os.Create(filepath.Join(*out, "raw.txt"))
	check(err)
	bw := bufio.NewWriter(raw)
	for _, l := range lines {
		_, err = bw.Write(l)
		check(err)
	}
	check(bw.Flush())
	check(raw.Close())
	fi, _ := os.Stat(raw.Name())
	fmt.Printf("raw.txt %d %d\n", fi.Size(), len(lines))
	for _, c := range []segments.Compression{segments.CompressNone, segments.CompressZstd} {
		name := filepath.Join(*out, c.String()+".dss")
		f, err := os.Create(name)
		check(err)
		stream := frames.StreamID{Node: "bench-host", Life: 1764489600000000000}
		stdout := frames.ChannelDescriptor{Stream: stream, ID: 1, Name: "proc.app.stdout", Content: frames.TextStream()}
		start := time.Now()
		w, err := segments.NewWriter(f, frames.StreamDescriptor{Stream: stream}, []frames.ChannelDescriptor{stdout}, segments.WriterOptions{Compression: c})
		check(err)
		for i, l := range lines {
			check(w.WriteFrame(frames.Frame{Channel: 1, Position: frames.Position(i), Payload: l}))
			if i%1000 == 999 {
				check(w.Flush())
			}
		}
		check(w.Close())
		elapsed := time.Since(start)
		check(f.Close())
		fi, _ := os.Stat(name)
		fmt.Printf("%s.dss %d %d %.3f\n", c, fi.Size(), len(lines), elapsed.Seconds())
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "capturesize:", err)
		os.Exit(1)
	}
}

// logLines returns about size bytes of log lines in the styles a wrapped
// service prints: access logs, structured application logs, JSON logs,
// training progress and the odd stack trace, with Zipf-distributed users,
// paths and ids, and timestamps that advance.
func logLines(size int) [][]byte {
	rng := rand.New(rand.NewPCG(2026, 11))
	users := rand.NewZipf(rng, 1.2, 1, 5000)
	paths := rand.NewZipf(rng, 1.1, 1, 200)
	items := rand.NewZipf(rng, 1.05, 1, 100000)
	t := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	agents := []string{
		"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36",
		"curl/8.5.0", "python-requests/2.32.3", "Go-http-client/1.1",
	}
	routes := []string{"/api/v1/items/%d", "/api/v1/users/%d/orders", "/api/v2/search?q=item%d", "/healthz", "/static/app.%d.js", "/api/v1/cart/%d"}
	services := []string{"orders", "cart", "auth", "search", "billing"}
	msgs := []string{"processed order", "cache miss", "cache hit", "retrying upstream call", "token refreshed", "slow query"}
	var out [][]byte
	n := 0
	for n < size {
		t = t.Add(time.Duration(rng.ExpFloat64() * float64(800*time.Microsecond)))
		var l string
		switch k := rng.IntN(100); {
		case k < 40:
			route := routes[paths.Uint64()%uint64(len(routes))]
			l = fmt.Sprintf("10.0.%d.%d - - [%s] \"%s %s HTTP/1.1\" %d %d \"-\" \"%s\" %.3f\n",
				rng.IntN(4), 2+users.Uint64()%250, t.Format("02/Jan/2006:15:04:05 -0700"),
				[]string{"GET", "GET", "GET", "POST", "PUT"}[rng.IntN(5)], fmt.Sprintf(route, items.Uint64()),
				[]int{200, 200, 200, 200, 201, 204, 304, 404, 500}[rng.IntN(9)], 200+rng.IntN(20000),
				agents[rng.IntN(len(agents))], rng.ExpFloat64()*0.02)
		case k < 75:
			svc := services[rng.IntN(len(services))]
			l = fmt.Sprintf("%s %-5s [worker-%d] %s.service: %s id=%016x user=user%d items=%d total=%.2f latency_ms=%d\n",
				t.Format("2006-01-02T15:04:05.000000Z"), []string{"INFO", "INFO", "INFO", "DEBUG", "WARN"}[rng.IntN(5)],
				rng.IntN(16), svc, msgs[rng.IntN(len(msgs))], rng.Uint64(), users.Uint64(), 1+rng.IntN(9),
				float64(rng.IntN(50000))/100, rng.IntN(300))
		case k < 90:
			l = fmt.Sprintf("{\"ts\":\"%s\",\"level\":\"%s\",\"msg\":\"%s\",\"key\":\"user:%d\",\"ms\":%d,\"trace\":\"%08x\"}\n",
				t.Format(time.RFC3339Nano), []string{"info", "info", "debug", "warn"}[rng.IntN(4)],
				msgs[rng.IntN(len(msgs))], users.Uint64(), rng.IntN(120), rng.Uint32())
		case k < 99:
			step := n / 100
			l = fmt.Sprintf("epoch %d step %d/50000 loss=%.4f lr=%.1e grad_norm=%.2f tok/s=%d\n",
				1+step/50000, step%50000, 2.5/(1+float64(step)/2000)+rng.Float64()*0.05, 3e-4, 0.5+rng.Float64()*2, 40000+rng.IntN(10000))
		default:
			l = fmt.Sprintf("\tat com.example.%s.Handler.handle(Handler.java:%d)\n", services[rng.IntN(len(services))], 20+rng.IntN(400))
		}
		out = append(out, []byte(l))
		n += len(l)
	}
	return out
}

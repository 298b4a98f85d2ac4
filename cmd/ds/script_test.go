package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/ds-telemetry/ds/pkg/fleet"
	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/natsd"
	"github.com/ds-telemetry/ds/pkg/segments"
)

func TestMain(m *testing.M) {
	// A test that needs ds as a separate process it can kill runs this
	// binary with DS_TEST_MAIN=1 (see dsCommand).
	if os.Getenv("DS_TEST_MAIN") == "1" {
		os.Exit(run(os.Args, os.Stdin, os.Stdout, os.Stderr))
	}
	testscript.Main(m, map[string]func(){
		"ds": func() { os.Exit(run(os.Args, os.Stdin, os.Stdout, os.Stderr)) },
		// ds collect runs this one as its child (fleet.StartServer finds
		// it on $PATH): the testscripts exercise the real helper path.
		"ds-natsd": func() { os.Exit(natsd.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// TestScript runs the end-to-end CLI scripts in testdata/script (ARCHITECTURE.md §1
// §8). DS_UPDATE=1 rewrites their expected outputs.
func TestScript(t *testing.T) {
	fixtures, err := filepath.Abs("../../testdata")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		UpdateScripts:       os.Getenv("DS_UPDATE") != "",
		Setup: func(env *testscript.Env) error {
			env.Setenv("FIXTURES", fixtures)
			env.Setenv("NO_COLOR", "1")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits":       cmdExits,
			"truncate":    cmdTruncate,
			"flipbyte":    cmdFlipbyte,
			"smaller":     cmdSmaller,
			"mkcapture":   cmdMkcapture,
			"mkcopy":      cmdMkcopy,
			"readatmost":  cmdReadAtMost,
			"reversed":    cmdReversed,
			"mkstream":    cmdMkstream,
			"mkclocked":   cmdMkclocked,
			"natsd":       cmdNatsd,
			"natspub":     cmdNatspub,
			"natsforge":   cmdNatsforge,
			"fifodrained": cmdFifoDrained,
		},
	})
}

// exits CODE PROG [ARGS...]: run PROG and require exit status CODE; stdout
// and stderr are kept for the assertions that follow.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exits: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("exit status %d, want %d", got, want)
	}
}

// truncate FILE N: cut FILE to N bytes (negative N: remove -N bytes).
func cmdTruncate(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: truncate FILE N")
	}
	n, err := strconv.ParseInt(args[1], 10, 64)
	ts.Check(err)
	path := ts.MkAbs(args[0])
	if n < 0 {
		fi, err := os.Stat(path)
		ts.Check(err)
		n += fi.Size()
	}
	ts.Check(os.Truncate(path, n))
}

// flipbyte FILE OFFSET: invert every bit of the byte at OFFSET (negative
// offsets count from the end).
func cmdFlipbyte(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: flipbyte FILE OFFSET")
	}
	path := ts.MkAbs(args[0])
	b, err := os.ReadFile(path)
	ts.Check(err)
	off, err := strconv.Atoi(args[1])
	ts.Check(err)
	if off < 0 {
		off += len(b)
	}
	if off < 0 || off >= len(b) {
		ts.Fatalf("flipbyte: offset %s outside %d-byte file", args[1], len(b))
	}
	b[off] ^= 0xFF
	ts.Check(os.WriteFile(path, b, 0o644))
}

// smaller A B: file A is less than a quarter of the size of file B (a
// compressed capture against a plain one).
func cmdSmaller(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: smaller A B")
	}
	a, err := os.Stat(ts.MkAbs(args[0]))
	ts.Check(err)
	b, err := os.Stat(ts.MkAbs(args[1]))
	ts.Check(err)
	if a.Size()*4 >= b.Size() {
		ts.Fatalf("%s is %d bytes, not under a quarter of %s (%d bytes)", args[0], a.Size(), args[1], b.Size())
	}
}

// mkcapture FILE MIB: write an uncompressed capture of one ended stream of
// text lines ("line N of the big capture"), MIB MiB long, segments
// summarised as ds writes them: a large input made in a second, not by
// running a job for minutes.
func cmdMkcapture(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: mkcapture FILE MIB")
	}
	mib, err := strconv.ParseInt(args[1], 10, 64)
	ts.Check(err)
	f, err := os.Create(ts.MkAbs(args[0]))
	ts.Check(err)
	defer f.Close()
	s := frames.StreamID{Node: "big", Life: 1}
	bw := bufio.NewWriterSize(f, 1<<20)
	cw := &countingWriter{w: bw}
	w, err := segments.NewWriter(cw, frames.StreamDescriptor{Stream: s}, []frames.ChannelDescriptor{
		{Stream: s, ID: 1, Name: "proc.big.stdout", Content: frames.TextStream()},
	}, segments.WriterOptions{Compression: segments.CompressNone})
	ts.Check(err)
	// One 32 KiB frame of numbered lines, written again and again: the
	// bytes are what matters, not how varied they are.
	var chunk []byte
	for n := 0; len(chunk) < 32<<10; n++ {
		chunk = fmt.Appendf(chunk, "line %d of the big capture\n", n)
	}
	for pos := frames.Position(0); cw.n < mib<<20; pos++ {
		ts.Check(w.WriteFrame(frames.Frame{Channel: 1, Position: pos, Payload: chunk}))
	}
	ts.Check(w.Close())
	ts.Check(bw.Flush())
}

// mkcopy FILE FROM TO [ended] [word=W]: write an uncompressed capture of
// stream copy#1 holding its frames FROM..TO only, a line "line N" (or "W
// N") at position N, one frame a segment: a copy of part of a stream, as
// a transport that cut it would deliver (its first header's sequence
// number is FROM, so a copy not from 0 says its head is elsewhere); with
// "ended", its StreamEnded record too.
func cmdMkcopy(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 {
		ts.Fatalf("usage: mkcopy FILE FROM TO [ended] [word=W]")
	}
	ended, word := false, "line"
	for _, a := range args[3:] {
		switch w, ok := strings.CutPrefix(a, "word="); {
		case a == "ended":
			ended = true
		case ok:
			word = w
		default:
			ts.Fatalf("usage: mkcopy FILE FROM TO [ended] [word=W]")
		}
	}
	from, err := strconv.ParseUint(args[1], 10, 64)
	ts.Check(err)
	to, err := strconv.ParseUint(args[2], 10, 64)
	ts.Check(err)
	f, err := os.Create(ts.MkAbs(args[0]))
	ts.Check(err)
	defer f.Close()
	s := frames.StreamID{Node: "copy", Life: 1}
	w, err := segments.NewWriter(f, frames.StreamDescriptor{Stream: s}, []frames.ChannelDescriptor{
		{Stream: s, ID: 1, Name: "proc.copy.stdout", Content: frames.TextStream()},
	}, segments.WriterOptions{Compression: segments.CompressNone, SegmentSize: 1, FirstSeq: from, Rand: bytes.NewReader(make([]byte, 8*(to-from+2)))})
	ts.Check(err)
	for pos := from; pos <= to; pos++ {
		ts.Check(w.WriteFrame(frames.Frame{Channel: 1, Position: frames.Position(pos), Payload: fmt.Appendf(nil, "%s %d\n", word, pos)}))
	}
	if ended {
		ts.Check(w.Close())
	} else {
		ts.Check(w.Flush())
		ts.Check(w.EndSegment())
	}
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// reversed A B: file B holds the lines of file A, last first (and some
// of them, not all, is a failure).
func cmdReversed(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: reversed A B")
	}
	a, b := ts.ReadFile(args[0]), ts.ReadFile(args[1])
	la, lb := strings.SplitAfter(a, "\n"), strings.SplitAfter(b, "\n")
	if len(la) != len(lb) {
		ts.Fatalf("%s has %d lines, %s %d", args[0], len(la), args[1], len(lb))
	}
	n := len(la) - 1 // the empty piece after the last newline
	for i := range n {
		if la[i] != lb[n-1-i] {
			ts.Fatalf("line %d of %s is not line %d of %s: %q, %q", i+1, args[0], n-i, args[1], la[i], lb[n-1-i])
		}
	}
}

// readatmost N: the last command's stderr has DS_READ_STATS lines
// ("ds: NAME: read R of S bytes"), and every R is at most N.
func cmdReadAtMost(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: readatmost N")
	}
	max, err := strconv.ParseInt(args[0], 10, 64)
	ts.Check(err)
	found := 0
	for _, line := range strings.Split(ts.ReadFile("stderr"), "\n") {
		var name string
		var r, size int64
		if _, err := fmt.Sscanf(line, "ds: %s read %d of %d bytes", &name, &r, &size); err != nil {
			continue
		}
		found++
		if r > max {
			ts.Fatalf("%s read %d of %d bytes, more than %d", name, r, size, max)
		}
	}
	if found == 0 {
		ts.Fatalf("no read statistics on stderr (DS_READ_STATS=1)")
	}
}

// mkstream FILE NODE#LIFE POSITIONS [ended] [trimmed=H]: write a capture
// of one stream whose channel proc.job.stdout (text) holds "line P\n" at
// each position P of POSITIONS (A-B ranges and single positions, comma
// separated, e.g. 0-3,5,8-9; "-" for none), and nothing else (no clock or
// health records): exact positions for the tests of stores and cursors.
// With ended, the stream ends with a StreamEnded record; with trimmed=H, a
// Trimmed record of horizon H comes before the frames (as a store's
// read-out starts, but in a capture file: crafted).
func cmdMkstream(ts *testscript.TestScript, neg bool, args []string) {
	usage := func() { ts.Fatalf("usage: mkstream FILE NODE#LIFE POSITIONS [ended] [trimmed=H]") }
	if neg || len(args) < 3 {
		usage()
	}
	ended, trimmed := false, uint64(0)
	for _, a := range args[3:] {
		switch h, ok := strings.CutPrefix(a, "trimmed="); {
		case a == "ended":
			ended = true
		case ok:
			var err error
			trimmed, err = strconv.ParseUint(h, 10, 64)
			ts.Check(err)
		default:
			usage()
		}
	}
	id, err := frames.ParseStreamID(args[1])
	ts.Check(err)
	f, err := os.Create(ts.MkAbs(args[0]))
	ts.Check(err)
	defer f.Close()
	w, err := segments.NewWriter(f, frames.StreamDescriptor{Stream: id}, []frames.ChannelDescriptor{
		{Stream: id, ID: 1, Name: "proc.job.stdout", Content: frames.TextStream()},
	}, segments.WriterOptions{Compression: segments.CompressNone})
	ts.Check(err)
	if trimmed > 0 {
		ts.Check(w.WriteTrimmed(frames.Position(trimmed)))
	}
	for _, r := range strings.Split(args[2], ",") {
		if r == "-" {
			break
		}
		lo, hi, isRange := strings.Cut(r, "-")
		if !isRange {
			hi = lo
		}
		from, err := strconv.ParseUint(lo, 10, 64)
		ts.Check(err)
		to, err := strconv.ParseUint(hi, 10, 64)
		ts.Check(err)
		for p := from; p <= to; p++ {
			ts.Check(w.WriteFrame(frames.Frame{Channel: 1, Position: frames.Position(p), Payload: fmt.Appendf(nil, "line %d\n", p)}))
		}
	}
	if ended {
		ts.Check(w.Close())
	} else {
		ts.Check(w.EndSegment())
	}
}

// mkclocked FILE NODE#LIFE T0 DT N [pad=B] [zstd]: write a capture of
// one ended stream that holds N drain ticks as ds wrap records them, at
// made-up times: tick i is a datastream.clock record of unix_ns T0+i·DT
// (T0 and DT in milliseconds), then a line "NODE i" on proc.job.stdout
// (padded with B dots before its newline); zstd compresses its blocks.
// Captures of interleaved times, made without sleeping.
func cmdMkclocked(ts *testscript.TestScript, neg bool, args []string) {
	usage := func() { ts.Fatalf("usage: mkclocked FILE NODE#LIFE T0 DT N [pad=B] [zstd]") }
	if neg || len(args) < 5 {
		usage()
	}
	id, err := frames.ParseStreamID(args[1])
	ts.Check(err)
	var nums [3]int64
	for i := range nums {
		nums[i], err = strconv.ParseInt(args[2+i], 10, 64)
		ts.Check(err)
	}
	pad, comp := 0, segments.CompressNone
	for _, a := range args[5:] {
		switch b, ok := strings.CutPrefix(a, "pad="); {
		case a == "zstd":
			comp = segments.CompressZstd
		case ok:
			pad, err = strconv.Atoi(b)
			ts.Check(err)
		default:
			usage()
		}
	}
	f, err := os.Create(ts.MkAbs(args[0]))
	ts.Check(err)
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	w, err := segments.NewWriter(bw, frames.StreamDescriptor{Stream: id}, []frames.ChannelDescriptor{
		{Stream: id, ID: 1, Name: frames.ClockChannel, Content: frames.JSONRecord(frames.ClockChannel)},
		{Stream: id, ID: 2, Name: "proc.job.stdout", Content: frames.TextStream()},
	}, segments.WriterOptions{Compression: comp})
	ts.Check(err)
	t0, dt := nums[0]*1e6, nums[1]*1e6
	pos := frames.Position(0)
	for i := range nums[2] {
		clock := fmt.Appendf(nil, `{"unix_ns":%d,"mono_ns":%d}`, t0+i*dt, i*dt)
		line := fmt.Appendf(nil, "%s %d%s\n", id.Node, i, strings.Repeat(".", pad))
		ts.Check(w.WriteFrame(frames.Frame{Channel: 1, Position: pos, Payload: clock}))
		ts.Check(w.WriteFrame(frames.Frame{Channel: 2, Position: pos + 1, Payload: line}))
		pos += 2
	}
	ts.Check(w.Close())
	ts.Check(bw.Flush())
}

// natsServers are the servers natsd started, by script and name.
var natsServers = struct {
	sync.Mutex
	m map[*testscript.TestScript]map[string]*natsdServer
}{m: map[*testscript.TestScript]map[string]*natsdServer{}}

// natsdServer is a server natsd started: where it listens and keeps its
// files, and the server while it runs (nil once stopped).
type natsdServer struct {
	listen, dir string
	s           *natsd.Server
}

// natsd start NAME [DIR] [-nostream] | natsd stop NAME | natsd restart
// NAME: run a NATS server with JetStream in the test process
// (natsd.Start) on a free loopback port, its files under DIR
// ($WORK/NAME by default); start sets $NATS_NAME_URL
// (nats://127.0.0.1:PORT, NAME upper-cased) and, unless -nostream, creates
// the JetStream stream of prefix "ds" (as ds nats init does). restart
// starts a stopped server again on the same port and files. Every server
// stops at the end of the script.
func cmdNatsd(ts *testscript.TestScript, neg bool, args []string) {
	usage := func() { ts.Fatalf("usage: natsd start NAME [DIR] [-nostream] | natsd stop NAME | natsd restart NAME") }
	if neg || len(args) < 2 {
		usage()
	}
	verb, name := args[0], args[1]
	natsServers.Lock()
	byName := natsServers.m[ts]
	if byName == nil {
		byName = map[string]*natsdServer{}
		natsServers.m[ts] = byName
		ts.Defer(func() {
			natsServers.Lock()
			defer natsServers.Unlock()
			for _, n := range natsServers.m[ts] {
				if n.s != nil {
					n.s.Shutdown()
				}
			}
			delete(natsServers.m, ts)
		})
	}
	n := byName[name]
	natsServers.Unlock()
	switch verb {
	case "start":
		dir, stream := "", true
		for _, a := range args[2:] {
			switch {
			case a == "-nostream":
				stream = false
			case dir == "":
				dir = a
			default:
				usage()
			}
		}
		if n != nil {
			ts.Fatalf("natsd: %s started already", name)
		}
		if dir == "" {
			dir = name
		}
		n = &natsdServer{listen: "127.0.0.1:0", dir: ts.MkAbs(dir)}
		natsdRun(ts, n)
		n.listen = strings.TrimPrefix(n.s.ClientURL(), "nats://")
		natsServers.Lock()
		byName[name] = n
		natsServers.Unlock()
		ts.Setenv("NATS_"+strings.ToUpper(name)+"_URL", n.s.ClientURL())
		ts.Setenv("NATS_"+strings.ToUpper(name)+"_ADDR", n.listen)
		if stream {
			t, err := fleet.ParseTarget(n.s.ClientURL())
			ts.Check(err)
			nc, err := fleet.Connect(t, fleet.Auth{}, fleet.ConnectOptions{Name: "natsd"})
			ts.Check(err)
			defer nc.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, _, err = fleet.InitStream(ctx, nc, t.Prefix, fleet.StreamOptions{})
			ts.Check(err)
		}
	case "stop", "restart":
		if n == nil || len(args) != 2 {
			usage()
		}
		if verb == "stop" {
			if n.s == nil {
				ts.Fatalf("natsd: %s is stopped already", name)
			}
			n.s.Shutdown()
			n.s = nil
			return
		}
		if n.s != nil {
			ts.Fatalf("natsd: %s is running", name)
		}
		natsdRun(ts, n)
	default:
		usage()
	}
}

// natsdRun starts n's server, trying for a few seconds while its port
// lingers after a stop.
func natsdRun(ts *testscript.TestScript, n *natsdServer) {
	var err error
	for i := 0; i < 50; i++ {
		var s *natsd.Server
		if s, err = natsd.Start(natsd.Options{Listen: n.listen, StoreDir: n.dir}); err == nil {
			n.s = s
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	ts.Fatalf("natsd: %v", err)
}

// natspub URL NODE#LIFE LINES PER: publish a stream to the JetStream
// stream at URL (fleet.Publisher, as -o nats://… does) whose channel
// proc.job.stdout holds "line N\n" for N = 1..LINES at positions
// 0..LINES-1, PER lines a message, then its end, and nothing else: a known
// number of messages, which ds emit's timing does not give.
func cmdNatspub(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 4 {
		ts.Fatalf("usage: natspub URL NODE#LIFE LINES PER")
	}
	id, err := frames.ParseStreamID(args[1])
	ts.Check(err)
	lines, err := strconv.Atoi(args[2])
	ts.Check(err)
	per, err := strconv.Atoi(args[3])
	ts.Check(err)
	if per < 1 {
		ts.Fatalf("natspub: PER must be at least 1")
	}
	t, err := fleet.ParseTarget(args[0])
	ts.Check(err)
	nc, err := fleet.Connect(t, fleet.Auth{}, fleet.ConnectOptions{Name: "natspub"})
	ts.Check(err)
	defer nc.Close()
	e := frames.NewEndpoint(frames.StreamDescriptor{Stream: id}, frames.EndpointOptions{})
	ch, err := e.RegisterChannel("proc.job.stdout", frames.TextStream())
	ts.Check(err)
	p, err := fleet.NewPublisher(e, nc, t, fleet.PublisherOptions{})
	ts.Check(err)
	for n := 1; n <= lines; n++ {
		e.Producer().SubmitText(ch, fmt.Sprintf("line %d\n", n))
		if n%per == 0 || n == lines {
			e.Tick()
			p.Take(true)
		}
	}
	e.End()
	e.Tick()
	p.Take(true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if rep := p.Close(ctx); rep.LostFrames != 0 || rep.Messages == 0 {
		ts.Fatalf("natspub: %+v", rep)
	}
}

// natsforge URL NODE#LIFE FILE…: publish one message on the subject of
// stream NODE#LIFE whose body is the files concatenated, as a client
// allowed to publish there could: e.g. a segment of its own stream and a
// forged one of another stream behind it.
func cmdNatsforge(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 {
		ts.Fatalf("usage: natsforge URL NODE#LIFE FILE…")
	}
	id, err := frames.ParseStreamID(args[1])
	ts.Check(err)
	t, err := fleet.ParseTarget(args[0])
	ts.Check(err)
	var body []byte
	for _, f := range args[2:] {
		b, err := os.ReadFile(ts.MkAbs(f))
		ts.Check(err)
		body = append(body, b...)
	}
	nc, err := fleet.Connect(t, fleet.Auth{}, fleet.ConnectOptions{Name: "natsforge"})
	ts.Check(err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	ts.Check(err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = js.Publish(ctx, fleet.Subject(t.Prefix, id), body)
	ts.Check(err)
}

package views

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ds-telemetry/ds/pkg/frames"
	"github.com/ds-telemetry/ds/pkg/segments"
)

// The captures under pkg/views/testdata are made by this file and never
// edited by hand: `DS_UPDATE=1 go test ./pkg/views` rewrites them. Without
// DS_UPDATE the test checks that the files on disk are what it makes. The
// cmd/ds scripts (log_drops, info_drops, gaps_basic, gaps_transport,
// log_transport, log_clock) read them; their expected outputs
// live in those scripts. They are not under the repository's testdata/
// because pkg/segments requires every capture there to come from its own
// generator.
//
//	drops.dss           a writer that accounts its losses in place: health
//	                    records carrying "loss", a progress line cut by a
//	                    stderr line, clock records before the frames of
//	                    their drain tick
//	clockstep.dss       a wall clock set back 5 s during the capture: the
//	                    datastream.clock record at position 5 reads
//	                    4.9 s before the one at 3, 100 ms later by the
//	                    monotonic clock
//	drops-counters.dss  an older writer: health records with cumulative
//	                    counters only, and a gap
//	transport.dss       a copy read back from NATS: positions 4–7 missing
//	                    (a gap), and at position 9 the datastream.transport
//	                    record that names them and says why
//	transport-file.dss  the capture file of the same run: every position,
//	                    and the same record
//	outage.dss          a copy read back from NATS after a longer outage:
//	                    positions 4–9 missing (three health records
//	                    among them), the datastream.transport record at
//	                    10, and at 11 a health record whose counter says
//	                    the NATS subscriber lost 6 frame copies
//	outage-file.dss     the capture file of the same run: every position,
//	                    the health records at 5, 7, 9 and 11 each
//	                    counting copies the NATS subscriber lost, and the
//	                    same record
func viewFixtures(t *testing.T) map[string][]byte {
	t.Helper()
	label := "job"
	clock := func(ms int64) string { return clockAt(ms, ms) }
	// write makes a capture of stream s; extra declares channel 6,
	// datastream.transport, too.
	write := func(s frames.StreamID, seed uint64, extra bool, payloads ...string) []byte {
		desc := frames.StreamDescriptor{Stream: s, Label: &label, Origin: frames.OriginBootstrap}
		catalog := []frames.ChannelDescriptor{
			{Stream: s, ID: 1, Name: "proc.job.stdout", Content: frames.TextStream()},
			{Stream: s, ID: 2, Name: "proc.job.stderr", Content: frames.TextStream()},
			{Stream: s, ID: 3, Name: "proc.job.lifecycle", Content: frames.JSONRecord("proc.lifecycle")},
			{Stream: s, ID: 4, Name: "datastream.clock", Content: frames.JSONRecord("datastream.clock")},
			{Stream: s, ID: 5, Name: "datastream.health", Content: frames.JSONRecord("datastream.health")},
		}
		if extra {
			catalog = append(catalog, frames.ChannelDescriptor{Stream: s, ID: 6, Name: frames.TransportChannel, Content: frames.JSONRecord(frames.TransportChannel)})
		}
		var buf bytes.Buffer
		w, err := segments.NewWriter(&buf, desc, catalog, segments.WriterOptions{WriterID: "ds fixture", Rand: rand.NewChaCha8([32]byte{0: byte(seed)})})
		if err != nil {
			t.Fatal(err)
		}
		for pos, p := range payloads {
			if p == "" {
				continue // a position lost downstream: a gap
			}
			var ch frames.ChannelID
			if _, err := fmt.Sscanf(p, "%d ", &ch); err != nil {
				t.Fatal(err)
			}
			_, payload, _ := bytes.Cut([]byte(p), []byte(" "))
			if err := w.WriteFrame(frames.Frame{Channel: ch, Position: frames.Position(pos), Payload: payload}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	// The run of transport.dss and transport-file.dss: positions 4–7
	// (every kind of frame) did not reach the NATS server.
	edge := frames.StreamID{Node: "edge-3", Life: 1732953600123456789}
	const lost = `6 {"output":"nats://127.0.0.1:4222/ds","lost":{"from":4,"to":7,"frames":4,"reason":"server unreachable: nats: connection closed","since_unix_ms":1732953600100,"until_unix_ms":1732953600800}}`
	run := []string{
		"4 " + clock(0),
		`3 {"event":"started","pid":4242}`,
		"1 line 2\n",
		"1 line 3\n",
		"4 " + clock(100), // 4–7: lost on the way to NATS
		"1 line 5\n",
		"2 warning 6\n",
		`5 {"assigned":8,"drained":8,"mux_dropped":0,"subscriber_dropped":0,"subscribers":[{"name":"file","dropped":0},{"name":"nats","dropped":0}]}`,
		"4 " + clock(800),
		lost,
		"1 line 10\n",
		`3 {"event":"exited","status":{"kind":"code","value":0}}`,
	}
	natsCopy := slices.Clone(run)
	for pos := 4; pos <= 7; pos++ {
		natsCopy[pos] = ""
	}
	// The run of outage.dss and outage-file.dss: positions 4–9 did not
	// reach the NATS server, and the publisher counted each copy it lost
	// (frames.Subscription.Lost), so that every health record of the
	// outage shows the NATS subscriber's drops.
	health := func(assigned, lost int) string {
		return fmt.Sprintf(`5 {"assigned":%d,"drained":%d,"mux_dropped":0,"subscriber_dropped":%d,"subscribers":[{"name":"capture","dropped":0},{"name":"nats://127.0.0.1:4222/ds","dropped":%d}]}`, assigned, assigned, lost, lost)
	}
	outage := []string{
		"4 " + clock(0),
		`3 {"event":"started","pid":4242}`,
		"1 line 2\n",
		health(4, 0),
		"1 line 4\n", // 4–9: lost on the way to NATS
		health(6, 1),
		"1 line 6\n",
		health(8, 3),
		"1 line 8\n",
		health(10, 5),
		`6 {"output":"nats://127.0.0.1:4222/ds","lost":{"from":4,"to":9,"frames":6,"reason":"server unreachable: nats: connection closed","since_unix_ms":1732953600100,"until_unix_ms":1732953601900}}`,
		health(12, 6),
		"1 line 12\n",
		`3 {"event":"exited","status":{"kind":"code","value":0}}`,
	}
	outageCopy := slices.Clone(outage)
	for pos := 4; pos <= 9; pos++ {
		outageCopy[pos] = ""
	}
	edge4 := frames.StreamID{Node: "edge-4", Life: 1732953600123456789}
	return map[string][]byte{
		"transport.dss":      write(edge, 3, true, natsCopy...),
		"transport-file.dss": write(edge, 3, true, run...),
		"outage.dss":         write(edge4, 4, true, outageCopy...),
		"outage-file.dss":    write(edge4, 4, true, outage...),
		"drops.dss": write(frames.StreamID{Node: "ci-7", Life: 1732953600123456789}, 1, false,
			"4 "+clock(0),
			`3 {"event":"started","pid":4242}`,
			"1 building\n",
			"1 \rprogress 1/3",
			`5 {"assigned":4,"drained":4,"mux_dropped":4,"unknown_channel":0,"bitbucketed":0,"subscriber_dropped":0,"pending":0,"subscribers":[{"name":"file","dropped":0}],"loss":{"frames":4,"bytes":512,"reason":"queue full"}}`,
			"4 "+clock(100),
			"1 \rprogress 3/3",
			"2 FAIL: x\n",
			"1 \n",
			`3 {"event":"exited","status":{"kind":"code","value":1}}`,
			"4 "+clock(150),
			`5 {"assigned":11,"drained":11,"mux_dropped":4,"unknown_channel":0,"bitbucketed":0,"subscriber_dropped":0,"pending":0,"subscribers":[{"name":"file","dropped":0}]}`,
		),
		"clockstep.dss": write(frames.StreamID{Node: "ci-9", Life: 1732953600123456789}, 5, false,
			"4 "+clockAt(0, 0),
			`3 {"event":"started","pid":4242}`,
			"1 step 1\n",
			"4 "+clockAt(100, 100),
			"1 step 2\n",
			"4 "+clockAt(200-5000, 200), // the wall clock set back 5 s
			"1 step 3\n",
			"4 "+clockAt(300-5000, 300),
			"1 step 4\n",
			`3 {"event":"exited","status":{"kind":"code","value":0}}`,
		),
		"drops-counters.dss": write(frames.StreamID{Node: "ci-old", Life: 1732953600123456789}, 2, false,
			"4 "+clock(0),
			"1 line 1\n",
			"1 line 2\n",
			`5 {"assigned":3,"drained":3,"mux_dropped":0,"subscriber_dropped":0,"subscribers":[{"name":"file","dropped":0}]}`,
			"1 line 3\n",
			"",
			"1 line 6\n",
			`5 {"assigned":7,"drained":7,"mux_dropped":7,"subscriber_dropped":1,"subscribers":[{"name":"file","dropped":1}]}`,
			"4 "+clock(1000),
		),
	}
}

// clockAt is a datastream.clock record of fixture time: the wall clock
// unixMS and the monotonic clock monoMS after the fixtures' epoch.
func clockAt(unixMS, monoMS int64) string {
	return fmt.Sprintf(`{"unix_ns":%d,"mono_ns":%d}`, 1732953600000000000+unixMS*1e6, monoMS*1e6)
}

func TestViewFixtures(t *testing.T) {
	for name, want := range viewFixtures(t) {
		path := filepath.Join("testdata", name)
		if os.Getenv("DS_UPDATE") != "" {
			if err := os.MkdirAll("testdata", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%v (DS_UPDATE=1 go test ./pkg/views makes it)", err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what the generator makes; regenerate with DS_UPDATE=1 and review", path)
		}
	}
}

// S is the stream of ARCHITECTURE.md §8's notation.
var S = frames.StreamID{Node: "node-alpha", Life: 1}

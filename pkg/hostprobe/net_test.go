package hostprobe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

const netHeader = "Inter-|   Receive                                                |  Transmit\n" +
	" face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n"

// netT0 is the synthetic time of a first read.
var netT0 = time.Unix(1_700_000_000, 0)

func TestParseNetDev(t *testing.T) {
	eth := func(name string, c NetCounters) NetDevice { return NetDevice{Name: name, NetCounters: c} }
	tests := []parseCase[[]NetDevice]{
		{
			name: "conformance 5.4",
			in: netHeader + "    lo: 100 2 0 0 0 0 0 0 200 3 0 0 0 0 0 0\n" +
				"enp0s3: 123456 789 1 2 0 0 0 0 654321 987 3 4 0 0 0 0\n" +
				"malformed: 1 2 3\n",
			want: []NetDevice{
				eth("lo", NetCounters{RxBytes: 100, RxPackets: 2, TxBytes: 200, TxPackets: 3}),
				eth("enp0s3", NetCounters{RxBytes: 123456, RxPackets: 789, RxErrors: 1, RxDropped: 2, TxBytes: 654321, TxPackets: 987, TxErrors: 3, TxDropped: 4}),
			},
		},
		{
			name: "wide counter right after the colon",
			in:   netHeader + "enp0s31f6:18446744073709551615 5 0 0 0 0 0 0 7 8 0 0 0 0 0 0",
			want: []NetDevice{eth("enp0s31f6", NetCounters{RxBytes: 1<<64 - 1, RxPackets: 5, TxBytes: 7, TxPackets: 8})},
		},
		{
			name: "columns that only a full parse tells apart",
			in:   netHeader + "e: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n",
			want: []NetDevice{eth("e", NetCounters{RxBytes: 1, RxPackets: 2, RxErrors: 3, RxDropped: 4, TxBytes: 9, TxPackets: 10, TxErrors: 11, TxDropped: 12})},
		},
		{
			name: "tabs and CRLF",
			in:   strings.ReplaceAll(netHeader, "\n", "\r\n") + "\teth0:\t1 2 0 0 0 0 0 0\t3 4 0 0 0 0 0 0\r\n",
			want: []NetDevice{eth("eth0", NetCounters{RxBytes: 1, RxPackets: 2, TxBytes: 3, TxPackets: 4})},
		},
		{
			name: "malformed lines skipped",
			in: netHeader +
				"seventeen: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n" +
				"overflow: 18446744073709551616 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n" +
				"negative: -1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n" +
				": 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n" +
				"nocolon 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n" +
				"hex: 0x1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n" +
				"two words: 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n" +
				"a/b: 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n" +
				"\n" +
				"ok: 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
			want: []NetDevice{eth("ok", NetCounters{RxBytes: 1})},
		},
		{name: "header only", in: netHeader, want: []NetDevice{}},
		{name: "header only, no final newline", in: strings.TrimSuffix(netHeader, "\n"), want: []NetDevice{}},
		{name: "empty", in: "", wantErr: "parse /proc/net/dev: line 1: not a header line"},
		{name: "one header line", in: "Inter-|   Receive |  Transmit\n", wantErr: "line 2: not a header line"},
		{name: "no header", in: "eth0: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n", wantErr: "line 1: not a header line"},
		{name: "second header missing", in: "Inter-|\neth0: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n", wantErr: "line 2: not a header line"},
	}
	runParseCases(t, ParseNetDev, tests)
	// With the error, no devices: not an empty list.
	for _, tt := range tests {
		if tt.wantErr == "" {
			continue
		}
		if got, _ := ParseNetDev(strings.NewReader(tt.in)); got != nil {
			t.Errorf("%s: got %v with the error, want nil", tt.name, got)
		}
	}
}

type netErrReader struct{}

func (netErrReader) Read([]byte) (int, error) { return 0, errors.New("boom") }

func TestParseNetDevReadError(t *testing.T) {
	if _, err := ParseNetDev(netErrReader{}); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("err = %v, want the reader's", err)
	}
}

func TestParseNetDevTooLarge(t *testing.T) {
	row := "eth0: 1 2 0 0 0 0 0 0 3 4 0 0 0 0 0 0\n"
	big := netHeader + strings.Repeat(row, maxProcFile/len(row)+1)
	devs, err := ParseNetDev(strings.NewReader(big))
	if !errors.Is(err, errTooLarge) || !strings.HasPrefix(err.Error(), "read /proc/net/dev: ") || devs != nil {
		t.Fatalf("%d MiB: got %d devices, err %v; want the 16 MiB bound", len(big)>>20, len(devs), err)
	}
}

// netProber is a Prober reading the fixture tree testdata/net/<name>.
func netProber(name string) *Prober {
	dir := filepath.Join("testdata", "net", name)
	return &Prober{ProcRoot: dir, SysRoot: filepath.Join(dir, "sys")}
}

// netReadStep points p at step i of the fixture sequence testdata/net/<seq>/<i>
// and reads at netT0 + at.
func netReadStep(t *testing.T, p *Prober, seq string, i int, at time.Duration) *NetRecord {
	t.Helper()
	p.ProcRoot = filepath.Join("testdata", "net", seq, strconv.Itoa(i))
	p.SysRoot = filepath.Join(p.ProcRoot, "sys") // never the host's /sys
	rec, err := p.ReadNet(netT0.Add(at))
	if err != nil {
		t.Fatalf("%s step %d: %v", seq, i, err)
	}
	return rec
}

func netFindIface(t *testing.T, rec *NetRecord, name string) NetInterface {
	t.Helper()
	for _, ni := range rec.Interfaces {
		if ni.Name == name {
			return ni
		}
	}
	t.Fatalf("no interface %q in %+v", name, rec.Interfaces)
	return NetInterface{}
}

// netRatesOf gives ni's rates in the order of NetCounters.array; a null rate
// is -1.
func netRatesOf(ni NetInterface) [8]float64 {
	var r [8]float64
	for i, p := range []*float64{ni.RxBytesPerS, ni.RxPacketsPerS, ni.RxErrorsPerS, ni.RxDroppedPerS, ni.TxBytesPerS, ni.TxPacketsPerS, ni.TxErrorsPerS, ni.TxDroppedPerS} {
		r[i] = -1
		if p != nil {
			r[i] = *p
		}
	}
	return r
}

var netNullRates = [8]float64{-1, -1, -1, -1, -1, -1, -1, -1}

func TestReadNetConformance(t *testing.T) {
	p := netProber("conformance")
	rec, err := p.ReadNet(netT0)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Schema != SchemaNet || rec.SampleUnixMS != netT0.UnixMilli() || rec.IntervalMS != nil {
		t.Errorf("head = %+v", rec.Sample)
	}
	var names []string
	for _, ni := range rec.Interfaces {
		names = append(names, ni.Name)
		if ni.Reset != ResetFirst || netRatesOf(ni) != netNullRates || ni.Incarnation != 1 {
			t.Errorf("%s: first read: reset %q, rates %v, incarnation %d; want %q, all null, 1", ni.Name, ni.Reset, netRatesOf(ni), ni.Incarnation, ResetFirst)
		}
	}
	if !reflect.DeepEqual(names, []string{"lo", "enp0s3"}) {
		t.Fatalf("interfaces %v, want exactly lo and enp0s3", names)
	}
	c := netFindIface(t, rec, "enp0s3").NetCounters
	if c.RxErrors != 1 || c.RxDropped != 2 || c.TxErrors != 3 || c.TxDropped != 4 || c.RxBytes != 123456 || c.TxPackets != 987 {
		t.Errorf("enp0s3 = %+v", c)
	}
	if rec.Gone != nil {
		t.Errorf("gone = %v on a first read", rec.Gone)
	}
}

func TestReadNetRates(t *testing.T) {
	p := &Prober{}
	netReadStep(t, p, "rates", 1, 0)
	rec := netReadStep(t, p, "rates", 2, 2*time.Second)
	if rec.IntervalMS == nil || *rec.IntervalMS != 2000 {
		t.Errorf("interval_ms = %v, want 2000", rec.IntervalMS)
	}
	eth := netFindIface(t, rec, "eth0")
	// rx 50000→150000 B, 100→300 pkts, errs 1→2, drop 2→4; tx 80000→100000, 200→250, 3→3, 4→6; over 2 s.
	if want := [8]float64{50000, 100, 0.5, 1, 10000, 25, 0, 1}; netRatesOf(eth) != want || eth.Reset != "" || eth.Wrapped != nil {
		t.Errorf("eth0 rates %v reset %q wrapped %v, want %v", netRatesOf(eth), eth.Reset, eth.Wrapped, want)
	}
	if eth.RxBytes != 150000 || eth.TxDropped != 6 {
		t.Errorf("eth0 counters %+v, want this read's", eth.NetCounters)
	}
	if d := netFindIface(t, rec, "docker0"); netRatesOf(d) != [8]float64{} {
		t.Errorf("docker0 standing still: rates %v, want all 0 (not null)", netRatesOf(d))
	}
	var names []string
	for _, ni := range rec.Interfaces {
		names = append(names, ni.Name)
	}
	if !reflect.DeepEqual(names, []string{"lo", "eth0", "docker0"}) {
		t.Errorf("order %v, want the file's", names)
	}
}

func TestReadNetNoTime(t *testing.T) {
	for _, at := range []time.Duration{0, -time.Second} {
		p := &Prober{}
		netReadStep(t, p, "rates", 1, 0)
		rec := netReadStep(t, p, "rates", 2, at)
		for _, ni := range rec.Interfaces {
			if ni.Reset != ResetNoTime || netRatesOf(ni) != netNullRates {
				t.Errorf("at %v: %s reset %q rates %v, want %q and nulls", at, ni.Name, ni.Reset, netRatesOf(ni), ResetNoTime)
			}
		}
		// The baseline moved on: the next read has rates again.
		p.ProcRoot = filepath.Join("testdata", "net", "rates", "2")
		rec, err := p.ReadNet(netT0.Add(at + time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if eth := netFindIface(t, rec, "eth0"); eth.Reset != "" || netRatesOf(eth) != [8]float64{} {
			t.Errorf("after no_time: eth0 reset %q rates %v, want 0s", eth.Reset, netRatesOf(eth))
		}
	}
}

func TestReadNetWrap(t *testing.T) {
	t.Run("32-bit rx_bytes", func(t *testing.T) {
		p := &Prober{}
		netReadStep(t, p, "wrap32", 1, 0)
		eth := netFindIface(t, netReadStep(t, p, "wrap32", 2, time.Second), "eth0")
		// 4294967000 → 500 while packets 1000 → 1010: 2^32 − 4294967000 + 500 = 796 B.
		if want := [8]float64{796, 10, 0, 0, 1000, 10, 0, 0}; netRatesOf(eth) != want {
			t.Errorf("rates %v, want %v", netRatesOf(eth), want)
		}
		if eth.Reset != "" || !reflect.DeepEqual(eth.Wrapped, []string{"rx_bytes"}) {
			t.Errorf("reset %q wrapped %v, want none and [rx_bytes]", eth.Reset, eth.Wrapped)
		}
	})
	t.Run("64-bit tx_packets", func(t *testing.T) {
		p := &Prober{}
		netReadStep(t, p, "wrap64", 1, 0)
		eth := netFindIface(t, netReadStep(t, p, "wrap64", 2, 2*time.Second), "eth0")
		// tx_packets 2^64 − 6 → 4 while tx_bytes 1000 → 3000: 10 packets.
		if want := [8]float64{500, 5, 0, 0, 1000, 5, 0, 0}; netRatesOf(eth) != want {
			t.Errorf("rates %v, want %v", netRatesOf(eth), want)
		}
		if !reflect.DeepEqual(eth.Wrapped, []string{"tx_packets"}) {
			t.Errorf("wrapped %v, want [tx_packets]", eth.Wrapped)
		}
	})
}

func TestReadNetBackwards(t *testing.T) {
	// nearfall: rx_bytes 4200000000 → 4199999000 while packets rose: old
	// near 2^32, but the new value is not near 0: no wrap.
	for _, seq := range []string{"reload", "notwrap", "dropback", "nearfall"} {
		t.Run(seq, func(t *testing.T) {
			p := &Prober{}
			netReadStep(t, p, seq, 1, 0)
			eth := netFindIface(t, netReadStep(t, p, seq, 2, time.Second), "eth0")
			if eth.Reset != ResetBackwards || netRatesOf(eth) != netNullRates || eth.Wrapped != nil {
				t.Errorf("reset %q rates %v wrapped %v, want %q, all null, none", eth.Reset, netRatesOf(eth), eth.Wrapped, ResetBackwards)
			}
			if eth.Incarnation != 1 {
				t.Errorf("incarnation %d, want 1 (a reset is not a new life)", eth.Incarnation)
			}
		})
	}
	// After a reload the baseline moves on: rates again, from the new counters.
	p := &Prober{}
	netReadStep(t, p, "reload", 1, 0)
	netReadStep(t, p, "reload", 2, time.Second)
	eth := netFindIface(t, netReadStep(t, p, "reload", 3, 2*time.Second), "eth0")
	if want := [8]float64{1000, 10, 0, 0, 1000, 10, 0, 0}; netRatesOf(eth) != want || eth.Reset != "" {
		t.Errorf("after the reload: rates %v reset %q, want %v", netRatesOf(eth), eth.Reset, want)
	}
}

func TestReadNetIncarnation(t *testing.T) {
	p := &Prober{}
	netReadStep(t, p, "incarnation", 1, 0)
	rec := netReadStep(t, p, "incarnation", 2, time.Second)
	if !reflect.DeepEqual(rec.Gone, []string{"wlan0"}) {
		t.Errorf("read 2: gone %v, want [wlan0]", rec.Gone)
	}
	if n := len(rec.Interfaces); n != 2 {
		t.Errorf("read 2: %d interfaces, want 2 (a gone one is not reported with its last values)", n)
	}
	rec = netReadStep(t, p, "incarnation", 3, 2*time.Second)
	if rec.Gone != nil {
		t.Errorf("read 3: gone %v, want none", rec.Gone)
	}
	w := netFindIface(t, rec, "wlan0")
	if w.Incarnation != 2 || w.Reset != ResetNewLife || netRatesOf(w) != netNullRates {
		t.Errorf("read 3: wlan0 incarnation %d reset %q rates %v; want 2, %q, nulls", w.Incarnation, w.Reset, netRatesOf(w), ResetNewLife)
	}
	if eth := netFindIface(t, rec, "eth0"); eth.Incarnation != 1 || eth.Reset != "" {
		t.Errorf("read 3: eth0 incarnation %d reset %q", eth.Incarnation, eth.Reset)
	}
	w = netFindIface(t, netReadStep(t, p, "incarnation", 4, 3*time.Second), "wlan0")
	if want := [8]float64{1000, 10, 0, 0, 500, 5, 0, 0}; w.Incarnation != 2 || w.Reset != "" || netRatesOf(w) != want {
		t.Errorf("read 4: wlan0 incarnation %d reset %q rates %v; want 2, none, %v", w.Incarnation, w.Reset, netRatesOf(w), want)
	}
}

func TestReadNetInterfaces(t *testing.T) {
	p := netProber("rates/1")
	p.Interfaces = []string{"eth*", "docker?"}
	rec, err := p.ReadNet(netT0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ni := range rec.Interfaces {
		names = append(names, ni.Name)
	}
	if !reflect.DeepEqual(names, []string{"eth0", "docker0"}) {
		t.Errorf("interfaces %v, want eth0 and docker0", names)
	}
	// A filtered-out interface is never gone.
	p.ProcRoot = filepath.Join("testdata", "net", "wrap32", "1")
	if rec, err = p.ReadNet(netT0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rec.Gone, []string{"docker0"}) {
		t.Errorf("gone %v, want [docker0]", rec.Gone)
	}

	p.Interfaces = []string{"eth*", "en["}
	if _, err := p.ReadNet(netT0.Add(2 * time.Second)); !errors.Is(err, path.ErrBadPattern) || !strings.Contains(err.Error(), `"en["`) {
		t.Errorf("bad pattern: err = %v, want ErrBadPattern naming it", err)
	}
}

func TestCheckInterfacePatterns(t *testing.T) {
	for _, ok := range [][]string{nil, {"*"}, {"eth*", "en[a-z]*", `veth\*`}} {
		if err := CheckInterfacePatterns(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range [][]string{{"["}, {"eth*", "x[a-"}, {`a\`}} {
		if err := CheckInterfacePatterns(bad); !errors.Is(err, path.ErrBadPattern) {
			t.Errorf("%q: err = %v, want ErrBadPattern", bad, err)
		}
	}
}

func TestReadNetErrors(t *testing.T) {
	p := &Prober{}
	netReadStep(t, p, "rates", 1, 0)
	for _, root := range []string{"testdata/net/noheader", "testdata/net/nosuchdir"} {
		p.ProcRoot = root
		if rec, err := p.ReadNet(netT0.Add(time.Second)); err == nil || rec != nil {
			t.Errorf("%s: got %v, %v; want an error", root, rec, err)
		}
	}
	// A failed read keeps the previous one: the next covers both intervals.
	rec := netReadStep(t, p, "rates", 2, 2*time.Second)
	if rec.IntervalMS == nil || *rec.IntervalMS != 2000 || netFindIface(t, rec, "eth0").Reset != "" {
		t.Errorf("after failed reads: interval %v, eth0 reset %q", rec.IntervalMS, netFindIface(t, rec, "eth0").Reset)
	}
	p = netProber("empty")
	if rec, err := p.ReadNet(netT0); err != nil || rec.Interfaces == nil || len(rec.Interfaces) != 0 {
		t.Errorf("header only: %+v, %v; want an empty list", rec, err)
	}

	// The errors name the file read, not /proc/net/dev.
	root := t.TempDir()
	file := filepath.Join(root, "net", "dev")
	p = &Prober{ProcRoot: root}
	if _, err := p.ReadNet(netT0); err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("no file: err = %v, want it to name %s", err, file)
	}
	writeNetDev(t, root)
	if err := os.WriteFile(file, []byte("garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ReadNet(netT0); err == nil || !strings.HasPrefix(err.Error(), "parse "+file+": line 1: not a header line") {
		t.Errorf("bad header: err = %v, want \"parse %s: line 1: …\"", err, file)
	}
}

// writeNetDev writes a /proc/net/dev of the given rows under root.
func writeNetDev(t *testing.T, root string, rows ...string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(root, "net"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "net", "dev"), []byte(netHeader+strings.Join(rows, "")), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadNetForgetsLongGone(t *testing.T) {
	root := t.TempDir()
	p := &Prober{ProcRoot: root}
	// veth0, veth1, … each live for one read, as containers come and go.
	n := maxGoneInterfaces + 10
	for i := range n {
		writeNetDev(t, root, fmt.Sprintf("veth%d: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n", i))
		if _, err := p.ReadNet(netT0.Add(time.Duration(i) * time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(p.net.ifaces); got > maxGoneInterfaces+1 {
		t.Errorf("%d interfaces remembered, want at most %d", got, maxGoneInterfaces+1)
	}
	// The longest gone was forgotten: back, it is a first read again;
	// a recently gone one is a new incarnation.
	writeNetDev(t, root, "veth0: 5 5 0 0 0 0 0 0 5 5 0 0 0 0 0 0\n", fmt.Sprintf("veth%d: 5 5 0 0 0 0 0 0 5 5 0 0 0 0 0 0\n", n-3))
	rec, err := p.ReadNet(netT0.Add(time.Duration(n) * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if v := netFindIface(t, rec, "veth0"); v.Incarnation != 1 || v.Reset != ResetFirst {
		t.Errorf("veth0: incarnation %d reset %q, want 1 and %q", v.Incarnation, v.Reset, ResetFirst)
	}
	if v := netFindIface(t, rec, fmt.Sprintf("veth%d", n-3)); v.Incarnation != 2 || v.Reset != ResetNewLife {
		t.Errorf("veth%d: incarnation %d reset %q, want 2 and %q", n-3, v.Incarnation, v.Reset, ResetNewLife)
	}
}

// TestReadNetWrapRule checks each condition of the wrap rule (see
// wrapMargin32) at its edge: a fall is a wrap only when the old value was
// near the width, the new one is near 0, the pair rose, and the pair's
// delta can explain the delta across the wrap.
func TestReadNetWrapRule(t *testing.T) {
	const top64 = 1<<64 - 1
	type ctr struct{ rxB, rxP, txB, txP uint64 }
	tests := []struct {
		name      string
		prev, cur ctr
		wrapped   []string // nil and deltas nil: ResetBackwards
		deltas    []uint64 // rx bytes, rx packets, tx bytes, tx packets
	}{
		{
			name: "reported: 32-bit fell by 1000, packets +10",
			prev: ctr{4200000000, 1000, 0, 0}, cur: ctr{4199999000, 1010, 0, 0},
		},
		{
			name: "32-bit old near the width, new not below 2^28",
			prev: ctr{4294967000, 1000, 0, 0}, cur: ctr{1 << 28, 100000, 0, 0},
		},
		{
			name: "32-bit new just below 2^28: a wrap when the packets explain it",
			prev: ctr{4294967000, 1000, 0, 0}, cur: ctr{1<<28 - 1, 1000 + 4096, 0, 0},
			wrapped: []string{"rx_bytes"}, deltas: []uint64{1<<28 - 1 + 296, 4096, 0, 0},
		},
		{
			name: "32-bit old just outside the margin",
			prev: ctr{1<<32 - 1<<28 - 1, 1000, 0, 0}, cur: ctr{10, 1010, 0, 0},
		},
		{
			name: "32-bit old at the margin",
			prev: ctr{1<<32 - 1<<28, 1000, 0, 0}, cur: ctr{10, 5097, 0, 0},
			wrapped: []string{"rx_bytes"}, deltas: []uint64{1<<28 + 10, 4097, 0, 0},
		},
		{
			name: "32-bit bytes at most 64 KiB a packet plus 64 KiB",
			prev: ctr{4294967000, 1000, 0, 0}, cur: ctr{2*65536 - 296, 1001, 0, 0},
			wrapped: []string{"rx_bytes"}, deltas: []uint64{2 * 65536, 1, 0, 0},
		},
		{
			name: "32-bit bytes one more than the packets explain",
			prev: ctr{4294967000, 1000, 0, 0}, cur: ctr{2*65536 - 295, 1001, 0, 0},
		},
		{
			name: "32-bit wrap while the packets stood still",
			prev: ctr{4294967000, 1000, 0, 0}, cur: ctr{500, 1000, 0, 0},
		},
		{
			name: "64-bit packets at most one a byte",
			prev: ctr{0, 0, 1000, top64 - 5}, cur: ctr{0, 0, 1106, 100},
			wrapped: []string{"tx_packets"}, deltas: []uint64{0, 0, 106, 106},
		},
		{
			name: "64-bit packets more than the bytes",
			prev: ctr{0, 0, 1000, top64 - 5}, cur: ctr{0, 0, 1105, 100},
		},
		{
			name: "64-bit new not below 2^60",
			prev: ctr{0, 0, top64 - 10, 1}, cur: ctr{0, 0, 1 << 60, 1 << 50},
		},
		{
			name: "64-bit old just outside the margin",
			prev: ctr{0, 0, 1<<64 - 1<<60 - 1, 1}, cur: ctr{0, 0, 5, 2},
		},
		{
			name: "a fall between the widths is a reset",
			prev: ctr{1 << 40, 1, 0, 0}, cur: ctr{5, 2, 0, 0},
		},
		{
			name: "both of a pair fell: nothing rose to vouch for a wrap",
			prev: ctr{4294967000, 1<<32 - 1, 0, 0}, cur: ctr{500, 1, 0, 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			p := &Prober{ProcRoot: root}
			for i, c := range []ctr{tt.prev, tt.cur} {
				writeNetDev(t, root, fmt.Sprintf("eth0: %d %d 0 0 0 0 0 0 %d %d 0 0 0 0 0 0\n", c.rxB, c.rxP, c.txB, c.txP))
				rec, err := p.ReadNet(netT0.Add(time.Duration(i) * 100 * time.Millisecond))
				if err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					continue
				}
				eth := netFindIface(t, rec, "eth0")
				if tt.deltas == nil {
					if eth.Reset != ResetBackwards || netRatesOf(eth) != netNullRates || eth.Wrapped != nil {
						t.Errorf("reset %q rates %v wrapped %v, want %q, nulls, none", eth.Reset, netRatesOf(eth), eth.Wrapped, ResetBackwards)
					}
					return
				}
				r := netRatesOf(eth)
				got := []float64{r[0], r[1], r[4], r[5]}
				var want []float64
				for _, d := range tt.deltas {
					want = append(want, float64(d)/0.1) // 100 ms: the rate of the true delta
				}
				if eth.Reset != "" || !reflect.DeepEqual(eth.Wrapped, tt.wrapped) || !reflect.DeepEqual(got, want) {
					t.Errorf("reset %q wrapped %v rates %v, want none, %v, %v", eth.Reset, eth.Wrapped, got, tt.wrapped, want)
				}
			}
		})
	}
}

// TestReadNetTrueRates drives random histories of real counters — each
// life of the interface 32 or 64 bits wide, starting near the top so that
// growth wraps its bytes and packets, and ended by a driver reset to 0;
// now and then rx_bytes dips a little while the packets rise, as in a
// counter reset by a buggy driver — and checks every read against the
// history: after growth, each rate is the true one (across a wrap too,
// which Wrapped names); after a reset or a dip, ResetBackwards and nulls
// (a dip near 2^32 is not a wrap: the new value is not near 0). A step in which bytes and packets of one
// direction both wrapped is a reset too: nothing rose to vouch for the
// wrap (sysstat's rule).
func TestReadNetTrueRates(t *testing.T) {
	root := t.TempDir()
	p := &Prober{ProcRoot: root}
	rng := rand.New(rand.NewPCG(1, 2))
	var c [8]uint64 // NetCounters.array order
	var mask uint64 // the width of this life: 2^32 − 1 or 2^64 − 1
	newLife := func() {
		mask = 1<<64 - 1
		if rng.IntN(2) == 0 {
			mask = 1<<32 - 1
		}
		c = [8]uint64{}
		for _, i := range []int{0, 4} {
			c[i] = mask - rng.Uint64N(1<<27)   // bytes
			c[i+1] = mask - rng.Uint64N(1<<15) // packets
		}
	}
	newLife()
	var wraps, doubles, resets, dips int
	now := netT0
	for step := range 600 {
		reset := step > 0 && c[2] > 0 && rng.IntN(20) == 0
		dip := step > 0 && !reset && c[0] >= 1<<29 && rng.IntN(20) == 0
		var delta [8]uint64
		var wrapped []string
		double := false
		switch {
		case reset:
			newLife()
		case dip:
			c[0] -= 1 + rng.Uint64N(1<<20) // stays above 2^28
			c[1] = (c[1] + 1 + rng.Uint64N(100)) & mask
		case step > 0:
			for _, dir := range []int{0, 4} {
				// At most 20000 packets of at most 9000 bytes: less
				// than 2^28 bytes a step, so any wrap is near the top.
				k := rng.Uint64N(20001)
				delta[dir] = k * (64 + rng.Uint64N(9000-64+1))
				delta[dir+1] = k
				delta[dir+2] = 1 + rng.Uint64N(3) // errors: never 0 before a reset
				delta[dir+3] = rng.Uint64N(3)
				for i := dir; i < dir+4; i++ {
					old := c[i]
					c[i] = (c[i] + delta[i]) & mask
					if c[i] < old {
						wrapped = append(wrapped, netCounterNames[i])
					}
				}
			}
		}
		// Both of a pair wrapped in one step?
		for _, dir := range []int{0, 4} {
			if slices.Contains(wrapped, netCounterNames[dir]) && slices.Contains(wrapped, netCounterNames[dir+1]) {
				double = true
			}
		}
		writeNetDev(t, root, fmt.Sprintf("eth0: %d %d %d %d 0 0 0 0 %d %d %d %d 0 0 0 0\n", c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]))
		dt := time.Duration(1+rng.IntN(2000)) * time.Millisecond
		now = now.Add(dt)
		rec, err := p.ReadNet(now)
		if err != nil {
			t.Fatal(err)
		}
		eth := rec.Interfaces[0]
		switch {
		case step == 0:
			if eth.Reset != ResetFirst {
				t.Fatalf("step 0: reset %q", eth.Reset)
			}
		case reset || dip || double:
			if eth.Reset != ResetBackwards || netRatesOf(eth) != netNullRates || eth.Wrapped != nil {
				t.Fatalf("step %d (reset %v, dip %v, both of a pair wrapped %v): reset %q rates %v wrapped %v, want %q", step, reset, dip, double, eth.Reset, netRatesOf(eth), eth.Wrapped, ResetBackwards)
			}
			switch {
			case reset:
				resets++
			case dip:
				dips++
			default:
				doubles++
			}
		default:
			var want [8]float64
			for i, d := range delta {
				want[i] = float64(d) / dt.Seconds()
			}
			if eth.Reset != "" || netRatesOf(eth) != want || !reflect.DeepEqual(eth.Wrapped, wrapped) {
				t.Fatalf("step %d: reset %q rates %v wrapped %v, want none, %v, %v", step, eth.Reset, netRatesOf(eth), eth.Wrapped, want, wrapped)
			}
			wraps += len(wrapped)
		}
	}
	if wraps < 20 || resets < 10 || dips < 10 || doubles < 1 {
		t.Errorf("the history was too tame: %d wraps, %d resets, %d dips, %d double wraps", wraps, resets, dips, doubles)
	}
	t.Logf("%d wraps, %d resets, %d dips, %d double wraps", wraps, resets, dips, doubles)
}

func TestNetRecordGolden(t *testing.T) {
	p := &Prober{}
	netReadStep(t, p, "golden", 1, 0)
	rec := netReadStep(t, p, "golden", 2, 2*time.Second)
	rec.Seq = 2
	// eth0's rx_bytes wrapped at 2^32: 2^32 − 4294960000 + 12704 = 20000 B.
	if eth := netFindIface(t, rec, "eth0"); !reflect.DeepEqual(eth.Wrapped, []string{"rx_bytes"}) || *eth.RxBytesPerS != 10000 {
		t.Errorf("eth0 wrapped %v rx %v B/s, want [rx_bytes] 10000", eth.Wrapped, *eth.RxBytesPerS)
	}
	netgpuGolden(t, "net_record.json", rec)
}

// netgpuGolden compares v's indented JSON with testdata/golden/name;
// DS_UPDATE=1 rewrites the file.
func netgpuGolden(t *testing.T, name string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	file := filepath.Join("testdata", "golden", name)
	if os.Getenv("DS_UPDATE") != "" {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (DS_UPDATE=1 writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (DS_UPDATE=1 rewrites it):\ngot:\n%s\nwant:\n%s", file, got, want)
	}
}

func BenchmarkReadNet(b *testing.B) {
	root := b.TempDir()
	var rows strings.Builder
	for i := range 8 {
		fmt.Fprintf(&rows, "eth%d: 123456789 12345 0 0 0 0 0 0 987654321 54321 0 0 0 0 0 0\n", i)
	}
	if err := os.MkdirAll(filepath.Join(root, "net"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "net", "dev"), []byte(netHeader+rows.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	p := &Prober{ProcRoot: root}
	now := netT0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(100 * time.Millisecond)
		if _, err := p.ReadNet(now); err != nil {
			b.Fatal(err)
		}
	}
}

// TestReadNetRealProc reads this machine's /proc/net/dev twice, when there
// is one; skipped with -short.
func TestReadNetRealProc(t *testing.T) {
	if testing.Short() {
		t.Skip("reads the real /proc")
	}
	if _, err := os.Stat("/proc/net/dev"); err != nil {
		t.Skip(err)
	}
	p := &Prober{}
	now := time.Now()
	for i := range 2 {
		rec, err := p.ReadNet(now.Add(time.Duration(i) * 100 * time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		for _, ni := range rec.Interfaces {
			for _, r := range netRatesOf(ni) {
				if r != -1 && r < 0 {
					t.Errorf("%s: negative rate %v", ni.Name, r)
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A forward jump no link can carry (a 64-bit counter from 1e9 to near
// 2^64 with one more packet) gives null rates, not 4.6e19 bytes/s.
func TestReadNetImplausibleJump(t *testing.T) {
	prev := NetCounters{TxBytes: 1e9, TxPackets: 100}
	cur := prev
	cur.TxBytes, cur.TxPackets = 1<<64-10, 101
	ni := NetInterface{NetCounters: cur}
	if reset, _ := netRates(&ni, &prev, 0.1); reset != ResetImplausible || ni.TxBytesPerS != nil {
		t.Errorf("reset %q, tx_bytes_per_s %v; want implausible and null", reset, ni.TxBytesPerS)
	}
	// A true 100 Gbit/s stays a rate.
	cur = prev
	cur.TxBytes, cur.TxPackets = prev.TxBytes+1_250_000_000, prev.TxPackets+900_000
	ni = NetInterface{NetCounters: cur}
	if reset, _ := netRates(&ni, &prev, 0.1); reset != "" || ni.TxBytesPerS == nil || *ni.TxBytesPerS != 12.5e9 {
		t.Errorf("100 Gbit/s: reset %q, rate %v", reset, ni.TxBytesPerS)
	}
}

// TestReadNetLinkSpeed (issue 22 item 9): a rise faster than the link
// (SysRoot/class/net/NAME/speed) carries, such as 0 → 10^12 bytes in 2 s
// on a 10 Gbit/s link, is a counter reset, not 5·10^11 B/s: that rate is
// null and named in over_link_speed, the others stand, and the next read
// measures from the new counters. Traffic the link can carry stays; an
// interface of unknown speed (-1, no file) is bounded by maxNetRate only.
func TestReadNetLinkSpeed(t *testing.T) {
	p := &Prober{}
	netReadStep(t, p, "linkspeed", 1, 0)
	rec := netReadStep(t, p, "linkspeed", 2, 2*time.Second)
	eth0 := netFindIface(t, rec, "eth0")
	if want := [8]float64{-1, 500, 0, 0, 1e9, 1e6, 0, 0}; netRatesOf(eth0) != want || eth0.Reset != "" ||
		!reflect.DeepEqual(eth0.OverLinkSpeed, []string{"rx_bytes"}) || eth0.LinkSpeedMbps == nil || *eth0.LinkSpeedMbps != 10000 {
		t.Errorf("eth0: rates %v reset %q over %v speed %v; want %v, rx_bytes over 10000 Mbit/s", netRatesOf(eth0), eth0.Reset, eth0.OverLinkSpeed, eth0.LinkSpeedMbps, want)
	}
	eth1 := netFindIface(t, rec, "eth1")
	if want := [8]float64{1e8, 1e5, 0, 0, 0, 0, 0, 0}; netRatesOf(eth1) != want || eth1.OverLinkSpeed != nil {
		t.Errorf("eth1 at 800 Mbit/s of 1000: rates %v over %v, want %v", netRatesOf(eth1), eth1.OverLinkSpeed, want)
	}
	for _, name := range []string{"veth0", "eth9"} {
		ni := netFindIface(t, rec, name)
		if r := netRatesOf(ni); r[0] != 5e11 || ni.OverLinkSpeed != nil || ni.LinkSpeedMbps != nil {
			t.Errorf("%s (speed unknown): rates %v over %v speed %v, want rx 5e11 B/s unchecked", name, r, ni.OverLinkSpeed, ni.LinkSpeedMbps)
		}
	}
	rec = netReadStep(t, p, "linkspeed", 3, 3*time.Second)
	eth0 = netFindIface(t, rec, "eth0")
	if want := [8]float64{1e9, 1000, 0, 0, 1e9, 1e6, 0, 0}; netRatesOf(eth0) != want || eth0.OverLinkSpeed != nil {
		t.Errorf("eth0 after the reset: rates %v over %v, want %v", netRatesOf(eth0), eth0.OverLinkSpeed, want)
	}
}

func TestParseLinkSpeed(t *testing.T) {
	for in, want := range map[string]int64{
		"10000\n": 10000, "1000": 1000, " 25000 \n": 25000,
		"-1\n": 0, "0\n": 0, "": 0, "fast\n": 0, "1e4\n": 0, "99999999999\n": 0,
	} {
		if got := ParseLinkSpeed([]byte(in)); got != want {
			t.Errorf("ParseLinkSpeed(%q) = %d, want %d", in, got, want)
		}
	}
}

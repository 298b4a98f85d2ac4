package hostprobe

import (
	"bytes"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"time"
)

// netDevFile names /proc/net/dev in parse errors.
const netDevFile = "/proc/net/dev"

// netDevColumns is how many counters follow an interface's name in
// /proc/net/dev: 8 receive and 8 transmit columns, the kernel's format
// since Linux 2.6.
const netDevColumns = 16

// ParseNetDev parses /proc/net/dev: two header lines, then one line per
// interface, "name: 16 counters" (rx bytes packets errs drop fifo frame
// compressed multicast, tx bytes packets errs drop fifo colls carrier
// compressed). The name is what comes before the first ':' (interface
// names cannot hold ':'), trimmed; a wide counter may follow the colon
// without a space ("enp0s31f6:123456 …").
//
// It returns the interfaces in file order (the kernel's), with the
// counters [NetCounters] keeps. A line that is not "name: 16 decimal
// numbers" (too few or too many columns, a number that overflows uint64,
// an empty name or one the kernel would refuse) is skipped, not an error
// (ARCHITECTURE.md case 5.4); a file whose every interface line is skipped, or
// that has none, gives an empty list. Input that is not /proc/net/dev at
// all — fewer than two lines, or a first or second line without the
// header's '|' — is an error naming the line ("parse /proc/net/dev: line
// 1: …"), as are an error of r and input over 16 MiB ("read
// /proc/net/dev: …"). ParseNetDev has no path; [Prober.ReadNet]'s errors
// name the file it read.
func ParseNetDev(r io.Reader) ([]NetDevice, error) {
	b, err := readAllLimited(r)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", netDevFile, err)
	}
	devs := []NetDevice{}
	err = parseNetDev(b, netDevFile, func(name []byte, c *NetCounters) {
		devs = append(devs, NetDevice{Name: string(name), NetCounters: *c})
	})
	if err != nil {
		return nil, err
	}
	return devs, nil
}

// parseNetDev is ParseNetDev over a whole file, named file in errors,
// calling fn for each valid interface line with its name (which aliases
// b) and counters (valid only during the call). It does not allocate.
func parseNetDev(b []byte, file string, fn func(name []byte, c *NetCounters)) error {
	var c NetCounters
	var cols [netDevColumns]uint64
	for lineNo := 1; len(b) > 0 || lineNo <= 2; lineNo++ {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if lineNo <= 2 {
			if bytes.IndexByte(line, '|') < 0 {
				return fmt.Errorf("parse %s: line %d: not a header line (no '|'): %q", file, lineNo, clip(line))
			}
			continue
		}
		name, rest, ok := bytes.Cut(line, []byte{':'})
		name = bytes.TrimSpace(name)
		if !ok || !validIfaceName(name) || !parseUints(rest, cols[:]) {
			continue // malformed: skipped (ARCHITECTURE.md case 5.4)
		}
		c = NetCounters{
			RxBytes: cols[0], RxPackets: cols[1], RxErrors: cols[2], RxDropped: cols[3],
			TxBytes: cols[8], TxPackets: cols[9], TxErrors: cols[10], TxDropped: cols[11],
		}
		fn(name, &c)
	}
	return nil
}

// validIfaceName reports whether name can be a Linux interface name: not
// empty, and without '/', ':' or white space (the kernel's
// dev_valid_name).
func validIfaceName(name []byte) bool {
	return len(name) > 0 && !bytes.ContainsAny(name, "/: \t\n\v\f\r")
}

// parseUints parses exactly len(dst) unsigned decimal numbers, separated
// by spaces or tabs, from b into dst (with tokField and tokUint); it
// reports false for anything else.
func parseUints(b []byte, dst []uint64) bool {
	for i := range dst {
		var f []byte
		f, b = tokField(b)
		v, ok := tokUint(f)
		if !ok {
			return false
		}
		dst[i] = v
	}
	f, _ := tokField(b)
	return len(f) == 0
}

// clip shortens a line quoted in an error.
func clip(b []byte) []byte {
	if len(b) > 60 {
		return b[:60]
	}
	return b
}

// CheckInterfacePatterns reports the first of patterns that is not a
// valid path.Match pattern (the syntax of [Prober.Interfaces]), as an
// error wrapping path.ErrBadPattern; nil when all are valid. A CLI calls
// it up front; [Prober.ReadNet] returns the same error.
func CheckInterfacePatterns(patterns []string) error {
	for _, pat := range patterns {
		if _, err := path.Match(pat, ""); err != nil {
			return fmt.Errorf("interface pattern %q: %w", pat, err)
		}
	}
	return nil
}

// netState is ReadNet's memory of the previous read: every interface seen
// in this run, by name.
type netState struct {
	prev   time.Time // the previous successful read; zero before the first
	reads  uint64    // successful reads so far
	ifaces map[string]*netIface
}

// netIface is what ReadNet remembers of one interface.
type netIface struct {
	name        string
	incarnation int
	counters    NetCounters // at the last read that saw it
	seenRead    uint64      // the read that last saw it
	speedMbps   int64       // SysRoot/class/net/NAME/speed at speedRead; ≤ 0: unknown
	speedRead   uint64      // the read that read speedMbps; 0: never
}

// maxGoneInterfaces bounds how many interfaces that went away ReadNet
// keeps in memory (to count their incarnations): a container host makes
// and drops veth interfaces all day. Past it, the longest gone are
// forgotten; one of those that comes back starts again at incarnation 1,
// reset "first".
const maxGoneInterfaces = 256

// Counter widths and margins of sysstat's wrap rule, as ReadNet applies
// it: a counter that fell is taken to have wrapped at width w only when
//
//   - its old value was at least 2^w − m (and, for 32 bits, below 2^32)
//     and its new value is below m, where m is wrapMargin32 = 2^28 (the
//     last 1/16 of a 32-bit range: 256 MiB of bytes) or wrapMargin64 =
//     2^60: a real wrap restarts near 0;
//   - its pair counter (packets for bytes, bytes for packets) rose; and
//   - the delta across the wrap, new + 2^w − old, is one the pair's delta
//     can explain: bytes at most maxPacketBytes per packet, plus one
//     packet's worth (a packet counted in one read, its bytes in the
//     next); packets at most one per byte, as a packet has at least one.
//
// Otherwise the fall is a reset. sysstat itself (check_net_dev_reg) asks
// only for an old value above half the width; the narrower margins and
// the checks on the new value and the delta keep a counter that was merely
// large, and then fell a little or was reset, from passing as a wrap.
const (
	wrapMargin32   = 1 << 28
	wrapMargin64   = 1 << 60
	maxPacketBytes = 1 << 16 // the largest IP packet, 64 KiB (also a GSO/GRO one)
)

// ReadNet reads ProcRoot/net/dev and returns a host.net record: for each
// interface (those matching [Prober.Interfaces], in the file's order) its
// cumulative counters and their rates per second over the interval since
// the previous read. It returns an error, and keeps its previous read,
// when the file cannot be read or is not /proc/net/dev (the error names
// the file: "parse /host/proc/net/dev: line 1: …"), or a pattern of
// Interfaces is bad (see [CheckInterfacePatterns]).
//
// The rates of an interface are null, with the reason in Reset, on its
// first read (ResetFirst); when no time passed since the previous read
// (ResetNoTime); when a counter went backwards (ResetBackwards: a driver
// reload or a counter reset, not a wrap; the baseline moves on, and the
// next read has rates again); and when the interface was gone at the
// previous read and is back, as a new incarnation (ResetNewLife; its old
// counters are never compared). A counter that fell is instead counted
// across a wrap, and named in Wrapped, when sysstat's wrap rule holds (as
// narrowed at wrapMargin32): its old value was within 2^28 of 2^32 (a
// 32-bit counter) and its new value is below 2^28, or the old within 2^60
// of 2^64 and the new below 2^60; its pair (packets for bytes, bytes for
// packets) rose; and the delta across the wrap, new + 2^32 − old or new +
// 2^64 − old, is at most 64 KiB per packet of the pair's delta plus 64
// KiB (bytes), or at most the pair's delta (packets). An interface in
// the previous read and not in this one is named in Gone (sorted by
// name); it is not listed with its last values. No rate is ever negative.
// A line repeating a name is left out.
func (p *Prober) ReadNet(now time.Time) (*NetRecord, error) {
	file := p.procPath("net", "dev")
	b, err := readFile(file)
	if err != nil {
		return nil, err // an *fs.PathError naming file
	}
	if err := CheckInterfacePatterns(p.Interfaces); err != nil {
		return nil, err
	}
	st := &p.net
	if st.ifaces == nil {
		st.ifaces = make(map[string]*netIface)
	}
	rec := &NetRecord{Sample: Sample{Schema: SchemaNet}, Interfaces: []NetInterface{}}
	rec.stamp(now, st.prev)
	dt := now.Sub(st.prev).Seconds()
	read := st.reads + 1
	err = parseNetDev(b, file, func(name []byte, c *NetCounters) {
		if len(p.Interfaces) > 0 && !matchAny(p.Interfaces, name) {
			return
		}
		ifc := st.ifaces[string(name)]
		if ifc != nil && ifc.seenRead == read {
			return // a second line of the same name: the first one counts
		}
		ni := NetInterface{NetCounters: *c}
		switch {
		case ifc == nil:
			ifc = &netIface{name: string(name), incarnation: 1}
			st.ifaces[ifc.name] = ifc
			ni.Reset = ResetFirst
		case ifc.seenRead != st.reads:
			ifc.incarnation++
			ni.Reset = ResetNewLife
		case dt <= 0:
			ni.Reset = ResetNoTime
		default:
			ni.Reset, ni.Wrapped = netRates(&ni, &ifc.counters, dt)
			if ni.Reset == "" {
				p.capLinkSpeed(&ni, ifc, read, dt)
			}
		}
		ni.Name = ifc.name
		ni.Incarnation = ifc.incarnation
		ifc.counters = *c
		ifc.seenRead = read
		rec.Interfaces = append(rec.Interfaces, ni)
	})
	if err != nil {
		return nil, err // a header error: no interface line was seen, st is as it was
	}
	gone := 0
	for name, ifc := range st.ifaces {
		if ifc.seenRead == st.reads && st.reads > 0 {
			rec.Gone = append(rec.Gone, name)
		}
		if ifc.seenRead != read {
			gone++
		}
	}
	slices.Sort(rec.Gone)
	if gone > maxGoneInterfaces {
		st.forget(gone - maxGoneInterfaces)
	}
	st.reads = read
	st.prev = now
	return rec, nil
}

// matchAny reports whether name matches one of patterns, which
// CheckInterfacePatterns has found valid.
func matchAny(patterns []string, name []byte) bool {
	for _, pat := range patterns {
		if ok, _ := path.Match(pat, string(name)); ok {
			return true
		}
	}
	return false
}

// forget drops the n interfaces gone the longest.
func (st *netState) forget(n int) {
	gone := make([]*netIface, 0, len(st.ifaces))
	for _, ifc := range st.ifaces {
		if ifc.seenRead != st.reads+1 {
			gone = append(gone, ifc)
		}
	}
	slices.SortFunc(gone, func(a, b *netIface) int {
		if a.seenRead != b.seenRead {
			if a.seenRead < b.seenRead {
				return -1
			}
			return 1
		}
		if a.name < b.name {
			return -1
		}
		if a.name > b.name {
			return 1
		}
		return 0
	})
	for _, ifc := range gone[:n] {
		delete(st.ifaces, ifc.name)
	}
}

// Link-speed bounds (capLinkSpeed). A driver may refresh its counters
// only every second or two, so that a short interval sees up to that much
// traffic at once: a byte delta is beyond the link when it exceeds what
// the link carries in dt + linkStatsLagS seconds, times linkMargin.
// Packets are bounded by the smallest Ethernet frame on the wire (64
// bytes plus 20 of preamble and gap). The speed file is read again every
// speedRereads reads, and only when a rate is high enough to matter
// (above minCheckedBytesPerS or minCheckedPacketsPerS).
const (
	linkStatsLagS         = 2.0
	linkMargin            = 1.1
	minFrameWireBytes     = 84
	speedRereads          = 64
	minCheckedBytesPerS   = 1e6
	minCheckedPacketsPerS = 1e4
)

// capLinkSpeed nulls the byte and packet rates of ni that its link,
// whose speed is SysRoot/class/net/NAME/speed in Mbit/s (when the file
// is there and says a positive speed: virtual and down interfaces say
// -1 or nothing), cannot carry over dt seconds (see linkStatsLagS): such
// a rise is a counter reset or replaced, not traffic. It names those
// counters in ni.OverLinkSpeed and sets ni.LinkSpeedMbps; the other
// rates stand. The baseline moves on, so the next read is normal.
func (p *Prober) capLinkSpeed(ni *NetInterface, ifc *netIface, read uint64, dt float64) {
	rates := [4]**float64{&ni.RxBytesPerS, &ni.RxPacketsPerS, &ni.TxBytesPerS, &ni.TxPacketsPerS}
	high := false
	for i, r := range rates {
		floor := minCheckedBytesPerS
		if i%2 == 1 {
			floor = minCheckedPacketsPerS
		}
		high = high || **r > floor
	}
	if !high {
		return
	}
	if ifc.speedRead == 0 || read-ifc.speedRead >= speedRereads {
		ifc.speedMbps, ifc.speedRead = p.linkSpeed(ifc.name), read
	}
	if ifc.speedMbps <= 0 {
		return
	}
	speed := ifc.speedMbps
	ni.LinkSpeedMbps = &speed
	bytesPerS := float64(ifc.speedMbps) * 1e6 / 8
	window := (dt + linkStatsLagS) * linkMargin // seconds of traffic one delta may hold
	names := [4]string{"rx_bytes", "rx_packets", "tx_bytes", "tx_packets"}
	for i, r := range rates {
		limit := bytesPerS * window
		if i%2 == 1 {
			limit /= minFrameWireBytes
		}
		if **r*dt > limit {
			*r = nil
			ni.OverLinkSpeed = append(ni.OverLinkSpeed, names[i])
		}
	}
}

// linkSpeed reads SysRoot/class/net/name/speed (Mbit/s); 0 when it
// cannot be read or is not a number (-1: unknown, a virtual or down
// interface).
func (p *Prober) linkSpeed(name string) int64 {
	b, err := readFile(p.sysPath("class", "net", name, "speed"))
	if err != nil {
		return 0
	}
	return ParseLinkSpeed(b)
}

// ParseLinkSpeed parses the contents of /sys/class/net/IFACE/speed: a
// decimal number of Mbit/s and a newline. It returns 0 for anything else,
// and for a speed that is not positive (-1 means unknown) or above 10^9
// Mbit/s.
func ParseLinkSpeed(b []byte) int64 {
	v, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil || v <= 0 || v > 1e9 {
		return 0
	}
	return v
}

// netCounterNames are the JSON names of the counters of
// NetCounters.array, for Wrapped.
var netCounterNames = [8]string{"rx_bytes", "rx_packets", "rx_errors", "rx_dropped", "tx_bytes", "tx_packets", "tx_errors", "tx_dropped"}

// maxNetRate bounds, per counter of NetCounters.array, a believable rate
// per second: 2^40 bytes (about 8.8 Tbit/s, twenty 400GbE links) and 2^32
// packets, errors or drops.
var maxNetRate = [8]float64{1 << 40, 1 << 32, 1 << 32, 1 << 32, 1 << 40, 1 << 32, 1 << 32, 1 << 32}

// netCounterPair gives, for each counter of NetCounters.array, the
// counter whose rise makes a fall of this one a wrap under sysstat's rule
// (packets for bytes, bytes for packets); -1: none, a fall is a reset.
var netCounterPair = [8]int{1, 0, -1, -1, 5, 4, -1, -1}

// array gives c's counters in a fixed order: rx bytes, packets, errors,
// dropped, then tx the same.
func (c *NetCounters) array() [8]uint64 {
	return [8]uint64{c.RxBytes, c.RxPackets, c.RxErrors, c.RxDropped, c.TxBytes, c.TxPackets, c.TxErrors, c.TxDropped}
}

// netRates sets the rates of ni from old to ni's counters over dt > 0
// seconds. It returns ResetBackwards, with every rate null, when a
// counter fell and sysstat's wrap rule does not hold for it, and
// ResetImplausible when one rose faster than maxNetRate; otherwise
// "" and the names of the counters that wrapped.
func netRates(ni *NetInterface, old *NetCounters, dt float64) (reset string, wrapped []string) {
	cur, prev := ni.NetCounters.array(), old.array()
	var deltas [8]uint64
	for i := range cur {
		if cur[i] >= prev[i] {
			deltas[i] = cur[i] - prev[i]
			continue
		}
		d, ok := wrapDelta(i, &cur, &prev)
		if !ok {
			return ResetBackwards, nil
		}
		deltas[i] = d
		wrapped = append(wrapped, netCounterNames[i])
	}
	// A rise no link can carry in dt is a counter replaced (a device
	// renamed onto another's name, a driver starting from garbage), not
	// traffic: no absurd rate, ever.
	for i, d := range deltas {
		if float64(d)/dt > maxNetRate[i] {
			return ResetImplausible, nil
		}
	}
	rates := new([8]float64) // one allocation for all eight
	for i, r := range [8]**float64{
		&ni.RxBytesPerS, &ni.RxPacketsPerS, &ni.RxErrorsPerS, &ni.RxDroppedPerS,
		&ni.TxBytesPerS, &ni.TxPacketsPerS, &ni.TxErrorsPerS, &ni.TxDroppedPerS,
	} {
		rates[i] = float64(deltas[i]) / dt
		*r = &rates[i]
	}
	return "", wrapped
}

// wrapDelta applies sysstat's wrap rule (see wrapMargin32) to counter i
// of NetCounters.array, which fell from prev[i] to cur[i]: it returns the
// delta across the wrap and true when the rule holds, else false (a
// reset).
func wrapDelta(i int, cur, prev *[8]uint64) (uint64, bool) {
	j := netCounterPair[i]
	if j < 0 || cur[j] <= prev[j] {
		return 0, false
	}
	var d uint64
	switch o, n := prev[i], cur[i]; {
	case o < 1<<32:
		if o < 1<<32-wrapMargin32 || n >= wrapMargin32 {
			return 0, false
		}
		d = n + (1<<32 - o)
	default:
		if o < 1<<64-wrapMargin64 || n >= wrapMargin64 {
			return 0, false
		}
		d = n - o // mod 2^64: n + 2^64 − o
	}
	pd := cur[j] - prev[j] // > 0
	if i == 0 || i == 4 {
		// rx or tx bytes: d ≤ pd·maxPacketBytes + maxPacketBytes,
		// written so that nothing overflows (d ≥ 1).
		return d, (d-1)/maxPacketBytes <= pd
	}
	return d, d <= pd // rx or tx packets: at least one byte each
}

#!/usr/bin/env bash
# Measures ds host against its targets (ARCHITECTURE.md §7, issue 11):
#
#  1. cost: ds host --interval 100ms for DUR seconds (default 60) costs
#     < 1 % of one core (user+sys from /usr/bin/time, over the run's
#     wall time); in the same run, ds host --interval 1s against vmstat 1
#     (a 1 Hz sampler everyone takes as free) for the same time, paired;
#  2. truth: under a `yes > /dev/null` load, ds host --cpu --interval 1s
#     and vmstat 1, run side by side, give the same busy percentage
#     (vmstat us+sy+st, ds host.total_percent) within a few points, second
#     by second;
#  3. with LONG=SECONDS (default 0: skipped; the issue's figure is 600):
#     ds host --interval 100ms for LONG seconds keeps a flat RSS (VmRSS
#     read from /proc after 5 s and at the end), and ds wrap --host 1s of
#     a job printing a line a second for LONG seconds holds the host
#     samples in the job's own stream between its lines.
#
# Usage: scripts/bench_host.sh [DUR=60]      (env LONG=600 for part 3)
set -euo pipefail
dur=${1:-60}
long=${LONG:-0}
cd "$(dirname "$0")/.."
go build -o bin/ds ./cmd/ds
ds=$PWD/bin/ds
w=$(mktemp -d "${TMPDIR:-/tmp}/bench_host.XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$w"' EXIT
echo "# $(nproc) CPUs, $(uname -r), ${dur}s runs"

# 1. Cost: the three run at once (they mostly sleep).
/usr/bin/time -f '%U %S %e %M' -o "$w/t100" "$ds" host --interval 100ms --duration "${dur}s" -o "$w/h100.dss" 2>/dev/null &
/usr/bin/time -f '%U %S %e %M' -o "$w/t1s" "$ds" host --interval 1s --duration "${dur}s" -o "$w/h1s.dss" 2>/dev/null &
/usr/bin/time -f '%U %S %e %M' -o "$w/tvm" vmstat 1 "$((dur + 1))" >/dev/null &
wait
row() { # name file samples
	read -r u s e m <"$2"
	awk -v n="$1" -v u="$u" -v s="$s" -v e="$e" -v m="$m" -v k="$3" 'BEGIN {
		printf "%-28s user %6.3fs sys %6.3fs  %6.3f %% of a core  %7.1f µs/sample  max RSS %5.1f MiB\n", n, u, s, 100*(u+s)/e, 1e6*(u+s)/k, m/1024 }'
}
row "ds host --interval 100ms" "$w/t100" "$((dur * 10))"
row "ds host --interval 1s" "$w/t1s" "$dur"
row "vmstat 1 (baseline)" "$w/tvm" "$dur"
read -r u1 s1 _ _ <"$w/t1s"
read -r uv sv _ _ <"$w/tvm"
awk -v a="$u1" -v b="$s1" -v c="$uv" -v d="$sv" 'BEGIN { if (c+d > 0) printf "ratio ds host 1s / vmstat 1 (user+sys): %.2f\n", (a+b)/(c+d) }'
"$ds" info "$w/h100.dss" | grep -E 'host\.(cpu|mem|net|gpu)' || true

# 2. Truth under load: one busy process (yes) on the machine's CPUs.
yes >/dev/null &
ypid=$!
sleep 1
vmstat -n 1 11 >"$w/vm.txt" &
vpid=$!
"$ds" host --cpu --interval 1s --count 10 -o "$w/load.dss" 2>/dev/null &
dpid=$!
wait "$vpid" "$dpid"
kill "$ypid"
# vmstat: skip its 2 header lines and its first (since-boot) line; busy =
# us + sy + st (columns 13, 14, 17).
awk 'NR > 3 { print $13 + $14 + $17 }' "$w/vm.txt" | head -10 >"$w/vm.busy"
"$ds" series host.cpu -f host.total_percent -o tsv "$w/load.dss" | awk -F'\t' 'NR > 1 { print $5 }' >"$w/ds.busy"
echo "under yes > /dev/null: busy %, second by second"
paste "$w/vm.busy" "$w/ds.busy" | awk '{ printf "  vmstat %5.1f   ds host %6.2f   diff %+6.2f\n", $1, $2, $2 - $1; s += $1; t += $2; n++ }
	END { if (n) printf "  mean: vmstat %.1f, ds host %.2f (diff %+.2f points over %d s)\n", s/n, t/n, t/n - s/n, n }'

# 3. A long run: RSS flat, and host samples in a wrapped job's stream.
if [ "$long" -gt 0 ]; then
	"$ds" host --interval 100ms --duration "${long}s" -o "$w/long.dss" 2>/dev/null &
	hpid=$!
	"$ds" wrap --host 1s -q -o "$w/job.dss" -- sh -c "i=0; while [ \$i -lt $long ]; do echo line \$i; i=\$((i+1)); sleep 1; done" &
	sleep 5
	rss0=$(awk '/VmRSS/ { print $2 }' /proc/$hpid/status)
	sleep "$((long - 10))"
	rss1=$(awk '/VmRSS/ { print $2 }' /proc/$hpid/status)
	wait
	echo "ds host --interval 100ms for ${long}s: VmRSS $((rss0 / 1024)).$(((rss0 % 1024) * 10 / 1024)) MiB after 5 s, $((rss1 / 1024)).$(((rss1 % 1024) * 10 / 1024)) MiB near the end"
	"$ds" info "$w/long.dss" | grep -E 'host\.cpu' || true
	echo "ds wrap --host 1s of a ${long}s job: channel order of the first lines of ds log"
	"$ds" log "$w/job.dss" | awk '{ print $2 }' | head -12 | tr '\n' ' '
	echo
	"$ds" log "$w/job.dss" | awk '{ n[$2]++ } END { for (c in n) printf "  %-24s %d\n", c, n[c] }' | sort
fi

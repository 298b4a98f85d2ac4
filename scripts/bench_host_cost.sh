#!/usr/bin/env bash
# Measures what ds host --interval 100ms costs (issue 23 item 5: < 1 % of
# one core), paired in the same run: each round runs, at once and for the
# same DUR seconds, the ds host under test, an old ds host (OLD, when
# given: the binary before a change) and a minimal Go program that wakes
# on a 100 ms ticker and does nothing (the floor any Go sampler at 10 Hz
# pays). Cost is user+sys from /usr/bin/time over the run's wall time;
# it prints each round with the machine's load average before it, and the
# median of the rounds.
#
# Usage: [OLD=/path/to/old/ds] [NEW=/path/to/ds] scripts/bench_host_cost.sh [DUR=30] [RUNS=5]
# (NEW defaults to a build of this tree; build OLD from another commit,
# e.g. git archive main | tar -x -C /tmp/old && (cd /tmp/old && go build -o /tmp/old-ds ./cmd/ds))
set -euo pipefail
dur=${1:-30}
runs=${2:-5}
cd "$(dirname "$0")/.."
[ -x /usr/bin/time ] || { echo "bench_host_cost.sh: /usr/bin/time is required" >&2; exit 1; }
w=$(mktemp -d "${TMPDIR:-/tmp}/bench_host_cost.XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$w"' EXIT
new=${NEW:-}
if [ -z "$new" ]; then
	go build -o "$w/ds" ./cmd/ds
	new=$w/ds
fi
old=${OLD:-}
cat >"$w/ticker.go" <<'GO'
package main

import (
	"os"
	"time"
)

func main() {
	d, _ := time.ParseDuration(os.Args[1])
	t := time.NewTicker(100 * time.Millisecond)
	end := time.After(d)
	for {
		select {
		case <-t.C:
		case <-end:
			return
		}
	}
}
GO
(cd "$w" && GOFLAGS= go build -o "$w/ticker" ticker.go)
echo "# $(nproc) CPUs, $(uname -r), $runs rounds of ${dur}s; new: $new${old:+; old: $old}"
cost() { # file -> percent of a core
	read -r u s e <"$1"
	awk -v u="$u" -v s="$s" -v e="$e" 'BEGIN { printf "%.3f", 100*(u+s)/e }'
}
for i in $(seq "$runs"); do
	load=$(cut -d' ' -f1-3 /proc/loadavg)
	/usr/bin/time -f '%U %S %e' -o "$w/tn$i" "$new" host --interval 100ms --duration "${dur}s" -o "$w/n$i.dss" 2>/dev/null &
	if [ -n "$old" ]; then
		/usr/bin/time -f '%U %S %e' -o "$w/to$i" "$old" host --interval 100ms --duration "${dur}s" -o "$w/o$i.dss" 2>/dev/null &
	fi
	/usr/bin/time -f '%U %S %e' -o "$w/tt$i" "$w/ticker" "${dur}s" &
	wait
	row="round $i (load $load): new $(cost "$w/tn$i") %"
	[ -n "$old" ] && row="$row  old $(cost "$w/to$i") %"
	echo "$row  go ticker $(cost "$w/tt$i") % of a core"
	cost "$w/tn$i" >>"$w/new"; echo >>"$w/new"
	[ -n "$old" ] && { cost "$w/to$i" >>"$w/old"; echo >>"$w/old"; }
	cost "$w/tt$i" >>"$w/tick"; echo >>"$w/tick"
done
median() { sort -g "$1" | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR+1)/2]; else printf "%.3f\n", (v[NR/2] + v[NR/2+1]) / 2 }'; }
row="median of $runs: new $(median "$w/new") %"
[ -n "$old" ] && row="$row  old $(median "$w/old") %"
echo "$row  go ticker $(median "$w/tick") % of a core (ds host --interval 100ms --duration ${dur}s)"

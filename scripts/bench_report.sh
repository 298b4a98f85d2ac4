#!/usr/bin/env bash
# Times ds report against ds log of the same capture, and how long the
# page takes to open in Chromium (issue 24's targets: ds report at ≥ 0.5×
# ds log's speed, wall and CPU; a page of the default budget open in
# ≤ 3 s). The capture is made with ds wrap --host 1s of LINES lines like a
# service's log (timestamps, a request id, numbers; every 1000th a
# coloured warning on stderr, every 100 000th an error), unless CAPTURE
# names one. The two commands run in turn, A B A B …, RUNS pairs after one
# warm-up pair, output to /dev/null, timed as whole processes (GNU time
# for the CPU, where it is installed); the ratios are the medians of the
# pair ratios, which hold when the machine's speed drifts. Then the page
# (ds report -o, the default --max-size) is opened three times in headless
# Chromium by go test ./pkg/report -run TestBrowserLoadTime (chromedp):
# from navigating to the log drawn, and a search to its first match.
# It prints the machine (CPUs, load) with the figures; a missed target is
# reported, not failed.
# Usage: scripts/bench_report.sh [LINES=5000000] [RUNS=5]   (env CAPTURE=FILE)
set -euo pipefail
n=${1:-5000000}
runs=${2:-5}
cd "$(dirname "$0")/.."
go build -o bin/ds ./cmd/ds
ds=$PWD/bin/ds
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
capture=${CAPTURE:-}
if [ -z "$capture" ]; then
	capture=$work/run.dss
	echo "making a capture of $n lines" >&2
	"$ds" wrap -q --host 1s -o "$capture" -- awk -v n="$n" 'BEGIN {
		srand(1)
		for (i = 0; i < n; i++) {
			if (i % 1000 == 7)
				printf "\033[33mWARN\033[0m worker-%d slow batch %d took %.1f ms\n", i % 32, i, rand() * 900 > "/dev/stderr"
			else if (i % 100000 == 50000)
				printf "ERROR worker-%d: batch %d failed: connection reset by peer\n", i % 32, i
			else
				printf "2026-12-02T10:%02d:%02d.%03d INFO worker-%d req=%08x%08x processed batch %d in %.1f ms loss=%.4f\n", (i / 60000) % 60, (i / 1000) % 60, i % 1000, i % 32, rand() * 4294967295, rand() * 4294967295, i, rand() * 50, rand()
		}
	}'
fi
cat "$capture" > /dev/null # into the page cache
gnutime=
[ -x /usr/bin/time ] && /usr/bin/time -f '%e' true 2> /dev/null && gnutime=/usr/bin/time

# clock CMD: runs the shell command CMD, output thrown away, and prints
# its wall and CPU (user + sys) seconds ("-" without GNU time).
clock() {
	local s e
	if [ -n "$gnutime" ]; then
		$gnutime -f '%e %U %S' -o "$work/time" sh -c "$1" > /dev/null 2>> "$work/stderr" || echo "exit: $1" >> "$work/exits"
		awk '{printf "%.3f %.3f", $1, $2 + $3}' "$work/time"
	else
		s=$EPOCHREALTIME
		sh -c "$1" > /dev/null 2>> "$work/stderr" || echo "exit: $1" >> "$work/exits"
		e=$EPOCHREALTIME
		echo "$s $e" | awk '{printf "%.3f -", $2 - $1}'
	fi
}
med() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

report="$ds report -o - $(printf '%q' "$capture")"
log="$ds log $(printf '%q' "$capture")"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "capture: $capture, $(du -h "$capture" | cut -f1); timing ds report vs ds log, $runs pairs" >&2
: > "$work/t"
clock "$report" > /dev/null
clock "$log" > /dev/null
for ((i = 0; i < runs; i++)); do
	echo "$(clock "$report") $(clock "$log")" >> "$work/t"
done
# columns: report wall, cpu, log wall, cpu
echo "ds report: wall $(awk '{print $1}' "$work/t" | med) s, cpu $(awk '{print $2}' "$work/t" | med) s (medians)"
echo "ds log:    wall $(awk '{print $3}' "$work/t" | med) s, cpu $(awk '{print $4}' "$work/t" | med) s"
wall=$(awk '{print $3 / $1}' "$work/t" | med)
verdict=met
awk -v r="$wall" 'BEGIN {exit !(r >= 0.5)}' || verdict="not met"
echo "ds report's speed, ds log's = 1: wall ${wall}x (target >= 0.5x: $verdict)"
if [ -n "$gnutime" ]; then
	cpu=$(awk '$2 > 0 {print $4 / $2}' "$work/t" | med)
	verdict=met
	awk -v r="$cpu" 'BEGIN {exit !(r >= 0.5)}' || verdict="not met"
	echo "                                  cpu  ${cpu}x (target >= 0.5x: $verdict)"
fi
if [ -s "$work/exits" ]; then
	echo "non-zero exits while timing:"
	sort "$work/exits" | uniq -c
	head -5 "$work/stderr"
fi

"$ds" report -o "$work/run.html" "$capture" 2> /dev/null || true
echo "page: $(du -h "$work/run.html" | cut -f1); opening it in Chromium (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
DS_REPORT_PAGE=$work/run.html go test ./pkg/report -run 'TestBrowserLoadTime$' -count=1 -v 2>&1 |
	grep -E 'run [0-9]:|SKIP|FAIL|no Chromium' | sed 's/^ *//' || true
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

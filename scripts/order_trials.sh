#!/usr/bin/env bash
# Order between stdout and stderr (ARCHITECTURE.md §7: writes ≥ 1 ms apart keep
# the plain run's order, always). A child alternates `echo out$i` and
# `echo err$i >&2` PAIRS times with DELAY seconds after each write; it runs
# RUNS times under ds wrap with both streams sent to one file (2>&1), and
# each run's pass-through and ds log --cat are compared with the plain
# run's order. Prints how many runs kept it, then the same with no delay
# (where two writes can reach the two pipes in the same instant, and the
# order cannot be known without --pty): the fraction of lines in place.
# LINES > 1 makes each stdout write LINES lines (printf 'out$i.1\n…', one
# write), to measure writes of several lines next to writes to the other
# stream. LOAD > 0 runs that many busy loops (one per CPU is a fully loaded
# machine) for the duration, to measure the order on a loaded machine.
# Usage: scripts/order_trials.sh [RUNS=100] [PAIRS=100] [DELAY=0.001] [LINES=1] [LOAD=0]
set -euo pipefail
runs=${1:-100}
pairs=${2:-100}
delay=${3:-0.001}
lines=${4:-1}
load=${5:-0}
cd "$(dirname "$0")/.."
go build -o bin/ds ./cmd/ds
ds=$PWD/bin/ds
work=$(mktemp -d)
busy=()
cleanup() {
	for p in "${busy[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT
for _ in $(seq "$load"); do
	sh -c 'while :; do :; done' &
	busy+=($!)
done
out='echo out$i' # the stdout write, as sh code
if [ "$lines" -gt 1 ]; then
	fmt='' args=''
	for k in $(seq "$lines"); do fmt="${fmt}out%s.$k\\n" args="$args \$i"; done
	out="printf '$fmt'$args"
fi
child() { # child DELAY: the alternating writer as a sh script
	if [ "$1" = 0 ]; then
		echo "i=0; while [ \$i -lt $pairs ]; do $out; echo err\$i >&2; i=\$((i+1)); done"
	else
		echo "i=0; while [ \$i -lt $pairs ]; do $out; sleep $1; echo err\$i >&2; sleep $1; i=\$((i+1)); done"
	fi
}
# inversions FILE: how many lines follow a line that was written later
# (the lines of out$i come from the 2i-th write, in order: out$i.1 <
# out$i.2; err$i is the 2i+1-th).
inversions() {
	awk '{ n = substr($0, 4) * 2 + ($0 ~ /^err/); if (NR > 1 && n < last) c++; last = n } END { print c + 0 }' "$1"
}
for d in "$delay" 0; do
	script=$(child "$d")
	sh -c "$script" > "$work/plain.txt" 2>&1
	kept_pass=0 kept_log=0 lines_pass=0 lines_log=0 total=0 inv_pass=0 inv_log=0
	for i in $(seq "$runs"); do
		"$ds" wrap --label alt --overwrite -o "$work/o.dss" -- sh -c "$script" > "$work/pass.txt" 2>&1
		"$ds" log --cat -c proc.alt.stdout -c proc.alt.stderr "$work/o.dss" > "$work/log.txt"
		cmp -s "$work/pass.txt" "$work/plain.txt" && kept_pass=$((kept_pass + 1))
		cmp -s "$work/log.txt" "$work/plain.txt" && kept_log=$((kept_log + 1))
		# Lines in place: same line at the same line number as the plain run.
		lines_pass=$((lines_pass + $(paste -d'|' "$work/pass.txt" "$work/plain.txt" | awk -F'|' '$1 == $2' | wc -l)))
		lines_log=$((lines_log + $(paste -d'|' "$work/log.txt" "$work/plain.txt" | awk -F'|' '$1 == $2' | wc -l)))
		total=$((total + (lines + 1) * pairs))
		# Adjacent lines swapped: a line that comes before one written earlier.
		inv_pass=$((inv_pass + $(inversions "$work/pass.txt")))
		inv_log=$((inv_log + $(inversions "$work/log.txt")))
	done
	echo "delay ${d}s, $lines-line stdout writes, $load busy loops: plain order kept in $kept_pass/$runs runs (pass-through), $kept_log/$runs runs (ds log); lines in place: $(echo "scale=4; $lines_pass / $total" | bc) (pass-through), $(echo "scale=4; $lines_log / $total" | bc) (ds log); lines after a later one: $(echo "scale=4; $inv_pass / $total" | bc) (pass-through), $(echo "scale=4; $inv_log / $total" | bc) (ds log)"
done

#!/usr/bin/env bash
# Times the per-frame read path (issue 23 item 1) on one-line frames: ds
# log --cat of a capture against zstd -dc of the same text compressed with
# zstd -3, on one core (taskset -c 0) and on every core, and the decorated
# ds log in lines a second. The inputs come from scripts/readbench: N
# messages of 100-byte JSON and a newline, one a frame, over 3 TextStream
# channels (text.dss, zstd), and the same text (raw.txt, then raw.zst).
# Every job runs its two commands in turn, A B A B …, RUNS pairs after one
# warm-up pair, output to /dev/null, timed as whole processes; the ratio is
# the median of the pair ratios. The load average is printed before and
# after. Jobs and targets:
#   cat/1   taskset -c 0 ds log --cat text.dss vs taskset -c 0 zstd -dc   ≤ 1.1×
#   cat/all ds log --cat text.dss              vs zstd -dc                ≤ 1.0×
#   lines   ds log text.dss: lines a second (N / median)                  ≥ 5 M lines/s
# With BASE=path/to/an/older/ds it also times that binary against this
# one, paired in the same run, for ds log --cat (one core and all),
# ds log and ds log --json: the before/after of a change.
# It checks first that ds log --cat gives raw.txt byte for byte and that
# zstd -dc does; it exits 1 when a check fails (a missed target is
# reported, not failed).
# Usage: scripts/bench_readpath.sh [N=2000000] [RUNS=5]    (env BASE=old-ds)
set -euo pipefail
n=${1:-2000000}
runs=${2:-5}
base=${BASE:-}
cd "$(dirname "$0")/.."
go build -o bin/ds ./cmd/ds
ds=$PWD/bin/ds
command -v zstd > /dev/null || { echo "bench_readpath.sh: needs zstd(1)" >&2; exit 1; }
one=(taskset -c 0)
command -v taskset > /dev/null || { echo "bench_readpath.sh: no taskset: one-core rows use every core" >&2; one=(); }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd scripts/readbench && go build -o "$work/readbench" .)
"$work/readbench" -o "$work" -n "$n" > "$work/files"
rm -f "$work/json.dss" "$work/x.mcap"
zstd -3 -q "$work/raw.txt" -o "$work/raw.zst"
sed 's/^/  /' "$work/files" | grep -v 'json.dss\|x.mcap'
echo "  raw.zst $(wc -c < "$work/raw.zst") zstd -3 of raw.txt"
cat "$work/raw.txt" "$work/text.dss" "$work/raw.zst" > /dev/null # into the page cache

fail=0
for b in "$ds" $base; do
	if ! "$b" log --cat "$work/text.dss" | cmp -s - "$work/raw.txt"; then
		echo "FAIL: $b log --cat text.dss differs from raw.txt"
		fail=1
	fi
done
if ! zstd -dc "$work/raw.zst" | cmp -s - "$work/raw.txt"; then
	echo "FAIL: zstd -dc raw.zst differs from raw.txt"
	fail=1
fi

# clock CMD: runs the shell command CMD, output thrown away, and prints
# its wall seconds; a non-zero exit is noted in $work/exits.
clock() {
	local s e rc=0
	s=$EPOCHREALTIME
	eval "$1" > /dev/null 2>> "$work/stderr" || rc=$?
	e=$EPOCHREALTIME
	[ "$rc" = 0 ] || echo "exit $rc: $1" >> "$work/exits"
	echo "$s $e" | awk '{printf "%.6f", $2 - $1}'
}
# pair A B: one warm-up pair, then RUNS pairs A B; prints the median of A,
# the median of B and the median of the pair ratios A/B.
pair() {
	local a=$1 b=$2 i
	: > "$work/t"
	clock "$a" > /dev/null
	clock "$b" > /dev/null
	for ((i = 0; i < runs; i++)); do
		echo "$(clock "$a") $(clock "$b")" >> "$work/t"
	done
	med() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
	echo "$(awk '{print $1}' "$work/t" | med) $(awk '{print $2}' "$work/t" | med) $(awk '{print $1 / $2}' "$work/t" | med)"
}
q() { printf '%q' "$1"; }
rows=()
row() { rows+=("$(printf '%-46s|%9s|%9s|%12s|%-14s|%s' "$@")"); }
ms() { awk -v s="$1" 'BEGIN {printf "%.1f ms", s * 1000}'; }
x() { awk -v r="$1" 'BEGIN {printf "%.2fx", r}'; }
le() { awk -v a="$1" -v b="$2" 'BEGIN {exit !(a <= b)}'; }
# job NAME A B [MAXRATIO]: a paired job, with a ratio target if given.
job() {
	local ta tb r verdict=met target=-
	echo "timing: $1" >&2
	read -r ta tb r < <(pair "$2" "$3")
	if [ -n "${4:-}" ]; then
		target="<= ${4}x"
		le "$r" "$4" || verdict="not met"
	else
		verdict="(no target)"
	fi
	row "$1" "$(ms "$ta")" "$(ms "$tb")" "$(x "$r")" "$target" "$verdict"
}

D=$(q "$ds") W=$(q "$work") O=${one[*]}
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
job "ds log --cat vs zstd -dc, one core" "$O $D log --cat $W/text.dss" "$O zstd -dc $W/raw.zst" 1.1
job "ds log --cat vs zstd -dc, $(nproc) cores" "$D log --cat $W/text.dss" "zstd -dc $W/raw.zst" 1.0
echo "timing: ds log text.dss, lines a second" >&2
read -r ta tb r < <(pair "$D log $W/text.dss" "zstd -dc $W/raw.zst")
rate=$(awk -v n="$n" -v t="$ta" 'BEGIN {printf "%.2f", n / t / 1e6}')
verdict=met
le 5 "$rate" || verdict="not met"
row "ds log (decorated) lines/s; vs zstd -dc" "$(ms "$ta")" "$(ms "$tb")" "${rate}M/s" ">= 5M lines/s" "$verdict"
if [ -n "$base" ]; then
	B=$(q "$base")
	job "this vs BASE: ds log --cat, one core" "$O $D log --cat $W/text.dss" "$O $B log --cat $W/text.dss"
	job "this vs BASE: ds log --cat, $(nproc) cores" "$D log --cat $W/text.dss" "$B log --cat $W/text.dss"
	job "this vs BASE: ds log (decorated)" "$D log $W/text.dss" "$B log $W/text.dss"
	job "this vs BASE: ds log --json" "$D log --json $W/text.dss" "$B log --json $W/text.dss"
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

echo
echo "$n one-line frames, $runs paired runs each, medians of whole-process wall time (ratio: median of the pair ratios)"
printf '%-46s|%9s|%9s|%12s|%-14s|%s\n' job ds baseline ratio/rate target result
for r in "${rows[@]}"; do echo "$r"; done
if [ -s "$work/exits" ]; then
	echo "non-zero exits while timing (stderr: first lines): the figures above do not hold"
	sort "$work/exits" | uniq -c
	head -5 "$work/stderr"
	fail=1
fi
exit "$fail"

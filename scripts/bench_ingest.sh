#!/usr/bin/env bash
# Measures ds ingest against its baseline (issue 23 item 3): ds merge of the
# same input, which copies the input's zstd blocks unchanged; ds ingest
# should cost about what it does, and hold <= 64 MiB (ARCHITECTURE.md §7).
#
# The input comes from scripts/readbench -mode merge: K captures (default
# 2) of N frames each (default 1 M), the streams bench-j#1, 100-byte JSON
# messages with a newline round robin over 3 channels, zstd. Before timing
# it checks that the store holds exactly the input's frames (ds log --cat
# of each stream equals that of its input; a failed check exits 1).
#
# Timing: ds ingest into a fresh store and ds merge of the same inputs to a
# file run in turn, A B A B …, RUNS pairs (default 5) after one pair run
# under /usr/bin/time -f (GNU time, Debian package time: required) for the
# peak RSS; each is timed as a whole process
# (wall and user+system CPU). The ratios are medians of the pair ratios,
# which hold when the machine's speed drifts. The load average is printed
# before and after. The work directory is in $TMPDIR.
# Usage: scripts/bench_ingest.sh [N=1000000] [RUNS=5] [K=2]
set -euo pipefail
[ -x /usr/bin/time ] || { echo "bench_ingest.sh: /usr/bin/time (GNU time) is required: apt-get install time" >&2; exit 1; }
n=${1:-1000000}
runs=${2:-5}
k=${3:-2}
cd "$(dirname "$0")/.."
go build -o bin/ds ./cmd/ds
ds=$PWD/bin/ds
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd scripts/readbench && go build -o "$work/readbench" .)
echo "generating $k captures of $n frames" >&2
"$work/readbench" -mode merge -o "$work" -k "$k" -n "$n" -mcap=false > "$work/files"
sed 's/^/  /' "$work/files"
ins=()
for ((j = 0; j < k; j++)); do
	ins+=("$work/in$j.dss")
done

fail=0
echo "checking ds ingest's store" >&2
"$ds" ingest "$work/check" "${ins[@]}" > /dev/null 2> "$work/check.err" || { echo "FAIL: ds ingest: $(head -3 "$work/check.err")"; fail=1; }
for ((j = 0; j < k; j++)); do
	if ! cmp -s <("$ds" log --cat -c 'bench.*' --stream "bench-$j#1" "$work/check") <("$ds" log --cat -c 'bench.*' "${ins[$j]}"); then
		echo "FAIL: stream bench-$j#1 of the store differs from in$j.dss"
		fail=1
	fi
done
rm -rf "$work/check"

# run CMD…: runs CMD, prints "wall cpu" in seconds (cpu: user + system of
# the process and its children, from /usr/bin/time).
run() {
	local s e
	s=$EPOCHREALTIME
	/usr/bin/time -f '%U %S %M' -o "$work/time.txt" "$@" > /dev/null 2>> "$work/stderr" || echo "exit $?: $*" >> "$work/exits"
	e=$EPOCHREALTIME
	awk -v s="$s" -v e="$e" '{printf "%.6f %.3f %d\n", e - s, $1 + $2, $3}' "$work/time.txt"
}
med() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
ingest() { rm -rf "$work/store" && run "$ds" ingest "$work/store" "${ins[@]}"; }
merge() { run "$ds" merge -q --overwrite -o "$work/out.dss" "${ins[@]}"; }

load0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "timing: ds ingest vs ds merge, $runs pairs" >&2
read -r _ _ rss_ingest < <(ingest)
read -r _ _ rss_merge < <(merge)
: > "$work/t"
for ((i = 0; i < runs; i++)); do
	echo "$(ingest) $(merge)" >> "$work/t" # wall cpu rss wall cpu rss
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)
rm -rf "$work/store" "$work/out.dss"

col() { awk -v c="$1" '{print $c}' "$work/t" | med; }
ratio() { awk -v a="$1" -v b="$2" '{print $a / $b}' "$work/t" | med; }
frames=$((k * n))
perframe() { awk -v t="$1" -v f="$frames" 'BEGIN {printf "%.0f ns", t / f * 1e9}'; }
mib() { awk -v k="$1" 'BEGIN {printf "%.1f MiB", k / 1024}'; }
verdict() { if awk "BEGIN {exit !($1)}"; then echo met; else echo "not met"; fi; }
wr=$(ratio 1 4)
cr=$(ratio 2 5)
printf '\n%d captures of %d frames (%d in all), %d paired runs, medians; load average %s before, %s after\n' "$k" "$n" "$frames" "$runs" "$load0" "$load1"
printf '%-36s|%-16s|%-14s|%s\n' measure value target result
printf '%-36s|%-16s|%-14s|%s\n' "ds ingest wall time" "$(col 1) s" - -
printf '%-36s|%-16s|%-14s|%s\n' "ds merge wall time" "$(col 4) s" - -
printf '%-36s|%-16s|%-14s|%s\n' "ds ingest CPU per frame" "$(perframe "$(col 2)")" - -
printf '%-36s|%-16s|%-14s|%s\n' "ds merge CPU per frame" "$(perframe "$(col 5)")" - -
printf '%-36s|%-16s|%-14s|%s\n' "ingest / merge wall time" "${wr}x" - -
printf '%-36s|%-16s|%-14s|%s\n' "ingest / merge CPU" "${cr}x" "<= 1.5x" "$(verdict "$cr <= 1.5")"
printf '%-36s|%-16s|%-14s|%s\n' "ds ingest peak RSS" "$(mib "$rss_ingest")" "<= 64 MiB" "$(verdict "$rss_ingest <= 65536")"
printf '%-36s|%-16s|%-14s|%s\n' "ds merge peak RSS" "$(mib "$rss_merge")" "<= 64 MiB" "$(verdict "$rss_merge <= 65536")"
if [ -s "$work/exits" ]; then
	echo "non-zero exits while timing:"
	sort "$work/exits" | uniq -c
	head -5 "$work/stderr" 2> /dev/null || true
	fail=1
fi
exit "$fail"

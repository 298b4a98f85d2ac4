#!/usr/bin/env bash
# Measures ds merge against its targets (ARCHITECTURE.md §7, issue 10): 8
# captures of N frames each (default 1 M) merge at >= 2 M frames/s with a
# peak RSS <= 64 MiB that a 4x larger input does not raise, at least 3x
# faster than `mcap merge` of the same messages and with less memory.
#
# The inputs come from scripts/readbench -mode merge: capture j is the
# stream bench-j#1, N JSON messages of 100 bytes and a newline round robin
# over 3 channels (zstd, as ds's writer writes by default), and the same
# messages as an MCAP file written by the MCAP Go library (3 json
# channels, zstd chunks of 1 MiB, log times 1 µs apart from the same start
# in every file). With BIG=1 (the default) it also writes 8 captures of
# 4N frames (ds only) for the memory bound.
#
# Before timing it checks that the merged capture holds exactly the
# expected frames: ds info says each of the 8 streams has N frames, no gap,
# and ended; ds log --cat of each stream equals ds log --cat of its input;
# mcap info of mcap merge's output counts 8N messages. A failed check
# exits 1; a missed target is reported, not failed.
#
# Timing: ds merge and mcap merge (the Go CLI at ../shared/tools/mcap; its
# rows are skipped where it is absent) run in turn, A B A B …, RUNS pairs
# after one pair run under /usr/bin/time -v for the peak RSS; each is timed
# as a whole process, output to a file in the work directory. The ratio is
# the median of the pair ratios, which holds when the machine's speed
# drifts. The work directory is in $TMPDIR (about 2 GB with BIG=1; the
# default run takes about 2 minutes on 2 cores).
# Usage: scripts/bench_merge.sh [N=1000000] [RUNS=3]    (env BIG=0)
set -euo pipefail
n=${1:-1000000}
runs=${2:-3}
big=${BIG:-1}
k=8
cd "$(dirname "$0")/.."
go build -o bin/ds ./cmd/ds
ds=$PWD/bin/ds
mcap=$PWD/../shared/tools/mcap
if [ ! -x "$mcap" ]; then
	echo "bench_merge.sh: no mcap tool at ../shared/tools/mcap: ds only" >&2
	mcap=
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd scripts/readbench && go build -o "$work/readbench" .)
echo "generating $k captures of $n frames$([ -n "$mcap" ] && echo ' and their MCAP twins')" >&2
"$work/readbench" -mode merge -o "$work" -k "$k" -n "$n" -mcap="$([ -n "$mcap" ] && echo true || echo false)" > "$work/files"
if [ "$big" = 1 ]; then
	echo "generating $k captures of $((4 * n)) frames" >&2
	mkdir "$work/big"
	"$work/readbench" -mode merge -o "$work/big" -k "$k" -n $((4 * n)) -mcap=false -prefix big >> "$work/files"
fi
sed 's/^/  /' "$work/files"
ins=() mins=() bigs=()
for ((j = 0; j < k; j++)); do
	ins+=("$work/in$j.dss")
	mins+=("$work/in$j.mcap")
	bigs+=("$work/big/big$j.dss")
done

fail=0
# The merged capture holds exactly the inputs' frames.
echo "checking ds merge's output" >&2
"$ds" merge -q -o "$work/check.dss" "${ins[@]}"
"$ds" info "$work/check.dss" > "$work/info.txt"
got=$(grep -c "^  frames  *$n (" "$work/info.txt" || true)
gaps=$(grep -c '^  gaps  *0 (0 frames missing)' "$work/info.txt" || true)
ended=$(grep -c '^  ended cleanly  *yes' "$work/info.txt" || true)
if [ "$got" != "$k" ] || [ "$gaps" != "$k" ] || [ "$ended" != "$k" ]; then
	echo "FAIL: ds info of the merged capture: $got streams of $n frames, $gaps without gaps, $ended ended; want $k of each"
	fail=1
fi
for ((j = 0; j < k; j++)); do
	if ! cmp -s <("$ds" log --cat -c 'bench.*' --stream "bench-$j#1" "$work/check.dss") <("$ds" log --cat -c 'bench.*' "${ins[$j]}"); then
		echo "FAIL: stream bench-$j#1 of the merged capture differs from in$j.dss"
		fail=1
	fi
done
lines=$("$ds" log --cat -c 'bench.*' "$work/check.dss" | wc -l)
if [ "$lines" != $((k * n)) ]; then
	echo "FAIL: ds log --cat of the merged capture: $lines lines, want $((k * n))"
	fail=1
fi
rm -f "$work/check.dss"
if [ -n "$mcap" ]; then
	"$mcap" merge -o "$work/check.mcap" "${mins[@]}"
	msgs=$("$mcap" info "$work/check.mcap" | awk '/^messages:/ {print $2}')
	if [ "$msgs" != $((k * n)) ]; then
		echo "FAIL: mcap info of mcap merge's output: $msgs messages, want $((k * n))"
		fail=1
	fi
	rm -f "$work/check.mcap"
fi

# peak CMD…: runs CMD under /usr/bin/time -v and prints its peak RSS in KiB.
peak() {
	/usr/bin/time -v "$@" 2> "$work/time.txt" > /dev/null || echo "exit $?: $*" >> "$work/exits"
	awk -F: '/Maximum resident set size/ {gsub(/ /, "", $2); print $2}' "$work/time.txt"
}
# clock CMD…: runs CMD and prints its wall seconds.
clock() {
	local s e
	s=$EPOCHREALTIME
	"$@" > /dev/null 2>> "$work/stderr" || echo "exit $?: $*" >> "$work/exits"
	e=$EPOCHREALTIME
	echo "$s $e" | awk '{printf "%.6f", $2 - $1}'
}
med() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

dsmerge=("$ds" merge -q --overwrite -o "$work/out.dss" "${ins[@]}")
mcapmerge=("$mcap" merge -o "$work/out.mcap" "${mins[@]}")
echo "timing: ds merge$([ -n "$mcap" ] && echo ' vs mcap merge'), $runs pairs" >&2
rss_ds=$(peak "${dsmerge[@]}")
rss_mcap=-
[ -z "$mcap" ] || rss_mcap=$(peak "${mcapmerge[@]}")
: > "$work/t"
for ((i = 0; i < runs; i++)); do
	a=$(clock "${dsmerge[@]}")
	b=-
	[ -z "$mcap" ] || b=$(clock "${mcapmerge[@]}")
	echo "$a $b" >> "$work/t"
done
t_ds=$(awk '{print $1}' "$work/t" | med)
t_mcap=- ratio=-
if [ -n "$mcap" ]; then
	t_mcap=$(awk '{print $2}' "$work/t" | med)
	ratio=$(awk '{print $2 / $1}' "$work/t" | med)
fi
rss_big=-
if [ "$big" = 1 ]; then
	echo "measuring: ds merge of the 4x input" >&2
	rss_big=$(peak "$ds" merge -q --overwrite -o "$work/out.dss" "${bigs[@]}")
fi
rm -f "$work/out.dss" "$work/out.mcap"

ge() { awk -v a="$1" -v b="$2" 'BEGIN {exit !(a >= b)}'; }
verdict() { if "$@"; then echo met; else echo "not met"; fi; }
mib() { [ "$1" = - ] && echo - || awk -v k="$1" 'BEGIN {printf "%.1f MiB", k / 1024}'; }
rate=$(awk -v f=$((k * n)) -v t="$t_ds" 'BEGIN {printf "%.2f", f / t / 1e6}')
printf '\n%d captures of %d frames (%d in all), %d paired runs, medians of whole-process wall time\n' "$k" "$n" $((k * n)) "$runs"
printf '%-40s|%-16s|%-18s|%s\n' measure value target result
printf '%-40s|%-16s|%-18s|%s\n' "ds merge wall time" "${t_ds} s" - -
printf '%-40s|%-16s|%-18s|%s\n' "ds merge frames/s" "${rate}M/s" ">= 2M/s" "$(verdict ge "$rate" 2)"
printf '%-40s|%-16s|%-18s|%s\n' "ds merge peak RSS" "$(mib "$rss_ds")" "<= 64 MiB" "$(verdict ge $((64 * 1024)) "$rss_ds")"
if [ "$big" = 1 ]; then
	# Not rising: within 10% (and 4 MiB) of the 1x peak.
	printf '%-40s|%-16s|%-18s|%s\n' "ds merge peak RSS, 4x input" "$(mib "$rss_big")" "not above 1x" \
		"$(verdict awk -v a="$rss_big" -v b="$rss_ds" 'BEGIN {exit !(a <= b * 1.1 || a <= b + 4096)}')"
fi
if [ -n "$mcap" ]; then
	printf '%-40s|%-16s|%-18s|%s\n' "mcap merge wall time" "${t_mcap} s" - -
	printf '%-40s|%-16s|%-18s|%s\n' "mcap merge / ds merge time" "$(awk -v r="$ratio" 'BEGIN {printf "%.2fx", r}')" ">= 3x" "$(verdict ge "$ratio" 3)"
	printf '%-40s|%-16s|%-18s|%s\n' "mcap merge peak RSS" "$(mib "$rss_mcap")" "> ds's" "$(verdict ge "$rss_mcap" "$rss_ds")"
fi
if [ -s "$work/exits" ]; then
	echo "non-zero exits while timing:"
	sort "$work/exits" | uniq -c
	head -5 "$work/stderr" 2> /dev/null || true
	fail=1
fi
exit "$fail"

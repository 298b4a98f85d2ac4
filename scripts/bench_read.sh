#!/usr/bin/env bash
# Times ds's readers against cat(1) and the mcap tool (the foxglove MCAP
# CLI, Go version, looked for at ../shared/tools/mcap from the project root;
# where it is absent its rows are skipped, not failed). The inputs come from
# scripts/readbench: N messages of 100-byte JSON and a newline over 3
# channels, the same messages as raw.txt (one a line), json.dss (3
# JsonRecord channels, zstd), text.dss (3 TextStream channels: one line a
# frame) and x.mcap (3 json channels, zstd chunks). Every job runs its two
# commands in turn, A B A B …, RUNS pairs after one warm-up pair, output to
# /dev/null, timed as whole processes; the ratio is the median of the pair
# ratios, which holds when the machine's speed drifts. Jobs and targets:
#   cat     ds log --cat text.dss            vs cat raw.txt            ≤ 1.25×
#   raw     ds log --cat -c 'bench.*' json   vs mcap cat x.mcap        ≤ 1.0×
#   log     ds log json.dss                  vs mcap cat x.mcap        ≤ 1.0×
#   json    ds log --json json.dss           vs mcap cat --json x.mcap ≤ 1.0×
#   info    ds info json.dss                 vs mcap info x.mcap       ≤ 2× and ≤ 50 ms
#   tail    ds tail -n 10 json.dss           vs ds log json.dss | tail -n 10
#           (skipped while ds has no tail command; no target)
#   lines   ds log text.dss: lines a second (N / median)               ≥ 5 M lines/s
# With BIG=1 it also times the info job on 10 M messages (about 1 GiB of
# JSON). Before timing it checks that ds log --cat gives raw.txt byte for
# byte and that every reader prints N lines; it exits 1 when a check fails
# (a missed target is reported, not failed).
# Usage: scripts/bench_read.sh [N=2000000] [RUNS=5]    (env BIG=1)
set -euo pipefail
n=${1:-2000000}
runs=${2:-5}
big=${BIG:-0}
cd "$(dirname "$0")/.."
go build -o bin/ds ./cmd/ds
ds=$PWD/bin/ds
mcap=$PWD/../shared/tools/mcap
if [ ! -x "$mcap" ]; then
	echo "bench_read.sh: no mcap tool at ../shared/tools/mcap: ds against cat only" >&2
	mcap=
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd scripts/readbench && go build -o "$work/readbench" .)
"$work/readbench" -o "$work" -n "$n" > "$work/files"
if [ "$big" = 1 ]; then
	mkdir "$work/big"
	"$work/readbench" -o "$work/big" -n 10000000 >> "$work/files"
	rm "$work/big/raw.txt" "$work/big/text.dss"
fi
sed 's/^/  /' "$work/files"
cat "$work/raw.txt" "$work/text.dss" "$work/json.dss" > /dev/null # into the page cache

fail=0
# check WHAT EXPECTED CMD…: CMD's stdout must have EXPECTED lines.
check() {
	local what=$1 want=$2 got
	shift 2
	got=$("$@" 2> "$work/check.err" | wc -l) || true
	if [ "$got" != "$want" ]; then
		echo "FAIL: $what: $got lines, want $want: $(head -c 300 "$work/check.err")"
		fail=1
	fi
}
for f in text.dss json.dss; do
	c=(); [ $f = json.dss ] && c=(-c 'bench.*')
	if ! "$ds" log --cat "${c[@]}" "$work/$f" 2> "$work/check.err" | cmp -s - "$work/raw.txt"; then
		echo "FAIL: ds log --cat ${c[*]} $f differs from raw.txt: $(head -c 300 "$work/check.err")"
		fail=1
	fi
done
check "ds log json.dss" "$n" "$ds" log "$work/json.dss"
check "ds log text.dss" "$n" "$ds" log "$work/text.dss"
check "ds log --json json.dss" "$n" "$ds" log --json "$work/json.dss"
# mcap cat --json prints the payload's own newline inside each object: 2 lines a message.
[ -z "$mcap" ] || check "mcap cat x.mcap" "$n" "$mcap" cat "$work/x.mcap"
[ -z "$mcap" ] || check "mcap cat --json x.mcap" $((2 * n)) "$mcap" cat --json "$work/x.mcap"

# clock CMD: runs the shell command CMD, output thrown away, and prints its
# wall seconds; a non-zero exit is noted in $work/exits.
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
q() { printf '%q' "$1"; } # a path, quoted for eval

rows=()
# row JOB DS BASE RATIO TARGET VERDICT
row() { rows+=("$(printf '%-44s|%9s|%9s|%12s|%-16s|%s' "$@")"); }
ms() { awk -v s="$1" 'BEGIN {printf "%.1f ms", s * 1000}'; }
x() { awk -v r="$1" 'BEGIN {printf "%.2fx", r}'; }
le() { awk -v a="$1" -v b="$2" 'BEGIN {exit !(a <= b)}'; }
# job NAME A B MAXRATIO: a paired job whose target is a ratio.
job() {
	local ta tb r verdict=met
	echo "timing: $1" >&2
	read -r ta tb r < <(pair "$2" "$3")
	le "$r" "$4" || verdict="not met"
	row "$1" "$(ms "$ta")" "$(ms "$tb")" "$(x "$r")" "<= ${4}x" "$verdict"
}
skip() { row "$1" - - - "$2" "skipped: $3"; }

D=$(q "$ds") M=$(q "$mcap") W=$(q "$work")
job "ds log --cat text.dss vs cat raw.txt" "$D log --cat $W/text.dss" "cat $W/raw.txt" 1.25
for j in "ds log --cat -c 'bench.*' vs mcap cat|log --cat -c 'bench.*'|cat" "ds log (decorated) vs mcap cat|log|cat" "ds log --json vs mcap cat --json|log --json|cat --json"; do
	IFS='|' read -r name dsargs mcapargs <<< "$j"
	if [ -n "$mcap" ]; then
		job "$name" "$D $dsargs $W/json.dss" "$M $mcapargs $W/x.mcap" 1.0
	else
		skip "$name" "<= 1.0x" "no mcap tool"
	fi
done
# info: a ratio and an absolute bound.
info() { # MESSAGES DIR
	local ta tb r verdict=met
	if [ -n "$mcap" ]; then
		echo "timing: ds info vs mcap info, $1 messages" >&2
		read -r ta tb r < <(pair "$D info $2/json.dss" "$M info $2/x.mcap")
		le "$r" 2 && le "$ta" 0.050 || verdict="not met"
		row "ds info vs mcap info ($1 messages)" "$(ms "$ta")" "$(ms "$tb")" "$(x "$r")" "<= 2x, <= 50 ms" "$verdict"
	else
		echo "timing: ds info, $1 messages" >&2
		read -r ta tb r < <(pair "$D info $2/json.dss" true)
		le "$ta" 0.050 || verdict="not met"
		row "ds info ($1 messages; no mcap)" "$(ms "$ta")" - - "<= 50 ms" "$verdict"
	fi
}
info "$n" "$W"
[ "$big" != 1 ] || info 10000000 "$W/big"
if "$ds" tail --help > /dev/null 2>&1; then
	echo "timing: ds tail" >&2
	read -r ta tb r < <(pair "$D tail -n 10 $W/json.dss" "sh -c '$D log $W/json.dss | tail -n 10'")
	row "ds tail -n 10 vs ds log | tail -n 10" "$(ms "$ta")" "$(ms "$tb")" "$(x "$r")" "-" "(no target)"
else
	echo "ds tail: not available"
	skip "ds tail -n 10 vs ds log | tail -n 10" "-" "ds tail: not available"
fi
echo "timing: ds log text.dss, lines a second" >&2
read -r ta tb r < <(pair "$D log $W/text.dss" "cat $W/raw.txt")
rate=$(awk -v n="$n" -v t="$ta" 'BEGIN {printf "%.2f", n / t / 1e6}')
verdict=met
le 5 "$rate" || verdict="not met"
row "ds log text.dss (decorated), lines/s" "$(ms "$ta")" "$(ms "$tb")" "${rate}M/s" ">= 5M lines/s" "$verdict"

echo
echo "$n messages, $runs paired runs each, medians of whole-process wall time (ratio: median of the pair ratios)"
printf '%-44s|%9s|%9s|%12s|%-16s|%s\n' job ds baseline ratio/rate target result
for r in "${rows[@]}"; do echo "$r"; done
if [ -s "$work/exits" ]; then
	echo "non-zero exits while timing (stderr: first lines):"
	sort "$work/exits" | uniq -c
	head -5 "$work/stderr"
fi
exit "$fail"

#!/usr/bin/env bash
# Measures the start-up cost of ds (issue 23 item 4: shell pipelines call
# ds in loops) against a Go hello-world built in the same run, the floor
# of any Go program: ds --version, and ds info and ds log of a small
# capture (testdata/capture/small.dss). Each round runs every command LOOP
# times back to back, the commands alternating (hello, ds --version, ds
# info, ds log, hello, ...), and takes the CPU time (user + system) and
# wall time per run from bash's time; the figures are the medians over
# ROUNDS rounds, and each command's ratio to hello is the median of the
# per-round ratios, so that a noisy shared machine moves both sides of a
# pair alike. Peak RSS comes from /usr/bin/time when it is installed.
# The load average is printed before and after. With $DS_BEFORE set to
# another ds binary (say one built from main), its --version and info
# are measured in the same rounds, for before/after figures.
# Target (issue 23 item 4): ds --version and ds info ≤ 5 ms, read here as
# ≤ 5× hello on a machine where hello takes more than 1 ms.
# Usage: scripts/bench_startup.sh [ROUNDS=7] [LOOP=40]
set -euo pipefail
rounds=${1:-7}
loop=${2:-40}
[ "$rounds" -ge 5 ] || { echo "bench_startup.sh: ROUNDS must be at least 5 (medians of >= 5)" >&2; exit 2; }
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/ds" ./cmd/ds
printf 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("hello") }\n' > "$work/hello.go"
go build -o "$work/hello" "$work/hello.go"
small=$PWD/testdata/capture/small.dss
names=(hello version info log)
cmds=("$work/hello" "$work/ds --version" "$work/ds info $small" "$work/ds log $small")
if [ -n "${DS_BEFORE:-}" ]; then
	names+=(before-version before-info)
	cmds+=("$DS_BEFORE --version" "$DS_BEFORE info $small")
fi
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)   ($(nproc) CPUs; rounds $rounds, $loop runs per command per round)"
ls -l "$work/ds" | awk '{printf "ds binary: %.1f MB\n", $5 / 1e6}'
TIMEFORMAT='%R %U %S'
for ((r = 1; r <= rounds; r++)); do
	for i in "${!names[@]}"; do
		# shellcheck disable=SC2086 # the command's words split on purpose
		t=$( { time (for ((k = 0; k < loop; k++)); do ${cmds[$i]} > /dev/null; done) ; } 2>&1 )
		echo "$r ${names[$i]} $t" >> "$work/times"
	done
done
echo "load after:  $(cut -d' ' -f1-3 /proc/loadavg)"
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf '%-16s %10s %10s %8s %10s\n' command "cpu ms/run" "wall ms/run" "cpu/hello" "peak RSS"
for name in "${names[@]}"; do
	cpu=$(awk -v n="$name" -v l="$loop" '$2 == n {print ($4 + $5) * 1000 / l}' "$work/times" | median)
	wall=$(awk -v n="$name" -v l="$loop" '$2 == n {print $3 * 1000 / l}' "$work/times" | median)
	ratio=$(awk -v n="$name" '$2 == "hello" {h[$1] = $4 + $5} $2 == n {c[$1] = $4 + $5} END {for (r in c) if (h[r] > 0) print c[r] / h[r]}' "$work/times" | median)
	rss=-
	if [ -x /usr/bin/time ]; then
		i=0; for j in "${!names[@]}"; do [ "${names[$j]}" = "$name" ] && i=$j; done
		# shellcheck disable=SC2086
		rss=$( { /usr/bin/time -f '%M' ${cmds[$i]} > /dev/null; } 2>&1 | tail -1 )
		rss="$((rss / 1024)) MiB"
	fi
	printf '%-16s %10.2f %10.2f %8.2f %10s\n' "$name" "$cpu" "$wall" "$ratio" "$rss"
done

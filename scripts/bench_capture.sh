#!/usr/bin/env bash
# Measures the size of live captures against zstd -3 of the same text
# (issue 23 item 2), where the writer never waits on compression (ds wrap
# without --backpressure): what it compresses, and how, depends on how far
# compression falls behind the command.
#   burst  ds wrap -- seq 1 300000: 2 MB at once, which fits the queue    ≤ 1.1× zstd -3
#   cat    ds wrap -- cat TEXT, MIB MiB of varied log text at full speed  ≤ 2× zstd -3, 0 drops
#   none   ds wrap --compress none -- cat TEXT                            0 drops
# TEXT is scripts/capturesize's raw.txt (16 MiB of mixed service, access,
# JSON and training logs) repeated to MIB MiB: its repeats lie 16 MiB apart,
# beyond zstd -3's window and a block's, so they compress no better than
# new text. zstd -3 runs on the whole file (single thread) in the same run.
# Each job runs RUNS times (at least 5); a row gives the median and range of
# the size ratio and the runs that dropped frames (ds info's "dropped").
# With BASE=path/to/an/older/ds its runs alternate with this ds's (A B A B),
# for before/after figures in the same conditions. Every capture is checked
# against its input (ds log --cat | cmp); a mismatch exits 1. The load
# average is printed before and after.
# Usage: scripts/bench_capture.sh [MIB=512] [RUNS=5]    (env BASE=old-ds)
set -euo pipefail
mib=${1:-512}
runs=${2:-5}
base=${BASE:-}
[ "$runs" -ge 5 ] || { echo "bench_capture.sh: RUNS must be at least 5 (medians of >= 5)" >&2; exit 2; }
command -v zstd > /dev/null || { echo "bench_capture.sh: needs zstd(1) (apt-get install zstd)" >&2; exit 1; }
cd "$(dirname "$0")/.."
go build -o bin/ds ./cmd/ds
ds=$PWD/bin/ds
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go run ./scripts/capturesize -o "$work" -mib 16 > /dev/null
for _ in $(seq $(((mib + 15) / 16))); do cat "$work/raw.txt"; done | head -c $((mib << 20)) > "$work/text.txt"
rm -f "$work"/*.dss
seq 1 300000 > "$work/seq.txt"
zstd -3 -q -T1 "$work/text.txt" -o "$work/text.zst"
zstd -3 -q -T1 "$work/seq.txt" -o "$work/seq.zst"
cat "$work/text.txt" > /dev/null # into the page cache
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "text.txt $(wc -c < "$work/text.txt") bytes, zstd -3 $(wc -c < "$work/text.zst"); seq.txt $(wc -c < "$work/seq.txt"), zstd -3 $(wc -c < "$work/seq.zst")"

fail=0
# run BIN JOB: one capture; appends "ratio dropped" to $work/JOB.BIN-name.
run() {
	local bin=$1 job=$2 out=$work/c.dss input zst flags=()
	case $job in
	burst) input=seq.txt zst=seq.zst cmd=(seq 1 300000) ;;
	cat) input=text.txt zst=text.zst cmd=(cat "$work/text.txt") ;;
	none) input=text.txt zst=text.zst cmd=(cat "$work/text.txt") flags=(--compress none) ;;
	esac
	rm -f "$out"
	"$bin" wrap -q "${flags[@]}" -o "$out" -- "${cmd[@]}" > /dev/null 2>> "$work/stderr" || true
	local dropped
	dropped=$("$bin" info "$out" | awk '/^  dropped/ {print $2; exit}')
	if [ "${dropped:-0}" = 0 ] && ! "$bin" log --cat "$out" | cmp -s - "$work/$input"; then
		echo "FAIL: $bin wrap ($job): the capture does not read back as its input" >&2
		fail=1
	fi
	awk -v a="$(wc -c < "$out")" -v b="$(wc -c < "$work/$zst")" -v d="${dropped:-?}" 'BEGIN {printf "%.3f %s\n", a / b, d}' >> "$work/$job.$3"
}
for job in burst cat none; do
	for _ in $(seq "$runs"); do
		run "$ds" "$job" new
		[ -z "$base" ] || run "$base" "$job" base
	done
done

# row JOB WHO TARGET: median, min and max ratio, runs that dropped frames.
row() {
	sort -n "$work/$1.$2" | awk -v job="$1" -v who="$2" -v target="$3" '
		{r[NR] = $1; if ($2 != "0") dropped++}
		END {
			med = (NR % 2) ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
			printf "%-6s %-5s %6.2fx %6.2fx %6.2fx   %d of %d   %s\n", job, who, med, r[1], r[NR], dropped, NR, target
		}'
}
echo
echo "capture size / zstd -3 of the same text, $runs runs each"
printf '%-6s %-5s %7s %7s %7s   %s   %s\n' job ds median min max dropped target
for job in burst cat none; do
	case $job in burst) target="<= 1.1x" ;; cat) target="<= 2x, 0 drops" ;; none) target="0 drops" ;; esac
	row "$job" new "$target"
	[ -z "$base" ] || row "$job" base ""
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -s "$work/stderr" ]; then
	echo
	echo "stderr of the captures (first 10 lines):"
	head -10 "$work/stderr"
fi
exit "$fail"

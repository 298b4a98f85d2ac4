#!/usr/bin/env bash
# Measures fleet capture over NATS JetStream (issue 12): 4 publishers
# (ds emit -o nats://… of MIB MiB of 100-byte lines each, a frame per line)
# to one ingester (ds collect: an embedded JetStream server and a durable
# consumer storing into a store), timed from the publishers' start until
# the store holds all 4 streams ended; against, in the same run, the same
# 4 ds emit writing their capture to local files (zstd). Every run is
# checked: ds gaps --check of the store passes (no loss), and ds log --cat
# of each node is byte-identical to the child's output.
# Prints frames/s and MB/s (the lines' bytes) of each, and the ratio.
# Usage: scripts/bench_fleet.sh [MIB=64] [RUNS=3]
set -euo pipefail
mib=${1:-64}
runs=${2:-3}
cd "$(dirname "$0")/.."
go build -o bin/ds ./cmd/ds
go build -o bin/ds-natsd ./cmd/ds-natsd   # ds collect runs it beside bin/ds
ds=$PWD/bin/ds
work=$(mktemp -d)
collect_pid=
trap '[ -n "$collect_pid" ] && kill "$collect_pid" 2>/dev/null; rm -rf "$work"' EXIT
lines=$((mib * 1024 * 1024 / 100))
awk -v n=$lines 'BEGIN { for (i = 0; i < n; i++) { s = sprintf("%08d INFO worker-%d handled request %d in %d ms path=/api/items/%d", i, i % 8, i * 7, i % 250, i % 10007); printf "%-99.99s\n", s } }' > "$work/raw.txt"
cat "$work/raw.txt" > /dev/null
now() { date +%s.%N; }
frames_in() { # total frames of the streams of a store or captures
	"$ds" info --json "$@" | awk -F': ' '/^      "frames": / { gsub(",", "", $2); s += $2 } END { print s + 0 }'
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

for run in $(seq 1 "$runs"); do
	# Local files: 4 ds emit at once.
	rm -f "$work"/f*.dss
	t0=$(now)
	for i in 1 2 3 4; do "$ds" emit -c app.log --node "p$i" -o "$work/f$i.dss" < "$work/raw.txt" & done
	wait
	t1=$(now)
	echo "$t1 - $t0" | bc >> "$work/file.times"
	frames_in "$work"/f*.dss > "$work/file.frames"

	# NATS: ds collect, then 4 ds emit -o nats://… at once.
	rm -rf "$work/store" "$work/url"
	"$ds" collect "$work/store" --listen 127.0.0.1:0 --url-file "$work/url" > "$work/collect.out" 2> "$work/collect.err" &
	collect_pid=$!
	for _ in $(seq 100); do [ -s "$work/url" ] && break; sleep 0.1; done
	url=$(cat "$work/url")
	t0=$(now)
	for i in 1 2 3 4; do "$ds" emit -c app.log --node "p$i" -o "$url" < "$work/raw.txt" 2> "$work/emit$i.err" & done
	wait $(jobs -p | grep -v "^$collect_pid$") 2>/dev/null || true
	for _ in $(seq 6000); do
		ended=$("$ds" info --json "$work/store" 2>/dev/null | grep -c '"ended": true' || true)
		[ "$ended" -ge 4 ] && break
		sleep 0.05
	done
	t1=$(now)
	kill -INT "$collect_pid"; wait "$collect_pid" || true; collect_pid=
	echo "$t1 - $t0" | bc >> "$work/nats.times"
	frames_in "$work/store" > "$work/nats.frames"
	cat "$work"/emit*.err >&2
	"$ds" gaps --check "$work/store" || { echo "bench_fleet.sh: the store has losses" >&2; exit 1; }
	for i in 1 2 3 4; do
		"$ds" log --cat --node "p$i" "$work/store" | cmp -s - "$work/raw.txt" || { echo "bench_fleet.sh: p$i differs from the child's output" >&2; exit 1; }
	done
done

bytes=$((4 * lines * 100))
file_t=$(median < "$work/file.times")
nats_t=$(median < "$work/nats.times")
report() { # name seconds frames
	awk -v n="$1" -v t="$2" -v f="$3" -v b=$bytes 'BEGIN { printf "%-28s %7.2f s  %10.0f frames/s  %7.1f MB/s\n", n, t, f / t, b / t / 1e6 }'
}
echo "4 publishers × $mib MiB of 100-byte lines ($((4 * lines)) lines), median of $runs runs"
report "4 × ds emit -o FILE" "$file_t" "$(cat "$work/file.frames")"
report "4 × ds emit -o nats:// → 1" "$nats_t" "$(cat "$work/nats.frames")"
awk -v a="$nats_t" -v b="$file_t" 'BEGIN { printf "ratio nats / file: %.2f× the time\n", a / b }'

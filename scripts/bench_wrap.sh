#!/usr/bin/env bash
# Measures ds wrap against plain redirection and a pipe (ARCHITECTURE.md §7), in
# one run so that the ratios hold on a noisy shared machine, and checks
# every capture it makes: 0 frames dropped (from the capture's own
# datastream.health records) and ds log --cat byte-identical to the raw
# output. Workloads:
#   awk     a child writing MIB MiB of 99-character log lines
#           baseline: child | cat > file    (target: ds wrap ≤ 1.1×)
#   fast    cat of a FASTMIB MiB file in the page cache (≥ 1 GB/s)
#           baseline: cat file | tee f > /dev/null    (target: ≤ 1.3×)
# each wrapped plain (--compress none) and zstd (the default for files),
# and the capture size against zstd -3 of the raw text (target ≤ 1.1×).
# Needs zstd(1) (apt-get install zstd) for the size comparison.
# Usage: scripts/bench_wrap.sh [MIB=256] [RUNS=3] [FASTMIB=1024]
set -euo pipefail
mib=${1:-256}
runs=${2:-3}
fastmib=${3:-1024}
command -v zstd >/dev/null || { echo "bench_wrap.sh: needs zstd(1) (apt-get install zstd)" >&2; exit 2; }
cd "$(dirname "$0")/.."
go build -o bin/ds ./cmd/ds
ds=$PWD/bin/ds
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
lines=$((mib * 1024 * 1024 / 100))
cat > "$work/child.sh" <<EOC
#!/bin/sh
# Log-like lines of 99 characters and a newline.
awk 'BEGIN { for (i = 0; i < $lines; i++) { s = sprintf("%08d INFO worker-%d handled request %d in %d ms path=/api/items/%d status=%d ", i, i % 8, i * 7, i % 250, i % 10007, (i % 50 ? 200 : 500)); printf "%-99.99s\\n", s } }'
EOC
chmod +x "$work/child.sh"
"$work/child.sh" > "$work/raw.txt"
# The fast child's input: the awk text repeated to FASTMIB MiB, then cached.
: > "$work/big.txt"
while [ "$(stat -c %s "$work/big.txt")" -lt $((fastmib << 20)) ]; do cat "$work/raw.txt" >> "$work/big.txt"; done
truncate -s $((fastmib << 20)) "$work/big.txt"
cat "$work/big.txt" > /dev/null

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
timeit() { # prints seconds
	local s e
	s=$(date +%s.%N); "$@"; e=$(date +%s.%N)
	echo "$e - $s" | bc
}
fail=0
# check CAPTURE RAW: 0 dropped, byte-exact.
check() {
	local dropped
	dropped=$("$ds" info --json "$1" | awk -F': ' '/"mux_dropped"/ {gsub(/[^0-9]/, "", $2); s += $2} END {print s + 0}')
	if [ "$dropped" != 0 ]; then echo "FAIL: $1: $dropped frames dropped"; fail=1; fi
	if ! "$ds" log --cat -c proc.bench.stdout "$1" | cmp -s - "$2"; then echo "FAIL: $1: ds log --cat differs from the raw output"; fail=1; fi
}
declare -A t
for i in $(seq "$runs"); do
	rm -f "$work"/*.dss
	t[pipe]+="$(timeit sh -c "'$work/child.sh' | cat > '$work/pipe.txt'") "
	t[wrap]+="$(timeit "$ds" wrap -q --label bench --compress none -o "$work/x.dss" -- "$work/child.sh") "
	t[wrapz]+="$(timeit "$ds" wrap -q --label bench -o "$work/z.dss" -- "$work/child.sh") "
	t[tee]+="$(timeit sh -c "cat '$work/big.txt' | tee '$work/tee.txt' > /dev/null") "
	rm -f "$work/tee.txt"
	t[fast]+="$(timeit "$ds" wrap -q --label bench --compress none -o "$work/f.dss" -- cat "$work/big.txt") "
	check "$work/f.dss" "$work/big.txt"
	rm -f "$work/f.dss"
	t[fastz]+="$(timeit "$ds" wrap -q --label bench -o "$work/fz.dss" -- cat "$work/big.txt") "
	check "$work/fz.dss" "$work/big.txt"
	fz=$(stat -c %s "$work/fz.dss")
	rm -f "$work/fz.dss"
	check "$work/x.dss" "$work/raw.txt"
	check "$work/z.dss" "$work/raw.txt"
done
declare -A m
for k in pipe wrap wrapz tee fast fastz; do m[$k]=$(echo ${t[$k]} | tr ' ' '\n' | median); done
ratio() { printf '%.2f' "$(echo "$1 / $2" | bc -l)"; }
echo "median of $runs runs, seconds (ratios against the baseline of the same run)"
echo "awk child, $mib MiB in $lines lines:"
printf '  %-36s %8s\n' "child | cat > file" "${m[pipe]}"
printf '  %-36s %8s  %sx the pipe\n' "ds wrap -q --compress none" "${m[wrap]}" "$(ratio "${m[wrap]}" "${m[pipe]}")"
printf '  %-36s %8s  %sx the pipe\n' "ds wrap -q (zstd)" "${m[wrapz]}" "$(ratio "${m[wrapz]}" "${m[pipe]}")"
echo "fast child, cat of a $fastmib MiB cached file:"
printf '  %-36s %8s  (%.0f MB/s)\n' "cat file | tee f > /dev/null" "${m[tee]}" "$(echo "($fastmib * 1.048576) / ${m[tee]}" | bc -l)"
printf '  %-36s %8s  %sx tee\n' "ds wrap -q --compress none -- cat" "${m[fast]}" "$(ratio "${m[fast]}" "${m[tee]}")"
printf '  %-36s %8s  %sx tee\n' "ds wrap -q (zstd) -- cat" "${m[fastz]}" "$(ratio "${m[fastz]}" "${m[tee]}")"
raw=$(stat -c %s "$work/raw.txt")
z3=$(zstd -3 -c "$work/raw.txt" | wc -c)
zb3=$(zstd -3 -c "$work/big.txt" | wc -c)
echo "capture size: awk $raw bytes raw, $(stat -c %s "$work/x.dss") plain, $(stat -c %s "$work/z.dss") zstd; zstd -3 of the raw text $z3 ($(ratio "$(stat -c %s "$work/z.dss")" "$z3")x)"
echo "capture size: fast $((fastmib << 20)) bytes raw, $fz zstd; zstd -3 $zb3 ($(ratio "$fz" "$zb3")x)"
if [ "$fail" = 0 ]; then echo "every capture: 0 dropped, byte-exact"; else exit 1; fi

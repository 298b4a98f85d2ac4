#!/usr/bin/env bash
# Measures ds wrap against plain redirection (DESIGN.md §7), in one run so
# that the ratios hold on a noisy shared machine:
#   child > file            (baseline)
#   child | cat > file      (a plain pipe)
#   ds wrap -q -o x.dss -- child        (and --compress zstd)
#   ds log --cat x.dss > /dev/null  vs  cat raw.txt > /dev/null
# The child writes MIB MiB of 100-byte lines as fast as it can.
# Usage: scripts/bench_wrap.sh [MIB=256] [RUNS=3]
set -euo pipefail
mib=${1:-256}
runs=${2:-3}
cd "$(dirname "$0")/.."
go build -o bin/ds ./cmd/ds
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
lines=$((mib * 1024 * 1024 / 100))
cat > "$work/child.sh" <<EOC
#!/bin/sh
# Log-like lines of 99 characters and a newline.
awk 'BEGIN { for (i = 0; i < $lines; i++) { s = sprintf("%08d INFO worker-%d handled request %d in %d ms path=/api/items/%d status=%d ", i, i % 8, i * 7, i % 250, i % 10007, (i % 50 ? 200 : 500)); printf "%-99.99s\\n", s } }'
EOC
chmod +x "$work/child.sh"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
timeit() { # prints seconds
	local s e
	s=$(date +%s.%N); "$@"; e=$(date +%s.%N)
	echo "$e - $s" | bc
}
declare -A t
for i in $(seq "$runs"); do
	t[file]+="$(timeit sh -c "'$work/child.sh' > '$work/raw.txt'") "
	t[pipe]+="$(timeit sh -c "'$work/child.sh' | cat > '$work/pipe.txt'") "
	t[wrap]+="$(timeit bin/ds wrap -q -o "$work/x.dss" -- "$work/child.sh") "
	t[wrapz]+="$(timeit bin/ds wrap -q --compress zstd -o "$work/z.dss" -- "$work/child.sh") "
	t[cat]+="$(timeit sh -c "cat '$work/raw.txt' > /dev/null") "
	t[logcat]+="$(timeit sh -c "bin/ds log --cat '$work/x.dss' > /dev/null") "
done
declare -A m
for k in file pipe wrap wrapz cat logcat; do m[$k]=$(echo ${t[$k]} | tr ' ' '\n' | median); done
raw=$(stat -c %s "$work/raw.txt")
echo "payload: $mib MiB in $lines lines; median of $runs runs (seconds)"
printf '%-28s %8s\n' "child > file" "${m[file]}"
printf '%-28s %8s\n' "child | cat > file" "${m[pipe]}"
printf '%-28s %8s  (%.2fx the pipe)\n' "ds wrap -q -o x.dss" "${m[wrap]}" "$(echo "${m[wrap]} / ${m[pipe]}" | bc -l)"
printf '%-28s %8s  (%.2fx the pipe)\n' "ds wrap -q --compress zstd" "${m[wrapz]}" "$(echo "${m[wrapz]} / ${m[pipe]}" | bc -l)"
printf '%-28s %8s\n' "cat raw > /dev/null" "${m[cat]}"
printf '%-28s %8s  (%.2fx cat speed)\n' "ds log --cat x.dss" "${m[logcat]}" "$(echo "${m[cat]} / ${m[logcat]}" | bc -l)"
bin/ds log --cat "$work/x.dss" | cmp - "$work/raw.txt" && echo "ds log --cat output identical to the raw text"
echo "capture size: $(stat -c %s "$work/x.dss") bytes uncompressed, $(stat -c %s "$work/z.dss") bytes zstd (raw text $raw)"
if command -v zstd >/dev/null; then echo "zstd -3 of the raw text: $(zstd -3 -c "$work/raw.txt" | wc -c) bytes"; fi
bin/ds info --json "$work/x.dss" | grep -E '"mux_dropped"|"missing_frames"' | sed 's/^ */dropped\/missing: /'

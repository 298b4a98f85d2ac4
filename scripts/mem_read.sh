#!/usr/bin/env bash
# Measures the peak resident memory of ds's readers (ds log --cat and
# ds info, output thrown away) on captures that are large, damaged or
# unusual, against the 64 MiB target. Inputs, from scripts/readbench
# -mode mem:
#   big     MIB MiB of frames (3 TextStream channels), plain records (env
#           COMPRESS=zstd: zstd blocks, and MIB MiB of them); a reference
#           row: the same readers on undamaged input
#   cut     big.dss without its first 1,000,000 bytes (tail -c +1000001)
#   flip    big.dss with one byte flipped in its 3rd frame (zstd: 200 bytes
#           after the first segment header, in the first block)
#   many    100,000 tiny one-stream captures back to back (cat of 100,000
#           files), each of its own node and life
#   bad     a segment header, then 3,000,000 back-to-back 9-byte records
#           with a valid tag and length and a wrong CRC
# SCALE full: MIB = 1024; small: MIB = 100 (many and bad are the same at
# both scales). The peak is the kernel's ru_maxrss of the finished process
# (/usr/bin/time -v's "Maximum resident set size"), read by readbench
# -mode peak, which cannot read below its own ~6 MiB; a run is killed
# after TIMEOUT seconds (default 600). It only measures: a missed target, a
# crash or a timeout is reported in the table, and the script exits 0.
# Usage: scripts/mem_read.sh [SCALE=full|small]    (env TIMEOUT=600, COMPRESS=none)
set -euo pipefail
scale=${1:-full}
timeout=${TIMEOUT:-600}
compress=${COMPRESS:-none}
case "$scale" in
full) mib=1024 ;;
small) mib=100 ;;
*) echo "usage: scripts/mem_read.sh [full|small]" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
go build -o bin/ds ./cmd/ds
ds=$PWD/bin/ds
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd scripts/readbench && go build -o "$work/readbench" .)
echo "writing the inputs ($scale: $mib MiB, $compress)" >&2
"$work/readbench" -mode mem -o "$work" -mib "$mib" -compress "$compress" | sed 's/^/  /'

limit=$((64 << 10)) # KiB
read -r floor _ < <("$work/readbench" -mode peak -- true)
rows=()
for input in big cut flip many bad; do
	for cmd in "log --cat" info; do
		echo "running: ds $cmd $input.dss" >&2
		# shellcheck disable=SC2086 # $cmd is two words on purpose
		kib=0 wall=- status=-
		read -r kib wall status < <("$work/readbench" -mode peak -timeout "${timeout}s" -- "$ds" $cmd "$work/$input.dss" 2>> "$work/stderr.$input") || status="not run"
		verdict=met
		[ "$kib" -le "$limit" ] || verdict="not met"
		case "$status" in 0 | 3) ;; *) verdict="$verdict (exit: $status)" ;; esac
		rows+=("$(printf '%-6s %-12s %10s %8s %7s  %s' "$input" "ds $cmd" "$(awk -v k="$kib" 'BEGIN {printf "%.1f", k / 1024}')" "$wall" "$status" "$verdict")")
	done
done

echo
echo "peak resident memory against 64 MiB ($scale; exit 3 is the expected status on damaged input;"
echo "a peak at the floor of $(awk -v k="$floor" 'BEGIN {printf "%.1f", k / 1024}') MiB, readbench's own, means at most that)"
printf '%-6s %-12s %10s %8s %7s  %s\n' input command "peak MiB" "wall s" exit result
for r in "${rows[@]}"; do echo "$r"; done
for input in big cut flip many bad; do
	if [ -s "$work/stderr.$input" ]; then
		echo "$input.dss: $(wc -l < "$work/stderr.$input") lines on stderr, the first: $(head -c 200 "$work/stderr.$input" | head -1)"
	fi
done
exit 0

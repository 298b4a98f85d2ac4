#!/usr/bin/env bash
# Measures the peak resident memory of every ds command that reads or
# writes captures on the widest captures the format allows, against the
# 64 MiB every reader and writer must keep to (issue 21 item 5): segment
# headers of 16 MiB, each declaring about 120 000 channels, from
# scripts/readbench -mode wide (wide.dss, and wide2.dss: the same on a
# second stream, for merge and diff); one file of both streams (ds merge
# of the two, and the two concatenated), read from its start and from its
# middle; and a store of both, whose catalog.json holds 240 000 channels
# (about 60 MB).
# The peak is the kernel's ru_maxrss of the finished process, read by
# readbench -mode peak (it cannot read below its own ~6 MiB). The baseline
# of the same run is `cat wide.dss`, which holds next to nothing. It only
# measures: a missed target or a failure is reported in the table, and the
# script exits 0.
# Usage: scripts/mem_wide.sh [N]    (N messages per capture, default 30000;
#        env TIMEOUT=600 seconds per command)
set -euo pipefail
n=${1:-30000}
timeout=${TIMEOUT:-600}
cd "$(dirname "$0")/.."
go build -o bin/ds ./cmd/ds
ds=$PWD/bin/ds
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd scripts/readbench && go build -o "$work/readbench" .)
echo "writing the inputs ($n messages each)" >&2
"$work/readbench" -mode wide -o "$work" -n "$n" | sed 's/^/  /' >&2
w=$work/wide.dss w2=$work/wide2.dss store=$work/store

limit=$((64 << 10)) # KiB
rows=()
measure() { # label, then the command
	local label=$1 kib=0 wall=- status=- verdict=met
	shift
	echo "running: $label" >&2
	read -r kib wall status < <("$work/readbench" -mode peak -timeout "${timeout}s" -- "$@" 2>> "$work/stderr") || status="not run"
	[ "$kib" -le "$limit" ] || verdict="not met"
	case "$status" in 0 | 1) ;; *) verdict="$verdict (exit: $status)" ;; esac
	rows+=("$(printf '%-34s %10s %8s %7s  %s' "$label" "$(awk -v k="$kib" 'BEGIN {printf "%.1f", k / 1024}')" "$wall" "$status" "$verdict")")
}
measure "cat wide.dss (baseline)" cat "$w"
measure "ds log --cat wide.dss" "$ds" log --cat "$w"
measure "ds log wide.dss" "$ds" log "$w"
measure "ds log --json wide.dss" "$ds" log --json "$w"
measure "ds info wide.dss" "$ds" info "$w"
measure "ds tail wide.dss" "$ds" tail "$w"
measure "ds gaps wide.dss" "$ds" gaps "$w"
measure "ds check wide.dss" "$ds" check "$w"
measure "ds latest wide.dss" "$ds" latest "$w"
measure "ds export tsv wide.dss" "$ds" export tsv "$w"
measure "ds merge wide.dss wide2.dss" "$ds" merge -o "$work/merged.dss" "$w" "$w2"
measure "ds recover wide.dss" "$ds" recover -o "$work/recovered.dss" "$w"
# One file of two wide streams: what ds merge writes of the two (a
# segment of each), and the two captures concatenated (two each).
merged=$work/merged.dss two=$work/two.dss
cat "$w" "$w2" > "$two"
for f in merged two; do
	in=$work/$f.dss
	measure "ds log $f.dss (2 wide streams)" "$ds" log "$in"
	measure "ds info $f.dss" "$ds" info "$in"
	measure "ds tail $f.dss" "$ds" tail "$in"
	measure "ds gaps $f.dss" "$ds" gaps "$in"
	measure "ds check $f.dss" "$ds" check "$in"
	measure "ds latest $f.dss" "$ds" latest "$in"
	measure "ds export tsv $f.dss" "$ds" export tsv "$in"
done
measure "ds ingest STORE2 two.dss (new)" "$ds" ingest "$work/store2" "$two"
cp "$w" "$work/append.dss"
measure "ds wrap --append -o wide.dss" "$ds" wrap --append -o "$work/append.dss" -- true
tail -c +16000000 "$two" > "$work/middle.dss"
measure "ds log --cat (from the middle)" "$ds" log --cat "$work/middle.dss"
measure "ds diff wide.dss wide2.dss" "$ds" diff "$w" "$w2"
measure "ds report wide.dss" "$ds" report -o "$work/report.html" "$w"
measure "ds ingest STORE wide.dss (new)" "$ds" ingest "$store" "$w"
measure "ds ingest STORE wide2.dss" "$ds" ingest "$store" "$w2"
measure "ds log STORE" "$ds" log "$store"
measure "ds info STORE" "$ds" info "$store"
measure "ds latest STORE" "$ds" latest "$store"
measure "ds trim --before TIME STORE" "$ds" trim --before 2025-01-01T00:00:00Z "$store"

echo
echo "peak resident memory against 64 MiB, $n messages a capture (diff exits 1: the runs differ)"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-34s %10s %8s %7s  %s\n' command "peak MiB" "wall s" exit result
printf '%s\n' "${rows[@]}"
if [ -s "$work/stderr" ]; then
	echo
	echo "stderr of the commands (first 20 lines):"
	head -20 "$work/stderr"
fi

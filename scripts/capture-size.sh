#!/usr/bin/env bash
# capture-size.sh [MiB]: DSS capture size against zstd -3 of the same text
# (ARCHITECTURE.md §7: zstd capture <= 1.1x zstd -3 of the raw text), and the
# per-frame overhead of uncompressed captures. Needs zstd(1).
set -euo pipefail
cd "$(dirname "$0")/.."
mib=${1:-32}
command -v zstd >/dev/null || { echo "capture-size.sh: zstd(1) is required (apt-get install zstd)" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go run ./scripts/capturesize -o "$dir" -mib "$mib" >"$dir/sizes"
zstd -3 -q -f "$dir/raw.txt" -o "$dir/raw.txt.zst"
read -r _ raw lines <<<"$(grep '^raw.txt ' "$dir/sizes")"
read -r _ none _ none_s <<<"$(grep '^none.dss ' "$dir/sizes")"
read -r _ zdss _ zdss_s <<<"$(grep '^zstd.dss ' "$dir/sizes")"
zraw=$(stat -c %s "$dir/raw.txt.zst")
awk -v raw="$raw" -v lines="$lines" -v none="$none" -v none_s="$none_s" -v zdss="$zdss" -v zdss_s="$zdss_s" -v zraw="$zraw" 'BEGIN {
	printf "raw text             %12d bytes, %d lines (%.1f bytes/line)\n", raw, lines, raw/lines
	printf "zstd -3 of the text  %12d bytes (%.2fx smaller)\n", zraw, raw/zraw
	printf "capture, none        %12d bytes: %.2f bytes of overhead per frame, written at %.0f MB/s\n", none, (none-raw)/lines, raw/none_s/1e6
	printf "capture, zstd        %12d bytes: %.3fx zstd -3 (target <= 1.1), written at %.0f MB/s of payload\n", zdss, zdss/zraw, raw/zdss_s/1e6
	printf "(a flush every 1000 lines; go test -bench=WriteFrame ./pkg/segments measures write speed)\n"
}'

#!/usr/bin/env bash
# make demo: show the datastream's live pipe on an embedded default.
set -euo pipefail
ds=${1:-bin/ds}
"$ds" --version
echo
echo "== the live pipe (pkg/frames): register, submit, tick, subscribe"
go test -run '^Example' -v ./pkg/frames | sed -n '/^=== RUN/d;/^--- PASS/d;/^PASS/d;/^ok/d;p'

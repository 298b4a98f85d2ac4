#!/usr/bin/env bash
# Loss accounting under kill -9 (issue: "20 kill -9 trials of
# ds wrap -- seq 1 100000000 at random moments"): each trial kills ds at a
# random moment (0.1-2.1 s), with the default queue, a tiny lossy queue and
# --backpressure in turn, and checks
# that the capture reads back as a prefix of seq's output whose every hole
# is a loss accounted in place with its exact byte count (--backpressure:
# no hole at all); then a slow FIFO sink. The checks are the Go tests
# TestWrapKillPrefix and TestWrapSlowSink, scaled up.
# Usage: scripts/loss_trials.sh [TRIALS=20]
set -euo pipefail
cd "$(dirname "$0")/.."
DS_KILL_TRIALS=${1:-20} DS_KILL_SEQ=100000000 go test -count=1 -v -run 'TestWrapKillPrefix|TestWrapSlowSink|TestWrapLossAccountedInPlace' ./cmd/ds | grep -E '^(=== RUN|--- |\s+wrap_loss_test|ok|FAIL|PASS)'

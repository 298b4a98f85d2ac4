#!/usr/bin/env bash
# make demo: the main job on an embedded default. Wraps a small build-like
# command that writes to stdout and stderr and fails, then reads the capture
# back with ds log and ds info.
set -uo pipefail
ds=$(realpath "${1:-bin/ds}")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# Like a real build, each step takes a little time (a compiler is a process
# of its own); two writes to stdout and stderr a few microseconds apart
# could not be ordered (see ds(1) wrap, Order).
cat > "$out/build.sh" <<'EOS'
echo "compiling foo.c"; sleep 0.01
echo "foo.c:3: warning: unused variable x" >&2; sleep 0.01
printf "linking "; sleep 0.2; echo "foo"
for i in 1 2 3; do printf "\rprogress %d/3" "$i"; sleep 0.05; done; echo
echo "FAIL: test_foo (expected 2, got 3)" >&2
exit 2
EOS
echo "\$ ds wrap -o demo.dss -- sh build.sh     # a build that warns, draws a progress bar and fails"
(cd "$out" && "$ds" wrap -o demo.dss --label build -- sh build.sh)
echo "(ds wrap exited with status $?, the command's own)"
echo
echo "\$ ds log demo.dss"
"$ds" log "$out/demo.dss"
echo
echo "\$ ds log demo.dss | grep FAIL"
"$ds" log "$out/demo.dss" | grep FAIL
echo
echo "\$ ds info demo.dss"
"$ds" info "$out/demo.dss" | sed "s|$out/||"

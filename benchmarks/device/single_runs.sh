#!/usr/bin/env bash
# One device call: how long one run of each given program takes as its Makefile's run target runs
# it (built with its own Makefile, for this GPU), to tell a slow program from a slow pipeline.
# Usage (the device tool, carry [".devpack"], from the repository root):
#   benchmarks/device/single_runs.sh FOLDER...
# Output under $OUT: device.txt, single-runs.txt (per program: build seconds, run seconds, exit code, last line)
set -uo pipefail
source benchmarks/device/env.sh
for folder in "$@"; do
  work=$(mktemp -d) && cp -r "$folder/." "$work/" && cd "$work" || exit 1
  t0=$(date +%s%N); make -B ARCH=sm_90 >build.log 2>&1; b=$?; t1=$(date +%s%N)
  args=$(make -n run 2>/dev/null | sed -n 's|^ *\./[^ ]* *||p' | head -1)
  timeout 120 ./main $args >run.log 2>&1; r=$?; t2=$(date +%s%N)
  printf '%s build rc %s %sms, run "%s" rc %s %sms: %s\n' "$(basename "$folder")" $b $(((t1 - t0) / 1000000)) \
    "$args" $r $(((t2 - t1) / 1000000)) "$(tail -1 run.log | cut -c1-120)" | tee -a "$out/single-runs.txt"
  cd - >/dev/null
done

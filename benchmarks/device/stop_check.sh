#!/usr/bin/env bash
# One device call: how ncu --kill behaves (ncu_kill_check.sh), then the profile of given programs
# (method survey, no evaluation) with profiling.stop_when_profiled on (the default) and off, then
# the GPU tests of the profiling agent.
# Usage (the device tool, carry [".devpack"], from the repository root):
#   benchmarks/device/stop_check.sh SECONDS_PER_ROW PROGRAM...
# Output under $OUT: device.txt, ncu-kill.txt, stop-rows.jsonl, stop.err, gpu-tests.txt
# GPU_TESTS=no leaves the GPU tests out (they take about 300 s).
set -uo pipefail
benchmarks/device/ncu_kill_check.sh
source benchmarks/device/env.sh
limit=$1; shift
for name in "$@"; do
  for stop in true false; do
    timeout "$limit" python benchmarks/method_survey.py --out "/tmp/stop-$name-$stop.json" --only "$name" \
      --no-evaluation --profiling "stop_when_profiled=$stop" >> "$out/stop-rows.jsonl" 2>> "$out/stop.err"
    rc=$?
    [[ $rc -eq 124 ]] && echo "{\"program\": \"$name\", \"stop\": $stop, \"error\": \"over ${limit} s\"}" >> "$out/stop-rows.jsonl"
  done
done
cut -c1-400 "$out/stop-rows.jsonl"
[[ ${GPU_TESTS:-yes} == no ]] && exit 0
timeout 240 python -m pytest -q -m gpu tests/test_gpu_counter_plan.py tests/test_gpu_capture.py -x 2>&1 | tail -15 | tee "$out/gpu-tests.txt"

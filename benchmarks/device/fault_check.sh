#!/usr/bin/env bash
# One device call (issue #30): the tracer's error records on a program that checks no CUDA error
# (tests/test_tracer.py -k fault), srad_v2 (whose profile had every kernel at zero duration) under
# compute-sanitizer and through the method survey, and the survey row of HeCBench's mask.
#
# Usage (the device tool, carry [".devpack"], from the repository root):
#   benchmarks/device/fault_check.sh
# Output under $OUT: device.txt, gpu-tests.txt, srad-sanitizer.txt, survey-rows.jsonl, survey.err
set -uo pipefail
source benchmarks/device/env.sh
timeout 120 python -m pytest -q -m gpu tests/test_tracer.py -k fault -p no:cacheprovider --basetemp=/tmp/pt \
  > "$out/gpu-tests.txt" 2>&1
tail -3 "$out/gpu-tests.txt"
srad=benchmarks/external/rodinia/cuda/srad/srad_v2
nvcc -arch=sm_90 -lineinfo -include runner/toolchain/compat/cuda_removed_api.h -o /tmp/srad $srad/srad.cu -I$srad \
  && timeout 120 compute-sanitizer --print-limit 4 /tmp/srad 2048 2048 0 127 0 127 0.5 2 > "$out/srad-sanitizer.txt" 2>&1
head -40 "$out/srad-sanitizer.txt"
timeout 300 python benchmarks/method_survey.py --out /tmp/survey.json --only srad_v2 mask \
  > "$out/survey-rows.jsonl" 2> "$out/survey.err"
echo "survey exit $?"
cut -c1-600 "$out/survey-rows.jsonl"

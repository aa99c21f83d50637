#!/usr/bin/env bash
# One device call for what the session of 2026-12-06 changed and could not run on a GPU (its
# device time ran out): the tracer's error records of faults and refused launches
# (tests/test_tracer.py -k fault), the job sandbox's GPU nodes (tests/test_gpu_sandbox.py), its overhead now that launches are watched too
# (bench_tracer_overhead.py, compare with benchmarks/results/tracer-overhead-2026-12-03.json), and
# HeCBench's mask through the method survey (its size sweep, after the {n*scale} rounding fix).
#
# Usage (the device tool, carry [".devpack"], from the repository root): benchmarks/device/next_check.sh
# Output under $OUT: device.txt, gpu-tests.txt, overhead/, mask-rows.jsonl, mask.err
set -uo pipefail
source benchmarks/device/env.sh
timeout 150 python -m pytest -q -s -m gpu tests/test_tracer.py tests/test_gpu_sandbox.py -p no:cacheprovider --basetemp=/tmp/pt \
  > "$out/gpu-tests.txt" 2>&1
grep -A3 'GPU(s) on the host' "$out/gpu-tests.txt"; tail -3 "$out/gpu-tests.txt"
timeout 150 python benchmarks/bench_tracer_overhead.py --runs 10 --out "$out/overhead" > "$out/overhead.txt" 2>&1
tail -5 "$out/overhead.txt"
timeout 250 python benchmarks/method_survey.py --out /tmp/survey.json --only mask \
  > "$out/mask-rows.jsonl" 2> "$out/mask.err"
echo "survey exit $?"
cut -c1-900 "$out/mask-rows.jsonl"

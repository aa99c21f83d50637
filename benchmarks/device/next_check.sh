#!/usr/bin/env bash
# One device call for what the session of 2026-12-06 changed and could not run on a GPU (its
# device time ran out): the tracer's error records of faults and refused launches
# (tests/test_tracer.py -k fault), its overhead now that launches are watched too
# (bench_tracer_overhead.py, compare with benchmarks/results/tracer-overhead-2026-12-03.json), and
# HeCBench's mask through the method survey (its size sweep, after the {n*scale} rounding fix).
#
# Usage (the device tool, carry [".devpack"], from the repository root): benchmarks/device/next_check.sh
# Output under $OUT: device.txt, gpu-tests.txt, overhead/, mask-rows.jsonl, mask.err
set -uo pipefail
out=${OUT:?set OUT to the folder whose files come back}
tar xJf .devpack/site.tar.xz -C /tmp
cp -r /tmp/site/*.data/purelib/* /tmp/site/ 2>/dev/null
export PATH=/usr/local/cuda/bin:$PATH PYTHONPATH=/tmp/site:$PWD OPTIMAS_CACHE_DIR=/tmp/oc
mkdir -p "$out"
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$out/device.txt"
timeout 150 python -m pytest -q -m gpu tests/test_tracer.py -p no:cacheprovider --basetemp=/tmp/pt \
  > "$out/gpu-tests.txt" 2>&1
tail -3 "$out/gpu-tests.txt"
timeout 150 python benchmarks/bench_tracer_overhead.py --runs 10 --out "$out/overhead" > "$out/overhead.txt" 2>&1
tail -5 "$out/overhead.txt"
timeout 250 python benchmarks/method_survey.py --out /tmp/survey.json --only mask \
  > "$out/mask-rows.jsonl" 2> "$out/mask.err"
echo "survey exit $?"
cut -c1-900 "$out/mask-rows.jsonl"

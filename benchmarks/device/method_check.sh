#!/usr/bin/env bash
# One device call for what issue #30 still waits for on the GPU (the session of 2026-12-05, fourth,
# got no machine): the method survey over the programs whose rows are missing or changed since the
# record of benchmarks/results/method-survey-2026-12-05c (the four without a size argument now get
# a size-constant sweep; transpose, streamcluster and srad_v2 have no row yet), each row written as
# soon as it is measured, so that a call cut short at its limit still returns what it measured;
# then the GPU test of the size-constant sweep.
#
# Usage (the device tool, carry [".devpack"], from the repository root):
#   benchmarks/device/method_check.sh [SECONDS_FOR_THE_SURVEY] [--no-evaluation]
# Output under $OUT: survey-rows.jsonl (one JSON row per program), survey.json, survey.err,
# keep/<program>/ (each run's config, prompt, analysis, logs and timing tables), gpu-tests.txt
set -uo pipefail
source benchmarks/device/env.sh
timeout "${1:-420}" python benchmarks/method_survey.py ${2:-} --out "$out/survey.json" --keep "$out/keep" \
  --only BlackScholes sortingNetworks histogram convolutionSeparable transpose streamcluster srad_v2 \
  > "$out/survey-rows.jsonl" 2> "$out/survey.err"
echo "survey exit $?"
cut -c1-400 "$out/survey-rows.jsonl"
timeout 120 python -m pytest -q -m gpu tests/test_gpu_counter_plan.py -p no:cacheprovider --basetemp=/tmp/pt \
  > "$out/gpu-tests.txt" 2>&1
tail -3 "$out/gpu-tests.txt"

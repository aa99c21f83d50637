#!/usr/bin/env bash
# One device call (issue #30): the method survey's row of HeCBench's mask (with evaluation), its
# run folder kept.
# Usage (the device tool, carry [".devpack"], from the repository root): benchmarks/device/mask_check.sh
# Output under $OUT: device.txt, survey-rows.jsonl, survey.err, mask-keep.tar.gz
set -uo pipefail
source benchmarks/device/env.sh
timeout "${1:-330}" python benchmarks/method_survey.py --out /tmp/survey.json --keep /tmp/keep --only mask \
  > "$out/survey-rows.jsonl" 2> "$out/survey.err"
echo "survey exit $?"
cut -c1-1500 "$out/survey-rows.jsonl"
tar czf "$out/mask-keep.tar.gz" --exclude='*.ncu-rep' --exclude=build-cache -C /tmp keep 2>/dev/null

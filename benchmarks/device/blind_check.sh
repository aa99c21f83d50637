#!/usr/bin/env bash
# One device call: the method survey over programs Optimas never ran before, each program under its
# own time limit (a program whose CPU check is slow must not take the others' time), rows written
# as they are measured, each run's small files kept.
# Usage (the device tool, carry [".devpack"], from the repository root):
#   benchmarks/device/blind_check.sh SECONDS_PER_PROGRAM PROGRAM...
# Output under $OUT: device.txt, survey-rows.jsonl, survey.err, keep.tar.gz
set -uo pipefail
source benchmarks/device/env.sh
limit=$1; shift
for name in "$@"; do
  timeout "$limit" python benchmarks/method_survey.py --out "/tmp/survey-$name.json" --keep /tmp/keep --only "$name" \
    >> "$out/survey-rows.jsonl" 2>> "$out/survey.err"
  rc=$?
  [[ $rc -eq 124 ]] && echo "{\"program\": \"$name\", \"error\": \"over ${limit} s\"}" >> "$out/survey-rows.jsonl"
  echo "$name exit $rc"
done
cut -c1-600 "$out/survey-rows.jsonl"
tar czf "$out/keep.tar.gz" --exclude='*.ncu-rep' --exclude=build-cache -C /tmp keep 2>/dev/null

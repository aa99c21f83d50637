#!/usr/bin/env bash
# One device call (issue #30): srad_v2 through the method survey with its run folder kept (its
# profile failed with "every kernel has zero duration" twice), then one closed-loop iteration of
# the benchmark apps named (bench_iteration.py, tracer setup).
#
# Usage (the device tool, carry [".devpack"], from the repository root):
#   benchmarks/device/iteration_check.sh "adjacent,extrema"
# Output under $OUT: device.txt, srad.jsonl, srad.err, srad-keep.tar.gz, iteration/iteration-time.{json,md}
set -uo pipefail
source benchmarks/device/env.sh
timeout 120 python benchmarks/method_survey.py --no-evaluation --out /tmp/srad.json --keep /tmp/keep \
  --only srad_v2 > "$out/srad.jsonl" 2> "$out/srad.err"
echo "srad survey exit $?"; cut -c1-300 "$out/srad.jsonl"
tar czf "$out/srad-keep.tar.gz" -C /tmp keep 2>/dev/null
if [ -n "${1:-}" ]; then
  timeout 450 python benchmarks/bench_iteration.py --apps "$1" --setups tracer --runs /tmp/iter \
    --out "$out/iteration" 2> "$out/iteration.err" | tail -12
fi

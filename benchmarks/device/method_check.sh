#!/usr/bin/env bash
# One device call for what issue #30 and #31 left to the GPU (the session of 2026-12-05 had none):
# the GPU tests of the code changed since the last device run (the re-profile's single traced run,
# the counter plans, the tracer paths of the refactored validation and timing), then the method
# survey over the 12 external programs, each row written as soon as it is measured, so that a call
# cut short at its limit still returns what it measured.
#
# Usage (the device tool, carry [".devpack"], from the repository root):
#   benchmarks/device/method_check.sh [SECONDS_FOR_THE_SURVEY]
# Output under $OUT: gpu-tests.txt, survey-rows.jsonl (one JSON row per program), survey.json, survey.err
set -uo pipefail
out=${OUT:?set OUT to the folder whose files come back}
tar xJf .devpack/site.tar.xz -C /tmp
cp -r /tmp/site/*.data/purelib/* /tmp/site/ 2>/dev/null
export PATH=/usr/local/cuda/bin:$PATH PYTHONPATH=/tmp/site:$PWD OPTIMAS_CACHE_DIR=/tmp/oc
mkdir -p "$out"
python -c "import scipy, numpy; print('scipy', scipy.__version__, 'numpy', numpy.__version__)" > "$out/versions.txt" 2>&1
timeout 240 python -m pytest -q -m gpu tests/test_gpu_process_runs.py tests/test_gpu_counter_plan.py \
  tests/test_tracer.py > "$out/gpu-tests.txt" 2>&1
tail -3 "$out/gpu-tests.txt"
timeout "${1:-300}" python benchmarks/method_survey.py --out "$out/survey.json" \
  --only pathfinder nw backprop srad_v2 reduction BlackScholes matrixMul threadFenceReduction histogram \
  sortingNetworks transpose convolutionSeparable > "$out/survey-rows.jsonl" 2> "$out/survey.err"
echo "survey exit $?"
cut -c1-400 "$out/survey-rows.jsonl"

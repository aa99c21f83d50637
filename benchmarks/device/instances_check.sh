#!/usr/bin/env bash
# Issue #44 on the device: capture tests/fixtures/instances-h100 (its capture.sh), then one
# iteration of mixbench-cuda with the config `optimas init` writes for it (its time spread over 55
# hot instances of benchmark_func), keeping the run's evidence, prompt and log, then the GPU test of
# a template of many hot instances.
#
# Usage (the device tool, carry [".devpack", ".survey/mixbench"], from the repository root):
#   benchmarks/device/instances_check.sh [SECONDS_FOR_MIXBENCH]
# Output under $OUT: device.txt, instances/ (the fixture's files), mixbench.tgz (capture, init and run
# logs, the run's manifest, analysis/ and prompt/), gpu-test.txt (the GPU test's report)
set -uo pipefail
source benchmarks/device/env.sh
limit=${1:-400}
work=/tmp/instances-check
rm -rf "$work" && mkdir -p "$work"
start=$(date +%s)
bash tests/fixtures/instances-h100/capture.sh "$out/instances" > "$work/capture.log" 2>&1
echo "capture: rc $? in $(( $(date +%s) - start )) s"
cp -r .survey/mixbench "$work/mixbench"
python -m runner.cli init "$work/mixbench/mixbench-cuda" --force > "$work/init.log" 2>&1
echo "init: rc $?"
python - "$work/mixbench/mixbench-cuda/optimas.yml" <<'PY'
import sys, yaml
path = sys.argv[1]
data = yaml.safe_load(open(path))
data.setdefault("evaluation", {})["max_iterations"] = 1  # one iteration, as benchmarks/repo_iterations.py
open(path, "w").write(yaml.safe_dump(data, sort_keys=False))
print("programs:", [p.get("name") for p in data.get("programs", [])] or data["app"]["name"])
PY
program=$(python -c "import yaml,sys; d=yaml.safe_load(open(sys.argv[1])); p=d.get('programs') or []; print(p[0]['name'] if p else '')" "$work/mixbench/mixbench-cuda/optimas.yml")
start=$(date +%s)
timeout "$limit" python -m runner.cli run --config "$work/mixbench/mixbench-cuda/optimas.yml" --backend offline \
  --runs-dir "$work/runs" ${program:+--program "$program"} > "$work/run.log" 2>&1
echo "mixbench run: rc $? in $(( $(date +%s) - start )) s"
run=$(ls -d "$work"/runs/*/ 2>/dev/null | tail -1)
if [ -n "$run" ]; then
  mkdir -p "$work/run" && cp -r "$run"/manifest.json "$run"/analysis "$run"/prompt "$work/run/" 2>/dev/null
fi
tar czf "$out/mixbench.tgz" -C "$work" capture.log init.log run.log run 2>/dev/null
start=$(date +%s)
timeout 150 python -m pytest -q -m gpu tests/test_gpu_profiling_build.py -k template -p no:cacheprovider \
  --basetemp=/tmp/pt-instances > "$out/gpu-test.txt" 2>&1
echo "gpu test: rc $? in $(( $(date +%s) - start )) s; $(tail -1 "$out/gpu-test.txt")"

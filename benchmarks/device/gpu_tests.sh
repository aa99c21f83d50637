#!/usr/bin/env bash
# The GPU-marked tests of the given files, each file with its own time limit, on the device machine
# (the sandbox's limits, the bot's GPU job and what it publishes, the tracer, the nvcc shim, the
# profiling agent). Redis runs for the bot's test.
#
# Usage (the device tool, carry [".devpack"], from the repository root):
#   benchmarks/device/gpu_tests.sh SECONDS_PER_FILE tests/test_gpu_sandbox.py tests/test_tracer.py ...
# Output under $OUT: device.txt, and <file>.txt per test file (pytest's report)
set -uo pipefail
source benchmarks/device/env.sh
limit=${1:?seconds per file}
shift
tar xJf .devpack/redis.tar.xz -C /tmp
LD_LIBRARY_PATH=/tmp/.redis /tmp/.redis/redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" \
  --appendonly no > /dev/null
for spec in "$@"; do
  name=$(basename "${spec%%::*}" .py)
  start=$(date +%s)
  timeout "$limit" python -m pytest -q -m gpu "$spec" -p no:cacheprovider --basetemp="/tmp/pt-$name" \
    > "$out/$name.txt" 2>&1
  rc=$?
  echo "$spec: rc $rc in $(( $(date +%s) - start )) s; $(tail -1 "$out/$name.txt")"
done

#!/usr/bin/env bash
# The GPU job's sandbox on a host with several GPUs (issue: a pull request's code reached every GPU
# of the host through /dev/nvidia*, whatever its worker was pinned to): tests/test_gpu_sandbox.py,
# then the GPU worker's closed loop through the bot (sandboxed) with the worker pinned to the last
# GPU, as bot.gpu_workers pins it.
#
# Usage (the device tool, kind nvidia-h100-x2, carry [".devpack"], from the repository root):
#   benchmarks/device/sandbox_check.sh
# Output under $OUT: device.txt, sandbox-tests.txt, worker-test.txt
set -uo pipefail
source benchmarks/device/env.sh
tar xJf .devpack/redis.tar.xz -C /tmp
LD_LIBRARY_PATH=/tmp/.redis /tmp/.redis/redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" \
  --appendonly no > /dev/null
bwrap --version
timeout 120 python -m pytest -q -s -m gpu tests/test_gpu_sandbox.py -p no:cacheprovider --basetemp=/tmp/pt1 \
  > "$out/sandbox-tests.txt" 2>&1
tail -12 "$out/sandbox-tests.txt"
last=$(( $(nvidia-smi -L | grep -c '^GPU') - 1 ))
CUDA_VISIBLE_DEVICES=$last timeout 300 python -m pytest -q -m gpu \
  tests/test_bot_end_to_end.py::test_gpu_worker_runs_the_closed_loop_and_publishes -p no:cacheprovider \
  --basetemp=/tmp/pt2 > "$out/worker-test.txt" 2>&1
echo "worker pinned to GPU $last:"; tail -4 "$out/worker-test.txt"

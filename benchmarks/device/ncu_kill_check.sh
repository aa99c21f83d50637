#!/usr/bin/env bash
# One device call: how ncu behaves with --kill yes (its exit code, what it prints, whether the
# report holds the profiled launch) on a program that launches a kernel three times and then
# spends seconds on the CPU (a reference check), run directly and through `sh -c`, against the
# same runs without --kill; wall times of each.
# Usage (the device tool, from the repository root): benchmarks/device/ncu_kill_check.sh
# Output under $OUT: device.txt, ncu-kill.txt
set -uo pipefail
out=${OUT:?}
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$out/device.txt"
ncu --version | tail -1 | tee -a "$out/ncu-kill.txt"
ncu --help | grep -A4 -- '--kill' | tee -a "$out/ncu-kill.txt"
work=$(mktemp -d)
cat > "$work/slow_tail.cu" <<'CU'
#include <cstdio>
#include <unistd.h>
__global__ void scale(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f; }
int main() {
  const int n = 1 << 20; float* d; cudaMalloc(&d, n * sizeof(float));
  for (int r = 0; r < 3; ++r) scale<<<(n + 255) / 256, 256>>>(d, n);
  cudaDeviceSynchronize();
  sleep(5);  // the CPU reference check
  printf("PASS\n");
  return 0;
}
CU
nvcc -arch=sm_90 -o "$work/slow_tail" "$work/slow_tail.cu" || exit 1
for kill in no yes; do
  for how in direct shell; do
    if [[ $how == direct ]]; then app=("$work/slow_tail"); else app=(sh -c "$work/slow_tail; echo script-after-rc=\$?"); fi
    t0=$(date +%s%N)
    ncu --clock-control none -k regex:scale --launch-count 1 --kill "$kill" --section LaunchStats -f -o "$work/r-$kill-$how" "${app[@]}" > "$work/log" 2>&1
    rc=$?; t1=$(date +%s%N)
    { echo "== kill $kill, $how: ncu rc $rc, $(((t1 - t0) / 1000000)) ms"; cat "$work/log";
      ncu --import "$work/r-$kill-$how.ncu-rep" --page raw --csv --metrics launch__grid_size 2>&1 | tail -2; } | tee -a "$out/ncu-kill.txt"
  done
done

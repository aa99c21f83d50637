#!/usr/bin/env bash
# Device recipe (#46): the demo's recorded profiles of examples/h200-probe/probe_kernels.cu, all on
# one card, with a counter sweep of the hot kernel (matmul) so that the demo's C* evidence describes
# the kernel its other evidence is about. The source sits at /opt/probe/k.cu, as in the first
# capture (config.yml maps that path back to the example).
#
# Usage (the device tool, from the repository root): bash benchmarks/device/probe_record.sh
# Output under $OUT: device.txt, versions.txt, probe_full_raw_base.csv,
# probe_full_source_cuda_sass.csv, probe_sweep_matmul_raw_base.csv (one row per size, first column
# config_n), probe_sweep_matmul_reports.tgz, commands.txt
set -euo pipefail
out=${OUT:?set OUT}
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/device.txt"
{ nvcc --version | tail -2; ncu --version | tail -1; } > "$out/versions.txt"
mkdir -p /opt/probe /tmp/probe
cp examples/h200-probe/probe_kernels.cu /opt/probe/k.cu
cd /opt/probe
log() { echo "$*" >> "$out/commands.txt"; "$@"; }
log nvcc -O3 -arch=sm_90 -lineinfo -o k k.cu
log ncu --clock-control none --set full --import-source yes -c 5 -o /tmp/probe/full -f ./k 4194304 4096 1024 \
  > /tmp/probe/full.log
log ncu -i /tmp/probe/full.ncu-rep --csv --page raw --print-units base > "$out/probe_full_raw_base.csv"
log ncu -i /tmp/probe/full.ncu-rep --csv --page source --print-source cuda,sass \
  > "$out/probe_full_source_cuda_sass.csv"
# The sweep: matmul alone at 12 sizes; 8192 accuracy rows so that the host buffer the program copies
# A and B from holds n*n floats for every n here.
sizes="256 384 512 640 768 896 1024 1152 1280 1536 1792 2048"
for n in $sizes; do
  log ncu --clock-control none --set full -k regex:matmul -c 1 -o "/tmp/probe/sweep_$n" -f ./k 1024 8192 "$n" \
    > "/tmp/probe/sweep_$n.log"
  ncu -i "/tmp/probe/sweep_$n.ncu-rep" --csv --page raw --print-units base > "/tmp/probe/sweep_$n.csv"
done
echo "each exported with: ncu -i sweep_<n>.ncu-rep --csv --page raw --print-units base" >> "$out/commands.txt"
python3 - "$out/probe_sweep_matmul_raw_base.csv" $sizes <<'PY'
import csv, sys
dest, sizes = sys.argv[1], sys.argv[2:]
rows = []
for n in sizes:
    with open(f"/tmp/probe/sweep_{n}.csv", newline="") as f:
        table = [r for r in csv.reader(f) if r]
    if not rows:  # one header and one units row, as in the accuracy sweep
        rows += [["config_n"] + table[0], [""] + table[1]]
    rows += [[n] + r for r in table[2:]]
with open(dest, "w", newline="") as f:
    csv.writer(f, quoting=csv.QUOTE_ALL).writerows(rows)
print(dest, len(rows) - 2, "runs")
PY
tar czf "$out/probe_sweep_matmul_reports.tgz" -C /tmp/probe $(cd /tmp/probe && ls sweep_*.ncu-rep)

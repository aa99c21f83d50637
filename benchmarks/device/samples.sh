#!/bin/bash
# Device recipe: one closed-loop iteration (tracer setup, offline backend) per program directory
# (each holds an optimas.yml). Per program, $OUT/runs-<program>.tgz holds its iteration table and
# log and the run's small files (evidence, prompts, manifests, exports, reports under 4 MB).
# Usage: bash benchmarks/device/samples.sh SECONDS_PER_PROGRAM program-dir...
per=$1; shift
for d in "$@"; do
  name=$(basename "$d")
  keep=/tmp/keep-$name
  mkdir -p "$keep"
  timeout "$per" python3 benchmarks/bench_iteration.py --apps "$d/optimas.yml" --setups tracer \
    --runs /tmp/iter --out "$keep/iter" > "$keep/iter.log" 2>&1
  echo "$name exit $?"; tail -2 "$keep/iter.log" | cut -c1-400
  (cd /tmp/iter && find "tracer-$name" -type f \( -name '*.md' -o -name '*.json' -o -name '*.csv' \
     -o -name '*.log' -o -name '*.tsv' -o -name '*.txt' -o -name '*.ncu-rep' \) -size -4M \
     -exec cp --parents {} "$keep/" \;)
  tar -C "$keep" -czf "$OUT/runs-$name.tgz" .
done

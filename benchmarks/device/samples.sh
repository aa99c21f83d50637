#!/bin/bash
# Device recipe: one closed-loop iteration (tracer setup, offline backend) per program directory
# (each holds an optimas.yml). Logs and iteration tables go to $OUT/iter/, the small files of each
# run (evidence, prompts, manifests, exports) into $OUT/runs.tgz, refreshed after every program.
# Usage: bash benchmarks/device/samples.sh SECONDS_PER_PROGRAM program-dir...
per=$1; shift
mkdir -p "$OUT/iter" /tmp/keep
for d in "$@"; do
  name=$(basename "$d")
  timeout "$per" python3 benchmarks/bench_iteration.py --apps "$d/optimas.yml" --setups tracer \
    --runs /tmp/iter --out "/tmp/keep/iter-$name" > "/tmp/keep/iter-$name.log" 2>&1
  echo "$name exit $?"; tail -2 "/tmp/keep/iter-$name.log" | cut -c1-400
  (cd /tmp/iter && find "tracer-$name" -type f \( -name '*.md' -o -name '*.json' -o -name '*.csv' \
     -o -name '*.log' -o -name '*.tsv' -o -name '*.txt' \) -size -3M -exec cp --parents {} /tmp/keep/ \;)
  tar -C /tmp/keep -czf "$OUT/runs.tgz" .
done

#!/bin/bash
# Device recipe: what the hierarchical roofline section adds to ncu's targeted pass (issue #15).
# Runs the targeted pass's sections on the first launch of EXE with and without
# SpeedOfLight_HierarchicalSingleRooflineChart, alternating, ROUNDS times each; prints one line per
# run: with/without, ncu's replay passes, wall milliseconds.
# Usage: bash benchmarks/device/section_cost.sh ROUNDS EXE [ARGS...]
rounds=$1; shift
base=(--clock-control none --launch-count 1 --section SpeedOfLight --section SpeedOfLight_RooflineChart
      --section SourceCounters --section WarpStateStats --section LaunchStats --section Occupancy
      --import-source yes -f)
for r in $(seq "$rounds"); do
  for mode in without with; do
    extra=(); [ "$mode" = with ] && extra=(--section SpeedOfLight_HierarchicalSingleRooflineChart)
    t0=$(date +%s%N)
    passes=$(ncu "${base[@]}" "${extra[@]}" -o /tmp/section-cost "$@" 2>&1 | grep -o '[0-9]* passes' | head -1)
    t1=$(date +%s%N)
    echo "$mode ${passes:-? passes} $(( (t1 - t0) / 1000000 )) ms"
  done
done

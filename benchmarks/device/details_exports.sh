#!/bin/bash
# Device recipe: ncu's own printed values for the evidence cross-check (issue #15,
# tests/test_evidence_crosscheck.py). For each report, its details page with every body item, kept
# to the Speed-of-Light and roofline sections (tensor-op rows left out):
# $OUT/<report's folder>-<report's name>_details_sol_roofline.csv. No GPU is needed, only ncu.
# Usage: bash benchmarks/device/details_exports.sh report.ncu-rep...
for rep in "$@"; do
  name="$(basename "$(dirname "$rep")")-$(basename "$rep" .ncu-rep)"
  ncu -i "$rep" --csv --page details --print-details all > "/tmp/$name-details.csv" || continue
  python3 - "/tmp/$name-details.csv" "$OUT/${name}_details_sol_roofline.csv" <<'PY'
import csv, sys
keep = ("GPU Speed Of Light Throughput", "GPU Speed Of Light Roofline Chart",
        "GPU Speed Of Light Hierarchical Roofline Chart")
with open(sys.argv[1], newline="") as f:
    rows = csv.reader(f)
    header = next(rows)
    sec, name = header.index("Section Name"), header.index("Metric Name")
    cols = header.index("Rule Name")
    out = [r[:cols] for r in rows if len(r) > name and r[sec].startswith(keep)
           and r[name] and not r[name].startswith(("Op:", "Src:"))]
with open(sys.argv[2], "w", newline="") as f:
    w = csv.writer(f, quoting=csv.QUOTE_ALL)
    w.writerow(header[:cols])
    w.writerows(out)
print(sys.argv[2], len(out), "rows")
PY
done

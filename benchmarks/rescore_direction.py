"""Re-score the stall checks of EAR directional consistency of an evaluated run from recorded
profiles, on any machine: the PC-sampling lines before (the profile the prompt was made from) and
after (the candidate's re-profile, a .ncu-rep or its source-page CSV). Roofline and counter checks
are kept as the run recorded them (their inputs are not re-read here).

Usage: python benchmarks/rescore_direction.py --run RUN_DIR --before BEFORE.ncu-rep --after AFTER_source.csv
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from runner.analysis.evidence import Diagnostics
from runner.evaluation.ear import DirectionCheck, Profiled, direction_score, directional
from runner.profiles.readers import read_any
from runner.proposal.stage import ProposeResult


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", type=Path, required=True)
    ap.add_argument("--before", type=Path, required=True)
    ap.add_argument("--after", type=Path, required=True)
    ap.add_argument("--min-change", type=float, default=0.02)
    args = ap.parse_args()
    diag = Diagnostics.model_validate_json((args.run / "analysis" / "diagnostics.json").read_text())
    proposed = ProposeResult.model_validate_json((args.run / "candidates" / "result.json").read_text())
    recorded = json.loads((args.run / "evaluation" / "result.json").read_text())["ear"]["checks"]
    cited = {c for e in proposed.proposal.edits for c in e.cites}
    stalls = [e for e in diag.evidence if e.id in cited and e.kind == "stall"]
    before, after = Profiled(read_any(args.before).lines, {}), Profiled(read_any(args.after).lines, {}, diag)
    fresh = {c.id: c for c in directional(stalls, proposed.proposal, before, after, args.min_change)}
    checks = [fresh.get(c["id"]) or DirectionCheck.model_validate(c) for c in recorded]
    out = {"run": str(args.run), "min_change": args.min_change, "checks": [c.model_dump() for c in checks],
           "directional": direction_score(checks)}
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

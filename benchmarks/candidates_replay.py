"""Several candidates per iteration on a GPU (issue #30): one iteration from a program's recorded H200
capture with llm.candidates answers replayed from benchmarks/replay (`<hash>.txt`, `<hash>.2.txt`,
...; hand-written, see its README), each validated and timed, the best kept. Prints and writes
each iteration's evaluation/candidates.json.

Usage (on a GPU machine, from the repository root):
  python benchmarks/candidates_replay.py --out FILE.json [--candidates 3] APP_CONFIG...
where APP_CONFIG is a benchmarks/external program's optimas.yml whose capture is in
benchmarks/replay/captures/<its folder>-h200.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

from runner.base.config import load_config  # noqa: E402 (after the path above)
from runner.flows.optimize import optimize  # noqa: E402


def capture_inputs(config: Path) -> dict[str, list[Path]]:
    """The recorded profiles of the program whose optimas.yml this is."""
    cap = BENCH / "replay" / "captures" / f"{config.parent.name}-h200"
    timing = next(p for p in (cap / "timing_raw.csv", cap / "timing_trace.tsv") if p.exists())
    return {"timing": [timing], "report": sorted(cap.glob("hot*.ncu-rep")),
            "counters": sorted((cap / "counters").glob("*.ncu-rep"))}


def one(config: Path, candidates: int, runs: Path) -> dict:
    lc = load_config(config)
    lc = lc.with_llm(candidates=candidates, backend="replay")
    t0 = time.monotonic()
    opt = optimize(lc, runs, capture_inputs(config))
    top = min((p for p in runs.iterdir() if p.is_dir()), key=lambda p: p.name)
    table = top / "evaluation" / "candidates.json"
    return {"app": lc.config.app.name, "wall_s": round(time.monotonic() - t0, 1),
            "kept_verdict": opt.iteration.result.verdict if opt.iteration and opt.iteration.result else None,
            "note": opt.iteration.note if opt.iteration else "",
            "candidates": json.loads(table.read_text()) if table.exists() else None}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("configs", nargs="+", type=Path)
    p.add_argument("--candidates", type=int, default=3)
    p.add_argument("--out", type=Path, required=True)
    a = p.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n, config in enumerate(a.configs):
            row = one(config.resolve(), a.candidates, Path(tmp) / str(n))
            print(json.dumps(row), flush=True)
            rows.append(row)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

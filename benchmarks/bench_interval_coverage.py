"""Coverage of the timing interval by simulation (issue #15, item 8): how often the interval that
`runner.evaluation.statistics.improvement` reports contains the true improvement, for the sample
sizes the evaluation uses (5 to 20 pairs), under log-normal noise and under noise with outliers.

Each experiment draws `n` baseline and `n` candidate times with a known true speed ratio and asks
improvement() for its 95% interval; coverage is the share of experiments whose interval contains
the true improvement (a 95% interval should reach about 95%). Also reports how often a candidate
with no true change is called significant (should be about 5%).

Usage: python benchmarks/bench_interval_coverage.py [--experiments 400] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

from runner.evaluation.statistics import improvement  # noqa: E402 (after the path above)


def draw(rng: np.random.Generator, n: int, median: float, noise: str) -> np.ndarray:
    """n timing samples around `median`: log-normal with a 1% spread, or the same with 10% of
    the samples slowed 5-20% (another process, a clock dip)."""
    x = median * np.exp(rng.normal(0.0, 0.01, n))
    if noise == "outliers":
        slow = rng.random(n) < 0.10
        x[slow] *= 1.0 + rng.uniform(0.05, 0.20, slow.sum())
    return x


def coverage(n: int, ratio: float, noise: str, experiments: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    truth = ratio - 1.0  # baseline median / candidate median - 1, with medians 1.0 and 1/ratio
    hits = significant = 0
    widths = []
    for i in range(experiments):
        b = draw(rng, n, 1.0, noise)
        c = draw(rng, n, 1.0 / ratio, noise)
        r = improvement(list(b), list(c), resamples=2000, seed=i)
        hits += r.ci_low <= truth <= r.ci_high
        significant += r.significant
        widths.append(r.ci_high - r.ci_low)
    return {"pairs": n, "true_improvement": truth, "noise": noise, "experiments": experiments,
            "coverage": hits / experiments, "called_significant": significant / experiments,
            "median_width": float(np.median(widths))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--experiments", type=int, default=400)
    ap.add_argument("--out", type=Path, default=BENCH / "results")
    args = ap.parse_args()
    t0 = time.monotonic()
    rows = []
    for noise in ("lognormal", "outliers"):
        for ratio in (1.0, 1.05):
            for n in (5, 8, 12, 20):
                rows.append(coverage(n, ratio, noise, args.experiments, seed=n))
                r = rows[-1]
                print(f"{noise:9} true {r['true_improvement']:+.0%} n={n:2}: coverage {r['coverage']:.1%}, "
                      f"significant {r['called_significant']:.1%}, width {r['median_width']:.2%}", flush=True)
    command = "python benchmarks/" + Path(sys.argv[0]).name + " " + " ".join(sys.argv[1:])
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / "interval-coverage.json"
    out.write_text(json.dumps({"command": command.strip(), "seconds": round(time.monotonic() - t0, 1),
                               "rows": rows}, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Coverage of the timing interval by simulation (issue #15, item 8): how often the interval that
`runner.evaluation.statistics.improvement` reports contains the true improvement, for the sample
sizes the evaluation uses (5 to 20 pairs), under log-normal noise and under noise with outliers.

Each experiment draws `n` baseline and `n` candidate times with a known true speed ratio and asks
improvement() for its 95% interval; coverage is the share of experiments whose interval contains
the true improvement (a 95% interval should reach about 95%). Also reports how often a candidate
with no true change is called significant (should be about 5%).

`--sequential` simulates the evaluation's stopping rule instead (runner/evaluation/measure.py,
time_interleaved): 5 pairs, then one more while the speed ratio's interval is wider than the
precision, up to 20; with no true change, at the noise levels the A/A runs on the H200 showed. A
rule that stops when the interval happens to be narrow calls more comparisons significant than
a fixed sample size does; this measures by how much.

`--replay FILE` does the same A/A comparisons on real noise instead of drawn noise: the processes'
kernel times that `bench_tracer_precision.py --samples N` recorded on a GPU, drawn at random
("iid": the noise's distribution, its ties at the timer's resolution included) or as consecutive
runs from a random start ("window": its order too, drift and all), at fixed sizes and under the
stopping rule.

Usage: python benchmarks/bench_interval_coverage.py [--experiments 400] [--sequential | --replay FILE]
       [--precision 0.02] [--out DIR]
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


def draw(rng: np.random.Generator, n: int, median: float, noise: str, spread: float = 0.01) -> np.ndarray:
    """n timing samples around `median`: log-normal with a 1% spread (or `spread`), or the same
    with 10% of the samples slowed 5-20% (another process, a clock dip)."""
    x = median * np.exp(rng.normal(0.0, spread, n))
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


def sequential(cv: float, precision: float, experiments: int, seed: int, first: int = 5, most: int = 20) -> dict:
    """A/A comparisons under the evaluation's stopping rule, log-normal noise of spread `cv`."""
    rng = np.random.default_rng(seed)
    significant, pairs = 0, []
    for i in range(experiments):
        b, c = list(draw(rng, first, 1.0, "lognormal", cv)), list(draw(rng, first, 1.0, "lognormal", cv))
        r = improvement(b, c, resamples=2000, seed=i)
        while len(b) < most and r.ratio_width > precision:
            b.append(float(draw(rng, 1, 1.0, "lognormal", cv)[0]))
            c.append(float(draw(rng, 1, 1.0, "lognormal", cv)[0]))
            r = improvement(b, c, resamples=2000, seed=i)
        significant += r.significant
        pairs.append(len(b))
    return {"cv": cv, "precision": precision, "experiments": experiments,
            "called_significant": significant / experiments, "median_pairs": float(np.median(pairs)),
            "fixed_pairs": first == most}


def replay(ordered: np.ndarray, draws: str, first: int, most: int, precision: float, experiments: int,
           seed: int = 7) -> dict:
    """A/A comparisons on recorded process times: each takes 2 * `most` of them (at random, or
    consecutive from a random start), hands them out alternately to baseline and candidate, and
    stops as the evaluation does (from `first` pairs, one more while wider than `precision`)."""
    rng = np.random.default_rng(seed)
    significant, pairs = 0, []
    for i in range(experiments):
        if draws == "iid":
            w = rng.choice(ordered, 2 * most)
        else:
            start = int(rng.integers(0, len(ordered) - 2 * most + 1))
            w = ordered[start:start + 2 * most]
        n = first
        r = improvement(list(w[0:2 * n:2]), list(w[1:2 * n:2]), resamples=2000, seed=i)
        while n < most and r.ratio_width > precision:
            n += 1
            r = improvement(list(w[0:2 * n:2]), list(w[1:2 * n:2]), resamples=2000, seed=i)
        significant += r.significant
        pairs.append(n)
    return {"draws": draws, "first": first, "most": most, "precision": precision, "experiments": experiments,
            "called_significant": significant / experiments, "median_pairs": float(np.median(pairs))}


def replay_rows(path: Path, experiments: int, precision: float) -> list[dict]:
    try:
        recorded = json.loads(path.read_text())["results"]
        apps = [(r["app"], r["configuration"], np.asarray(r["ordered_ms"], dtype=float)) for r in recorded]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SystemExit(f"--replay {path}: expected the tracer-samples.json that bench_tracer_precision.py "
                         f"--samples writes ({e})") from e
    rows = []
    for app, conf, ordered in apps:
        for draws in ("iid", "window"):
            for first, most in ((5, 5), (10, 10), (20, 20), (5, 20)):
                if 2 * most > len(ordered):
                    continue
                r = {"app": app, "configuration": conf, "processes": len(ordered),
                     **replay(ordered, draws, first, most, precision, experiments)}
                rows.append(r)
                rule = f"fixed {most}" if first == most else f"{first}..{most}"
                print(f"{app} {conf} {draws:6} {rule:8}: significant {r['called_significant']:.1%}, "
                      f"median pairs {r['median_pairs']:g}", flush=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--experiments", type=int, default=400)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--sequential", action="store_true", help="the evaluation's stopping rule, A/A only")
    mode.add_argument("--replay", type=Path, metavar="FILE",
                      help="the stopping rule on recorded process times (bench_tracer_precision.py --samples)")
    ap.add_argument("--precision", type=float, default=0.02, help="the rule's precision for --replay")
    ap.add_argument("--out", type=Path, default=BENCH / "results")
    args = ap.parse_args()
    t0 = time.monotonic()
    if args.replay:
        rows, name = replay_rows(args.replay, args.experiments, args.precision), "interval-replay.json"
    elif args.sequential:
        rows, name = sequential_rows(args.experiments), "interval-sequential.json"
    else:
        rows, name = coverage_rows(args.experiments), "interval-coverage.json"
    command = "python benchmarks/" + Path(sys.argv[0]).name + " " + " ".join(sys.argv[1:])
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / name
    out.write_text(json.dumps({"command": command.strip(), "seconds": round(time.monotonic() - t0, 1),
                               "rows": rows}, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


def coverage_rows(experiments: int) -> list[dict]:
    rows = []
    for noise in ("lognormal", "outliers"):
        for ratio in (1.0, 1.05):
            for n in (5, 8, 12, 20):
                rows.append(coverage(n, ratio, noise, experiments, seed=n))
                r = rows[-1]
                print(f"{noise:9} true {r['true_improvement']:+.0%} n={n:2}: coverage {r['coverage']:.1%}, "
                      f"significant {r['called_significant']:.1%}, width {r['median_width']:.2%}", flush=True)
    return rows


def sequential_rows(experiments: int) -> list[dict]:
    # The spreads span the A/A runs' baseline CVs on the H200 (0.05% to 0.9%, extrema small's) and
    # beyond; 2% is bench_tracer_precision's precision, 4% the default evaluation.timing_precision.
    rows = []
    for precision in (0.02, 0.04):
        for cv in (0.002, 0.005, 0.009, 0.012, 0.02):
            for first, most in ((5, 5), (5, 20)):
                rows.append(sequential(cv, precision, experiments, seed=int(cv * 1e4), first=first, most=most))
                r = rows[-1]
                rule = "fixed 5" if r["fixed_pairs"] else "5..20"
                print(f"precision {precision:.0%} cv {cv:.1%} {rule:7}: significant {r['called_significant']:.1%}, "
                      f"median pairs {r['median_pairs']:g}", flush=True)
    return rows


if __name__ == "__main__":
    raise SystemExit(main())

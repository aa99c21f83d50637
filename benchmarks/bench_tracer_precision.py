"""A/A timing precision on the benchmark applications, on a GPU: the baseline against itself, timed
the way the evaluation stage times (interleaved processes, each one sample), by the CUPTI tracer and
by the application's own timer. Reports the interval widths and how many comparisons were called
significant (at 95% confidence about 5% would be, by chance, if the statistics are right).

Usage: python3 benchmarks/bench_tracer_precision.py [--apps accuracy,stream] [--comparisons 20]
       [--configuration small] [--timers tracer,app] [--max-seconds S] [--samples N] [--out DIR]

Each comparison is reported on stderr as it ends. With --max-seconds, an app starts no comparison
after S seconds of its own and its result says how many it made (`cut_short`), so that a run with
a fixed time limit still returns what it measured. Every comparison keeps its per-process samples.

`--samples N` makes one long A/A run instead: N pairs at a fixed size, no stopping rule, every
process's time kept in the order it ran, so that the stopping rule and the interval can be replayed
on this machine's real noise without a GPU (bench_interval_coverage.py --replay).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

from bench_tracer import build_app, each_app  # noqa: E402 (beside this script)

from runner.evaluation.measure import time_interleaved  # noqa: E402


def one_app(app: str, comparisons: int, configuration: str | None, timers: list[str], work: Path,
            max_seconds: float | None = None) -> dict:
    lc, exe = build_app(app, work)
    started = time.perf_counter()
    cfg = lc.config.app
    conf = configuration or cfg.profile_configuration or cfg.configurations[0]
    out = {"app": app, "configuration": conf}
    for timer in timers:
        ev = lc.config.evaluation.model_copy(update={"timer": timer, "timing_precision": 0.02, "max_timed_runs": 20})
        lcx = lc.model_copy(update={"config": lc.config.model_copy(update={"evaluation": ev})})
        rows = []
        t0 = time.perf_counter()
        for i in range(comparisons):
            if max_seconds is not None and rows and time.perf_counter() - started > max_seconds:
                break
            t = time_interleaved(lcx, exe, exe, conf)
            rows.append({"width": t.result.ratio_width, "significant": t.result.significant, "stop": t.stop,
                         "pairs": len(t.baseline), "improvement": t.result.improvement,
                         "cv": t.result.baseline_cv, "baseline": t.baseline, "candidate": t.candidate})
            print(f"{app} {conf} {timer}: comparison {i + 1}/{comparisons}, width {t.result.ratio_width:.4f}, "
                  f"{len(t.baseline)} pairs, {'significant' if t.result.significant else 'not significant'}, "
                  f"{time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
        widths = [x["width"] for x in rows]
        out[timer] = {"seconds": round(time.perf_counter() - t0, 1), "median_width": statistics.median(widths),
                      "max_width": max(widths), "significant": sum(x["significant"] for x in rows),
                      "comparisons": len(rows), "cut_short": len(rows) < comparisons,
                      "median_pairs": statistics.median(x["pairs"] for x in rows),
                      "median_cv": statistics.median(x["cv"] for x in rows), "rows": rows}
    return out


def samples(app: str, pairs: int, configuration: str | None, work: Path) -> dict:
    """One A/A run of `pairs` pairs at a fixed size, timed by the tracer; the processes' kernel times in
    the order they ran."""
    lc, exe = build_app(app, work)
    cfg = lc.config.app
    conf = configuration or cfg.profile_configuration or cfg.configurations[0]
    ev = lc.config.evaluation.model_copy(update={"timer": "tracer", "timing_precision": 0.0, "timed_runs": pairs,
                                                 "max_timed_runs": pairs})
    lcx = lc.model_copy(update={"config": lc.config.model_copy(update={"evaluation": ev})})
    t0 = time.perf_counter()
    t = time_interleaved(lcx, exe, exe, conf)
    ordered = []
    for i, (b, c) in enumerate(zip(t.baseline, t.candidate, strict=True)):
        # time_interleaved counts its warm-up pairs too: the baseline goes first in odd pairs
        ordered += [b, c] if (ev.warmup_runs + i + 1) % 2 else [c, b]
    print(f"{app} {conf}: {pairs} pairs in {time.perf_counter() - t0:.0f} s, {t.result.summary()}",
          file=sys.stderr, flush=True)
    return {"app": app, "configuration": conf, "seconds": round(time.perf_counter() - t0, 1), "pairs": pairs,
            "kernels": t.kernels, "ordered_ms": ordered}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--apps", default="accuracy,stream")
    ap.add_argument("--comparisons", type=int, default=20)
    ap.add_argument("--configuration", default=None)
    ap.add_argument("--timers", default="tracer,app", help="tracer, app (the program's own kernel_time_regex) or both")
    ap.add_argument("--max-seconds", type=float, default=None,
                    help="per app: start no comparison after this many seconds (at least one is made)")
    ap.add_argument("--samples", type=int, default=None, metavar="N",
                    help="one A/A run of N pairs per app, keeping every process's time (for --replay)")
    ap.add_argument("--out", type=Path, default=BENCH / "results")
    args = ap.parse_args()
    if args.samples is not None:
        each_app(args.apps.split(","), lambda app, work: samples(app, args.samples, args.configuration, work),
                 args.out / "tracer-samples.json",
                 lambda res: {k: v for k, v in res.items() if k != "ordered_ms"})
        return 0
    each_app(args.apps.split(","), lambda app, work: one_app(app, args.comparisons, args.configuration,
                                       args.timers.split(","), work, args.max_seconds),
             args.out / "tracer-precision.json",
             lambda res: {k: ({kk: vv for kk, vv in v.items() if kk != "rows"} if isinstance(v, dict) else v)
                          for k, v in res.items()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

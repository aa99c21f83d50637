"""A/A timing precision on the benchmark applications, on a GPU: the baseline against itself, timed
the way the evaluation stage times (interleaved processes, each one sample), by the CUPTI tracer and
by the application's own timer. Reports the interval widths and how many comparisons were called
significant (at 95% confidence about 5% would be, by chance, if the statistics are right).

Usage: python3 benchmarks/bench_tracer_precision.py [--apps accuracy,stream] [--comparisons 20]
       [--configuration small] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

from runner.base.config import load_config  # noqa: E402
from runner.base.processes import child_environment, render, run_process  # noqa: E402
from runner.evaluation.measure import time_interleaved  # noqa: E402


def one_app(app: str, comparisons: int, configuration: str | None, work: Path) -> dict:
    path = BENCH / app / "optimas.yml"
    lc = load_config(path)
    cfg = lc.config.app
    exe = work / app
    r = run_process(render(cfg.build, exe=exe, arch="sm_90", lineinfo="", config="", seed=1, scale=1, out=""),
                    lc.resolve(cfg.workdir), 600, env=child_environment(cfg.env))
    if r.returncode != 0:
        raise SystemExit(f"{app}: build failed: {r.output[-1000:]}")
    conf = configuration or cfg.profile_configuration or cfg.configurations[0]
    out = {"app": app, "configuration": conf}
    for timer in ("tracer", "app"):
        ev = lc.config.evaluation.model_copy(update={"timer": timer, "timing_precision": 0.02, "max_timed_runs": 20})
        lcx = lc.model_copy(update={"config": lc.config.model_copy(update={"evaluation": ev})})
        rows = []
        t0 = time.perf_counter()
        for _ in range(comparisons):
            t = time_interleaved(lcx, exe, exe, conf)
            rows.append({"width": t.result.ratio_width, "significant": t.result.significant, "stop": t.stop,
                         "pairs": len(t.baseline), "improvement": t.result.improvement,
                         "cv": t.result.baseline_cv})
        widths = [x["width"] for x in rows]
        out[timer] = {"seconds": round(time.perf_counter() - t0, 1), "median_width": statistics.median(widths),
                      "max_width": max(widths), "significant": sum(x["significant"] for x in rows),
                      "comparisons": comparisons, "median_pairs": statistics.median(x["pairs"] for x in rows),
                      "median_cv": statistics.median(x["cv"] for x in rows), "rows": rows}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--apps", default="accuracy,stream")
    ap.add_argument("--comparisons", type=int, default=20)
    ap.add_argument("--configuration", default=None)
    ap.add_argument("--out", type=Path, default=BENCH / "results")
    args = ap.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for app in args.apps.split(","):
            work = Path(tmp) / app
            work.mkdir()
            res = one_app(app, args.comparisons, args.configuration, work)
            results.append(res)
            print(json.dumps({k: ({kk: vv for kk, vv in v.items() if kk != "rows"} if isinstance(v, dict) else v)
                              for k, v in res.items()}), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    dst = args.out / "tracer-precision.json"
    dst.write_text(json.dumps({"command": "python3 benchmarks/bench_tracer_precision.py " + " ".join(sys.argv[1:]),
                               "results": results}, indent=1))
    print(f"wrote {dst}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

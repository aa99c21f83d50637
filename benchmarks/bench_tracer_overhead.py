"""What the CUPTI tracer's kernel times are worth, on a GPU.

1. Overhead: benchmarks/tracer_overhead/overhead.cu times its own kernels with CUDA events (single
   launches after warm-up, and per launch over a back-to-back batch) and its first launch on the
   host; it runs untraced and traced, interleaved, and the medians are compared. In the traced runs
   the tracer's own durations are compared with the program's event times of the same process.
2. Agreement with ncu (`--ncu-apps`): per kernel, the tracer's total against ncu's
   `gpu__time_duration.sum` with ncu's default cache control (caches flushed before every launch)
   and with `--cache-control none`, several runs each, interleaved.

Usage: python3 benchmarks/bench_tracer_overhead.py [--runs 10] [--ncu-apps stream,adjacent]
       [--ncu-runs 3] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

from bench_tracer import build_app, checked  # noqa: E402 (beside this script)

from runner.base.processes import child_environment, render, run_process  # noqa: E402
from runner.profiles.readers import NcuRawCsvReader  # noqa: E402
from runner.scan.cuda_source import kernel_key  # noqa: E402
from runner.tracing.library import trace_environment, tracer_library  # noqa: E402
from runner.tracing.trace import read_traces  # noqa: E402

PROBE = BENCH / "tracer_overhead" / "overhead.cu"
FIELD = re.compile(r"(\w+)=([0-9.]+)")


def figures(output: str) -> dict[str, float]:
    """The probe's OVERHEAD lines as one mapping: `<kernel>.single_us`, `first_launch_call_ms`, ..."""
    out: dict[str, float] = {}
    for line in output.splitlines():
        if not line.startswith("OVERHEAD "):
            continue
        kernel = re.search(r"kernel=(\w+)", line)
        prefix = f"{kernel.group(1)}." if kernel else ""
        out.update({prefix + k: float(v) for k, v in FIELD.findall(line)})
    return out


def median_of(rows: list[dict[str, float]], key: str) -> float | None:
    values = [r[key] for r in rows if key in r]
    return statistics.median(values) if values else None


def overhead(runs: int, lib: Path, work: Path) -> dict:
    exe = work / "overhead"
    env = child_environment({})
    checked(["nvcc", "-O3", "-std=c++17", "-arch=sm_90", "-o", str(exe), str(PROBE)], work, env)
    plain, traced, tracer_us = [], [], []
    for i in range(runs + 1):  # round 0 warms up
        tdir = work / f"trace-{i}"
        tdir.mkdir()
        order = [False, True] if i % 2 else [True, False]
        for with_tracer in order:
            _, out = checked([str(exe)], work, {**env, **trace_environment(lib, tdir)} if with_tracer else env)
            if i == 0:
                continue
            (traced if with_tracer else plain).append(figures(out))
        if i:
            per_kernel: dict[str, list[int]] = defaultdict(list)
            for t in read_traces(tdir):
                for k in t.launches:
                    per_kernel[kernel_key(k.kernel)].append(k.duration_ns)
            tracer_us.append({f"{name.removesuffix('_kernel')}.tracer_us": statistics.median(d) / 1e3
                              for name, d in per_kernel.items()})
    keys = sorted({k for r in plain + traced for k in r})
    summary = {}
    for key in keys:
        u, t = median_of(plain, key), median_of(traced, key)
        summary[key] = {"untraced": u, "traced": t, "change": round(t / u - 1, 4) if u and t is not None else None}
    for kernel in ("copy", "fma", "tiny"):
        summary[f"{kernel}.tracer_us"] = {"traced": median_of(tracer_us, f"{kernel}.tracer_us"),
                                          "events_in_the_same_process": median_of(traced, f"{kernel}.single_us")}
    return {"runs": runs, "summary": summary, "untraced": plain, "traced": traced, "tracer": tracer_us}


def ncu_agreement(app: str, runs: int, lib: Path, work: Path) -> dict:
    lc, exe = build_app(app, work)
    cfg = lc.config.app
    cwd, env = lc.resolve(cfg.workdir), child_environment(cfg.env)
    conf = cfg.profile_configuration or cfg.configurations[0]
    argv = render(cfg.profile_run or cfg.run, exe=exe, config=conf, seed=cfg.seeds[0], scale=1, out="/dev/null",
                  arch="", lineinfo="", **cfg.values(conf))
    totals: dict[str, list[dict[str, float]]] = defaultdict(list)
    for i in range(runs):
        for cache in ("all", "none"):
            rep = work / f"{app}-{cache}-{i}"
            checked(["ncu", "--clock-control", "none", "--cache-control", cache, "--metrics", "gpu__time_duration.sum",
                     "-f", "-o", str(rep), *argv], cwd, env)
            raw = work / f"{app}-{cache}-{i}.csv"
            r = run_process(["ncu", "-i", f"{rep}.ncu-rep", "--csv", "--page", "raw"], cwd, 600, env=env, stdout=raw,
                            merge_stderr=False)
            if r.returncode != 0:
                raise SystemExit(f"ncu export failed: {r.output[-1000:]}")
            launches = NcuRawCsvReader().read(raw).launches
            ms = launches.groupby(launches["kernel"].map(kernel_key))["duration_ns"].sum() / 1e6
            totals[f"ncu_cache_{cache}"].append({k: float(v) for k, v in ms.items()})
        tdir = work / f"{app}-trace-{i}"
        tdir.mkdir()
        checked(argv, cwd, {**env, **trace_environment(lib, tdir)})
        per: dict[str, float] = defaultdict(float)
        for t in read_traces(tdir):
            for k in t.launches:
                per[kernel_key(k.kernel)] += k.duration_ns / 1e6
        totals["tracer"].append(dict(per))
    kernels = sorted({k for rows in totals.values() for r in rows for k in r})
    table = {k: {way: median_of(rows, k) for way, rows in totals.items()} for k in kernels}
    whole = {way: statistics.median(sum(r.values()) for r in rows) for way, rows in totals.items()}
    return {"app": app, "configuration": conf, "runs": runs, "per_kernel_ms_median": table, "total_ms_median": whole,
            "tracer_vs_ncu_cache_all": round(whole["tracer"] / whole["ncu_cache_all"] - 1, 4),
            "tracer_vs_ncu_cache_none": round(whole["tracer"] / whole["ncu_cache_none"] - 1, 4), "rows": totals}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10, help="untraced/traced rounds of the overhead probe")
    ap.add_argument("--ncu-apps", default="stream,adjacent", help="benchmark apps for the ncu comparison ('' for none)")
    ap.add_argument("--ncu-runs", type=int, default=3)
    ap.add_argument("--out", type=Path, default=BENCH / "results")
    args = ap.parse_args()
    lib = tracer_library()
    result: dict = {"command": "python3 benchmarks/" + Path(sys.argv[0]).name + " " + " ".join(sys.argv[1:])}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if args.runs:
            (work / "probe").mkdir()
            result["overhead"] = overhead(args.runs, lib, work / "probe")
            print(json.dumps(result["overhead"]["summary"], indent=1), flush=True)
        result["ncu"] = []
        for app in filter(None, args.ncu_apps.split(",")):
            (work / app).mkdir()
            result["ncu"].append(ncu_agreement(app, args.ncu_runs, lib, work / app))
            print(json.dumps({k: v for k, v in result["ncu"][-1].items() if k != "rows"}, indent=1), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "tracer-overhead.json").write_text(json.dumps(result, indent=1))
    print(f"wrote {args.out / 'tracer-overhead.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

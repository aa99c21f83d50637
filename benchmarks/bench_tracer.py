"""The CUPTI tracer on the benchmark applications, on a GPU: hot-kernel selection from one traced
run against the ncu timing pass (wall time, hot set, kernel names), and the tracer's overhead on
the kernel time the application reports itself (untraced and traced runs interleaved).

Usage: python3 benchmarks/bench_tracer.py [--apps stream,seismic] [--runs 10] [--out DIR]
(--apps takes benchmark app names or paths of any program's optimas.yml)
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

from runner.analysis.hot import select_hot_kernels  # noqa: E402
from runner.base.config import LoadedConfig, load_config  # noqa: E402
from runner.base.processes import child_environment, render, run_process  # noqa: E402
from runner.profiles.readers import NcuRawCsvReader  # noqa: E402
from runner.profiles.readers.trace import profile_of  # noqa: E402
from runner.scan.cuda_source import kernel_key  # noqa: E402
from runner.tracing.library import trace_environment, tracer_library  # noqa: E402
from runner.tracing.trace import read_traces  # noqa: E402

APPS = ["stream", "accuracy", "sobol", "shmembench", "adjacent", "extrema", "xslookup", "seismic"]


def checked(argv: list[str], cwd: Path, env: dict[str, str], timeout: float = 900) -> tuple[float, str]:
    t0 = time.perf_counter()
    r = run_process(argv, cwd, timeout, env=env)
    if r.returncode != 0:
        raise SystemExit(f"failed ({r.returncode}): {' '.join(argv)}\n{r.output[-2000:]}")
    return time.perf_counter() - t0, r.output


def app_config(app: str) -> Path:
    """A benchmark app's name (`stream`) or any program's optimas.yml (a cuda-samples program)."""
    return Path(app).resolve() if app.endswith((".yml", ".yaml")) else BENCH / app / "optimas.yml"


def app_name(app: str) -> str:
    return app_config(app).parent.name


def build_app(app: str, work: Path) -> tuple[LoadedConfig, Path]:
    """An app's config and its binary, built into `work` with its own command for sm_90."""
    lc = load_config(app_config(app))
    cfg = lc.config.app
    exe = work / app_name(app)
    checked(render(cfg.build, exe=exe, arch="sm_90", lineinfo="", config="", seed=1, scale=1, out=""),
            lc.resolve(cfg.workdir), child_environment(cfg.env))
    return lc, exe


def each_app(apps: list[str], one: Callable[[str, Path], dict], out: Path, brief: Callable[[dict], dict]) -> None:
    """Run `one(app, work folder)` per app, print `brief` of each result as it comes, and write the
    results so far with the command line to `out` after each app."""
    results = []
    command = "python3 benchmarks/" + Path(sys.argv[0]).name + " " + " ".join(sys.argv[1:])
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for app in apps:
            work = Path(tmp) / app_name(app)
            work.mkdir()
            results.append(one(app, work))
            print(json.dumps(brief(results[-1])), flush=True)
            # after every app, so that a run cut short keeps what it measured
            out.write_text(json.dumps({"command": command, "results": results}, indent=1))
    print(f"wrote {out}")


def one_app(path: str, runs: int, lib: Path, work: Path) -> dict:
    lc, exe = build_app(path, work)
    app = app_name(path)
    cfg = lc.config.app
    cwd = lc.resolve(cfg.workdir)
    env = child_environment(cfg.env)
    conf = cfg.profile_configuration or cfg.configurations[0]
    argv = render(cfg.profile_run or cfg.run, exe=exe, config=conf, seed=cfg.seeds[0], scale=1, out="/dev/null",
                  arch="", lineinfo="", **cfg.values(conf))
    alpha = lc.config.analysis.alpha

    rep = work / f"{app}-timing"
    ncu_s, _ = checked(["ncu", "--clock-control", "none", "--metrics", "gpu__time_duration.sum", "-f", "-o", str(rep),
                        *argv], cwd, env)
    t0 = time.perf_counter()
    r = run_process(["ncu", "-i", f"{rep}.ncu-rep", "--csv", "--page", "raw"], cwd, 600, env=env,
                    stdout=work / f"{app}-raw.csv", merge_stderr=False)
    export_s = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"ncu export failed: {r.output[-1000:]}")
    ncu_launches = NcuRawCsvReader().read(work / f"{app}-raw.csv").launches
    ncu_hot = [k.kernel for k in select_hot_kernels(ncu_launches, alpha) if k.hot]

    traces = work / f"{app}-traces"
    traces.mkdir()
    trace_s, _ = checked(argv, cwd, {**env, **trace_environment(lib, traces)})
    t0 = time.perf_counter()
    traced = read_traces(traces)
    trace_launches = profile_of(traced, str(traces)).launches
    read_s = time.perf_counter() - t0
    trace_hot = [k.kernel for k in select_hot_kernels(trace_launches, alpha) if k.hot]

    # Kernel durations: ncu's gpu__time_duration against the tracer's, per kernel (one run each).
    ncu_ms = ncu_launches.groupby(ncu_launches["kernel"].map(kernel_key))["duration_ns"].sum() / 1e6
    trace_ms = trace_launches.groupby(trace_launches["kernel"].map(kernel_key))["duration_ns"].sum() / 1e6

    pattern = re.compile(cfg.kernel_time_regex) if cfg.kernel_time_regex else None
    plain, with_tracer, eager, trace_total = [], [], [], []
    for i in range(runs + 1):  # the first round warms up
        _, out = checked(argv, cwd, env)
        tdir, edir = work / f"{app}-t{i}", work / f"{app}-e{i}"
        tdir.mkdir()
        edir.mkdir()
        _, tout = checked(argv, cwd, {**env, **trace_environment(lib, tdir)})
        # The same with every module loaded when the context is created, not at a kernel's first launch.
        _, eout = checked(argv, cwd, {**env, **trace_environment(lib, edir), "CUDA_MODULE_LOADING": "EAGER"})
        if i == 0 or not pattern:
            continue
        plain.append(float(pattern.search(out).group(1)))
        with_tracer.append(float(pattern.search(tout).group(1)))
        eager.append(float(pattern.search(eout).group(1)))
        trace_total.append(sum(sum(t.kernel_ns().values()) for t in read_traces(tdir)) / 1e6)
    # a program without kernel_time_regex prints no timer: no overhead figure on it
    p, w, e = (statistics.median(x) if x else None for x in (plain, with_tracer, eager))
    return {
        "app": app, "configuration": conf, "launches": len(trace_launches), "ncu_launches": len(ncu_launches),
        "hot_selection_s": {"ncu_timing_pass": round(ncu_s + export_s, 3), "traced_run": round(trace_s + read_s, 3),
                            "speedup": round((ncu_s + export_s) / (trace_s + read_s), 1)},
        "hot_ncu": ncu_hot, "hot_trace": trace_hot,
        "same_hot_set": {kernel_key(k) for k in ncu_hot} == {kernel_key(k) for k in trace_hot},
        "kernel_ms_ncu": {k: round(v, 4) for k, v in ncu_ms.items()},
        "kernel_ms_trace": {k: round(v, 4) for k, v in trace_ms.items()},
        "app_timer_ms_untraced_median": p, "app_timer_ms_traced_median": w, "app_timer_ms_traced_eager_median": e,
        "app_timer_overhead": round(w / p - 1, 4) if p else None,
        "app_timer_overhead_eager": round(e / p - 1, 4) if p else None,
        "trace_kernel_total_ms_median": statistics.median(trace_total) if trace_total else None,
        "untraced": plain, "traced": with_tracer, "traced_eager": eager,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--apps", default=",".join(APPS))
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--out", type=Path, default=BENCH / "results")
    args = ap.parse_args()
    lib = tracer_library()
    each_app(args.apps.split(","), lambda app, work: one_app(app, args.runs, lib, work), args.out / "tracer-bench.json",
             lambda res: {k: v for k, v in res.items() if k not in ("untraced", "traced", "traced_eager")})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

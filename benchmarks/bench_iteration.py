"""Time of one closed-loop iteration per benchmark app, stage by stage, on a GPU: `optimas run` with
`evaluation.max_iterations: 1` (profile, propose with the offline backend, so no model latency,
evaluate, re-profile the candidate), once per setup:

- `tracer`: every launch's duration from one traced run, candidates timed by the tracer;
- `ncu`: the timing pass under ncu, candidates timed by the program's own timer (the pipeline
  before the tracer; builds still go through the run's build cache).

Writes iteration-time.json and iteration-time.md after every app.

Usage: python3 benchmarks/bench_iteration.py [--apps stream,accuracy] [--setups tracer,ncu] [--out DIR]
       python3 benchmarks/bench_iteration.py \
           --apps benchmarks/external/cuda-samples/Samples/0_Introduction/matrixMul/optimas.yml
(an app is a benchmark app's name or any optimas.yml; the third-party programs under
benchmarks/external are run the same way)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import yaml

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

from bench_tracer import APPS  # noqa: E402 (beside this script)
from loop_experiments import cli, stage_times  # noqa: E402

SETUPS = {
    "tracer": {"profiling": {"hot_kernels": "tracer"}, "evaluation": {"timer": "tracer"}},
    "ncu": {"profiling": {"hot_kernels": "ncu"}, "evaluation": {"timer": "app"}},
}
# manifest command names -> the profiling step they belong to
STEPS = (("build", ("build-",)), ("kernel durations", ("trace", "timing", "export-timing-")),
         ("targeted", ("targeted-", "export-hot")), ("counters", ("counters-",)))


def profile_steps(manifest: dict) -> dict[str, float]:
    """Seconds per profiling step, summed over the manifest's commands."""
    out: dict[str, float] = defaultdict(float)
    for c in manifest.get("commands", []):
        step = next((s for s, prefixes in STEPS if c["name"].startswith(prefixes)), "other")
        out[step] += c["seconds"]
    return {k: round(v, 1) for k, v in out.items()}


def config_of(app: str) -> Path:
    """A benchmark app's config (`stream`), or any config file's path."""
    return Path(app) if app.endswith((".yml", ".yaml")) else BENCH / app / "optimas.yml"


def one(app: str, setup: str, runs: Path) -> dict:
    """One `optimas run` of `app` under `setup`, with its stage and step times."""
    original = config_of(app)
    cfg = yaml.safe_load(original.read_text())
    for section, values in SETUPS[setup].items():
        cfg.setdefault(section, {}).update(values)
    cfg.setdefault("evaluation", {})["max_iterations"] = 1
    variant = original.with_name(f".bench-iteration-{setup}.yml")  # beside it: its paths are relative
    variant.write_text(yaml.safe_dump(cfg, sort_keys=False))
    try:
        code, _, err, wall = cli("run", "--config", str(variant), "--runs-dir", str(runs), timeout=900)
    finally:
        variant.unlink()
    entry: dict = {"app": app if not app.endswith((".yml", ".yaml")) else original.parent.name, "setup": setup,
                   "exit": code, "wall_s": round(wall, 1)}
    if code != 0:
        return entry | {"error": err[-1500:]}
    run = sorted(p for p in runs.iterdir() if p.is_dir())[-1]
    manifest = json.loads((run / "manifest.json").read_text())
    entry.update(stages=stage_times(run), profile_steps=profile_steps(manifest), run=str(run))
    result = run / "evaluation" / "result.json"
    if result.is_file():
        e = json.loads(result.read_text())
        entry["evaluation_steps"] = {k: round(v, 1) for k, v in (e.get("seconds") or {}).items()}
        entry["verdict"] = e.get("verdict")
        entry["timed_pairs"] = [len(t["baseline"]) for t in e.get("timings") or []]  # per configuration
        entry["metric"] = (e.get("timing") or {}).get("metric")
        timing = (e.get("timing") or {}).get("result") or {}
        entry["improvement"] = [timing.get(k) for k in ("improvement", "ci_low", "ci_high")] if timing else None
        validation = e.get("validation") or {}
        entry["validation"] = sorted({f"{c['status']}" + (f": {c['detail'][:120]}" if c.get("detail") else "")
                                      for c in validation.get("cases", [])})
        entry["validation_modes"] = sorted({m for c in validation.get("cases", []) for m in c.get("modes", [])})
        ear = e.get("ear") or {}
        entry["ear"] = {k: ear.get(k) for k in ("coverage", "localization", "directional", "correct")}
    loop = run / "evaluation" / "loop.json"
    if loop.is_file():
        entry["stopped_because"] = json.loads(loop.read_text()).get("stopped_because")
    again = sorted(p for p in (run / "iterations").glob("*") if p.is_dir()) if (run / "iterations").is_dir() else []
    entry["timing_build_cached"] = [c.get("cached") for c in manifest.get("commands", [])
                                    if c["name"] == "build-timing"]
    if again:
        again_manifest = json.loads((again[0] / "manifest.json").read_text())
        entry["reprofile_stages"] = stage_times(again[0])
        entry["reprofile_steps"] = profile_steps(again_manifest)
        entry["timing_build_cached"] += [c.get("cached") for c in again_manifest.get("commands", [])
                                         if c["name"] == "build-timing"]
    return entry


def table(results: list[dict]) -> str:
    lines = ["| app | setup | profile (build / durations / targeted / counters) | analysis | proposal | "
             "evaluation (build / validate / time, pairs) | re-profile | one iteration |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        if r.get("exit") != 0:
            error = r.get("error", "")[-120:]
            lines.append(f"| {r['app']} | {r['setup']} | failed: {error!r} | | | | | {r['wall_s']} |")
            continue
        st, ps, ev = r["stages"], r["profile_steps"], r.get("evaluation_steps", {})
        prof = (f"{st.get('profile')} ({ps.get('build', 0)} / {ps.get('kernel durations', 0)} / "
                f"{ps.get('targeted', 0)} / {ps.get('counters', 0)})")
        evaluation = (f"{st.get('evaluation')} ({ev.get('build')} / {ev.get('validate')} / {ev.get('time')}, "
                      f"{r.get('timed_pairs')})")
        re_st = r.get("reprofile_stages") or {}
        again = sum(re_st.values()) if re_st else ""
        lines.append(f"| {r['app']} | {r['setup']} | {prof} | {st.get('analysis')} | {st.get('candidates')} | "
                     f"{evaluation} | {round(again, 1) if again != '' else ''} | {r['wall_s']} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--apps", default=",".join(APPS))
    ap.add_argument("--setups", default="tracer,ncu")
    ap.add_argument("--runs", type=Path, default=Path("/tmp/optimas-iteration-runs"))
    ap.add_argument("--out", type=Path, default=BENCH / "results")
    args = ap.parse_args()
    command = "python3 benchmarks/" + Path(sys.argv[0]).name + " " + " ".join(sys.argv[1:])
    args.out.mkdir(parents=True, exist_ok=True)
    results = []
    for app in filter(None, args.apps.split(",")):
        for setup in filter(None, args.setups.split(",")):
            t0 = time.monotonic()
            results.append(one(app, setup, args.runs / f"{setup}-{config_of(app).parent.name}"))
            print(json.dumps({k: results[-1].get(k) for k in ("app", "setup", "exit", "wall_s")}) +
                  f" ({time.monotonic() - t0:.0f} s)", flush=True)
            (args.out / "iteration-time.json").write_text(json.dumps({"command": command, "results": results},
                                                                     indent=1))
            (args.out / "iteration-time.md").write_text(f"`{command}`\n\n" + table(results))
    print(table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The loop end to end on benchmark apps, on a GPU: the closed loop with the offline backend, and
one iteration with the hand-written replayed answers (benchmarks/replay/) on the recorded H200
captures. Writes loop_experiments.json and .md with verdict, improvement and interval, EAR scores
and wall time per stage for each app.

Usage (on the device): python3 benchmarks/loop_experiments.py --offline stream,accuracy --replay seismic \\
    --out $OUT
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIX = REPO / "tests" / "fixtures"


def cli(*args: str, timeout: float = 900) -> tuple[int, str, str, float]:
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "runner.cli", *args], cwd=REPO, capture_output=True, text=True,
                       timeout=timeout)
    return r.returncode, r.stdout, r.stderr, time.monotonic() - t0


def stage_times(run: Path) -> dict[str, float]:
    m = json.loads((run / "manifest.json").read_text())
    times, prev = {}, m["created"]
    from datetime import datetime

    for name, st in m.get("stages", {}).items():
        end = st.get("finished") or st.get("failed")
        if end:
            times[name] = round((datetime.fromisoformat(end) - datetime.fromisoformat(prev)).total_seconds(), 1)
            prev = end
    return times


def evaluation_of(run: Path) -> dict:
    p = run / "evaluation" / "result.json"
    if not p.is_file():
        return {}
    e = json.loads(p.read_text())
    t = (e.get("timing") or {}).get("result") or {}
    ear = e.get("ear") or {}
    return {"verdict": e["verdict"], "improvement": t.get("improvement"), "ci_low": t.get("ci_low"),
            "ci_high": t.get("ci_high"), "baseline_cv": t.get("baseline_cv"), "seconds": e.get("seconds"),
            "ear": {k: ear.get(k) for k in ("coverage", "localization", "directional", "correct", "applied",
                                            "withheld")} | {"hallucinations": len(
                (ear.get("hallucinations") or {}).get("claims_without_change", [])) + len(
                (ear.get("hallucinations") or {}).get("edits_without_claim", []))}}


def offline_loop(app: str, runs: Path) -> dict:
    code, out, err, wall = cli("run", "--config", f"benchmarks/{app}/optimas.yml", "--runs-dir", str(runs))
    entry = {"app": app, "mode": "closed loop, offline backend", "exit": code, "wall_s": round(wall, 1)}
    if code != 0:
        entry["error"] = err[-1500:]
        return entry
    run = sorted(p for p in runs.iterdir() if p.is_dir())[-1]
    loop = json.loads((run / "evaluation" / "loop.json").read_text())
    entry.update(loop=loop, first=evaluation_of(run), stages=stage_times(run), run=str(run))
    return entry


def replay_inputs(app: str) -> tuple[str, Path]:
    """The config and the recorded capture of an app to replay: a benchmark app (`seismic`:
    tests/fixtures/seismic-h200) or any optimas.yml (its folder's name: benchmarks/replay/captures/)."""
    if app.endswith((".yml", ".yaml")):
        return app, REPO / "benchmarks" / "replay" / "captures" / f"{Path(app).parent.name}-h200"
    return f"benchmarks/{app}/optimas.yml", FIX / f"{app}-h200"


def replayed(app: str, runs_root: Path) -> dict:
    config, cap = replay_inputs(app)
    runs = runs_root / f"replay-{cap.name.removesuffix('-h200')}"
    timing = next(p for p in (cap / "timing_raw.csv", cap / "timing_trace.tsv") if p.exists())
    args = ["propose", "--backend", "replay", "--config", config, "--runs-dir", str(runs), "--timing", str(timing)]
    for rep in sorted(cap.glob("hot*.ncu-rep")):  # one targeted report per group of hot kernels
        args += ["--report", str(rep)]
    for rep in sorted((cap / "counters").glob("*.ncu-rep")):
        args += ["--counters", str(rep)]
    entry = {"app": cap.name.removesuffix("-h200"), "mode": "one iteration, replayed hand-written answer "
             "(benchmarks/replay)"}
    code, out, err, wall = cli(*args)
    made = sorted(p for p in runs.iterdir() if p.is_dir()) if runs.is_dir() else []
    if code != 0:  # the run keeps the prompt that was built: what a missing answer would have to answer
        return entry | {"exit": code, "error": err[-1500:]} | ({"run": str(made[-1])} if made else {})
    run = made[-1]
    code, out, err, wall2 = cli("evaluate", "--config", config, "--run", str(run))
    entry.update(exit=code, wall_s=round(wall + wall2, 1), first=evaluation_of(run), stages=stage_times(run),
                 run=str(run))
    if code != 0:
        entry["error"] = err[-1500:]
    return entry


def keep_small_files(run: Path, dest: Path, limit: int = 2_000_000) -> None:
    """Copy a run's small text artifacts (manifests, results, patches, prompts) for the record."""
    for f in run.rglob("*"):
        if "workspace" in f.relative_to(run).parts:
            continue  # the copies of the app's sources that candidates were built in
        if f.is_file() and f.suffix in {".json", ".jsonl", ".md", ".patch", ".txt", ".csv"} and \
                f.stat().st_size <= limit:
            target = dest / f.relative_to(run)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, target)


def write_tables(results: list[dict], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "loop_experiments.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    lines = ["| app | mode | verdict | improvement (95% CI) | EAR coverage / localization / directional / "
             "hallucinations / correct | stages (s) |", "|---|---|---|---|---|---|"]
    for r in results:
        f = r.get("first") or {}
        imp = "" if f.get("improvement") is None else (f"{f['improvement']:+.1%} ({f['ci_low']:+.1%} to "
                                                       f"{f['ci_high']:+.1%})")
        e = f.get("ear") or {}
        lines.append(f"| {r['app']} | {r['mode']} | {f.get('verdict', r.get('error', '')[:60])} | {imp} | "
                     f"{e.get('coverage')} / {e.get('localization')} / {e.get('directional')} / "
                     f"{e.get('hallucinations')} / {e.get('correct')} | {r.get('stages')} |")
    (out / "loop_experiments.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)


def record(results: list[dict], out: Path) -> None:
    """Write the tables and keep the latest run's artifacts after every app, so a cut-off run keeps its work."""
    write_tables(results, out)
    if results[-1].get("run"):
        run = Path(results[-1]["run"])
        mode = "offline" if results[-1]["mode"].startswith("closed") else "replay"
        keep_small_files(run, out / "runs" / f"{mode}-{results[-1]['app']}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--offline", default="", help="apps for the closed loop with the offline backend")
    ap.add_argument("--replay", default="", help="apps with replayed answers on their recorded captures")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    ap.add_argument("--runs", type=Path, default=Path("/tmp/optimas-loop-runs"))
    args = ap.parse_args()
    results = []
    for app in filter(None, args.offline.split(",")):
        results.append(offline_loop(app, args.runs / f"offline-{app}"))
        print(json.dumps({k: results[-1].get(k) for k in ("app", "exit", "wall_s")}), flush=True)
        record(results, args.out)
    for app in filter(None, args.replay.split(",")):
        results.append(replayed(app, args.runs))
        print(json.dumps({k: results[-1].get(k) for k in ("app", "exit", "wall_s")}), flush=True)
        record(results, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

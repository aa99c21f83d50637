"""Profiling cost on the multi-kernel application: Optimas's targeted collection (timing pass, hot
kernels only, counter sweep) against the naive way, `ncu --set full` on every launch of every kernel.
Both are timed in one run on the same GPU. Needs a GPU, nvcc and ncu.

Usage: python3 benchmarks/profiling_cost.py [--app seismic] [--configuration small] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from runner.profiles.readers import read_any

REPO = Path(__file__).resolve().parent.parent


def timed(argv: list[str], cwd: Path, timeout: float) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    r = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    return time.perf_counter() - t0, r


def naive_run(argv: list[str], cwd: Path, timeout: float) -> tuple[float, bool, int]:
    """Run the naive collection, counting profiled launches as ncu reports them; stop it at `timeout`.
    Returns (seconds, completed, launches profiled)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    launches = 0
    timer = threading.Timer(timeout, lambda: os.killpg(proc.pid, signal.SIGKILL))
    timer.start()
    try:
        for line in proc.stdout:
            if line.startswith("==PROF== Profiling"):
                launches += 1
                if launches % 25 == 0:
                    print(f"naive: {launches} launches in {time.perf_counter() - t0:.0f} s", flush=True)
        code = proc.wait()
    finally:
        timer.cancel()
    elapsed = time.perf_counter() - t0
    return elapsed, code == 0, launches


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--app", default="seismic")
    ap.add_argument("--configuration", default="small")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    ap.add_argument("--naive-timeout", type=float, default=420)
    args = ap.parse_args()
    cfg = REPO / "benchmarks" / args.app / "optimas.yml"
    work = Path(tempfile.mkdtemp(prefix="optimas-cost-"))
    runs = work / "runs"

    targeted_cmd = [sys.executable, "-m", "runner.cli", "profile", "--config", str(cfg), "--configuration",
                    args.configuration, "--runs-dir", str(runs)]
    t_targeted, r = timed(targeted_cmd, REPO, 900)
    if r.returncode != 0:
        print(r.stdout[-3000:], r.stderr[-3000:])
        return 1
    run_dir = Path(r.stdout.strip().splitlines()[-1])
    manifest = json.loads((run_dir / "manifest.json").read_text())
    ncu_seconds = sum(c["seconds"] for c in manifest.get("commands", []) if c["name"].startswith(
        ("timing", "targeted", "counters")))

    exe = run_dir / "profile" / "bin" / f"{args.app}-lineinfo"
    total_launches = len(read_any(run_dir / "profile" / "timing_raw.csv").launches)
    naive_cmd = ["ncu", "--clock-control", "none", "--set", "full", "--import-source", "yes", "-f", "-o",
                 str(work / "naive"), str(exe), "--config", args.configuration, "--seed", "1", "--no-check"]
    t_naive, naive_complete, launches = naive_run(naive_cmd, REPO / "benchmarks" / args.app, args.naive_timeout)
    # A stopped naive run still tells its pace: launches profiled so far over the time they took.
    projected = t_naive if naive_complete or not launches else t_naive * total_launches / launches

    result = {
        "app": args.app, "configuration": args.configuration,
        "gpu": manifest.get("device", {}),
        "targeted": {"command": shlex.join(targeted_cmd), "wall_seconds": round(t_targeted, 1),
                     "ncu_seconds": round(ncu_seconds, 1), "hot_kernels": manifest["stages"]["profile"]["hot_kernels"],
                     "steps": [{"name": c["name"], "seconds": c["seconds"]} for c in manifest.get("commands", [])]},
        "naive": {"command": shlex.join(naive_cmd), "wall_seconds": round(t_naive, 1), "complete": naive_complete,
                  "launches_profiled": launches, "launches_in_app": total_launches,
                  "projected_wall_seconds": round(projected, 1)},
        "ratio": round(t_naive / t_targeted, 1),
        "ratio_is_lower_bound": not naive_complete,
        "projected_ratio": round(projected / t_targeted, 1),
        "note": "targeted includes both builds, the timing pass, the targeted collection and "
                f"{sum(c['name'].startswith('counters') for c in manifest.get('commands', []))} counter runs; "
                "naive is one ncu --set full run of the already built binary"
                + ("" if naive_complete else f"; naive was stopped at {args.naive_timeout:g} s (a lower bound)"),
        "run_dir": str(run_dir),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "profiling_cost.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Build every benchmark application, check it on all its configurations and two seeds, check that
its outputs are deterministic, and time it: at least 10 runs per configuration, recording kernel
time (CUDA events, as the app reports it) and process wall time, with median and spread.

Needs a GPU with nvcc; uses only the standard library (it runs under the GPU machine's python3).
Usage: python3 benchmarks/run_baselines.py [--runs 10] [--apps stream,seismic] [--out DIR]
"""

from __future__ import annotations

import argparse
import filecmp
import json
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
APPS = ["stream", "accuracy", "sobol", "shmembench", "adjacent", "extrema", "xslookup", "seismic"]
RESULT = re.compile(r"RESULT .*kernel_ms=(?P<k>[\d.]+) wall_ms=(?P<w>[\d.]+) (?P<v>PASS|FAIL|UNCHECKED)")


def sh(argv: list[str], timeout: float = 600, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=cwd)


def first_line(argv: list[str], pattern: str = "") -> str:
    try:
        out = sh(argv, 60).stdout.strip().splitlines()
    except (OSError, subprocess.SubprocessError):
        return "unavailable"
    hits = [ln for ln in out if pattern in ln]
    return (hits or out or ["unavailable"])[-1].strip()


def spread(xs: list[float]) -> dict:
    q = statistics.quantiles(xs, n=4) if len(xs) >= 2 else [xs[0]] * 3
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "q1": q[0], "q3": q[2],
            "stdev": statistics.stdev(xs) if len(xs) > 1 else 0.0, "samples": xs}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--apps", default=",".join(APPS))
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--out", type=Path, default=BENCH / "results")
    args = ap.parse_args()
    env = {
        "gpu": first_line(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"]),
        "nvcc": first_line(["nvcc", "--version"], "release"),
        "ncu": first_line(["ncu", "--version"], "Version"),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": "python3 benchmarks/run_baselines.py " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
    }
    print(json.dumps(env), flush=True)
    results = {"environment": env, "apps": {}}
    work = Path(tempfile.mkdtemp(prefix="optimas-baselines-"))
    ok = True
    for app in [a for a in args.apps.split(",") if a]:
        src = BENCH / app
        exe = work / app
        build = ["nvcc", "-O3", "-std=c++17", f"-arch={args.arch}", "-Xcompiler", "-fopenmp", "-o", str(exe),
                 "main.cu"]
        t0 = time.monotonic()
        b = sh(build, cwd=src)
        entry: dict = {"build": {"command": shlex.join(build), "seconds": round(time.monotonic() - t0, 2),
                                 "ok": b.returncode == 0}}
        results["apps"][app] = entry
        if b.returncode != 0:
            entry["build"]["error"] = (b.stdout + b.stderr)[-2000:]
            print(f"{app}: BUILD FAILED\n{entry['build']['error']}", flush=True)
            ok = False
            continue
        configs = sh([str(exe), "--list"]).stdout.split()
        entry["configurations"] = {}
        for cfg in configs:
            c: dict = {"checks": []}
            entry["configurations"][cfg] = c
            outs = []
            for seed, tag in ((1, "a"), (1, "b"), (2, "c")):
                out = work / f"{app}-{cfg}-{tag}.out"
                argv = [str(exe), "--config", cfg, "--seed", str(seed), "--out", str(out)]
                r = sh(argv)
                m = RESULT.search(r.stdout)
                verdict = m.group("v") if m else f"NO RESULT (exit {r.returncode})"
                c["checks"].append({"command": shlex.join(argv), "verdict": verdict, "exit": r.returncode,
                                    "line": (m.group(0) if m else (r.stdout + r.stderr)[-500:])})
                outs.append(out)
                ok = ok and verdict == "PASS"
            c["deterministic"] = filecmp.cmp(outs[0], outs[1], shallow=False)
            c["output_bytes"] = outs[0].stat().st_size if outs[0].exists() else 0
            ok = ok and c["deterministic"]
            for o in outs:
                o.unlink(missing_ok=True)
            kernel, wall, proc = [], [], []
            timing = [str(exe), "--config", cfg, "--seed", "1", "--no-check"]
            sh(timing)  # warm-up
            for _ in range(args.runs):
                t0 = time.perf_counter()
                r = sh(timing)
                proc.append((time.perf_counter() - t0) * 1000)
                m = RESULT.search(r.stdout)
                if not m:
                    print(f"{app} {cfg}: no RESULT line: {r.stdout[-300:]} {r.stderr[-300:]}", flush=True)
                    ok = False
                    break
                kernel.append(float(m.group("k")))
                wall.append(float(m.group("w")))
            c["timing_command"] = shlex.join(timing)
            if kernel:
                c["kernel_ms"], c["device_wall_ms"], c["process_wall_ms"] = spread(kernel), spread(wall), spread(proc)
            print(f"{app:11s} {cfg:7s} checks={[x['verdict'] for x in c['checks']]} deterministic={c['deterministic']} "
                  f"kernel_ms={c.get('kernel_ms', {}).get('median', float('nan')):.4f} "
                  f"process_ms={c.get('process_wall_ms', {}).get('median', float('nan')):.1f}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "baselines.json").write_text(json.dumps(results, indent=2) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

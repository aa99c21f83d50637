"""The dashboard's runs page over a large runs folder (issue #17: 1,000 runs list in under 1 s).

Makes N run folders from the recorded H200 run (runner/data/demo/evaluated: evaluated, with its
evidence, prompt, answer and results), each under its own run id, then times the runs page and one
run page through a real HTTP server (`optimas dashboard`), several times.

Usage: python benchmarks/bench_dashboard.py [--runs 1000] [--repeat 5] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RUN = next(p for p in (REPO / "runner" / "data" / "demo" / "evaluated").iterdir() if p.is_dir())


def make_runs(dest: Path, n: int) -> list[str]:
    ids = []
    for i in range(n):
        run_id = f"20261203T{i // 3600 % 24:02d}{i // 60 % 60:02d}{i % 60:02d}Z-{uuid.UUID(int=i)}"
        shutil.copytree(RUN, dest / run_id)
        ids.append(run_id)
    return ids


def timed(url: str, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        with urllib.request.urlopen(url) as r:
            r.read()
        out.append(time.perf_counter() - t0)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="optimas-dash-") as tmp:
        runs = Path(tmp) / "runs"
        runs.mkdir()
        ids = make_runs(runs, args.runs)
        server = subprocess.Popen([sys.executable, "-m", "runner.cli", "dashboard", "--runs-dir", str(runs),
                                   "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                  cwd=REPO)
        try:
            url = re.search(r"(http://127\.0\.0\.1:\d+/)", server.stdout.readline()).group(1)
            listing = timed(url, args.repeat)
            filtered = timed(url + "?verdict=improvement&sort=improvement", args.repeat)
            page = timed(url + f"runs/{ids[len(ids) // 2]}", args.repeat)
        finally:
            server.terminate()
            server.wait(timeout=10)
    result = {"command": "python benchmarks/bench_dashboard.py " + " ".join(sys.argv[1:]),
              "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "machine": {"processor": platform.processor() or platform.machine(), "python": platform.python_version()},
              "runs": args.runs, "repeat": args.repeat,
              "runs_page_s": {"median": statistics.median(listing), "max": max(listing)},
              "filtered_sorted_runs_page_s": {"median": statistics.median(filtered), "max": max(filtered)},
              "run_page_s": {"median": statistics.median(page), "max": max(page)},
              "target_runs_page_s": 1.0, "pass": statistics.median(listing) <= 1.0}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "dashboard.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0 if result["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())

"""`optimas init` over a set of CUDA program folders: the build command it writes for each, what
the counter runs (eOMP) could vary (the run's size arguments, or the size constants init names),
and whether that command builds the program as the pipeline builds it (in a copy of
app.workspace, through the nvcc shim, for a given architecture), as a Markdown table. Needs nvcc (and make or
cmake where the programs use them); no GPU.

Usage: python benchmarks/init_survey.py FOLDER... [--arch sm_90] [--out FILE.md]
Each FOLDER gets an optimas.yml (replaced if there is one: run it on a copy of the programs).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

from runner.base.config import load_config  # noqa: E402 (after the path above)
from runner.build.cache import compile_candidate  # noqa: E402


def survey(folder: Path, arch: str) -> dict:
    """init, then the written build command, in one program folder."""
    r = subprocess.run([sys.executable, "-m", "runner.cli", "init", "--force", str(folder)], capture_output=True,
                       text=True, cwd=BENCH.parent)
    if r.returncode != 0:
        return {"program": folder.name, "build": "", "init": r.stderr.strip().splitlines()[-1], "builds": None}
    lc = load_config(folder / "optimas.yml")
    app = lc.config.app
    scaled = re.findall(r"\{(\w+)\*scale\}", app.profile_run or "")
    sizes = (f"arguments: {', '.join(scaled)}" if scaled else
             f"constants: {', '.join(app.size_constants)}" if app.size_constants else "none")
    t0 = time.monotonic()
    # the pipeline's own build: a copy of the workspace, the build environment, the nvcc shim
    built = compile_candidate(lc, {}, arch)
    last = built.output.strip().splitlines()[-1:] if not built.ok else []
    return {"program": folder.name, "build": app.build, "workspace": app.workspace or ".", "sizes": sizes,
            "init": "", "builds": built.ok, "seconds": round(time.monotonic() - t0, 1),
            "error": last[0] if last else ""}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--out", type=Path, default=None, help="write the table here too")
    args = ap.parse_args()
    rows = ["| program | build command written | workspace | sizes the counter runs vary | "
            "builds in the pipeline's copy |", "|---|---|---|---|---|"]
    for folder in args.folders:
        s = survey(folder.resolve(), args.arch)
        verdict = ("init refused: " + s["init"]) if s["builds"] is None else (
            "yes" if s["builds"] else f"no: {s['error']}".replace("|", "/"))
        build = s["build"].replace("|", "\\|")  # a cell's pipe ends the cell, even in code
        rows.append(f"| {s['program']} | `{build}` | {s.get('workspace', '')} | {s.get('sizes', '')} | "
                    f"{verdict} |")
        print(rows[-1], flush=True)
    if args.out:
        args.out.write_text("\n".join(rows) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

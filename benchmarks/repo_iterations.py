"""Whole iterations on programs of public repositories with the configs `optimas init` writes for
them, no hand edit (issue #44's GPU table): per entry, init in a scratch copy of the folder (every
program it finds, one config), then `optimas run --program NAME --backend offline` on this
machine's GPU (profile, analyze, propose, evaluate: one iteration of the closed loop, the only
key the script sets), and the row: programs found,
built, profiled, the C* and K* evidence in the prompt, the verdict, seconds.

Usage (on a GPU machine, from the repository root):
  python benchmarks/repo_iterations.py --out OUT.jsonl FOLDER[//SUB][:PROGRAM] ... [--timeout 300] [--logs DIR]
FOLDER is copied whole and init runs in its SUB folder (a program folder whose build reads its
neighbours, `include ../common.mk`), or in FOLDER itself. --logs keeps each run's whole output.
Each row is appended to OUT.jsonl as it ends, so a call cut short keeps what it finished.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from runner.base.config import load_config  # noqa: E402 (after the path above)


def _cli(*args: str, timeout: float, log: Path | None = None) -> subprocess.CompletedProcess:
    """The CLI's run; with `log`, its output (stdout and stderr together) streams to that file as it
    comes, so that a run cut at the limit still shows how far it got."""
    command = [sys.executable, "-m", "runner.cli", *args]
    if log is not None:
        with open(log, "w", encoding="utf-8") as f:
            try:
                code = subprocess.run(command, stdout=f, stderr=subprocess.STDOUT, cwd=REPO, timeout=timeout).returncode
            except subprocess.TimeoutExpired:
                code = 124
        return subprocess.CompletedProcess(command, code, log.read_text(errors="replace"),
                                           f"timed out after {timeout:g} s" if code == 124 else "")
    try:
        return subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        return subprocess.CompletedProcess(e.cmd, 124, out, f"timed out after {timeout:g} s")


def _evidence(run: Path) -> dict:
    """C* and K* evidence ids of the run's analysis, and the loop's verdict."""
    row: dict = {}
    diag = run / "analysis" / "diagnostics.json"
    if diag.exists():
        ids = [e["id"] for e in json.loads(diag.read_text())["evidence"]]
        row["C"] = sum(i.startswith("C") for i in ids)
        row["K"] = sum(i.startswith("K") for i in ids)
        row["evidence"] = len(ids)
    loop = run / "evaluation" / "loop.json"
    if loop.exists():
        data = json.loads(loop.read_text())
        row["verdict"] = data.get("stopped_because")
        row["iterations"] = [it.get("verdict") for it in data.get("iterations", [])]
    return row


def iterate(entry: str, timeout: float, logs: Path | None = None) -> dict:
    """init, then one closed loop, on one FOLDER[//SUB][:PROGRAM] entry."""
    where, _, program = entry.partition(":")
    folder, _, sub = where.partition("//")
    row: dict = {"entry": entry}
    with tempfile.TemporaryDirectory(prefix="optimas-iter-") as tmp:
        top = Path(tmp) / Path(folder).name
        shutil.copytree(REPO / folder, top, symlinks=True)
        copy = top / sub if sub else top
        t0 = time.monotonic()
        r = _cli("init", str(copy), "--force", timeout=300)
        row["init_s"] = round(time.monotonic() - t0, 1)
        if r.returncode != 0:
            return {**row, "init": (r.stderr.strip().splitlines() or ["?"])[-1]}
        # one iteration of the loop: the harness's choice of length, not an edit of what init wrote
        data = yaml.safe_load((copy / "optimas.yml").read_text())
        data.setdefault("evaluation", {})["max_iterations"] = 1
        (copy / "optimas.yml").write_text(yaml.safe_dump(data, sort_keys=False))
        lc = load_config(copy / "optimas.yml")
        names = lc.program_names() or [lc.config.app.name]
        row["found"] = len(names)
        program = program or names[0]
        chosen = lc.for_program(program if lc.program_names() else None)
        row.update(program=program, build=chosen.config.app.build, run=chosen.config.app.run,
                   size_constants=chosen.config.app.size_constants)
        runs = Path(tmp) / "runs"
        t0 = time.monotonic()
        args = ["run", "--config", str(copy / "optimas.yml"), "--backend", "offline", "--runs-dir", str(runs)]
        if lc.program_names():
            args += ["--program", program]
        log = None
        if logs is not None:
            logs.mkdir(parents=True, exist_ok=True)
            log = logs / ("".join(c if c.isalnum() else "_" for c in entry).strip("_") + ".log")
        r = _cli(*args, timeout=timeout, log=log)
        row.update(run_s=round(time.monotonic() - t0, 1), rc=r.returncode,
                   tail=(r.stdout + r.stderr).strip().splitlines()[-3:])
        made = sorted(p for p in runs.iterdir() if p.is_dir()) if runs.exists() else []
        if made:
            manifest = json.loads((made[-1] / "manifest.json").read_text())
            row["stages"] = {k: v.get("status") for k, v in manifest.get("stages", {}).items()}
            row.update(_evidence(made[-1]))
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("entries", nargs="+")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds for one program's run")
    ap.add_argument("--logs", type=Path, help="a folder for each run's whole output")
    args = ap.parse_args()
    for entry in args.entries:
        row = iterate(entry, args.timeout, args.logs)
        with open(args.out, "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
        print(json.dumps({k: row.get(k) for k in ("entry", "found", "rc", "C", "K", "verdict", "run_s")}),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

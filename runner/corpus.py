"""The optimization corpus: one record per evaluated candidate, with at least the paper's schema
(App, Prompt, LLM, HW, SW, Compile, Exec, Opt_Code, Applied, Ignored, Errors, Base_RT, Opt_RT)
plus diagnostic configuration, iteration, improvement and its interval, EAR scores, config hash
and run id. Records are appended to `<runs_dir>/corpus.jsonl`; `optimas corpus export` writes
JSONL or Parquet."""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from runner.errors import OptimasError

if TYPE_CHECKING:  # the stage modules import this one
    from runner.analysis.evidence import Diagnostics
    from runner.config import LoadedConfig
    from runner.propose import ProposeResult
    from runner.runstore import Run
    from runner.verdict import EvaluationResult


def make_record(lc: LoadedConfig, run: Run, diag: Diagnostics, proposed: ProposeResult, result: EvaluationResult,
                iteration: int) -> dict[str, Any]:
    p = proposed.proposal
    t = result.timing
    accepted = next((a for a in reversed(proposed.attempts) if a.outcome == "accepted"), None)
    tools = run.manifest.get("tools", {})
    ear = result.ear
    return {
        "App": lc.config.app.name,
        "Prompt": proposed.diagnostics,
        "LLM": f"{accepted.backend}:{accepted.model}" if accepted else None,
        "HW": (run.manifest.get("device") or {}).get("name") or diag.gpu.name,
        "SW": f"nvcc {tools.get('nvcc')}, ncu {tools.get('ncu')}, optimas {tools.get('optimas')}",
        "Compile": result.verdict != "build-failed",
        "Exec": bool(result.validation and result.validation.passed),
        "Opt_Code": proposed.diff,
        "Applied": p.applied if p else [],
        "Ignored": [f"{w.suggestion}: {w.reason}" for w in p.withheld] if p else [],
        "Errors": [f"attempt {a.number}: {a.outcome}: {a.detail[:500]}" for a in proposed.attempts
                   if a.outcome != "accepted"] + ([result.reason] if result.reason else []),
        "Base_RT": t.result.baseline_median if t else None,
        "Opt_RT": t.result.candidate_median if t else None,
        "RT_metric": t.metric if t else None,
        "diagnostics": proposed.diagnostics,
        "iteration": iteration,
        "verdict": result.verdict,
        "improvement": t.result.improvement if t else None,
        "ci_low": t.result.ci_low if t else None,
        "ci_high": t.result.ci_high if t else None,
        "p_value": t.result.p_value if t else None,
        "ear_coverage": ear.coverage if ear else None,
        "ear_localization": ear.localization if ear else None,
        "ear_directional": ear.directional if ear else None,
        "ear_hallucinations": ear.hallucinations.count if ear else None,
        "ear_correct": ear.correct if ear else None,
        "applied_count": ear.applied if ear else None,
        "withheld_count": ear.withheld if ear else None,
        "config_sha256": lc.sha256,
        "run_id": run.id,
    }


def append_record(path: Path, record: dict[str, Any]) -> None:
    """Append one JSON line; a single write of a whole line under the corpus lock, so concurrent
    runs neither interleave nor lose a line to a concurrent `update_record`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(record, default=str) + "\n").encode()
    with _locked(path):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)


def update_record(path: Path, run_id: str, iteration: int, fields: dict[str, Any]) -> None:
    """Set `fields` on the record of (run_id, iteration), rewriting the corpus atomically."""
    with _locked(path):
        lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
        found = False
        for n, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise OptimasError(f"{path}: line {n + 1} is not JSON ({e.msg}); the corpus was left as it was") \
                    from None
            if record.get("run_id") == run_id and record.get("iteration") == iteration:
                lines[n] = json.dumps(record | fields, default=str)
                found = True
        if not found:
            raise OptimasError(f"{path}: no record of run {run_id}, iteration {iteration} to update")
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
        os.replace(tmp, path)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock beside the corpus (the corpus itself is replaced on update)."""
    with open(path.with_name(f".{path.name}.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def load(path: Path) -> pd.DataFrame:
    if not path.is_file():
        raise OptimasError(f"no corpus at {path}: evaluate a candidate first (optimas run / optimas evaluate)")
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise OptimasError(f"{path}: line {n} is not JSON ({e.msg})") from None
    return pd.DataFrame(rows)


def export(path: Path, out: Path, fmt: str) -> int:
    """Write the corpus as JSONL or Parquet; returns the number of records."""
    df = load(path)
    tmp = out.with_name(f".{out.name}.tmp")
    if fmt == "jsonl":
        df.to_json(tmp, orient="records", lines=True)
    elif fmt == "parquet":
        flat = df.copy()
        for col in ("Applied", "Ignored", "Errors"):  # lists of text: kept as JSON strings in Parquet
            if col in flat:
                flat[col] = flat[col].map(json.dumps)
        flat.to_parquet(tmp, index=False)
    else:
        raise OptimasError(f"unknown export format {fmt!r}; expected jsonl or parquet")
    os.replace(tmp, out)
    return len(df)

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
from typing import Any

import pandas as pd

from runner.base.errors import OptimasError


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

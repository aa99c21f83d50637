"""Run directories: `runs/<UTC timestamp>-<uuid4>/`, one folder per stage, a manifest, atomic writes.

A run is never overwritten: its folder is created exclusively, and every file is written to a
temporary name in the same folder and renamed into place, so a reader sees either nothing or the
whole file.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import platform
import re
import shutil
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from runner import __version__
from runner.base.errors import OptimasError
from runner.base.processes import run_process
from runner.base.redaction import redact_command
from runner.base.workspace import RECORD_LIMIT, read_capped

STAGES = ("profile", "analysis", "prompt", "llm", "candidates", "evaluation")


def sha256_file(path: Path | str, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary file in the same folder and a rename (and to its
    copy in the records folder, where record_copies keeps one)."""
    _write_file(path, data)
    copy = record_copy(path)
    if copy is not None:
        _write_file(copy, data)


def _write_file(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def append_text(path: Path, text: str) -> None:
    """Append `text` to the record `path` (and to its copy, where record_copies keeps one)."""
    copy = record_copy(path)
    for target in (path,) if copy is None else (path, copy):
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "a", encoding="utf-8") as f:
            f.write(text)


# The App's GPU job: its run folders lie in the folder the sandboxed commands may write, so every
# record the worker writes there is written a second time into a folder they cannot reach, at the
# same path relative to it; what is kept of the runs is the records' copies (bot.keep.keep_runs).
_COPIES: tuple[str, Path] | None = None
_COPIES_LOCK = threading.Lock()


@contextlib.contextmanager
def record_copies(root: Path, folder: Path) -> Iterator[Path]:
    """Within this block, every record written under `root` (atomic_write_*, append_text, a Run's
    files and manifest) is copied to `folder` at the same relative path: the worker's own bytes,
    whatever the code under test does to the run folders afterwards. Paths are compared as
    written, never resolved (a link the code put in a run folder does not move a copy)."""
    global _COPIES
    folder.mkdir(parents=True, exist_ok=True)
    with _COPIES_LOCK:
        previous, _COPIES = _COPIES, (os.path.abspath(root), folder)
    try:
        yield folder
    finally:
        with _COPIES_LOCK:
            _COPIES = previous


def record_copy(path: Path) -> Path | None:
    """Where the copy of the record `path` goes (record_copies), or None: no copies are kept, or
    `path` is not under their root."""
    with _COPIES_LOCK:
        copies = _COPIES
    if copies is None:
        return None
    root, folder = copies
    rel = os.path.relpath(os.path.abspath(path), root)
    if rel == os.curdir or rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return None
    return folder / rel


def read_record(path: Path, limit: int, what: str) -> bytes:
    """A record the worker wrote (its copy, where record_copies keeps one: the run folder's file
    may have been rewritten by the code since), up to `limit` bytes."""
    copy = record_copy(path)
    return read_capped(copy if copy is not None and copy.is_file() else path, limit, what)


def _tool_version(cmd: list[str], pattern: str) -> str | None:
    exe = shutil.which(cmd[0])
    if not exe:
        return None
    try:
        r = run_process([exe, *cmd[1:]], timeout_s=20, merge_stderr=False, what=f"{cmd[0]} version probe")
    except (OptimasError, OSError):
        return None
    out = "" if r.timed_out else r.output
    m = re.search(pattern, out)
    return m.group(1) if m else out.strip().splitlines()[-1] if out.strip() else None


def tool_versions() -> dict[str, str | None]:
    """Versions of the tools a run depends on (None where a tool is absent)."""
    try:
        ncu_report = version("ncu-report")
    except PackageNotFoundError:
        ncu_report = None
    return {
        "optimas": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "nvcc": _tool_version(["nvcc", "--version"], r"release [\d.]+, V([\d.]+)"),
        "ncu": _tool_version(["ncu", "--version"], r"Version ([\d.]+)"),
        "ncu_report": ncu_report,
    }


class Run:
    """One run directory and its manifest."""

    def __init__(self, path: Path, manifest: dict[str, Any]):
        self.path = path
        self.manifest = manifest

    @property
    def id(self) -> str:
        return self.manifest["run_id"]

    @property
    def build_cache(self) -> Path:
        """Where this run's builds are kept, one per distinct source tree: its own folder, or the
        top-level run's for the runs of a closed loop's iterations."""
        return Path(self.manifest.get("build_cache") or self.path / "build-cache")

    def stage_dir(self, stage: str) -> Path:
        if stage not in STAGES:
            raise ValueError(f"unknown stage {stage!r}; stages are {', '.join(STAGES)}")
        d = self.path / stage
        d.mkdir(exist_ok=True)
        return d

    def write_text(self, stage: str, name: str, text: str) -> Path:
        p = self.stage_dir(stage) / name
        atomic_write_text(p, text)
        return p

    def write_json(self, stage: str, name: str, obj: Any) -> Path:
        return self.write_text(stage, name, json.dumps(obj, indent=2, sort_keys=False) + "\n")

    def add_inputs(self, paths: list[Path | str], role: str) -> None:
        """Record the SHA-256 and size of input files."""
        for p in paths:
            p = Path(p)
            self.manifest["inputs"].append({"role": role, "path": str(p.resolve()), "bytes": p.stat().st_size,
                                            "sha256": sha256_file(p)})
        self.save()

    def stage_done(self, stage: str, outputs: list[Path], **info: Any) -> None:
        self.manifest["stages"][stage] = {
            "finished": _now().isoformat(),
            "outputs": [str(p.relative_to(self.path)) for p in outputs],
            **info,
        }
        self.save()

    def stage_failed(self, stage: str, error: str) -> None:
        """Record that a stage stopped with an error; its partial files stay for inspection."""
        self.manifest["stages"][stage] = {"failed": _now().isoformat(), "error": error}
        self.save()

    def save(self) -> None:
        atomic_write_text(self.path / "manifest.json", json.dumps(self.manifest, indent=2) + "\n")


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


# A run's id, as create_run names its folder: creation time, then a UUID.
RUN_ID = re.compile(r"\d{8}T\d{6}Z-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


# The run folders this process made, in order: what a caller keeps of a folder that other
# processes could write too (the App's worker, whose jobs run a repository's commands) is these.
_CREATED: list[Path] = []
_CREATED_LOCK = threading.Lock()


def runs_created() -> list[Path]:
    """The run folders this process has made so far (create_run), oldest first."""
    with _CREATED_LOCK:
        return list(_CREATED)


def create_run(runs_dir: Path, command: list[str] | None = None) -> Run:
    """Create a new, empty run directory with its manifest."""
    runs_dir.mkdir(parents=True, exist_ok=True)
    created = _now()
    run_id = f"{created.strftime('%Y%m%dT%H%M%S')}Z-{uuid.uuid4()}"
    path = runs_dir / run_id
    path.mkdir()  # exclusive: an existing run is never reused
    with _CREATED_LOCK:
        _CREATED.append(path)
    run = Run(path, {
        "run_id": run_id,
        "created": created.isoformat(),
        # redacted: a worker's command line holds its Redis URL (--url redis://:password@host)
        "command": redact_command(command if command is not None else sys.argv),
        "tools": tool_versions(),
        "inputs": [],
        "stages": {},
    })
    run.save()
    return run


def open_run(path: Path) -> Run:
    """An existing run directory, to add stages to."""
    manifest = path / "manifest.json"
    try:
        # (the code under test runs with the run folders in reach: read up to a size)
        data = json.loads(read_record(manifest, RECORD_LIMIT, "a run's manifest").decode("utf-8"))
    except FileNotFoundError:
        raise OptimasError(f"{path}: not a run directory (no manifest.json)") from None
    return Run(path, data)

"""What a GPU job keeps of its runs on the worker's runs volume (OPTIMAS_RUNS_DIR): the run folders
this process made, as the worker wrote their records, within a budget per file and per job, and
the corpus records it added. The code under test could write in those folders: nothing of it is
followed, run again or trusted as a record."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

from runner.base.runstore import RUN_ID

log = logging.getLogger(__name__)


def runs_folder() -> Path:
    """Where GPU jobs keep their run folders on the worker host (OPTIMAS_RUNS_DIR)."""
    return Path(os.environ.get("OPTIMAS_RUNS_DIR") or Path.home() / ".optimas" / "runs")


# What a job keeps on the worker's runs volume: the code under test writes in its run folders and
# could fill the volume (and the dashboard, which reads them).
KEEP_FILE_BYTES = 64 << 20
KEEP_JOB_BYTES = 1 << 30
ENTRY_BYTES = 4096  # what each kept file or folder costs besides its bytes (a block and an inode):
# empty files cost the volume too, and a job kept millions of them within its bytes (an attacker's pass)


def keep_runs(source: Path, runs: Path, made: list[Path], corpus: Path | None = None,
              records: Path | None = None) -> None:
    """Copy the job's run folders into the worker's runs folder and add the job's corpus records
    (`corpus`, written where the code cannot write; default corpus.jsonl in `source`) to its corpus.
    The job's code could write in `source`: only the run folders this process made (`made`, from
    runstore.runs_created) are kept, named as runs, with a manifest, that the runs folder does not
    hold yet; only regular files and folders are copied (links dropped; setuid, setgid, execute and
    write-for-others bits off: nothing kept is run again; a file over KEEP_FILE_BYTES is left out,
    and once KEEP_JOB_BYTES are kept, each file and folder counted ENTRY_BYTES more than its size,
    the job's other runs are not); only JSON objects are added to the corpus. With `records` (the
    copies runstore.record_copies kept where the code cannot write), every record is the worker's
    copy and the manifest must be there; of the run folder, only the commands' other outputs are
    kept (no file named as a record: RECORD_SUFFIXES). What cannot be kept is logged: the job's
    outcome stands."""
    ours = {p.name for p in made if p.parent == source}
    budget = KEEP_JOB_BYTES
    try:
        runs.mkdir(parents=True, exist_ok=True, mode=0o750)
        named = {e.name for e in source.iterdir()} if source.is_dir() and not source.is_symlink() else set()
        for name in sorted(n for n in named - ours if RUN_ID.fullmatch(n)):
            log.warning("%s: a folder named as a run that this job did not make; not kept", name)
        for name in sorted(ours):
            budget = _keep_run(source / name, runs / name, None if records is None else records / name, budget)
        _add_corpus(corpus or source / "corpus.jsonl", runs / "corpus.jsonl")
    except OSError as e:
        log.warning("the job's run folders could not all be kept in %s: %s", runs, e)


# A file in a kept run folder with one of these endings is a record (the dashboard reads them): it
# is kept only as the worker wrote it (its copy), never as a command left it in the run folder.
RECORD_SUFFIXES = (".json", ".jsonl", ".md", ".txt", ".patch", ".yml", ".yaml", ".svg", ".html")


def _keep_run(entry: Path, dest: Path, copies: Path | None, budget: int) -> int:
    """Keep one run folder (keep_runs) as `dest`; returns what the job may still keep."""
    outputs = entry if entry.is_dir() and not entry.is_symlink() else None
    manifest = (copies or entry) / "manifest.json"
    if not manifest.is_file() or manifest.is_symlink() or dest.exists():
        return budget
    size = _kept_size(outputs, budget) if outputs is not None else 0
    if size is not None and copies is not None:
        more = _kept_size(copies, budget - size)
        size = None if more is None else size + more
    if size is None:
        log.warning("%s: more than the %d bytes this job may still keep (counting %d per file and folder); "
                    "not kept", entry.name, budget, ENTRY_BYTES)
        return budget
    if outputs is not None:
        ignore = _not_regular if copies is None else _outputs_only(outputs, copies)
        shutil.copytree(outputs, dest, symlinks=True, ignore=ignore, copy_function=_copy_plain)
    if copies is not None:
        shutil.copytree(copies, dest, dirs_exist_ok=True, copy_function=_copy_plain)
    return budget - size


def _outputs_only(outputs: Path, copies: Path) -> Callable[[str, list[str]], set[str]]:
    """copytree's ignore for a run folder whose records are kept from `copies`: _not_regular's, and
    every entry where a record of the worker goes, or named as a record (RECORD_SUFFIXES) that the
    worker did not write."""
    def ignore(folder: str, names: list[str]) -> set[str]:
        out = _not_regular(folder, names)
        mirror = copies / os.path.relpath(folder, outputs)
        for name in set(names) - out:
            is_dir = stat.S_ISDIR(os.lstat(os.path.join(folder, name)).st_mode)
            counterpart = mirror / name
            if (os.path.lexists(counterpart) and not (is_dir and counterpart.is_dir())) or (
                    not is_dir and name.lower().endswith(RECORD_SUFFIXES)):
                out.add(name)
        return out

    return ignore


def _not_regular(folder: str, names: list[str]) -> set[str]:
    """copytree's ignore: links, anything that is neither a regular file nor a folder, and files
    over KEEP_FILE_BYTES."""
    out = set()
    for name in names:
        info = os.lstat(os.path.join(folder, name))
        regular = stat.S_ISREG(info.st_mode)
        if not (regular or stat.S_ISDIR(info.st_mode)) or (regular and info.st_size > KEEP_FILE_BYTES):
            out.add(name)
    return out


def _kept_size(folder: Path, budget: int) -> int | None:
    """What keeping a run folder costs: the bytes copytree would keep (_not_regular's files left
    out, links not followed) and ENTRY_BYTES per file and folder; None, as soon as it is seen to be
    over `budget` (the walk stops there)."""
    total = 0
    for top, dirs, files in os.walk(folder):
        total += ENTRY_BYTES * (len(dirs) + len(files))
        for name in files:
            info = os.lstat(os.path.join(top, name))
            if stat.S_ISREG(info.st_mode) and info.st_size <= KEEP_FILE_BYTES:
                total += info.st_size
        if total > budget:
            return None
    return total


def _copy_plain(src: str, dst: str) -> None:
    """A regular file's bytes, with its permission bits less setuid, setgid, execute and write for others."""
    fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as f, open(dst, "xb") as out:
        shutil.copyfileobj(f, out)
        mode = stat.S_IMODE(os.fstat(f.fileno()).st_mode)
    os.chmod(dst, mode & ~(stat.S_ISUID | stat.S_ISGID | stat.S_IWOTH | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH))


def _add_corpus(source: Path, corpus: Path) -> None:
    if not source.is_file() or source.is_symlink():
        return
    records = []
    for line in source.read_text(encoding="utf-8", errors="replace").splitlines():
        with contextlib.suppress(ValueError):
            if isinstance(json.loads(line), dict):
                records.append(line)
    if not records:
        return
    if corpus.exists() and (corpus.is_symlink() or not corpus.is_file()):
        log.warning("%s is not a regular file: the job's %d corpus record(s) were not added", corpus, len(records))
        return
    with open(corpus, "a", encoding="utf-8") as f:
        f.write("".join(r + "\n" for r in records))

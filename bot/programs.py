"""A pull request of a repository that lists several programs: which of them it runs (those whose
files it changes, runner.flows.scope), each run with one failing not stopping the others, and its
hot kernels defined in the changed files shown first. Their combined outcome is
bot.outcome.ProgramsOutcome."""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Callable
from pathlib import Path

from bot.outcome import ProgramOutcome
from runner.base.config import LoadedConfig
from runner.base.errors import OptimasError
from runner.base.gpu import target_arch
from runner.base.redaction import describe
from runner.flows.scope import CODE_SUFFIXES, select_programs
from runner.scan.cuda_source import functions, kernel_base_name

log = logging.getLogger(__name__)


def changed_first(hot: list[str], changed_texts: list[str]) -> tuple[list[str], list[str]]:
    """The hot kernels with those defined in the pull request's changed files first, and those
    kernels: the ones the pull request is about are shown first, the rest in their rank."""
    defined = {kernel_base_name(f.name) for text in changed_texts for f in functions(text) if f.is_kernel}
    mine = [k for k in hot if kernel_base_name(k) in defined]
    return mine + [k for k in hot if k not in mine], mine


MAX_CHANGED_TEXT = 1 << 20  # bytes of the changed files read in all: each is parsed for its kernels


def changed_texts(root: Path, touched: list[str]) -> list[str]:
    """The text of each changed code file the program's build reads, as the pull request's head holds
    it: regular files inside the checkout `root` only (never through a link, never a FIFO or a device),
    MAX_CHANGED_TEXT bytes of them in all (the program's run may have left a sparse file of the disk
    limit's size in place of one; the worker reads it unsandboxed)."""
    out, left = [], MAX_CHANGED_TEXT
    base = root.resolve()
    for path in touched:
        if left <= 0:
            break
        f = root / path
        if not path.endswith(CODE_SUFFIXES) or os.path.isabs(path) or base not in f.resolve().parents:
            continue
        data = _head(f, left)
        if data is not None:
            left -= len(data)
            out.append(data.decode("utf-8", errors="replace"))
    return out


def _head(f: Path, size: int) -> bytes | None:
    """At most `size` bytes of the regular file `f`, opened without following a link (None: not one)."""
    try:
        fd = os.open(f, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks = []
        while size > 0 and (chunk := os.read(fd, min(size, 1 << 16))):
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def programs_to_run(lc: LoadedConfig, changed: list[str] | None, root: Path,
                     newest_first: Callable[[], list[str]] | None
                     ) -> tuple[list[LoadedConfig], list[tuple[str, str]], dict[str, list[str]]]:
    """The programs to run for a pull request, those not run with why, and each run program's
    changed files. Without `changed` (GitHub did not list them all), the first programs listed."""
    every = lc.each_program()
    limit = lc.config.programs_per_pull_request
    if changed is None:
        skipped = [(p.config.app.name, "GitHub did not list every file of the pull request, so the first "
                    f"{limit} programs listed ran") for p in every[limit:]]
        return every[:limit], skipped, {}
    chosen = select_programs(every, changed, target_arch(lc.config.profiling.nvidia_smi), root, limit, newest_first)
    return ([p for p, _ in chosen.run], chosen.skipped,
            {p.config.app.name: scope.touched for p, scope in chosen.run})


class AllProgramsFailed(OptimasError):
    """Every program of a pull request's run failed: each one's error, named with its program (the
    job's failure says all of them, not only the first); as transient as all of them are."""

    def __init__(self, failures: list[tuple[str, OptimasError]]):
        super().__init__("every program failed: " + "; ".join(f"{name}: {describe(e)}" for name, e in failures))
        self.failures = failures
        self.exit_code = failures[0][1].exit_code
        self.transient = all(getattr(e, "transient", False) for _, e in failures)


def run_each(programs: list[LoadedConfig], run_one: Callable[[LoadedConfig], ProgramOutcome],
             after_failure: Callable[[], None]) -> list[tuple[str, ProgramOutcome]]:
    """Each program's outcome from `run_one`. With several, one that fails does not stop the others
    (`after_failure` runs then, and may raise: a sandbox limit hit ends the job); when every one
    fails, AllProgramsFailed names each failure."""
    outcomes, errors = [], []
    for lc in programs:
        name = lc.config.app.name
        try:
            outcomes.append((name, run_one(lc)))
        except OptimasError as e:
            if len(programs) == 1:
                raise
            after_failure()
            log.warning("program %s failed: %s", name, describe(e))
            errors.append((name, e))
            outcomes.append((name, ProgramOutcome.failed(name, e)))
    if errors and len(errors) == len(programs):
        raise AllProgramsFailed(errors)
    return outcomes

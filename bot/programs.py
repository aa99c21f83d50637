"""A pull request of a repository that lists several programs: which of them it runs (those whose
files it changes, runner.flows.scope), one outcome per program run, and the one outcome published
for all of them: their proven edits together, each program's result and the programs skipped with
why."""

from __future__ import annotations

import logging
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bot.publish import code_span
from runner.base.config import LoadedConfig
from runner.base.cuda_source import functions, kernel_base_name
from runner.base.errors import OptimasError
from runner.base.gpu import target_arch
from runner.base.redaction import describe
from runner.flows.scope import CODE_SUFFIXES, select_programs

log = logging.getLogger(__name__)


def failed_outcome(name: str, error: OptimasError) -> dict[str, Any]:
    """The outcome of one program whose run stopped, among several that ran."""
    return {"verdict": "failed", "postable": False, "edits": [], "run": None,
            "headline": f"{name} could not be run", "details": describe(error)}


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
    chosen = select_programs(every, changed, target_arch(lc), root, limit, newest_first)
    return ([p for p, _ in chosen.run], chosen.skipped,
            {p.config.app.name: scope.touched for p, scope in chosen.run})


def _overlaps(e: dict[str, Any], kept: list[dict[str, Any]]) -> bool:
    return any(k["file"] == e["file"] and k["start_line"] <= e["end_line"] and e["start_line"] <= k["end_line"]
               for k in kept)


def programs_outcome(outcomes: list[tuple[str, dict[str, Any]]], skipped: list[tuple[str, str]]) -> dict[str, Any]:
    """One outcome for the programs run: every proven edit (an edit of a file two programs share is
    kept once, the first program's, when another's overlaps it), each program's own outcome, and
    the programs skipped with why."""
    edits: list[dict[str, Any]] = []
    dropped = []
    for name, o in outcomes:
        for e in o["edits"] if o["postable"] else []:
            if _overlaps(e, edits):
                dropped.append(f"{code_span(name)}: {code_span(e['file'])} lines {e['start_line']}-{e['end_line']}")
                continue
            edits.append(e)
    proven = [name for name, o in outcomes if o["postable"]]
    names = ", ".join(f"`{name}`" for name, _ in outcomes)
    headline = (f"Optimas on {len(outcomes)} programs ({names}): proven faster: "
                f"{', '.join(f'`{n}`' for n in proven) if proven else 'none'}")
    verdict = "improvement" if proven else "; ".join(f"{name}: {o['verdict']}" for name, o in outcomes)
    return {"verdict": verdict, "postable": bool(edits), "edits": edits,
            "run": next((o["run"] for _, o in outcomes if o.get("run")), None), "headline": headline,
            "programs": outcomes, "skipped": skipped, "overlapping": dropped}


def not_run_outcome(program_names: list[str], skipped: list[tuple[str, str]]) -> dict[str, Any]:
    """The outcome of a pull request that changes none of the listed programs' files."""
    shown = ", ".join(f"`{n}`" for n in program_names[:8]) + (", ..." if len(program_names) > 8 else "")
    return {"verdict": "not run", "postable": False, "edits": [], "run": None,
            "headline": f"Nothing to optimize: this pull request changes none of the files of the "
                        f"{len(program_names)} programs ({shown})",
            "details": "\n".join(f"{name}: {why}" for name, why in skipped)
                       + "\nNothing was profiled; label again after a change to a program's code.",
            "skipped": skipped}


def run_each(programs: list[LoadedConfig], run_one: Callable[[LoadedConfig], dict[str, Any]],
             after_failure: Callable[[], None]) -> list[tuple[str, dict[str, Any]]]:
    """Each program's outcome from `run_one`. With several, one that fails does not stop the others
    (`after_failure` runs then, and may raise: a sandbox limit hit ends the job); when every one
    fails, the first failure is raised."""
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
            errors.append(e)
            outcomes.append((name, failed_outcome(name, e)))
    if errors and len(errors) == len(programs):
        raise errors[0]
    return outcomes


def program_lines(outcome: dict[str, Any], lines_of: Callable[[dict[str, Any]], list[str]]) -> list[str]:
    """The summary's part for several programs: those run, each with its own lines (`lines_of`),
    and those skipped with why."""
    out = []
    for name, o in outcome["programs"]:
        reads = ", ".join(code_span(c) for c in o.get("changed", [])[:10])  # the pull request's file names
        out += ["", f"#### `{name}`: {o['headline']}", "",
                *([f"Run because the pull request changes what it reads: {reads}"] if reads else []), *lines_of(o)]
    if outcome.get("overlapping"):
        out += ["", "Edits of a shared file that overlap another program's (not posted): "
                + "; ".join(outcome["overlapping"])]
    if outcome.get("skipped"):
        out += ["", "Programs not run:", *(f"- `{name}`: {_words(why)}" for name, why in outcome["skipped"])]
    return out


def _words(why: str) -> str:
    """A why as plain words where it is only words, else as code: it may name a folder of the config,
    which in the Action is the pull request's (a mention, a link or an image in its name)."""
    return why if re.fullmatch(r"[\w .,'()/+=-]*", why) and "www." not in why.lower() else code_span(why)

"""What a pull request touches of the program a config builds: the files the build compiles or
includes (one build in a copy of the workspace, its nvcc calls recorded by the shim and each
source's dependencies asked of nvcc -MM), the build's own files, the config, and anything else in
the workspace that is not code and not documentation (data the program may read). A pull request
that changes none of them (its documentation, another program's sources, files outside the
workspace) changes nothing this program runs: no GPU time needs spending on it.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from runner.base.config import LoadedConfig
from runner.base.sandbox import scratch
from runner.toolchain.builder import copy_workspace
from runner.toolchain.compiler import BuildOptions, build

log = logging.getLogger(__name__)

CODE_SUFFIXES = (".cu", ".cuh", ".h", ".hh", ".hpp", ".hxx", ".inl", ".inc", ".c", ".cc", ".cpp", ".cxx", ".ipp",
                 ".tcc")
# Documentation and repository metadata: never read by a build or a run.
_DOCS = re.compile(r"(?i)(?:^|/)(?:docs?|\.github)/|\.(?:md|markdown|rst|adoc)$|"
                   r"(?:^|/)(?:LICEN[CS]E|COPYING|AUTHORS|CHANGELOG|CONTRIBUTING|CODEOWNERS)[^/]*$")


@dataclass
class Scope:
    """Which of a pull request's changed files the program's build or run may read."""

    touched: list[str] = field(default_factory=list)  # changed files that count, repository paths
    compiled: int | None = None  # files the build compiled or included (None: not told, so all count)
    why: str = ""  # in words, for the summary


def program_files(lc: LoadedConfig, arch: str) -> list[str] | None:
    """The workspace files the program's build compiles or includes, relative to app.workspace's
    folder (None when the build failed or its dependencies could not be told)."""
    with scratch("optimas-scope-") as tmp:
        cwd = copy_workspace(lc, Path(tmp) / "ws", {})
        result = build(lc, cwd, arch, exe=Path(tmp) / "app.bin", options=BuildOptions(verbose=False, dependencies=True))
    return result.files if result.ok else None


def _inside(path: str, folder: str) -> bool:
    return folder in ("", ".") or path == folder or path.startswith(folder.rstrip("/") + "/")


def _own_parts(lc: LoadedConfig, root: Path) -> list[str]:
    """The folders (repository paths) whose files other than code and documentation the program
    may read: its workdir, app.workspace_paths and, as files directly in it, the workspace's top
    (a shared Makefile, CMakeLists.txt, data). Another program's folder is not among them."""
    space, workdir = lc.dirs
    parts = [workdir, *(space / p for p in lc.config.app.workspace_paths)]
    return [os.path.relpath(p.resolve(), root) for p in parts]


def _may_read(lc: LoadedConfig, path: str, root: Path) -> bool:
    """Whether a changed file other than code could be one the program reads (its build files, its
    data): documentation never is; otherwise it lies in one of its own folders or at the workspace's top."""
    if _DOCS.search(path) or path.endswith(CODE_SUFFIXES):
        return False
    top = os.path.relpath(lc.dirs[0], root)
    return any(_inside(path, part) for part in _own_parts(lc, root)) or os.path.dirname(path) == (
        "" if top == "." else top)


def pull_request_scope(lc: LoadedConfig, changed: list[str], arch: str, root: Path) -> Scope:
    """What of `changed` (paths relative to the repository's `root`) the program of `lc` may read:
    the config itself, the files its build compiles or includes, and, in its own folders, anything
    but other code and documentation. A build whose files cannot be told counts every change but
    documentation; changes that could be none of the program's files (documentation, files outside
    its workspace) are told without a build."""
    space, _ = lc.dirs
    folder = os.path.relpath(space, root)
    config = os.path.relpath(lc.path, root)
    name = lc.config.app.name
    if not any(c == config or (_inside(c, folder) and not _DOCS.search(c)) for c in changed):
        return Scope(compiled=None, why=f"none of the {len(changed)} changed files is in {name}'s workspace "
                     f"({folder}) other than documentation, or is the config")
    direct = [c for c in changed if c == config or _may_read(lc, c, root)]
    if direct:  # its config, build files or data changed: it runs whatever code changed, no build needed
        own = [c for c in changed if c not in direct and c.endswith(CODE_SUFFIXES)
               and any(_inside(c, part) for part in _own_parts(lc, root))]
        return Scope(touched=direct + own, why=f"{len(direct)} of the {len(changed)} changed files are {name}'s "
                     "config, build files or data (told without a build)")
    files = program_files(lc, arch)
    if files is None:
        return Scope(touched=[c for c in changed if not _DOCS.search(c)],
                     why=f"{name}'s build files could not be told, so every change but documentation counts")
    built = {os.path.normpath(os.path.join(folder, f)) for f in files}
    touched = [c for c in changed if c == config or c in built or _may_read(lc, c, root)]
    why = (f"{len(touched)} of the {len(changed)} changed files are {name}'s" if touched else
           f"none of the {len(changed)} changed files is one {name}'s build compiles or includes "
           f"({len(built)} file{'' if len(built) == 1 else 's'}), its build files, its data or the config")
    return Scope(touched=touched, compiled=len(built), why=why)


@dataclass
class Selection:
    """The programs a pull request runs, and those it does not, each with why."""

    run: list[tuple[LoadedConfig, Scope]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (program, why)


def select_programs(programs: list[LoadedConfig], changed: list[str], arch: str, root: Path, limit: int,
                    newest_first: Callable[[], list[str]] | None = None) -> Selection:
    """The programs whose files `changed` touches, at most `limit` of them: where more are touched,
    those holding the most recently changed files first (`newest_first()`: the changed paths, newest
    first; asked only then), else in the config's order."""
    touched, out = [], Selection()
    for lc in programs:
        scope = pull_request_scope(lc, changed, arch, root)
        log.info("scope of %s: %s", lc.config.app.name, scope.why)
        if scope.touched:
            touched.append((lc, scope))
        else:
            out.skipped.append((lc.config.app.name, scope.why))
    if len(touched) > limit and newest_first is not None:
        order = {p: i for i, p in enumerate(newest_first())}
        touched.sort(key=lambda ls: min((order.get(c, len(order)) for c in ls[1].touched), default=len(order)))
    out.run = touched[:limit]
    out.skipped += [(lc.config.app.name, f"its files changed too, but only {limit} program"
                     f"{'' if limit == 1 else 's'} run per pull request (programs_per_pull_request)")
                    for lc, _ in touched[limit:]]
    return out

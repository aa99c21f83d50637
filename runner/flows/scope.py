"""What a pull request touches of the program a config builds: the files the build compiles or
includes (one build in a copy of the workspace, its nvcc calls recorded by the shim and each
source's dependencies asked of nvcc -MM), the build's own files, the config, and anything else in
the workspace that is not code and not documentation (data the program may read). A pull request
that changes none of them (its documentation, another program's sources, files outside the
workspace) changes nothing this program runs: no GPU time needs spending on it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from runner.base.config import LoadedConfig
from runner.base.sandbox import scratch
from runner.base.workspace import workspace_dirs
from runner.build.cache import copy_workspace
from runner.build.compiler import build

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
        result = build(lc, cwd, arch, exe=Path(tmp) / "app.bin", verbose=False, dependencies=True)
    return result.files if result.ok else None


def _inside(path: str, folder: str) -> bool:
    return folder in ("", ".") or path == folder or path.startswith(folder.rstrip("/") + "/")


def pull_request_scope(lc: LoadedConfig, changed: list[str], arch: str, root: Path) -> Scope:
    """What of `changed` (paths relative to the repository's `root`) the program of `lc` may read:
    the config itself, the files its build compiles or includes, and, in the workspace, anything
    but other code and documentation. A build whose files cannot be told counts every change."""
    space, _ = workspace_dirs(lc)
    folder = os.path.relpath(space, root)
    config = os.path.relpath(lc.path, root)
    files = program_files(lc, arch)
    if files is None:
        return Scope(touched=list(changed), why="the build's files could not be told, so every change counts")
    built = {os.path.normpath(os.path.join(folder, f)) for f in files}
    touched = [c for c in changed
               if c == config or c in built
               or (_inside(c, folder) and not c.endswith(CODE_SUFFIXES) and not _DOCS.search(c))]
    why = (f"{len(touched)} of the {len(changed)} changed files are the program's" if touched else
           f"none of the {len(changed)} changed files is one the program's build compiles or includes "
           f"({len(built)} file{'' if len(built) == 1 else 's'}), its build files, its data or the config")
    return Scope(touched=touched, compiled=len(built), why=why)

"""Where an application's commands run and what is copied to build a candidate."""

from __future__ import annotations

import posixpath
from pathlib import Path

from runner.base.config import DEFAULT_ARCH, LoadedConfig
from runner.base.errors import OptimasError
from runner.base.processes import render


def workspace_dirs(lc: LoadedConfig) -> tuple[Path, Path]:
    """(workspace copied for candidate builds, workdir the commands run in), both absolute."""
    app = lc.config.app
    workdir = lc.resolve(app.workdir).resolve()
    space = lc.resolve(app.workspace).resolve() if app.workspace else workdir
    if workdir != space and space not in workdir.parents:
        raise ValueError(f"app.workdir {workdir} is not inside app.workspace {space}")
    return space, workdir


def read_sources(workdir: Path, sources: list[str]) -> dict[str, str]:
    """The app's source files by the name the prompt shows (their path relative to workdir)."""
    out = {}
    for s in sources:
        p = workdir / s
        try:
            out[posixpath.normpath(s)] = p.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise OptimasError(f"source file {p} (app.sources) not found") from None
    return out


def build_compiler(lc: LoadedConfig) -> str | None:
    """The program the app's build command starts (its first word), or None without a build command."""
    if not lc.config.app.build:
        return None
    return render(lc.config.app.build, exe="x", arch=DEFAULT_ARCH, lineinfo="", config="", seed=1, scale=1, out="")[0]

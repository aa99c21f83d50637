"""Where an application's commands run and what is copied to build a candidate."""

from __future__ import annotations

import os
import posixpath
import re
from pathlib import Path

from runner.base.config import DEFAULT_ARCH, LoadedConfig
from runner.base.errors import OptimasError
from runner.base.processes import render
from runner.scan.cuda_source import LOCAL_INCLUDE, functions, strip_comments_and_strings

RECORD_LIMIT = 64 << 20  # bytes of a record Optimas wrote in a run folder (a manifest, a result) read at most


class FileTooLargeError(OptimasError):
    """A file the code under test wrote is larger than Optimas reads."""

    exit_code = 7


def read_capped(path: Path, limit: int, what: str) -> bytes:
    """A file's bytes, or FileTooLargeError (naming it and `what` it is) when it is larger than
    `limit`: the code under test writes its outputs and the tracer's and shim's records, and a
    sparse file costs no disk but its whole size in the worker's memory (an attacker's pass)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        data = f.read(limit + 1) if size <= limit else b""
    if size > limit or len(data) > limit:
        raise FileTooLargeError(f"{path} ({what}) is {max(size, len(data))} bytes; Optimas reads at most {limit}")
    return data


def read_source(path: Path) -> str:
    """A source file's text: UTF-8, or Latin-1 where the file is not valid UTF-8 (older sources carry
    a Latin-1 copyright sign, byte 0xa9, in their license comment). Latin-1 maps every byte to one
    character, so write_source gives the same bytes back."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def source_bytes(path: Path, text: str) -> bytes:
    """The bytes write_source would write at `path`: the text in the encoding of the file it
    replaces (Latin-1 where that one is not valid UTF-8 and the text fits in Latin-1), else UTF-8."""
    encoding = "utf-8"
    if path.is_file():
        try:
            path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            encoding = "latin-1"
    try:
        return text.encode(encoding)
    except UnicodeEncodeError:  # an edit brought characters Latin-1 lacks
        return text.encode("utf-8")


def write_source(path: Path, text: str) -> None:
    """Write a source file's text in the encoding of the file it replaces (source_bytes)."""
    path.write_bytes(source_bytes(path, text))


def read_sources(workdir: Path, sources: list[str]) -> dict[str, str]:
    """The app's source files by the name the prompt shows (their path relative to workdir)."""
    out = {}
    for s in sources:
        p = workdir / s
        try:
            out[posixpath.normpath(s)] = read_source(p)
        except FileNotFoundError:
            raise OptimasError(f"source file {p} (app.sources) not found") from None
    return out


def read_included(workdir: Path, space: Path, files: dict[str, str], depth: int = 2) -> dict[str, str]:
    """Local headers that `files` include with `#include "..."`, followed `depth` levels: each resolved
    next to the including file, then in workdir, and kept only inside the workspace `space`. Named
    like the sources (relative to workdir); the files already given are not read again."""
    found: dict[str, str] = {}
    frontier = dict(files)
    for _ in range(depth):
        nxt: dict[str, str] = {}
        for name, text in frontier.items():
            for inc in LOCAL_INCLUDE.findall(text):
                for base in (workdir / posixpath.dirname(name), workdir):
                    p = (base / inc).resolve()
                    if p.is_file() and (p == space or space in p.parents):
                        rel = posixpath.normpath(os.path.relpath(p, workdir))
                        if rel not in files and rel not in found and rel not in nxt:
                            nxt[rel] = read_source(p)
                        break
        found.update(nxt)
        frontier = nxt
    return found


def read_context(space: Path, workdir: Path, sources: list[str]) -> dict[str, str]:
    """What the model is shown of the code and a candidate may edit: the app's `sources` (relative
    to `workdir`), the local headers they include from the workspace `space` (where templated
    kernels and device helpers often live), and the files of the workdir that launch their kernels
    (where a launch's execution configuration is set). Callers: read_context(*lc.dirs, app.sources)."""
    files = read_sources(workdir, sources)
    files |= read_included(workdir, space, files)
    return files | read_launching(workdir, files)


LAUNCHING_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx")
MAX_LAUNCHING_BYTES = 1 << 20


def read_launching(workdir: Path, files: dict[str, str], depth: int = 2) -> dict[str, str]:
    """Source files in `workdir` (`depth` folders down) not among `files` that launch a kernel
    `files` define (`name<<<`), named relative to workdir."""
    kernels = {f.name.split("::")[-1] for text in files.values() for f in functions(text) if f.is_kernel}
    if not kernels:
        return {}
    launch = re.compile(r"\b(?:" + "|".join(re.escape(k) for k in sorted(kernels)) + r")\s*(?:<[^;{}]*?>)?\s*<<<")
    found: dict[str, str] = {}
    for folder, dirs, names in os.walk(workdir):
        level = len(Path(folder).relative_to(workdir).parts)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if level < depth else []
        for n in sorted(names):
            path = Path(folder) / n
            name = posixpath.normpath(path.relative_to(workdir).as_posix())
            if (path.suffix not in LAUNCHING_SUFFIXES or name in files or path.is_symlink()
                    or path.stat().st_size > MAX_LAUNCHING_BYTES):
                continue
            text = read_source(path)
            if "<<<" in text and launch.search(strip_comments_and_strings(text)):
                found[name] = text
    return found


_PARENT = "@parent"  # stands for ".." in a stored candidate's file names


def stored_name(name: str) -> str:
    """Where a source named relative to workdir (`../common/k.cuh`) is kept inside a candidate's
    `src/` folder (`@parent/common/k.cuh`), so that no name leads out of it."""
    return "/".join(_PARENT if part == ".." else part for part in posixpath.normpath(name).split("/"))


def source_name(stored: str) -> str:
    """The source name of a file kept in a candidate's `src/` folder (the inverse of stored_name)."""
    return "/".join(".." if part == _PARENT else part for part in stored.split("/"))


def build_compiler(lc: LoadedConfig) -> str | None:
    """The program the app's build command starts (its first word), or None without a build command."""
    app = lc.config.app
    if not app.build:
        return None
    build_for = app.build_configuration()  # a build per configuration: any one names the same program
    return render(app.build, exe="x", arch=DEFAULT_ARCH, lineinfo="", config=build_for or "", seed=1, scale=1, out="",
                  **(app.values(build_for) if build_for else {}))[0]

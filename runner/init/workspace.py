"""What a build reads outside the program's folder, and the workspace that holds it all."""

from __future__ import annotations

import os
import posixpath
import re
from pathlib import Path

from runner.init.build_cmake import CMAKE_SUBDIRECTORY, ParentTarget
from runner.init.build_configure import configure_top
from runner.init.makefile_text import INCLUDE_LINE, expand, make_variables, read_makefile
from runner.init.sources import QUOTED_INCLUDE

_INCLUDE_FLAG = re.compile(r"(?:^|\s)(?:-I|-isystem\s+|--include-path[= ])\s*([^\s'\"]+)")


_CMAKE_INCLUDE_DIRS = re.compile(r"(?i)\b(?:target_)?include_directories\s*\(([^)]*)\)")


_CMAKE_PATH_WORD = re.compile(r"(?:\$\{(?:CMAKE_CURRENT_SOURCE_DIR|CMAKE_SOURCE_DIR|PROJECT_SOURCE_DIR)\}/)?"
                              r"(\.\.[\w./+-]*)")


def outside_reads(root: Path, texts: dict[str, str], build_files: list[Path],
                  parent: ParentTarget | None = None) -> list[tuple[Path, str]]:
    """What the build reads outside `root`, with what reads it: headers the sources include with a
    relative path (`#include "../common/util.h"`), the files a Makefile includes (`include
    ../../common.mk`) and the folders its nvcc flags add (`-I../common`), CMake's
    add_subdirectory(..) and include_directories(..). Only paths that exist count, and only relative
    ones: an absolute path (`-I$(CUDA_DIR)/include`) is read in place by a build in any copy.
    `build_files`: root's Makefiles and CMakeLists.txt (BUILD_FILES); `parent`: as detect_build's,
    whose project's top the build reads whole."""
    top = root.resolve()
    found: dict[Path, str] = {}

    def note(base: Path, written: str, why: str) -> None:
        if posixpath.isabs(written):
            return
        try:
            real = (base / written).resolve()
        except OSError:
            return
        if real.exists() and not real.is_relative_to(top):
            found.setdefault(real, why)

    for name, text in texts.items():
        for inc in QUOTED_INCLUDE.findall(text):
            note(root / posixpath.dirname(name), inc, f"{name} includes \"{inc}\"")
    for mk in (p for p in build_files if p.name != "CMakeLists.txt"):
        rel = mk.relative_to(root).as_posix()
        raw = mk.read_text(errors="replace")
        variables = make_variables(raw)
        for m in INCLUDE_LINE.finditer(raw):
            for part in expand(m.group(1), variables).split():
                if "$" not in part:
                    note(mk.parent, part, f"{rel} includes {part}")
        text = read_makefile(mk)
        expanded = expand(" ".join(make_variables(text).values()) + "\n" + text, make_variables(text))
        for inc in _INCLUDE_FLAG.findall(expanded):
            if "$" not in inc:
                note(mk.parent, inc, f"{rel} compiles with -I{inc}")
    if (conf := configure_top(root)) is not None and conf != top:
        found.setdefault(conf, f"configure in {conf} makes this folder's Makefile (autoconf)")
    if parent is not None:
        found.setdefault(parent.top, f"the executable {parent.target!r} that links this folder's library "
                                     f"{parent.library!r} is built by the CMake project in {parent.top}")
    for cm in (p for p in build_files if p.name == "CMakeLists.txt"):
        rel = cm.relative_to(root).as_posix()
        text = cm.read_text(errors="replace")
        for sub in CMAKE_SUBDIRECTORY.findall(text):
            note(cm.parent, sub, f"{rel}: add_subdirectory({sub})")
        for args in _CMAKE_INCLUDE_DIRS.findall(text):
            for path in _CMAKE_PATH_WORD.findall(args):
                note(cm.parent, path, f"{rel}: include_directories({path})")
    return sorted(found.items(), key=lambda kv: str(kv[0]))


def smallest_workspace(root: Path, outside: list[tuple[Path, str]]) -> Path:
    """The smallest folder holding `root` and every path in `outside`."""
    paths = [str(root.resolve()), *(str(p if p.is_dir() else p.parent) for p, _ in outside)]
    return Path(os.path.commonpath(paths))


def read_parts(root: Path, outside: list[tuple[Path, str]], space: Path) -> list[str]:
    """The parts of the workspace `space` a build reads (app.workspace_paths), relative to it: the
    program folder and the folder of each path in `outside` (a header's folder, since headers
    include their neighbours); none inside another. Empty when one of them is the workspace
    itself: then the whole of it is copied anyway."""
    folders = sorted({root.resolve(), *((p if p.is_dir() else p.parent).resolve() for p, _ in outside)},
                     key=lambda q: len(q.parts))
    parts: list[Path] = []
    for q in folders:
        if not any(q.is_relative_to(k) for k in parts):
            parts.append(q)
    if any(q == space for q in parts):
        return []
    return sorted(q.relative_to(space).as_posix() for q in parts)

"""Which build system builds the project (CMake, make, or one nvcc line) and the build command for it."""

from __future__ import annotations

from pathlib import Path

from runner.init.build_cmake import ParentTarget, cmake_build_for
from runner.init.build_configure import configure_build, configure_top
from runner.init.build_make import kernels_makefile, make_build
from runner.init.build_nvcc import nvcc_build
from runner.init.build_script import script_build, script_in
from runner.init.makefile_text import makefile_in, read_makefile


def detect_build(root: Path, kernel_files: list[str], mains: list[str], texts: dict[str, str],
                 parent: ParentTarget | None = None, program: str | None = None) -> tuple[str, str, list[str], str]:
    """(kind, build command template, notes, run arguments found in the build file) for the project
    in root; `texts`: its sources, as source_texts reads them; `parent`: the executable of an
    enclosing CMake project that links root's library (parent_cmake_target); `program`: the target
    to build, where the build makes several (init --program)."""
    cmake = cmake_build_for(root, kernel_files, parent, program)
    if cmake is not None:
        return cmake
    if (top := configure_top(root)) is not None:
        return configure_build(root, top, program)
    if (mk := makefile_in(root)) is not None:
        return ("make", *make_build(mk.name, read_makefile(mk), root, program=program))
    if (script := script_in(root)) is not None:
        return script_build(script)
    if (mk := kernels_makefile(root, kernel_files)) is not None:
        sub = mk.parent.relative_to(root).as_posix()
        # its run target's arguments are not taken: paths in them would be relative to the subfolder
        build, notes, _ = make_build(f"{sub}/{mk.name}", read_makefile(mk), mk.parent, sub, program)
        return "make", build, [f"no Makefile at the top: the one in {sub}/, over the kernels' files, builds",
                               *notes], ""
    return nvcc_build(kernel_files, mains, texts, program)


def _has_build_file(folder: Path) -> bool:
    return makefile_in(folder) is not None or (folder / "CMakeLists.txt").is_file()


def separate_programs(root: Path, kernel_files: list[str]) -> list[str]:
    """The folders under `root` that each build their own program (a Makefile or CMakeLists.txt
    nearest above some kernel file), when `root` has no build file of its own: a suite's folder
    rather than one program's. Empty when root builds, or when the kernels share one build."""
    if _has_build_file(root):
        return []
    found: list[str] = []
    for name in kernel_files:
        folder = (root / name).parent
        while folder != root and not _has_build_file(folder):
            folder = folder.parent
        rel = folder.relative_to(root).as_posix()
        if folder != root and rel not in found:
            found.append(rel)
    return sorted(found)

"""The build of a project without a build file: one nvcc line over its sources."""

from __future__ import annotations

import posixpath

from runner.base.errors import OptimasError
from runner.init.sources import QUOTED_INCLUDE


def include_folders(texts: dict[str, str], units: list[str]) -> list[str]:
    """The folders (relative to the project, as `texts` names its sources) that a quoted #include of
    these sources, or of the local headers they include, resolves from when it does not resolve
    beside its file or at the top, shallowest first: a vendored library (`#include
    "CLI11/CLI11.hpp"` found in 3rd-party/CLI11/) that a build file outside init's reach (a
    suite's CMake function) adds with -I."""
    folders: list[str] = []
    seen: set[str] = set()
    pending = list(units)
    while pending:
        name = pending.pop()
        if name in seen or name not in texts:
            continue
        seen.add(name)
        for inc in QUOTED_INCLUDE.findall(texts[name]):
            where = [posixpath.dirname(name), "", *folders]
            found = next((f for d in where if (f := posixpath.normpath(posixpath.join(d, inc))) in texts), None)
            if found is None:
                under = sorted((n[:-len(inc) - 1] for n in texts if n.endswith("/" + inc)),
                               key=lambda d: (d.count("/"), d))
                if not under:
                    continue
                folders.append(under[0])
                found = f"{under[0]}/{inc}"
            pending.append(found)
    return folders


def chosen_main(mains: list[str], program: str | None) -> list[str]:
    """`mains` with the one `init --program NAME` names (its path, file name or stem) first; an
    error naming them where none is."""
    if program is None:
        return mains
    match = next((m for m in mains if program in (m, posixpath.basename(m), posixpath.splitext(
        posixpath.basename(m))[0])), None)
    if match is None:
        raise OptimasError(f"--program {program}: no file defining main() is named so; the folder has no build "
                           f"file, and the files defining main() are {', '.join(mains) or 'none'}")
    return [match, *(m for m in mains if m != match)]


def nvcc_build(kernel_files: list[str], mains: list[str], texts: dict[str, str],
               program: str | None = None) -> tuple[str, str, list[str], str]:
    """detect_build's answer without a build file: one nvcc line over the file defining main (the
    one `program` names, else the first) and the .cu files defining kernels and no main, with -I for
    the folders their quoted includes resolve from."""
    mains = chosen_main(mains, program)
    cu = [f for f in kernel_files if f.endswith(".cu")]
    units = list(dict.fromkeys([*mains[:1], *(c for c in cu if c not in mains)]))
    notes = []
    if len(mains) > 1:
        notes.append(f"several files define main() ({', '.join(mains)}); the build uses {mains[0]}"
                     + ("" if program else "; another: optimas init --program NAME (its file name)"))
    if not mains:
        notes.append("no .cu file defines main(): give the build command that links your program")
    extra = include_folders(texts, units or cu)
    if extra:
        notes.append(f"headers the sources include are under {', '.join(extra)}: the build adds "
                     + " ".join(f"-I{d}" for d in extra))
    build = ("nvcc -O3 -std=c++17 -arch={arch} {lineinfo} -I. " + "".join(f"-I{d} " for d in extra)
             + "-o {exe} " + " ".join(units or cu))
    return "nvcc", build, notes, ""

"""The build of a folder of an autoconf project: a shipped `configure` script (with configure.ac and
Makefile.in files) makes the Makefiles, so there is no Makefile until it runs.

init runs configure in a temporary copy of the project (never in the user's folder), asks make's dry
run of the configured folder what it links, and writes a build that configures the pipeline's copy
the same way, then makes the program's target. Autotools' own regeneration rules are kept from
firing (a copy's timestamps make configure.ac look newer than configure): the build sets the
inputs of aclocal, automake and autoconf to the epoch first.
"""

from __future__ import annotations

import os
import posixpath
import re
import shlex
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from runner.base.errors import OptimasError
from runner.base.processes import run_process
from runner.init import make_db

CONFIGURE_TIMEOUT_S = 300.0
MAX_UP = 6  # how far above the program folder configure is looked for
# the inputs of the autotools' regeneration rules: at the epoch, the generated files are never older
_TOUCH = ('find . -name configure.ac -o -name configure.in -o -name Makefile.am -o -name "*.m4" '
          "| xargs -r touch -d @0")
# the options a configure script may offer, and what init passes for each: CUDA on, what the
# CUDA build does not need (MPI, OpenCL) off
_WANTED = (("--with-cuda", "--with-cuda"), ("--enable-cuda", "--enable-cuda"), ("--with-mpi", "--without-mpi"),
           ("--enable-mpi", "--disable-mpi"), ("--with-opencl", "--without-opencl"),
           ("--enable-opencl", "--disable-opencl"))
_CHECK_NO = re.compile(r"^checking (?:for )?(.*?)\.\.\. no$", re.M)
_CUDA_CHECK = re.compile(r"cu|nvcc", re.I)


@dataclass
class Configured:
    """What configure and make's dry run said in the temporary copy."""

    flags: list[str]
    programs: list[str] = field(default_factory=list)  # what the folder's default goal links
    library_dirs: list[str] = field(default_factory=list)  # -L folders of the tree that have a Makefile
    failed_checks: list[str] = field(default_factory=list)  # configure's CUDA checks that said no
    nvcc_empty: bool = False  # the configured Makefile's NVCC is empty: configure found no usable CUDA
    error: str = ""


def configure_top(root: Path) -> Path | None:
    """The folder of the `configure` script that makes root's Makefile: root or a folder above it
    holding `configure` beside configure.ac (or .in), where root has a Makefile.in and no Makefile."""
    root = root.resolve()
    if not (root / "Makefile.in").is_file() or any((root / n).is_file() for n in ("Makefile", "makefile")):
        return None
    folder = root
    for _ in range(MAX_UP + 1):
        if (folder / "configure").is_file() and any((folder / n).is_file() for n in ("configure.ac", "configure.in")):
            return folder
        if folder.parent == folder:
            return None
        folder = folder.parent
    return None


def configure_flags(top: Path) -> tuple[list[str], list[str]]:
    """The options passed to configure (from those its --help text offers) and a note on each."""
    text = (top / "configure").read_text(errors="replace")
    flags = [flag for offered, flag in _WANTED if re.search(re.escape(offered) + r"\b", text)]
    notes = []
    if off := [f for f in flags if f.startswith(("--without", "--disable"))]:
        notes.append(f"configure is run with {' '.join(off)}: the CUDA programs need none of them, and an MPI or "
                     "OpenCL the machine lacks would stop configure or the build")
    if "CUDA_CPPFLAGS" in text:
        flags.append("CUDA_CPPFLAGS=-arch={arch}")
        notes.append("CUDA_CPPFLAGS=-arch={arch} is given to configure: its default compiles every architecture nvcc "
                     "knows")
    return flags, notes


def _prepare(tree: Path) -> None:
    for pat in ("configure.ac", "configure.in", "Makefile.am", "*.m4"):
        for p in tree.rglob(pat):
            os.utime(p, (0, 0))


def configured(top: Path, root: Path, flags: list[str]) -> Configured:
    """configure in a temporary copy of `top`, then make's dry run of root's folder there."""
    out = Configured(flags)
    rel = root.resolve().relative_to(top)
    with tempfile.TemporaryDirectory(prefix="optimas-configure-") as tmp:
        tree = Path(tmp) / top.name
        shutil.copytree(top, tree, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        _prepare(tree)
        argv = ["sh", "./configure", *(f.replace("{arch}", "sm_90") for f in flags)]
        r = run_process(argv, cwd=tree, timeout_s=CONFIGURE_TIMEOUT_S, what="configure", merge_stderr=False)
        if r.returncode != 0:
            errs = [x for x in (r.errors or r.output).splitlines() if "error" in x.lower()]
            out.error = (errs[-1] if errs else f"configure exited {r.returncode}").strip()
            return out
        out.failed_checks = [c for c in _CHECK_NO.findall(r.output) if _CUDA_CHECK.search(c) and "presence" not in c]
        folder = tree / rel
        made = (folder / "Makefile").read_text(errors="replace") if (folder / "Makefile").is_file() else ""
        out.nvcc_empty = re.search(r"^NVCC\s*=\s*$", made, re.M) is not None
        run = make_db.dry_run(folder, always=False)
        if run is None:
            out.error = "make's dry run of the configured Makefile failed"
            return out
        out.programs = [posixpath.normpath(p) for p in run.programs]
        out.library_dirs = _library_dirs(run.commands, folder, tree)
    return out


def _library_dirs(commands: list[str], folder: Path, tree: Path) -> list[str]:
    """The -L folders of the linking commands that are in the tree and have a Makefile (a library
    the suite builds), as written relative to the program folder."""
    found: list[str] = []
    for c in commands:
        if make_db.linked(c) is None:
            continue
        for m in re.finditer(r"(?:^|\s)-L\s*(\S+)", c):
            d = m.group(1)
            real = (folder / d).resolve()
            if not posixpath.isabs(d) and real.is_relative_to(tree.resolve()) and (real / "Makefile").is_file():
                found.append(posixpath.normpath(d))
    return list(dict.fromkeys(found))


def configure_build(root: Path, top: Path, program: str | None = None) -> tuple[str, str, list[str], str]:
    """(kind, build command template, notes, run arguments) for root's program in the autoconf
    project whose configure is in `top`."""
    flags, notes = configure_flags(top)
    found = configured(top, root, flags)
    shown = " ".join(flags)
    if found.error:
        raise OptimasError(f"{root}: configure (./configure {shown}, run in a temporary copy) failed: {found.error}")
    if not found.programs:
        raise OptimasError(f"{root}: make's dry run after configure (./configure {shown}) links no program here")
    if program is not None and program not in found.programs:
        raise OptimasError(f"{root}: --program {program}: the configured Makefile links "
                           f"{', '.join(found.programs)}")
    target = program or found.programs[0]
    up = os.path.relpath(top, root.resolve())
    quoted = " ".join(f if "{" in f else shlex.quote(f) for f in flags)
    steps = [f"(cd {up} && {_TOUCH} && ./configure {quoted} >configure.out 2>&1 "
             "|| (grep -i error configure.out | tail -n 1 >&2; exit 1))"]
    notes.insert(0, f"autoconf project: ./configure in {up} makes the Makefiles (from Makefile.in); the build runs "
                    f"it in the pipeline's copy, then make {target} (init ran configure in a temporary copy: make's "
                    f"dry run links {', '.join(found.programs)})")
    if found.nvcc_empty:
        why = re.sub(r"[\"'{}$`\\]", "", "; ".join(found.failed_checks)) or "see config.log"
        steps.append(f'(grep -q "^NVCC *= *[^ ]" Makefile || (echo "configure found no usable CUDA (where init ran, '
                     f'its checks said no: {why})" >&2; exit 1))')
        notes.append(f"configure (./configure {shown}) found no usable CUDA on this machine: its checks {why} said "
                     "no, and the configured Makefile's NVCC is empty; the build stops there until they pass")
    steps += [f"make -C {d}" for d in found.library_dirs]
    steps.append(f'NVCC_APPEND_FLAGS="-arch={{arch}} {{lineinfo}}" make {target} && cp {target} {{exe}}')
    if len(found.programs) > 1 and program is None:
        notes.append(f"the configured Makefile links {len(found.programs)} programs ({', '.join(found.programs)}); "
                     f"this config builds {target} (optimas init --program NAME for another)")
    return "make", "sh -c '" + " && ".join(steps) + "'", notes, ""

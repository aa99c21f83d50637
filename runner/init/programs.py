"""Every program a project builds, asked of its build: CMake's File API (each executable with CUDA
code), make's dry run (each program the default goal links, e.g. a TARGETS list built by `%: %.cu`)
or, without a build file, each `main` whose file or neighbours define kernels. Each comes with the
files its build compiles, so that its kernels, sizes and checks are read from those files alone.
"""

from __future__ import annotations

import logging
import os
import posixpath
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from runner.init import cmake_api, make_db
from runner.init.build_cmake import SAFE_WORD, cmake_build, codemodel, evident_values
from runner.init.build_configure import configure_top
from runner.init.build_make import make_build
from runner.init.build_nvcc import include_folders
from runner.init.build_script import script_in
from runner.init.makefile_text import makefile_in, read_makefile
from runner.init.sources import BUILD_FILES, walk
from runner.scan.size_constants import included_closure

log = logging.getLogger(__name__)

UNIT_SUFFIXES = (".cu", ".c", ".cc", ".cpp", ".cxx")


@dataclass
class Found:
    """One program of the project, as its build makes it."""

    name: str
    build: str  # the build command template
    kind: str  # cmake | make | nvcc
    units: list[str]  # the files its build compiles, relative to the project folder
    notes: list[str] = field(default_factory=list)
    # what its build compiles, as compile_commands.json entries (paths as the build gives them)
    commands: list[dict] = field(default_factory=list)


def discover(root: Path, mains: list[str], texts: dict[str, str]) -> list[Found]:
    """The programs the project in `root` builds, as its build says (none where it could not be
    asked: then init reads the build's text as for one program)."""
    if (root / "CMakeLists.txt").is_file():
        return _cmake_programs(root)
    if configure_top(root) is not None:
        return []  # an autoconf project's folder: configure makes its Makefile (build_configure)
    if (mk := makefile_in(root)) is not None:
        return _make_programs(root, mk)
    if not walk(root, (), BUILD_FILES) and script_in(root) is None:
        return _nvcc_programs(mains, texts)  # a build script's programs are seen in its build (observe)
    return []


def _unique(name: str, taken: set[str]) -> str:
    """`name`, or `name-2`, `name-3` ... when a program of that name is listed already."""
    base = re.sub(r"[^A-Za-z0-9_.+-]", "_", name).lstrip("._+-") or "program"
    out, n = base, 1
    while out in taken:
        n += 1
        out = f"{base}-{n}"
    taken.add(out)
    return out


def distinct_names(paths: list[str]) -> dict[str, str]:
    """Each program path's name (`02_matrix_mul/tiled/mmul` -> `mmul`): its last part, and where
    programs would share a name, the names of their folders before it, nearest first, until they
    differ (`tiled-mmul`, `restrict-mmul`), rather than a number that says nothing of which is which."""
    parts = {p: [x for x in p.split("/") if x] or [p] for p in paths}
    depth = dict.fromkeys(paths, 1)

    def name(p: str) -> str:
        return "-".join(parts[p][-depth[p]:])

    while True:
        groups: dict[str, list[str]] = {}
        for p in paths:
            groups.setdefault(name(p), []).append(p)
        deeper = [p for same in groups.values() if len(same) > 1 for p in same if depth[p] < len(parts[p])]
        if not deeper:
            return {p: name(p) for p in paths}
        for p in deeper:
            depth[p] += 1


def _cmake_programs(root: Path) -> list[Found]:
    """Each executable CMake's File API lists with CUDA code (compiled or linked)."""
    try:
        model = codemodel(root)
    except cmake_api.CMakeUnavailable as e:
        log.info("CMake could not be asked what %s builds: %s", root, e)
        return []
    programs = model.programs()
    folders = [c["directory"] for c in model.compile_commands if isinstance(c.get("directory"), str)]
    build_top = os.path.commonpath(folders) if folders else ""
    out, taken = [], set()
    for t in programs:
        if not SAFE_WORD.fullmatch(t.name) or not SAFE_WORD.fullmatch(t.artifact or ""):
            log.info("CMake target %r left out: its name needs quoting in a build command", t.name)
            continue
        units = list(dict.fromkeys([*t.sources, *model.linked_cuda_sources(t)]))
        name = _unique(t.name, taken)
        note = (f"CMake's File API: target {t.name!r} ({t.folder}/CMakeLists.txt) makes {t.artifact}, compiling "
                f"{', '.join(units[:4])}{' ...' if len(units) > 4 else ''}")
        # the program's own compile commands and those of the libraries it links (where its kernels may be)
        objects = tuple(f"/CMakeFiles/{linked.name}.dir/" for linked in model.linked_targets(t))
        commands = [_cmake_entry(c, model.source, build_top) for c in model.compile_commands
                    if any(o in "/" + _cmake_output(c, build_top) for o in objects)]
        build = cmake_build(".", t.name, t.artifact, evident_values(root)[0])
        out.append(Found(name, build, "cmake", units, [note], commands))
    return out


CMAKE_BUILD = "build"  # how compile_commands.json names CMake's build folder (init's was a temporary one)


def _words(entry: dict) -> list[str]:
    return entry["arguments"] if isinstance(entry.get("arguments"), list) else shlex.split(entry.get("command", ""))


def _cmake_output(entry: dict, build_top: str) -> str:
    """What a CMake compile command writes, relative to the top of the build folder (relative to
    its own directory, a subfolder's for a subfolder's target; older CMake exports no `output`:
    its `-o` says)."""
    written = entry.get("output") or make_db.output_of(_words(entry)) or ""
    if posixpath.isabs(written) or not build_top:
        return written
    return posixpath.normpath(posixpath.join(os.path.relpath(entry.get("directory", build_top), build_top), written))


def _cmake_entry(entry: dict, top: Path, build_top: str) -> dict:
    """A compile_commands.json entry of CMake's, with paths relative to the project's top: its
    sources as they are, the build folder's files under CMAKE_BUILD."""
    words = _words(entry)
    here = os.path.relpath(entry.get("directory", build_top), build_top) if build_top else "."
    own = posixpath.normpath(posixpath.join(CMAKE_BUILD, here))
    places = ((entry.get("directory", ""), own), (build_top, CMAKE_BUILD), (str(top), "."))

    def relative(word: str) -> str:
        for folder, instead in places:
            if folder and folder in word:
                word = word.replace(folder + "/", "" if instead == "." else instead + "/").replace(folder, instead)
        return word

    out = [relative(w) for w in words]
    # the object and dependency files CMake names relative to the command's own build folder
    for i, w in enumerate(out[:-1]):
        if w in ("-o", "-MF") and not posixpath.isabs(out[i + 1]) and not out[i + 1].startswith(CMAKE_BUILD + "/"):
            out[i + 1] = posixpath.normpath(posixpath.join(own, out[i + 1]))
    output = _cmake_output(entry, build_top)
    return {"file": relative(entry["file"]), "arguments": out,
            "output": output if posixpath.isabs(output) else f"{CMAKE_BUILD}/{output}"}


def _make_programs(root: Path, makefile: Path) -> list[Found]:
    """Each program make's dry run of the default goal links, built by its own target: the top
    Makefile's, or for a program a sub-make links (a recursive Makefile's `$(MAKE) -C sub`), the
    sub-folder Makefile's, run with make -C (the top's default goal may build what this machine
    cannot, and a program needs only its own)."""
    run = make_db.dry_run(root, makefile.name)
    if run is None or not run.programs:
        return []
    text = read_makefile(makefile)
    compiled = compile_steps(run.commands, run.directories)
    out, taken = [], set()
    names = distinct_names(list(run.programs))
    for program in run.programs:
        steps = _steps_of(program, compiled)
        units = [u for s in steps for u in s.sources if not posixpath.isabs(u)]
        sub = posixpath.dirname(program)
        mk = makefile_in(root / sub) if sub else makefile
        if not units or mk is None:
            continue
        if sub:
            build, notes, _ = make_build(f"{sub}/{mk.name}", read_makefile(mk), root / sub, sub=sub,
                                         program=posixpath.basename(program), listed=True)
        else:
            build, notes, _ = make_build(makefile.name, text, root, program=program, listed=True)
        out.append(Found(_unique(names[program], taken), build, "make", list(dict.fromkeys(units)), notes,
                         [c for s in steps for c in s.entries()]))
    return out


@dataclass(frozen=True)
class Step:
    """One compiler command of a build: what it reads and writes (paths relative to the top
    folder), and the folder it runs in."""

    words: tuple[str, ...]
    output: str
    sources: tuple[str, ...]
    objects: tuple[str, ...]  # the objects it links
    directory: str = "."

    def entries(self) -> list[dict]:
        """Its compile_commands.json entries, one per source (`directory` relative to the top folder)."""
        return [{"directory": self.directory, "file": _within(self.directory, s), "arguments": list(self.words),
                 "output": _within(self.directory, self.output)} for s in self.sources]


def _within(directory: str, path: str) -> str:
    """A path relative to the top folder, written relative to `directory` (absolute ones as they are)."""
    return path if posixpath.isabs(path) or directory == "." else posixpath.relpath(path, directory)


def compile_steps(commands: list[str], directories: list[str] | None = None) -> list[Step]:
    """The compiler commands among a build's commands (make's dry run), with their outputs;
    `directories`: each command's folder, relative to the top folder (all "." when None)."""
    out = []
    for i, command in enumerate(commands):
        try:
            words = shlex.split(command)
        except ValueError:
            continue
        if not words or not make_db.COMPILERS.search(words[0]):
            continue
        here = directories[i] if directories and i < len(directories) else "."

        def top(path: str, here: str = here) -> str:
            return posixpath.normpath(posixpath.join(here, path))

        sources = tuple(top(w) for w in words[1:] if w.endswith(UNIT_SUFFIXES) and not w.startswith("-"))
        objects = tuple(top(w) for w in words[1:] if w.endswith(".o") and not w.startswith("-"))
        output = make_db.output_of(words)
        if output is None and "-c" in words and len(sources) == 1:
            output = posixpath.splitext(posixpath.basename(sources[0]))[0] + ".o"
        if output is not None and (sources or objects):
            out.append(Step(tuple(words), top(output), sources, tuple(o for o in objects if o != top(output)), here))
    return out


def _steps_of(program: str, steps: list[Step]) -> list[Step]:
    """The commands that build `program`: the one that links it and those that compile its objects."""
    by_output = {posixpath.normpath(s.output): s for s in steps}
    todo, out = [posixpath.normpath(program)], []
    while todo:
        step = by_output.pop(todo.pop(), None)
        if step is not None:
            out.append(step)
            todo += [posixpath.normpath(o) for o in step.objects]
    return out


def _named_path(main: str) -> str:
    """The path a program built from the file `main` is named by: its folder's for a main.cu, else
    the file's without its suffix."""
    folder, stem = posixpath.dirname(main), posixpath.splitext(posixpath.basename(main))[0]
    return folder if stem == "main" and folder else posixpath.join(folder, stem)


def _nvcc_programs(mains: list[str], texts: dict[str, str]) -> list[Found]:
    """Without a build file: each .cu file defining main, with the .cu files beside it that define
    none, when those or what they include define kernels."""
    out, taken = [], set()
    names = distinct_names([_named_path(m) for m in mains])
    for main in mains:
        folder = posixpath.dirname(main)
        units = [main, *(f for f in texts if posixpath.dirname(f) == folder and f.endswith(".cu")
                         and f not in mains)]
        if not any("__global__" in t for t in included_closure(texts, units).values()):
            continue
        extra = include_folders(texts, units)
        build = ("nvcc -O3 -std=c++17 -arch={arch} {lineinfo} -I. " + "".join(f"-I{d} " for d in extra)
                 + "-o {exe} " + " ".join(units))
        name = _unique(names[_named_path(main)], taken)
        words = shlex.split(build.replace("{arch}", "sm_90").replace("{lineinfo}", "").replace("{exe}", name))
        out.append(Found(name, build, "nvcc", units, [f"{main} defines main(): built with {', '.join(units[1:])}"
                                                       if len(units) > 1 else f"{main} defines main()"],
                         [{"file": u, "arguments": words, "output": name} for u in units]))
    return out

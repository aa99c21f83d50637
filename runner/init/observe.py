"""Learn the build from the build: where what a build compiles cannot be told without running it (a
build script, a Makefile whose recipes call one, a build command the user gave), init runs it once
in a copy of the workspace through Optimas's nvcc shim with recording on (as Bear and compiledb
observe a build), never in the user's folder and within the build's own time limit (app.timeout_s).
Each nvcc call recorded gives compile_commands.json entries (its folder, arguments, source and
output), the executables it links from which objects, and, through `nvcc -MM` with its flags, the
files the program's build compiles or includes: the program's sources.
"""

from __future__ import annotations

import os
import posixpath
import re
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path

from runner.base.config import LoadedConfig
from runner.base.errors import OptimasError
from runner.base.gpu import target_arch
from runner.base.progress import progress_for
from runner.base.sandbox import scratch
from runner.init import make_db
from runner.init.project import Project
from runner.init.sources import CUDA_SUFFIXES
from runner.scan.cuda_source import functions
from runner.toolchain.builder import copy_workspace
from runner.toolchain.compiler import BuildOptions, build, compiled_files, preprocessor_args, read_calls
from runner.toolchain.nvcc_shim import NVCC_RECORD, build_environment

progress = progress_for("init")

# The copy at the end of a make or script build's template (`... && cp app {exe}'`): the observed
# build runs without it, since the binary it names may be a guess the build shows wrong.
COPY = re.compile(r" && cp (\S+) \{exe\}'$")
SAFE_PATH = re.compile(r"[\w./+-]+")  # a path a build command can name unquoted
MAX_ERROR_CHARS = 300
# nvcc options that compile without linking, and those that make a library rather than a program
_COMPILE_ONLY = frozenset({"-c", "--compile", "-dc", "--device-c", "-dw", "--device-w"})
_LIBRARY = frozenset({"-lib", "--lib", "-shared", "--shared"})


@dataclass
class Observed:
    """What one build, run in a copy with its nvcc calls recorded, did; paths relative to the
    program's folder (app.workdir)."""

    command: str  # the build command (its template, as app.build writes it)
    ok: bool
    seconds: float = 0.0
    error: str = ""  # its last error line, when it failed
    commands: list[dict] = field(default_factory=list)  # compile_commands.json entries ("directory": the call's)
    linked: list[tuple[str, list[str]]] = field(default_factory=list)  # (executable, what it links)
    files: list[str] | None = None  # the files it compiled or included (None: nvcc -MM could not tell)
    calls: int = 0  # nvcc calls recorded

    def sources(self) -> list[str]:
        """The files the build compiled (one entry's file each, once)."""
        return list(dict.fromkeys(posixpath.normpath(posixpath.join(e["directory"], e["file"]))
                                  for e in self.commands))


def observe(lc: LoadedConfig) -> Observed:
    """Run the build of `lc` (one program's config) once in a copy of its workspace, its nvcc calls
    recorded by the shim (OPTIMAS_NVCC_RECORD through app.env: compiler.build sets its own record
    only with `macros` or `dependencies`, and its file is gone when it returns)."""
    app = lc.config.app
    arch = target_arch(lc.config.profiling.nvidia_smi)
    progress(f"building the program once in a copy of the workspace to observe what its build compiles ({app.build}; "
             f"its nvcc calls recorded by Optimas's nvcc shim; up to {app.timeout_s:g} s) ...")
    with scratch("optimas-observe-") as tmp:
        record = Path(tmp) / "nvcc-calls.jsonl"
        recording = lc.with_app(env={**app.env, NVCC_RECORD: str(record)})
        start = time.monotonic()
        try:
            cwd = copy_workspace(recording, Path(tmp) / "ws")
            result = build(recording, cwd, arch, exe=Path(tmp) / "app.bin", options=BuildOptions(verbose=False))
        except OptimasError as e:
            return Observed(app.build or "", False, error=_one_line(str(e)))
        seconds = time.monotonic() - start
        command = app.build or ""
        if not result.ok:
            return Observed(command, False, seconds, error=last_error(result.output.replace(str(cwd) + "/", "")))
        calls = read_calls(record)
        copy_root = Path(tmp) / "ws"
        commands, linked = call_entries(calls, cwd, copy_root)
        env = build_environment(app.env, lc.config.profiling.nvcc, compat=app.legacy_cuda)
        files = compiled_files(calls, cwd, lc.config.profiling.nvcc, env) if calls else []
    return Observed(command, True, seconds, commands=commands, linked=linked, files=files, calls=len(calls))


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= MAX_ERROR_CHARS else line[:MAX_ERROR_CHARS - 3] + "..."


def last_error(output: str) -> str:
    """The line of a failed build's output that says why: the last one naming an error, else its last line."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    if not lines:
        return "it printed nothing"
    errors = [ln for ln in lines if re.search(r"(?i)\berror\b|fatal|not found|no such file|cannot|undefined", ln)]
    return _one_line((errors or lines)[-1])


def _relative_word(word: str, copy_root: Path, cwd: Path) -> str:
    """An argument with paths into the copy written relative to the call's folder."""
    root = str(copy_root)
    if root not in word:
        return word
    return word.replace(root, os.path.relpath(root, cwd))


def call_entries(calls: list[dict], workdir: Path, copy_root: Path) -> tuple[list[dict], list[tuple[str, list[str]]]]:
    """compile_commands.json entries of the recorded nvcc calls (one per source compiled, `directory`
    the call's folder relative to the program's, `arguments` as nvcc got them with what
    NVCC_APPEND_FLAGS added), and the executables the calls link from what (objects or sources)."""
    entries: list[dict] = []
    linked: list[tuple[str, list[str]]] = []
    for call in calls:
        where = Path(os.path.normpath(call["cwd"]))
        folder = posixpath.normpath(os.path.relpath(where, workdir))
        args = [_relative_word(str(a), copy_root, where) for a in call["args"]]
        args += [_relative_word(a, copy_root, where) for a in shlex.split(str(call.get("append") or ""))]
        words = ["nvcc", *args]
        _, sources = preprocessor_args(args)
        output = make_db.output_of(words)
        if any(a in _COMPILE_ONLY for a in args):
            for src in sources:
                out = output or posixpath.splitext(posixpath.basename(src))[0] + ".o"
                entries.append({"directory": folder, "file": src, "arguments": words, "output": out})
            continue
        if any(a in args for a in ("-E", "-M", "-MM", "--preprocess", "-ptx", "-cubin", "-fatbin", "--version")):
            continue  # not a build step: a query or an intermediate the build reads
        objects = [a for a in args if not a.startswith("-") and a.endswith((".o", ".a", ".obj")) and a != output]
        program = output or "a.out"
        entries += [{"directory": folder, "file": s, "arguments": words, "output": program} for s in sources]
        if (sources or objects) and not any(a in _LIBRARY for a in args):
            linked.append((posixpath.normpath(posixpath.join(folder, program)),
                           [posixpath.normpath(posixpath.join(folder, x)) for x in [*sources, *objects]]))
    return entries, linked


def _defines_kernel(path: Path) -> list[str]:
    """The kernels a file defines (none when it cannot be read)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return []
    return [f.name for f in functions(text) if f.is_kernel] if "__global__" in text else []


def _copies(project: Project, observed: Observed) -> list[str]:
    """Where the build's template copies a binary other than one the observed build linked (a make
    target's name taken for its binary, or a script's none), the note saying which binary it copies
    now; the template changed to copy it."""
    made = [exe for exe, _ in observed.linked]
    m = COPY.search(project.build)
    if not made or not project.build.endswith("'") or (m and posixpath.normpath(m.group(1)) in made):
        return []
    chosen = made[-1]
    if not SAFE_PATH.fullmatch(chosen):
        return [f"the observed build links {chosen}, a name that needs quoting: copy it to {{exe}} in app.build"]
    kept = project.build[:m.start()] + "'" if m else project.build
    project.build = kept[:-1] + f" && cp {chosen} {{exe}}'"
    project.notes = [n.replace("; check the name of the binary it makes", f", which makes {chosen}")
                     for n in project.notes]
    others = [x for x in dict.fromkeys(made) if x != chosen]
    return [f"the observed build links {chosen} (from {', '.join(observed.linked[-1][1][:6])}), copied to {{exe}}"
            + (f"; it also links {', '.join(others[:6])}" if others else "")]


def learned(project: Project, observed: Observed, root: Path) -> None:
    """What the observed build changes in what init writes of `project` (its folder `root`): the
    binary the build copies, and the program's sources and size constants where the build compiles
    other files than the text reading found (a folder's other programs' kernels, files it never reads)."""
    if not observed.ok:
        if project.build_kind == "script":
            project.notes.append("the binary the script makes is not known (its build failed when observed): add "
                                 "`&& cp <the binary> {exe}` to app.build")
        return
    if not observed.calls:
        project.notes.append(f"the observed build ({observed.command}) ran no nvcc that Optimas's shim saw (an nvcc "
                             "named by its full path is not wrapped): nothing was learned of what it compiles")
        return
    project.notes += _copies(project, observed)
    compiled = set(observed.sources()) | set(observed.files or [])
    found = {f: k for f in sorted(compiled) if f.endswith(CUDA_SUFFIXES) and (k := _defines_kernel(root / f))}
    if not found or set(found) == set(project.kernel_files):
        return
    files = [f for f in project.kernel_files if f in found] + [f for f in found if f not in project.kernel_files]
    left = [f for f in project.kernel_files if f not in found]
    project.notes.append(f"the observed build compiles the kernels of {', '.join(files)}: the program's sources"
                         + (f"; it never reads {', '.join(left[:6])}, whose kernels are left out" if left else ""))
    project.kernel_files = files
    project.kernels = list(dict.fromkeys(k for f in files for k in found[f]))
    if observed.files is not None:
        project.size_constants = [c for c in project.size_constants if c.file in compiled]

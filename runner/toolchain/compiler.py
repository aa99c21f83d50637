"""nvcc as a tool: build a candidate, and read ptxas's resource report as compiler evidence (K*)."""

from __future__ import annotations

import json
import os
import posixpath
import re
import shlex
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

from pydantic import BaseModel, Field

from runner.base.config import LoadedConfig
from runner.base.errors import OptimasError
from runner.base.processes import render, run_process
from runner.base.sandbox import scratch
from runner.base.workspace import read_capped
from runner.toolchain.compat_record import CompatRecord
from runner.toolchain.nvcc_shim import (
    COMPAT_RECORD,
    COMPATS,
    DIALECT_OPTION,
    NVCC_RECORD,
    PTXAS_REPORT,
    build_environment,
)


class KernelResources(BaseModel):
    """What ptxas reports for one kernel."""

    kernel: str  # function name as demangled by ptxas (c++filt-style), or mangled if it could not be
    registers: int
    mangled: str | None = None  # its symbol, which names the same instance whoever demangles it
    shared_bytes: int = 0
    stack_bytes: int = 0
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0


class CompiledMacros(BaseModel):
    """The macros as a build compiled its sources (nvcc -E -Xcompiler -dM with the build's flags)."""

    by_source: dict[str, dict[str, str]] = {}  # source (relative to the workdir) -> macro -> its definition
    command_line: list[str] = []  # the names the build defined on nvcc's command line (-D)


class CompileResult(BaseModel):
    ok: bool
    command: list[str]
    output: str  # compiler messages, trimmed
    resources: list[KernelResources] = []
    macros: CompiledMacros = CompiledMacros()
    # the compatibility headers pre-included (app.legacy_cuda), sources and cwd relative to the build's folder
    compat: list[CompatRecord] = []
    cached: bool = Field(default=False, exclude=True)  # taken from a build cache, not compiled now
    # with `dependencies`: every file of the workspace the build compiled or included (relative to
    # the workspace's root; nvcc -MM of each source it compiled); None when that could not be told
    files: list[str] | None = None


_ENTRY = re.compile(r"ptxas info\s*: Compiling entry function '([^']+)'")
_PROPS = re.compile(r"ptxas info\s*: Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"ptxas info\s*: Used (\d+) registers(?:.*?(\d+) bytes smem)?")


def demangle(names: list[str]) -> dict[str, str]:
    """Mangled -> demangled through c++filt when present (names stay as they are otherwise)."""
    exe = shutil.which("cu++filt") or shutil.which("c++filt")
    if not exe or not names:
        return {n: n for n in names}
    r = run_process([exe], timeout_s=30, stdin="\n".join(names), merge_stderr=False, what="demangling kernel names")
    out = r.output.splitlines()
    return {n: (out[i] if i < len(out) and r.returncode == 0 else n) for i, n in enumerate(names)}


def parse_ptxas(output: str) -> list[KernelResources]:
    """Per-kernel resources from `nvcc -Xptxas -v` output (entry functions only)."""
    entries: dict[str, dict] = {}
    current: str | None = None
    entry_names: set[str] = set()
    for line in output.splitlines():
        if m := _ENTRY.search(line):
            entry_names.add(m.group(1))
            current = m.group(1)
            entries.setdefault(current, {})
        elif m := _PROPS.search(line):
            current = m.group(1)
            entries.setdefault(current, {})
        elif current and (m := _FRAME.search(line)):
            entries[current].update(stack=int(m.group(1)), spill_st=int(m.group(2)), spill_ld=int(m.group(3)))
        elif current and (m := _USED.search(line)):
            entries[current].update(regs=int(m.group(1)), smem=int(m.group(2) or 0))
    names = demangle(sorted(n for n in entries if n in entry_names))
    out = []
    for mangled in sorted(entry_names):
        e = entries.get(mangled, {})
        if "regs" not in e:
            continue
        out.append(KernelResources(kernel=names.get(mangled, mangled), mangled=mangled, registers=e["regs"],
                                   shared_bytes=e.get("smem", 0), stack_bytes=e.get("stack", 0),
                                   spill_store_bytes=e.get("spill_st", 0), spill_load_bytes=e.get("spill_ld", 0)))
    return out


@dataclass(frozen=True)
class BuildOptions:
    """What a build reports besides its binary, and how long it may take.

    verbose: ptxas's per-kernel resources are reported and parsed: `-Xptxas -v` is added to an nvcc
        command, and for any other build (make, cmake, a script) the nvcc shim adds it to every
        nvcc the build runs.
    macros: each source nvcc compiled is preprocessed again with the flags the build gave it
        (`nvcc -E -Xcompiler -dM`), for the macros in effect (CompileResult.macros).
    dependencies: the workspace files the build compiled or included are listed (CompileResult.files).
    timeout_s: the build's time limit (None: app.timeout_s).
    """

    verbose: bool = True
    macros: bool = False
    dependencies: bool = False
    timeout_s: float | None = None


DEFAULT_BUILD = BuildOptions()  # ptxas's resources reported, nothing else, within app.timeout_s


def build(lc: LoadedConfig, workdir: Path, arch: str, exe: Path | None = None, options: BuildOptions = DEFAULT_BUILD,
          configuration: str | None = None) -> CompileResult:
    """Build the app in `workdir` with its build command (timing build, no -lineinfo), reporting
    what `options` asks for (default: ptxas's resources). An app.build that depends
    on the configuration ({config}, its values) is rendered for `configuration` (default: the
    profiled one).
    """
    verbose, macros, dependencies = options.verbose, options.macros, options.dependencies
    app = lc.config.app
    if not app.build:
        raise OptimasError(f"{lc.path}: app.build is not set; the compiler stage needs the build command")
    with scratch("optimas-build-") as tmp:
        target = exe or Path(tmp) / "app"
        build_for = app.build_configuration(configuration)
        argv = render(app.build, exe=target, arch=arch, lineinfo="", config=build_for or "", seed=app.seeds[0], scale=1,
                      out="", **(app.values(build_for) if build_for else {}))
        if not shutil.which(argv[0]):
            raise OptimasError(f"the build command's compiler {argv[0]!r} (app.build) is not installed or not on PATH")
        is_nvcc = "nvcc" in Path(argv[0]).name
        env = build_environment(app.env, lc.config.profiling.nvcc, compat=app.legacy_cuda)
        compat_record = Path(tmp) / "compat.jsonl"
        env[COMPAT_RECORD] = str(compat_record)
        if verbose:
            argv = _report_resources(argv, env, is_nvcc)
        record = Path(tmp) / "nvcc-calls.jsonl"
        if macros or dependencies:
            env[NVCC_RECORD] = str(record)
        limit = options.timeout_s or app.timeout_s
        copy = _copy_root(*lc.dirs, workdir)
        r = run_process(argv, workdir, limit, env=env, what="the build (app.build)")
        if r.timed_out:
            return CompileResult(ok=False, command=argv,
                                 output=f"the build timed out after {limit:g} s and was killed")
        calls = read_calls(record) or ([{"cwd": str(workdir), "args": argv[1:], "append": ""}] if is_nvcc else [])
        ok, nvcc = r.returncode == 0, lc.config.profiling.nvcc
        found = compiled_macros(calls, workdir, nvcc, env) if macros and ok else CompiledMacros()
        compat = read_compat(compat_record)
        files = compiled_files(calls, copy or workdir, nvcc, env) if dependencies and ok else None
    text = r.output
    messages = "\n".join(ln for ln in text.splitlines() if "ptxas info" not in ln and not _FRAME.search(ln))
    return CompileResult(ok=r.returncode == 0, command=argv, output=messages.strip()[-8000:],
                         resources=parse_ptxas(text) if verbose else [], macros=found, files=files,
                         compat=[replace(c, cwd=_relative(c.cwd, workdir),
                                         sources=tuple(_source_in(s, workdir, copy) for s in c.sources))
                                 for c in compat])


def _report_resources(argv: list[str], env: dict[str, str], is_nvcc: bool) -> list[str]:
    """The build's command with ptxas's per-kernel report asked for: `-Xptxas -v` on an nvcc command;
    for make, cmake or a script, the nvcc shim adds it to each nvcc the build runs (and
    NVCC_APPEND_FLAGS reaches an nvcc named by its full path, unless the build sets it itself)."""
    if is_nvcc:
        return [*argv, "-Xptxas", "-v"]
    env[PTXAS_REPORT] = "1"
    env["NVCC_APPEND_FLAGS"] = f"{env.get('NVCC_APPEND_FLAGS', '')} -Xptxas -v".strip()
    return argv


MAX_SOURCE_CHARS = 4096  # a recorded source name longer than this is not a path of the build's
MAX_RECORD_SOURCES = 256  # sources of one nvcc call in a compat record, at most


def _copy_root(space: Path, program: Path, workdir: Path) -> Path | None:
    """The root of the workspace copy `workdir` is in (the program's folder `program` is as deep
    below the workspace `space`, LoadedConfig.dirs), read before the build runs: the build can
    rewrite the checkout's links; None when it cannot be told."""
    try:
        depth = len(program.resolve().relative_to(space.resolve()).parts)
        here = workdir.resolve()
        return here.parents[depth - 1] if depth else here
    except (OSError, ValueError, IndexError, RuntimeError):
        return None


def _source_in(source: str, workdir: Path, copy: Path | None) -> str:
    """A source the shim recorded, as a path relative to the build's folder when it is in the
    build's copy of the workspace (CMake names sources by absolute path, in a temporary copy that
    means nothing on the pull request); as recorded otherwise. By its text only: the build writes
    the record, and resolving a crafted path (links, thousands of '..') on the worker took time
    and told which of the host's paths exist (an attacker's pass)."""
    if copy is None or len(source) > MAX_SOURCE_CHARS or not os.path.isabs(source):
        return source
    path = os.path.normpath(source)
    root = os.path.normpath(copy)
    return os.path.relpath(path, os.path.normpath(workdir)) if path.startswith(root + os.sep) else source


def _relative(folder: str, workdir: Path) -> str:
    """A folder of the build as a path relative to the build's folder ('.' for it)."""
    try:
        return Path(folder).relative_to(workdir).as_posix()
    except ValueError:
        return folder


def read_compat(path: Path) -> list[CompatRecord]:
    """The compatibility headers the shim pre-included, as the records it wrote (lines that are not
    such a record are skipped), each once: the same source compiled again (its preprocessing for the
    macros in effect) records the same header again; a source compiled as C++17 (the dialect) is
    recorded the same way. The build can write the file too: a record whose header is not one of
    COMPATS (or the dialect), or whose names are not that header's, is skipped (its text reaches the
    pull request)."""
    known = {c.header.name: set(c.names) for c in COMPATS}
    out: list[CompatRecord] = []
    seen: set[tuple[str, tuple[str, ...], str]] = set()
    for record in filter(None, map(CompatRecord.from_json, read_records(path))):
        if len(record.sources) > MAX_RECORD_SOURCES or any(len(x) > MAX_SOURCE_CHARS for x in record.sources):
            continue  # not what the shim writes: one compilation's sources, each a path
        names_ok = bool(record.names) and (
            all(DIALECT_OPTION.fullmatch(n) for n in record.names) if record.is_dialect
            else record.header in known and set(record.names) <= known[record.header])
        key = (record.header, record.sources, record.cwd)
        if names_ok and key not in seen:
            seen.add(key)
            out.append(record)
    return out


MAX_PREPROCESSED = 16  # sources preprocessed again for their macros, at most
RECORDS_LIMIT = 64 << 20  # bytes of a record file of the shim's read at most (the build could write it)
SOURCE_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c")
# nvcc options that change what the preprocessor sees (their value the next argument, or after "=")
_PREPROCESSOR_OPTIONS = frozenset({"-D", "-U", "-I", "-isystem", "-include", "--pre-include", "--define-macro",
                                   "--undefine-macro", "--include-path", "--system-include", "-std", "--std", "-arch",
                                   "--gpu-architecture", "-ccbin", "--compiler-bindir", "-x", "--x", "-Xcompiler",
                                   "--compiler-options"})
# options whose value is the next argument and not wanted here (outputs, code generation, ...)
_VALUE_OPTIONS = {"-o", "--output-file", "-gencode", "--generate-code", "-code", "--gpu-code", "-Xptxas",
                  "--ptxas-options", "-Xlinker", "--linker-options", "-l", "-L", "-MF", "-MT", "-MQ", "-odir",
                  "--output-directory", "-maxrregcount", "--maxrregcount", "-rdc", "--relocatable-device-code"}


def read_calls(path: Path) -> list[dict]:
    """The nvcc calls the shim recorded (lines that are not such a record are skipped)."""
    return read_records(path, args=list, cwd=str)


def read_records(path: Path, **fields: type) -> list[dict]:
    """The JSON-object lines of a record file the shim appends to that hold each of `fields` with
    its type; none when the file is missing (nothing was recorded)."""
    try:
        lines = read_capped(path, RECORDS_LIMIT, "the nvcc shim's records").decode("utf-8", "replace").splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict) and all(isinstance(item.get(k), t) for k, t in fields.items()):
            out.append(item)
    return out


def preprocessor_args(args: list[str]) -> tuple[list[str], list[str]]:
    """(the options of an nvcc call that change what its preprocessor sees, the sources it compiles)."""
    flags: list[str] = []
    sources: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        name = a.split("=", 1)[0]
        if a in _PREPROCESSOR_OPTIONS and i + 1 < len(args):
            flags += [a, args[i + 1]]
            i += 2
            continue
        if a in _VALUE_OPTIONS:
            i += 2
            continue
        if name in _PREPROCESSOR_OPTIONS or any(a.startswith(o) and len(a) > len(o) for o in ("-D", "-U", "-I")):
            flags.append(a)
        elif not a.startswith("-") and a.endswith(SOURCE_SUFFIXES):
            sources.append(a)
        i += 1
    return flags, sources


_MACRO = re.compile(r"^#define (\w+)(\([^)]*\))?(?: (.*))?$")


def compiled_macros(calls: list[dict], workdir: Path, nvcc: str, env: dict[str, str]) -> CompiledMacros:
    """Per source compiled (named relative to `workdir`): each macro as that compilation defines it
    (`NAME` -> `value`, `NAME(a, b)` -> `NAME(a, b) body`), from `nvcc -E -Xcompiler -dM`."""
    out: dict[str, dict[str, str]] = {}
    given: dict[str, None] = {}  # ordered, without repeats
    for call in calls:
        cwd = Path(call["cwd"])
        flags, sources = preprocessor_args([str(a) for a in call["args"]])
        appended, _ = preprocessor_args(shlex.split(str(call.get("append") or "")))
        given.update(dict.fromkeys(command_line_macros([*flags, *appended])))
        for src in sources:
            rel = posixpath.normpath(os.path.relpath(cwd / src, workdir))
            if rel in out or len(out) >= MAX_PREPROCESSED or rel.startswith(".."):
                continue
            r = run_process([nvcc, "-E", "-Xcompiler", "-dM", *flags, *appended, src], cwd, 120, env=env,
                            merge_stderr=False, what=f"nvcc -E -dM {src}")
            if r.returncode != 0:
                continue
            defined = {}
            for line in r.output.splitlines():
                if m := _MACRO.match(line):
                    name, params, body = m.group(1), m.group(2), m.group(3) or ""
                    defined[name] = f"{name}{params} {body}".strip() if params else body
            out[rel] = defined
    return CompiledMacros(by_source=out, command_line=list(given) if out else [])


MAX_DEPENDENCY_SOURCES = 512  # sources a build compiled whose dependencies are asked; more: not told


def compiled_files(calls: list[dict], root: Path, nvcc: str, env: dict[str, str]) -> list[str] | None:
    """The files under `root` (the workspace copy) that the recorded nvcc calls compiled or included,
    relative to it, from `nvcc -MM` with each call's preprocessor flags; None when a source's
    dependencies could not be told (its -MM failed, or too many sources)."""
    out: dict[str, None] = {}
    top = Path(os.path.normpath(root))
    asked = 0
    for call in calls:
        cwd = Path(call["cwd"])
        flags, sources = preprocessor_args([str(a) for a in call["args"]])
        appended, _ = preprocessor_args(shlex.split(str(call.get("append") or "")))
        for src in sources:
            asked += 1
            if asked > MAX_DEPENDENCY_SOURCES:
                return None
            r = run_process([nvcc, "-MM", *flags, *appended, src], cwd, 120, env=env, merge_stderr=False,
                            what=f"nvcc -MM {src}")
            if r.returncode != 0:
                return None
            # make's rule syntax: `target.o : source header ...`, lines continued with a backslash
            _, _, needed = r.output.replace("\\\n", " ").partition(":")
            for word in [src, *needed.split()]:
                path = Path(os.path.normpath(cwd / word))
                if path == top or top in path.parents:
                    out[path.relative_to(top).as_posix()] = None
    return list(out)


def command_line_macros(flags: list[str]) -> list[str]:
    """The macro names `-D NAME[=value]` (and --define-macro) options define."""
    names = []
    for i, a in enumerate(flags):
        value = None
        if a in ("-D", "--define-macro") and i + 1 < len(flags):
            value = flags[i + 1]
        elif a.startswith("--define-macro="):
            value = a.split("=", 1)[1]
        elif a.startswith("-D") and len(a) > 2:
            value = a[2:]
        if value:
            names.append(re.split(r"[=(]", value, maxsplit=1)[0])
    return names

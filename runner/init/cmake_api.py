"""What a CMake project builds, asked of CMake itself: its File API (the codemodel-v2 object kind).

CMake answers a query file placed in a build folder's `.cmake/api/v1/query/` with JSON replies
written at configure time: every target of every directory, its type, the artifact it makes (path
relative to the build folder), its sources with their language and compile group (defines, include
folders), and the targets it depends on. A CMakeLists.txt's text cannot tell this reliably (a
target named `${VAR}-bench` from a cache variable, an OUTPUT_NAME, a library made in one folder and
linked by an executable in another); the configure step can.

Configuring runs the project's CMake code (and CMake's compiler checks, which compile small test
programs with nvcc): init does it in a temporary build folder, with a time limit, and reads the
replies. A project that does not configure (a required variable unset, a package missing) gets its
CMake error back, so that init can fall back to reading the text and say so.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from runner.base.errors import OptimasError
from runner.base.processes import run_process
from runner.base.progress import progress_for

progress = progress_for("init")

CONFIGURE_TIMEOUT_S = 300.0
REPLY_LIMIT = 64 << 20  # bytes of one reply file read (a project of thousands of targets stays far below)


@dataclass(frozen=True)
class CMakeTarget:
    """One target of the codemodel, as init needs it."""

    name: str
    kind: str  # EXECUTABLE, STATIC_LIBRARY, SHARED_LIBRARY, OBJECT_LIBRARY, UTILITY, ...
    folder: str  # the source folder whose CMakeLists.txt defines it, relative to the top ("." for the top)
    artifact: str | None  # what it makes, relative to the build folder (None for a target that makes nothing)
    sources: tuple[str, ...]  # relative to the project's top, generated files left out
    cuda_sources: tuple[str, ...]  # those compiled as CUDA
    dependencies: tuple[str, ...] = ()  # ids of the targets it depends on
    id: str = ""


@dataclass
class CodeModel:
    """A configured project's targets, by id."""

    source: Path
    targets: dict[str, CMakeTarget] = field(default_factory=dict)
    # compile_commands.json's entries where the configure step exported them
    # (CMAKE_EXPORT_COMPILE_COMMANDS; Makefile and Ninja generators): directory, file, command, output
    compile_commands: list[dict] = field(default_factory=list)

    def linked_targets(self, target: CMakeTarget) -> list[CMakeTarget]:
        """A target and every target it depends on, transitively (itself first)."""
        seen: set[str] = set()
        todo, out = [target.id], []
        while todo:
            t = self.targets.get(todo.pop())
            if t is None or t.id in seen:
                continue
            seen.add(t.id)
            out.append(t)
            todo += list(t.dependencies)
        return out

    def linked_cuda_sources(self, target: CMakeTarget) -> list[str]:
        """The CUDA sources of a target and of every target it depends on, transitively."""
        return list(dict.fromkeys(s for t in self.linked_targets(target) for s in t.cuda_sources))

    def programs(self) -> list[CMakeTarget]:
        """The executables that compile or link CUDA code, in the order CMake lists them."""
        return [t for t in self.targets.values() if t.kind == "EXECUTABLE" and self.linked_cuda_sources(t)]


class CMakeUnavailable(OptimasError):
    """CMake could not be asked: not installed, or the project did not configure (the message says
    which, with the end of CMake's output)."""


def configure(source: Path, defines: dict[str, str] | None = None, timeout_s: float = CONFIGURE_TIMEOUT_S) -> CodeModel:
    """The codemodel of the CMake project at `source`, configured in a temporary build folder (with
    `-D` `defines`). CMakeUnavailable when CMake is missing or the configure step fails."""
    cmake = shutil.which("cmake")
    if cmake is None:
        raise CMakeUnavailable("cmake is not installed")
    build = Path(tempfile.mkdtemp(prefix="optimas-cmake-"))
    try:
        query = build / ".cmake" / "api" / "v1" / "query"
        query.mkdir(parents=True)
        (query / "codemodel-v2").touch()
        argv = [cmake, "-S", str(source), "-B", str(build), *(f"-D{k}={v}" for k, v in (defines or {}).items())]
        progress(f"asking CMake what {source.name or source} builds (configuring in a temporary folder, at most "
                 f"{timeout_s:g} s)")
        r = run_process(argv, timeout_s=timeout_s, what="cmake")
        if r.timed_out or r.returncode != 0:
            why = "did not finish within {:g} s".format(timeout_s) if r.timed_out else _cmake_error(r.output)
            raise CMakeUnavailable(f"cmake did not configure {source}: {why}")
        try:
            model = read_codemodel(build, source)
            model.compile_commands = _compile_commands(build)
        except (OSError, ValueError, KeyError, IndexError, TypeError) as e:
            raise CMakeUnavailable(f"CMake's File API reply for {source} could not be read ({e})") from None
        return model
    finally:
        shutil.rmtree(build, ignore_errors=True)


def _compile_commands(build: Path) -> list[dict]:
    """The entries of compile_commands.json in the build folder (none when it was not exported)."""
    path = build / "compile_commands.json"
    if not path.is_file() or path.stat().st_size > REPLY_LIMIT:
        return []
    data = json.loads(path.read_text(encoding="utf-8"))
    return [e for e in data if isinstance(e, dict) and isinstance(e.get("file"), str)] if isinstance(data, list) else []


def _cmake_error(output: str) -> str:
    """The first CMake error of a failed configure, in a line or two."""
    lines = output.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("CMake Error")), None)
    if start is None:
        return " ".join(lines[-3:])[-400:] or "no output"
    text = " ".join(s.strip() for s in lines[start:start + 6] if s.strip())
    return text[:400]


def _read_json(path: Path) -> dict:
    if path.stat().st_size > REPLY_LIMIT:
        raise CMakeUnavailable(f"{path.name}: a CMake reply of over {REPLY_LIMIT} bytes")
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise CMakeUnavailable(f"{path.name}: not a JSON object")
    return data


def read_codemodel(build: Path, source: Path) -> CodeModel:
    """The codemodel CMake wrote into `build` (the newest index's codemodel-v2 reply), with paths
    relative to the project's top `source`."""
    reply = build / ".cmake" / "api" / "v1" / "reply"
    indexes = sorted(reply.glob("index-*.json"))
    if not indexes:
        raise CMakeUnavailable("CMake wrote no File API reply (CMake 3.14 or later answers the codemodel query)")
    index = _read_json(indexes[-1])
    entry = next((o for o in index.get("objects", []) if o.get("kind") == "codemodel"), None)
    if entry is None:
        raise CMakeUnavailable("CMake's reply holds no codemodel")
    codemodel = _read_json(reply / entry["jsonFile"])
    configurations = codemodel.get("configurations") or [{}]
    top = Path(codemodel.get("paths", {}).get("source") or source).resolve()
    model = CodeModel(source=top)
    directories = configurations[0].get("directories", [])
    for ref in configurations[0].get("targets", []):
        target = _read_json(reply / ref["jsonFile"])
        folder = directories[ref["directoryIndex"]].get("source", ".") if "directoryIndex" in ref else "."
        model.targets[target["id"]] = _target(target, folder, top)
    return model


def _relative(path: str, top: Path) -> str:
    p = Path(path)
    if not p.is_absolute():
        return p.as_posix()
    try:
        return p.resolve().relative_to(top).as_posix()
    except ValueError:
        return p.as_posix()  # outside the project (a generated file in the build folder, a system path)


def _target(data: dict, folder: str, top: Path) -> CMakeTarget:
    """One target's reply as a CMakeTarget."""
    groups = data.get("compileGroups", [])
    sources, cuda = [], []
    for s in data.get("sources", []):
        if s.get("isGenerated"):
            continue
        path = _relative(s["path"], top)
        sources.append(path)
        group = s.get("compileGroupIndex")
        if group is not None and group < len(groups) and groups[group].get("language") == "CUDA":
            cuda.append(path)
    artifacts = data.get("artifacts") or []
    return CMakeTarget(name=data["name"], kind=data.get("type", ""), folder=folder,
                       artifact=artifacts[0]["path"] if artifacts else None, sources=tuple(sources),
                       cuda_sources=tuple(cuda), dependencies=tuple(d["id"] for d in data.get("dependencies", [])),
                       id=data["id"])


def choose_program(model: CodeModel, kernel_files: list[str]) -> tuple[CMakeTarget, list[CMakeTarget]] | None:
    """The program that compiles or links the most of `kernel_files` (paths relative to the
    project's top; ties to one of the top folder, then to the one CMake lists first), and all
    programs; None when the project has no executable with CUDA code."""
    programs = model.programs()
    if not programs:
        return None
    wanted = set(kernel_files)
    # most kernel files first, then a target of the top folder, then CMake's order
    best = max(programs, key=lambda t: (len(wanted & set(model.linked_cuda_sources(t))), t.folder == "."))
    return best, programs


def describe_programs(model: CodeModel, programs: list[CMakeTarget], shown: int = 12) -> str:
    """The programs in one line: each target, what it makes and its CUDA sources."""
    parts = []
    for t in programs[:shown]:
        cuda = model.linked_cuda_sources(t)
        parts.append(f"{t.name} -> {t.artifact or '?'} ({', '.join(cuda[:3])}{' ...' if len(cuda) > 3 else ''})")
    if len(programs) > shown:
        parts.append(f"and {len(programs) - shown} more")
    return "; ".join(parts)

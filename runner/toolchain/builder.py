"""Builds through a copy of the workspace, cached: the same workspace contents, command, architecture,
environment and compiler are built once (the binary kept for the next caller that asks)."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from runner.base.config import LoadedConfig
from runner.base.errors import OptimasError
from runner.base.processes import size_share
from runner.base.runstore import atomic_write_text
from runner.base.sandbox import scratch
from runner.base.workspace import build_compiler, source_bytes, write_source
from runner.scan.size_constants import scaled_sources
from runner.toolchain.compiler import BuildOptions, CompileResult, build
from runner.toolchain.nvcc_shim import SHIM_VERSION

# Left out of every copy: version control, run folders (a runs_dir inside the workspace), caches and
# old outputs.
COPY_IGNORED = shutil.ignore_patterns(".git", "runs", "__pycache__", "*.out")


def _left_out(folder: str, names: list[str]) -> set[str]:
    """What a workspace copy leaves out of `folder`: COPY_IGNORED, and links whose target is gone
    (data never pulled, a path on the author's machine), which the build cannot have read
    (copytree's ignore_dangling_symlinks looks for a relative link's target from the current
    folder, not the link's, and drops valid links too)."""
    dangling = {n for n in names if os.path.islink(os.path.join(folder, n))
                and not os.path.exists(os.path.join(folder, n))}
    return set(COPY_IGNORED(folder, names)) | dangling


# What one copy of a workspace may hold: a repository's links or files could make it endless or fill
# the disk (two committed links `a -> .`, `b -> .` made 2^40 paths; an attacker's pass).
MAX_COPY_FILES = 100_000
MAX_COPY_BYTES = 4 << 30


class WorkspaceCopyError(OptimasError):
    """A workspace too large to copy for a build."""

    exit_code = 2


def _links_kept(held: list[str], folder: str, names: list[str], followed: set[str]) -> set[str]:
    """The names in `folder` that a copy keeps as links rather than copying what they lead to:
    links to a folder inside what the copy holds (`held`: the workspace, or the parts of it
    app.workspace_paths names; a relative link finds it there), to a folder holding one of those,
    or to one the copy has followed a link to already (a loop, or links from folder to folder
    outside making 2^k paths; an attacker's pass). Links to files are copied as files; the folders
    followed now are added to `followed`."""
    kept = set()
    for n in names:
        path = os.path.join(folder, n)
        if not os.path.islink(path) or not os.path.isdir(path):
            continue
        target = os.path.realpath(path)
        if target in followed or any(target == h or target.startswith(h + os.sep) or h.startswith(target + os.sep)
                                     for h in held):
            kept.add(n)
        followed.add(target)
    return kept


def copy_workspace(lc: LoadedConfig, dest: Path, files: dict[str, str] | None = None) -> Path:
    """Copy the app's workspace (the parts of it LoadedConfig.parts names) to `dest` (which must not
    exist), with `files` (names relative to app.workdir) written over the copy's; returns the
    copy's workdir. Builds run in such a copy, never in the user's folder (a `make -B` there would
    leave objects built by the nvcc shim). Links to files are copied as files; links to folders stay
    links where _links_kept says; a copy of more than MAX_COPY_FILES files or MAX_COPY_BYTES bytes
    stops with WorkspaceCopyError."""
    space, workdir = lc.dirs
    parts = lc.parts
    held = [str(q) for q in parts]
    target = dest.resolve()
    root = space.resolve()
    links: list[tuple[str, Path]] = []
    counted = [0, 0]

    followed: set[str] = set()

    def ignored(folder: str, names: list[str]) -> set[str]:
        # a copy made inside the workspace (a run folder there) must not copy itself
        inside = {n for n in names if (Path(folder) / n).resolve() in (target, *target.parents)}
        kept = _links_kept(held, folder, names, followed)
        counted[0] += len(names)
        if counted[0] > MAX_COPY_FILES:
            raise WorkspaceCopyError(f"app.workspace {space}: more than {MAX_COPY_FILES} files and folders to copy "
                                     "for a build (links followed); set app.workspace to the folder the build reads, "
                                     "or app.workspace_paths to the parts of it that it reads")
        links.extend((os.readlink(os.path.join(folder, n)), dest / os.path.relpath(os.path.join(folder, n), root))
                     for n in kept)
        return _left_out(folder, names) | inside | kept

    def copy(src: str, dst: str) -> str:
        counted[1] += os.stat(src).st_size
        if counted[0] > MAX_COPY_FILES or counted[1] > MAX_COPY_BYTES:
            raise WorkspaceCopyError(f"app.workspace {space}: more than {MAX_COPY_FILES} files or "
                                     f"{MAX_COPY_BYTES >> 30} GiB to copy for a build (links followed); set "
                                     "app.workspace to the folder the build reads, or app.workspace_paths to the "
                                     "parts of it that it reads")
        return shutil.copy2(src, dst)

    dest.mkdir(parents=True)
    for part in parts:
        at = dest / part.relative_to(root)
        if part.is_dir():
            shutil.copytree(part, at, ignore=ignored, copy_function=copy, dirs_exist_ok=True)
        else:  # a file app.workspace_paths names
            at.parent.mkdir(parents=True, exist_ok=True)
            copy(str(part), str(at))
    for link, at in links:
        at.symlink_to(link)
    cwd = dest / workdir.relative_to(space)
    for name, text in (files or {}).items():
        write_source(cwd / name, text)
    return cwd


@dataclass(frozen=True)
class Builder:
    """What every build of one run shares: the config (its workspace and build command), the target
    architecture and the build cache (None: none), each resolved once where the run starts (the
    run's context) and used as given: a build of the same workspace contents, command, architecture,
    environment and compiler is done once, its binary kept for the next caller that asks for one."""

    lc: LoadedConfig
    arch: str
    cache: Path | None = None

    def compile(self, files: dict[str, str], log: Path | None = None, exe: Path | None = None, macros: bool = False,
                configuration: str | None = None) -> CompileResult:
        """Build the app with `files` (names relative to workdir) in a copy of its workspace; with
        `exe`, the binary is kept there. With `macros`, the result holds the macros each source was
        compiled with (CompileResult.macros). A build that depends on the configuration is for
        `configuration` (default: the profiled one), cached per configuration."""
        built_for = self.lc.config.app.build_configuration(configuration)
        # the key is the workspace's contents with `files` over them: a build found in the cache needs no copy
        entry = Path(self.cache) / _build_key(self, files, macros, built_for) if self.cache else None
        result = _cached(entry, exe)
        if result is None:
            with _building(entry):
                result = _cached(entry, exe)  # built meanwhile by the caller that held the lock
                if result is None:
                    result = self._build(files, entry, exe, macros, built_for)
        if log:
            log.write_text("$ " + " ".join(result.command) + "\n" + result.output + "\n")
        return result

    def _build(self, files: dict[str, str], entry: Path | None, exe: Path | None, macros: bool,
               built_for: str | None) -> CompileResult:
        """The build itself, in a fresh copy of the workspace, stored as cache `entry` (None: no cache)."""
        with scratch("optimas-candidate-") as tmp:
            cwd = copy_workspace(self.lc, Path(tmp) / "ws", files)
            target = exe if exe is not None or entry is None else Path(tmp) / "app.bin"
            result = build(self.lc, cwd, self.arch, exe=target, options=BuildOptions(macros=macros),
                           configuration=built_for)
            if entry is not None:
                _store(entry, result, target)
        return result

    @cached_property
    def compiler(self) -> str | None:
        """The program app.build starts (its first word; None without app.build), once per builder."""
        return build_compiler(self.lc)

    def at_scale(self, texts: dict[str, str], scale: float, exe: Path, log: Path | None = None,
                 configuration: str | None = None) -> CompileResult:
        """The program with app.size_constants times `scale` (each of k constants times the scale's
        k-th root, size_share, so the work follows the scale; scaled_sources over `texts`, the
        workspace's sources as workspace_texts reads them), built into `exe` in a copy of the
        workspace through the build cache: the counter runs' build at another problem size. A
        ValueError when a constant has no definition to rewrite (definition_problem)."""
        app = self.lc.config.app
        files = scaled_sources(app.size_constants, texts, size_share(scale, len(app.size_constants)), app.sources)
        return self.compile(files, log, exe=exe, configuration=configuration)


def default_build_cache() -> Path | None:
    """The build cache of a build outside a run (init, check-config, a benchmark): OPTIMAS_BUILD_CACHE
    where set, else none. A run's context resolves its own (RunContext.build_cache)."""
    where = os.environ.get("OPTIMAS_BUILD_CACHE")
    return Path(where) if where else None


def compile_candidate(lc: LoadedConfig, files: dict[str, str], arch: str, log: Path | None = None,
                      exe: Path | None = None, cache: Path | None = None) -> CompileResult:
    """Builder.compile for `arch` through `cache` (None: default_build_cache), with no macros and
    for the profiled configuration: a build outside a run's stages."""
    return Builder(lc, arch, cache if cache is not None else default_build_cache()).compile(files, log, exe=exe)


def build_at_scale(lc: LoadedConfig, arch: str, texts: dict[str, str], scale: float, exe: Path,
                   log: Path | None = None) -> CompileResult:
    """Builder.at_scale for `arch` through default_build_cache: a build at a scale outside a run."""
    return Builder(lc, arch, default_build_cache()).at_scale(texts, scale, exe, log)


def _build_key(builder: Builder, files: dict[str, str], macros: bool = False, configuration: str | None = None) -> str:
    """What a build depends on: every file a workspace copy would hold (the workspace's, `files`
    over them), the build command, the architecture, the declared environment, the command's first
    word and nvcc (each one's path, size and time: a make or sh build runs nvcc unnamed) and the
    nvcc shim's version."""
    lc, arch = builder.lc, builder.arch
    space, workdir = lc.dirs
    h = hashlib.sha256()
    tools = []
    for name in (builder.compiler or "", lc.config.profiling.nvcc):
        path = shutil.which(name) or ""
        stat = os.stat(path) if path else None
        tools += [path, stat.st_size if stat else None, stat.st_mtime_ns if stat else None]
    values = lc.config.app.values(configuration) if configuration else {}
    h.update(json.dumps([lc.config.app.build, arch, str(workdir.relative_to(space)), sorted(lc.config.app.env.items()),
                         *tools, SHIM_VERSION, macros, configuration, sorted(values.items()),
                         lc.config.app.legacy_cuda]).encode())
    for rel, read in sorted(_copied_files(space, workdir, lc.parts, files).items()):
        h.update(rel.encode() + b"\0")
        h.update(hashlib.sha256(read()).digest())
    return h.hexdigest()


def _copied_files(space: Path, workdir: Path, parts: list[Path], files: dict[str, str]
                  ) -> dict[str, Callable[[], bytes]]:
    """The files copy_workspace would write of the workspace `space` (its `parts`, LoadedConfig.parts,
    with `files`, named relative to `workdir`, over them), by path relative to the copy, each with
    how to read its bytes (links followed, as the copy follows them)."""
    held = [str(q) for q in parts]
    out: dict[str, Callable[[], bytes]] = {}
    root = space.resolve()
    followed: set[str] = set()
    entries = size = 0
    for part in parts:
        if part.is_file():
            out[os.path.relpath(part, root)] = part.read_bytes
            continue
        for folder, dirs, names in os.walk(part, followlinks=True):
            left = _left_out(folder, dirs + names)
            rel = os.path.relpath(folder, root)
            for d in _links_kept(held, folder, [d for d in dirs if d not in left], followed):  # as the copy keeps
                link = os.readlink(os.path.join(folder, d)).encode()
                out[os.path.normpath(os.path.join(rel, d))] = lambda link=link: b"link\0" + link
                left.add(d)
            dirs[:] = [d for d in dirs if d not in left]
            for n in names:
                if n not in left:
                    out[os.path.normpath(os.path.join(rel, n))] = Path(folder, n).read_bytes
                    size += os.stat(os.path.join(folder, n)).st_size
            entries += len(dirs) + len(names)
            if entries > MAX_COPY_FILES or size > MAX_COPY_BYTES:
                raise WorkspaceCopyError(f"app.workspace {space}: more than {MAX_COPY_FILES} files and folders or "
                                         f"{MAX_COPY_BYTES >> 30} GiB to copy for a build (links followed); set "
                                         "app.workspace to the folder the build reads, or app.workspace_paths to "
                                         "the parts of it that it reads")
    for name, text in files.items():
        path = os.path.normpath(os.path.join(workdir, name))
        data = source_bytes(Path(path), text)
        out[os.path.relpath(path, space)] = lambda data=data: data
    return out


@contextmanager
def _building(entry: Path | None) -> Iterator[None]:
    """An exclusive lock on one build of the cache (a file beside its entry) while it is made: the
    same build asked for at once (llm.candidates' threads each compile the original for their
    prompt; parallel processes sharing OPTIMAS_BUILD_CACHE) is made once, the others waiting for it
    and taking it from the cache. Builds of other keys do not wait."""
    if entry is None:
        yield
        return
    entry.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(entry.with_name(entry.name + ".lock"), os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _cached(entry: Path | None, exe: Path | None) -> CompileResult | None:
    if entry is None or not (entry / "result.json").is_file():
        return None
    result = CompileResult.model_validate_json((entry / "result.json").read_text())
    if exe is not None and result.ok:
        if not (entry / "exe").is_file():
            return None  # built before without keeping the binary
        shutil.copy2(entry / "exe", exe)
    return result.model_copy(update={"cached": True})


def _store(entry: Path, result: CompileResult, exe: Path | None) -> None:
    """Write a cache entry; the result goes last, so a half-written entry is never read."""
    entry.mkdir(parents=True, exist_ok=True)
    if exe is not None and result.ok and exe.is_file():
        part = entry / f"exe.{os.getpid()}.{threading.get_ident()}"  # candidates build in threads
        shutil.copy2(exe, part)
        os.replace(part, entry / "exe")  # whole, even with another process storing the same build
    atomic_write_text(entry / "result.json", result.model_dump_json())

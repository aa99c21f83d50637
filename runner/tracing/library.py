"""Build the tracer library (native/optimas_tracer.cpp) with the toolkit's nvcc against its CUPTI,
once per toolkit and tracer source, into a cache shared by every run of this user."""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from runner.base.config import AppConfig
from runner.base.errors import OptimasError
from runner.base.processes import cache_root, child_environment, run_process

log = logging.getLogger(__name__)

SOURCE = Path(__file__).parent / "native" / "optimas_tracer.cpp"
LIBRARY = "liboptimas_tracer.so"
SEEDS_SOURCE = Path(__file__).parent / "native" / "optimas_seeds.c"
SEEDS_LIBRARY = "liboptimas_seeds.so"


class TracerError(OptimasError):
    """The tracer cannot be built or used here."""

    exit_code = 4


@dataclass(frozen=True)
class Toolkit:
    nvcc: Path
    release: str  # "13.0, V13.0.88": nvcc --version's release line
    cupti_include: Path
    cupti_lib: Path


def _first(candidates: list[Path], name: str) -> Path | None:
    return next((c for c in candidates if (c / name).exists()), None)


def find_toolkit(nvcc: str = "nvcc") -> Toolkit:
    """The toolkit of `nvcc` and its CUPTI (extras/CUPTI in NVIDIA's installers, include/ and lib64/
    or lib/ in distribution packages); TracerError naming what is missing."""
    found = shutil.which(nvcc)
    if not found:
        raise TracerError(f"nvcc not found ({nvcc!r} is not on PATH): the tracer is built with the CUDA "
                          "toolkit's nvcc; install the toolkit or set profiling.nvcc")
    path = Path(found).resolve()
    stat = path.stat()
    return _probe(path, stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _probe(path: Path, size: int, mtime_ns: int) -> Toolkit:
    """Ask nvcc once per process (the evaluation looks the toolkit up for every configuration it
    times); size and time in the key: an nvcc replaced in place is asked again."""
    r = run_process([str(path), "--version"], path.parent, 60, env=child_environment())
    m = re.search(r"release (\S+ V\S+)", r.output)
    if r.returncode != 0 or not m:
        raise TracerError(f"{path} --version did not say its release (exit {r.returncode}): {r.output[-300:]}")
    # nvcc may be a wrapper script outside the toolkit: its dry run names the toolkit's root (TOP)
    dry = run_process([str(path), "--dryrun", "-c", str(SOURCE), "-o", os.devnull], path.parent, 60,
                      env=child_environment())
    top = re.search(r"^#\$ TOP=(.+)$", dry.output, re.MULTILINE)
    root = Path(top.group(1).strip()).resolve() if top else path.parent.parent
    include = _first([root / "extras" / "CUPTI" / "include", root / "include",
                      root / "targets" / "x86_64-linux" / "include"], "cupti.h")
    lib = _first([root / "extras" / "CUPTI" / "lib64", root / "lib64", root / "lib",
                  root / "targets" / "x86_64-linux" / "lib"], "libcupti.so")
    if include is None or lib is None:
        missing = "cupti.h" if include is None else "libcupti.so"
        raise TracerError(f"CUPTI not found in the toolkit at {root} ({missing} is in none of extras/CUPTI, "
                          "include, lib64, lib): install the toolkit's CUPTI (cuda-cupti) package")
    return Toolkit(nvcc=path, release=m.group(1), cupti_include=include, cupti_lib=lib)


def tracer_library(nvcc: str = "nvcc", cache: Path | None = None) -> Path:
    """The tracer built for this toolkit: from the cache, or built now (a few seconds, once)."""
    tk = find_toolkit(nvcc)
    flags = ["-std=c++17", f"-I{tk.cupti_include}", str(SOURCE), f"-L{tk.cupti_lib}", "-lcupti", "-ldl",
             "-Xlinker", f"-rpath={tk.cupti_lib}"]
    return _native(tk, Native(SOURCE, LIBRARY, "the CUPTI tracer", flags,
                              (str(tk.cupti_include), str(tk.cupti_lib))), cache)


def seed_library(nvcc: str = "nvcc", cache: Path | None = None) -> Path:
    """The seed library (native/optimas_seeds.c, for app.pin_seeds) built with this toolkit's nvcc,
    which hands the C file to the host compiler: from the cache, or built now (once)."""
    tk = find_toolkit(nvcc)
    return _native(tk, Native(SEEDS_SOURCE, SEEDS_LIBRARY, "the seed library", [str(SEEDS_SOURCE), "-ldl"]), cache)


@dataclass(frozen=True)
class Native:
    """A shared library Optimas builds from one of its native sources."""

    source: Path
    name: str  # the library's file name
    what: str  # for messages
    flags: list[str]  # nvcc's arguments besides -shared, -fPIC, -O2 and -o
    key: tuple[str, ...] = ()  # besides the source, the toolkit's release and nvcc: what else the build reads


def _native(tk: Toolkit, lib: Native, cache: Path | None) -> Path:
    """`lib` built with `tk`'s nvcc into the cache, keyed by its source and what its build reads."""
    key = hashlib.sha256(b"\0".join([lib.source.read_bytes(), tk.release.encode(), str(tk.nvcc).encode(),
                                     *(k.encode() for k in lib.key)])).hexdigest()[:16]
    folder = (cache or cache_root()) / lib.source.stem.removeprefix("optimas_") / f"{tk.release.split(',')[0]}-{key}"
    target = folder / lib.name
    if _verified(target):
        return target
    if target.exists():
        log.warning("the cached library %s does not match the hash recorded when it was built: building it again",
                    target)
    folder.mkdir(parents=True, exist_ok=True)
    part = folder / f"{lib.name}.{os.getpid()}"
    argv = [str(tk.nvcc), "-shared", "-Xcompiler", "-fPIC", "-O2", *lib.flags, "-o", str(part)]
    log.info("building %s for CUDA %s", lib.what, tk.release)
    r = run_process(argv, folder, 600, env=child_environment(), log=folder / "build.log")
    if r.returncode != 0 or not part.is_file():
        part.unlink(missing_ok=True)
        why = "timed out" if r.timed_out else f"exit {r.returncode}"
        raise TracerError(f"building {lib.what} failed ({why}); see {folder / 'build.log'}: "
                          f"{r.output.strip()[-600:]}")
    digest = part.with_name(part.name + ".sha256")
    digest.write_text(_sha256(part) + "\n")
    os.replace(digest, target.with_name(lib.name + ".sha256"))
    os.replace(part, target)  # whole, even when another process built it at the same time
    return target


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _verified(target: Path) -> bool:
    """Whether the cached library is the one built here: a regular file whose hash is the one
    recorded beside it when it was built (the cache outlives the job that filled it)."""
    recorded = target.with_name(target.name + ".sha256")
    if not target.is_file() or target.is_symlink() or not recorded.is_file():
        return False
    try:
        return recorded.read_text().strip() == _sha256(target)
    except OSError:
        return False


def run_environment(app: AppConfig, nvcc: str = "nvcc") -> dict[str, str]:
    """The variables every run of the app gets besides the minimal environment: app.env, with the seed
    library preloaded when app.pin_seeds is set (before any library app.env preloads)."""
    if not app.pin_seeds:
        return dict(app.env)
    preload = " ".join(p for p in (str(seed_library(nvcc)), app.env.get("LD_PRELOAD", "")) if p)
    return {**app.env, "LD_PRELOAD": preload, "OPTIMAS_PIN_SEED": str(app.seeds[0])}


def trace_environment(library: Path, trace_dir: Path, keep_bytes: int = 0, keep_each: int = 0) -> dict[str, str]:
    """What a traced process needs in its environment: the driver loads the tracer, which writes
    its records into `trace_dir` (and keeps up to `keep_bytes` of results, at most `keep_each` of
    each one when given)."""
    env = {"CUDA_INJECTION64_PATH": str(library), "OPTIMAS_TRACE_DIR": str(trace_dir)}
    if keep_bytes:
        env["OPTIMAS_TRACE_KEEP_BYTES"] = str(keep_bytes)
        if keep_each:
            env["OPTIMAS_TRACE_KEEP_EACH"] = str(keep_each)
    return env

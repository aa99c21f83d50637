"""An `nvcc` placed first on the PATH of every build Optimas runs: it drops the GPU architecture
options this toolkit no longer compiles for, then runs the real nvcc with everything else as given.

Third-party Makefiles and CMake projects often name old architectures (`-gencode
arch=compute_35,code=sm_35`, `--gpu-code=compute_20`, `set(CMAKE_CUDA_ARCHITECTURES 60)`). nvcc
stops at the first one it does not support ("Unsupported gpu architecture"), and NVCC_APPEND_FLAGS
cannot take an option back, only add one. The build's own `-arch={arch}` (in the command init
writes, through NVCC_APPEND_FLAGS or CMAKE_CUDA_FLAGS) then decides the architecture. Options
naming an architecture this nvcc supports are left alone, so `-arch=sm_90a` keeps its features.
Each option dropped is said on stderr, into the build's log.

A plain -arch of the GPU the build also asks an architecture-specific variant for (sm_90a) becomes
that variant (keep_specific). A source file it compiles that calls the thread-management functions
CUDA 13 removed (`cudaThreadSynchronize`, ...; older names of the cudaDevice* ones) can get the header
that defines them as those (compat/cuda_removed_api.h, by --pre-include), one that calls the warp
shuffles without a mask (`__shfl_down`, ...) the header that makes them their *_sync forms over the
active threads (compat/cuda_legacy_warp.h), and one that calls the votes without a mask (`__any`,
`__all`, `__ballot`, which ptxas rejects for sm_70 and later) likewise (compat/cuda_legacy_vote.h),
and one that gives cudaMemPrefetchAsync or cudaMemAdvise a device ordinal, which CUDA 13 takes as a
cudaMemLocation, overloads that make that location (compat/cuda_legacy_prefetch.h; code that names
cudaMemLocation already uses CUDA 13's form and gets none).
These change what the program means, so only with app.legacy_cuda (COMPAT_HEADERS), each one
recorded for the run and the pull request; without it the log says which header would apply.

CUDA 13's own headers for Thrust, CUB, libcu++ (`<cuda/...>`) and cooperative groups stop with
`#error ... requires at least C++17` under an older dialect, and many build files still say
`-std=c++14` (XSBench, RSBench) or `set(CMAKE_CUDA_STANDARD 14)`: for a source that includes one of
them, an nvcc of CUDA 13 or later can compile it as C++17 instead (raise_dialect). That changes what
the program means (`__cplusplus`, trigraphs, ...), so it too is app.legacy_cuda' to allow and is
recorded like a header; without it the log says what the setting would do.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from runner.scan.cuda_source import LOCAL_INCLUDE, strip_comments_and_strings
from runner.toolchain.compat_record import DIALECT, CompatRecord

SHIM_VERSION = "13"
# Set to "1" by a build of a config with app.legacy_cuda: the shim pre-includes the compatibility
# headers (COMPATS) into the sources that call what they define. Unset, it only says in the build's
# log which header would let such a source build: the headers change what a program means.
COMPAT_HEADERS = "OPTIMAS_COMPAT_HEADERS"
# Set to a file by the compiler stage: each header pre-included is recorded there (JSON lines, each a
# compat_record.CompatRecord), for the run's manifest and the pull request.
COMPAT_RECORD = "OPTIMAS_COMPAT_RECORD"
# Set by the compiler stage for builds that run nvcc unnamed (make, cmake, scripts): every nvcc the
# build starts prints ptxas's per-kernel resources, whatever NVCC_APPEND_FLAGS the build sets itself.
PTXAS_REPORT = "OPTIMAS_PTXAS_REPORT"
# Set to a file by the compiler stage: each nvcc the build starts appends its folder and arguments
# there (one JSON object per line), so that the macros each source was compiled with can be asked for.
NVCC_RECORD = "OPTIMAS_NVCC_RECORD"
COMPAT = Path(__file__).resolve().parent / "compat"


class Compat(NamedTuple):
    """Names CUDA 13 no longer compiles, a header of ours that defines them anew (pre-included
    into a file that calls them), and how the code's own definition of one looks (then the header
    stays out: it would clash)."""

    header: Path
    names: tuple[str, ...]
    own: str  # a regex with {n} for the name
    says: str  # what the build log says of them


RUNTIME = Compat(COMPAT / "cuda_removed_api.h",
                 ("cudaThreadSynchronize", "cudaThreadExit", "cudaThreadSetLimit", "cudaThreadGetLimit",
                  "cudaThreadSetCacheConfig", "cudaThreadGetCacheConfig"),
                 r"#\s*define\s+{n}\b|\bcudaError(?:_t)?\s+{n}\s*\(",
                 "removed in CUDA 13, call the cudaDevice* function each was an older name of")
WARP = Compat(COMPAT / "cuda_legacy_warp.h",
              ("__shfl", "__shfl_up", "__shfl_down", "__shfl_xor"),
              r"#\s*define\s+{n}\b|\b(?:__device__|__forceinline__|inline)\b[^;{{}}()]*\b{n}\s*\(",
              "warp shuffles without a mask, which CUDA 13 no longer declares, become their *_sync forms over "
              "the active threads")
VOTE = Compat(COMPAT / "cuda_legacy_vote.h",
              ("__any", "__all", "__ballot"),
              WARP.own,
              "warp votes without a mask, which ptxas rejects for sm_70 and later, become their *_sync forms over "
              "the active threads")
PREFETCH = Compat(COMPAT / "cuda_legacy_prefetch.h", ("cudaMemPrefetchAsync", "cudaMemAdvise"),
                  r"#\s*define\s+{n}\b|\bcudaMemLocation\b",
                  "managed-memory hints by device ordinal, which CUDA 13 takes as a cudaMemLocation, become "
                  "calls with the location of that device (or the host for cudaCpuDeviceId)")
COMPATS = (RUNTIME, WARP, VOTE, PREFETCH)
_ROOT = Path(__file__).resolve().parents[2]  # the folder holding the runner package
# Single-value options (-arch X, -arch=X, --gpu-architecture ...), list options (-code a,b) and
# -gencode's "arch=...,code=..." pairs.
_ARCH = ("-arch", "--gpu-architecture")
_CODE = ("-code", "--gpu-code")
_GENCODE = ("-gencode", "--generate-code")


def _base(value: str) -> str:
    """compute_90a -> compute_90, sm_100f -> sm_100, lto_90 -> sm_90: the name nvcc lists."""
    value = value.strip().strip('"').strip("'")
    m = re.fullmatch(r"(compute|sm|lto)_(\d+)[a-z]?", value)
    if not m:
        return value
    return f"{'compute' if m.group(1) == 'compute' else 'sm'}_{m.group(2)}"


def is_supported(value: str, supported: frozenset[str]) -> bool:
    """Whether nvcc compiles for `value`; names that are not an architecture number (native, all,
    all-major) are nvcc's to judge and count as supported."""
    base = _base(value)
    return base in supported if re.fullmatch(r"(compute|sm)_\d+", base) else True


def _split_list(value: str) -> list[str]:
    return [v for v in re.split(r"[,\[\]\"' ]+", value) if v]


def _kept_codes(codes: list[str], supported: frozenset[str]) -> list[str] | None:
    """The codes nvcc compiles for: all of them (the same list), some, or None when none."""
    kept = [c for c in codes if is_supported(c, supported)]
    return kept or None


def _gencode_keep(value: str, supported: frozenset[str]) -> str | None:
    """A -gencode value with its unsupported codes taken out; None when nothing of it stays."""
    m = re.fullmatch(r"""\s*["']?arch=([^,]+),\s*code=(.+?)["']?\s*""", value)
    if not m:
        return value  # a form this shim does not know: nvcc judges it
    arch, codes = m.group(1).strip("\"'"), _split_list(m.group(2))
    kept = _kept_codes(codes, supported) if is_supported(arch, supported) else None
    if kept is None:
        return None
    return value if kept == codes else f"arch={arch},code=[{','.join(kept)}]"


def filter_architectures(args: list[str], supported: frozenset[str]) -> tuple[list[str], list[str]]:
    """nvcc's arguments without the architecture options `supported` lacks: (kept arguments, the
    options dropped as the user wrote them)."""
    out: list[str] = []
    dropped: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, inline = arg.partition("=")
        if name in _ARCH + _CODE + _GENCODE:
            if eq:
                value, words = inline, [arg]
            elif i + 1 < len(args):
                value, words = args[i + 1], [arg, args[i + 1]]
            else:
                out.append(arg)
                break
            i += len(words)
            if name in _ARCH:
                keep = value if is_supported(value, supported) else None
            elif name in _CODE:
                codes = _split_list(value)
                kept = _kept_codes(codes, supported)
                keep = None if kept is None else value if kept == codes else ",".join(kept)
            else:
                keep = _gencode_keep(value, supported)
            if keep is None:
                dropped.append(" ".join(words))
            elif keep == value:
                out.extend(words)
            else:
                dropped.append(" ".join(words))
                out.append(f"{name}={keep}")
            continue
        out.append(arg)
        i += 1
    return out, dropped


_SPECIFIC = re.compile(r"\b(?:sm|compute)_(\d+)([af])\b")
_PLAIN_ARCH = re.compile(r"^(?:-arch|--gpu-architecture)[= ]?(?:sm|compute)_(\d+)$")


def keep_specific(args: list[str], appended: str) -> tuple[list[str], str, list[str]]:
    """When the program asks for an architecture-specific variant (sm_90a: wgmma, setmaxnreg; sm_100f),
    a plain -arch of the same GPU (the build's -arch={arch}, in `appended` = NVCC_APPEND_FLAGS or in
    the arguments) would compile those features out or beside it: it becomes that variant. Returns
    (arguments, NVCC_APPEND_FLAGS, what changed)."""
    specific = {m.group(1): m.group(2) for a in args for m in _SPECIFIC.finditer(a)}
    if not specific:
        return args, appended, []
    out, notes, i = [], [], 0
    while i < len(args):
        word = args[i] if args[i] not in _ARCH or i + 1 == len(args) else f"{args[i]} {args[i + 1]}"
        m = _PLAIN_ARCH.match(word.replace(" ", "="))
        if m and m.group(1) in specific:
            notes.append(f"`{word}` left out: the build also asks for sm_{m.group(1)}{specific[m.group(1)]}")
            i += len(word.split())
            continue
        out.append(args[i])
        i += 1

    def variant(m: re.Match) -> str:
        if m.group(2) not in specific:
            return m.group(0)
        notes.append(f"`{m.group(0)}` (NVCC_APPEND_FLAGS) given as sm_{m.group(2)}{specific[m.group(2)]}, the "
                     "variant the build asks for")
        return f"{m.group(1)}sm_{m.group(2)}{specific[m.group(2)]}"

    appended = re.sub(r"((?:-arch|--gpu-architecture)[= ])(?:sm|compute)_(\d+)(?![\w])", variant, appended)
    return out, appended, notes


# C++ dialects older than C++17, as nvcc's -std takes them, and the headers of CUDA 13 that refuse them.
OLD_CPP = r"c\+\+(?:98|03|0x|11|1y|14)"
_OLD_DIALECT = re.compile(OLD_CPP)
CCCL_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*<((?:thrust|cub|cuda)/[^>\n]*|cooperative_groups[^>\n]*)>",
                           re.M)
CCCL_CPP17_MAJOR = 13  # the first CUDA whose Thrust, CUB and libcu++ need C++17
_STD = ("-std", "--std")


DIALECT_OPTION = re.compile(r"--?std[= ]" + OLD_CPP)  # a compat record's names for a source raised to DIALECT


def raise_dialect(args: list[str], code: str, cuda_major: int) -> tuple[list[str], list[str], str]:
    """nvcc's arguments with a -std older than C++17 given as c++17, when this nvcc's headers need
    C++17 (`cuda_major` >= CCCL_CPP17_MAJOR) and the compiled code (`code`, with its local headers)
    includes one of them: (arguments, the options raised as the build wrote them, that header)."""
    header = CCCL_INCLUDE.search(code) if cuda_major >= CCCL_CPP17_MAJOR else None
    if header is None:
        return args, [], ""
    out, raised, i = [], [], 0
    while i < len(args):
        name, eq, inline = args[i].partition("=")
        if name in _STD and (eq or i + 1 < len(args)):
            value = inline if eq else args[i + 1]
            words = args[i:i + (1 if eq else 2)]
            if _OLD_DIALECT.fullmatch(value):
                out.append(f"{name}=c++17")
                raised.append(" ".join(words))
            else:
                out.extend(words)
            i += len(words)
            continue
        out.append(args[i])
        i += 1
    return out, raised, header.group(1)


# How deep `#include "..."` is followed for the calls a compatibility header stands in for.
MAX_INCLUDE_DEPTH = 4


def _include_dirs(args: list[str], cwd: Path) -> list[Path]:
    """The -I folders among nvcc's arguments."""
    dirs = []
    for i, arg in enumerate(args):
        if arg in ("-I", "--include-path") and i + 1 < len(args):
            dirs.append(args[i + 1])
        elif arg.startswith("--include-path="):
            dirs.append(arg.split("=", 1)[1])
        elif arg.startswith("-I") and len(arg) > 2:
            dirs.append(arg[2:])
    return [cwd / d for d in dirs]


def _sources(args: list[str], cwd: Path) -> list[str]:
    """The source files among nvcc's arguments (.cu, and C or C++ files nvcc compiles) that exist."""
    return [a for a in args if a.endswith((".cu", ".cpp", ".cc", ".cxx", ".c")) and (cwd / a).is_file()]


def compiled_code(args: list[str], cwd: Path, toolkit: Path | None = None) -> str:
    """The code of the source files among nvcc's arguments (.cu, and C or C++ files nvcc compiles)
    and of the local headers they include, `#include "..."` followed MAX_INCLUDE_DEPTH levels (next
    to the including file, then in the -I folders), with comments and string literals blanked out:
    a call or a definition in a comment does not count. The CUDA toolkit's own headers (under
    `toolkit`, reached by `#include "cuda_runtime.h"` and a -I to its include/) are not the
    program's code: their mentions of the old warp shuffles read as the program's calls."""
    dirs = _include_dirs(args, cwd)
    own = toolkit.resolve() if toolkit is not None else None
    frontier = [cwd / a for a in _sources(args, cwd)]
    seen: set[Path] = set()
    texts = []
    for _ in range(MAX_INCLUDE_DEPTH + 1):
        found = []
        for path in frontier:
            real = path.resolve()
            if real in seen or (own is not None and real.is_relative_to(own)):
                continue
            seen.add(real)
            raw = path.read_text(errors="replace")
            clean = strip_comments_and_strings(raw)
            texts.append(clean)
            for m in LOCAL_INCLUDE.finditer(raw):
                if not clean[m.start():m.end()].lstrip().startswith("#"):
                    continue  # commented out
                found += [base / m.group(1) for base in (path.parent, *dirs) if (base / m.group(1)).is_file()][:1]
        frontier = found
    return "\n".join(texts)


def compat_used(code: str, compat: Compat) -> list[str]:
    """The names of `compat` that `code` calls; none when it defines one of them itself (its own
    compatibility macro or function)."""
    if any(re.search(compat.own.format(n=re.escape(n)), code) for n in compat.names):
        return []
    return [n for n in compat.names if re.search(rf"(?<![\w.]){re.escape(n)}\s*\(", code)]


def _ask(nvcc: str, flag: str) -> str | None:
    from runner.base.processes import child_environment, run_process  # not at the top: see build_environment

    r = run_process([nvcc, flag], Path(nvcc).parent, 60, env=child_environment(), what=f"{nvcc} {flag}")
    return r.output if r.returncode == 0 else None


@functools.lru_cache(maxsize=8)
def _facts(nvcc: str, size: int, mtime_ns: int) -> tuple[frozenset[str], int]:
    names: set[str] = set()
    for flag in ("--list-gpu-arch", "--list-gpu-code"):
        if (listed := _ask(nvcc, flag)) is None:
            names.clear()
            break
        names.update(w for w in listed.split() if re.fullmatch(r"(compute|sm)_\d+", w))
    m = re.search(r"release (\d+)\.", _ask(nvcc, "--version") or "")
    return frozenset(names), int(m.group(1)) if m else 0


def nvcc_facts(nvcc: Path) -> tuple[frozenset[str], int]:
    """What `nvcc` says of itself, asked once per binary: the virtual and real architectures it lists
    (compute_75 ... sm_121; empty when it cannot say, an nvcc older than --list-gpu-arch, and then
    the shim drops nothing) and the CUDA release it belongs to (13 for 13.0; 0 when --version does
    not say)."""
    stat = nvcc.stat()
    return _facts(str(nvcc), stat.st_size, stat.st_mtime_ns)


def shim_folder(nvcc: str, cache: Path) -> Path | None:
    """A folder holding an `nvcc` that filters architectures and runs the real `nvcc` (from PATH or
    a path), written once under `cache`; None when there is no nvcc, or it lists nothing."""
    found = shutil.which(nvcc)
    if not found:
        return None
    real = Path(found).resolve()
    supported, major = nvcc_facts(real)
    if not supported:
        return None
    key = hashlib.sha256("\0".join([SHIM_VERSION, str(real), sys.executable, str(_ROOT), str(major),
                                    *sorted(supported)]).encode()).hexdigest()[:16]
    folder = cache / "nvcc-shim" / key
    target = folder / "nvcc"
    text = (f"#!{sys.executable} -IS\n"
            "# Written by Optimas (runner/toolchain/nvcc_shim.py): drops GPU architectures this nvcc does not\n"
            "# support, then runs it. -IS: the standard library only, whatever the build's environment.\n"
            "import sys\n"
            f"sys.path.insert(0, {str(_ROOT)!r})\n"
            "from runner.toolchain.nvcc_shim import run_shim\n"
            f"run_shim({str(real)!r}, {sorted(supported)!r}, {major})\n")
    # The cache outlives the job that wrote it: the shim is used only when it holds exactly this text
    if target.is_file() and not target.is_symlink() and target.read_bytes() == text.encode():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    part = folder / f"nvcc.{os.getpid()}"
    part.unlink(missing_ok=True)
    part.write_text(text)
    part.chmod(0o755)
    part.replace(target)  # whole or absent, with builds in parallel
    return folder


def build_environment(declared: Mapping[str, str] | None, nvcc: str = "nvcc", cache: Path | None = None,
                      compat: bool = False) -> dict[str, str]:
    """The environment of a build command: child_environment(declared) with the shim's folder first
    on PATH (when there is an nvcc to wrap); `compat`: the shim pre-includes the compatibility
    headers (app.legacy_cuda)."""
    # Imported here, not at the top: the shim runs once per nvcc call of every build, and the
    # process runner (threads, signals, the sandbox) was a quarter of its start (15 of 57 ms).
    from runner.base.processes import cache_root, child_environment

    env = child_environment(declared)
    if compat:
        env[COMPAT_HEADERS] = "1"
    folder = shim_folder(nvcc, cache or cache_root())
    if folder is not None:
        env["PATH"] = f"{folder}{os.pathsep}{env.get('PATH', os.defpath)}"
    return env


def record_call(path: Path, cwd: Path, args: list[str]) -> None:
    """Append one nvcc call (its folder and arguments, and NVCC_APPEND_FLAGS) to `path`."""
    append_record(path, {"cwd": str(cwd), "args": args, "append": os.environ.get("NVCC_APPEND_FLAGS", "")})


def append_record(path: Path | str, record: dict) -> None:
    """Append one JSON line to `path` in a single write (the nvcc calls of a parallel build append to
    the same file: whole lines never interleave)."""
    line = json.dumps(record) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line.encode())  # one write per line: calls of a parallel build do not interleave
    finally:
        os.close(fd)


def run_shim(real: str, supported: list[str], major: int = 0) -> None:
    """The shim's body: filter this process's arguments and replace it with the real nvcc (of CUDA
    `major`)."""
    args, dropped = filter_architectures(sys.argv[1:], frozenset(supported))
    for option in dropped:
        sys.stderr.write(f"optimas: dropped `{option}`: this nvcc ({real}) does not compile for that "
                         "architecture; the build's -arch decides\n")
    args, appended, kept = keep_specific(args, os.environ.get("NVCC_APPEND_FLAGS", ""))
    for note in kept:
        sys.stderr.write(f"optimas: {note}\n")
    if kept:
        os.environ["NVCC_APPEND_FLAGS"] = appended
    code = compiled_code(args, Path.cwd(), Path(real).resolve().parent.parent)
    args = apply_dialect(args, Path.cwd(), code, major)
    if os.environ.get(PTXAS_REPORT) == "1":
        args = [*args, "-Xptxas", "-v"]  # ptxas's per-kernel report, for compiler feedback (K*)
    if os.environ.get(NVCC_RECORD):
        record_call(Path(os.environ[NVCC_RECORD]), Path.cwd(), args)
    args = apply_compat(args, Path.cwd(), code)
    sys.stderr.flush()
    os.execv(real, [real, *args])


def apply_dialect(args: list[str], cwd: Path, code: str, major: int) -> list[str]:
    """nvcc's arguments with an older -std raised to C++17 where CUDA 13's headers need it
    (raise_dialect), when the build asked for such changes (COMPAT_HEADERS: it changes what the
    program means, `__cplusplus` and trigraphs among others), recorded (COMPAT_RECORD) and said in
    the log; else unchanged, the log saying what the setting would do."""
    raised_args, raised, header = raise_dialect(args, code, major)
    if not raised:
        return args
    why = f"this CUDA's Thrust, CUB, libcu++ and cooperative groups headers need C++17 (the code includes <{header}>)"
    if os.environ.get(COMPAT_HEADERS) != "1":
        sys.stderr.write(f"optimas: {', '.join(raised)}: {why}; app.legacy_cuda: true would compile it as C++17 "
                         "(it changes what the program means: the run and the pull request then say so)\n")
        return args
    sys.stderr.write(f"optimas: {', '.join(f'`{r}`' for r in raised)} given as -std=c++17: {why}\n")
    if os.environ.get(COMPAT_RECORD):
        append_record(os.environ[COMPAT_RECORD],
                      CompatRecord(DIALECT, tuple(raised), tuple(_sources(args, cwd)), str(cwd)).as_json())
    return raised_args


def apply_compat(args: list[str], cwd: Path, code: str) -> list[str]:
    """nvcc's arguments with the compatibility headers the compiled sources need pre-included, when
    the build asked for them (COMPAT_HEADERS), each recorded (COMPAT_RECORD) and said in the log;
    else unchanged, the log saying which header the setting would add. `code`: the compiled code
    (compiled_code)."""
    wanted = os.environ.get(COMPAT_HEADERS) == "1"
    for compat in COMPATS:
        used = compat_used(code, compat)
        if not used:
            continue
        if not wanted:
            sys.stderr.write(f"optimas: {', '.join(used)}: {compat.says.split(', become')[0]}; "
                             f"app.legacy_cuda: true would pre-include {compat.header.name} (it changes what "
                             "the program means: the run and the pull request then say so)\n")
            continue
        args = ["--pre-include", str(compat.header), *args]
        sys.stderr.write(f"optimas: {', '.join(used)}, {compat.says} ({compat.header.name}, pre-included)\n")
        if os.environ.get(COMPAT_RECORD):
            append_record(os.environ[COMPAT_RECORD],
                          CompatRecord(compat.header.name, tuple(used), tuple(_sources(args, cwd)), str(cwd)).as_json())
    return args
